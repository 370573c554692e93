//! Opening a long session in a fresh Studio (run: `cargo bench --bench studio_open`): a release
//! `crumb studio` process per sample, the session's summary (`GET /api/sessions/<id>`) and its
//! first events page (`…/events`, the page the session view asks for first), timed from the
//! request to the last byte of each reply; then Studio's peak RSS (`VmHWM`) with 20 sessions
//! listed, one of them of 1M events, opened and paged.
//!
//! Sessions are written by `examples/gen_transcript.rs` (100,000 and 1,000,000 events) into a
//! casual session's folder. The first open of each builds its caches (`studio.index`,
//! `studio.snapshot`; one sample, said as such); every later open is a new process that reads
//! them: targets, cold (a new process; the file is in the page cache), 100k ≤ 50 ms, 1M ≤ 100 ms
//! for summary + first page, and RSS ≤ 40 MB with the 20 sessions.
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

#[allow(
    dead_code,
    reason = "the generator's own `main` and helpers are not used here"
)]
#[path = "../examples/gen_transcript.rs"]
mod gen_transcript;
#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;

const RUNS: usize = 5;
const SMALL_SESSIONS: usize = 19;
/// A safety net against a hung bench, not a measurement.
const DEADLINE: Duration = Duration::from_secs(300);

fn main() {
    report::conditions("before");
    let home = tempfile::tempdir_in(std::env::temp_dir()).expect("temp home");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let project = Project::from_root(root.to_path_buf());
    let pipeline = root.join("pipelines/casual.yaml");
    let crumb_home = CrumbHome::at(home.path());
    for i in 0..SMALL_SESSIONS {
        let session =
            create(&crumb_home, &project, &pipeline, &format!("game {i}")).expect("session");
        let mut writer = Writer::open(session.dir.transcript(), session.dir.id()).expect("writer");
        writer
            .append(Draft::new("user", Kind::Goal).body(format!("game {i}")))
            .expect("append");
        session.lock.release();
    }
    let mut ids = Vec::new();
    for (events, target) in [(100_000u64, 50.0), (1_000_000, 100.0)] {
        let created = create(&crumb_home, &project, &pipeline, "a long session").expect("session");
        let id = created.dir.id().to_owned();
        ids.push(id.clone());
        gen_transcript::generate(events, &created.dir.transcript()).expect("generate");
        created.lock.release();
        let label = if events == 100_000 { "100k" } else { "1M" };
        let first = open(home.path(), &id);
        report::row(
            &format!("Studio: open a {label} session, first time (builds its caches)"),
            &format!("{:.0} ms", first.0 + first.1),
            &format!(
                "one sample: summary {:.0} ms + first events page {:.0} ms",
                first.0, first.1
            ),
        );
        println!(
            "{label} session, first open (builds studio.index and studio.snapshot): summary {:.1} ms, first page {:.1} ms",
            first.0, first.1
        );
        let mut totals = Vec::new();
        let mut parts = Vec::new();
        for _ in 0..RUNS {
            let (summary, page) = open(home.path(), &id);
            totals.push(summary + page);
            parts.push((summary, page));
        }
        let mut sorted = totals.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[RUNS / 2];
        let at = totals
            .iter()
            .position(|t| t.total_cmp(&median).is_eq())
            .unwrap_or(0);
        let verdict = if median <= target { "ok" } else { "OVER" };
        println!(
            "{label} session, cold open (fresh process, caches on disk): summary + first page median {median:.1} ms (summary {:.1}, page {:.1}; min {:.1}, max {:.1}, n={RUNS}); target ≤ {target} ms {verdict}",
            parts[at].0,
            parts[at].1,
            sorted[0],
            sorted[RUNS - 1]
        );
        report::row(
            &format!("Studio: open a {label} session, cold (summary + first events page)"),
            &format!("{median:.1} ms"),
            &format!(
                "fresh process, caches on disk, {RUNS} runs, max {:.1} ms; target ≤ {target} ms",
                sorted[RUNS - 1]
            ),
        );
    }
    // Peak memory: the list of all 20 sessions (+ the 100k one), then the 1M session opened.
    let big = ids.last().cloned().expect("the 1M session");
    let mut peaks: Vec<u64> = (0..3).map(|_| peak_kib(home.path(), &big)).collect();
    let (median, min, max) = report::spread(&mut peaks);
    let mb = |kib: u64| kib as f64 / 1024.0;
    println!(
        "peak RSS, {} sessions incl. 100k and 1M, list + 1M opened and paged: {:.1} MB (min {:.1}, max {:.1}, 3 runs); target ≤ 40 MB {}",
        SMALL_SESSIONS + 2,
        mb(median),
        mb(min),
        mb(max),
        if mb(median) <= 40.0 { "ok" } else { "OVER" }
    );
    report::row(
        "Studio: peak RSS, 21 sessions incl. one of 1M, list + open + page",
        &format!("{:.1} MB", mb(median)),
        &format!("VmHWM, 3 runs, max {:.1} MB; target ≤ 40 MB", mb(max)),
    );
    report::conditions("after");
}

/// A fresh Studio's summary and first events page of session `id`, in ms.
fn open(home: &Path, id: &str) -> (f64, f64) {
    let (mut child, addr) = start_studio(home);
    let summary = timed_get(addr, &format!("/api/sessions/{id}"));
    let page = timed_get(addr, &format!("/api/sessions/{id}/events?limit=200"));
    let _ = child.kill();
    let _ = child.wait();
    (summary, page)
}

fn peak_kib(home: &Path, id: &str) -> u64 {
    let (mut child, addr) = start_studio(home);
    timed_get(addr, "/api/sessions?limit=50");
    timed_get(addr, &format!("/api/sessions/{id}"));
    timed_get(addr, &format!("/api/sessions/{id}/events?limit=200"));
    timed_get(
        addr,
        &format!("/api/sessions/{id}/events?after=0&limit=200"),
    );
    timed_get(
        addr,
        &format!("/api/sessions/{id}/events?kind=judge.score&limit=200"),
    );
    let peak = vm_hwm_kib(child.id());
    let _ = child.kill();
    let _ = child.wait();
    peak
}

/// Start a release `crumb studio` on a free port; its address once it listens.
fn start_studio(home: &Path) -> (Child, SocketAddr) {
    let mut child = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_crumb")))
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

/// Milliseconds from sending the request to the reply's last byte (the reply must be a 200).
fn timed_get(addr: SocketAddr, path: &str) -> f64 {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    stream
        .set_read_timeout(Some(DEADLINE))
        .expect("read timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut body = Vec::new();
    stream.read_to_end(&mut body).expect("read the reply");
    let elapsed = started.elapsed().as_secs_f64() * 1000.0;
    assert!(
        body.starts_with(b"HTTP/1.1 200"),
        "GET {path}: {}",
        String::from_utf8_lossy(&body[..body.len().min(200)])
    );
    elapsed
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
