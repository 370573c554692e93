//! A stand-in for an OpenTelemetry collector: a plain HTTP/1.1 server on 127.0.0.1:0 that keeps
//! every request and, at the moment each one arrives, what the session's transcript held — so a
//! test can tell which events had been written before a span reached the collector.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The largest body the stand-in reads (a bound, so a broken client cannot make it allocate).
const MAX_BODY: usize = 16 * 1024 * 1024;

/// One request as the collector saw it.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The kinds of the transcript's events when the request arrived, in file order.
    pub kinds_at_arrival: Vec<String>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

pub struct Collector {
    pub port: u16,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Collector {
    /// Listen on a free loopback port; `home` is the crumb home whose one session it watches.
    pub fn start(home: PathBuf) -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the collector");
        let port = listener.local_addr().expect("address").port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = Arc::clone(&kept);
                let home = home.clone();
                std::thread::spawn(move || serve(stream, &home, &kept));
            }
        });
        Collector { port, received }
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }
}

/// Answer every request on one connection (keep-alive) with 200 and an empty
/// `ExportTraceServiceResponse`.
fn serve(stream: TcpStream, home: &Path, kept: &Mutex<Vec<Received>>) {
    let Ok(write) = stream.try_clone() else {
        return;
    };
    let mut write = write;
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .to_owned();
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        let length = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(0)
            .min(MAX_BODY);
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let kinds_at_arrival = transcript_kinds(home);
        kept.lock().expect("lock").push(Received {
            path,
            headers,
            body,
            kinds_at_arrival,
        });
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        if write.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// The kinds of the events in the home's one session, in file order (none before it exists).
fn transcript_kinds(home: &Path) -> Vec<String> {
    let Some(session) = crate::otlp_live::session_of(home) else {
        return Vec::new();
    };
    std::fs::read_to_string(session.join("transcript.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|e| e["kind"].as_str().map(str::to_owned))
        .collect()
}
