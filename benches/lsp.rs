//! `crumb lsp` as an editor drives it: the release binary over stdio, every shipped pipeline,
//! template and preset open. Prints the median time from a keystroke in `casual.yaml` to its
//! diagnostics (target ≤ 20 ms), the time from opening each shipped pipeline to its `crumb check`
//! findings and for all of them at once (target ≤ 1 s), and the server's resident memory then
//! (target ≤ 50 MB).
//!
//! Run with `cargo bench --bench lsp`.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the crumb binary and helpers as a user would, not through crate::process"
)]
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "figures printed for people; counts are far below 2^52"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;

const KEYSTROKES: i64 = 200;
const WARMUP: i64 = 10;

/// The server and the two ends of its stdio.
struct Server {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_crumb"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn crumb lsp");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        Server {
            child,
            input,
            output,
        }
    }

    fn send(&mut self, message: &Value) {
        let body = message.to_string();
        write!(self.input, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        self.input.flush().expect("flush");
    }

    fn notify(&mut self, method: &str, params: &Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    fn receive(&mut self) -> Value {
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            assert!(
                self.output.read_line(&mut line).expect("read") > 0,
                "the server closed stdout"
            );
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(n) = line.strip_prefix("Content-Length: ") {
                length = n.parse().expect("length");
            }
        }
        let mut body = vec![0; length];
        self.output.read_exact(&mut body).expect("body");
        serde_json::from_slice(&body).expect("JSON")
    }

    /// Read until a `publishDiagnostics` for `uri` at `version` has come `times` times.
    fn diagnostics(&mut self, uri: &str, version: i64, times: usize) {
        let mut seen = 0;
        while seen < times {
            let message = self.receive();
            let params = &message["params"];
            if message["method"] == "textDocument/publishDiagnostics"
                && params["uri"] == uri
                && params["version"] == version
            {
                seen += 1;
            }
        }
    }

    fn open(&mut self, path: &Path) -> String {
        let uri = format!("file://{}", path.display());
        let text = std::fs::read_to_string(path).expect("read");
        let language = if path.extension().is_some_and(|e| e == "j2") {
            "jinja"
        } else {
            "yaml"
        };
        self.notify(
            "textDocument/didOpen",
            &json!({ "textDocument": { "uri": uri, "languageId": language, "version": 1, "text": text } }),
        );
        uri
    }

    fn rss_kib(&self, field: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("status")
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("a VmRSS line")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn files(folder: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(folder)
        .expect("folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    found.sort();
    found
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    report::conditions("before");
    let mut server = Server::start();
    server.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "capabilities": {} } }));
    let _ = server.receive();
    server.notify("initialized", &json!({}));

    // Each shipped pipeline alone: opened, validated, then its check findings (the second publish).
    let pipelines = files(&root.join("pipelines"), "yaml");
    let mut all_checked = Duration::ZERO;
    for pipeline in &pipelines {
        let started = Instant::now();
        let uri = server.open(pipeline);
        server.diagnostics(&uri, 1, 2);
        let elapsed = started.elapsed();
        all_checked += elapsed;
        let name = pipeline.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        println!(
            "crumb lsp: open {name} → check findings in {:.1} ms",
            elapsed.as_secs_f64() * 1000.0
        );
    }
    report::row(
        "`crumb lsp`, every shipped pipeline opened → its `crumb check` findings",
        &report::ms(all_checked),
        &format!(
            "{} pipelines, one after another, target ≤ 1 s",
            pipelines.len()
        ),
    );
    println!(
        "crumb lsp: check findings for all {} shipped pipelines in {:.1} ms",
        pipelines.len(),
        all_checked.as_secs_f64() * 1000.0
    );
    for path in files(&root.join("templates"), "j2")
        .into_iter()
        .chain(files(&root.join("presets"), "yaml"))
    {
        let uri = server.open(&path);
        server.diagnostics(&uri, 1, 1);
    }
    let rss = server.rss_kib("VmRSS:");
    let hwm = server.rss_kib("VmHWM:");
    report::row(
        "`crumb lsp` memory holding every shipped pipeline, template and preset",
        &format!("{:.1} MB", rss as f64 / 1024.0),
        &format!(
            "resident, peak {:.1} MB, target ≤ 50 MB",
            hwm as f64 / 1024.0
        ),
    );
    println!(
        "crumb lsp: resident {:.1} MB (peak {:.1} MB) with every shipped file open",
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );

    // Keystrokes in casual.yaml: type a character into a comment and take it out again.
    let casual = format!("file://{}", root.join("pipelines/casual.yaml").display());
    let mut samples = Vec::new();
    for version in 2..2 + WARMUP + KEYSTROKES {
        let (range, text) = if version % 2 == 0 {
            (
                json!({ "start": { "line": 0, "character": 2 }, "end": { "line": 0, "character": 2 } }),
                "x",
            )
        } else {
            (
                json!({ "start": { "line": 0, "character": 2 }, "end": { "line": 0, "character": 3 } }),
                "",
            )
        };
        let started = Instant::now();
        server.notify(
            "textDocument/didChange",
            &json!({
                "textDocument": { "uri": casual, "version": version },
                "contentChanges": [{ "range": range, "text": text }],
            }),
        );
        server.diagnostics(&casual, version, 1);
        if version >= 2 + WARMUP {
            samples.push(started.elapsed());
        }
    }
    let (median, min, max) = report::spread(&mut samples);
    report::row(
        "`crumb lsp`, a keystroke in casual.yaml → its diagnostics",
        &report::ms(median),
        &format!(
            "min {}, max {}, {KEYSTROKES} keystrokes, target ≤ 20 ms",
            report::ms(min),
            report::ms(max)
        ),
    );
    println!(
        "crumb lsp keystroke → diagnostics: median {:.2} ms (min {:.2}, max {:.2}; {KEYSTROKES} keystrokes)",
        median.as_secs_f64() * 1000.0,
        min.as_secs_f64() * 1000.0,
        max.as_secs_f64() * 1000.0
    );
    report::conditions("after");
}
