//! Studio latency, measured against a real server on loopback (run: `cargo bench --bench studio`).
//!
//! - first byte of `/`, warm (target ≤ 5 ms);
//! - the session list with 200 sessions (≤ 50 ms);
//! - the first page of events of a 1,000,000-event session (≤ 100 ms), warm and cold;
//! - one appended event reaching 50 concurrent SSE clients (≤ 100 ms).
//!
//! Prints the median (and p90) of each.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crumb::home::{CrumbHome, Project};
use crumb::runtime::session::create;
use crumb::studio::{StudioConfig, serve};
use crumb::transcript::writer::Writer;
use crumb::transcript::{Draft, Kind};

#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;

const SESSIONS: usize = 200;
const BIG_EVENTS: usize = 1_000_000;
const SSE_CLIENTS: usize = 50;

fn main() {
    report::conditions("before");
    let home = tempfile::tempdir().expect("temp home");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let project = Project::from_root(root.to_path_buf());
    let pipeline = root.join("pipelines/casual.yaml");
    let crumb_home = CrumbHome::at(home.path());
    let started = Instant::now();
    for i in 0..SESSIONS {
        let session =
            create(&crumb_home, &project, &pipeline, &format!("game {i}")).expect("session");
        let mut writer = Writer::open(session.dir.transcript(), session.dir.id()).expect("writer");
        writer
            .append(Draft::new("user", Kind::Goal).body(format!("game {i}")))
            .unwrap();
        writer
            .append(Draft::new("planner-lead", Kind::Spec).body("spec"))
            .unwrap();
        session.lock.release();
    }
    let big = create(&crumb_home, &project, &pipeline, "a long session").expect("session");
    let big_id = big.dir.id().to_owned();
    write_big_transcript(&big.dir.transcript(), &big_id);
    let mut live = Writer::open(big.dir.transcript(), &big_id).expect("writer");
    println!(
        "setup: {SESSIONS} sessions + one of {BIG_EVENTS} events in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let mut config = StudioConfig::new(crumb_home);
    config.project_dir = Some(root.to_path_buf());
    let (addr, _stop) = start(config);

    // 1. First byte of `/`, warm.
    let _ = first_byte(addr, "/");
    let samples: Vec<f64> = (0..200).map(|_| first_byte(addr, "/")).collect();
    report("first byte of / (warm)", &samples, 5.0);

    // 2. Session list (the first page, as the client asks, and all 200 at once).
    let samples: Vec<f64> = (0..30)
        .map(|_| timed_get(addr, "/api/sessions?limit=50"))
        .collect();
    report("session list, 200 sessions (page of 50)", &samples, 50.0);
    let samples: Vec<f64> = (0..30)
        .map(|_| timed_get(addr, "/api/sessions?limit=200"))
        .collect();
    report("session list, 200 sessions (all 200 rows)", &samples, 50.0);

    // 3. First page of events of the big session: cold (index built) and warm.
    let path = format!("/api/sessions/{big_id}/events?limit=200");
    report_cold(timed_get(addr, &path));
    let samples: Vec<f64> = (0..50).map(|_| timed_get(addr, &path)).collect();
    report(
        "events, 1M session, last page of 200 (warm)",
        &samples,
        100.0,
    );
    let first = format!("/api/sessions/{big_id}/events?after=0&limit=200");
    let samples: Vec<f64> = (0..50).map(|_| timed_get(addr, &first)).collect();
    report(
        "events, 1M session, first page of 200 (warm)",
        &samples,
        100.0,
    );
    let filtered = format!("/api/sessions/{big_id}/events?kind=judge.score&limit=200");
    let samples: Vec<f64> = (0..20).map(|_| timed_get(addr, &filtered)).collect();
    report("events, 1M session, kind filter (warm)", &samples, 100.0);

    // 4. One append reaching 50 SSE clients.
    let (arrived_tx, arrived_rx) = mpsc::channel::<(usize, String, Instant)>();
    let stream_path = format!("/api/sessions/{big_id}/stream");
    let mut ready = Vec::new();
    for client in 0..SSE_CLIENTS {
        let tx = arrived_tx.clone();
        let path = stream_path.clone();
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        ready.push(ready_rx);
        std::thread::spawn(move || sse_client(addr, &path, client, &ready_tx, &tx));
    }
    for r in ready {
        r.recv().expect("client connected");
    }
    let mut samples = Vec::new();
    for round in 0..20 {
        let sent = Instant::now();
        let event = live
            .append(Draft::new("builder", Kind::AgentThoughtSummary).body(format!("round {round}")))
            .unwrap();
        let mut seen = 0;
        let mut last = sent;
        while seen < SSE_CLIENTS {
            let (_, id, at) = arrived_rx
                .recv_timeout(Duration::from_secs(10))
                .expect("event delivered");
            if id == event.id {
                seen += 1;
                last = last.max(at);
            }
        }
        samples.push(last.duration_since(sent).as_secs_f64() * 1000.0);
    }
    report("append → all 50 SSE clients", &samples, 100.0);
    report::conditions("after");
}

/// [`BIG_EVENTS`] events written directly (the writer's per-append lock is not what is measured here).
fn write_big_transcript(path: &Path, session: &str) {
    let mut generator = ulid::Generator::new();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let kinds = [
        ("planner-lead", Kind::AgentThoughtSummary),
        ("builder", Kind::AgentThoughtSummary),
        ("builder", Kind::Build),
        ("verifier", Kind::AgentThoughtSummary),
    ];
    for i in 0..BIG_EVENTS {
        let (from, kind) = kinds[i % kinds.len()];
        let id = generator.generate().unwrap().to_string();
        let event = Draft::new(from, kind)
            .body(format!(
                "step {i}: thinking about the grid, the timer and the combo multiplier"
            ))
            .into_event(id, "2026-11-30T09:00:00.000Z".into(), session.into());
        serde_json::to_writer(&mut out, &event).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
}

fn start(config: StudioConfig) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let preview = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            ready_tx.send(listener.local_addr().unwrap()).unwrap();
            serve(listener, preview, config, async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
    });
    (ready_rx.recv().unwrap(), stop)
}

fn send(addr: SocketAddr, path: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_nodelay(true).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    stream
}

/// Milliseconds from sending the request to its first response byte.
fn first_byte(addr: SocketAddr, path: &str) -> f64 {
    let start = Instant::now();
    let mut stream = send(addr, path);
    let mut byte = [0u8; 1];
    stream.read_exact(&mut byte).unwrap();
    let elapsed = start.elapsed().as_secs_f64() * 1000.0;
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    elapsed
}

/// Milliseconds for a whole response.
fn timed_get(addr: SocketAddr, path: &str) -> f64 {
    let start = Instant::now();
    let mut stream = send(addr, path);
    let mut body = Vec::new();
    stream.read_to_end(&mut body).unwrap();
    let elapsed = start.elapsed().as_secs_f64() * 1000.0;
    assert!(
        body.starts_with(b"HTTP/1.1 200"),
        "{path}: {}",
        String::from_utf8_lossy(&body[..body.len().min(200)])
    );
    elapsed
}

fn sse_client(
    addr: SocketAddr,
    path: &str,
    client: usize,
    ready: &mpsc::Sender<()>,
    arrived: &mpsc::Sender<(usize, String, Instant)>,
) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut signalled = false;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        // The server's hello comment means the stream is subscribed.
        if !signalled && line.starts_with(": crumb studio") {
            signalled = true;
            let _ = ready.send(());
        }
        if let Some(id) = line.strip_prefix("id: ") {
            let _ = arrived.send((client, id.trim().to_owned(), Instant::now()));
        }
    }
}

/// The first request for a session's events, which builds its line index.
fn report_cold(cold: f64) {
    report::row(
        "Studio: events, 1M session, first request (cold)",
        &format!("{cold:.1} ms"),
        "one sample: builds the line index",
    );
    println!(
        "{:<48} {cold:>9.2} ms  (one sample: builds the line index)",
        "events, 1M session, first request (cold)"
    );
}

fn report(name: &str, samples: &[f64], target_ms: f64) {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let p90 = sorted[(sorted.len() * 9 / 10).min(sorted.len() - 1)];
    let verdict = if median <= target_ms { "ok" } else { "OVER" };
    report::row(
        &format!("Studio: {name}"),
        &format!("{median:.2} ms"),
        &format!(
            "p90 {p90:.2} ms, {} samples; target ≤ {target_ms} ms",
            samples.len()
        ),
    );
    println!(
        "{name:<48} median {median:>8.2} ms   p90 {p90:>8.2} ms   target ≤ {target_ms} ms  {verdict}"
    );
}
