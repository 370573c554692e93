//! Reading a transcript file: the core's streaming reader
//! ([`crumb_core::transcript::reader`], which takes bytes and opens nothing) plus opening the file.

use std::io;
use std::path::Path;

pub use crumb_core::transcript::reader::*;

use crate::transcript::Event;

/// Read a whole transcript file with the rules every folding reader uses ([`Tolerant`]): our
/// events and mapped legacy lines, in file order, and an issue for each skipped line. A missing
/// file is an empty transcript.
pub fn read_path(path: &Path) -> io::Result<(Vec<Event>, Vec<LineIssue>)> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
        Err(e) => return Err(e),
    };
    let mut events = Vec::new();
    let mut issues = Vec::new();
    each_event(file, |event| events.push(event), |issue| issues.push(issue));
    Ok((events, issues))
}
