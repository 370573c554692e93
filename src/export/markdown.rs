//! A Markdown summary for a pull request: outcome, scorecard, turns, usage and artifacts. Text
//! from the session is escaped so it cannot break a table or inject markup.

use std::fmt::Write as _;

use super::Loaded;
use super::spans::SpanKind;

/// Escape text for a Markdown table cell or line.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

fn seconds(ms: i64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let s = ms as f64 / 1000.0;
    format!("{s:.1}s")
}

/// The summary.
pub(crate) fn summary(session: &Loaded) -> String {
    let mut out = String::new();
    let goal = session.state.goal.as_deref().unwrap_or("");
    let _ = writeln!(out, "# crumb session {}\n", session.id);
    let _ = writeln!(out, "- **pipeline**: {}", escape(&session.pipeline));
    let _ = writeln!(
        out,
        "- **goal**: {}",
        escape(&super::spans::clip(goal, 300))
    );
    let inputs = session.inputs();
    if !inputs.is_empty() {
        let _ = writeln!(out, "- **inputs**: {}", escape(&inputs.join(", ")));
    }
    let reason = session
        .reason()
        .map(|r| format!(" ({})", escape(r)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "- **outcome**: {}{reason}",
        session.outcome().to_uppercase()
    );
    if let Some((verdict, aggregate)) = session.verdict() {
        let _ = writeln!(
            out,
            "- **verdict**: {verdict} {aggregate:.1}/{}",
            session.max_aggregate
        );
    }
    let (input, output, cost) = session.usage();
    let cost = cost.map(|c| format!(" · ${c:.4}")).unwrap_or_default();
    let _ = writeln!(out, "- **usage**: {input} tokens in → {output} out{cost}");
    let _ = writeln!(out, "- **events**: {}", session.state.events);
    let rounds = session.story.lines();
    if !rounds.is_empty() {
        out.push_str("\n## Rounds\n\n");
        for line in rounds {
            let _ = writeln!(out, "- {line}");
        }
    }
    let scorecard = session.scorecard();
    if !scorecard.is_empty() {
        out.push_str("\n## Scorecard\n\n| dimension | claimed | corrected |\n|---|---:|---:|\n");
        for line in scorecard {
            let raw = line.raw.map_or_else(|| "-".into(), |r| format!("{r:.1}"));
            let _ = writeln!(
                out,
                "| {} | {raw} | {:.1} |",
                line.dimension, line.corrected
            );
        }
    }
    out.push_str("\n## Timeline\n\n| # | role | what | start | duration | status | tokens in/out | model |\n|---:|---|---|---:|---:|---|---|---|\n");
    let origin = session.origin_ms();
    for (i, span) in session.spans.iter().enumerate() {
        let what = match span.kind {
            SpanKind::Turn => "turn",
            SpanKind::Qa => "QA",
            SpanKind::Wait => "wait",
        };
        let tokens = match (span.tokens_in, span.tokens_out) {
            (None, None) => "-".to_owned(),
            (a, b) => format!("{}/{}", a.unwrap_or(0), b.unwrap_or(0)),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {what} | {} | {} | {} | {tokens} | {} |",
            i + 1,
            escape(&span.track),
            seconds(span.start_ms - origin),
            seconds(span.end_ms - span.start_ms),
            escape(&span.status),
            escape(span.model.as_deref().unwrap_or("-")),
        );
    }
    let artifacts = session.artifacts();
    if !artifacts.is_empty() {
        out.push_str("\n## Artifacts\n\n| path | sha256 |\n|---|---|\n");
        for (path, sha, _) in artifacts {
            let short: String = sha.chars().take(12).collect();
            let _ = writeln!(out, "| {} | {} |", escape(&path), escape(&short));
        }
    }
    out
}
