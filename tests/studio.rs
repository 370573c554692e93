//! Studio against a real server on `127.0.0.1:0`: sessions written with the real transcript
//! writer in a temporary crumb home, talked to over raw HTTP/1.1 and SSE.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crumb::engine::{Effect, Replay, reduce};
use crumb::pipeline::compile::{CompileOptions, compile_file};
use crumb::pipeline::table::TransitionTable;
use crumb::runtime::home::{CrumbHome, Project};
use crumb::runtime::inbox::{parse_line, read_after, to_draft};
use crumb::runtime::session::{CreatedSession, create};
use crumb::studio::{StudioConfig, serve};
use crumb::transcript::reader::read_path;
use crumb::transcript::writer::Writer;
use crumb::transcript::{Data, Deviation, Dimension, Draft, Event, Kind, ScoreSource, Scores};
use crumb::vocab::{Severity, Verdict};
use serde_json::{Value, json};

use crate::support::{crumb, repo_root};

pub const TOKEN: &str = "test-token-0123456789";

/// A Studio server running on its own runtime thread; stopped (gracefully) on drop.
pub struct Server {
    pub addr: SocketAddr,
    pub preview: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    pub fn start(home: &Path) -> Server {
        let mut config = StudioConfig::new(CrumbHome::at(home));
        TOKEN.clone_into(&mut config.token);
        config.heartbeat = Duration::from_secs(1);
        config.project_dir = Some(repo_root());
        config.crumb_exe = Some(crate::support::crumb_bin());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                let preview = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind preview");
                ready_tx
                    .send((
                        listener.local_addr().unwrap(),
                        preview.local_addr().unwrap(),
                    ))
                    .unwrap();
                serve(listener, preview, config, async move {
                    let _ = stopped.await;
                })
                .await
                .expect("serve");
            });
        });
        let (addr, preview) = ready_rx.recv().expect("server started");
        Server {
            addr,
            preview,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Ask the server to stop and wait until it has.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().expect("server thread");
        }
    }

    pub fn get(&self, path: &str) -> Reply {
        request(self.addr, "GET", path, &[], None)
    }

    pub fn get_json(&self, path: &str) -> Value {
        let reply = self.get(path);
        assert_eq!(reply.status, 200, "GET {path}: {}", reply.body);
        serde_json::from_str(&reply.body).expect("JSON")
    }

    /// A same-origin write with the token.
    pub fn post(&self, path: &str, body: &Value) -> Reply {
        let origin = format!("http://{}", self.addr);
        request(
            self.addr,
            "POST",
            path,
            &[
                ("X-Crumb-Token", TOKEN),
                ("Origin", &origin),
                ("Content-Type", "application/json"),
            ],
            Some(&body.to_string()),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// What came back.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request over a fresh connection; `path` is sent exactly as given.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut text = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        let _ = write!(text, "Host: {addr}\r\n");
    }
    for (k, v) in headers {
        let _ = write!(text, "{k}: {v}\r\n");
    }
    let body = body.unwrap_or("");
    let _ = write!(text, "Content-Length: {}\r\n\r\n{body}", body.len());
    stream.write_all(text.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse_reply(&raw)
}

fn parse_reply(raw: &[u8]) -> Reply {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&raw[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[end + 2 + size + 2..];
    }
    out
}

/// An open SSE connection read frame by frame.
pub struct Sse {
    reader: BufReader<TcpStream>,
    chunk_left: usize,
}

/// One SSE frame.
#[derive(Debug, Default, Clone)]
pub struct Frame {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

impl Sse {
    pub fn open(addr: SocketAddr, path: &str, last_event_id: Option<&str>) -> Sse {
        let mut stream = TcpStream::connect(addr).expect("connect");
        // A safety net against a hung test, not a timing assertion.
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut text =
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n");
        if let Some(id) = last_event_id {
            let _ = write!(text, "Last-Event-ID: {id}\r\n");
        }
        text.push_str("\r\n");
        stream.write_all(text.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.contains(" 200 "), "SSE status: {status}");
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
        }
        Sse {
            reader,
            chunk_left: 0,
        }
    }

    /// The next line of the event stream (chunked transfer decoded).
    fn line(&mut self) -> String {
        let mut out = Vec::new();
        loop {
            if self.chunk_left == 0 {
                let mut size = String::new();
                self.reader.read_line(&mut size).expect("chunk size");
                if size.trim().is_empty() {
                    continue;
                }
                self.chunk_left = usize::from_str_radix(size.trim(), 16).expect("hex chunk size");
                assert!(self.chunk_left > 0, "stream ended");
            }
            let buf = self.reader.fill_buf().expect("read");
            let take = buf.len().min(self.chunk_left);
            let slice = &buf[..take];
            if let Some(newline) = slice.iter().position(|&b| b == b'\n') {
                out.extend_from_slice(&slice[..newline]);
                self.reader.consume(newline + 1);
                self.chunk_left -= newline + 1;
                if self.chunk_left == 0 {
                    let mut crlf = [0u8; 2];
                    self.reader.read_exact(&mut crlf).unwrap();
                }
                return String::from_utf8_lossy(&out).into_owned();
            }
            out.extend_from_slice(slice);
            self.reader.consume(take);
            self.chunk_left -= take;
            if self.chunk_left == 0 {
                let mut crlf = [0u8; 2];
                self.reader.read_exact(&mut crlf).unwrap();
            }
        }
    }

    /// Read until a heartbeat comment arrives (the server sends one per heartbeat interval).
    pub fn heartbeat(&mut self) {
        while !self.line().starts_with(": heartbeat") {}
    }

    /// The next frame that carries an event (comments, `retry` and heartbeats skipped).
    pub fn next_event(&mut self) -> Frame {
        let mut frame = Frame::default();
        loop {
            let line = self.line();
            if line.is_empty() {
                if frame.event.is_some() {
                    return frame;
                }
                frame = Frame::default();
                continue;
            }
            if let Some(v) = line
                .strip_prefix("id: ")
                .or_else(|| line.strip_prefix("id:"))
            {
                frame.id = Some(v.to_owned());
            } else if let Some(v) = line
                .strip_prefix("event: ")
                .or_else(|| line.strip_prefix("event:"))
            {
                frame.event = Some(v.to_owned());
            } else if let Some(v) = line
                .strip_prefix("data: ")
                .or_else(|| line.strip_prefix("data:"))
            {
                frame.data.push_str(v);
            }
        }
    }

    /// The next `append` frames, `n` of them, as events.
    pub fn appends(&mut self, n: usize) -> Vec<(String, Event)> {
        let mut out = Vec::new();
        while out.len() < n {
            let frame = self.next_event();
            if frame.event.as_deref() == Some("append") {
                let event: Event = serde_json::from_str(&frame.data).expect("event JSON");
                out.push((frame.id.expect("append frames carry ids"), event));
            }
        }
        out
    }
}

/// A session of the casual pipeline in `home`, with a writer on its transcript.
pub struct Fixture {
    pub session: CreatedSession,
    pub writer: Writer,
    pub table: TransitionTable,
}

impl Fixture {
    pub fn new(home: &Path) -> Fixture {
        let project = Project::from_root(repo_root());
        let pipeline = repo_root().join("pipelines/casual.yaml");
        let session = create(
            &CrumbHome::at(home),
            &project,
            &pipeline,
            "60-second match-3 with combo bonus",
        )
        .expect("session");
        let writer = Writer::open(session.dir.transcript(), session.dir.id()).expect("writer");
        let table = compile_file(&pipeline, &CompileOptions::default())
            .table
            .expect("casual compiles");
        Fixture {
            session,
            writer,
            table,
        }
    }

    pub fn id(&self) -> String {
        self.session.dir.id().to_owned()
    }

    pub fn dir(&self) -> &Path {
        self.session.dir.path()
    }

    pub fn append(&mut self, draft: Draft) -> Event {
        self.writer.append(draft).expect("append")
    }

    pub fn note(&mut self, text: &str) -> Event {
        self.append(Draft::new("planner-lead", Kind::AgentThoughtSummary).body(text))
    }

    /// goal → spec → build → QA (exit 0) → a verdict with these dimensions.
    pub fn run_to_verdict(&mut self, dims: [f64; 6], verdict: Verdict) {
        self.append(Draft::new("user", Kind::Goal).body("60-second match-3 with combo bonus"));
        self.append(
            Draft::new("planner-lead", Kind::Spec)
                .body("Match-3 on an 8×8 grid, 60 s timer, combos."),
        );
        std::fs::create_dir_all(self.dir().join("artifacts/game")).unwrap();
        std::fs::write(self.dir().join("artifacts/game/index.html"), GAME).unwrap();
        self.append(Draft::new("builder", Kind::Build).body("game/index.html written"));
        let mut data = Data::new();
        data.insert("exec_exit_code".into(), json!(0));
        data.insert(
            "checks".into(),
            json!([{ "id": "entry", "kind": "file", "status": "pass", "findings": [] },
                   { "id": "boots", "kind": "browser", "status": "pass", "findings": [] }]),
        );
        self.append(
            Draft::new("system", Kind::QaResult)
                .body("QA passed")
                .data(data),
        );
        let dim = |score: f64, source| {
            Some(Dimension {
                score,
                source,
                lookup: None,
                evidence: Vec::new(),
            })
        };
        let scores = Scores {
            d1: dim(dims[0], ScoreSource::VerifierLlm),
            d2: dim(dims[1], ScoreSource::QaCheckEffect),
            d3: dim(dims[2], ScoreSource::VerifierLlm),
            d4: dim(dims[3], ScoreSource::ReducerAuto),
            d5: dim(dims[4], ScoreSource::VerifierLlm),
            d6: dim(dims[5], ScoreSource::VerifierLlm),
            aggregate: Some(dims.iter().sum()),
            verdict: Some(verdict),
            feedback: Some("Combos feel good; the timer is hard to read.".into()),
            deviation: Some(Deviation {
                kind: Severity::Minor,
            }),
            ..Scores::default()
        };
        self.append(
            Draft::new("verifier", Kind::JudgeScore)
                .body("scored")
                .scores(scores),
        );
    }

    /// Act as the coordinator for the inbox: turn new lines into `user.*` events and append
    /// what the real reducer answers (acks, `done`).
    pub fn coordinate_inbox(&mut self) -> Vec<Event> {
        let (events, _) = read_path(&self.session.dir.transcript()).unwrap();
        let mut replay = Replay::new();
        for event in &events {
            replay.feed_event(&self.table, event);
        }
        let roles: Vec<String> = self.table.roles.iter().map(|r| r.id.clone()).collect();
        let consumed = crumb::runtime::inbox::consumed_offset(&events);
        let mut written = Vec::new();
        for line in read_after(&self.session.dir.inbox(), consumed).unwrap() {
            let command = parse_line(&line.text, &roles).unwrap().unwrap();
            let event = self.append(to_draft(&command, Some(line.end)));
            let (state, effects) = reduce(&self.table, &replay.state, &event);
            replay.state = state;
            written.push(event);
            for effect in effects {
                match effect {
                    Effect::Append(append) => written.push(self.append(*append.draft)),
                    Effect::Done(done) => {
                        let mut data = Data::new();
                        data.insert("reason".into(), json!(done.reason));
                        written.push(
                            self.append(
                                Draft::new("system", Kind::Done)
                                    .body(done.reason)
                                    .data(data),
                            ),
                        );
                    }
                    _ => {}
                }
            }
        }
        written
    }
}

/// A small playable canvas game for the preview.
pub const GAME: &str = r#"<!doctype html><html><head><meta charset="utf-8"><title>match-3</title></head>
<body style="margin:0;background:#111"><canvas id="c" width="320" height="240"></canvas>
<script>const c=document.getElementById('c').getContext('2d');const colors=['#e5534b','#3fb68b','#5b9cf0','#e7b23d'];
for(let y=0;y<6;y++)for(let x=0;x<8;x++){c.fillStyle=colors[(x*7+y*3)%4];c.fillRect(8+x*38,8+y*38,34,34);}
window.studioProbe=typeof fetch;</script></body></html>
"#;

fn temp_home() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp home")
}

#[test]
fn live_events_arrive_in_order() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    let first = fixture.note("one");
    let server = Server::start(home.path());
    let mut sse = Sse::open(
        server.addr,
        &format!("/api/sessions/{}/stream?from=start", fixture.id()),
        None,
    );
    let got = sse.appends(1);
    assert_eq!(got[0].0, first.id);
    let written: Vec<Event> = (0..20)
        .map(|i| fixture.note(&format!("note {i}")))
        .collect();
    let got = sse.appends(20);
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    let expected: Vec<&str> = written.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, expected);
    assert!(got.iter().all(|(id, event)| *id == event.id));
}

#[test]
fn reconnect_with_last_event_id_gets_exactly_the_missed_events() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    let events: Vec<Event> = (0..10).map(|i| fixture.note(&format!("n{i}"))).collect();
    let server = Server::start(home.path());
    let mut sse = Sse::open(
        server.addr,
        &format!("/api/sessions/{}/stream", fixture.id()),
        Some(&events[3].id),
    );
    let got = sse.appends(6);
    let ids: Vec<String> = got.into_iter().map(|(id, _)| id).collect();
    let expected: Vec<String> = events[4..].iter().map(|e| e.id.clone()).collect();
    assert_eq!(ids, expected);
    // The next event after them is the sentinel written now: nothing was repeated in between.
    let sentinel = fixture.note("sentinel");
    assert_eq!(sse.appends(1)[0].0, sentinel.id);
    // An idle stream stays alive with heartbeats.
    sse.heartbeat();
    // A client that saw everything gets nothing old, only what comes next.
    let mut caught_up = Sse::open(
        server.addr,
        &format!("/api/sessions/{}/stream", fixture.id()),
        Some(&sentinel.id),
    );
    let after = fixture.note("after");
    assert_eq!(caught_up.appends(1)[0].0, after.id);
}

#[test]
fn events_are_paged_and_filtered_through_the_index() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([3.0, 5.0, 3.0, 3.0, 3.0, 3.0], Verdict::Partial);
    for i in 0..250 {
        fixture.note(&format!("thinking {i}"));
    }
    // A torn last line is skipped, never fatal.
    std::fs::OpenOptions::new()
        .append(true)
        .open(fixture.session.dir.transcript())
        .unwrap()
        .write_all(b"{\"id\":\"01J")
        .unwrap();
    let server = Server::start(home.path());
    let id = fixture.id();
    let last = server.get_json(&format!("/api/sessions/{id}/events?limit=50"));
    assert_eq!(last["total"], 255);
    let events = last["events"].as_array().unwrap();
    assert_eq!(events.len(), 50);
    assert_eq!(events[49]["seq"], 254);
    assert_eq!(events[49]["event"]["body"], "thinking 249");
    let judge = server.get_json(&format!(
        "/api/sessions/{id}/events?kind=judge.score,qa.result"
    ));
    let kinds: Vec<&str> = judge["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["qa.result", "judge.score"]);
    let text = server.get_json(&format!(
        "/api/sessions/{id}/events?q=THINKING%2012&after=0&limit=5"
    ));
    let bodies: Vec<&str> = text["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"]["body"].as_str().unwrap())
        .collect();
    assert_eq!(
        bodies,
        [
            "thinking 12",
            "thinking 120",
            "thinking 121",
            "thinking 122",
            "thinking 123"
        ]
    );
    let before = server.get_json(&format!(
        "/api/sessions/{id}/events?before=3&role=planner-lead"
    ));
    assert_eq!(before["events"].as_array().unwrap().len(), 1);
}

#[test]
fn session_state_shows_the_reducers_verdict_graph_and_budgets() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([3.0, 5.0, 3.0, 3.0, 3.0, 3.0], Verdict::Partial);
    let server = Server::start(home.path());
    let id = fixture.id();
    let state = server.get_json(&format!("/api/sessions/{id}"));
    assert_eq!(state["scorecard"]["verdict"], "PARTIAL");
    assert_eq!(state["scorecard"]["aggregate"], 20.0);
    assert_eq!(state["scorecard"]["dimensions"][1]["source"], "qa");
    assert_eq!(state["scorecard"]["dimensions"][0]["source"], "model");
    assert!(
        state["state"]["awaiting"].is_object(),
        "PARTIAL awaits a person: {}",
        state["state"]
    );
    assert_eq!(state["pipeline"]["limits"]["max_verify"], 5);
    assert_eq!(state["live"], true);
    let graph = server.get_json(&format!("/api/sessions/{id}/graph"));
    assert_eq!(graph["current"], "await_human");
    let taken: Vec<(String, u64)> = graph["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["count"].as_u64().unwrap() > 0)
        .map(|e| {
            (
                format!(
                    "{}→{}",
                    e["from"].as_str().unwrap(),
                    e["to"].as_str().unwrap()
                ),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect();
    insta::assert_json_snapshot!("studio_graph_edges_taken", taken);
    let list = server.get_json("/api/sessions");
    assert_eq!(list["total"], 1);
    assert_eq!(list["sessions"][0]["id"], id.as_str());
    assert_eq!(list["sessions"][0]["verdict"], "PARTIAL");
    assert!(list["sessions"][0].get("history").is_none());
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: every way out, each checked on both origins"
)]
fn artifact_paths_cannot_leave_the_session() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    let dir = fixture.dir().to_path_buf();
    std::fs::create_dir_all(dir.join("artifacts-x")).unwrap();
    std::fs::write(dir.join("artifacts-x/s.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(dir.join("meta.json"), dir.join("artifacts/meta-link.json"))
        .unwrap();
    std::os::unix::fs::symlink("/etc", dir.join("artifacts/etc")).unwrap();
    let server = Server::start(home.path());
    let id = fixture.id();
    let ok = server.get(&format!(
        "/api/sessions/{id}/files/artifacts/game/index.html"
    ));
    assert_eq!(ok.status, 200);
    assert!(ok.body.contains("<canvas"));
    assert_eq!(
        ok.header("content-type"),
        Some("text/plain; charset=utf-8"),
        "HTML is served inert on the API origin"
    );
    for path in [
        "artifacts/../meta.json",
        "artifacts/..%2fmeta.json",
        "artifacts/%2e%2e/meta.json",
        "artifacts/..%2fartifacts-x%2fs.txt",
        "artifacts/%2e%2e%2fartifacts-x%2fs.txt",
        "artifacts/meta-link.json",
        "artifacts/etc/passwd",
        "artifacts//etc/passwd",
        "meta.json",
        "artifacts-x/s.txt",
    ] {
        let reply = server.get(&format!("/api/sessions/{id}/files/{path}"));
        assert!(
            matches!(reply.status, 403 | 404),
            "{path} answered {} {}",
            reply.status,
            reply.body
        );
        assert!(
            !reply.body.contains("secret") && !reply.body.contains("root:"),
            "{path} leaked"
        );
        let preview = request(
            server.preview,
            "GET",
            &format!("/s/{id}/{}", path.trim_start_matches("artifacts/")),
            &[],
            None,
        );
        assert!(
            matches!(preview.status, 403 | 404),
            "preview {path} answered {}",
            preview.status
        );
    }
    let game = request(
        server.preview,
        "GET",
        &format!("/s/{id}/game/index.html"),
        &[],
        None,
    );
    assert_eq!(game.status, 200);
    assert_eq!(
        game.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let csp = game.header("content-security-policy").unwrap();
    assert!(
        csp.contains("connect-src 'self'")
            && csp.contains(&format!(
                "frame-ancestors http://127.0.0.1:{}",
                server.addr.port()
            )),
        "{csp}"
    );
    // The preview origin has no API.
    let api = request(
        server.preview,
        "GET",
        &format!("/api/sessions/{id}"),
        &[],
        None,
    );
    assert_eq!(api.status, 404);
    // Per-role prompts and logs, by spawn number; role names cannot walk out either.
    std::fs::write(
        fixture.session.dir.prompt_path("builder", 1),
        "# Build the game",
    )
    .unwrap();
    std::fs::write(
        fixture.session.dir.log_path("builder", 1),
        "wrote game/index.html",
    )
    .unwrap();
    let roles = server.get_json(&format!("/api/sessions/{id}/roles"));
    let builder = roles["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["role"] == "builder")
        .unwrap();
    assert_eq!(builder["prompts"], json!([1]));
    assert_eq!(builder["logs"], json!([1]));
    assert_eq!(
        server
            .get(&format!("/api/sessions/{id}/logs/builder/1"))
            .body,
        "wrote game/index.html"
    );
    assert_eq!(
        server
            .get(&format!("/api/sessions/{id}/prompts/builder/1"))
            .body,
        "# Build the game"
    );
    for path in [
        "logs/..%2f..%2fmeta.json/1",
        "logs/builder/..%2f1",
        "prompts/builder/2",
        "logs/%2e%2e/1",
    ] {
        let reply = server.get(&format!("/api/sessions/{id}/{path}"));
        assert!(
            matches!(reply.status, 400 | 404),
            "{path} answered {}",
            reply.status
        );
    }
    let list = server.get_json(&format!("/api/sessions/{id}/artifacts"));
    let paths: Vec<&str> = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["artifacts/game/index.html"],
        "symlinks are not listed"
    );
}

/// A refused write: what it lacks, its headers, the expected status.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, u16);

#[test]
fn writes_need_the_token_the_origin_and_json() {
    let home = temp_home();
    let fixture = Fixture::new(home.path());
    let server = Server::start(home.path());
    let path = format!("/api/sessions/{}/inbox", fixture.id());
    let body = json!({ "line": "/approve" }).to_string();
    let origin = format!("http://{}", server.addr);
    let cases: [Case<'_>; 5] = [
        (
            "no token",
            vec![
                ("Origin", origin.as_str()),
                ("Content-Type", "application/json"),
            ],
            403,
        ),
        (
            "wrong token",
            vec![
                ("X-Crumb-Token", "guess"),
                ("Content-Type", "application/json"),
            ],
            403,
        ),
        (
            "other origin",
            vec![
                ("X-Crumb-Token", TOKEN),
                ("Origin", "http://127.0.0.1:1"),
                ("Content-Type", "application/json"),
            ],
            403,
        ),
        (
            "cross-site fetch",
            vec![
                ("X-Crumb-Token", TOKEN),
                ("Sec-Fetch-Site", "cross-site"),
                ("Content-Type", "application/json"),
            ],
            403,
        ),
        (
            "form post",
            vec![("X-Crumb-Token", TOKEN), ("Content-Type", "text/plain")],
            415,
        ),
    ];
    for (what, headers, status) in cases {
        let reply = request(server.addr, "POST", &path, &headers, Some(&body));
        assert_eq!(reply.status, status, "{what}: {}", reply.body);
    }
    // DNS rebinding: a foreign Host is refused even for reads.
    let rebound = request(
        server.addr,
        "GET",
        "/api/sessions",
        &[("Host", "attacker.example:80")],
        None,
    );
    assert_eq!(rebound.status, 421);
    let huge = json!({ "line": "x".repeat(100_000) }).to_string();
    let reply = request(
        server.addr,
        "POST",
        &path,
        &[
            ("X-Crumb-Token", TOKEN),
            ("Content-Type", "application/json"),
        ],
        Some(&huge),
    );
    assert_eq!(reply.status, 413);
    let inbox = std::fs::read_to_string(fixture.session.dir.inbox()).unwrap();
    assert_eq!(inbox, "", "nothing refused was written");
    // A line the grammar rejects is answered with the reason and not written either.
    let bad = server.post(&path, &json!({ "line": "/goto nobody" }));
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("unknown role `nobody`"), "{}", bad.body);
    assert_eq!(
        std::fs::read_to_string(fixture.session.dir.inbox()).unwrap(),
        ""
    );
}

#[test]
fn a_posted_approve_lands_in_the_inbox_and_its_ack_reaches_the_stream() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([3.0, 5.0, 3.0, 3.0, 3.0, 3.0], Verdict::Partial);
    let server = Server::start(home.path());
    let id = fixture.id();
    let mut sse = Sse::open(server.addr, &format!("/api/sessions/{id}/stream"), None);
    let reply = server.post(
        &format!("/api/sessions/{id}/inbox"),
        &json!({ "line": "/approve" }),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    let answer: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(answer["command"], "approve the awaited result");
    assert_eq!(
        std::fs::read_to_string(fixture.session.dir.inbox()).unwrap(),
        "/approve\n"
    );
    let written = fixture.coordinate_inbox();
    let streamed = sse.appends(written.len());
    let kinds: Vec<&str> = streamed.iter().map(|(_, e)| e.kind.as_str()).collect();
    assert_eq!(kinds[0], "user.approve");
    let ack = streamed
        .iter()
        .find(|(_, e)| e.kind.as_str() == "ack")
        .expect("an ack");
    assert_eq!(
        ack.1.metadata.as_ref().unwrap().ack_for.as_deref(),
        Some(streamed[0].0.as_str())
    );
    assert!(
        kinds.contains(&"done"),
        "approving a PARTIAL finishes the session: {kinds:?}"
    );
}

#[test]
fn the_page_carries_the_token_and_a_strict_csp() {
    let home = temp_home();
    let server = Server::start(home.path());
    let page = server.get("/");
    assert_eq!(page.status, 200);
    assert!(page.body.contains(&format!("content=\"{TOKEN}\"")));
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self'")
            && csp.contains(&format!(
                "frame-src http://127.0.0.1:{}",
                server.preview.port()
            )),
        "{csp}"
    );
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    for asset in crumb::studio::assets::ASSETS {
        assert_eq!(server.get(&format!("/assets/{}", asset.0)).status, 200);
    }
    assert_eq!(server.get("/assets/..%2fCargo.toml").status, 404);
    assert_eq!(server.get("/api/sessions/not-a-session").status, 404);
    assert_eq!(
        server
            .get("/api/sessions/01JZZZZZZZZZZZZZZZZZZZZZZZ/events")
            .status,
        404
    );
    server.shutdown();
}

#[test]
fn studio_refuses_a_public_bind_without_the_flag() {
    let home = temp_home();
    let run = crumb()
        .args(["studio", "--bind", "0.0.0.0", "--port", "0", "--no-open"])
        .env("CRUMB_HOME", home.path())
        .run()
        .expect_code(2);
    assert!(run.stderr.contains("--allow-remote"), "{}", run.stderr);
}

/// Where browser screenshots are kept.
pub fn artifact_dir() -> PathBuf {
    repo_root().join("target/studio-e2e")
}

/// A PNG of coloured tiles standing in for a QA screenshot.
fn tiles_png(width: u32, height: u32) -> Vec<u8> {
    let colours = [
        [229, 83, 75],
        [63, 182, 139],
        [91, 156, 240],
        [231, 178, 61],
    ];
    let mut pixels = Vec::with_capacity((width * height * 3) as usize);
    for y in 0..height {
        for x in 0..width {
            let c = colours[((x / 40) * 7 + (y / 40) * 3) as usize % 4];
            let edge = x % 40 < 3 || y % 40 < 3;
            pixels.extend(if edge { [17, 17, 17] } else { c });
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .write_header()
        .unwrap()
        .write_image_data(&pixels)
        .unwrap();
    out
}

/// Poll `probe` in the page until it returns true, up to `limit` (a condition wait, not a sleep).
async fn wait_in_page(page: &chromiumoxide::Page, probe: &str, limit: Duration) -> bool {
    crate::support::eventually_async(limit, || async {
        page.evaluate(probe)
            .await
            .ok()
            .and_then(|v| v.into_value::<bool>().ok())
            .unwrap_or(false)
            .then_some(())
    })
    .await
    .is_some()
}

/// Fail with what the page shows, keeping a screenshot of it.
async fn page_failure(page: &chromiumoxide::Page, what: &str) -> ! {
    use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
    use chromiumoxide::page::ScreenshotParams;
    let text = page_text(page, "document.body.innerText").await;
    if let Ok(png) = page
        .screenshot(
            ScreenshotParams::builder()
                .format(CaptureScreenshotFormat::Png)
                .build(),
        )
        .await
    {
        let _ = std::fs::create_dir_all(artifact_dir());
        let _ = std::fs::write(artifact_dir().join("failure.png"), png);
    }
    panic!("{what}\n--- page text\n{text}");
}

async fn page_text(page: &chromiumoxide::Page, expression: &str) -> String {
    page.evaluate(expression)
        .await
        .ok()
        .and_then(|v| v.into_value::<String>().ok())
        .unwrap_or_default()
}

#[test]
fn end_to_end_in_headless_chromium_approve_from_the_command_bar() {
    use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
    use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
    use chromiumoxide::page::ScreenshotParams;
    use crumb::qa::browser::launch::Chromium;

    let exe = crate::support::chromium();
    let home = temp_home();
    let mut done = Fixture::new(home.path());
    done.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([4.0, 5.0, 3.0, 3.0, 3.0, 3.0], Verdict::Partial);
    std::fs::create_dir_all(fixture.dir().join("qa")).unwrap();
    std::fs::write(fixture.dir().join("qa/boots.png"), tiles_png(320, 240)).unwrap();
    let server = Server::start(home.path());
    let id = fixture.id();
    let url = format!("http://127.0.0.1:{}/#/session/{id}", server.addr.port());
    let shots = artifact_dir();
    std::fs::create_dir_all(&shots).unwrap();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let chromium = Chromium::launch(&exe).await.expect("launch Chromium");
        let page = chromium.browser.new_page("about:blank").await.expect("page");
        page.execute(SetDeviceMetricsOverrideParams::new(1440, 1100, 1.0, false)).await.expect("viewport");
        page.goto(url.as_str()).await.expect("open Studio");
        if !wait_in_page(&page, "document.querySelectorAll('#sessions .session').length === 2 && !!document.querySelector('#aggregate')", Duration::from_secs(20)).await {
            page_failure(&page, "Studio shows both sessions and the scorecard").await;
        }
        assert_eq!(page_text(&page, "document.querySelector('#scorecard .pill').textContent").await, "PARTIAL");
        assert_eq!(page_text(&page, "document.querySelector('#aggregate').firstChild.textContent").await, "21.0");
        let sources = page_text(&page, "[...document.querySelectorAll('#scorecard .chip')].map(c => c.textContent).join(',')").await;
        assert!(sources.starts_with("model,QA,model,engine"), "source chips: {sources}");
        if !wait_in_page(&page, "!!document.querySelector('#graph .node.current[data-node=\"await_human\"]')", Duration::from_secs(10)).await {
            page_failure(&page, "the graph marks the awaited person").await;
        }
        assert!(page_text(&page, "document.querySelector('.banner.await').textContent").await.contains("/approve"));

        // Send /approve from the command bar with real key presses.
        let input = page.find_element("#command").await.expect("command bar");
        input.click().await.unwrap();
        input.type_str("/approve").await.unwrap();
        input.press_key("Enter").await.unwrap();
        let inbox = fixture.session.dir.inbox();
        let reached = crate::support::eventually_async(Duration::from_secs(10), || async {
            (std::fs::read_to_string(&inbox).unwrap_or_default() == "/approve\n").then_some(())
        })
        .await;
        assert!(reached.is_some(), "the line never reached inbox.txt");
        let written = fixture.coordinate_inbox();
        assert!(written.iter().any(|e| e.kind == Kind::Done));
        if !wait_in_page(&page, "!!document.querySelector('.sent .ack.good') && !!document.querySelector('.banner.done')", Duration::from_secs(15)).await {
            page_failure(&page, "the ack shows under the line and the session finishes").await;
        }
        assert!(page_text(&page, "document.querySelector('.sent .ack.good').textContent").await.starts_with('✓'));

        // Artifacts: QA screenshot, per-check results and the game in the sandboxed preview.
        page.evaluate("document.querySelector('[data-tab=Artifacts]').click()").await.unwrap();
        if !wait_in_page(&page, "!!document.querySelector('iframe.game') && !!document.querySelector('.shot img') && document.querySelector('.shot img').complete && document.querySelectorAll('.checks tr').length === 2", Duration::from_secs(10)).await {
            page_failure(&page, "artifacts panel").await;
        }
        let sandbox = page_text(&page, "document.querySelector('iframe.game').getAttribute('sandbox')").await;
        assert!(!sandbox.contains("allow-same-origin"), "{sandbox}");
        page.evaluate("document.querySelector('[data-tab=Feed]').click(); document.querySelector('#main').scrollTop = 0").await.unwrap();
        let png = page.screenshot(ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).build()).await.expect("screenshot");
        std::fs::write(shots.join("session.png"), &png).unwrap();
        page.evaluate("document.querySelector('[data-tab=Artifacts]').click(); document.querySelector('.tabs-card').scrollIntoView()").await.unwrap();
        let png = page.screenshot(ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).build()).await.expect("screenshot");
        std::fs::write(shots.join("artifacts.png"), &png).unwrap();

        // Game code, even opened at the top level of the preview origin, cannot reach the API.
        let hostile = format!(
            r"<!doctype html><body><script>
            const api = 'http://127.0.0.1:{port}/api/sessions/{id}/inbox';
            Promise.allSettled([
              fetch('http://127.0.0.1:{port}/api/sessions').then(r => r.text()),
              fetch(api, {{ method: 'POST', headers: {{ 'content-type': 'application/json' }}, body: JSON.stringify({{ line: '/veto from the game' }}) }}),
            ]).then(results => {{ document.body.dataset.result = results.map(r => r.status).join(','); }});
            </script></body>",
            port = server.addr.port()
        );
        std::fs::write(fixture.dir().join("artifacts/game/probe.html"), hostile).unwrap();
        let probe = format!("http://127.0.0.1:{}/s/{id}/game/probe.html", server.preview.port());
        page.goto(probe.as_str()).await.expect("open the probe");
        if !wait_in_page(&page, "!!document.body.dataset.result", Duration::from_secs(10)).await {
            page_failure(&page, "the probe game never finished").await;
        }
        assert_eq!(page_text(&page, "document.body.dataset.result").await, "rejected,rejected");
        assert_eq!(std::fs::read_to_string(&inbox).unwrap(), "/approve\n", "the game wrote nothing");
        chromium.shutdown().await;
    });
}

/// Wait (bounded) until the session's state satisfies `ready`, polling the API.
fn wait_for_state(server: &Server, id: &str, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    crate::support::eventually(what, Duration::from_secs(120), || {
        let reply = server.get(&format!("/api/sessions/{id}"));
        if reply.status != 200 {
            return None;
        }
        let state: Value = serde_json::from_str(&reply.body).unwrap();
        ready(&state).then_some(state)
    })
}

#[test]
fn a_session_started_from_studio_runs_crumb_run_and_a_posted_approve_finishes_it() {
    let home = temp_home();
    let server = Server::start(home.path());
    let reply = server.post(
        "/api/sessions",
        &json!({ "pipeline": "pipelines/casual.yaml", "pitch": "tiny match-3 for studio", "preset": "mock", "mock_scenario": "partial" }),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    let started: Value = serde_json::from_str(&reply.body).unwrap();
    let id = started["session_id"].as_str().unwrap().to_owned();
    assert_eq!(started["url"], format!("/#/session/{id}"));
    let mut sse = Sse::open(
        server.addr,
        &format!("/api/sessions/{id}/stream?from=start"),
        None,
    );
    let awaiting = wait_for_state(&server, &id, "the PARTIAL verdict", |s| {
        s["state"]["awaiting"].is_object()
    });
    assert_eq!(awaiting["scorecard"]["verdict"], "PARTIAL");
    assert_eq!(
        awaiting["live"], true,
        "crumb run --wait keeps the coordinator"
    );
    let approve = server.post(
        &format!("/api/sessions/{id}/inbox"),
        &json!({ "line": "/approve looks fun" }),
    );
    assert_eq!(approve.status, 202, "{}", approve.body);
    // Everything up to the end arrives on the stream, in order, with the real coordinator's ack.
    let mut seen: Vec<Event> = Vec::new();
    while !seen.iter().any(|e| e.kind == Kind::Done) {
        seen.extend(sse.appends(1).into_iter().map(|(_, e)| e));
    }
    let approve_event = seen
        .iter()
        .find(|e| e.kind == Kind::UserApprove)
        .expect("user.approve");
    let ack = seen
        .iter()
        .find(|e| {
            e.kind == Kind::Ack
                && e.metadata.as_ref().and_then(|m| m.ack_for.as_deref())
                    == Some(approve_event.id.as_str())
        })
        .expect("the coordinator acknowledged the line");
    assert!(
        seen.iter().position(|e| e.id == ack.id)
            > seen.iter().position(|e| e.id == approve_event.id)
    );
    let ids: Vec<&str> = seen.iter().map(|e| e.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(ids, sorted, "in order, no duplicates");
    wait_for_state(&server, &id, "the finished session", |s| {
        s["state"]["done"].is_object()
    });
}

#[test]
fn the_probe_recognises_studio_and_nothing_else() {
    let home = temp_home();
    let server = Server::start(home.path());
    assert!(crumb::studio::probe::running_on(
        server.addr.port(),
        Duration::from_secs(5)
    ));
    // The preview listener is an HTTP server too, but not Studio.
    assert!(!crumb::studio::probe::running_on(
        server.preview.port(),
        Duration::from_secs(5)
    ));
    assert_eq!(
        crumb::studio::probe::session_url(7321, "01JABCDEFGHJKMNPQRSTVWXYZ0"),
        "http://127.0.0.1:7321/#/session/01JABCDEFGHJKMNPQRSTVWXYZ0"
    );
}

#[test]
fn end_to_end_a_real_mock_run_is_approved_from_the_page() {
    use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
    use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
    use chromiumoxide::page::ScreenshotParams;
    use crumb::qa::browser::launch::Chromium;

    let exe = crate::support::chromium();
    let home = temp_home();
    let server = Server::start(home.path());
    // Started the way the page's form does: `crumb run --wait` in the background.
    let reply = server.post(
        "/api/sessions",
        &json!({ "pipeline": "pipelines/casual.yaml", "pitch": "neon match-3 with combo bonus", "preset": "mock", "mock_scenario": "partial" }),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    let id = serde_json::from_str::<Value>(&reply.body).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_for_state(&server, &id, "the PARTIAL verdict", |s| {
        s["state"]["awaiting"].is_object()
    });
    let url = format!("http://127.0.0.1:{}/#/session/{id}", server.addr.port());
    let shots = artifact_dir();
    std::fs::create_dir_all(&shots).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let chromium = Chromium::launch(&exe).await.expect("launch Chromium");
        let page = chromium.browser.new_page("about:blank").await.expect("page");
        page.execute(SetDeviceMetricsOverrideParams::new(1440, 1100, 1.0, false)).await.expect("viewport");
        page.goto(url.as_str()).await.expect("open Studio");
        if !wait_in_page(&page, "!!document.querySelector('.banner.await') && !!document.querySelector('#aggregate') && !!document.querySelector('#graph .node.current')", Duration::from_secs(20)).await {
            page_failure(&page, "an awaiting session with its scorecard and graph").await;
        }
        assert_eq!(page_text(&page, "document.querySelector('#scorecard .pill').textContent").await, "PARTIAL");
        let png = page.screenshot(ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).build()).await.expect("screenshot");
        std::fs::write(shots.join("real-awaiting.png"), &png).unwrap();
        let input = page.find_element("#command").await.expect("command bar");
        input.click().await.unwrap();
        input.type_str("/approve").await.unwrap();
        input.press_key("Enter").await.unwrap();
        if !wait_in_page(&page, "!!document.querySelector('.sent .ack.good') && !!document.querySelector('.banner.done')", Duration::from_secs(30)).await {
            page_failure(&page, "the coordinator's ack and the finished session").await;
        }
        page.evaluate("document.querySelector('[data-tab=Artifacts]').click()").await.unwrap();
        if !wait_in_page(&page, "!!document.querySelector('iframe.game') && [...document.querySelectorAll('.shot img')].every(i => i.complete)", Duration::from_secs(10)).await {
            page_failure(&page, "the artifacts panel with the game").await;
        }
        let png = page.screenshot(ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).build()).await.expect("screenshot");
        std::fs::write(shots.join("real-finished.png"), &png).unwrap();
        page.evaluate("document.querySelector('.tabs-card').scrollIntoView()").await.unwrap();
        let png = page.screenshot(ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).build()).await.expect("screenshot");
        std::fs::write(shots.join("real-artifacts.png"), &png).unwrap();
        chromium.shutdown().await;
    });
    wait_for_state(&server, &id, "the finished session", |s| {
        s["state"]["done"].is_object()
    });
}

#[test]
fn the_sessions_stream_announces_new_sessions() {
    let home = temp_home();
    let first = Fixture::new(home.path());
    let server = Server::start(home.path());
    let mut sse = Sse::open(server.addr, "/api/stream", None);
    // `ready`: the existing sessions are the baseline; what comes next is announced.
    let ready = sse.next_event();
    assert_eq!(ready.event.as_deref(), Some("ready"));
    assert_eq!(ready.data, "1");
    let mut second = Fixture::new(home.path());
    second.note("hello");
    let frame = loop {
        let frame = sse.next_event();
        if frame.event.as_deref() == Some("session") {
            break frame;
        }
    };
    let row: Value = serde_json::from_str(&frame.data).unwrap();
    assert_eq!(row["id"], second.id().as_str());
    assert_ne!(row["id"], first.id().as_str());
    assert!(row.get("history").is_none(), "rows are summaries");
}

/// Append `n` thought events straight to the transcript (fast; the writer's lock is not what is
/// being tested), with ids after every existing one.
fn append_many(fixture: &Fixture, n: usize) {
    let mut generator = ulid::Generator::new();
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(fixture.session.dir.transcript())
        .unwrap();
    let mut out = std::io::BufWriter::new(file);
    let roles = ["planner-lead", "builder", "verifier"];
    for i in 0..n {
        let event = Draft::new(roles[i % 3], Kind::AgentThoughtSummary)
            .body(format!(
                "step {i}: weighing the grid size against the timer"
            ))
            .into_event(
                generator.generate().unwrap().to_string(),
                "2026-11-30T10:00:00.000Z".into(),
                fixture.id(),
            );
        serde_json::to_writer(&mut out, &event).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
}

#[test]
fn a_100k_event_session_stays_usable_in_the_browser() {
    use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
    use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
    use chromiumoxide::page::ScreenshotParams;
    use crumb::qa::browser::launch::Chromium;

    let exe = crate::support::chromium();
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    append_many(&fixture, 100_000);
    let server = Server::start(home.path());
    let id = fixture.id();
    let url = format!("http://127.0.0.1:{}/#/session/{id}", server.addr.port());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let chromium = Chromium::launch(&exe).await.expect("launch Chromium");
        let page = chromium.browser.new_page("about:blank").await.expect("page");
        page.execute(SetDeviceMetricsOverrideParams::new(1440, 1100, 1.0, false))
            .await
            .expect("viewport");
        page.goto(url.as_str()).await.expect("open Studio");
        if !wait_in_page(
            &page,
            "document.querySelectorAll('.feed .ev').length > 0",
            Duration::from_secs(60),
        )
        .await
        {
            page_failure(&page, "the session view with its recent events").await;
        }
        let rows = page_text(&page, "String(document.querySelectorAll('.feed .ev').length)").await;
        assert!(rows.parse::<usize>().unwrap() <= 300, "the feed keeps a window, not the history: {rows}");
        page.evaluate("document.querySelector('[data-tab=Transcript]').click()").await.unwrap();
        if !wait_in_page(&page, "document.querySelectorAll('.tx-list .ev').length === 100", Duration::from_secs(20)).await {
            page_failure(&page, "the last transcript page").await;
        }
        assert!(page_text(&page, "document.querySelector('.tx-bar .muted').textContent").await.ends_with("of 100005"));
        page.evaluate("[...document.querySelectorAll('.tx-bar button')].find(b => b.textContent.includes('first')).click()").await.unwrap();
        if !wait_in_page(&page, "(document.querySelector('.tx-list .ev .ev-kind') || {}).textContent === 'goal'", Duration::from_secs(20)).await {
            page_failure(&page, "the first transcript page").await;
        }
        // Filtering by kind finds the one verdict among 100,000 events.
        page.evaluate("const k = document.querySelector('.tx-bar input'); k.value = 'judge.score'; k.dispatchEvent(new Event('change'))").await.unwrap();
        if !wait_in_page(&page, "document.querySelectorAll('.tx-list .ev').length === 1", Duration::from_secs(20)).await {
            page_failure(&page, "the kind filter").await;
        }
        page.evaluate("document.querySelector('.tx-list .ev').click(); document.querySelector('.tabs-card').scrollIntoView()").await.unwrap();
        let png = page
            .screenshot(ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).build())
            .await
            .expect("screenshot");
        std::fs::create_dir_all(artifact_dir()).unwrap();
        std::fs::write(artifact_dir().join("big-session.png"), &png).unwrap();
        chromium.shutdown().await;
    });
}
