//! `authority.json`: which kinds each role of a session may write, recorded once when the session
//! is created so `crumb event` (run for every event an agent writes, and benchmarked as a whole
//! process) learns it with one small read instead of compiling the pipeline.
//!
//! The rule itself lives in [`crate::pipeline::role_authority`]; this file only carries each role's
//! `produces` and, for people reading the folder, the common set. A session created before the
//! record existed has none: its frozen pipeline is compiled instead.

use std::path::Path;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::meta::write_atomically;
use super::session_dir::{META_FILE, SessionDir};
use crate::pipeline::role_authority::COMMON;
use crate::pipeline::table::TransitionTable;
use crate::transcript::Kind;

/// The record's file name, next to `meta.json`.
pub(crate) const AUTHORITY_FILE: &str = "authority.json";

/// Each role's `produces`, in declaration order, and the kinds every role may write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AuthorityRecord {
    pub roles: IndexMap<String, Vec<String>>,
    pub common: Vec<String>,
    /// The pipeline's own kind names (declared under `kinds:`, outside the vocabulary); any other
    /// name outside the vocabulary is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared_kinds: Vec<String>,
    /// Kind → the JSON Schema its `data` must satisfy (the pipeline's `kinds.<kind>.schema`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub schemas: std::collections::BTreeMap<String, serde_json::Value>,
    /// The artifact store's cap in MiB (`limits.max_store_mb`); absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_cap_mb: Option<u64>,
}

/// The record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum AuthorityError {
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

impl AuthorityRecord {
    /// The record of a compiled pipeline.
    pub(crate) fn of(table: &TransitionTable) -> Self {
        AuthorityRecord {
            roles: table
                .roles
                .iter()
                .map(|role| (role.id.clone(), role.produces.clone()))
                .collect(),
            common: COMMON.iter().map(|k| k.as_str().to_owned()).collect(),
            declared_kinds: table.declared_kinds.clone(),
            schemas: table.kind_schemas.clone(),
            store_cap_mb: Some(table.limits.max_store_mb),
        }
    }

    /// Why `data` breaks the declared schema of `kind` (`None` when it holds, or none is declared).
    pub(crate) fn data_violation(&self, kind: &str, data: &serde_json::Value) -> Option<String> {
        let schema = self.schemas.get(kind)?;
        let validator = match jsonschema::validator_for(schema) {
            Ok(validator) => validator,
            Err(e) => return Some(format!("the declared schema of `{kind}` is invalid: {e}")),
        };
        let errors: Vec<String> = validator
            .iter_errors(data)
            .take(8)
            .map(|e| format!("/data{}: {e}", e.instance_path()))
            .collect();
        (!errors.is_empty()).then(|| errors.join("; "))
    }

    /// Write the record into `session` atomically (a temporary file renamed over it).
    pub(crate) fn write(&self, session: &Path) -> Result<(), AuthorityError> {
        let path = session.join(AUTHORITY_FILE);
        let err = |source| AuthorityError::Write {
            path: path.display().to_string(),
            source,
        };
        let mut text = serde_json::to_vec_pretty(self).expect("the record serialises");
        text.push(b'\n');
        write_atomically(&path, &text).map_err(err)
    }

    /// The authority of the session folder `session`: its record, else (a session older than
    /// the record) its frozen pipeline compiled. `None` when `session` is not a session folder at
    /// all (a bare transcript): then only the runner-owned rules apply.
    pub(crate) fn load(session: &Path) -> Result<Option<Self>, AuthorityError> {
        let path = session.join(AUTHORITY_FILE);
        let read_err = |message: String| AuthorityError::Read {
            path: path.display().to_string(),
            message,
        };
        match std::fs::read(&path) {
            Ok(bytes) => {
                return serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| read_err(e.to_string()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(read_err(e.to_string())),
        }
        if !session.join(META_FILE).is_file() {
            return Ok(None);
        }
        let table = SessionDir::open(session)
            .map_err(|e| read_err(e.to_string()))?
            .table()
            .map_err(|e| read_err(e.to_string()))?;
        Ok(Some(Self::of(&table)))
    }

    /// Whether a session with this record accepts an event of `kind` at all: every vocabulary
    /// kind, and the pipeline's declared names.
    pub(crate) fn accepts_kind(&self, kind: Kind) -> bool {
        match kind {
            Kind::Declared(name) => self.declared_kinds.iter().any(|k| k == name.as_str()),
            _ => true,
        }
    }

    /// Whether `actor` may write `kind`: `None` when `actor` is not a role of the session.
    pub(crate) fn may_write(&self, actor: &str, kind: Kind) -> Option<bool> {
        self.roles
            .get(actor)
            .map(|produces| crate::pipeline::role_authority::may_write(produces, kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_round_trips_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let record = AuthorityRecord {
            roles: [("builder".to_owned(), vec!["build".to_owned()])]
                .into_iter()
                .collect(),
            common: vec!["note".to_owned()],
            declared_kinds: vec!["research.note".to_owned()],
            schemas: [(
                "build".to_owned(),
                serde_json::json!({"type": "object", "required": ["words"]}),
            )]
            .into_iter()
            .collect(),
            store_cap_mb: Some(8),
        };
        record.write(dir.path()).unwrap();
        assert_eq!(
            AuthorityRecord::load(dir.path()).unwrap(),
            Some(record.clone())
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(record.may_write("builder", Kind::JudgeScore), Some(false));
        assert_eq!(record.may_write("stranger", Kind::Note), None);
        assert!(record.accepts_kind("research.note".parse().unwrap()));
        assert!(!record.accepts_kind("research.memo".parse().unwrap()));
        assert!(record.accepts_kind(Kind::Build));
    }

    #[test]
    fn a_folder_that_is_not_a_session_has_no_authority() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(AuthorityRecord::load(dir.path()).unwrap(), None);
    }

    /// Every kind of `table` a string of `text` names, inside backticks or double quotes (a
    /// vocabulary kind, or a name the pipeline declares).
    fn kinds_named(text: &str, table: &TransitionTable) -> Vec<Kind> {
        let mut kinds = Vec::new();
        for quote in ['`', '"'] {
            for (n, piece) in text.split(quote).enumerate() {
                if n % 2 == 1
                    && let Ok(kind) = piece.parse::<Kind>()
                    && table.accepts_kind(kind)
                {
                    kinds.push(kind);
                }
            }
        }
        kinds
    }

    /// The event-protocol partial tells every role of every shipped pipeline exactly what the
    /// firewall lets it write: each kind it names is one the role may write, and it names every
    /// common kind and every kind the role produces.
    #[test]
    fn the_event_protocol_names_only_kinds_the_firewall_accepts() {
        use crate::pipeline::prompt_render::template_value;
        use crate::runtime::prompt::{PromptInputs, context};
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let partial =
            std::fs::read_to_string(root.join("templates/_event_protocol.md.j2")).unwrap();
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.add_template("protocol", &partial).unwrap();
        let mut rendered_roles = 0;
        for entry in std::fs::read_dir(root.join("pipelines")).unwrap() {
            let file = entry.unwrap().path();
            if file.extension().and_then(|e| e.to_str()) != Some("yaml") {
                continue;
            }
            let table = crate::pipeline::compile_file(
                &file,
                &crate::pipeline::CompileOptions::default(),
                &crate::fs::real_files(),
            )
            .table
            .unwrap_or_else(|| panic!("{} compiles", file.display()));
            let record = AuthorityRecord::of(&table);
            for role in &table.roles {
                let inputs = PromptInputs {
                    goal: "g",
                    session: serde_json::json!({"id": "S", "dir": "/s", "artifacts_dir": "/s/artifacts", "transcript_path": "/s/t.jsonl"}),
                    spec: serde_json::Value::Null,
                    build: serde_json::Value::Null,
                    qa: serde_json::Value::Null,
                    verdict: serde_json::Value::Null,
                    feedback: None,
                    interventions: &[],
                    attempt: 1,
                    outputs: serde_json::json!({"by_kind": {}, "by_role": {}}),
                    goal_truncated: false,
                    inputs: serde_json::Value::Null,
                };
                let text = env
                    .get_template("protocol")
                    .unwrap()
                    .render(template_value(&context(&table, role, &inputs)))
                    .unwrap();
                let named = kinds_named(&text, &table);
                for kind in &named {
                    assert_eq!(
                        record.may_write(&role.id, *kind),
                        Some(true),
                        "{}: the protocol offers `{kind}` to `{}`",
                        file.display(),
                        role.id
                    );
                }
                let produced = role.produces.iter().filter_map(|k| k.parse::<Kind>().ok());
                for kind in COMMON.into_iter().chain(produced) {
                    assert!(
                        named.contains(&kind),
                        "{}: `{kind}` not mentioned for `{}`",
                        file.display(),
                        role.id
                    );
                }
                rendered_roles += 1;
            }
        }
        assert!(rendered_roles >= 5, "rendered {rendered_roles} roles");
    }
}
