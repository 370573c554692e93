//! Studio's peak memory on a session holding one 60 MB line (run: `cargo bench --bench
//! studio_memory`): a release `crumb studio` process, 0, 5 and 20 SSE clients connected and
//! reading the session's stream from its first event, then the requests the session view makes
//! (its state, the events page, the large event's full link). Peak RSS is the process's `VmHWM`
//! (`/proc/<pid>/status`), taken after every client has read the last event. Target: ≤ 100 MB
//! with 20 clients (a 60 MB line once cost about 90 MB per open stream).
//!
//! Each case runs in a fresh Studio process, three times; the median is printed.
#![allow(
    clippy::disallowed_methods,
    reason = "benches drive the crumb binary as a user would, not through crate::process"
)]
#![allow(
    clippy::cast_precision_loss,
    reason = "peak sizes in KiB are far below f64's exact range"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crumb::home::{CrumbHome, Project};
use crumb::runtime::session::create;
use crumb::transcript::writer::Writer;
use crumb::transcript::{Draft, Kind};

#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;

/// Bytes of the large line's body.
const BIG_BODY: usize = 60 * 1000 * 1000;
const CLIENTS: [usize; 3] = [0, 5, 20];
const RUNS: usize = 3;
/// Target peak RSS with 20 clients.
const TARGET_MB: f64 = 100.0;
/// A safety net against a hung bench, not a measurement.
const DEADLINE: Duration = Duration::from_secs(120);

/// A session: its id, its large event's id and the id of the event written after it.
struct Session {
    id: String,
    big: String,
    last: String,
}

fn main() {
    report::conditions("before");
    let home = tempfile::tempdir().expect("temp home");
    let session = big_session(home.path());
    println!("setup: one session with a {BIG_BODY}-byte body in one line");
    for clients in CLIENTS {
        let mut peaks: Vec<u64> = (0..RUNS)
            .map(|_| peak_kib(home.path(), &session, clients, false))
            .collect();
        let (median, min, max) = report::spread(&mut peaks);
        print_row(
            &format!("{clients} SSE clients reading"),
            median,
            min,
            max,
            clients == 20,
        );
    }
    let mut peaks: Vec<u64> = (0..RUNS)
        .map(|_| peak_kib(home.path(), &session, 20, true))
        .collect();
    let (median, min, max) = report::spread(&mut peaks);
    print_row(
        "20 SSE clients + state, events page, full event",
        median,
        min,
        max,
        false,
    );
    report::conditions("after");
}

fn print_row(what: &str, median: u64, min: u64, max: u64, targeted: bool) {
    let mb = |kib: u64| kib as f64 / 1024.0;
    let target = if targeted {
        format!("; target ≤ {TARGET_MB:.0} MB")
    } else {
        String::new()
    };
    println!(
        "{what:<52} peak RSS {:>7.1} MB  (min {:.1}, max {:.1}, {RUNS} runs{target})",
        mb(median),
        mb(min),
        mb(max)
    );
    report::row(
        &format!("Studio: peak RSS, 60 MB line, {what}"),
        &format!("{:.1} MB", mb(median)),
        &format!("VmHWM, {RUNS} runs, max {:.1} MB{target}", mb(max)),
    );
}

/// A casual session: a note, one line with a 60 MB body (written straight to the file: the writer
/// refuses lines over 4 MiB, a file may still hold one), and a note after it.
fn big_session(home: &Path) -> Session {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let project = Project::from_root(root.to_path_buf());
    let created = create(
        &CrumbHome::at(home),
        &project,
        &root.join("pipelines/casual.yaml"),
        "a session with a large line",
    )
    .expect("session");
    let id = created.dir.id().to_owned();
    let transcript = created.dir.transcript();
    let mut writer = Writer::open(&transcript, &id).expect("writer");
    writer
        .append(Draft::new("planner-lead", Kind::AgentThoughtSummary).body("before"))
        .expect("append");
    let big = ulid::Ulid::new().to_string();
    let mut line = format!(
        r#"{{"id":"{big}","ts":"2026-12-03T12:00:00.000Z","session_id":"{id}","from":"builder","kind":"agent.thought_summary","body":""#
    );
    line.push_str(&"abcdefghij".repeat(BIG_BODY / 10));
    line.push_str("\"}\n");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .expect("transcript");
    file.write_all(line.as_bytes())
        .expect("write the large line");
    drop(line);
    let last = writer
        .append(Draft::new("planner-lead", Kind::AgentThoughtSummary).body("after"))
        .expect("append")
        .id;
    created.lock.release();
    Session { id, big, last }
}

/// One case in a fresh `crumb studio`: its peak RSS in KiB.
fn peak_kib(home: &Path, session: &Session, clients: usize, view: bool) -> u64 {
    let (mut child, addr) = start_studio(home);
    let path = format!("/api/sessions/{}/stream?from=start", session.id);
    let readers: Vec<_> = (0..clients)
        .map(|_| {
            let path = path.clone();
            let last = session.last.clone();
            std::thread::spawn(move || read_stream(addr, &path, &last))
        })
        .collect();
    // Every client stays connected until each has read the last event.
    let streams: Vec<TcpStream> = readers
        .into_iter()
        .map(|r| r.join().expect("client thread"))
        .collect();
    if view {
        for rest in [
            String::new(),
            "/events".to_owned(),
            format!("/events/{}", session.big),
        ] {
            get(addr, &format!("/api/sessions/{}{rest}", session.id));
        }
    }
    let peak = vm_hwm_kib(child.id());
    drop(streams);
    let _ = child.kill();
    let _ = child.wait();
    peak
}

/// Start a release `crumb studio` on a free port; its address once it listens.
fn start_studio(home: &Path) -> (Child, SocketAddr) {
    let mut child = Command::new(crumb_exe())
        .args(["studio", "--port", "0", "--no-open", "--home"])
        .arg(home)
        .env("CRUMB_NO_OPEN", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start crumb studio");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("crumb studio's address");
    let port = first
        .trim()
        .strip_prefix("crumb studio: http://127.0.0.1:")
        .and_then(|rest| rest.trim_end_matches('/').parse::<u16>().ok())
        .unwrap_or_else(|| panic!("unexpected first line: {first}"));
    (child, SocketAddr::from(([127, 0, 0, 1], port)))
}

fn crumb_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_crumb"))
}

/// Read the stream until the event `last` has come (keeping only a small window of it); the
/// connection stays open for the caller.
fn read_stream(addr: SocketAddr, path: &str, last: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(DEADLINE))
        .expect("read timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .expect("request");
    let needle = format!("id: {last}");
    let started = Instant::now();
    let mut window: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        assert!(started.elapsed() < DEADLINE, "the stream never sent {last}");
        let n = stream.read(&mut buf).expect("read the stream");
        assert!(n > 0, "the stream ended before {last}");
        window.extend_from_slice(&buf[..n]);
        if window.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            return stream;
        }
        let keep = window.len().min(needle.len());
        window.drain(..window.len() - keep);
    }
}

/// One GET over a fresh connection, its body read and dropped a chunk at a time.
fn get(addr: SocketAddr, path: &str) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(DEADLINE))
        .expect("read timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut buf = vec![0u8; 64 * 1024];
    let mut first = true;
    loop {
        let n = stream.read(&mut buf).expect("read the reply");
        if n == 0 {
            return;
        }
        if first {
            assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "GET {path}: not 200");
            first = false;
        }
    }
}

/// The process's peak resident set (`VmHWM`), KiB.
fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/<pid>/status")
}
