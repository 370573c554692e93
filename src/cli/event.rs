//! `crumb event`: how agents write back. Reads one JSON event on stdin, stamps it and appends it
//! to the session's transcript.
//!
//! The firewall: an agent may only speak as itself (`from` must equal `CRUMB_ACTOR`), may write
//! only the kinds its role `produces` plus the common set (`pipeline::role_authority`, learnt from the
//! session's `authority.json`), and may not write runner-owned kinds or metadata (provenance and
//! usage: token counts come only from the adapter's usage tap). A refused draft is never written; an `audit` event
//! records the attempt instead. Exit codes: `SUCCESS` written, `FAILURE` malformed or invalid
//! event (nothing written), `USAGE_ERROR` refused by the firewall, missing environment, or I/O
//! failure.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::error::{CommandError, ExitStatus};
use crate::transcript::validate::parse_draft;
use crate::transcript::writer::{MAX_LINE_BYTES, WriteError, Writer};
use crate::transcript::{Draft, Kind, Metadata};

/// Arguments of `crumb event` (none: the event is read from stdin).
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Tool id recorded on the firewall's audit events.
pub(crate) const FIREWALL_TOOL: &str = "crumb-event-firewall@v1";

/// How much of a refused body the audit keeps.
const ATTEMPTED_BODY_CHARS: usize = 200;

/// Largest stdin accepted (pretty-printed input may be larger than the compact line).
const MAX_STDIN_BYTES: u64 = 4 * MAX_LINE_BYTES as u64;

use crate::pipeline::role_authority::is_runner_metadata;
use crate::qa::confine;
use crate::runtime::artifact_store::objects::ObjectError;
use crate::runtime::authority_record::AuthorityRecord;

/// Where and as whom this process writes, from the environment the runner sets for a spawn.
struct SpawnEnv {
    actor: String,
    session_id: String,
    transcript: PathBuf,
    /// The session folder (`CRUMB_SESSION_DIR`, else the transcript's folder).
    session_dir: PathBuf,
}

/// Why `crumb event` stopped without writing the draft: a `CommandError::failure` when the
/// input is not a valid event, a `CommandError::usage` for the environment, the firewall or I/O.
pub(crate) fn run(_args: &Args) -> Result<ExitStatus, CommandError> {
    let printed = execute()?;
    print_line(&printed);
    Ok(ExitStatus::SUCCESS)
}

fn execute() -> Result<Value, CommandError> {
    let session = session_from_env()?;
    let mut value = read_stdin()?;
    let Some(object) = value.as_object_mut() else {
        return Err(CommandError::failure(
            "/: the event must be a JSON object".to_owned(),
        ));
    };
    object
        .entry("from")
        .or_insert_with(|| Value::String(session.actor.clone()));

    let mut writer = Writer::open(&session.transcript, session.session_id.clone())
        .map_err(CommandError::usage_from)?;

    let authority = AuthorityRecord::load(&session.session_dir).map_err(|e| {
        CommandError::usage(format!(
            "cannot learn which kinds the session's roles may write: {e}"
        ))
    })?;
    // A name outside the vocabulary is a kind only when the session's pipeline declares it.
    if let Some(name) = object.get("kind").and_then(Value::as_str)
        && let Ok(kind @ Kind::Declared(_)) = name.parse::<Kind>()
        && !authority.as_ref().is_some_and(|a| a.accepts_kind(kind))
    {
        return Err(CommandError::failure(format!(
            "invalid event: /kind: `{name}` is neither in the transcript vocabulary (`crumb schema transcript`) nor declared by this session's pipeline (`kinds:`); nothing was written"
        )));
    }
    if let Some(violation) = firewall_violation(object, &session.actor, authority.as_ref())
        .or_else(|| artifact_violation(object, &session.session_dir))
    {
        let audit = writer
            .append(audit_draft(object, &session.actor, violation))
            .map_err(CommandError::usage_from)?;
        print_line(&json!({"rejected": true, "violation": violation, "audit_id": audit.id}));
        let allowed = authority
            .as_ref()
            .and_then(|a| a.roles.get(&session.actor).map(|p| (p, &a.common)))
            .map(|(produces, common)| {
                let kinds: Vec<&str> = produces.iter().chain(common).map(String::as_str).collect();
                format!("; `{}` may write: {}", session.actor, kinds.join(", "))
            })
            .unwrap_or_default();
        return Err(CommandError::usage(format!(
            "refused: {} (actor `{}`){allowed}; nothing was written, audit event {} records the attempt",
            describe(violation),
            session.actor,
            audit.id
        )));
    }

    // The pipeline's declared schema for this kind's `data`, if it has one.
    if let (Some(record), Some(kind)) = (
        authority.as_ref(),
        object.get("kind").and_then(Value::as_str),
    ) && let Some(problem) =
        record.data_violation(kind, object.get("data").unwrap_or(&Value::Null))
    {
        return Err(CommandError::failure(format!(
            "invalid event: `{kind}` data does not match the pipeline's schema: {problem}"
        )));
    }
    strip_stamped_fields(object, &session.session_id)?;
    stamp_provenance(object);
    let draft = parse_draft(&value)
        .map_err(|violations| CommandError::failure(format!("invalid event:\n{violations}")))?;
    keep_artifacts(&mut writer, &draft, &session, authority.as_ref())?;
    let event = writer.append(draft).map_err(|e| match e {
        WriteError::Invalid(_) | WriteError::TooLarge { .. } => CommandError::failure_from(e),
        WriteError::Io { .. } => CommandError::usage_from(e),
    })?;
    Ok(json!({"id": event.id, "ts": event.ts}))
}

/// Store the draft's files by content before the event that records them exists. A draft
/// whose files would take the store past its cap is refused like a firewall violation: nothing
/// but the `audit` event that says why is written.
fn keep_artifacts(
    writer: &mut Writer,
    draft: &Draft,
    session: &SpawnEnv,
    authority: Option<&AuthorityRecord>,
) -> Result<(), CommandError> {
    if draft.artifacts.is_empty() {
        return Ok(());
    }
    let cap_mb = authority
        .and_then(|a| a.store_cap_mb)
        .unwrap_or(crate::runtime::artifact_store::DEFAULT_CAP_MB);
    let kept = crate::runtime::artifact_store::tree::keep(
        &session.session_dir,
        &draft.artifacts,
        cap_mb.saturating_mul(1 << 20),
    );
    let Err(why) = kept else { return Ok(()) };
    if !matches!(why, ObjectError::CapExceeded { .. }) {
        return Err(CommandError::usage(format!("nothing was written: {why}")));
    }
    let violation = "artifact_store_cap_exceeded";
    let mut attempt = Map::new();
    attempt.insert("kind".into(), Value::String(draft.kind.as_str().to_owned()));
    let mut audit = audit_draft(&attempt, &session.actor, violation);
    audit.body = Some(format!("refused {}: {why}", draft.kind.as_str()));
    let audit = writer.append(audit).map_err(CommandError::usage_from)?;
    print_line(&json!({"rejected": true, "violation": violation, "audit_id": audit.id}));
    Err(CommandError::usage(format!(
        "refused: {why}; nothing was written, audit event {} records the attempt",
        audit.id
    )))
}

fn session_from_env() -> Result<SpawnEnv, CommandError> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let actor = var("CRUMB_ACTOR").ok_or_else(|| {
        CommandError::usage(
            "CRUMB_ACTOR is not set; crumb event is run by agents inside a crumb session"
                .to_owned(),
        )
    })?;
    let session_id = var("CRUMB_SESSION_ID").ok_or_else(|| {
        CommandError::usage(
            "CRUMB_SESSION_ID is not set; crumb event needs the session it writes to".to_owned(),
        )
    })?;
    let session_dir = var("CRUMB_SESSION_DIR").map(PathBuf::from);
    let transcript = var("CRUMB_TRANSCRIPT_PATH")
        .map(PathBuf::from)
        .or_else(|| session_dir.as_ref().map(|dir| dir.join("transcript.jsonl")))
        .ok_or_else(|| {
            CommandError::usage(
                "neither CRUMB_TRANSCRIPT_PATH nor CRUMB_SESSION_DIR is set".to_owned(),
            )
        })?;
    let session_dir = session_dir.unwrap_or_else(|| {
        transcript
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    });
    Ok(SpawnEnv {
        actor,
        session_id,
        transcript,
        session_dir,
    })
}

fn read_stdin() -> Result<Value, CommandError> {
    let mut input = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_STDIN_BYTES + 1)
        .read_to_end(&mut input)
        .map_err(|e| CommandError::usage(format!("cannot read stdin: {e}")))?;
    if input.len() as u64 > MAX_STDIN_BYTES {
        return Err(CommandError::failure(format!(
            "input is larger than {MAX_STDIN_BYTES} bytes; put large content in an artifact file"
        )));
    }
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&input);
    serde_json::from_slice(input)
        .map_err(|e| CommandError::failure(format!("malformed JSON on stdin: {e}")))
}

/// The first firewall rule the draft breaks, as an audit violation code. `from` was already
/// defaulted to the actor, so a spawn running as a reserved actor is caught by the first rules too.
/// Without an `authority` (a bare transcript, not a session folder) only the runner-owned rules
/// apply; the reducer still ignores what the role may not write.
fn firewall_violation(
    object: &Map<String, Value>,
    actor: &str,
    authority: Option<&AuthorityRecord>,
) -> Option<&'static str> {
    let from = object.get("from").and_then(Value::as_str);
    if let Some(from) = from {
        match from {
            "system" => return Some("forged_system_event_attempt"),
            "user" => return Some("forged_user_event_attempt"),
            "validator" => return Some("forged_validator_event_attempt"),
            "coordinator" => return Some("forged_coordinator_event_attempt"),
            _ if from != actor => return Some("forged_actor_attempt"),
            _ => {}
        }
    }
    if let Some(kind) = object
        .get("kind")
        .and_then(Value::as_str)
        .and_then(|k| k.parse::<Kind>().ok())
    {
        if kind == Kind::QaResult {
            return Some("forged_qa_result_attempt");
        }
        if kind.is_runner_owned() {
            return Some("forged_runner_kind_attempt");
        }
        match authority.map(|a| a.may_write(actor, kind)) {
            Some(None) => return Some("unknown_role_attempt"),
            Some(Some(false)) => return Some("unauthorized_kind_attempt"),
            _ => {}
        }
    }
    if let Some(metadata) = object.get("metadata").and_then(Value::as_object)
        && metadata.keys().any(|key| is_runner_metadata(key))
    {
        return Some("forged_runner_metadata_attempt");
    }
    None
}

/// An artifact path that does not name a file under the session's `artifacts/`: absolute, with
/// `..` or a NUL, outside `artifacts/`, or through a symlink leading out. Paths are relative to the
/// session folder (`artifacts/game/index.html`); they reach QA and the verifier's prompt.
fn artifact_violation(object: &Map<String, Value>, session_dir: &Path) -> Option<&'static str> {
    let artifacts = object.get("artifacts").and_then(Value::as_array)?;
    let root = session_dir.join("artifacts");
    let escapes = |path: &str| {
        let Ok(joined) = confine::join_inside(session_dir, path) else {
            return true;
        };
        let Ok(inside) = joined.strip_prefix(&root) else {
            return true;
        };
        inside.as_os_str().is_empty() || leads_out(&root, &joined)
    };
    artifacts
        .iter()
        .filter_map(|artifact| artifact.get("path").and_then(Value::as_str))
        .any(escapes)
        .then_some("artifact_path_escape_attempt")
}

/// Whether `path` (under `root` as written), or its nearest existing ancestor when it does not
/// exist yet, really lies outside `root` once symlinks are resolved.
fn leads_out(root: &Path, path: &Path) -> bool {
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    path.ancestors()
        .take_while(|probe| probe.starts_with(root) && *probe != root)
        .map(|probe| confine::real_location(&real_root, probe))
        .find(|location| *location != confine::Location::Missing)
        .is_some_and(|location| location == confine::Location::Outside)
}

fn describe(violation: &str) -> &'static str {
    match violation {
        "forged_system_event_attempt" => "agents may not write events `from: system`",
        "forged_user_event_attempt" => "agents may not write events `from: user`",
        "forged_validator_event_attempt" => "agents may not write events `from: validator`",
        "forged_coordinator_event_attempt" => "agents may not write events `from: coordinator`",
        "forged_actor_attempt" => {
            "`from` must equal CRUMB_ACTOR (an agent may only speak as itself)"
        }
        "forged_qa_result_attempt" => "`qa.result` is written only by the runner's QA",
        "forged_runner_kind_attempt" => "this kind is written only by the runner",
        "unknown_role_attempt" => "CRUMB_ACTOR is not a role of this session's pipeline",
        "artifact_path_escape_attempt" => {
            "artifact paths are relative to the session folder and name a file under `artifacts/` \
             (no absolute path, `..`, NUL or symlink leading out)"
        }
        "unauthorized_kind_attempt" => {
            "a role may write only the kinds it `produces` plus `note` and `agent.thought_summary` \
             (`crumb explain <kind>` says who writes a kind)"
        }
        _ => {
            "provenance (`metadata.deterministic`, `tool`, `effect_id`, `audit_violations`) and usage \
             (`metadata.tokens_in`, `tokens_out`, `thinking_tokens`, `cache_read`, `cache_write`, \
             `cost_usd`, `latency_ms`) are set only by the runner"
        }
    }
}

fn audit_draft(attempt: &Map<String, Value>, actor: &str, violation: &str) -> Draft {
    let text = |value: &Value| match value {
        Value::String(s) => Value::String(s.chars().take(ATTEMPTED_BODY_CHARS).collect()),
        other => Value::String(
            other
                .to_string()
                .chars()
                .take(ATTEMPTED_BODY_CHARS)
                .collect(),
        ),
    };
    let mut data = Map::new();
    data.insert("violation".to_owned(), Value::String(violation.to_owned()));
    data.insert("actor".to_owned(), Value::String(actor.to_owned()));
    for (key, field) in [
        ("attempted_from", "from"),
        ("attempted_kind", "kind"),
        ("attempted_body", "body"),
    ] {
        if let Some(value) = attempt.get(field) {
            data.insert(key.to_owned(), text(value));
        }
    }
    Draft::new("system", Kind::Audit)
        .body(format!(
            "rejected forged event from actor={}: {violation}",
            actor.chars().take(64).collect::<String>()
        ))
        .data(data)
        .metadata(Metadata {
            deterministic: Some(true),
            tool: Some(FIREWALL_TOOL.to_owned()),
            audit_violations: vec![violation.to_owned()],
            ..Metadata::default()
        })
}

/// `id` and `ts` belong to the writer; a `session_id` is accepted only if it is this session.
fn strip_stamped_fields(
    object: &mut Map<String, Value>,
    session_id: &str,
) -> Result<(), CommandError> {
    for key in ["id", "ts"] {
        if object.contains_key(key) {
            return Err(CommandError::failure(format!(
                "/{key}: stamped by crumb event; remove it from the draft"
            )));
        }
    }
    match object.remove("session_id") {
        None => Ok(()),
        Some(Value::String(s)) if s == session_id => Ok(()),
        Some(_) => Err(CommandError::failure(format!(
            "/session_id: does not match CRUMB_SESSION_ID ({session_id}); leave it out, crumb event fills it"
        ))),
    }
}

/// Provenance comes from the runner's binding (environment), which wins over what the agent claims.
fn stamp_provenance(object: &mut Map<String, Value>) {
    let stamps: Vec<(&str, String)> = [
        ("harness", "CRUMB_HARNESS"),
        ("provider", "CRUMB_PROVIDER"),
        ("model", "CRUMB_MODEL"),
    ]
    .into_iter()
    .filter_map(|(key, var)| {
        std::env::var(var)
            .ok()
            .filter(|v| !v.is_empty())
            .map(|v| (key, v))
    })
    .collect();
    let consumed: Vec<Value> = std::env::var("CRUMB_CONSUMED_INTERVENE_IDS")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(|id| Value::String(id.to_owned()))
        .collect();
    if stamps.is_empty() && consumed.is_empty() {
        return;
    }
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(metadata) = metadata.as_object_mut() else {
        return; // not an object: the schema check reports it
    };
    for (key, value) in stamps {
        metadata.insert(key.to_owned(), Value::String(value));
    }
    if !consumed.is_empty() {
        metadata
            .entry("consumed_intervene_ids")
            .or_insert(Value::Array(consumed));
    }
}

/// Print one line on stdout; a closed pipe is not worth a panic.
fn print_line(value: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}
