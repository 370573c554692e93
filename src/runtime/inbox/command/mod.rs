//! The inbox grammar. Each line is trimmed; blank lines and `#` comments are ignored.
//!
//! ```text
//! /approve [note]            /veto [reason]             /answer <text>
//! /pause [@role] [reason]    /resume [@role]
//! /goto <role> [message]     /swap <role>=<adapter>
//! /append [@role] <text>     /cancel [@role] [reason]
//! /reset-circuit <role|all>  /ask <status|cost|next|stuck|scorecard>
//! /note <text>               /redo [message]
//! @role message              any other text: a message for every role
//! ```
//!
//! Role names come from the pipeline, never from a built-in list. Command names are
//! case-insensitive. A line that names an unknown role or command, misses an argument or is too
//! long is an [`InboxError`], which the runtime answers with an error ack — nothing is dropped
//! silently.

use std::fmt;

use crate::adapters::AdapterKind;
use crate::pipeline::suggest::edit_distance;

/// Longest inbox line accepted, in bytes.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024;

/// A parsed inbox line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserCommand {
    /// Accept the result a session is awaiting a person for.
    Approve { note: Option<String> },
    /// Reject the current result; the reason becomes repair feedback.
    Veto { reason: Option<String> },
    /// Answer what the session awaits (a question or a verdict): the `user.answer` route.
    Answer { text: String },
    /// Pause the session, or one role.
    Pause {
        role: Option<String>,
        reason: Option<String>,
    },
    /// Resume the session, or one role.
    Resume { role: Option<String> },
    /// Run `role` next, optionally with a message.
    Goto {
        role: String,
        message: Option<String>,
    },
    /// Run `role` on another adapter from now on.
    Swap { role: String, adapter: AdapterKind },
    /// Add text to the next prompt of `role`, or of every role.
    Append { role: Option<String>, text: String },
    /// Stop the live spawn of `role`, or every live spawn.
    Cancel {
        role: Option<String>,
        reason: Option<String>,
    },
    /// Close a role's circuit breaker, or every one.
    ResetCircuit { target: CircuitTarget },
    /// Ask the runtime a question; the answer is a note in the transcript.
    Ask { topic: AskTopic },
    /// A note for the record; nothing runs.
    Note { text: String },
    /// Redo the current step, optionally with a message.
    Redo { message: Option<String> },
    /// `@role message`: a message for `role`'s next turn (not a wake).
    Direct { role: String, message: String },
    /// Plain text: a message for every role's next spawn.
    Message { text: String },
}

/// What `/reset-circuit` resets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CircuitTarget {
    All,
    Role(String),
}

/// The questions `/ask` understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskTopic {
    Status,
    Cost,
    Next,
    Stuck,
    Scorecard,
}

impl AskTopic {
    pub(crate) const ALL: [AskTopic; 5] = [
        AskTopic::Status,
        AskTopic::Cost,
        AskTopic::Next,
        AskTopic::Stuck,
        AskTopic::Scorecard,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AskTopic::Status => "status",
            AskTopic::Cost => "cost",
            AskTopic::Next => "next",
            AskTopic::Stuck => "stuck",
            AskTopic::Scorecard => "scorecard",
        }
    }
}

impl fmt::Display for AskTopic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a line was rejected. The message is what the person sees in the error ack.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InboxError {
    #[error("unknown command `/{command}`{hint} (commands: {COMMANDS})", hint = did_you_mean(.suggestion.as_deref()))]
    UnknownCommand {
        command: String,
        suggestion: Option<String>,
    },
    #[error("unknown role `{role}`{hint} (roles: {known})", hint = did_you_mean(.suggestion.as_deref()), known = .known.join(", "))]
    UnknownRole {
        role: String,
        known: Vec<String>,
        suggestion: Option<String>,
    },
    #[error("/{command} needs {what}")]
    MissingArgument {
        command: &'static str,
        what: &'static str,
    },
    #[error("/{command} takes no text after {after}: `{extra}`")]
    UnexpectedText {
        command: &'static str,
        after: &'static str,
        extra: String,
    },
    #[error(
        "unknown adapter `{adapter}` in /swap (adapters: {})",
        crate::adapters::adapter_kind::known_names()
    )]
    UnknownAdapter { adapter: String },
    #[error("unknown /ask topic `{topic}` (topics: status, cost, next, stuck, scorecard)")]
    UnknownTopic { topic: String },
    #[error("line is {len} bytes; the limit is {MAX_LINE_BYTES}")]
    TooLong { len: usize },
}

const COMMANDS: &str = "approve, veto, answer, pause, resume, goto, swap, append, cancel, reset-circuit, ask, note, redo";
const COMMAND_NAMES: [&str; 13] = [
    "approve",
    "veto",
    "answer",
    "pause",
    "resume",
    "goto",
    "swap",
    "append",
    "cancel",
    "reset-circuit",
    "ask",
    "note",
    "redo",
];

fn did_you_mean(suggestion: Option<&str>) -> String {
    suggestion
        .map(|s| format!(" — did you mean `{s}`?"))
        .unwrap_or_default()
}

/// Parse one inbox line against the pipeline's `roles`. `Ok(None)` for blank lines and comments.
pub fn parse_line(line: &str, roles: &[String]) -> Result<Option<UserCommand>, InboxError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(InboxError::TooLong { len: line.len() });
    }
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let parser = Parser { roles };
    if let Some(rest) = line.strip_prefix('/') {
        let (name, args) = split_word(rest);
        return parser.command(&name.to_ascii_lowercase(), args).map(Some);
    }
    if let Some(rest) = line.strip_prefix('@') {
        let (name, message) = split_word(rest);
        let role = parser.role(name)?;
        if message.is_empty() {
            return Err(InboxError::MissingArgument {
                command: "@role",
                what: "a message after the role",
            });
        }
        return Ok(Some(UserCommand::Direct {
            role,
            message: message.to_owned(),
        }));
    }
    Ok(Some(UserCommand::Message {
        text: line.to_owned(),
    }))
}

struct Parser<'a> {
    roles: &'a [String],
}

impl Parser<'_> {
    fn command(&self, name: &str, args: &str) -> Result<UserCommand, InboxError> {
        match name {
            "approve" => Ok(UserCommand::Approve { note: text(args) }),
            "veto" => Ok(UserCommand::Veto { reason: text(args) }),
            "answer" => Ok(UserCommand::Answer {
                text: required_text(args, "answer", "the answer")?,
            }),
            "pause" => {
                let (role, rest) = self.role_word(args)?;
                Ok(UserCommand::Pause {
                    role,
                    reason: text(rest),
                })
            }
            "resume" => {
                let (role, rest) = self.role_word(args)?;
                if !rest.is_empty() {
                    let after = if role.is_some() {
                        "the role"
                    } else {
                        "the command"
                    };
                    return Err(InboxError::UnexpectedText {
                        command: "resume",
                        after,
                        extra: rest.to_owned(),
                    });
                }
                Ok(UserCommand::Resume { role })
            }
            "goto" => {
                let (name, message) = split_word(args);
                if name.is_empty() {
                    return Err(InboxError::MissingArgument {
                        command: "goto",
                        what: "a role",
                    });
                }
                Ok(UserCommand::Goto {
                    role: self.role(name.trim_start_matches('@'))?,
                    message: text(message),
                })
            }
            "swap" => self.swap(args),
            "append" => {
                let (role, rest) = self.optional_role(args)?;
                let text = text(rest).ok_or(InboxError::MissingArgument {
                    command: "append",
                    what: "text to append",
                })?;
                Ok(UserCommand::Append { role, text })
            }
            "cancel" => {
                let (role, rest) = self.role_word(args)?;
                Ok(UserCommand::Cancel {
                    role,
                    reason: text(rest),
                })
            }
            "reset-circuit" | "reset_circuit" => self.reset_circuit(args),
            "ask" => ask(args),
            "note" => Ok(UserCommand::Note {
                text: required_text(args, "note", "text")?,
            }),
            "redo" => Ok(UserCommand::Redo {
                message: text(args),
            }),
            other => Err(InboxError::UnknownCommand {
                command: clip(other),
                suggestion: closest(other, COMMAND_NAMES.iter().copied())
                    .map(|name| format!("/{name}")),
            }),
        }
    }

    fn reset_circuit(&self, args: &str) -> Result<UserCommand, InboxError> {
        let (name, rest) = split_word(args);
        if !rest.is_empty() {
            return Err(InboxError::UnexpectedText {
                command: "reset-circuit",
                after: "the target",
                extra: rest.to_owned(),
            });
        }
        let target = match name.trim_start_matches('@') {
            "" => {
                return Err(InboxError::MissingArgument {
                    command: "reset-circuit",
                    what: "a role or `all`",
                });
            }
            "all" => CircuitTarget::All,
            role => CircuitTarget::Role(self.role(role)?),
        };
        Ok(UserCommand::ResetCircuit { target })
    }

    fn swap(&self, args: &str) -> Result<UserCommand, InboxError> {
        let (pair, rest) = split_word(args);
        let missing = InboxError::MissingArgument {
            command: "swap",
            what: "<role>=<adapter>",
        };
        let Some((role, adapter)) = pair.split_once('=') else {
            return Err(missing);
        };
        if role.is_empty() || adapter.is_empty() {
            return Err(missing);
        }
        if !rest.is_empty() {
            return Err(InboxError::UnexpectedText {
                command: "swap",
                after: "<role>=<adapter>",
                extra: rest.to_owned(),
            });
        }
        let role = self.role(role.trim_start_matches('@'))?;
        let adapter = adapter
            .parse::<AdapterKind>()
            .map_err(|_| InboxError::UnknownAdapter {
                adapter: clip(adapter),
            })?;
        Ok(UserCommand::Swap { role, adapter })
    }

    /// A leading `@role` if there is one, and the rest of the arguments.
    fn optional_role<'s>(&self, args: &'s str) -> Result<(Option<String>, &'s str), InboxError> {
        match args.strip_prefix('@') {
            Some(rest) => {
                let (name, rest) = split_word(rest);
                Ok((Some(self.role(name)?), rest))
            }
            None => Ok((None, args)),
        }
    }

    /// Like [`Parser::optional_role`], but a first word that is exactly a role id counts as the
    /// role even without `@` (`/pause builder` means the builder, not a global pause).
    fn role_word<'s>(&self, args: &'s str) -> Result<(Option<String>, &'s str), InboxError> {
        let (word, rest) = split_word(args);
        if let Some(role) = self.roles.iter().find(|role| role.as_str() == word) {
            return Ok((Some(role.clone()), rest));
        }
        self.optional_role(args)
    }

    fn role(&self, name: &str) -> Result<String, InboxError> {
        if let Some(role) = self.roles.iter().find(|role| role.as_str() == name) {
            return Ok(role.clone());
        }
        Err(InboxError::UnknownRole {
            role: clip(name),
            known: self.roles.to_vec(),
            suggestion: closest(name, self.roles.iter().map(String::as_str))
                .map(|role| format!("@{role}")),
        })
    }
}

fn ask(args: &str) -> Result<UserCommand, InboxError> {
    let (word, _) = split_word(args);
    if word.is_empty() {
        return Err(InboxError::MissingArgument {
            command: "ask",
            what: "a topic (status, cost, next, stuck, scorecard)",
        });
    }
    let lower = word.to_ascii_lowercase();
    let topic = AskTopic::ALL
        .into_iter()
        .find(|topic| topic.as_str() == lower)
        .ok_or_else(|| InboxError::UnknownTopic { topic: clip(word) })?;
    Ok(UserCommand::Ask { topic })
}

/// The first whitespace-separated word and the trimmed rest.
fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    match text.find(char::is_whitespace) {
        Some(end) => (&text[..end], text[end..].trim()),
        None => (text, ""),
    }
}

fn text(args: &str) -> Option<String> {
    let args = args.trim();
    (!args.is_empty()).then(|| args.to_owned())
}

/// The text a command cannot go without.
fn required_text(
    args: &str,
    command: &'static str,
    what: &'static str,
) -> Result<String, InboxError> {
    text(args).ok_or(InboxError::MissingArgument { command, what })
}

/// Echoed user input is cut short so an error ack stays one readable line.
fn clip(text: &str) -> String {
    const MAX: usize = 64;
    if text.chars().count() <= MAX {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(MAX).collect();
        cut.push('…');
        cut
    }
}

/// The candidate within edit distance 2 of `word` (case-insensitive), if any.
fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    if word.is_empty() || word.len() > 64 {
        return None;
    }
    let word = word.to_ascii_lowercase();
    candidates
        .map(|candidate| {
            (
                edit_distance(&word, &candidate.to_ascii_lowercase()),
                candidate,
            )
        })
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests;
