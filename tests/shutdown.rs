//! A coordinator shut down in-process through its shutdown future (the CLI passes Ctrl-C/SIGTERM;
//! here it is a channel): the drive ends interrupted, records no outcome for the work it cut short,
//! and leaves no child process running.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crumb::home::{CrumbHome, Project};
use crumb::runtime::coordinator::{self, Options, Quiet, Session};
use crumb::runtime::run_config::{Ending, RunConfig};
use crumb::runtime::session;
use crumb::transcript::writer::Writer;
use crumb::transcript::{Draft, Kind};

/// `goal` runs QA at once; its one check records its pid and hangs.
const PIPELINE: &str = r#"version: 1
name: hang
roles:
  writer:
    template: writer.md.j2
    produces: [build]
qa:
  timeout: 60s
  checks:
    - id: hang
      kind: command
      argv: [sh, -c, 'echo $$ > "PID_FILE.tmp" && mv "PID_FILE.tmp" "PID_FILE" && exec sleep 60']
routes:
  - { on: goal, run: qa }
  - { on: build, run: qa }
  - { on: qa.result, done: { outcome: pass, reason: checked } }
limits:
  max_respec: 0
  max_verify: 1
  tokens: { warn: 1000, hard: 2000 }
  wall_clock: { warn: 5m, hard: 10m }
  stuck_after_errors: 3
  circuit: { open_after: 2, then: stop }
"#;

/// Whether process `pid` is gone (or a zombie waiting to be reaped).
fn is_dead(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn kinds(transcript: &Path) -> Vec<String> {
    std::fs::read_to_string(transcript)
        .expect("transcript")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| e["kind"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_coordinator_shut_down_mid_qa_stops_its_child_and_records_no_outcome() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let pipelines = tmp.path().join("pipelines");
    std::fs::create_dir_all(&pipelines).expect("mkdir");
    let pid_file = tmp.path().join("qa.pid");
    let pipeline = PIPELINE.replace("PID_FILE", &pid_file.display().to_string());
    std::fs::write(pipelines.join("hang.yaml"), pipeline).expect("pipeline");
    std::fs::write(pipelines.join("writer.md.j2"), "Write about {{ goal }}.").expect("template");
    let home = CrumbHome::at(tmp.path().join("home"));
    let project = Project::containing(tmp.path()).expect("project");
    let created =
        session::create(&home, &project, &pipelines.join("hang.yaml"), "hang").expect("session");
    let table = created.dir.table().expect("table");
    let config = RunConfig {
        pipeline: table.name.clone(),
        pipeline_hash: created.frozen.hash.clone(),
        pipeline_file: created.frozen.pipeline_file.clone(),
        bindings: indexmap::IndexMap::new(),
        limits: table.limits.clone(),
        mock_scenario: None,
        idle_timeout_ms: None,
        wall_timeout_ms: None,
        inputs: indexmap::IndexMap::new(),
        prices: None,
    };
    let mut writer = Writer::open(created.dir.transcript(), created.dir.id()).expect("writer");
    let Ok(Value::Object(data)) = serde_json::to_value(&config) else {
        panic!("the run configuration is an object");
    };
    writer
        .append(Draft::new("system", Kind::SessionStart).data(data))
        .expect("session.start");
    writer
        .append(Draft::new("user", Kind::Goal).body("hang"))
        .expect("goal");
    drop(writer);
    let session = Session {
        dir: created.dir.clone(),
        table: Arc::new(table),
        config: Arc::new(config),
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut observer = Quiet;
    let pid_path = pid_file.clone();
    let (outcome, pid) = runtime.block_on(async move {
        let drive = coordinator::drive(session, Options::default(), &mut observer, async {
            let _ = stopped.await;
        });
        let trigger = async move {
            let deadline = Instant::now() + Duration::from_secs(30);
            let pid = loop {
                if let Ok(pid) = std::fs::read_to_string(&pid_path) {
                    break pid.trim().to_owned();
                }
                assert!(Instant::now() < deadline, "the QA check never started");
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            stop.send(()).expect("the coordinator listens");
            pid
        };
        tokio::join!(drive, trigger)
    });
    let outcome = outcome.expect("drive");
    assert_eq!(outcome.ending, Ending::Interrupted);
    let kinds = kinds(&created.dir.transcript());
    assert!(
        !kinds.iter().any(|k| k == "qa.result" || k == "done"),
        "the cut-short QA run has no outcome and an interruption is no ending: {kinds:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !is_dead(&pid) {
        assert!(
            Instant::now() < deadline,
            "the QA child {pid} survived the shutdown"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Only now: dropping the runtime would kill what its tasks still hold.
    drop(runtime);
    drop(created.lock);
}
