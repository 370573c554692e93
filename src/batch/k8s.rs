//! `crumb batch … --emit k8s`: the batch as a Kubernetes Indexed Job. Sessions are independent
//! and fully described by their folders, so each pod runs one pitch (`crumb batch --index
//! $(JOB_COMPLETION_INDEX)`, which runs `crumb run`) against a crumb home on a shared volume, and
//! `crumb batch --collect` reads the summary from that volume. Kubernetes schedules; we do not.

use serde_json::{Value, json};

use super::plan::Pitch;

/// Where things are inside the pod.
const HOME_MOUNT: &str = "/crumb-home";
const BATCH_MOUNT: &str = "/batch";
const PITCHES_KEY: &str = "pitches.yaml";

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
    pub backoff_limit: u32,
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
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": name, "labels": { "app.kubernetes.io/name": "crumb" } },
        "spec": {
            "completionMode": "Indexed",
            "completions": emit.pitches.len(),
            "parallelism": emit.parallelism.max(1),
            "backoffLimit": emit.backoff_limit,
            "template": {
                "metadata": { "labels": { "app.kubernetes.io/name": "crumb", "crumb.dev/batch": emit.batch_id } },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "crumb",
                        "image": emit.image,
                        "workingDir": emit.workdir,
                        "command": ["crumb"],
                        "args": args,
                        "env": [
                            { "name": "JOB_COMPLETION_INDEX", "valueFrom": { "fieldRef": {
                                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
                            { "name": "CRUMB_HOME", "value": HOME_MOUNT },
                        ],
                        "resources": {
                            "requests": { "cpu": "1", "memory": "1Gi" },
                            "limits": { "memory": "2Gi" },
                        },
                        "volumeMounts": [
                            { "name": "crumb-home", "mountPath": HOME_MOUNT },
                            { "name": "batch", "mountPath": BATCH_MOUNT, "readOnly": true },
                        ],
                    }],
                    "volumes": [
                        { "name": "crumb-home", "persistentVolumeClaim": { "claimName": emit.claim } },
                        { "name": "batch", "configMap": { "name": name } },
                    ],
                },
            },
        },
    });
    Ok(vec![config_map, job])
}

/// The manifests as one multi-document YAML file (`kubectl apply -f -`).
pub(crate) fn yaml(emit: &Emit<'_>) -> Result<String, String> {
    let docs = manifests(emit)?;
    serde_saphyr::to_string_multiple(&docs).map_err(|e| e.to_string())
}
