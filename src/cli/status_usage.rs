//! The usage block of `crumb status`: every role's turns summed from its `agent.stop` metadata
//! (input, output, cache read/write and reasoning tokens, cost, the model last reported).

use std::fmt::Write as _;
use std::io::BufRead;
use std::path::Path;

use indexmap::IndexMap;

use crate::adapters::Usage;
use crate::transcript::{Event, Kind};

/// Per-role and total usage of the transcript at `path`. Only `agent.stop` lines are parsed, so
/// a long transcript costs a substring check per line.
pub fn usage_block(path: &Path) -> String {
    let mut by_role: IndexMap<String, Usage> = IndexMap::new();
    if let Ok(file) = std::fs::File::open(path) {
        for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
            if !line.contains("agent.stop") {
                continue;
            }
            let Ok(event) = serde_json::from_str::<Event>(&line) else {
                continue;
            };
            if let (Kind::AgentStop, Some(metadata)) = (&event.kind, &event.metadata) {
                by_role
                    .entry(event.from.clone())
                    .or_default()
                    .absorb(&Usage::from_metadata(metadata));
            }
        }
    }
    if by_role.is_empty() {
        return "usage      no agent turns yet\n".to_owned();
    }
    let mut total = Usage::default();
    let mut out =
        String::from("usage      tokens in → out · cache read/write · reasoning · cost · model\n");
    for (role, usage) in &by_role {
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
