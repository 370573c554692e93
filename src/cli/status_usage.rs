//! The usage block of `crumb status`: every role's turns summed from its `agent.stop` metadata
//! (input, output, cache read/write and reasoning tokens, cost, the model last reported), as
//! `runtime::status_fold` sums them.

use std::fmt::Write as _;

use indexmap::IndexMap;

use crate::adapters::Usage;

/// The usage block: each role's usage and the total.
pub(crate) fn usage_block(by_role: &IndexMap<String, Usage>) -> String {
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
