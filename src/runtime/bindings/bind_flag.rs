//! `--bind ROLE=ADAPTER[:MODEL]` and `--bind ROLE=command:'program args…'`.
//!
//! After `command:` comes an argv, split with shell quoting rules (`shell-words`) but never run
//! through a shell; its path elements are relative to the folder crumb was started in.

use std::path::Path;

use indexmap::IndexMap;

use super::BindingError;
use crate::adapters::AdapterKind;

/// One parsed `--bind`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bind {
    pub adapter: AdapterKind,
    pub model: Option<String>,
    /// For `command:…`, the split (and resolved) argv.
    pub command: Vec<String>,
}

/// `--bind` values, checked against the pipeline's roles. A later bind of the same role wins.
pub(crate) fn parse_binds(
    values: &[String],
    roles: &[String],
    cwd: Option<&Path>,
) -> Result<IndexMap<String, Bind>, BindingError> {
    let mut binds = IndexMap::new();
    for value in values {
        let malformed = || BindingError::MalformedBind {
            value: value.clone(),
        };
        let (role, target) = value.split_once('=').ok_or_else(malformed)?;
        let (name, rest) = match target.split_once(':') {
            Some((name, rest)) if !rest.trim().is_empty() => (name, Some(rest)),
            Some(_) => return Err(malformed()),
            None => (target, None),
        };
        if role.is_empty() || name.is_empty() {
            return Err(malformed());
        }
        if !roles.iter().any(|known| known == role) {
            return Err(BindingError::UnknownRole {
                value: value.clone(),
                role: role.to_owned(),
                known: roles.join(", "),
            });
        }
        let adapter = super::adapter(name, &format!("--bind {value}"))?;
        let bind = match rest {
            Some(argv) if adapter.adapter().runs_argv() => {
                let argv = shell_words::split(argv).map_err(|_| malformed())?;
                let command = match cwd {
                    Some(cwd) => crate::pipeline::argv::resolve(&argv, cwd),
                    None => argv,
                };
                Bind {
                    adapter,
                    model: None,
                    command,
                }
            }
            model => Bind {
                adapter,
                model: model.map(str::to_owned),
                command: Vec::new(),
            },
        };
        binds.insert(role.to_owned(), bind);
    }
    Ok(binds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles() -> Vec<String> {
        vec!["writer".into(), "reviewer".into()]
    }

    #[test]
    fn command_binds_are_split_without_a_shell_and_resolved() {
        let binds = parse_binds(
            &[r#"writer=command:python3 'agents/my writer.py' --flag "$HOME""#.into()],
            &roles(),
            Some(Path::new("/work")),
        )
        .unwrap();
        assert_eq!(
            binds["writer"].command,
            ["python3", "/work/agents/my writer.py", "--flag", "$HOME"]
        );
        let err = parse_binds(&["writer=command:'open".into()], &roles(), None).unwrap_err();
        assert!(err.to_string().contains("expected ROLE=ADAPTER"));
        let model = parse_binds(&["writer=codex:o3".into()], &roles(), None).unwrap();
        assert_eq!(model["writer"].model.as_deref(), Some("o3"));
    }

    proptest::proptest! {
        #[test]
        fn command_argv_parsing_never_panics(argv in "\\PC{0,80}") {
            let _ = parse_binds(&[format!("writer=command:{argv}")], &roles(), Some(Path::new("/w")));
        }
    }
}
