//! Read routes of the JSON API: health, the session list, one session's state, its events (paged
//! and filtered through the line index), one event, and its graph.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::api_error::ApiError;
use super::app::Shared;
use super::app::fresh_hub;
use super::graph;
use super::index::{BATCH_BYTES, IndexedLine, LineIndex, read_lines};
use super::large_event;
use super::sessions::{self, SessionRow};
use super::watched_session::WatchedSession;
use crate::runtime::lock;
use crate::transcript::parse::{Parsed, parse_line};
use crate::transcript::{Event, ScoreSource};

/// Default and largest page of events.
const DEFAULT_PAGE: usize = 200;
const MAX_PAGE: usize = 1000;
/// Default and largest page of sessions.
const DEFAULT_SESSIONS: usize = 50;
const MAX_SESSIONS: usize = 500;
/// Lines read per batch while text-filtering.
const SCAN_BATCH: usize = 1024;
/// Most bytes of events in one page past its first line (a line may be as long as the one
/// transcript line limit, `transcript::framer::MAX_LINE_BYTES`).
const PAGE_BYTES: u64 = 16 * 1024 * 1024;

pub(crate) async fn health(State(app): State<Shared>) -> Json<Value> {
    Json(json!({
        "ok": true,
        "studio_version": env!("CARGO_PKG_VERSION"),
        "instance": app.instance,
        "home": app.config.home.root(),
    }))
}

#[derive(Debug, Deserialize)]
pub(crate) struct PageQuery {
    pub offset: Option<usize>,
    pub limit: Option<usize>,
    /// Substring of the id, goal, pipeline, status or outcome.
    pub q: Option<String>,
}

/// `GET /api/sessions`: one page of list rows, newest first.
pub(crate) async fn sessions(
    State(app): State<Shared>,
    Query(query): Query<PageQuery>,
) -> Result<Json<Value>, ApiError> {
    let app2 = Arc::clone(&app);
    let page = tokio::task::spawn_blocking(move || {
        let all = sessions::all(&app2.config.home);
        let limit = query
            .limit
            .unwrap_or(DEFAULT_SESSIONS)
            .clamp(1, MAX_SESSIONS);
        let q = query
            .q
            .as_deref()
            .map(str::to_lowercase)
            .filter(|q| !q.is_empty());
        // Without a filter only the page's rows are built; a filter matches the outcome too
        // ("failed", "waiting"), which only a built row knows.
        let (total, offset, rows) = if let Some(q) = q {
            let matching: Vec<SessionRow> = all
                .into_iter()
                .map(|s| sessions::row(s, &app2.registry))
                .filter(|row| row_matches(row, &q))
                .collect();
            let total = matching.len();
            let offset = query.offset.unwrap_or(0).min(total);
            let rows = matching.into_iter().skip(offset).take(limit).collect();
            (total, offset, rows)
        } else {
            let total = all.len();
            let offset = query.offset.unwrap_or(0).min(total);
            let rows: Vec<SessionRow> = all
                .into_iter()
                .skip(offset)
                .take(limit)
                .map(|s| sessions::row(s, &app2.registry))
                .collect();
            (total, offset, rows)
        };
        json!({ "total": total, "offset": offset, "sessions": rows })
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(Json(page))
}

/// The story line as the page draws it: per round, each step's words (the engine's, the same as
/// `crumb status`) and a tone; then the run's end.
fn story_view(story: &crate::engine::story::Story) -> Value {
    use crate::engine::story::Step;
    let rounds: Vec<Value> = story
        .rounds
        .iter()
        .map(|round| {
            let steps: Vec<Value> = round
                .steps
                .iter()
                .map(|step| {
                    let tone = match step {
                        Step::Produced(_) => "work",
                        Step::Qa(qa) if qa.passed => "good",
                        Step::Qa(_) => "bad",
                        Step::Judged(v) if !v.corrections.is_empty() => "corrected",
                        Step::Judged(_) | Step::Join(_) => "verdict",
                        Step::Incident(i) if i.what == "person" || i.what == "waits" => "person",
                        Step::Incident(_) => "incident",
                    };
                    json!({ "tone": tone, "text": step.text() })
                })
                .collect();
            let then = round.then.as_ref().map(crate::engine::story::Next::text);
            json!({ "number": round.number, "steps": steps, "then": then })
        })
        .collect();
    json!({
        "rounds": rounds,
        "rounds_left_out": story.rounds_left_out,
        "ended": story.lines().last().filter(|_| story.ended.is_some()),
        "incidents": story.rounds.iter().flat_map(|r| &r.steps).filter(|s| matches!(s, Step::Incident(i) if i.what != "person" && i.what != "waits")).count(),
    })
}

/// Whether a list row matches the filter `q` (lower case): its id, goal, pipeline, status or
/// outcome (the kind and the words the list shows).
fn row_matches(row: &SessionRow, q: &str) -> bool {
    let s = &row.summary;
    let outcome = row
        .outcome
        .as_ref()
        .map(|o| [o.kind.to_owned(), o.title.to_lowercase()]);
    [&s.id, &s.goal, &s.pipeline]
        .iter()
        .any(|field| field.to_lowercase().contains(q))
        || s.status.contains(q)
        || outcome.is_some_and(|words| words.iter().any(|w| w.contains(q)))
}

/// `GET /api/pipelines`: the pipelines and presets a new session can use.
pub(crate) async fn pipelines(State(app): State<Shared>) -> Json<Value> {
    let root = app
        .config
        .project_dir
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    let names = |dir: &str| -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(root.join(dir))
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        let stem = name
                            .strip_suffix(".yaml")
                            .or_else(|| name.strip_suffix(".yml"))?;
                        Some(format!("{dir}/{stem}{}", &name[stem.len()..]))
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    };
    let presets: Vec<String> = names("presets")
        .into_iter()
        .filter_map(|p| {
            let file = p.rsplit('/').next()?;
            Some(file.split('.').next()?.to_owned())
        })
        .collect();
    let pipelines = names("pipelines");
    // An empty list says why: Studio looks in the folder it was started in.
    let why = pipelines.is_empty().then(|| {
        format!(
            "no pipelines/*.yaml in {} — start `crumb studio` in your project folder",
            root.display()
        )
    });
    Json(json!({ "pipelines": pipelines, "presets": presets, "project": root, "why": why }))
}

/// `GET /api/sessions/{id}`: the reducer's state and everything the session view shows at once.
pub(crate) async fn session(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let hub = fresh_hub(&app, &id, true).await?;
    let summary = sessions::all(&app.config.home)
        .into_iter()
        .find(|s| s.id == id);
    let app2 = Arc::clone(&app);
    let value = tokio::task::spawn_blocking(move || {
        let meta = hub.dir().read_meta().ok();
        let row = summary.map(|s| sessions::row(s, &app2.registry));
        let inner = hub.lock();
        let table = inner.table.clone();
        let rubric = super::rubric::rubric(table.as_deref());
        let scorecard = scorecard(&hub, &inner, &rubric);
        let live = lock::is_held(hub.dir().path());
        let status = row.as_ref().map_or("running", |r| r.summary.status);
        let mut outcome = sessions::session_outcome(&inner, status, live);
        outcome.why = table.as_deref().map(|table| {
            let dry_run = crate::runtime::session_read::recorded_dry_run(&hub.dir().transcript());
            crate::engine::why::headline(table, &inner.replay.state, dry_run)
        });
        let clock = &inner.replay.state.clock;
        let elapsed = i64::try_from(clock.elapsed_ms()).unwrap_or(i64::MAX);
        let open_wait = inner
            .waiting_since_ms
            .zip(clock.latest_ms)
            .map_or(0, |(since, latest)| latest.saturating_sub(since).max(0));
        let waiting = inner.waited_ms.saturating_add(open_wait);
        json!({
            "outcome": outcome,
            "rubric": rubric,
            // Session time split into the agents' work and the wait for a person; an open wait
            // goes on from `waiting_since_ms` (the page counts it on).
            "time": {
                "elapsed_ms": elapsed,
                "waiting_ms": waiting,
                "working_ms": elapsed.saturating_sub(waiting).max(0),
                "waiting_since_ms": inner.waiting_since_ms,
                // The last event's time: a live turn's work goes on from here (the page counts).
                "latest_ms": clock.latest_ms,
            },
            "live_turn": inner.live_turn,
            "cost": { "usd": inner.cost_usd, "turns": inner.costed_turns },
            "id": hub.dir().id(),
            "row": row,
            "meta": meta,
            "live": live,
            "fork": hub.dir().fork_origin(),
            // The inputs recorded in `session.start`, shown under the header.
            "inputs": crate::runtime::session_read::recorded_inputs(&hub.dir().transcript()),
            "events": inner.index.len(),
            // What the fold skipped: the same lines, for the same reasons, as `crumb replay`.
            "unreadable_lines": inner.replay.stats.skipped,
            "state": inner.replay.state,
            "degraded": inner.replay.state.degraded(),
            "swaps": crate::runtime::run_config::swaps_json(&inner.replay.state),
            "stats": inner.replay.stats,
            "table_error": inner.table_error,
            "pipeline": table.as_ref().map(|t| json!({
                "name": t.name,
                "roles": t.roles.iter().map(|r| &r.id).collect::<Vec<_>>(),
                "limits": t.limits,
                "qa_checks": t.qa.as_ref().map(|q| q.checks.iter().map(|c| &c.id).collect::<Vec<_>>()),
            })),
            "scorecard": scorecard,
            // The rounds, from the engine's fold (the same words `crumb status` prints).
            "story": story_view(inner.story.story()),
            // A remote browser opens the preview with this key (loopback needs none).
            "preview_key": app2.config.allow_remote.then(|| super::files::preview_key(&app2.config.token, hub.dir().id())),
        })
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(Json(value))
}

/// The latest verdict, raw next to corrected, with each dimension's source and the corrections.
fn scorecard(
    hub: &WatchedSession,
    inner: &super::watched_session::Inner,
    rubric: &[super::rubric::Dimension],
) -> Value {
    let verification = &inner.replay.state.verification;
    let Some(latest) = &verification.latest else {
        return Value::Null;
    };
    let judge = event_by_id(hub, inner, &latest.event_id);
    let declared = judge
        .as_ref()
        .and_then(|e| e.scores.clone())
        .unwrap_or_default();
    let dims: Vec<Value> = rubric
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let dim = declared.score(&spec.id);
            let raw = latest.raw.dimensions.get(i).copied().flatten();
            let corrected = latest.corrected.dimensions.get(i).copied().unwrap_or(0.0);
            let source = dim.map(|d| match d.source {
                ScoreSource::VerifierLlm => "model",
                ScoreSource::QaCheckEffect => "qa",
                ScoreSource::ReducerAuto => "engine",
            });
            let changed = raw.is_none_or(|r| (r - corrected).abs() > 1e-9);
            json!({
                "key": spec.id,
                "label": spec.label,
                "scale": spec.scale,
                "weight": spec.weight,
                "declared_source": spec.source,
                "raw": raw,
                "corrected": corrected,
                "source": source,
                "corrected_by_engine": changed,
                "evidence": dim.map(|d| d.evidence.clone()).unwrap_or_default(),
            })
        })
        .collect();
    json!({
        "event_id": latest.event_id,
        "round": verification.count,
        "dimensions": dims,
        "raw_aggregate": latest.raw.aggregate,
        "raw_verdict": latest.raw.verdict.map(crate::vocab::Verdict::as_str),
        "aggregate": latest.corrected.aggregate,
        "verdict": latest.corrected.verdict.as_str(),
        "severity": latest.severity.as_str(),
        "corrections": latest.corrections,
        "previous_aggregate": verification.previous.as_ref().map(|p| p.corrected.aggregate),
        "feedback": declared.feedback,
        // Who judged, by the pipeline's own role name; and, for parallel judges, each one's
        // corrected verdict beside the join's rule and result.
        "judge": judge.as_ref().map(|e| e.from.clone()),
        "join": verification.routed_join,
    })
}

/// Read one event by id through the index, with the rules every reader shares ([`parse_line`]).
fn event_by_id(
    hub: &WatchedSession,
    inner: &super::watched_session::Inner,
    id: &str,
) -> Option<Event> {
    let seq = inner.index.position(id)?;
    let line = inner.index.get(seq)?;
    let text = read_lines(&hub.dir().transcript(), &[line]).ok()?.pop()??;
    match parse_line(text.as_bytes()) {
        Parsed::Event(event) | Parsed::Mapped(event, _) => Some(event),
        Parsed::Blank | Parsed::Skip(_) => None,
    }
}

#[derive(Debug, Deserialize, Default)]
pub(crate) struct EventsQuery {
    /// Events after this sequence number (ascending page).
    pub after: Option<usize>,
    /// `first=true`: the ascending page from the very first event.
    pub first: Option<bool>,
    /// Events before this sequence number (the page just before it).
    pub before: Option<usize>,
    pub limit: Option<usize>,
    /// Comma-separated kinds.
    pub kind: Option<String>,
    /// Comma-separated senders.
    pub role: Option<String>,
    /// Case-insensitive substring of the whole line.
    pub q: Option<String>,
}

/// `GET /api/sessions/{id}/events`: one page of events, oldest first within the page. Without
/// `after` or `before` it is the last page.
pub(crate) async fn events(
    State(app): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<EventsQuery>,
) -> Result<Response, ApiError> {
    let hub = fresh_hub(&app, &id, false).await?;
    let body = tokio::task::spawn_blocking(move || page(&hub, &query))
        .await
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// Build one page of events as JSON text (lines are embedded as they are, without re-encoding).
pub(crate) fn page(hub: &WatchedSession, query: &EventsQuery) -> Result<String, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    let needle = query
        .q
        .as_deref()
        .map(str::to_lowercase)
        .filter(|q| !q.is_empty());
    let path = hub.dir().transcript();
    let session = hub.dir().id().to_owned();

    let inner = hub.lock();
    let index = &inner.index;
    let total = index.len();
    let keep = keeper(index, query);
    let (ascending, candidates) = candidates(index, query);
    let mut chosen: Vec<(usize, IndexedLine, Option<String>)> = Vec::new();
    let mut more = false;
    let mut batch: Vec<(usize, IndexedLine)> = Vec::new();
    let mut batch_bytes = 0u64;
    let mut page_bytes = 0u64;
    let flush = |batch: &mut Vec<(usize, IndexedLine)>,
                 chosen: &mut Vec<(usize, IndexedLine, Option<String>)>|
     -> Result<bool, ApiError> {
        if batch.is_empty() {
            return Ok(false);
        }
        let lines: Vec<IndexedLine> = batch.iter().map(|(_, l)| *l).collect();
        let texts = read_lines(&path, &lines)?;
        for ((seq, line), text) in batch.drain(..).zip(texts) {
            let Some(text) = text else { continue };
            if let Some(needle) = &needle
                && !text.to_lowercase().contains(needle.as_str())
            {
                continue;
            }
            let held: usize = chosen
                .iter()
                .map(|c| c.2.as_ref().map_or(0, String::len))
                .sum();
            if chosen.len() == limit
                || (!chosen.is_empty() && (held + text.len()) as u64 > PAGE_BYTES)
            {
                return Ok(true);
            }
            chosen.push((seq, line, Some(text)));
        }
        Ok(false)
    };
    for (seq, line) in candidates.filter(|(_, l)| keep(l)) {
        // A large line goes as its summary, never read whole (a filter searches it in chunks).
        let summary = index.summary(seq, &line, &session);
        if needle.is_none() {
            // A page holds at most `limit` events and, past the first, `PAGE_BYTES` bytes.
            page_bytes += summary
                .as_ref()
                .map_or(u64::from(line.len), |s| s.len() as u64);
            if chosen.len() == limit || (!chosen.is_empty() && page_bytes > PAGE_BYTES) {
                more = true;
                break;
            }
            chosen.push((seq, line, summary));
            continue;
        }
        if let Some(summary) = summary {
            // The lines before it first, so the page keeps file order.
            if flush(&mut batch, &mut chosen)? {
                more = true;
                break;
            }
            batch_bytes = 0;
            let needle = needle.as_deref().unwrap_or_default();
            if large_event::contains(&path, &line, needle)? {
                more = chosen.len() == limit;
                if more {
                    break;
                }
                chosen.push((seq, line, Some(summary)));
            }
            continue;
        }
        batch.push((seq, line));
        batch_bytes += u64::from(line.len);
        if batch.len() == SCAN_BATCH || batch_bytes > BATCH_BYTES {
            batch_bytes = 0;
            if flush(&mut batch, &mut chosen)? {
                more = true;
                break;
            }
        }
    }
    if !more && flush(&mut batch, &mut chosen)? {
        more = true;
    }
    drop(inner);
    if !ascending {
        chosen.reverse();
    }
    render_page(&path, chosen, total, more, ascending)
}

/// The kind and sender filters of `query` as a test of an indexed line.
fn keeper(index: &LineIndex, query: &EventsQuery) -> impl Fn(&IndexedLine) -> bool + use<> {
    let ids = |names: Option<Vec<String>>| -> Option<Vec<u16>> {
        names.map(|names| names.iter().filter_map(|n| index.name_id(n)).collect())
    };
    let kind_ids = ids(split_list(query.kind.as_deref()));
    let role_ids = ids(split_list(query.role.as_deref()));
    move |line: &IndexedLine| {
        kind_ids.as_ref().is_none_or(|k| k.contains(&line.kind))
            && role_ids.as_ref().is_none_or(|r| r.contains(&line.from))
    }
}

/// Whether the page is read forward, and the lines it may hold in the order they are looked at
/// (with their sequence numbers).
fn candidates<'a>(
    index: &'a LineIndex,
    query: &EventsQuery,
) -> (bool, Box<dyn Iterator<Item = (usize, IndexedLine)> + 'a>) {
    let from_start = query.first == Some(true);
    if query.after.is_some() || from_start {
        let skip = if from_start {
            0
        } else {
            query.after.unwrap_or(0).saturating_add(1)
        };
        return (true, Box::new(index.scan(skip, true)));
    }
    let end = query.before.unwrap_or(index.len()).min(index.len());
    (false, Box::new(index.scan(end, false)))
}

/// A comma-separated filter as its non-empty items; `None` when there are none.
fn split_list(text: Option<&str>) -> Option<Vec<String>> {
    let items: Vec<String> = text?
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_owned)
        .collect();
    (!items.is_empty()).then_some(items)
}

/// The page as JSON text, reading the lines whose text was not read while filtering.
fn render_page(
    path: &std::path::Path,
    chosen: Vec<(usize, IndexedLine, Option<String>)>,
    total: usize,
    more: bool,
    ascending: bool,
) -> Result<String, ApiError> {
    let missing: Vec<IndexedLine> = chosen
        .iter()
        .filter(|c| c.2.is_none())
        .map(|c| c.1)
        .collect();
    let mut texts = read_lines(path, &missing)?.into_iter();
    let mut out = String::with_capacity(chosen.len() * 300 + 128);
    let _ = write!(
        out,
        "{{\"total\":{total},\"more_{}\":{more},\"events\":[",
        if ascending { "after" } else { "before" }
    );
    let mut first = true;
    for (seq, _, text) in chosen {
        let text = match text {
            Some(text) => Some(text),
            None => texts.next().flatten(),
        };
        let Some(text) = text else { continue };
        if !first {
            out.push(',');
        }
        first = false;
        let _ = write!(out, "{{\"seq\":{seq},\"event\":{text}}}");
    }
    out.push_str("]}");
    Ok(out)
}

/// `GET /api/sessions/{id}/graph`: the compiled graph with counts and the live position.
pub(crate) async fn graph(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let hub = fresh_hub(&app, &id, true).await?;
    let inner = hub.lock();
    match graph::view(&inner) {
        Some(view) => Ok(Json(json!(view))),
        None => Err(ApiError(
            StatusCode::UNPROCESSABLE_ENTITY,
            inner
                .table_error
                .clone()
                .unwrap_or_else(|| "no pipeline".into()),
        )),
    }
}
