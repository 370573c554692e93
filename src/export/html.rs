//! A single self-contained HTML report: outcome, scorecard, a timeline of turns, QA with its
//! screenshots inlined as data URIs, the prompts and the artifacts list. No script, no request:
//! a Content-Security-Policy allows only inline styles and `data:` images, and every piece of
//! session text is escaped.

use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;

use super::spans::SpanKind;
use super::{LAST_EVENTS, Loaded};

/// The largest screenshot inlined (a PNG of a game page is far smaller).
const MAX_IMAGE_BYTES: u64 = 8 << 20;
/// The largest prompt quoted whole.
const MAX_PROMPT_BYTES: u64 = 256 << 10;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#1d1d1f;padding:0 1rem}\
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}\
.pass{color:#137333}.fail,.stopped,.rejected{color:#b3261e}.partial,.awaiting{color:#a05a00}\
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5rem;max-height:30rem;overflow:auto}\
.bar{background:#4c8bf5;height:.7rem;display:inline-block;min-width:1px}.qa .bar{background:#34a853}.wait .bar{background:#fbbc04}\
img{max-width:100%;border:1px solid #ccc}code{font-size:.9em}";

/// Escape text for HTML element content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The report.
pub(crate) fn report(session: &Loaded) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let outcome = session.outcome();
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">\
<title>crumb {} · {}</title><style>{STYLE}</style></head><body>",
        escape(&session.pipeline),
        escape(&session.id)
    );
    let _ = write!(
        out,
        "<h1>crumb · {} · <span class=\"{outcome}\">{}</span></h1><table>",
        escape(&session.pipeline),
        escape(&outcome.to_uppercase())
    );
    let goal = session.state.goal.as_deref().unwrap_or("");
    row(&mut out, "session", &escape(&session.id));
    row(&mut out, "goal", &escape(goal));
    row(&mut out, "reason", &escape(session.reason().unwrap_or("-")));
    if let Some((verdict, aggregate)) = session.verdict() {
        row(
            &mut out,
            "verdict",
            &format!(
                "{} {aggregate:.1}/{}",
                escape(&verdict),
                session.max_aggregate
            ),
        );
    }
    let (input, output, cost) = session.usage();
    let cost = cost.map(|c| format!(" · ${c:.4}")).unwrap_or_default();
    row(
        &mut out,
        "usage",
        &format!("{input} tokens in → {output} out{cost}"),
    );
    row(&mut out, "events", &session.state.events.to_string());
    out.push_str("</table>");
    rounds(&mut out, session);
    scorecard(&mut out, session);
    timeline(&mut out, session);
    qa(&mut out, session);
    prompts(&mut out, session);
    artifacts(&mut out, session);
    events(&mut out, session);
    out.push_str("</body></html>\n");
    out
}

fn row(out: &mut String, name: &str, value_html: &str) {
    let _ = write!(out, "<tr><th>{name}</th><td>{value_html}</td></tr>");
}

/// The rounds, in the engine's words (the same lines as `crumb status`).
fn rounds(out: &mut String, session: &Loaded) {
    let lines = session.story.lines();
    if lines.is_empty() {
        return;
    }
    out.push_str("<h2>Rounds</h2><ol class=\"rounds\">");
    for line in lines {
        let _ = write!(out, "<li>{}</li>", escape(&line));
    }
    out.push_str("</ol>");
}

fn scorecard(out: &mut String, session: &Loaded) {
    let lines = session.scorecard();
    if lines.is_empty() {
        return;
    }
    out.push_str(
        "<h2>Scorecard</h2><table><tr><th>dimension</th><th>claimed</th><th>corrected</th></tr>",
    );
    for line in lines {
        let raw = line.raw.map_or_else(|| "-".into(), |r| format!("{r:.1}"));
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{raw}</td><td>{:.1}</td></tr>",
            line.dimension, line.corrected
        );
    }
    out.push_str("</table>");
}

fn timeline(out: &mut String, session: &Loaded) {
    let origin = session.origin_ms();
    let end = session
        .spans
        .iter()
        .map(|s| s.end_ms)
        .max()
        .unwrap_or(origin);
    #[allow(clippy::cast_precision_loss)]
    let scale = |ms: i64| (ms.max(0) as f64) * 100.0 / ((end - origin).max(1) as f64);
    out.push_str("<h2>Timeline</h2><table><tr><th>role</th><th>what</th><th>when</th><th>status</th><th>tokens in/out</th><th>model</th></tr>");
    for span in &session.spans {
        let class = match span.kind {
            SpanKind::Turn => "turn",
            SpanKind::Qa => "qa",
            SpanKind::Wait => "wait",
        };
        let _ = write!(
            out,
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td><span style=\"display:inline-block;width:{:.2}%\"></span><span class=\"bar\" style=\"width:{:.2}%\"></span> {} ms</td><td>{}</td><td>{}/{}</td><td>{}</td></tr>",
            escape(&span.track),
            escape(&span.name),
            scale(span.start_ms - origin),
            scale(span.end_ms - span.start_ms),
            span.end_ms - span.start_ms,
            escape(&span.status),
            span.tokens_in.map_or_else(|| "-".into(), |t| t.to_string()),
            span.tokens_out
                .map_or_else(|| "-".into(), |t| t.to_string()),
            escape(span.model.as_deref().unwrap_or("-")),
        );
    }
    out.push_str("</table>");
}

fn qa(out: &mut String, session: &Loaded) {
    let results = &session.events.qa_results;
    if results.is_empty() {
        return;
    }
    out.push_str("<h2>QA</h2>");
    for event in results {
        let _ = write!(
            out,
            "<p><code>{}</code> {}</p>",
            escape(&event.id),
            escape(event.body.as_deref().unwrap_or(""))
        );
        for shot in event
            .artifacts
            .iter()
            .filter(|a| a.path.to_ascii_lowercase().ends_with(".png"))
        {
            match inline_png(&session.dir, &shot.path, &shot.sha256) {
                Ok(uri) => {
                    let _ = write!(
                        out,
                        "<p><img alt=\"QA screenshot {}\" src=\"{uri}\"></p>",
                        escape(&shot.path)
                    );
                }
                Err(why) => {
                    let _ = write!(
                        out,
                        "<p>screenshot {} not included: {}</p>",
                        escape(&shot.path),
                        escape(&why)
                    );
                }
            }
        }
    }
}

/// A PNG of the session as a `data:` URI, only if it is the file the event recorded.
fn inline_png(dir: &Path, path: &str, sha256: &str) -> Result<String, String> {
    let file = crate::fs::confine::resolve_inside(dir, path).map_err(|e| e.to_string())?;
    let bytes = crate::fs::bounded_read::read(&file, MAX_IMAGE_BYTES).map_err(|e| e.to_string())?;
    if crumb_core::digest::sha256_hex(&bytes) != sha256 {
        return Err("the file changed since it was recorded".into());
    }
    Ok(format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    ))
}

fn prompts(out: &mut String, session: &Loaded) {
    let files = session.prompts();
    if files.is_empty() {
        return;
    }
    out.push_str("<h2>Prompts</h2>");
    for file in files {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = crate::fs::bounded_read::read(&file, MAX_PROMPT_BYTES).map_or_else(
            |e| format!("(not readable: {e})"),
            |b| String::from_utf8_lossy(&b).into_owned(),
        );
        let _ = write!(
            out,
            "<details><summary>{}</summary><pre>{}</pre></details>",
            escape(&name),
            escape(&text)
        );
    }
}

fn artifacts(out: &mut String, session: &Loaded) {
    let list = session.artifacts();
    if list.is_empty() {
        return;
    }
    out.push_str("<h2>Artifacts</h2><table><tr><th>path</th><th>what</th><th>sha256</th></tr>");
    for (path, sha, role) in list {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            escape(&path),
            escape(role.as_deref().unwrap_or("-")),
            escape(&sha)
        );
    }
    out.push_str("</table>");
}

fn events(out: &mut String, session: &Loaded) {
    let _ = write!(out, "<h2>Events</h2>");
    if session.events.count > LAST_EVENTS {
        let _ = write!(
            out,
            "<p>The last {LAST_EVENTS} of {} events.</p>",
            session.events.count
        );
    }
    out.push_str("<table><tr><th>id</th><th>from</th><th>kind</th><th>body</th></tr>");
    for event in &session.events.last {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&event.id),
            escape(&event.from),
            escape(event.kind.as_str()),
            escape(&super::spans::clip(
                event.body.as_deref().unwrap_or(""),
                200
            )),
        );
    }
    out.push_str("</table>");
}
