//! The binding files: `.crumb/config.yaml` (project config) and `presets/<name>.yaml`.
//!
//! `.crumb/config.yaml` has the shape of a preset's bindings plus the preset to start from:
//!
//! ```yaml
//! preset: cross            # optional; `--preset` on the command line replaces it
//! default: { adapter: claude-code, model: sonnet }
//! roles:
//!   verifier: { adapter: codex, effort: high }
//! ```

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;

use crate::pipeline::preset::{Binding, Preset};

/// Largest binding file read (they are a few lines; anything bigger is a mistake).
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// `.crumb/config.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProjectConfig {
    /// Preset to use when `--preset` is not given.
    #[serde(default)]
    pub preset: Option<String>,
    /// Binding for every role the config does not name.
    #[serde(default)]
    pub default: Option<Binding>,
    /// Bindings per role id.
    #[serde(default)]
    pub roles: IndexMap<String, Binding>,
}

/// A binding file could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is larger than {MAX_FILE_BYTES} bytes")]
    TooLarge { path: String },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("unknown preset `{name}` (looked in: {searched})")]
    UnknownPreset { name: String, searched: String },
}

fn read_yaml<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, FileError> {
    let shown = || path.display().to_string();
    let bytes = crate::fs::bounded_read::read(path, MAX_FILE_BYTES).map_err(|err| match err {
        crumb_core::pipeline::source::ReadError::TooLarge { .. } => {
            FileError::TooLarge { path: shown() }
        }
        crumb_core::pipeline::source::ReadError::Io(source) => FileError::Read {
            path: shown(),
            source,
        },
        other @ crumb_core::pipeline::source::ReadError::NotRegular(_) => FileError::Read {
            path: shown(),
            source: std::io::Error::other(other.to_string()),
        },
    })?;
    let text = String::from_utf8(bytes).map_err(|err| FileError::Parse {
        path: shown(),
        message: format!("not valid UTF-8 (byte {})", err.utf8_error().valid_up_to()),
    })?;
    serde_saphyr::from_str(&text).map_err(|err| FileError::Parse {
        path: shown(),
        message: err.to_string(),
    })
}

/// Read `.crumb/config.yaml` at `path`; a missing file is an empty config.
pub(crate) fn read_config(path: &Path) -> Result<ProjectConfig, FileError> {
    if !path.exists() {
        return Ok(ProjectConfig::default());
    }
    read_yaml(path)
}

/// Find and read a preset: `name` may be a path to a YAML file, else `<dir>/<name>.yaml` in the
/// first of `dirs` that has it.
pub(crate) fn load_preset(name: &str, dirs: &[PathBuf]) -> Result<(Preset, PathBuf), FileError> {
    let direct = Path::new(name);
    let yaml_extension = direct
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("yaml") || ext.eq_ignore_ascii_case("yml"));
    if name.contains('/') || yaml_extension {
        return Ok((read_yaml(direct)?, direct.to_path_buf()));
    }
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        for dir in dirs {
            let candidate = dir.join(format!("{name}.yaml"));
            // `exists`, not `is_file`: a FIFO or folder in its place is an error that says so.
            if candidate.exists() {
                return Ok((read_yaml(&candidate)?, candidate));
            }
        }
    }
    let searched = dirs
        .iter()
        .map(|dir| dir.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Err(FileError::UnknownPreset {
        name: name.chars().take(64).collect(),
        searched,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_shape_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        assert_eq!(read_config(&path).unwrap(), ProjectConfig::default());
        std::fs::write(
            &path,
            "preset: cross\nroles:\n  builder: { adapter: codex, effort: low }\n",
        )
        .unwrap();
        let config = read_config(&path).unwrap();
        assert_eq!(config.preset.as_deref(), Some("cross"));
        assert_eq!(config.roles["builder"].adapter, "codex");
        std::fs::write(&path, "presets: cross\n").unwrap();
        assert!(matches!(read_config(&path), Err(FileError::Parse { .. })));
        std::fs::write(&path, "roles: [1, 2\n").unwrap();
        assert!(matches!(read_config(&path), Err(FileError::Parse { .. })));
    }

    #[test]
    fn presets_are_found_by_name_or_path() {
        let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("presets");
        let (preset, path) = load_preset("cross", std::slice::from_ref(&shipped)).unwrap();
        assert_eq!(preset.name, "cross");
        assert_eq!(path, shipped.join("cross.yaml"));
        let (by_path, _) = load_preset(shipped.join("mock.yaml").to_str().unwrap(), &[]).unwrap();
        assert_eq!(by_path.name, "mock");
        for bad in ["nope", "../etc/passwd", ""] {
            assert!(
                load_preset(bad, std::slice::from_ref(&shipped)).is_err(),
                "{bad}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn reading_any_config_never_panics(text in "[a-z:{}\\[\\], \n-]{0,200}") {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("config.yaml");
            std::fs::write(&path, &text).unwrap();
            let _ = read_config(&path);
        }
    }
}
