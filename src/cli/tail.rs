//! `crumb tail <session> [--follow] [--kinds a,b] [--from ID] [--json]`: a session's events as
//! lines for people or, with `--json`, exactly the transcript's JSONL lines (for scripts and `jq`).
//!
//! Reads with the live [`Tail`], so following costs one read of what was appended per poll, never
//! a re-read of the file. Without `--follow` it prints every event there is; `--follow` ends when
//! the session writes `session.end` (whether or not
//! `--kinds` shows it); a session nobody drives any more is followed until Ctrl-C.

use std::time::Duration;

use super::error::{CommandError, ExitStatus};
use crate::transcript::reader::{LineDecoder, Typed};
use crate::transcript::tail::Tail;
use crate::transcript::{Event, Kind};

/// How long `--follow` waits before reading again when the last read found nothing new: short
/// enough to feel live, long enough to cost nothing while a turn runs for minutes.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(100);

/// Arguments of `crumb tail`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A session directory, a transcript file, or a session id (or unique prefix).
    pub session: String,
    /// Keep reading new events until the session ends (`session.end`).
    #[arg(long)]
    pub follow: bool,
    /// Only these event kinds (comma-separated), e.g. `--kinds judge.score,session.end`.
    #[arg(long, value_name = "KINDS", value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// Start at the event with this id (or the first one after it: ids grow in file order).
    #[arg(long, value_name = "ID")]
    pub from: Option<String>,
    /// Print each event as the transcript holds it: one JSON object per line.
    #[arg(long)]
    pub json: bool,
}

/// One transcript line: its text as written and the event it holds.
struct Line {
    text: String,
    event: Event,
}

/// Decodes like [`Typed`] and keeps the line's text, so `--json` reprints it byte for byte.
struct Lines;

impl LineDecoder for Lines {
    type Item = Line;
    fn decode(line: &[u8]) -> Result<Line, String> {
        let event = Typed::decode(line)?;
        let text = String::from_utf8_lossy(line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line));
        Ok(Line {
            text: text.into_owned(),
            event,
        })
    }
}

/// Which events are printed.
struct Filter {
    kinds: Vec<String>,
    /// Events with an id below this one are before `--from`.
    from: Option<String>,
}

impl Filter {
    fn shows(&self, event: &Event) -> bool {
        self.from
            .as_deref()
            .is_none_or(|from| event.id.as_str() >= from)
            && (self.kinds.is_empty() || self.kinds.iter().any(|k| k == event.kind.as_str()))
    }
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let (transcript, _) = super::replay::locate(&args.session).map_err(CommandError::usage)?;
    let kinds: Vec<String> = args
        .kinds
        .iter()
        .map(|k| k.trim().to_owned())
        .filter(|k| !k.is_empty())
        .collect();
    if let Some(bad) = kinds.iter().find(|k| k.parse::<Kind>().is_err()) {
        return Err(CommandError::usage(format!(
            "`{bad}` is not an event kind (see `crumb explain <kind>`)"
        )));
    }
    let filter = Filter {
        kinds,
        from: args.from.as_deref().map(str::to_ascii_uppercase),
    };
    let mut tail: Tail<Lines> = Tail::resume(&transcript, 0, 0);
    loop {
        let batch = tail.poll().map_err(|e| {
            CommandError::failure(format!("cannot read {}", transcript.display())).because(e)
        })?;
        if batch.truncated {
            eprintln!(
                "crumb tail: note: {} was truncated or replaced; reading it again from the start",
                transcript.display()
            );
        }
        let mut out = String::new();
        let mut ended = false;
        for (item, number) in batch.items.into_iter().zip(batch.lines) {
            match item {
                Ok(line) => {
                    if filter.shows(&line.event) {
                        write_line(&mut out, &line, args.json);
                    }
                    ended |= args.follow && line.event.kind == Kind::SessionEnd;
                }
                Err(issue) => {
                    eprintln!("crumb tail: note: line {number} skipped: {}", issue.message);
                }
            }
            if ended {
                break;
            }
        }
        super::stdout::print(&out)?;
        if ended || (!args.follow && !batch.more) {
            return Ok(ExitStatus::SUCCESS);
        }
        if !batch.more {
            std::thread::sleep(FOLLOW_INTERVAL);
        }
    }
}

/// The event as the transcript holds it (`--json`), or as `crumb status` lists its last events.
fn write_line(out: &mut String, line: &Line, json: bool) {
    if json {
        out.push_str(&line.text);
        out.push('\n');
        return;
    }
    out.push_str(&human_line(&line.event));
    out.push('\n');
}

/// One event as a person reads it: time, writer, kind and a one-line preview of the body (as
/// `crumb status` lists its last events).
pub(crate) fn human_line(event: &Event) -> String {
    let time = event.ts.get(11..23).unwrap_or(&event.ts);
    let body = event
        .body
        .as_deref()
        .map(super::status::preview)
        .unwrap_or_default();
    let text = format!(
        "{time}  {:<13} {:<18} {body}",
        event.from,
        event.kind.as_str()
    );
    text.trim_end().to_owned()
}
