//! The Kubernetes Job controller, played over the Job `crumb batch --emit k8s` writes: pods are
//! real `crumb` processes sharing one home, started and judged by the rules the Kubernetes
//! documentation gives, then `crumb batch --collect` is checked against what the simulation did.
//!
//! The rules played (kubernetes.io/docs/concepts/workloads/controllers/job/, sections "Backoff
//! limit per index" and "Pod failure policy"; the `batch/v1` `PodFailurePolicyRule` API
//! reference; the Kubernetes v1.33 blog "Job's Backoff Limit Per Index Goes GA"):
//! - An Indexed Job runs `completions` indexes, at most `parallelism` pods at once; each pod gets
//!   its index in the `batch.kubernetes.io/job-completion-index` annotation, which the emitted
//!   container reads into `JOB_COMPLETION_INDEX`; the kubelet expands `$(VAR)` in `args` from the
//!   container's environment. A pod (`restartPolicy: Never`) whose container exits 0 completes
//!   its index.
//! - A failed pod is matched against `podFailurePolicy.rules` in order, the first match wins:
//!   `Ignore` — "the counter towards the .backoffLimit is not incremented and a replacement pod is
//!   created" (a pod with the `DisruptionTarget` condition: evicted, preempted, its node drained);
//!   `FailIndex` — "the pod's index is marked as Failed and will not be restarted"; `FailJob`;
//!   `Count` (also when no rule matches) — the failure counts.
//! - With `backoffLimitPerIndex`, failures are counted per index; "when the per-index backoff limit
//!   is exceeded for an index, Kubernetes considers the index as failed" (`.status.failedIndexes`),
//!   and the other indexes still run; once the number of failed indexes exceeds
//!   `maxFailedIndexes`, the Job fails and its running pods are terminated; no new pod starts.
//! - A container killed by SIGKILL (out of memory, a lost node) exits 137 (128 + 9).
//!
//! A pod dies as a container does: every process carrying the pod's marker variable is
//! killed with SIGKILL (the agents crumb started included), not only the pod's first process.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::run::Scratch;
use crate::support::{Crumb, Running};

/// The container's exit code when it was killed with SIGKILL.
const KILLED: i32 = 137;

/// What the simulation does to the pods of an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Left alone.
    Alone,
    /// Its first pod is evicted mid-run (the pod gets `DisruptionTarget`).
    DisruptedOnce,
    /// Its first pod is killed mid-run (out of memory: no condition, exit 137).
    KilledOnce,
    /// Every pod of it is killed mid-run.
    KilledAlways,
}

/// One pod the simulation started.
struct Pod {
    index: usize,
    /// The marker every process of the pod carries.
    marker: String,
    running: Running,
    /// The pid of the pitch record's child when the pod started (a resumed pitch names the
    /// previous pod's), so "mid-run" means this pod's own child runs.
    previous_child: Option<u64>,
    kill: Option<bool>,
}

/// How one pod ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PodEnd {
    exit_code: i32,
    disrupted: bool,
}

/// The Job's fields the controller reads.
struct Spec {
    completions: usize,
    parallelism: usize,
    backoff_limit_per_index: u32,
    max_failed_indexes: usize,
    rules: Vec<Value>,
    container: Value,
}

impl Spec {
    fn of(job: &Value) -> Spec {
        let spec = &job["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        let number = |key: &str| {
            spec[key]
                .as_u64()
                .unwrap_or_else(|| panic!("spec.{key}: {spec:#}"))
        };
        Spec {
            completions: usize::try_from(number("completions")).unwrap(),
            parallelism: usize::try_from(number("parallelism")).unwrap(),
            backoff_limit_per_index: u32::try_from(number("backoffLimitPerIndex")).unwrap(),
            max_failed_indexes: usize::try_from(number("maxFailedIndexes")).unwrap(),
            rules: spec["podFailurePolicy"]["rules"]
                .as_array()
                .unwrap()
                .clone(),
            container: spec["template"]["spec"]["containers"][0].clone(),
        }
    }

    /// The action of the first rule matching a failed pod, else `Count`.
    fn action(&self, end: PodEnd) -> String {
        let container = self.container["name"].as_str().unwrap();
        for rule in &self.rules {
            let action = rule["action"].as_str().unwrap().to_owned();
            if let Some(conditions) = rule["onPodConditions"].as_array() {
                let matched = conditions.iter().any(|c| {
                    c["type"] == "DisruptionTarget"
                        && c.get("status").is_none_or(|s| s == "True")
                        && end.disrupted
                });
                if matched {
                    return action;
                }
            }
            if let Some(codes) = rule.get("onExitCodes") {
                let named = codes["containerName"]
                    .as_str()
                    .is_none_or(|name| name == container);
                let listed = codes["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|v| v.as_i64() == Some(i64::from(end.exit_code)));
                let matched = match codes["operator"].as_str().unwrap() {
                    "In" => listed,
                    "NotIn" => !listed,
                    other => panic!("unknown operator {other}"),
                };
                if named && matched {
                    return action;
                }
            }
        }
        "Count".into()
    }
}

/// Where the pod's volumes are on this machine: the mount path of each, and the working folder.
struct Mounts {
    home: PathBuf,
    batch: PathBuf,
    tmp: PathBuf,
    project: PathBuf,
}

impl Mounts {
    /// `text` with a mount path inside the pod replaced by its folder here.
    fn map(&self, container: &Value, text: &str) -> String {
        for mount in container["volumeMounts"].as_array().unwrap() {
            let path = mount["mountPath"].as_str().unwrap();
            let here = match mount["name"].as_str().unwrap() {
                "crumb-home" => &self.home,
                "batch" => &self.batch,
                _ => &self.tmp,
            };
            if text == path || text.starts_with(&format!("{path}/")) {
                return format!("{}{}", here.display(), &text[path.len()..]);
            }
        }
        text.to_owned()
    }
}

/// Start the pod of `index` as the kubelet would: the container's environment, then its args
/// with `$(VAR)` expanded from it, in its working folder.
fn start(spec: &Spec, mounts: &Mounts, index: usize, serial: usize, path: &str) -> (Crumb, String) {
    let container = &spec.container;
    assert_eq!(container["command"], serde_json::json!(["crumb"]));
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for var in container["env"].as_array().unwrap() {
        let name = var["name"].as_str().unwrap().to_owned();
        let value = if let Some(value) = var["value"].as_str() {
            mounts.map(container, value)
        } else {
            let field = var["valueFrom"]["fieldRef"]["fieldPath"].as_str().unwrap();
            assert_eq!(
                field,
                "metadata.annotations['batch.kubernetes.io/job-completion-index']"
            );
            index.to_string()
        };
        env.insert(name, value);
    }
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| {
            let mut arg = arg.as_str().unwrap().to_owned();
            for (name, value) in &env {
                arg = arg.replace(&format!("$({name})"), value);
            }
            mounts.map(container, &arg)
        })
        .collect();
    assert_eq!(container["workingDir"], "/project");
    let marker = format!("CRUMB_SIMULATED_POD=pod-{index}-{serial}");
    let mut crumb = Crumb::new()
        .current_dir(&mounts.project)
        .args(&args)
        .env("CRUMB_STUDIO_PORT", "1")
        // The image holds no agent CLI: a role bound to one cannot run.
        .env("PATH", path)
        // Slow enough that a kill lands while the session runs.
        .env("CRUMB_MOCK_DELAY_MS", "60")
        .env("HOSTNAME", format!("crumb-batch-{index}-{serial}"))
        .env_remove("CRUMB_IDLE_TIMEOUT")
        .timeout(Duration::from_secs(120));
    let (key, value) = marker.split_once('=').unwrap();
    crumb = crumb.env(key, value);
    for (name, value) in &env {
        crumb = crumb.env(name, value);
    }
    (crumb, marker)
}

/// SIGKILL every process carrying `marker`, as a container's death takes everything in it.
fn kill_pod(marker: &str) {
    let needle = format!("{marker}\0");
    for _ in 0..5 {
        let mut found = 0;
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            if environ
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
            {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
                found += 1;
            }
        }
        if found == 0 {
            return;
        }
    }
}

/// The record of pitch `index` in the home's only batch, if written.
fn pitch_record(home: &Path, index: usize) -> Option<Value> {
    let batch = std::fs::read_dir(home.join("batches"))
        .ok()?
        .flatten()
        .next()?;
    let bytes = std::fs::read(batch.path().join(format!("pitches/{index}.json"))).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// What the simulation did, per index: each pod's end, and whether the index failed.
#[derive(Debug, Default)]
struct Played {
    pods: BTreeMap<usize, Vec<PodEnd>>,
    completed: BTreeSet<usize>,
    failed: BTreeSet<usize>,
    job_failed: bool,
}

/// What a look at a running pod finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Running,
    /// Killed now, mid-run (with `DisruptionTarget` or not).
    Killed {
        disrupted: bool,
    },
    Exited,
}

/// Kill the pod if its fate says so and it is mid-run (its own `crumb run`/`crumb resume`
/// drives the pitch's session), else see whether it exited.
fn look(pod: &mut Pod, home: &Path) -> Seen {
    if let Some(disrupted) = pod.kill {
        let record = pitch_record(home, pod.index);
        let child = record.as_ref().and_then(|r| r["pid"].as_u64());
        let mid_run = record.as_ref().is_some_and(|r| r["session"].is_string())
            && child.is_some()
            && child != pod.previous_child;
        if mid_run {
            kill_pod(&pod.marker);
            return Seen::Killed { disrupted };
        }
    }
    if pod.running.exited() {
        Seen::Exited
    } else {
        Seen::Running
    }
}

/// Reap a pod that ended and say how.
fn finish(pod: Pod, seen: Seen) -> PodEnd {
    if let Seen::Killed { disrupted } = seen {
        pod.running.kill();
        return PodEnd {
            exit_code: KILLED,
            disrupted,
        };
    }
    let run = pod.running.wait();
    if run.code != 0 {
        // The pod's log, as `kubectl logs` shows it, for a failing test to explain.
        eprintln!(
            "pod of index {} exited {}:\n{}",
            pod.index, run.code, run.stderr
        );
    }
    PodEnd {
        exit_code: run.code,
        disrupted: false,
    }
}

/// Play the Job controller over `spec` until every index is done or the Job failed.
fn play(spec: &Spec, mounts: &Mounts, fates: &BTreeMap<usize, Fate>, path: &str) -> Played {
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut pending: VecDeque<usize> = (0..spec.completions).collect();
    let mut running: Vec<Pod> = Vec::new();
    let mut failures = vec![0u32; spec.completions];
    let mut played = Played::default();
    let mut serial = 0;
    loop {
        while !played.job_failed && running.len() < spec.parallelism {
            let Some(index) = pending.pop_front() else {
                break;
            };
            serial += 1;
            let attempt = played.pods.get(&index).map_or(0, Vec::len);
            let fate = fates.get(&index).copied().unwrap_or(Fate::Alone);
            let kill = match fate {
                Fate::Alone => None,
                Fate::DisruptedOnce => (attempt == 0).then_some(true),
                Fate::KilledOnce => (attempt == 0).then_some(false),
                Fate::KilledAlways => Some(false),
            };
            let previous_child = pitch_record(&mounts.home, index).and_then(|r| r["pid"].as_u64());
            let (crumb, marker) = start(spec, mounts, index, serial, path);
            running.push(Pod {
                index,
                marker,
                running: crumb.spawn(),
                previous_child,
                kill,
            });
        }
        if running.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "the Job did not finish in time");
        let seen: Vec<(usize, Seen)> = running
            .iter_mut()
            .enumerate()
            .map(|(slot, pod)| (slot, look(pod, &mounts.home)))
            .filter(|(_, seen)| *seen != Seen::Running)
            .collect();
        for (slot, seen) in seen.into_iter().rev() {
            let pod = running.remove(slot);
            let index = pod.index;
            let end = finish(pod, seen);
            played.pods.entry(index).or_default().push(end);
            judge(spec, &mut played, &mut failures, &mut pending, index, end);
        }
        if played.job_failed {
            // The Job failed: its running pods are terminated, nothing new starts.
            for pod in running.drain(..) {
                kill_pod(&pod.marker);
                pod.running.kill();
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    played
}

/// The controller's decision on a pod that ended.
fn judge(
    spec: &Spec,
    played: &mut Played,
    failures: &mut [u32],
    pending: &mut VecDeque<usize>,
    index: usize,
    end: PodEnd,
) {
    if end.exit_code == 0 {
        played.completed.insert(index);
        return;
    }
    let fail_index = match spec.action(end).as_str() {
        "Ignore" => false,
        "FailIndex" => true,
        "FailJob" => {
            played.job_failed = true;
            return;
        }
        _ => {
            failures[index] += 1;
            failures[index] > spec.backoff_limit_per_index
        }
    };
    if !fail_index {
        pending.push_back(index);
        return;
    }
    played.failed.insert(index);
    if played.failed.len() > spec.max_failed_indexes {
        played.job_failed = true;
    }
}

/// What `--collect` must say of an index, from what the simulation did to it.
fn expected_state(played: &Played, index: usize) -> (&'static str, usize, Option<i32>) {
    let Some(pods) = played.pods.get(&index) else {
        return ("never started", 0, None);
    };
    let last = pods.last().unwrap();
    if played.completed.contains(&index) {
        let state = if pods.len() > 1 { "retried" } else { "ran" };
        return (state, pods.len(), Some(0));
    }
    if last.exit_code == KILLED {
        ("killed", pods.len(), None)
    } else {
        ("failed", pods.len(), Some(last.exit_code))
    }
}

/// Emit the Job for `pitches` (and `extra` flags), set up its volumes, play it, collect.
fn simulate(
    pitches: &str,
    extra: &[&str],
    fates: &BTreeMap<usize, Fate>,
) -> (Played, Vec<Value>, i32, String) {
    let scratch = Scratch::new();
    let file = scratch.dir.path().join("pitches.yaml");
    std::fs::write(&file, pitches).unwrap();
    let emitted = scratch
        .command(&["batch", "pipelines/casual-static.yaml", "pitches.yaml"])
        .args(["--adapter", "mock", "--emit", "k8s"])
        .args(extra)
        .run()
        .expect_code(0);
    let docs: Vec<Value> = serde_saphyr::from_multiple(&emitted.stdout).unwrap();
    let (config_map, job) = (&docs[0], &docs[1]);
    let mounts = Mounts {
        home: scratch.dir.path().join("pvc"),
        batch: scratch.dir.path().join("configmap"),
        tmp: scratch.dir.path().join("tmp"),
        project: scratch.dir.path().to_path_buf(),
    };
    std::fs::create_dir_all(&mounts.batch).unwrap();
    std::fs::create_dir_all(&mounts.tmp).unwrap();
    for (key, text) in config_map["data"].as_object().unwrap() {
        std::fs::write(mounts.batch.join(key), text.as_str().unwrap()).unwrap();
    }
    let spec = Spec::of(job);
    let no_clis = scratch.dir.path().join("no-clis");
    std::fs::create_dir_all(&no_clis).unwrap();
    let played = play(&spec, &mounts, fates, &no_clis.to_string_lossy());
    let collected = scratch
        .command(&["batch", "--json", "--collect"])
        .arg(&mounts.home)
        .run();
    let rows: Vec<Value> = serde_json::from_str(&collected.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", collected.stdout, collected.stderr));
    // Naming the pipeline and the pitches finds the same batch folder, by what it holds.
    let named = scratch
        .command(&["batch", "--json", "--collect"])
        .arg(&mounts.home)
        .args(["pipelines/casual-static.yaml", "pitches.yaml"])
        .run();
    let named: Vec<Value> = serde_json::from_str(&named.stdout).unwrap();
    assert_eq!(
        rows.iter().map(|r| &r["pods"]).collect::<Vec<_>>(),
        named.iter().map(|r| &r["pods"]).collect::<Vec<_>>()
    );
    let human = scratch
        .command(&["batch", "--collect"])
        .arg(&mounts.home)
        .run()
        .stdout;
    (played, rows, collected.code, human)
}

fn assert_collect_tells_the_truth(played: &Played, rows: &[Value]) {
    for row in rows {
        let index = usize::try_from(row["index"].as_u64().unwrap()).unwrap();
        let (state, attempts, exit_code) = expected_state(played, index);
        let pods = &row["pods"];
        assert_eq!(pods["state"], state, "index {index}: {row:#}\n{played:#?}");
        assert_eq!(
            pods["attempts"].as_u64(),
            Some(attempts as u64),
            "index {index}: {row:#}"
        );
        if state == "failed" {
            assert_eq!(
                pods["exit_code"].as_i64(),
                exit_code.map(i64::from),
                "{row:#}"
            );
        }
    }
}

#[test]
fn a_played_job_runs_every_other_pitch_and_collect_tells_each_index_truly() {
    let pitches = "\
- a dodger
- a tapper, evicted once
- { pitch: a crasher, mock_scenario: crash-always }
- a runner
- a jumper, killed every time
- { pitch: a codex pitch without codex, bind: [planner-lead=codex] }
- a flapper, killed once
";
    let fates = BTreeMap::from([
        (1, Fate::DisruptedOnce),
        (4, Fate::KilledAlways),
        (6, Fate::KilledOnce),
    ]);
    let extra = ["--jobs", "3", "--retries-per-index", "1"];
    let (played, rows, code, human) = simulate(pitches, &extra, &fates);
    // The controller's view: the evicted and once-killed pitches were retried and completed,
    // the crash-always pitch completed (its session ended: a result, not a pod failure), the
    // always-killed pitch spent its budget, the missing CLI failed its index at once.
    assert_eq!(
        played.completed,
        BTreeSet::from([0, 1, 2, 3, 6]),
        "{played:#?}"
    );
    assert_eq!(played.failed, BTreeSet::from([4, 5]), "{played:#?}");
    assert!(!played.job_failed);
    assert_eq!(played.pods[&1].len(), 2, "an eviction is retried");
    assert_eq!(
        played.pods[&4].len(),
        2,
        "killed: 1 retry, then the index failed"
    );
    assert_eq!(played.pods[&5].len(), 1, "FailIndex: never retried");
    assert_eq!(
        played.pods[&5][0].exit_code, 2,
        "a missing CLI is a usage error"
    );
    // Every other pitch ran to its outcome.
    let outcome = |i: usize| rows[i]["outcome"].as_str().unwrap().to_owned();
    for index in [0, 1, 3, 6] {
        assert_eq!(outcome(index), "pass", "{:#}", rows[index]);
    }
    assert!(
        !["pass", "not run", "unfinished"].contains(&outcome(2).as_str()),
        "the crash-always session ended with its outcome: {:#}",
        rows[2]
    );
    assert_eq!(outcome(5), "not run");
    assert_collect_tells_the_truth(&played, &rows);
    assert_eq!(code, 24, "not every pitch passed");
    // The table says the same, in words.
    for cell in ["retried ×2", "killed ×2", "failed (exit 2)"] {
        assert!(human.contains(cell), "{cell}: {human}");
    }
    assert!(
        human.contains("pods: 3 ran · 2 retried · 1 failed · 1 killed · 0 never started"),
        "{human}"
    );
}

#[test]
fn a_job_past_max_failed_indexes_stops_and_collect_says_what_never_started() {
    let pitches = "\
- { pitch: a codex pitch without codex, bind: [planner-lead=codex] }
- a dodger
- a tapper
";
    let extra = ["--jobs", "1", "--max-failed-indexes", "0"];
    let (played, rows, code, _) = simulate(pitches, &extra, &BTreeMap::new());
    assert!(played.job_failed, "{played:#?}");
    assert_eq!(played.failed, BTreeSet::from([0]));
    assert!(played.completed.is_empty());
    assert_collect_tells_the_truth(&played, &rows);
    assert_eq!(rows[1]["pods"]["state"], "never started");
    assert_eq!(rows[2]["pods"]["state"], "never started");
    assert_eq!(code, 24);
}
