//! Live OTLP export end to end: a real mock run sends its spans over real HTTP to a collector
//! stand-in on loopback while the session is still running, every request body parses with the
//! official OpenTelemetry protobuf definitions (`tests/otlp_live/parse.py`, in the cached venv of
//! `scripts/otlp-venv.sh`), and the live spans are the file export's spans. A collector that is
//! down changes nothing about the run but the summary's count of spans not sent.

mod collector;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::run::Scratch;
use crate::support::{Crumb, eventually};
use collector::{Collector, Received};

/// The home's one session folder, once it exists.
pub(crate) fn session_of(home: &Path) -> Option<PathBuf> {
    let project = std::fs::read_dir(home.join("projects"))
        .ok()?
        .next()?
        .ok()?
        .path();
    std::fs::read_dir(project.join("sessions"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            !p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .starts_with('.')
        })
}

fn spans(request: &Value) -> Vec<Value> {
    request["resourceSpans"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["scopeSpans"].as_array().into_iter().flatten())
        .flat_map(|s| s["spans"].as_array().into_iter().flatten())
        .cloned()
        .collect()
}

fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn is_turn(span: &Value) -> bool {
    attribute(span, "gen_ai.operation.name").is_some_and(|v| v["stringValue"] == "invoke_agent")
}

fn body(received: &Received) -> Value {
    serde_json::from_slice(&received.body).expect("a JSON body")
}

/// Parse every body with the official protobuf definitions; returns the spans each held.
fn parse_with_the_protobuf_definitions(received: &[Received]) -> Vec<usize> {
    let python = Crumb::shell("scripts/otlp-venv.sh")
        .timeout(Duration::from_secs(900))
        .run()
        .expect_code(0)
        .stdout
        .trim()
        .to_owned();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut paths = Vec::new();
    for (i, request) in received.iter().enumerate() {
        let path = dir.path().join(format!("{i}.json"));
        std::fs::write(&path, &request.body).expect("write a body");
        paths.push(path.display().to_string());
    }
    let run = Crumb::shell(r#""$PYTHON" tests/otlp_live/parse.py "$@""#)
        .env("PYTHON", &python)
        .args(["sh"])
        .args(&paths)
        .timeout(Duration::from_secs(120))
        .run()
        .expect_code(0);
    run.stdout
        .lines()
        .map(|l| {
            l.strip_prefix("ok ")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("parse.py said {l:?}"))
        })
        .collect()
}

/// Every request went to the traces path with the configured headers and service name, and the
/// last one, sent once the session had ended, holds the session span.
fn assert_requests(received: &[Received]) {
    for request in received {
        assert_eq!(request.path, "/v1/traces");
        assert_eq!(request.header("content-type"), Some("application/json"));
        assert_eq!(request.header("x-crumb-test"), Some("live run"));
        let resource = &body(request)["resourceSpans"][0]["resource"];
        assert_eq!(
            attribute(resource, "service.name").map(|v| &v["stringValue"]),
            Some(&Value::from("crumb-live-test"))
        );
    }
    // The session span comes last, once the session ended.
    let last = spans(&body(received.last().expect("a request")));
    assert!(
        last.iter().any(|s| s.get("parentSpanId").is_none()),
        "the last request holds the session span"
    );
    assert!(
        received
            .last()
            .is_some_and(|r| r.kinds_at_arrival.iter().any(|k| k == "session.end"))
    );
}

/// The spans of `crumb export --format otlp-json` of `session`.
fn exported_spans(scratch: &Scratch, session: &Path) -> Vec<Value> {
    let exported: Value = serde_json::from_str(
        &scratch
            .command(&["export"])
            .arg(session)
            .args(["--format", "otlp-json"])
            .run()
            .expect_code(0)
            .stdout,
    )
    .expect("export JSON");
    spans(&exported)
}

/// Live and file export agree span for span, attribute for attribute, and each span was sent
/// once.
fn assert_same_spans(live: &[Value], exported: &[Value]) {
    let ids = |spans: &[Value]| -> BTreeSet<(String, String)> {
        spans
            .iter()
            .map(|s| (s["spanId"].to_string(), s["name"].to_string()))
            .collect()
    };
    assert_eq!(ids(live), ids(exported));
    assert_eq!(ids(live).len(), live.len(), "each span sent once");
    let by_id = |spans: &[Value]| -> std::collections::BTreeMap<String, Value> {
        spans
            .iter()
            .map(|s| (s["spanId"].to_string(), s.clone()))
            .collect()
    };
    assert_eq!(
        by_id(live),
        by_id(exported),
        "the same spans, attribute for attribute"
    );
}

#[test]
fn spans_reach_a_collector_while_the_session_runs_and_parse_with_the_protobuf_definitions() {
    let scratch = Scratch::new();
    let collector = Collector::start(scratch.home());
    let child = scratch
        .command(&["run"])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", collector.port),
        )
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-crumb-test=live%20run")
        .env("OTEL_SERVICE_NAME", "crumb-live-test")
        // A loaded machine must not turn a slow answer into a span not sent.
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "30000")
        .arg(scratch.pipeline())
        .arg("a dodger with a combo meter")
        .args([
            "--adapter",
            "mock",
            "--json",
            "--mock-scenario",
            "partial",
            "--wait",
        ])
        .timeout(Duration::from_secs(120))
        .spawn();
    // The session waits for a person, and nobody answers before the first turn's span arrived:
    // that span reached the collector while the session was running.
    let first = eventually(
        "a turn span at the collector",
        Duration::from_secs(60),
        || {
            collector
                .received()
                .into_iter()
                .find(|r| spans(&body(r)).iter().any(is_turn))
        },
    );
    assert!(
        !first.kinds_at_arrival.iter().any(|k| k == "session.end"),
        "the session had ended before its first turn span arrived: {:?}",
        first.kinds_at_arrival
    );
    let stops = first
        .kinds_at_arrival
        .iter()
        .filter(|k| *k == "agent.stop")
        .count();
    let turns = spans(&body(&first)).iter().filter(|s| is_turn(s)).count();
    assert!(
        (1..=stops).contains(&turns),
        "{turns} turn spans arrived after {stops} turns had ended"
    );
    let session = session_of(&scratch.home()).expect("the session");
    eventually(
        "the session to wait for a person",
        Duration::from_secs(60),
        || {
            std::fs::read_to_string(session.join("transcript.jsonl"))
                .ok()?
                .contains("\"session.awaiting\"")
                .then_some(())
        },
    );
    scratch
        .command(&["say"])
        .arg(&session)
        .arg("/approve")
        .run()
        .expect_code(0);
    let run = child.wait().expect_code(0);
    let summary: Value = serde_json::from_str(&run.stdout).expect("the --json summary");
    assert_eq!(summary["outcome"], "pass");

    let received = collector.received();
    let live: Vec<Value> = received.iter().flat_map(|r| spans(&body(r))).collect();
    let otlp = &summary["otlp"];
    assert_eq!(otlp["sent"].as_u64(), Some(live.len() as u64), "{otlp}");
    assert_eq!(otlp["not_sent"], 0, "{otlp}");
    assert_eq!(
        otlp["endpoint"],
        format!("http://127.0.0.1:{}/v1/traces", collector.port)
    );
    assert_requests(&received);
    for turn in live.iter().filter(|s| is_turn(s)) {
        assert!(attribute(turn, "gen_ai.provider.name").is_some(), "{turn}");
        assert!(attribute(turn, "gen_ai.system").is_none(), "{turn}");
        assert_eq!(
            attribute(turn, "gen_ai.response.model").map(|v| &v["stringValue"]),
            Some(&Value::from("mock@v1")),
            "{turn}"
        );
    }
    // Live and file export agree span for span.
    let exported = exported_spans(&scratch, &session);
    assert_same_spans(&live, &exported);

    let counts = parse_with_the_protobuf_definitions(&received);
    assert_eq!(counts.len(), received.len());
    assert_eq!(counts.iter().sum::<usize>(), live.len());
}

#[test]
fn a_collector_that_is_down_changes_nothing_but_the_count_of_spans_not_sent() {
    let scratch = Scratch::new();
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let run = scratch
        .command(&["run"])
        .arg(scratch.pipeline())
        .arg("a dodger with a combo meter")
        .args(["--adapter", "mock", "--otlp-endpoint"])
        .arg(format!("http://127.0.0.1:{port}"))
        .timeout(Duration::from_secs(120))
        .run()
        .expect_code(0);
    assert!(
        run.stdout
            .contains("ended    verdict_pass (outcome pass, exit 0)"),
        "{}",
        run.stdout
    );
    let session = session_of(&scratch.home()).expect("the session");
    let exported = exported_spans(&scratch, &session);
    let total = exported.len();
    assert!(total > 3, "{total}");
    let line = format!(
        "otlp     0 spans sent to http://127.0.0.1:{port}/v1/traces, {total} could not be sent"
    );
    assert!(
        run.stdout.contains(&line),
        "no `{line}` in:\n{}",
        run.stdout
    );
}

#[test]
fn a_bad_otlp_endpoint_is_a_usage_error_before_anything_runs() {
    let scratch = Scratch::new();
    let run = scratch
        .command(&["run"])
        .arg(scratch.pipeline())
        .arg("a dodger")
        .args([
            "--adapter",
            "mock",
            "--otlp-endpoint",
            "https://collector:4318",
        ])
        .run()
        .expect_code(2);
    assert!(
        run.stderr.contains("https is not supported"),
        "{}",
        run.stderr
    );
    assert!(session_of(&scratch.home()).is_none());
}

/// A drive that stops while the session waits for a person sends what closed so far; the
/// `crumb resume` that ends it sends the rest (the wait and the session span), each span once.
#[test]
fn a_resume_sends_the_spans_the_first_drive_could_not_and_none_twice() {
    let scratch = Scratch::new();
    let collector = Collector::start(scratch.home());
    let endpoint = format!("http://127.0.0.1:{}", collector.port);
    let first = scratch
        .command(&["run"])
        .arg(scratch.pipeline())
        .arg("a dodger with a combo meter")
        .args(["--adapter", "mock", "--json", "--mock-scenario", "partial"])
        .args(["--otlp-endpoint", &endpoint])
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "30000")
        .run()
        .expect_code(10);
    let first: Value = serde_json::from_str(&first.stdout).expect("the --json summary");
    let sent_first = first["otlp"]["sent"].as_u64().expect("a count");
    assert!(sent_first > 0, "{}", first["otlp"]);
    assert_eq!(first["otlp"]["not_sent"], 0);
    let session = session_of(&scratch.home()).expect("the session");
    scratch
        .command(&["say"])
        .arg(&session)
        .arg("/approve")
        .run()
        .expect_code(0);
    let second = scratch
        .command(&["resume", "--json", "--otlp-endpoint", &endpoint])
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "30000")
        .arg(&session)
        .run()
        .expect_code(0);
    let second: Value = serde_json::from_str(&second.stdout).expect("the --json summary");
    let live: Vec<Value> = collector
        .received()
        .iter()
        .flat_map(|r| spans(&body(r)))
        .collect();
    assert_eq!(
        second["otlp"]["sent"].as_u64().map(|n| n + sent_first),
        Some(live.len() as u64)
    );
    let ids = |spans: &[Value]| -> Vec<String> {
        let mut ids: Vec<String> = spans.iter().map(|s| s["spanId"].to_string()).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&live), ids(&exported_spans(&scratch, &session)));
}

/// A collector that takes connections and never answers: each request gives up at its timeout,
/// the run ends as it would without one, and the summary says why the spans were not sent.
#[test]
fn a_collector_that_never_answers_costs_the_run_nothing_but_its_spans() {
    let scratch = Scratch::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || {
        // Hold every connection open, unread and unanswered.
        let held: Vec<std::net::TcpStream> = listener.incoming().flatten().collect();
        drop(held);
    });
    let run = scratch
        .command(&["run"])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        )
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "200")
        .arg(scratch.pipeline())
        .arg("a dodger with a combo meter")
        .args(["--adapter", "mock", "--json"])
        .timeout(Duration::from_secs(120))
        .run()
        .expect_code(0);
    let summary: Value = serde_json::from_str(&run.stdout).expect("the --json summary");
    assert_eq!(summary["outcome"], "pass");
    let otlp = &summary["otlp"];
    assert_eq!(otlp["sent"], 0, "{otlp}");
    assert!(otlp["not_sent"].as_u64().is_some_and(|n| n > 0), "{otlp}");
    assert_eq!(
        otlp["last_error"], "the collector did not answer in time",
        "{otlp}"
    );
}
