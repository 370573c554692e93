//! `crumb export`: each format checked against its format — the OTLP protobuf-JSON shape and
//! the `GenAI` conventions, the Chrome trace-event shape, Markdown a pull request can hold, and a
//! self-contained HTML report opened in real headless Chromium with no request made.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::run::Scratch;
use crate::support::repo_root;

/// A pitch that tries to break every format it lands in.
const NASTY: &str =
    "a dodger | with </td><script>window.pwned=1</script> & `ticks` <img src=x onerror=alert(1)>";

/// A finished fail-once session (two builds, two verdicts) and its folder.
pub(crate) fn fail_once_session(scratch: &Scratch, pipeline: &Path, pitch: &str) -> PathBuf {
    scratch
        .command(&["run"])
        .arg(pipeline)
        .arg(pitch)
        .args([
            "--adapter",
            "mock",
            "--json",
            "--mock-scenario",
            "fail-once",
        ])
        .timeout(Duration::from_secs(120))
        .run()
        .expect_code(0);
    let projects = scratch.home().join("projects");
    let project = std::fs::read_dir(projects)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    std::fs::read_dir(project.path().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .unwrap()
}

fn export(scratch: &Scratch, session: &Path, format: &str) -> String {
    scratch
        .command(&["export"])
        .arg(session)
        .args(["--format", format])
        .run()
        .expect_code(0)
        .stdout
}

fn schema(name: &str) -> jsonschema::Validator {
    let path = repo_root().join("tests/fixtures/export").join(name);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn errors(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

#[test]
fn otlp_json_has_the_protobuf_json_shape_and_the_genai_attributes() {
    let scratch = Scratch::new();
    let session = fail_once_session(&scratch, &scratch.pipeline(), NASTY);
    let request: Value = serde_json::from_str(&export(&scratch, &session, "otlp-json")).unwrap();
    let validator = schema("otlp-trace.schema.json");
    let found = errors(&validator, &request);
    assert!(found.is_empty(), "{found:#?}");
    let spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    let ids: BTreeSet<&str> = spans
        .iter()
        .map(|s| s["spanId"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
    let traces: BTreeSet<&str> = spans
        .iter()
        .map(|s| s["traceId"].as_str().unwrap())
        .collect();
    assert_eq!(traces.len(), 1, "one trace per session");
    let roots: Vec<&Value> = spans
        .iter()
        .filter(|s| s.get("parentSpanId").is_none())
        .collect();
    assert_eq!(roots.len(), 1, "one session span");
    for span in spans.iter().filter(|s| s.get("parentSpanId").is_some()) {
        assert!(
            ids.contains(span["parentSpanId"].as_str().unwrap()),
            "{span}"
        );
    }
    let turns: Vec<&Value> = spans
        .iter()
        .filter(|s| {
            attribute(s, "gen_ai.operation.name")
                .is_some_and(|v| v["stringValue"] == "invoke_agent")
        })
        .collect();
    assert_eq!(
        turns.len(),
        5,
        "planner, builder, verifier, builder, verifier"
    );
    for turn in turns {
        assert_eq!(turn["parentSpanId"], roots[0]["spanId"]);
        for key in ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"] {
            let value = attribute(turn, key).unwrap_or_else(|| panic!("{key} in {turn}"));
            assert!(value["intValue"].as_str().unwrap().parse::<u64>().unwrap() > 0);
        }
        // The current GenAI conventions: the provider by its new name, the model the CLI
        // reported as the response's, and the request's only when the binding named one (the
        // mock's binding names none).
        assert_eq!(
            attribute(turn, "gen_ai.response.model").unwrap()["stringValue"],
            "mock@v1"
        );
        assert!(attribute(turn, "gen_ai.request.model").is_none(), "{turn}");
        assert!(attribute(turn, "gen_ai.provider.name").is_some(), "{turn}");
        assert!(attribute(turn, "gen_ai.system").is_none(), "{turn}");
        let (start, end) = (&turn["startTimeUnixNano"], &turn["endTimeUnixNano"]);
        assert!(
            start.as_str().unwrap().parse::<u128>().unwrap()
                <= end.as_str().unwrap().parse::<u128>().unwrap()
        );
    }
    // The schema is not a rubber stamp.
    let mut bad = request.clone();
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "ABC".into();
    assert!(!validator.is_valid(&bad));
    let mut bad = request;
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"] = 5.into();
    assert!(!validator.is_valid(&bad));
}

#[test]
fn chrome_trace_has_one_track_per_role_and_a_span_per_turn() {
    let scratch = Scratch::new();
    let session = fail_once_session(&scratch, &scratch.pipeline(), NASTY);
    let trace: Value = serde_json::from_str(&export(&scratch, &session, "chrome-trace")).unwrap();
    let validator = schema("chrome-trace.schema.json");
    let found = errors(&validator, &trace);
    assert!(found.is_empty(), "{found:#?}");
    let events = trace["traceEvents"].as_array().unwrap();
    let tracks: BTreeSet<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tracks,
        BTreeSet::from(["builder", "planner-lead", "qa", "verifier"])
    );
    let turns = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "turn")
        .count();
    assert_eq!(turns, 5);
    assert_eq!(
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == "qa")
            .count(),
        2
    );
    let mut bad = trace;
    bad["traceEvents"][1]["ph"] = "Q".into();
    assert!(!validator.is_valid(&bad));
}

#[test]
fn markdown_is_a_pull_request_summary_whose_tables_hold() {
    let scratch = Scratch::new();
    let session = fail_once_session(&scratch, &scratch.pipeline(), NASTY);
    let md = export(&scratch, &session, "md");
    assert!(md.starts_with("# crumb session "), "{md}");
    assert!(md.contains("- **outcome**: PASS"), "{md}");
    assert!(
        !md.contains("<script>"),
        "markup from the session is escaped:\n{md}"
    );
    // Every row of the timeline table has as many cells as its header.
    let timeline: Vec<&str> = md
        .split("## Timeline")
        .nth(1)
        .unwrap()
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    let cells = |line: &str| line.replace("\\|", "").matches('|').count();
    assert!(timeline.len() >= 2 + 7, "{md}");
    assert!(
        timeline.iter().all(|l| cells(l) == cells(timeline[0])),
        "{md}"
    );
}

#[test]
fn html_report_is_self_contained_escaped_and_inlines_the_qa_screenshot_in_chromium() {
    let exe = crate::support::chromium();
    let scratch = Scratch::new();
    let pipeline = scratch.dir.path().join("pipelines/casual.yaml");
    std::fs::copy(repo_root().join("pipelines/casual.yaml"), &pipeline).unwrap();
    let session = fail_once_session(&scratch, &pipeline, NASTY);
    let file = scratch.dir.path().join("report.html");
    scratch
        .command(&["export"])
        .arg(&session)
        .args(["--format", "html", "--output"])
        .arg(&file)
        .run()
        .expect_code(0);
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(!html.contains("<script"), "no script at all");
    assert!(
        html.contains("data:image/png;base64,"),
        "the screenshot is inlined"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        use chromiumoxide::cdp::browser_protocol::network::{
            EventLoadingFailed, EventRequestWillBeSent,
        };
        use futures::StreamExt;
        let chromium = crumb::qa::browser::launch::Chromium::launch(&exe)
            .await
            .expect("launch Chromium");
        let page = chromium
            .browser
            .new_page("about:blank")
            .await
            .expect("page");
        let mut requests = page
            .event_listener::<EventRequestWillBeSent>()
            .await
            .unwrap();
        let mut failures = page.event_listener::<EventLoadingFailed>().await.unwrap();
        page.goto(format!("file://{}", file.display()))
            .await
            .expect("open the report");
        page.wait_for_navigation().await.expect("loaded");
        let probe = "JSON.stringify({scripts: document.scripts.length, pwned: window.pwned === 1, \
            images: [...document.images].map(i => i.complete && i.naturalWidth > 0), \
            text: document.body.innerText})";
        let state: Value = serde_json::from_str(
            &page
                .evaluate(probe)
                .await
                .unwrap()
                .into_value::<String>()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(state["scripts"], 0);
        assert_eq!(state["pwned"], false);
        let images = state["images"].as_array().unwrap();
        assert!(
            !images.is_empty() && images.iter().all(|i| i == true),
            "{state}"
        );
        let text = state["text"].as_str().unwrap();
        assert!(
            text.contains("<script>window.pwned=1</script>"),
            "the pitch shows as text"
        );
        assert!(text.contains("PASS") && text.contains("Scorecard") && text.contains("Prompts"));
        let mut urls = Vec::new();
        while let Some(Some(event)) = futures::FutureExt::now_or_never(requests.next()) {
            urls.push(event.request.url.clone());
        }
        assert!(
            urls.iter()
                .all(|u| u.starts_with("file://") || u.starts_with("data:")),
            "the report fetched nothing: {urls:?}"
        );
        let failed = futures::FutureExt::now_or_never(failures.next()).flatten();
        assert!(failed.is_none(), "a request failed: {failed:?}");
        drop(chromium);
    });
}
