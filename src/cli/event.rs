//! `crumb event`: how agents write back. Reads one JSON event on stdin, stamps it and appends it
//! to the session's transcript.
//!
//! Who may write is decided by the turn's capability (`CRUMB_CAPABILITY`, see
//! [`crate::runtime::capability`]), never by the caller's environment: the session, the transcript
//! and the role all come from it, and a `CRUMB_ACTOR`, `CRUMB_SESSION_DIR`, `CRUMB_SESSION_ID` or
//! `CRUMB_TRANSCRIPT_PATH` that contradicts it is refused. No valid capability, or a session
//! without its `authority.json`, is refused too (fail closed).
//!
//! The firewall: an agent may only speak as its role (`from` must equal the capability's role), may
//! write only the kinds its role `produces` plus the common set (`pipeline::role_authority`, learnt
//! from the session's `authority.json`), and may not write runner-owned kinds or metadata
//! (provenance and usage: token counts come only from the adapter's usage tap). A refused draft is
//! never written; an `audit` event records the attempt instead (in the session the capability, or
//! failing that `CRUMB_SESSION_DIR`, names, when that is a real session). Exit codes: `SUCCESS`
//! written, `FAILURE` malformed or invalid event (nothing written), `USAGE_ERROR` refused by the
//! firewall or the capability check, or I/O failure.

use std::io::Read;
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
use crate::runtime::authority_record::{AUTHORITY_FILE, AuthorityRecord};
use crate::runtime::capability::{self, CAPABILITY_ENV};
use crate::runtime::session_dir::TRANSCRIPT_FILE;

/// Where and as whom this process writes, from the turn's capability.
struct SpawnEnv {
    actor: String,
    session_id: String,
    transcript: PathBuf,
    session_dir: PathBuf,
    grant: capability::Grant,
}

/// A refusal decided before the firewall could look at the draft: no valid capability, an
/// environment that contradicts it, or no authority record.
struct Unbound {
    violation: &'static str,
    message: String,
    /// The actor the caller claimed or holds, for the audit.
    actor: String,
    /// Where to record the attempt (a real session), with its session id.
    record_in: Option<(PathBuf, String)>,
}

/// Why `crumb event` stopped without writing the draft: a `CommandError::failure` when the
/// input is not a valid event, a `CommandError::usage` for the capability, the firewall or I/O.
pub(crate) fn run(_args: &Args) -> Result<ExitStatus, CommandError> {
    let printed = execute()?;
    print_line(&printed);
    Ok(ExitStatus::SUCCESS)
}

fn execute() -> Result<Value, CommandError> {
    let input = read_stdin();
    let (session, authority) = match bind() {
        Ok(bound) => bound,
        Err(unbound) => return Err(refuse_unbound(&unbound, input.ok().as_ref())),
    };
    let mut value = input?;
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

    // A name outside the vocabulary is a kind only when the session's pipeline declares it.
    if let Some(name) = object.get("kind").and_then(Value::as_str)
        && let Ok(kind @ Kind::Declared(_)) = name.parse::<Kind>()
        && !authority.accepts_kind(kind)
    {
        return Err(CommandError::failure(format!(
            "invalid event: /kind: `{name}` is neither in the transcript vocabulary (`crumb schema transcript`) nor declared by this session's pipeline (`kinds:`); nothing was written"
        )));
    }
    if let Some(violation) = firewall_violation(object, &session.actor, &authority)
        .or_else(|| artifact_violation(object, &session.session_dir))
    {
        let audit = writer
            .append(audit_draft(Some(object), &session.actor, violation))
            .map_err(CommandError::usage_from)?;
        print_line(&json!({"rejected": true, "violation": violation, "audit_id": audit.id}));
        let allowed = authority
            .roles
            .get(&session.actor)
            .map(|produces| {
                let kinds: Vec<&str> = produces
                    .iter()
                    .chain(&authority.common)
                    .map(String::as_str)
                    .collect();
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
    if let Some(kind) = object.get("kind").and_then(Value::as_str)
        && let Some(problem) =
            authority.data_violation(kind, object.get("data").unwrap_or(&Value::Null))
    {
        return Err(CommandError::failure(format!(
            "invalid event: `{kind}` data does not match the pipeline's schema: {problem}"
        )));
    }
    strip_stamped_fields(object, &session.session_id)?;
    stamp_provenance(object);
    let draft = parse_draft(&value)
        .map_err(|violations| CommandError::failure(format!("invalid event:\n{violations}")))?;
    keep_artifacts(&mut writer, &draft, &session, &authority)?;
    let event = writer.append(draft).map_err(|e| match e {
        WriteError::Invalid(_) | WriteError::TooLarge { .. } => CommandError::failure_from(e),
        WriteError::Io { .. } => {
            // A storage fault, not the agent's: the turn is owed, not failed.
            capability::record_fault(&session.grant, &e.to_string());
            CommandError::usage_from(e)
        }
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
    authority: &AuthorityRecord,
) -> Result<(), CommandError> {
    if draft.artifacts.is_empty() {
        return Ok(());
    }
    let cap_mb = authority
        .store_cap_mb
        .unwrap_or(crate::runtime::artifact_store::DEFAULT_CAP_MB);
    let kept = crate::runtime::artifact_store::tree::keep(
        &session.session_dir,
        &draft.artifacts,
        cap_mb.saturating_mul(1 << 20),
    );
    let Err(why) = kept else { return Ok(()) };
    if let ObjectError::Io(_) = why {
        // A storage fault, not the agent's: the turn is owed, not failed.
        capability::record_fault(&session.grant, &why.to_string());
    }
    if !matches!(why, ObjectError::CapExceeded { .. }) {
        return Err(CommandError::usage(format!("nothing was written: {why}")));
    }
    let violation = "artifact_store_cap_exceeded";
    let mut attempt = Map::new();
    attempt.insert("kind".into(), Value::String(draft.kind.as_str().to_owned()));
    let mut audit = audit_draft(Some(&attempt), &session.actor, violation);
    audit.body = Some(format!("refused {}: {why}", draft.kind.as_str()));
    let audit = writer.append(audit).map_err(CommandError::usage_from)?;
    print_line(&json!({"rejected": true, "violation": violation, "audit_id": audit.id}));
    Err(CommandError::usage(format!(
        "refused: {why}; nothing was written, audit event {} records the attempt",
        audit.id
    )))
}

/// The session, transcript and role of this turn, from its capability alone, and the session's
/// authority record. The `CRUMB_*` identity variables are informational: one that names another
/// role or session than the capability is refused rather than ignored, so the attempt is seen.
fn bind() -> Result<(SpawnEnv, AuthorityRecord), Unbound> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let claimed_actor = var("CRUMB_ACTOR");
    let token = var(CAPABILITY_ENV);
    let grant = match token.as_deref().map(capability::resolve) {
        Some(Ok(grant)) => grant,
        failed => {
            let (violation, why) = match failed {
                Some(Err(invalid)) => (invalid.violation(), invalid.describe()),
                _ => ("missing_capability_attempt", "CRUMB_CAPABILITY is not set"),
            };
            let claimed = token
                .as_deref()
                .and_then(capability::named_session)
                .or_else(|| var("CRUMB_SESSION_DIR").map(PathBuf::from));
            return Err(Unbound {
                violation,
                message: format!(
                    "{why}: crumb event writes only for an agent's turn, with the capability crumb \
                     started that turn with (a person speaks through `crumb say <session> \"…\"`)"
                ),
                actor: claimed_actor.unwrap_or_else(|| "unknown".to_owned()),
                record_in: claimed.as_deref().and_then(real_session),
            });
        }
    };
    let session = SpawnEnv {
        actor: grant.role.clone(),
        session_id: grant.session_id.clone(),
        transcript: grant.transcript.clone(),
        session_dir: grant.session_dir.clone(),
        grant,
    };
    let refuse = |violation: &'static str, message: String| Unbound {
        violation,
        message,
        actor: session.actor.clone(),
        record_in: Some((session.session_dir.clone(), session.session_id.clone())),
    };
    if let Some(claimed) = claimed_actor.filter(|claimed| *claimed != session.actor) {
        return Err(refuse(
            "forged_actor_attempt",
            format!(
                "CRUMB_ACTOR is `{claimed}` but this turn's capability is `{}`'s; an agent may only speak as its own role",
                session.actor
            ),
        ));
    }
    let contradicted = [
        ("CRUMB_SESSION_DIR", session.session_dir.clone()),
        ("CRUMB_TRANSCRIPT_PATH", session.transcript.clone()),
        ("CRUMB_SESSION_ID", PathBuf::from(&session.session_id)),
    ]
    .into_iter()
    .find(|(name, granted)| var(name).is_some_and(|claimed| Path::new(&claimed) != granted));
    if let Some((name, granted)) = contradicted {
        return Err(refuse(
            "forged_session_attempt",
            format!(
                "{name} does not match this turn's capability (which is for {}); crumb event writes only to its own session",
                granted.display()
            ),
        ));
    }
    match AuthorityRecord::load(&session.session_dir) {
        Ok(Some(authority)) => Ok((session, authority)),
        Ok(None) => Err(refuse(
            "missing_authority_attempt",
            format!(
                "{} has no authority.json, so nothing says which kinds its roles may write",
                session.session_dir.display()
            ),
        )),
        Err(e) => Err(refuse(
            "missing_authority_attempt",
            format!("cannot learn which kinds the session's roles may write: {e}"),
        )),
    }
}

/// `dir` with its session id when it is a real session (a transcript and an authority record), so
/// a refusal can be recorded there; nothing is created in any other folder.
fn real_session(dir: &Path) -> Option<(PathBuf, String)> {
    if !dir.join(AUTHORITY_FILE).is_file() {
        return None;
    }
    let file = std::fs::File::open(dir.join(TRANSCRIPT_FILE)).ok()?;
    let first = crate::transcript::reader::Reader::new(std::io::BufReader::new(file))
        .find_map(Result::ok)?;
    Some((dir.to_path_buf(), first.session_id))
}

/// Record an [`Unbound`] refusal where it can be and turn it into the command's error.
fn refuse_unbound(unbound: &Unbound, attempt: Option<&Value>) -> CommandError {
    let recorded = unbound.record_in.as_ref().and_then(|(dir, id)| {
        let mut writer = Writer::open(dir.join(TRANSCRIPT_FILE), id.clone()).ok()?;
        let draft = audit_draft(
            attempt.and_then(Value::as_object),
            &unbound.actor,
            unbound.violation,
        );
        writer.append(draft).ok()
    });
    let recorded = match recorded {
        Some(audit) => {
            print_line(
                &json!({"rejected": true, "violation": unbound.violation, "audit_id": audit.id}),
            );
            format!("audit event {} records the attempt", audit.id)
        }
        None => "no session to record it in".to_owned(),
    };
    CommandError::usage(format!(
        "refused: {}; nothing was written, {recorded}",
        unbound.message
    ))
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
fn firewall_violation(
    object: &Map<String, Value>,
    actor: &str,
    authority: &AuthorityRecord,
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
        match authority.may_write(actor, kind) {
            None => return Some("unknown_role_attempt"),
            Some(false) => return Some("unauthorized_kind_attempt"),
            Some(true) => {}
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
            "`from` must be the role of this turn's capability (an agent may only speak as itself)"
        }
        "forged_qa_result_attempt" => "`qa.result` is written only by the runner's QA",
        "forged_runner_kind_attempt" => "this kind is written only by the runner",
        "unknown_role_attempt" => "the capability's role is not a role of this session's pipeline",
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

fn audit_draft(attempt: Option<&Map<String, Value>>, actor: &str, violation: &str) -> Draft {
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
        if let Some(value) = attempt.and_then(|attempt| attempt.get(field)) {
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
            "/session_id: does not match this turn's session ({session_id}); leave it out, crumb event fills it"
        ))),
    }
}

/// Provenance comes from the runner's binding (environment), which wins over what the agent claims
/// (it is informational: the engine decides nothing on it).
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

/// Print one line on stdout (never a panic: see `fs::stdout`).
fn print_line(value: &Value) {
    crate::fs::stdout::outln!("{value}");
}
