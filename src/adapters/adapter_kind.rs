//! What an [`AdapterKind`] (made by [`super::registry`]) says of itself: its name, how it is
//! read back from flags, config files, presets and `/swap` lines, and the defaults a binding
//! takes from it.
//!
//! Adapter names are validated when flags, config files, presets and `/swap` lines are read, so an
//! unknown name is a usage error before anything runs, never a crash at spawn time.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use super::registry::AdapterKind;

impl AdapterKind {
    /// The adapter a role runs on when nothing binds it: needs no agent CLI and no network.
    pub(crate) const FALLBACK: AdapterKind = AdapterKind::Mock;

    /// The name used in flags, presets, config files and events.
    pub(crate) fn as_str(self) -> &'static str {
        self.adapter().name()
    }

    /// The executable an agent adapter runs, `None` for adapters that are not an agent CLI.
    pub(crate) fn binary(self) -> Option<&'static str> {
        self.adapter().binary()
    }

    /// The harness recorded in events when a binding does not name one.
    pub fn default_harness(self) -> &'static str {
        self.as_str()
    }

    /// The model provider recorded in events when a binding does not name one.
    pub fn default_provider(self) -> &'static str {
        self.adapter().default_provider()
    }
}

impl fmt::Display for AdapterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for AdapterKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AdapterKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A name that is not one of [`AdapterKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown adapter `{name}` (known: {})", known_names())]
pub struct UnknownAdapter {
    pub name: String,
}

/// `mock, claude-code, …`: every adapter's name, in the order of [`AdapterKind::ALL`] (for
/// messages that list them).
pub(crate) fn known_names() -> String {
    AdapterKind::ALL
        .iter()
        .map(|kind| kind.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for AdapterKind {
    type Err = UnknownAdapter;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        super::registry::find(name).ok_or_else(|| UnknownAdapter {
            name: name.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &kind in AdapterKind::ALL {
            assert_eq!(kind.as_str().parse::<AdapterKind>(), Ok(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(serde_json::from_str::<AdapterKind>(&json).unwrap(), kind);
        }
    }

    #[test]
    fn unknown_names_are_rejected() {
        assert!("claude".parse::<AdapterKind>().is_err());
        assert!("".parse::<AdapterKind>().is_err());
        assert!("MOCK".parse::<AdapterKind>().is_err());
        assert_eq!(
            UnknownAdapter { name: "x".into() }.to_string(),
            "unknown adapter `x` (known: mock, claude-code, codex, gemini-cli, command)"
        );
    }
}
