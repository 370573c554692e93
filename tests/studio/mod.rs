//! Studio against a real server on `127.0.0.1:0`: sessions written with the real transcript
//! writer in a temporary crumb home, talked to over raw HTTP/1.1 and SSE.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crumb::engine::{Effect, Replay, reduce};
use crumb::home::{CrumbHome, Project};
use crumb::pipeline::compile::{CompileOptions, compile_file};
use crumb::pipeline::table::TransitionTable;
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
        Server::start_with(home, |_| {})
    }

    /// [`Server::start`] with the configuration adjusted first (remote mode, allowed hosts, …).
    pub fn start_with(home: &Path, adjust: impl FnOnce(&mut StudioConfig)) -> Server {
        Server::start_at(home, 0, adjust)
    }

    /// [`Server::start_with`] on a given Studio port (0: any), e.g. to restart on the same one.
    pub fn start_at(home: &Path, port: u16, adjust: impl FnOnce(&mut StudioConfig)) -> Server {
        let mut config = StudioConfig::new(CrumbHome::at(home));
        TOKEN.clone_into(&mut config.token);
        config.heartbeat = Duration::from_secs(1);
        config.project_dir = Some(repo_root());
        config.crumb_exe = Some(crate::support::crumb_bin());
        adjust(&mut config);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
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

    /// `GET path` with these headers, as JSON (status 200 required).
    pub fn get_json_with(&self, path: &str, headers: &[(&str, &str)]) -> Value {
        let reply = request(self.addr, "GET", path, headers, None);
        assert_eq!(reply.status, 200, "GET {path}: {}", reply.body);
        serde_json::from_str(&reply.body).expect("JSON")
    }

    pub fn get_json(&self, path: &str) -> Value {
        let reply = self.get(path);
        assert_eq!(reply.status, 200, "GET {path}: {}", reply.body);
        serde_json::from_str(&reply.body).expect("JSON")
    }

    /// `GET path` on session `id`'s preview origin (`<id>.localhost:<port>`).
    pub fn preview_get(&self, id: &str, path: &str) -> Reply {
        let host = format!(
            "{}.localhost:{}",
            id.to_ascii_lowercase(),
            self.preview.port()
        );
        request(self.preview, "GET", path, &[("Host", &host)], None)
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
        let table = compile_file(
            &pipeline,
            &CompileOptions::default(),
            &crumb::fs::real_files(),
        )
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
            replay.fold_event(&self.table, event);
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

/// A session folder deleted while Studio watches it is gone from the list and answers 404 (the
/// session and its events), never "Running" or 500; put back, it is picked up again.
#[test]
fn a_deleted_session_is_gone_from_studio_and_one_that_reappears_is_back() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.note("before");
    let id = fixture.id();
    let server = Server::start(home.path());
    let session = format!("/api/sessions/{id}");
    let events = format!("{session}/events");
    assert_eq!(server.get(&session).status, 200);
    assert_eq!(server.get(&events).status, 200);
    let aside = home.path().join("aside");
    std::fs::rename(fixture.dir(), &aside).unwrap();
    assert_eq!(server.get(&session).status, 404);
    assert_eq!(server.get(&events).status, 404);
    assert_eq!(server.get_json("/api/sessions")["total"], 0);
    std::fs::rename(&aside, fixture.dir()).unwrap();
    assert_eq!(server.get(&session).status, 200);
    assert_eq!(server.get(&events).status, 200);
    assert_eq!(server.get_json("/api/sessions")["total"], 1);
}

/// Start a mock casual session whose verdicts are all PARTIAL, the way the page's form does
/// (`crumb run --wait` in the background); its id.
fn start_partial(server: &Server, pitch: &str) -> String {
    let reply = server.post(
        "/api/sessions",
        &json!({ "pipeline": "pipelines/casual.yaml", "pitch": pitch, "preset": "mock", "mock_scenario": "partial" }),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    serde_json::from_str::<Value>(&reply.body).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
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

mod accessibility;
mod batch_fork;
mod browser;
mod fork_page;
mod judges;
mod large_lines;
mod live;
mod new_run;
mod outcomes;
mod probes;
mod recovery;
mod security;
mod story;
mod stream;
mod versions;
