//! The human summary at the end of `crumb run`, `crumb resume` and `crumb fork`: how the session
//! ended, the verdict, swaps, the last agent error, the inputs and where to look next.

use serde_json::Value;

use super::run::StudioLink;

/// The summary's lines, from the same value `--json` prints.
pub(crate) fn print(summary: &Value) {
    let text = |key: &str| {
        summary
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    println!();
    match summary.get("reason").and_then(Value::as_str) {
        Some(reason) => println!(
            "ended    {reason} (outcome {}, exit {})",
            summary
                .get("outcome")
                .and_then(Value::as_str)
                .unwrap_or("unknown"),
            summary
                .get("exit_code")
                .map(ToString::to_string)
                .unwrap_or_default()
        ),
        None if text("status") == "interrupted" => println!(
            "stopped  interrupted; continue with crumb resume {}",
            text("session_id")
        ),
        None => println!(
            "waiting  for a person: crumb say {} /approve   (or /veto <why>), then crumb resume {}",
            text("session_id"),
            text("session_id")
        ),
    }
    if let Some(verdict) = summary.get("verdict").filter(|v| !v.is_null()) {
        super::run_verdict::print_verdict(verdict);
    }
    for swap in summary
        .get("swaps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let word = |key: &str| swap.get(key).and_then(Value::as_str).unwrap_or("?");
        println!(
            "DEGRADED {}: {} → {} ({})",
            word("role"),
            word("from"),
            word("to"),
            word("cause")
        );
    }
    if let Some(error) = summary.get("agent_error").filter(|e| !e.is_null()) {
        let word = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or("?");
        println!(
            "error    {} ({}): {}",
            word("role"),
            word("class"),
            word("message")
        );
        if let Some(hint) = error.get("hint").and_then(Value::as_str) {
            println!("fix      {hint}");
        }
    }
    if let Some(game) = summary.get("game").and_then(Value::as_str) {
        println!("game     {game}");
    }
    for (name, value) in summary
        .get("inputs")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        println!("input    {name} = {value}");
    }
    if let Some(studio) = summary.get("studio") {
        let link = StudioLink {
            url: studio
                .get("url")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            running: studio
                .get("running")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        };
        println!("{}", link.line());
    }
}
