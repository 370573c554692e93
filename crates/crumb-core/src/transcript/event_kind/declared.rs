//! The names a pipeline may give its own artifact kinds (`kinds: { research.note: {} }`).
//!
//! A declared name is held inline (no allocation), so [`super::Kind`] stays `Copy` and replay's
//! line parser costs the same for every kind. Whether a session accepts a declared name is its
//! pipeline's business (the readers and `crumb event` check it); this type only fixes the spelling
//! and keeps declared names apart from the vocabulary and the engine's reserved namespaces.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Serialize, Serializer};

/// Longest declared kind name, in bytes.
pub const MAX_LEN: usize = 48;

/// First segments that belong to the engine's core or the runner (`user.*` are a person's
/// commands, `session.*`, `agent.*` and `tool.*` the runner's bookkeeping, `qa.*` and `judge.*`
/// the core's results), so no pipeline can declare a name that looks like one of them.
pub const RESERVED_NAMESPACES: &[&str] = &["session", "agent", "user", "tool", "qa", "judge"];

/// The pattern a declared name follows: lower-case words (letters, digits, `_`, `-`, starting
/// with a letter) joined by `.`.
pub const PATTERN: &str = r"^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$";

/// A pipeline-declared kind name, stored inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeclaredKind {
    len: u8,
    bytes: [u8; MAX_LEN],
}

/// Why a name cannot be a declared kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KindNameError {
    #[error("a kind name is at most {MAX_LEN} bytes")]
    TooLong,
    #[error("a kind name is lower-case words (letters, digits, `_`, `-`) joined by `.`")]
    Spelling,
    #[error("`{0}` is a kind of the transcript vocabulary")]
    Vocabulary(String),
    #[error("`{0}.*` is reserved for the engine and the runner")]
    Reserved(&'static str),
}

impl DeclaredKind {
    /// `name` as a declared kind, if it is spelt like one, is not in the vocabulary and is not
    /// in a reserved namespace.
    pub fn new(name: &str) -> Result<Self, KindNameError> {
        if name.len() > MAX_LEN {
            return Err(KindNameError::TooLong);
        }
        if !well_formed(name) {
            return Err(KindNameError::Spelling);
        }
        if super::Kind::vocabulary(name).is_some() {
            return Err(KindNameError::Vocabulary(name.to_owned()));
        }
        let first = name.split('.').next().unwrap_or(name);
        if name.contains('.')
            && let Some(reserved) = RESERVED_NAMESPACES.iter().find(|r| **r == first)
        {
            return Err(KindNameError::Reserved(reserved));
        }
        let mut bytes = [0; MAX_LEN];
        bytes[..name.len()].copy_from_slice(name.as_bytes());
        Ok(DeclaredKind {
            len: u8::try_from(name.len()).map_err(|_| KindNameError::TooLong)?,
            bytes,
        })
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever stored (see `well_formed`).
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

/// Whether `name` follows [`PATTERN`].
fn well_formed(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|segment| {
            let mut chars = segment.chars();
            chars.next().is_some_and(|c| c.is_ascii_lowercase())
                && chars
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        })
}

impl PartialOrd for DeclaredKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DeclaredKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for DeclaredKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for DeclaredKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DeclaredKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl JsonSchema for DeclaredKind {
    fn schema_name() -> Cow<'static, str> {
        "DeclaredKind".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let reserved = format!("^({})\\.", RESERVED_NAMESPACES.join("|"));
        json_schema!({
            "description": "A kind the session's pipeline declares under `kinds:`: lower-case words joined by `.`, outside the vocabulary and the reserved namespaces.",
            "type": "string",
            "pattern": PATTERN,
            "maxLength": MAX_LEN,
            "not": { "anyOf": [
                { "enum": super::VOCABULARY },
                { "pattern": reserved },
            ] },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Kind;
    use proptest::prelude::*;

    #[test]
    fn names_outside_the_vocabulary_and_the_reserved_namespaces_are_declarable() {
        for name in [
            "research.note",
            "outline",
            "review.comment",
            "draft-2",
            "a.b_c.d9",
        ] {
            let kind = DeclaredKind::new(name).unwrap();
            assert_eq!(kind.as_str(), name);
            assert_eq!(name.parse::<Kind>(), Ok(Kind::Declared(kind)));
        }
        assert_eq!(
            DeclaredKind::new("build"),
            Err(KindNameError::Vocabulary("build".into()))
        );
        assert_eq!(
            DeclaredKind::new("user.wish"),
            Err(KindNameError::Reserved("user"))
        );
        assert_eq!(
            DeclaredKind::new("qa.extra"),
            Err(KindNameError::Reserved("qa"))
        );
        for bad in ["", "Note", "a..b", ".a", "a.", "1a", "a b", "é", "a.1b"] {
            assert_eq!(
                DeclaredKind::new(bad),
                Err(KindNameError::Spelling),
                "{bad:?}"
            );
        }
        assert_eq!(
            DeclaredKind::new(&"a".repeat(MAX_LEN + 1)),
            Err(KindNameError::TooLong)
        );
        assert!(DeclaredKind::new(&"a".repeat(MAX_LEN)).is_ok());
        // A vocabulary kind always parses as itself, never as a declared one.
        assert_eq!("build".parse::<Kind>(), Ok(Kind::Build));
    }

    proptest! {
        /// Any string: either it is refused, or it round-trips exactly, and the result agrees
        /// with the published pattern.
        #[test]
        fn any_name_round_trips_or_is_refused(name in "[a-z._0-9A-Z -]{0,60}") {
            let pattern_ok = name.len() <= MAX_LEN && well_formed(&name);
            match DeclaredKind::new(&name) {
                Ok(kind) => {
                    prop_assert_eq!(kind.as_str(), name.as_str());
                    prop_assert!(pattern_ok);
                    prop_assert_eq!(serde_json::to_value(Kind::Declared(kind)).unwrap(), serde_json::json!(name));
                }
                Err(KindNameError::Vocabulary(_) | KindNameError::Reserved(_)) => prop_assert!(pattern_ok),
                Err(_) => prop_assert!(!pattern_ok),
            }
        }
    }
}
