//! Ambient detection: which agent CLI crumb was launched from, else which one is installed.
//!
//! Markers, first match wins:
//! 1. `CRUMB_AMBIENT_ADAPTER=<adapter>` (explicit override; an unknown name is an error);
//! 2. a variable an adapter names as its ambient marker (its `ambient_markers`, such as
//!    `CLAUDECODE` for `claude-code` or `GEMINI_CLI` for `gemini-cli`), adapters in registry
//!    order;
//! 3. the first adapter's binary (`claude`, `codex`, `gemini`, in registry order) found as an
//!    executable on `PATH`.
//!
//! The environment is passed in, so tests and callers decide exactly what is visible.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::adapters::adapter::VarSource;
use crate::adapters::{AdapterKind, UnknownAdapter};

/// Environment variable naming the ambient adapter explicitly.
pub(crate) const AMBIENT_ENV: &str = "CRUMB_AMBIENT_ADAPTER";

/// A snapshot of the environment variables and `PATH` that binding resolution may look at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Environment {
    vars: BTreeMap<String, OsString>,
}

impl Environment {
    /// The current process environment.
    pub(crate) fn from_process() -> Self {
        Environment {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
                .collect(),
        }
    }

    /// An environment holding exactly `vars`.
    #[cfg(test)]
    pub(crate) fn from_pairs<K: Into<String>, V: Into<OsString>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Environment {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// A set, non-empty variable.
    pub(crate) fn get(&self, name: &str) -> Option<&OsString> {
        self.vars.get(name).filter(|value| !value.is_empty())
    }

    /// The executable `name` on this environment's `PATH`, if any.
    pub(crate) fn which(&self, name: &str) -> Option<PathBuf> {
        let path = self.get("PATH")?;
        std::env::split_paths(path)
            .map(|dir| dir.join(name))
            .find(|candidate| is_executable(candidate))
    }
}

impl VarSource for Environment {
    fn var(&self, name: &str) -> Option<&OsString> {
        self.get(name)
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// The detected ambient adapter and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ambient {
    pub adapter: AdapterKind,
    /// Human reason, e.g. `CLAUDECODE is set` or `claude found on PATH`.
    pub reason: String,
}

/// Detect the ambient adapter. `Ok(None)`: no agent CLI around (crumb falls back to `mock`).
pub(crate) fn detect(env: &Environment) -> Result<Option<Ambient>, UnknownAdapter> {
    if let Some(name) = env.get(AMBIENT_ENV) {
        let adapter = name.to_string_lossy().parse::<AdapterKind>()?;
        return Ok(Some(Ambient {
            adapter,
            reason: format!("{AMBIENT_ENV}={adapter}"),
        }));
    }
    for &adapter in AdapterKind::ALL {
        let markers = adapter.adapter().ambient_markers();
        if let Some(name) = markers.iter().find(|name| env.get(name).is_some()) {
            return Ok(Some(Ambient {
                adapter,
                reason: format!("launched from {adapter} ({name} is set)"),
            }));
        }
    }
    for &adapter in AdapterKind::ALL {
        let Some(binary) = adapter.binary() else {
            continue;
        };
        if env.which(binary).is_some() {
            return Ok(Some(Ambient {
                adapter,
                reason: format!("{binary} found on PATH"),
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_bin(dir: &Path, name: &str, executable: bool) {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        let mode = if executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn markers_beat_path_and_the_override_beats_markers() {
        let env = Environment::from_pairs([("CLAUDECODE", "1"), ("GEMINI_CLI", "1")]);
        assert_eq!(
            detect(&env).unwrap().unwrap().adapter,
            AdapterKind::ClaudeCode
        );
        let env = Environment::from_pairs([("GEMINI_CLI", "1")]);
        assert_eq!(
            detect(&env).unwrap().unwrap().adapter,
            AdapterKind::GeminiCli
        );
        let env = Environment::from_pairs([("CODEX_SESSION_ID", "x"), (AMBIENT_ENV, "mock")]);
        assert_eq!(detect(&env).unwrap().unwrap().adapter, AdapterKind::Mock);
        let env = Environment::from_pairs([(AMBIENT_ENV, "nope")]);
        assert!(detect(&env).is_err());
        // Empty markers do not count.
        let env = Environment::from_pairs([("CLAUDECODE", "")]);
        assert_eq!(detect(&env).unwrap(), None);
    }

    #[test]
    fn path_order_is_claude_codex_gemini_and_needs_the_exec_bit() {
        let dir = tempfile::tempdir().unwrap();
        fake_bin(dir.path(), "gemini", true);
        fake_bin(dir.path(), "claude", false);
        let env = Environment::from_pairs([("PATH", dir.path().as_os_str().to_owned())]);
        let found = detect(&env).unwrap().unwrap();
        assert_eq!(found.adapter, AdapterKind::GeminiCli);
        assert_eq!(found.reason, "gemini found on PATH");
        fake_bin(dir.path(), "codex", true);
        assert_eq!(detect(&env).unwrap().unwrap().adapter, AdapterKind::Codex);
        assert_eq!(detect(&Environment::default()).unwrap(), None);
    }
}
