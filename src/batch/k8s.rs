//! `crumb batch … --emit k8s`: the batch as a Kubernetes Indexed Job. Sessions are independent
//! and fully described by their folders, so each pod runs one pitch (`crumb batch --index
//! $(JOB_COMPLETION_INDEX)`, which runs `crumb run`) against a crumb home on a shared volume, and
//! `crumb batch --collect` reads the summary from that volume (`--emit k8s-collect` writes the
//! pod that does it there). Kubernetes schedules; we do not.
//!
//! A session that *ended* is a result, not a pod failure: a pod exits 0 whatever the session's
//! outcome (it is in the home, and `--collect` reports it) and fails only when crumb could not
//! drive the pitch. So each index has its own retry budget (`backoffLimitPerIndex`), one failing
//! pitch never spends the others' (`maxFailedIndexes` is every index), disruptions do not count,
//! and the codes retrying cannot fix (a usage error, an invalid pipeline) fail their index at
//! once. The pods are hardened: non-root, no privilege escalation, a read-only root file system
//! with memory-backed `/tmp` and `/dev/shm` (Chromium writes there), every capability dropped,
//! seccomp `RuntimeDefault`, no service-account token, CPU and memory bounded.

use serde_json::{Value, json};

use crate::exit_codes::{INVALID_PIPELINE, USAGE_ERROR};

use super::plan::Pitch;

/// Where things are inside the pod.
const HOME_MOUNT: &str = "/crumb-home";
const BATCH_MOUNT: &str = "/batch";
const PITCHES_KEY: &str = "pitches.yaml";
/// The unprivileged user and group the pods run as (the image's `crumb` user).
const POD_USER: u32 = 10001;

/// What the manifests are made from.
#[derive(Debug, Clone)]
pub(crate) struct Emit<'a> {
    pub batch_id: &'a str,
    /// The pipeline path as given, relative to the project folder in the image.
    pub pipeline: &'a str,
    pub pitches: &'a [Pitch],
    pub parallelism: usize,
    pub image: &'a str,
    /// A `ReadWriteMany` claim holding the crumb home.
    pub claim: &'a str,
    /// The project folder in the image (the pods' working directory).
    pub workdir: &'a str,
    /// Arguments every `crumb run` gets (`--adapter`, `--bind`, …).
    pub run_args: &'a [String],
    /// Retries of one pitch's pod before its index counts as failed.
    pub retries_per_index: u32,
    /// Failed pitches past which the Job stops (`None`: every pitch, so none stops the rest).
    pub max_failed_indexes: Option<usize>,
    /// CPU and memory each pod requests and is limited to (Kubernetes quantities).
    pub cpu: &'a str,
    pub memory: &'a str,
    /// A Secret whose keys become the pods' environment (agent API keys), never the manifest's.
    pub secret: Option<&'a str>,
    /// The Job's deadline (`--max-wall`), in seconds.
    pub deadline_s: Option<u64>,
}

/// The name of the batch's objects (a DNS-1123 label).
fn name(batch_id: &str) -> String {
    format!("crumb-batch-{batch_id}")
}

/// The `ConfigMap` holding the pitches and the Indexed `Job` running them.
pub(crate) fn manifests(emit: &Emit<'_>) -> Result<Vec<Value>, String> {
    let name = name(emit.batch_id);
    let pitches = serde_saphyr::to_string(&emit.pitches).map_err(|e| e.to_string())?;
    let config_map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": name, "labels": { "app.kubernetes.io/name": "crumb" } },
        "data": { PITCHES_KEY: pitches },
    });
    let mut args: Vec<String> = vec![
        "batch".into(),
        emit.pipeline.into(),
        format!("{BATCH_MOUNT}/{PITCHES_KEY}"),
        // Expanded by the kubelet from the container's environment (below); no shell.
        "--index".into(),
        "$(JOB_COMPLETION_INDEX)".into(),
        "--home".into(),
        HOME_MOUNT.into(),
    ];
    args.extend(emit.run_args.iter().cloned());
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": name, "labels": { "app.kubernetes.io/name": "crumb" } },
        "spec": {
            "completionMode": "Indexed",
            "completions": emit.pitches.len(),
            "parallelism": emit.parallelism.max(1),
            "backoffLimitPerIndex": emit.retries_per_index,
            "maxFailedIndexes": emit.max_failed_indexes.unwrap_or(emit.pitches.len()).min(emit.pitches.len()),
            "podFailurePolicy": { "rules": [
                // A node drained or a pod preempted: not the pitch's fault, not counted.
                { "action": "Ignore", "onPodConditions": [{ "type": "DisruptionTarget", "status": "True" }] },
                // What a retry cannot fix fails the index at once.
                { "action": "FailIndex", "onExitCodes": {
                    "containerName": "crumb", "operator": "In",
                    "values": [USAGE_ERROR, INVALID_PIPELINE] } },
            ] },
            "template": {
                "metadata": { "labels": { "app.kubernetes.io/name": "crumb", "crumb.dev/batch": emit.batch_id } },
                "spec": pod_spec(emit, &name, &args),
            },
        },
    });
    if let Some(deadline) = emit.deadline_s {
        job["spec"]["activeDeadlineSeconds"] = deadline.max(1).into();
    }
    if let Some(secret) = emit.secret {
        job["spec"]["template"]["spec"]["containers"][0]["envFrom"] =
            json!([{ "secretRef": { "name": secret } }]);
    }
    Ok(vec![config_map, job])
}

/// The pod every manifest runs: hardened, bounded, the home and the pitches mounted.
fn pod_spec(emit: &Emit<'_>, name: &str, args: &[String]) -> Value {
    json!({
        "restartPolicy": "Never",
        "automountServiceAccountToken": false,
        "securityContext": {
            "runAsNonRoot": true,
            "runAsUser": POD_USER,
            "runAsGroup": POD_USER,
            "fsGroup": POD_USER,
            "seccompProfile": { "type": "RuntimeDefault" },
        },
        "containers": [{
            "name": "crumb",
            "image": emit.image,
            "workingDir": emit.workdir,
            "command": ["crumb"],
            "args": args,
            "securityContext": {
                "allowPrivilegeEscalation": false,
                "readOnlyRootFilesystem": true,
                "capabilities": { "drop": ["ALL"] },
            },
            "env": [
                { "name": "JOB_COMPLETION_INDEX", "valueFrom": { "fieldRef": {
                    "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
                { "name": "CRUMB_HOME", "value": HOME_MOUNT },
                { "name": "HOME", "value": "/tmp" },
                { "name": "TMPDIR", "value": "/tmp" },
            ],
            "resources": {
                "requests": { "cpu": emit.cpu, "memory": emit.memory },
                "limits": { "cpu": emit.cpu, "memory": emit.memory },
            },
            "volumeMounts": [
                { "name": "crumb-home", "mountPath": HOME_MOUNT },
                { "name": "batch", "mountPath": BATCH_MOUNT, "readOnly": true },
                { "name": "tmp", "mountPath": "/tmp" },
                { "name": "shm", "mountPath": "/dev/shm" },
            ],
        }],
        "volumes": [
            { "name": "crumb-home", "persistentVolumeClaim": { "claimName": emit.claim } },
            { "name": "batch", "configMap": { "name": name } },
            { "name": "tmp", "emptyDir": { "sizeLimit": "1Gi" } },
            { "name": "shm", "emptyDir": { "medium": "Memory", "sizeLimit": "512Mi" } },
        ],
    })
}

/// `--emit k8s-collect`: a pod that runs `crumb batch --collect` over the shared home once the
/// Job is done, with the batch's pipeline and pitches (so a home holding several batches is no
/// problem); `kubectl logs` shows the summary. It exits as `--collect` does (24 unless all
/// passed), so the pod ends `Failed` then: read its log either way.
pub(crate) fn collect_pod(emit: &Emit<'_>) -> Result<String, String> {
    let name = name(emit.batch_id);
    let args: Vec<String> = vec![
        "batch".into(),
        emit.pipeline.into(),
        format!("{BATCH_MOUNT}/{PITCHES_KEY}"),
        "--collect".into(),
        HOME_MOUNT.into(),
    ];
    let mut spec = pod_spec(emit, &name, &args);
    // Not a pod of the Job: no completion index to read.
    if let Some(env) = spec["containers"][0]["env"].as_array_mut() {
        env.remove(0);
    }
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": format!("{name}-collect"),
            "labels": { "app.kubernetes.io/name": "crumb", "app.kubernetes.io/component": "collect",
                "crumb.dev/batch": emit.batch_id } },
        "spec": spec,
    });
    serde_saphyr::to_string(&pod).map_err(|e| e.to_string())
}

/// The manifests as one multi-document YAML file (`kubectl apply -f -`).
pub(crate) fn yaml(emit: &Emit<'_>) -> Result<String, String> {
    let docs = manifests(emit)?;
    serde_saphyr::to_string_multiple(&docs).map_err(|e| e.to_string())
}
