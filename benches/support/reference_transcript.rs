//! A long transcript shaped like the reference's own logs, the way its baseline measured replay
//! (the TypeScript reference's baseline notes, §5, which are not part of this repository): its
//! 38-event mock session (`tests/fixtures/transcripts/legacy/mock-run-1.jsonl`) cycled as blocks,
//! every event with a fresh monotonic ULID (its timestamp becomes `ts`), every in-block id
//! reference rewritten, one session id everywhere (also inside paths), and the block's own spacing
//! of `ts` kept. About 347 bytes an event, all in the reference's shapes (replay maps many of
//! them).

use std::io::{BufWriter, Write};
use std::path::Path;

/// The reference's mock session, one block.
const BLOCK: &str = include_str!("../../tests/fixtures/transcripts/legacy/mock-run-1.jsonl");
/// 2026-05-01T00:00:00Z in milliseconds.
const START_MS: i64 = 1_777_593_600_000;
/// Session id used throughout.
const SESSION: &str = "01KREFBENCH00000000000000S";

/// One piece of a line: text as it is, or a value filled in per block.
enum Piece {
    Text(String),
    /// The id of the block's event at this index.
    Id(usize),
    Session,
    Ts,
}

struct Template {
    pieces: Vec<Piece>,
    /// Milliseconds after the block's first event.
    offset_ms: i64,
}

fn templates() -> Vec<Template> {
    let lines: Vec<&str> = BLOCK.lines().filter(|l| !l.trim().is_empty()).collect();
    let values: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("the fixture is JSON"))
        .collect();
    let text = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
    let ids: Vec<String> = values.iter().map(|v| text(v, "id")).collect();
    let session = text(&values[0], "session_id");
    let first_ms = ms_of(&text(&values[0], "ts"));
    lines
        .iter()
        .zip(&values)
        .map(|(line, value)| {
            let ts = text(value, "ts");
            let mut marks: Vec<(usize, usize, Piece)> = Vec::new();
            for (i, id) in ids.iter().enumerate() {
                marks.extend(
                    line.match_indices(id.as_str())
                        .map(|(at, _)| (at, id.len(), Piece::Id(i))),
                );
            }
            marks.extend(
                line.match_indices(session.as_str())
                    .map(|(at, _)| (at, session.len(), Piece::Session)),
            );
            marks.extend(
                line.match_indices(&format!("\"ts\":\"{ts}\""))
                    .map(|(at, _)| (at + 6, ts.len(), Piece::Ts)),
            );
            marks.sort_by_key(|m| m.0);
            let mut pieces = Vec::new();
            let mut at = 0;
            for (start, len, piece) in marks {
                if start < at {
                    continue;
                }
                pieces.push(Piece::Text(line[at..start].to_owned()));
                pieces.push(piece);
                at = start + len;
            }
            pieces.push(Piece::Text(line[at..].to_owned()));
            Template {
                pieces,
                offset_ms: ms_of(&ts) - first_ms,
            }
        })
        .collect()
}

fn ms_of(ts: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(ts).map_or(0, |t| t.timestamp_millis())
}

/// Write `events` events to `out`.
pub fn generate(events: u64, out: &Path) -> std::io::Result<()> {
    let templates = templates();
    let span = templates.last().map_or(0, |t| t.offset_ms) + 1;
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(out)?);
    let mut n: u64 = 0;
    let mut block: i64 = 0;
    let mut ids = vec![String::new(); templates.len()];
    'blocks: loop {
        let base = START_MS + block * span;
        for (i, t) in templates.iter().enumerate() {
            let ms = u64::try_from(base + t.offset_ms).unwrap_or(0);
            ids[i] = ulid::Ulid::from_parts(ms, u128::from(n + i as u64)).to_string();
        }
        for t in &templates {
            if n >= events {
                break 'blocks;
            }
            let ms = base + t.offset_ms;
            for piece in &t.pieces {
                match piece {
                    Piece::Text(s) => w.write_all(s.as_bytes())?,
                    Piece::Id(k) => w.write_all(ids[*k].as_bytes())?,
                    Piece::Session => w.write_all(SESSION.as_bytes())?,
                    Piece::Ts => {
                        let ts = chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
                        write!(w, "{}", ts.format("%Y-%m-%dT%H:%M:%S%.3fZ"))?;
                    }
                }
            }
            w.write_all(b"\n")?;
            n += 1;
        }
        block += 1;
    }
    w.flush()
}
