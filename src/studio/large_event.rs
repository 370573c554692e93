//! Lines too long to send whole, served: each stream and each events page sends a summary in
//! their place ([`super::large_line`]); `GET /api/sessions/<id>/events/<event id>` serves the
//! exact line from the file a chunk at a time, and a page's text filter searches it the same way.
//! So what Studio holds per client stays a few KiB whatever one line holds (a 60 MB line once
//! cost about 90 MB per open stream).

use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path as FsPath;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use super::api_error::ApiError;
use super::app::{Shared, fresh_hub};
use super::index::{IndexedLine, read_lines};

/// Bytes read per chunk when a large line is served or searched.
const CHUNK: usize = 64 * 1024;

/// The text for each line, in order: a summary given for it, or the line read from `path`.
pub(crate) fn texts(
    path: &FsPath,
    lines: &[(IndexedLine, Option<String>)],
) -> io::Result<Vec<Option<String>>> {
    let unread: Vec<IndexedLine> = lines
        .iter()
        .filter(|(_, summary)| summary.is_none())
        .map(|(line, _)| *line)
        .collect();
    let mut read = read_lines(path, &unread)?.into_iter();
    Ok(lines
        .iter()
        .map(|(_, summary)| match summary {
            Some(summary) => Some(summary.clone()),
            None => read.next().flatten(),
        })
        .collect())
}

/// Whether the large line's text contains `needle` (lower case), read a chunk at a time: the
/// filter of an events page searches all of a line without holding it.
pub(crate) fn contains(path: &FsPath, line: &IndexedLine, needle: &str) -> io::Result<bool> {
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(line.offset))?;
    let mut reader = file.take(u64::from(line.len));
    // A match across two chunks lies in the carried tail (lower-casing may change lengths a little).
    let overlap = needle.len() * 4 + 8;
    let mut window: Vec<u8> = Vec::with_capacity(CHUNK + overlap);
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = reader.read(&mut chunk)?;
        if n == 0 {
            return Ok(false);
        }
        window.extend_from_slice(&chunk[..n]);
        if String::from_utf8_lossy(&window)
            .to_lowercase()
            .contains(needle)
        {
            return Ok(true);
        }
        let keep = window.len().min(overlap);
        window.drain(..window.len() - keep);
    }
}

/// `GET /api/sessions/{id}/events/{event_id}`: the event's exact line, streamed from the file a
/// chunk at a time (its sequence number in `X-Crumb-Seq`); 404 for an id the session lacks.
pub(crate) async fn full_event(
    State(app): State<Shared>,
    Path((id, event_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let hub = fresh_hub(&app, &id, false).await?;
    let (seq, line) = {
        let inner = hub.lock();
        let seq = inner
            .index
            .position(&event_id)
            .ok_or_else(|| ApiError::not_found("event"))?;
        let line = inner
            .index
            .get(seq)
            .ok_or_else(|| ApiError::not_found("event"))?;
        (seq, line)
    };
    let mut file = tokio::fs::File::open(hub.dir().transcript()).await?;
    file.seek(SeekFrom::Start(line.offset)).await?;
    let reader = Some(file.take(u64::from(line.len)));
    let chunks = futures::stream::unfold(reader, |reader| async move {
        let mut reader = reader?;
        let mut buf = vec![0u8; CHUNK];
        match reader.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok::<_, io::Error>(Bytes::from(buf)), Some(reader)))
            }
            // The error ends the body (the client sees it cut short); nothing is read after it.
            Err(e) => Some((Err(e), None)),
        }
    });
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (header::CONTENT_LENGTH, line.len.to_string()),
            (
                header::HeaderName::from_static("x-crumb-seq"),
                seq.to_string(),
            ),
        ],
        Body::from_stream(chunks),
    )
        .into_response())
}
