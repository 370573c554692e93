//! Checks the type system cannot express: ranges, id and hash formats, timestamps. Each problem is
//! reported with the JSON path of the offending value, so an agent can fix its event.

use serde::Deserialize;

use super::event::{ArtifactRef, Data, Draft, Event};
use super::event_kind::Kind;
use super::event_metadata::Metadata;
use super::scores::{DIMENSION_MAX, Scores};
use super::violation::{Violation, Violations};

/// Longest accepted `from` / `to` actor name.
const ACTOR_MAX_LEN: usize = 64;

/// Whether `s` is a canonical ULID (26 Crockford base32 characters, upper case).
pub fn is_ulid(s: &str) -> bool {
    s.len() == 26
        && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'A'..=b'H' | b'J' | b'K' | b'M' | b'N' | b'P'..=b'T' | b'V'..=b'Z'))
        // The first character encodes the top 3 bits of a 48-bit timestamp.
        && s.as_bytes()[0] <= b'7'
}

/// Whether `s` is an actor name: a letter, then letters, digits, `-` or `_`.
pub fn is_actor_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    s.len() <= ACTOR_MAX_LEN
        && bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Problems of a whole event (as read or about to be written).
pub fn check_event(event: &Event) -> Vec<Violation> {
    let mut out = Vec::new();
    if !is_ulid(&event.id) {
        out.push(violation(
            "/id",
            "must be a ULID (26 upper-case Crockford base32 characters)",
        ));
    }
    if chrono::DateTime::parse_from_rfc3339(&event.ts).is_err() {
        out.push(violation(
            "/ts",
            "must be an RFC 3339 timestamp with an offset, e.g. 2026-05-01T10:00:00.000Z",
        ));
    }
    if event.session_id.is_empty() {
        out.push(violation("/session_id", "must not be empty"));
    }
    check_common(
        &mut out,
        &event.from,
        event.to.as_deref(),
        &event.artifacts,
        event.scores.as_deref(),
        event.metadata.as_deref(),
    );
    check_payload(
        &mut out,
        event.kind,
        event.data.as_ref(),
        event.scores.as_deref(),
    );
    out
}

/// Problems of a draft (everything but `id`, `ts` and `session_id`, which the writer stamps).
pub fn check_draft(draft: &Draft) -> Vec<Violation> {
    let mut out = Vec::new();
    check_common(
        &mut out,
        &draft.from,
        draft.to.as_deref(),
        &draft.artifacts,
        draft.scores.as_ref(),
        draft.metadata.as_ref(),
    );
    check_payload(
        &mut out,
        draft.kind,
        draft.data.as_ref(),
        draft.scores.as_ref(),
    );
    out
}

/// Kind-specific payloads the engine relies on, checked when written rather than guessed when read
/// (so a `qa.result` without an exit code or a `judge.score` without scores never gets a made-up
/// value).
fn check_payload(
    out: &mut Vec<Violation>,
    kind: Kind,
    data: Option<&Data>,
    scores: Option<&Scores>,
) {
    match kind {
        Kind::JudgeScore | Kind::VerifyResult if scores.is_none() => {
            out.push(violation(
                "/scores",
                format!("a `{kind}` event needs `scores` (D1–D6, verdict, deviation)"),
            ));
        }
        Kind::QaResult => {
            let exit_code = data.and_then(|d| d.get("exec_exit_code"));
            if !exit_code.is_some_and(serde_json::Value::is_i64) {
                out.push(violation(
                    "/data/exec_exit_code",
                    "a `qa.result` needs the integer exit code of the run",
                ));
            }
        }
        _ => {}
    }
}

fn check_common(
    out: &mut Vec<Violation>,
    from: &str,
    to: Option<&str>,
    artifacts: &[ArtifactRef],
    scores: Option<&Scores>,
    metadata: Option<&Metadata>,
) {
    if !is_actor_name(from) {
        out.push(violation(
            "/from",
            "must be a role id or user|system|coordinator|validator (a letter, then letters, digits, - or _; at most 64)",
        ));
    }
    if let Some(to) = to
        && to != "*"
        && !is_actor_name(to)
    {
        out.push(violation(
            "/to",
            "must be a role id, a reserved actor, or \"*\" for everyone",
        ));
    }
    for (i, artifact) in artifacts.iter().enumerate() {
        if artifact.path.is_empty() {
            out.push(violation(
                format!("/artifacts/{i}/path"),
                "must not be empty",
            ));
        }
        if !is_sha256_hex(&artifact.sha256) {
            out.push(violation(
                format!("/artifacts/{i}/sha256"),
                "must be 64 lower-case hex characters",
            ));
        }
    }
    if let Some(scores) = scores {
        check_scores(out, scores);
    }
    if let Some(metadata) = metadata {
        check_metadata(out, metadata);
    }
}

fn check_scores(out: &mut Vec<Violation>, scores: &Scores) {
    for (name, dimension) in scores.dimensions() {
        if let Some(dimension) = dimension
            && !(0.0..=DIMENSION_MAX).contains(&dimension.score)
        {
            out.push(violation(
                format!("/scores/{name}/score"),
                format!(
                    "{} is out of range: a dimension scores 0 to 5",
                    dimension.score
                ),
            ));
        }
    }
    for (name, dimension) in &scores.dims {
        if !(dimension.score.is_finite() && dimension.score >= 0.0) {
            out.push(violation(
                format!("/scores/dims/{name}/score"),
                format!(
                    "{} is out of range: a dimension scores 0 or more",
                    dimension.score
                ),
            ));
        }
    }
    // The rubric (and so the highest aggregate) is the pipeline's; the engine recomputes it.
    if let Some(aggregate) = scores.aggregate
        && !(aggregate.is_finite() && aggregate >= 0.0)
    {
        out.push(violation(
            "/scores/aggregate",
            format!("{aggregate} is out of range: the aggregate is 0 or more"),
        ));
    }
}

fn check_metadata(out: &mut Vec<Violation>, metadata: &Metadata) {
    for (field, value) in [
        ("ack_for", &metadata.ack_for),
        ("in_reply_to", &metadata.in_reply_to),
    ] {
        if let Some(value) = value
            && !is_ulid(value)
        {
            out.push(violation(format!("/metadata/{field}"), "must be a ULID"));
        }
    }
    for (i, id) in metadata.consumed_intervene_ids.iter().enumerate() {
        if !is_ulid(id) {
            out.push(violation(
                format!("/metadata/consumed_intervene_ids/{i}"),
                "must be a ULID",
            ));
        }
    }
    if let Some(cost) = metadata.cost_usd
        && !(cost.is_finite() && cost >= 0.0)
    {
        out.push(violation(
            "/metadata/cost_usd",
            "must be a non-negative number",
        ));
    }
}

fn violation(path: impl Into<String>, message: impl Into<String>) -> Violation {
    Violation {
        path: path.into(),
        message: message.into(),
    }
}

/// Turn a JSON value into a checked [`Draft`], reporting every problem with its JSON path.
///
/// Structural errors (unknown field, wrong type, value not in an enum) are located by validating
/// against the generated draft schema; that is only done on failure, so the happy path stays cheap.
pub fn parse_draft(value: &serde_json::Value) -> Result<Draft, Violations> {
    match Draft::deserialize(value) {
        Ok(draft) => {
            let problems = check_draft(&draft);
            if problems.is_empty() {
                Ok(draft)
            } else {
                Err(Violations(problems))
            }
        }
        Err(serde_error) => {
            let message = serde_error.to_string();
            let mut problems =
                super::schema::locate(&super::schema::draft_schema(), value, &message);
            if problems.is_empty() {
                problems.push(violation("", message));
            }
            Err(Violations(problems))
        }
    }
}
