//! The pitches file of `crumb batch`: one pitch per line, or a YAML list whose entries are a
//! pitch or `{ pitch, bind }`. Bad input is a located error (`file:line: …`), never a panic.

use std::path::Path;

use serde::Deserialize;

/// The largest pitches file read (a batch is a list of one-liners, not a corpus).
pub(crate) const MAX_PITCHES_BYTES: u64 = 4 * 1024 * 1024;

/// One pitch of a batch and the per-pitch `--bind` values its `crumb run` gets.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
#[allow(
    clippy::struct_field_names,
    reason = "the keys of a batch file's entries"
)]
pub(crate) struct Pitch {
    pub pitch: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bind: Vec<String>,
    /// The pitch's inputs as the `--set NAME=VALUE` arguments its `crumb run` gets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
    /// This pitch's `--mock-scenario`, in place of the batch's: one pitch that misbehaves on
    /// purpose, to try how a batch (or a Kubernetes Job) handles it without an agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mock_scenario: Option<String>,
}

/// A pitches file that cannot be used, with where.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{origin}:{line}: {message}")]
pub(crate) struct PlanError {
    pub origin: String,
    pub line: usize,
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Full {
    pitch: String,
    #[serde(default)]
    bind: Vec<String>,
    /// Per-pitch inputs: a mapping of input names to scalar values.
    #[serde(default)]
    set: Option<serde_json::Value>,
    #[serde(default)]
    mock_scenario: Option<String>,
}

/// Read and parse the pitches file at `path`.
pub(crate) fn read(path: &Path) -> Result<Vec<Pitch>, PlanError> {
    let origin = path.display().to_string();
    let located = |message: String| PlanError {
        origin: origin.clone(),
        line: 0,
        message,
    };
    let bytes = crate::fs::bounded_read::read(path, MAX_PITCHES_BYTES)
        .map_err(|e| located(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| located("not valid UTF-8".into()))?;
    parse(&text, &origin)
}

/// Parse pitches from `text`; `origin` names the file in errors.
pub(crate) fn parse(text: &str, origin: &str) -> Result<Vec<Pitch>, PlanError> {
    let error = |line: usize, message: String| PlanError {
        origin: origin.to_owned(),
        line,
        message,
    };
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'));
    let pitches = if first.is_some_and(|l| l == "-" || l.starts_with("- ")) {
        yaml(text, origin)?
    } else {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|(i, l)| {
                if l.contains('\0') {
                    Err(error(i + 1, "a pitch cannot contain a NUL byte".into()))
                } else {
                    Ok((
                        i + 1,
                        Pitch {
                            pitch: l.trim().to_owned(),
                            bind: Vec::new(),
                            set: Vec::new(),
                            mock_scenario: None,
                        },
                    ))
                }
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    if pitches.is_empty() {
        return Err(error(1, "no pitches (one per line, or a YAML list)".into()));
    }
    for (line, pitch) in &pitches {
        if pitch.pitch.trim().is_empty() {
            return Err(error(*line, "empty pitch".into()));
        }
        if let Some(bad) = pitch.bind.iter().find(|b| !b.contains('=')) {
            return Err(error(
                *line,
                format!("bind `{bad}` is not ROLE=ADAPTER (as `crumb run --bind` takes)"),
            ));
        }
    }
    Ok(pitches.into_iter().map(|(_, p)| p).collect())
}

/// A YAML list; each entry's line is the line of its `- ` (counted in the text).
fn yaml(text: &str, origin: &str) -> Result<Vec<(usize, Pitch)>, PlanError> {
    // Read as plain values first: an entry is a bare pitch or a `{ pitch, bind, set }` map.
    let entries: Vec<serde_json::Value> = serde_saphyr::from_str(text).map_err(|e| PlanError {
        origin: origin.to_owned(),
        line: yaml_line(&e.to_string()).unwrap_or(1),
        message: format!("not a list of pitches: {}", first_line(&e.to_string())),
    })?;
    let starts: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| *l == "-" || l.starts_with("- "))
        .map(|(i, _)| i + 1)
        .collect();
    entries
        .into_iter()
        .enumerate()
        .map(|(i, entry)| {
            let line = starts.get(i).copied().unwrap_or(1);
            let located = |message: String| PlanError {
                origin: origin.to_owned(),
                line,
                message,
            };
            let text = |pitch: String| Pitch {
                pitch: pitch.trim().to_owned(),
                bind: Vec::new(),
                set: Vec::new(),
                mock_scenario: None,
            };
            let pitch = match entry {
                serde_json::Value::String(pitch) => text(pitch),
                serde_json::Value::Number(n) => text(n.to_string()),
                serde_json::Value::Bool(b) => text(b.to_string()),
                entry @ serde_json::Value::Object(_) => {
                    let full: Full = serde_json::from_value(entry).map_err(|e| {
                        located(format!(
                            "an entry is a pitch or `{{ pitch, bind, set, mock_scenario }}`: {e}"
                        ))
                    })?;
                    Pitch {
                        pitch: full.pitch.trim().to_owned(),
                        bind: full.bind,
                        set: set_args(full.set.as_ref()).map_err(located)?,
                        mock_scenario: full
                            .mock_scenario
                            .map(|name| {
                                name.parse::<crate::adapters::mock::scenario::Scenario>()
                                    .map(|s| s.as_str().to_owned())
                                    .map_err(|e| located(e.to_string()))
                            })
                            .transpose()?,
                    }
                }
                _ => {
                    return Err(located(
                        "an entry is a pitch or `{ pitch, bind, set, mock_scenario }`".to_owned(),
                    ));
                }
            };
            Ok((line, pitch))
        })
        .collect()
}

/// A `set:` mapping as `NAME=VALUE` texts; values must be scalars (typed later, by `crumb run`'s
/// own checks against the pipeline's declarations).
fn set_args(set: Option<&serde_json::Value>) -> Result<Vec<String>, String> {
    use serde_json::Value;
    let Some(set) = set else {
        return Ok(Vec::new());
    };
    let Value::Object(map) = set else {
        return Err(
            "`set:` is a mapping of input names to values, e.g. `set: { audience: kids }`".into(),
        );
    };
    map.iter()
        .map(|(name, value)| match value {
            Value::String(text) => Ok(format!("{name}={text}")),
            Value::Number(_) | Value::Bool(_) => Ok(format!("{name}={value}")),
            _ => Err(format!("`set: {name}` must be a string, number or boolean")),
        })
        .collect()
}

fn first_line(message: &str) -> &str {
    message.lines().next().unwrap_or(message)
}

/// The line number a YAML error message names (`line N`), if any.
fn yaml_line(message: &str) -> Option<usize> {
    let at = message.find("line ")?;
    message[at + 5..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lines_skip_blanks_and_comments() {
        let pitches = parse("# batch\nmatch-3\n\n  dodger  \n", "p.txt").unwrap();
        let texts: Vec<_> = pitches.iter().map(|p| p.pitch.as_str()).collect();
        assert_eq!(texts, ["match-3", "dodger"]);
    }

    #[test]
    fn yaml_entries_carry_bindings_and_inputs() {
        let pitches = parse(
            "- match-3\n- pitch: dodger\n  bind: [builder=mock]\n",
            "p.yaml",
        )
        .unwrap();
        assert_eq!(pitches[1].bind, ["builder=mock"]);
        let pitches = parse("- a\n- pitch: b\n  set: { x: 1, y: two }\n", "p.yaml").unwrap();
        assert_eq!(pitches[1].set, ["x=1", "y=two"]);
        let err = parse("- a\n- pitch: b\n  set: { x: [1] }\n", "p.yaml").unwrap_err();
        assert_eq!(err.line, 2, "{err}");
        assert!(err.message.contains("`set: x`"), "{err}");
        let err = parse("- pitch: b\n  bind: [nope]\n", "p.yaml").unwrap_err();
        assert!(
            err.to_string().starts_with("p.yaml:1: bind `nope`"),
            "{err}"
        );
    }

    #[test]
    fn an_entry_may_misbehave_on_purpose_with_a_known_scenario_only() {
        let pitches = parse("- a\n- pitch: b\n  mock_scenario: crash-always\n", "p.yaml").unwrap();
        assert_eq!(pitches[0].mock_scenario, None);
        assert_eq!(pitches[1].mock_scenario.as_deref(), Some("crash-always"));
        let err = parse("- a\n- pitch: b\n  mock_scenario: explode\n", "p.yaml").unwrap_err();
        assert_eq!(err.line, 2, "{err}");
        assert!(
            err.message.contains("unknown mock scenario `explode`"),
            "{err}"
        );
    }

    #[test]
    fn empty_files_are_refused() {
        assert!(parse("\n# only a comment\n", "p").is_err());
        assert!(parse("- \"  \"\n", "p").is_err());
    }

    proptest! {
        /// Any text gives pitches or a located error, never a panic; plain lines round-trip.
        #[test]
        fn never_panics(text in "\\PC{0,200}") {
            let _ = parse(&text, "p");
        }

        #[test]
        fn plain_lines_round_trip(lines in proptest::collection::vec("[a-zA-Z0-9][a-zA-Z0-9 ,.!-]{0,40}", 1..20)) {
            let text = lines.join("\n");
            let parsed = parse(&text, "p").unwrap();
            let want: Vec<String> = lines.iter().map(|l| l.trim().to_owned()).collect();
            let got: Vec<String> = parsed.into_iter().map(|p| p.pitch).collect();
            prop_assert_eq!(got, want);
        }
    }
}
