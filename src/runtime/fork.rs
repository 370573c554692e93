//! A fork: a new session whose transcript is a prefix of another's, up to and including one
//! event (ids kept; each line's `session_id` becomes the fork's; `session.start` records the
//! parent and the fork point, and the run configuration the fork is driven with), and whose
//! artifacts are the files as they were at that point — restored from the parent's artifact
//! store ([`super::artifact_store::tree::restore`]), never by copying what came later. A file
//! the store cannot give back (a session made before the store, whose file changed since) is
//! refused naming it, unless allowed.

use std::path::Path;

use serde_json::Value;

use super::run_config::RunConfig;
use crate::transcript::reader::each_event;
use crate::transcript::{Event, Kind};

/// Why a fork point or a fork cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ForkError {
    #[error("no event of the session has an id starting with `{0}`")]
    NoSuchEvent(String),
    #[error("`{reference}` is ambiguous: it starts {count} event ids (give more characters)")]
    Ambiguous { reference: String, count: usize },
    #[error("`{0}` is not an event id (Crockford base32, up to 26 characters)")]
    Malformed(String),
    #[error("the fork point must be at or after the session's `goal` (event {0} comes before it)")]
    BeforeGoal(String),
    #[error("cannot read the parent's transcript: {0}")]
    Read(String),
}

/// The index of the event `reference` (a full id or a unique prefix, any case) names in `ids`.
pub(crate) fn locate(ids: &[String], reference: &str) -> Result<usize, ForkError> {
    let wanted = reference.trim().to_ascii_uppercase();
    let crockford = |c: char| c.is_ascii_digit() || (c.is_ascii_uppercase() && !"ILOU".contains(c));
    if wanted.is_empty() || wanted.len() > 26 || !wanted.chars().all(crockford) {
        return Err(ForkError::Malformed(reference.chars().take(40).collect()));
    }
    if let Some(exact) = ids.iter().position(|id| *id == wanted) {
        return Ok(exact);
    }
    let matches: Vec<usize> = ids
        .iter()
        .enumerate()
        .filter(|(_, id)| id.starts_with(&wanted))
        .map(|(i, _)| i)
        .collect();
    match matches.as_slice() {
        [one] => Ok(*one),
        [] => Err(ForkError::NoSuchEvent(wanted)),
        _ => Err(ForkError::Ambiguous {
            reference: reference.to_owned(),
            count: matches.len(),
        }),
    }
}

/// The parent's events up to and including the one `at` names (the folding readers' rules).
pub(crate) fn prefix(transcript: &Path, at: &str) -> Result<Vec<Event>, ForkError> {
    let file = std::fs::File::open(transcript).map_err(|e| ForkError::Read(e.to_string()))?;
    let mut events = Vec::new();
    each_event(std::io::BufReader::new(file), |e| events.push(e), |_| {});
    let ids: Vec<String> = events.iter().map(|e| e.id.clone()).collect();
    let index = locate(&ids, at)?;
    let goal = events.iter().position(|e| e.kind == Kind::Goal);
    if goal.is_none_or(|goal| index < goal) {
        return Err(ForkError::BeforeGoal(events[index].id.clone()));
    }
    events.truncate(index + 1);
    Ok(events)
}

/// The prefix as the fork's transcript lines: `session_id` is the fork's, and the first
/// `session.start` carries `config` and `fork: {parent, at}`.
pub(crate) fn lines(
    events: &[Event],
    fork_id: &str,
    parent_id: &str,
    config: &RunConfig,
) -> Result<String, String> {
    let at = events.last().map(|e| e.id.clone()).unwrap_or_default();
    let mut out = String::new();
    let mut started = false;
    for event in events {
        let mut event = event.clone();
        fork_id.clone_into(&mut event.session_id);
        if event.kind == Kind::SessionStart && !started {
            started = true;
            let Ok(Value::Object(mut data)) = serde_json::to_value(config) else {
                return Err("cannot record the run configuration".into());
            };
            data.insert(
                "fork".into(),
                serde_json::json!({ "parent": parent_id, "at": at }),
            );
            event.data = Some(data);
        }
        out.push_str(&serde_json::to_string(&event).map_err(|e| e.to_string())?);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ids() -> Vec<String> {
        [
            "01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "01ARZ3NDEKTSV4RRFFQ69G5FAW",
            "01BX5ZZKBKACTAV9WEVGEMMVRZ",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn exact_prefix_ambiguous_and_malformed() {
        assert_eq!(locate(&ids(), "01ARZ3NDEKTSV4RRFFQ69G5FAW"), Ok(1));
        assert_eq!(locate(&ids(), "01bx"), Ok(2));
        assert!(matches!(
            locate(&ids(), "01ARZ"),
            Err(ForkError::Ambiguous { count: 2, .. })
        ));
        assert!(matches!(
            locate(&ids(), "01Z"),
            Err(ForkError::NoSuchEvent(_))
        ));
        assert!(matches!(
            locate(&ids(), "not-an-id"),
            Err(ForkError::Malformed(_))
        ));
        assert!(matches!(locate(&ids(), ""), Err(ForkError::Malformed(_))));
    }

    proptest! {
        /// Any reference resolves or is refused, never panics; a full id always finds itself.
        #[test]
        fn never_panics(reference in "\\PC{0,40}") {
            let _ = locate(&ids(), &reference);
        }

        #[test]
        fn a_full_id_finds_itself(index in 0usize..3, lower in any::<bool>()) {
            let id = ids()[index].clone();
            let reference = if lower { id.to_ascii_lowercase() } else { id };
            prop_assert_eq!(locate(&ids(), &reference), Ok(index));
        }
    }
}
