//! The script of a dry run: what the world answers, turn by turn, instead of agents, QA and a
//! person. `FAIL:Critical,FAIL:Important,PASS` — verdicts for the judging turns in order
//! (severity `Important` when left out); `QA:FAIL` / `QA:ERROR` for the next QA run (it passes
//! when the script says nothing); `APPROVE`, `VETO`, `REDO` for a person who is asked;
//! `WRITE:<kind>` for the next turn of a role that produces `<kind>` (a turn writes the first of
//! its `produces` otherwise).

use std::fmt;
use std::str::FromStr;

use crate::transcript::Kind;
use crate::vocab::{Severity, Verdict};

/// One entry of a script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Verdict(Verdict, Severity),
    Qa(QaAnswer),
    Approve,
    Veto,
    Redo,
    /// The next turn of a role producing this kind writes it.
    Write(Kind),
}

/// What a scripted QA run finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QaAnswer {
    Pass,
    Fail,
    Error,
}

/// A script entry that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "script entry {position} `{entry}`: {why} (expected PASS, PARTIAL, FAIL or REJECT with an optional :Critical|:Important|:Minor, QA:PASS|QA:FAIL|QA:ERROR, APPROVE, VETO, REDO or WRITE:<kind>)"
)]
pub struct ScriptError {
    /// 1-based.
    pub position: usize,
    pub entry: String,
    pub why: String,
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Verdict(verdict, severity) => write!(f, "{verdict}:{severity}"),
            Entry::Qa(QaAnswer::Pass) => f.write_str("QA:PASS"),
            Entry::Qa(QaAnswer::Fail) => f.write_str("QA:FAIL"),
            Entry::Qa(QaAnswer::Error) => f.write_str("QA:ERROR"),
            Entry::Approve => f.write_str("APPROVE"),
            Entry::Veto => f.write_str("VETO"),
            Entry::Redo => f.write_str("REDO"),
            Entry::Write(kind) => write!(f, "WRITE:{kind}"),
        }
    }
}

impl FromStr for Entry {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let (head, tail) = match text.split_once(':') {
            Some((head, tail)) => (head.trim(), Some(tail.trim())),
            None => (text, None),
        };
        let word = |s: &str| s.to_ascii_uppercase();
        match (word(head).as_str(), tail) {
            ("APPROVE", None) => Ok(Entry::Approve),
            ("VETO", None) => Ok(Entry::Veto),
            ("REDO", None) => Ok(Entry::Redo),
            ("WRITE", Some(kind)) => kind
                .parse()
                .map(Entry::Write)
                .map_err(|_| format!("`{kind}` is not an event kind")),
            ("QA", Some(answer)) => match word(answer).as_str() {
                "PASS" => Ok(Entry::Qa(QaAnswer::Pass)),
                "FAIL" => Ok(Entry::Qa(QaAnswer::Fail)),
                "ERROR" => Ok(Entry::Qa(QaAnswer::Error)),
                _ => Err(format!("`{answer}` is not a QA answer")),
            },
            (verdict, severity) => {
                let verdict = Verdict::ALL
                    .into_iter()
                    .find(|v| v.as_str() == verdict)
                    .ok_or_else(|| format!("`{head}` is not a verdict or a command"))?;
                let severity = match severity {
                    None => Severity::Important,
                    Some(s) => Severity::ALL
                        .into_iter()
                        .find(|x| x.as_str().eq_ignore_ascii_case(s))
                        .ok_or_else(|| format!("`{s}` is not a severity"))?,
                };
                Ok(Entry::Verdict(verdict, severity))
            }
        }
    }
}

/// Parse a comma-separated script (`--script`). Empty entries (a trailing comma) are skipped.
pub fn parse(text: &str) -> Result<Vec<Entry>, ScriptError> {
    parse_entries(text.split(','))
}

/// Parse a list of entries (a script file's YAML list).
pub(crate) fn parse_entries<'a>(
    entries: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<Entry>, ScriptError> {
    entries
        .into_iter()
        .enumerate()
        .filter(|(_, entry)| !entry.trim().is_empty())
        .map(|(i, entry)| {
            entry.parse().map_err(|why| ScriptError {
                position: i + 1,
                entry: entry.trim().chars().take(80).collect(),
                why,
            })
        })
        .collect()
}

/// Parse a script file: a YAML list of entries (`- FAIL:Critical`).
pub fn parse_yaml(text: &str) -> Result<Vec<Entry>, ScriptError> {
    let entries: Vec<String> = serde_saphyr::from_str(text).map_err(|e| ScriptError {
        position: 0,
        entry: String::new(),
        why: format!("not a YAML list of strings: {e}"),
    })?;
    parse_entries(entries.iter().map(String::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_script_reads_verdicts_qa_and_commands() {
        assert_eq!(
            parse("FAIL:Critical, fail:important ,PASS,QA:fail,approve,").expect("parses"),
            [
                Entry::Verdict(Verdict::Fail, Severity::Critical),
                Entry::Verdict(Verdict::Fail, Severity::Important),
                Entry::Verdict(Verdict::Pass, Severity::Important),
                Entry::Qa(QaAnswer::Fail),
                Entry::Approve,
            ]
        );
        let error = parse("PASS,MAYBE").expect_err("refused");
        assert_eq!((error.position, error.entry.as_str()), (2, "MAYBE"));
        assert!(parse("FAIL:Severe").is_err());
        assert!(parse("QA").is_err());
        assert_eq!(
            parse("write:research.request").expect("parses"),
            [Entry::Write("research.request".parse().expect("a kind"))]
        );
        assert!(parse("WRITE:Not A Kind").is_err());
    }

    fn entry() -> impl Strategy<Value = Entry> {
        prop_oneof![
            (0..4usize, 0..3usize)
                .prop_map(|(v, s)| Entry::Verdict(Verdict::ALL[v], Severity::ALL[s])),
            Just(Entry::Qa(QaAnswer::Pass)),
            Just(Entry::Qa(QaAnswer::Fail)),
            Just(Entry::Qa(QaAnswer::Error)),
            Just(Entry::Approve),
            Just(Entry::Veto),
            Just(Entry::Redo),
            Just(Entry::Write(Kind::Build)),
            Just(Entry::Write("research.note".parse().expect("a kind"))),
        ]
    }

    proptest! {
        #[test]
        fn printed_scripts_parse_back(entries in proptest::collection::vec(entry(), 0..12)) {
            let text: Vec<String> = entries.iter().map(ToString::to_string).collect();
            prop_assert_eq!(parse(&text.join(",")).expect("parses"), entries);
        }

        #[test]
        fn any_text_parses_or_is_refused_without_panicking(text in "\\PC{0,64}") {
            if let Err(error) = parse(&text) {
                prop_assert!(error.position >= 1);
            }
        }
    }
}
