//! The usage block of `crumb status`: every role's turns summed from its `agent.stop` metadata
//! (input, output, cache read/write and reasoning tokens, cost, the model last reported).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};

use indexmap::IndexMap;

use crate::adapters::Usage;
use crate::engine::replay::RecentIds;
use crate::runtime::state_snapshot::Snapshot;
use crate::transcript::reader::each_event_after;
use crate::transcript::{Event, Kind};

/// Each role's usage over the first `end` bytes of the transcript open as `file`, read with the
/// folding readers' rules (`reader::each_event`): a duplicated `agent.stop` line is skipped, as
/// replay skips it, so tokens are never counted twice. With a snapshot, only the bytes after the
/// prefix it covers are read, going on from its sums and its duplicate-id window.
pub fn usage_by_role(file: &File, end: u64, from: Option<&Snapshot>) -> IndexMap<String, Usage> {
    let (mut by_role, start, ids) = match from {
        Some(snapshot) => (
            snapshot.usage.clone(),
            snapshot.prefix.offset,
            snapshot.fold.ids.clone(),
        ),
        None => (IndexMap::new(), 0, RecentIds::default()),
    };
    let mut input = file;
    if input.seek(SeekFrom::Start(start)).is_err() {
        return by_role;
    }
    each_event_after(
        std::io::BufReader::with_capacity(64 * 1024, input.take(end.saturating_sub(start))),
        ids,
        |event: Event| {
            if let (Kind::AgentStop, Some(metadata)) = (&event.kind, &event.metadata) {
                by_role
                    .entry(event.from.clone())
                    .or_default()
                    .absorb(&Usage::from_metadata(metadata));
            }
        },
        |_| {},
    );
    by_role
}

/// The usage block: each role's usage and the total.
pub fn usage_block(by_role: &IndexMap<String, Usage>) -> String {
    if by_role.is_empty() {
        return "usage      no agent turns yet\n".to_owned();
    }
    let mut total = Usage::default();
    let mut out =
        String::from("usage      tokens in → out · cache read/write · reasoning · cost · model\n");
    for (role, usage) in by_role {
        total.absorb(usage);
        let _ = writeln!(out, "  {role:<13} {}", describe(usage));
    }
    total.model = None;
    let _ = writeln!(out, "  {:<13} {}", "total", describe(&total));
    out
}

fn describe(usage: &Usage) -> String {
    let n = |value: Option<u64>| value.map_or_else(|| "-".to_owned(), |v| v.to_string());
    let mut text = format!(
        "{} → {} · {}/{} · {} · {}",
        n(usage.tokens_in),
        n(usage.tokens_out),
        n(usage.cache_read),
        n(usage.cache_write),
        n(usage.thinking_tokens),
        usage
            .cost_usd
            .map_or_else(|| "-".to_owned(), |cost| format!("${cost:.4}")),
    );
    if let Some(model) = &usage.model {
        let _ = write!(text, " · {model}");
    }
    text
}
