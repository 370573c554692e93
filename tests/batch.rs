//! `crumb batch` end to end: many mock sessions through child `crumb run` processes, a SIGKILL
//! mid-batch and its exact resume, the summary in its three forms, the Kubernetes manifests
//! against the API's schema, and `--collect` over sessions written by separate processes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::run::Scratch;
use crate::support::eventually;

fn pitches(n: usize) -> String {
    (0..n)
        .map(|i| format!("pitch number {i}: a tiny dodger"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn write_pitches(scratch: &Scratch, text: &str) -> PathBuf {
    let path = scratch.dir.path().join("pitches.txt");
    std::fs::write(&path, text).unwrap();
    path
}

fn batch(scratch: &Scratch, pitches: &Path, extra: &[&str]) -> crate::support::Crumb {
    scratch
        .command(&["batch"])
        .arg(scratch.pipeline())
        .arg(pitches)
        .args(["--adapter", "mock", "--mock-scenario", "pass"])
        .args(extra)
}

fn rows(stdout: &str) -> Vec<Value> {
    serde_json::from_str::<Value>(stdout)
        .unwrap_or_else(|e| panic!("--json is not JSON ({e}): {stdout}"))
        .as_array()
        .unwrap()
        .clone()
}

/// Every session folder under `home`.
fn sessions(home: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for project in std::fs::read_dir(home.join("projects")).unwrap() {
        for session in std::fs::read_dir(project.unwrap().path().join("sessions")).unwrap() {
            let path = session.unwrap().path();
            if !path.file_name().unwrap().to_string_lossy().starts_with('.') {
                found.push(path);
            }
        }
    }
    found
}

/// The pitch records of the only batch of `home`.
fn records(home: &Path) -> Vec<Value> {
    let Ok(batches) = std::fs::read_dir(home.join("batches")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for batch in batches {
        let Ok(entries) = std::fs::read_dir(batch.unwrap().path().join("pitches")) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json")
                && let Ok(value) = serde_json::from_slice(&std::fs::read(&path).unwrap())
            {
                out.push(value);
            }
        }
    }
    out
}

#[test]
fn twenty_pitches_four_at_a_time_resume_exactly_after_a_sigkill() {
    let scratch = Scratch::new();
    let file = write_pitches(&scratch, &pitches(20));
    let running = batch(&scratch, &file, &["--jobs", "4", "--json"])
        .env("CRUMB_MOCK_DELAY_MS", "150")
        .timeout(Duration::from_secs(300))
        .spawn();
    // Kill the batch (alone, as a crash would) once some sessions ended and others run.
    let ended_before = eventually("five pitches ended", Duration::from_secs(240), || {
        let ended: Vec<Value> = records(&scratch.home())
            .into_iter()
            .filter(|r| r["exit_code"].is_u64())
            .collect();
        (ended.len() >= 5).then_some(ended)
    });
    running.kill();
    // What was running when the batch died: its `crumb run`s are left behind, as after a crash.
    let in_flight: Vec<Value> = records(&scratch.home())
        .into_iter()
        .filter(|r| r["pid"].is_u64() && !r["exit_code"].is_u64())
        .collect();
    assert!(!in_flight.is_empty(), "the kill landed mid-batch");
    assert!(ended_before.len() < 20, "the kill landed mid-batch");
    let run = batch(&scratch, &file, &["--jobs", "4", "--json"])
        .timeout(Duration::from_secs(300))
        .run()
        .expect_code(0);
    let rows = rows(&run.stdout);
    assert_eq!(rows.len(), 20);
    assert!(rows.iter().all(|r| r["outcome"] == "pass"), "{rows:#?}");
    let ids: BTreeSet<&str> = rows
        .iter()
        .map(|r| r["session"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 20, "each pitch its own session");
    assert_eq!(
        sessions(&scratch.home()).len(),
        20,
        "no pitch was run twice: exactly one session folder per pitch"
    );
    for record in &ended_before {
        let id = record["session"].as_str().unwrap();
        assert!(
            ids.contains(id),
            "a session ended before the kill is kept: {id}"
        );
    }
    for record in in_flight.iter().filter(|r| r["session"].is_string()) {
        let id = record["session"].as_str().unwrap();
        assert!(
            ids.contains(id),
            "a session running at the kill is resumed, not redone: {id}"
        );
    }
    for row in &rows {
        assert!(row["turns"].as_u64().unwrap() >= 3, "{row}");
        assert!(row["score"].as_f64().unwrap() >= 24.0, "{row}");
    }
    // Running the finished batch again runs nothing and prints the same summary.
    let again = batch(&scratch, &file, &["--json"]).run().expect_code(0);
    assert_eq!(rows, self::rows(&again.stdout));
    assert_eq!(sessions(&scratch.home()).len(), 20);
}

/// The fields a summary row has whatever machine ran it (the session id and wall time differ).
fn comparable(rows: &[Value]) -> Vec<Value> {
    rows.iter()
        .map(|r| {
            let mut r = r.clone();
            let object = r.as_object_mut().unwrap();
            object.remove("session");
            object.remove("wall_ms");
            // What the pods did is `--collect`'s alone (a local batch has no pods).
            object.remove("pods");
            r
        })
        .collect()
}

#[test]
fn collect_over_separate_processes_matches_a_local_batch_and_csv_says_the_same() {
    let scratch = Scratch::new();
    let file = write_pitches(&scratch, "a dodger\n- not yaml, a pitch\na tapper\n");
    let local = batch(&scratch, &file, &["--jobs", "2", "--json"])
        .run()
        .expect_code(0);
    let local = rows(&local.stdout);
    assert_eq!(local.len(), 3);
    // Like the pods of the Indexed Job: one process per pitch, into another (shared) home.
    let shared = scratch.dir.path().join("shared-home");
    for index in 0..3 {
        batch(&scratch, &file, &["--index", &index.to_string(), "--json"])
            .env("CRUMB_HOME", &shared)
            .run()
            .expect_code(0);
    }
    let collected = scratch
        .command(&["batch", "--json", "--collect"])
        .arg(&shared)
        .arg(scratch.pipeline())
        .arg(&file)
        .run()
        .expect_code(0);
    assert_eq!(comparable(&local), comparable(&rows(&collected.stdout)));
    // With only the home, the batch recorded there names the pitches.
    let alone = scratch
        .command(&["batch", "--json", "--collect"])
        .arg(&shared)
        .run()
        .expect_code(0);
    assert_eq!(comparable(&local), comparable(&rows(&alone.stdout)));
    let csv = scratch
        .command(&["batch", "--csv", "--collect"])
        .arg(&shared)
        .run()
        .expect_code(0);
    let mut reader = csv::Reader::from_reader(csv.stdout.as_bytes());
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), 3);
    assert_eq!(&records[1][1], "- not yaml, a pitch");
    assert_eq!(&records[1][3], "pass");
    let human = scratch
        .command(&["batch", "--collect"])
        .arg(&shared)
        .run()
        .expect_code(0);
    assert!(human.stdout.contains("3/3 passed"), "{}", human.stdout);
}

#[test]
fn a_spent_token_budget_leaves_pitches_unrun_and_exits_with_the_batch_code() {
    let scratch = Scratch::new();
    let file = write_pitches(&scratch, &pitches(3));
    let run = batch(
        &scratch,
        &file,
        &["--jobs", "1", "--json", "--max-tokens", "1"],
    )
    .run()
    .expect_code(i32::from(crumb::exit_codes::BATCH_NOT_ALL_PASSED));
    let rows = rows(&run.stdout);
    assert_eq!(rows[0]["outcome"], "pass");
    for row in &rows[1..] {
        assert_eq!(row["outcome"], "not run", "{row}");
        assert!(
            row["note"].as_str().unwrap().contains("token budget"),
            "{row}"
        );
    }
    assert_eq!(sessions(&scratch.home()).len(), 1);
}

#[test]
fn a_bad_pitches_file_is_a_located_usage_error() {
    let scratch = Scratch::new();
    let file = write_pitches(&scratch, "- a\n- pitch: b\n  bind: [builder]\n");
    let run = batch(&scratch, &file, &[]).run().expect_code(2);
    assert!(
        run.stderr
            .contains("pitches.txt:2: bind `builder` is not ROLE=ADAPTER"),
        "{}",
        run.stderr
    );
}

/// The documents of a multi-document YAML file, as JSON.
fn documents(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(text).unwrap_or_else(|e| panic!("{e}:\n{text}"))
}

fn validator(name: &str) -> jsonschema::Validator {
    let path = crate::support::repo_root()
        .join("tests/fixtures/batch")
        .join(name);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn emitted_kubernetes_manifests_are_valid_batch_v1_indexed_jobs() {
    let scratch = Scratch::new();
    let file = write_pitches(&scratch, &pitches(7));
    let run = scratch
        .command(&["batch", "pipelines/casual-static.yaml"])
        .arg(&file)
        .args(["--jobs", "3", "--adapter", "mock", "--emit", "k8s"])
        .run()
        .expect_code(0);
    let docs = documents(&run.stdout);
    assert_eq!(docs.len(), 2, "{}", run.stdout);
    let (config_map, job) = (&docs[0], &docs[1]);
    let job_schema = validator("job.batch.v1.schema.json");
    let errors: Vec<String> = job_schema.iter_errors(job).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{job:#}");
    let errors: Vec<String> = validator("configmap.v1.schema.json")
        .iter_errors(config_map)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    assert_eq!(job["spec"]["completions"], 7);
    assert_eq!(job["spec"]["parallelism"], 3);
    let args = &job["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(
        args.as_array()
            .unwrap()
            .contains(&Value::from("$(JOB_COMPLETION_INDEX)"))
    );
    // The pitches the pods read are the batch's own.
    let pitches: Vec<Value> =
        serde_saphyr::from_str(config_map["data"]["pitches.yaml"].as_str().unwrap()).unwrap();
    assert_eq!(pitches.len(), 7);
    // The schema is not a rubber stamp: a wrong completion mode or a missing template fails it.
    let mut bad = job.clone();
    bad["spec"]["completionMode"] = "Sideways".into();
    assert!(!job_schema.is_valid(&bad));
    let mut bad = job.clone();
    bad["spec"].as_object_mut().unwrap().remove("template");
    assert!(!job_schema.is_valid(&bad));
}

/// The emitted Job of `extra` flags, checked against the schema.
fn emitted_job(scratch: &Scratch, extra: &[&str]) -> Value {
    let file = write_pitches(scratch, &pitches(3));
    let run = scratch
        .command(&["batch", "pipelines/casual-static.yaml"])
        .arg(&file)
        .args(["--adapter", "mock", "--emit", "k8s"])
        .args(extra)
        .run()
        .expect_code(0);
    let job = documents(&run.stdout).remove(1);
    let errors: Vec<String> = validator("job.batch.v1.schema.json")
        .iter_errors(&job)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{job:#}");
    job
}

#[test]
fn the_job_retries_each_pitch_on_its_own_and_fails_only_what_retrying_cannot_fix() {
    let scratch = Scratch::new();
    let job = emitted_job(&scratch, &["--retries-per-index", "4"]);
    let spec = &job["spec"];
    assert_eq!(spec["backoffLimitPerIndex"], 4);
    assert_eq!(
        spec["maxFailedIndexes"], 3,
        "one failing pitch never stops the others"
    );
    assert!(
        spec.get("backoffLimit").is_none(),
        "no budget shared by every pitch"
    );
    let rules = spec["podFailurePolicy"]["rules"].as_array().unwrap();
    assert_eq!(rules[0]["action"], "Ignore");
    assert_eq!(rules[0]["onPodConditions"][0]["type"], "DisruptionTarget");
    assert_eq!(rules[1]["action"], "FailIndex");
    assert_eq!(rules[1]["onExitCodes"]["values"], serde_json::json!([2, 3]));
    assert!(spec.get("activeDeadlineSeconds").is_none());
}

#[test]
fn the_pods_are_hardened_bounded_and_take_keys_from_a_secret() {
    let scratch = Scratch::new();
    let job = emitted_job(
        &scratch,
        &[
            "--secret",
            "agent-keys",
            "--cpu",
            "500m",
            "--memory",
            "3Gi",
            "--max-wall",
            "90m",
        ],
    );
    assert_eq!(job["spec"]["activeDeadlineSeconds"], 5400);
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let container = &pod["containers"][0];
    let security = &container["securityContext"];
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]));
    for bound in ["requests", "limits"] {
        assert_eq!(container["resources"][bound]["cpu"], "500m");
        assert_eq!(container["resources"][bound]["memory"], "3Gi");
    }
    assert_eq!(container["envFrom"][0]["secretRef"]["name"], "agent-keys");
    // With a read-only root, what Chromium and crumb write goes to the memory-backed mounts.
    let mounts: Vec<&str> = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["mountPath"].as_str())
        .collect();
    assert!(
        mounts.contains(&"/tmp") && mounts.contains(&"/dev/shm"),
        "{mounts:?}"
    );
    let text = serde_json::to_string(&job).unwrap();
    assert!(!text.contains("API_KEY"), "no key in the manifest");
    // Without --secret, no envFrom at all.
    let plain = emitted_job(&scratch, &[]);
    assert!(
        plain["spec"]["template"]["spec"]["containers"][0]
            .get("envFrom")
            .is_none()
    );
}

#[test]
fn a_shared_token_budget_is_refused_for_kubernetes_with_the_reason() {
    let scratch = Scratch::new();
    let file = write_pitches(&scratch, &pitches(2));
    let run = scratch
        .command(&["batch", "pipelines/casual-static.yaml"])
        .arg(&file)
        .args(["--adapter", "mock", "--emit", "k8s", "--max-tokens", "1000"])
        .run()
        .expect_code(2);
    assert!(
        run.stderr.contains("--max-tokens cannot be carried"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.is_empty(),
        "no manifest half-written: {}",
        run.stdout
    );
}

#[test]
fn a_pod_whose_session_ended_did_not_fail_whatever_the_outcome() {
    let scratch = Scratch::new();
    let file = write_pitches(&scratch, &pitches(1));
    let shared = scratch.dir.path().join("shared-home");
    let run = scratch
        .command(&["batch"])
        .arg(scratch.pipeline())
        .arg(&file)
        .args(["--adapter", "mock", "--mock-scenario", "crash-always"])
        .args(["--index", "0", "--json"])
        .env("CRUMB_HOME", &shared)
        .run()
        .expect_code(0);
    let row = &rows(&run.stdout)[0];
    assert_ne!(row["outcome"], "pass", "{row}");
    assert_ne!(row["outcome"], "not run", "{row}");
    // The outcome is the home's business: collecting reports it and says not all passed.
    scratch
        .command(&["batch", "--json", "--collect"])
        .arg(&shared)
        .arg(scratch.pipeline())
        .arg(&file)
        .run()
        .expect_code(24);
}

/// The image the manifests reference runs as the user they declare, and holds what it copies.
#[test]
fn the_containerfile_runs_as_the_manifests_user_and_copies_what_exists() {
    let root = crate::support::repo_root();
    let recipe = std::fs::read_to_string(root.join("Containerfile")).unwrap();
    let scratch = Scratch::new();
    let job = emitted_job(&scratch, &[]);
    let uid = job["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
        .as_u64()
        .unwrap();
    assert!(
        recipe.contains(&format!("--uid {uid} ")),
        "useradd --uid {uid}"
    );
    assert!(recipe.contains(&format!("USER {uid}:{uid}")));
    assert!(recipe.contains("VOLUME /crumb-home"));
    let copied: Vec<&str> = recipe
        .lines()
        .filter_map(|line| line.strip_prefix("COPY "))
        .filter(|args| !args.starts_with("--from"))
        .filter_map(|args| args.split_whitespace().next())
        .filter(|source| *source != ".")
        .collect();
    assert!(copied.len() >= 4, "{copied:?}");
    for source in copied {
        assert!(
            root.join(source).exists(),
            "the Containerfile copies {source}, which is not in the tree"
        );
    }
    let ignored = std::fs::read_to_string(root.join(".containerignore")).unwrap();
    assert!(
        ignored.lines().any(|l| l == "target/"),
        "the build context leaves out target/"
    );
}

/// The README's Kubernetes recipe, command by command, from a copy of the repository's project:
/// each `crumb` line runs as written and writes manifests the API schema accepts, each file it
/// applies exists and fits the manifests, and `make image` is a target.
#[test]
fn the_readmes_kubernetes_recipe_works_as_written() {
    let root = crate::support::repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = readme
        .split("## Many pitches, past one machine")
        .nth(1)
        .expect("the README's Kubernetes section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("its commands");
    let project = tempfile::tempdir().unwrap();
    for folder in ["pipelines", "templates", "presets"] {
        crate::support::copy_dir(&root.join(folder), &project.path().join(folder));
    }
    let makefile = std::fs::read_to_string(root.join("Makefile")).unwrap();
    let mut claim = None;
    let mut ran = Vec::new();
    for line in block.lines() {
        let command = line.split(" | kubectl").next().unwrap().trim();
        if command.starts_with("cargo install --locked --path .") {
            assert!(
                root.join("Cargo.lock").exists(),
                "crumb installs from the checkout"
            );
        } else if command.starts_with("make image") {
            assert!(makefile.lines().any(|l| l == "image:"), "make image");
        } else if let Some(file) = command.strip_prefix("kubectl apply -f examples/") {
            let file = file.split_whitespace().next().unwrap();
            let text = std::fs::read_to_string(root.join("examples").join(file)).unwrap();
            let pvc: Value = serde_saphyr::from_str(&text).unwrap();
            assert_eq!(pvc["kind"], "PersistentVolumeClaim");
            assert_eq!(
                pvc["spec"]["accessModes"],
                serde_json::json!(["ReadWriteMany"])
            );
            claim = Some(pvc["metadata"]["name"].clone());
        } else if command.starts_with("printf ") {
            crate::support::Crumb::shell(command)
                .current_dir(project.path())
                .run()
                .expect_code(0);
        } else if let Some(args) = command.strip_prefix("crumb ") {
            let args = shell_words::split(&args.replace("$REGISTRY", "registry.example")).unwrap();
            let run = crate::support::crumb()
                .current_dir(project.path())
                .args(&args)
                .run()
                .expect_code(0);
            ran.push((args, documents(&run.stdout)));
        }
    }
    let [(_, job_docs), (_, collect_docs)] = ran.as_slice() else {
        panic!("the recipe emits the Job, then the collect pod: {ran:?}");
    };
    let job_schema = validator("job.batch.v1.schema.json");
    let job = &job_docs[1];
    let errors: Vec<String> = job_schema.iter_errors(job).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let pod_spec = &job["spec"]["template"]["spec"];
    assert_eq!(
        Some(&pod_spec["volumes"][0]["persistentVolumeClaim"]["claimName"]),
        claim.as_ref()
    );
    assert_eq!(
        pod_spec["containers"][0]["envFrom"][0]["secretRef"]["name"],
        "agent-keys"
    );
    assert_eq!(
        pod_spec["containers"][0]["image"],
        "registry.example/crumb:1"
    );
    // The collect pod: a pod spec as the Job's template holds one, on the same volume and pitches.
    let pod = &collect_docs[0];
    assert_eq!(
        (&pod["apiVersion"], &pod["kind"]),
        (&"v1".into(), &"Pod".into())
    );
    let mut as_job = job.clone();
    as_job["spec"]["template"]["spec"] = pod["spec"].clone();
    let errors: Vec<String> = job_schema
        .iter_errors(&as_job)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(pod["spec"]["volumes"], pod_spec["volumes"]);
    assert_eq!(
        pod["metadata"]["labels"]["app.kubernetes.io/component"],
        "collect"
    );
    assert!(block.contains("-l app.kubernetes.io/component=collect"));
    let args = pod["spec"]["containers"][0]["args"].as_array().unwrap();
    assert!(args.contains(&Value::from("--collect")), "{args:?}");
    assert!(
        args.contains(&Value::from("/batch/pitches.yaml")),
        "{args:?}"
    );
}

/// A pod whose pipeline does not compile exits 3 (the Job's `FailIndex` code), and its attempt
/// is on record before the pipeline is read, so `--collect` says the index failed and why.
#[test]
fn a_pod_of_an_invalid_pipeline_exits_3_and_collect_says_the_index_failed() {
    let scratch = Scratch::new();
    let file = write_pitches(&scratch, &pitches(2));
    let broken = scratch.dir.path().join("pipelines/broken.yaml");
    std::fs::write(&broken, "name: broken\nroles: 7\n").unwrap();
    let shared = scratch.dir.path().join("shared-home");
    scratch
        .command(&["batch"])
        .arg(&broken)
        .arg(&file)
        .args(["--adapter", "mock", "--index", "1"])
        .env("CRUMB_HOME", &shared)
        .run()
        .expect_code(3);
    let collected = scratch
        .command(&["batch", "--json", "--collect"])
        .arg(&shared)
        .run()
        .expect_code(24);
    let rows = rows(&collected.stdout);
    assert_eq!(rows[0]["pods"]["state"], "never started", "{rows:#?}");
    assert_eq!(
        rows[1]["pods"],
        serde_json::json!({ "state": "failed", "attempts": 1, "exit_code": 3 })
    );
}
