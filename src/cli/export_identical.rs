//! Every format's output on fixed sessions, byte for byte against the files the exporter wrote
//! before it stopped holding the session's events (`tests/fixtures/export/reference/`). With
//! `CRUMB_BLESS_EXPORT=1` the files are written instead (only ever from a build whose output is
//! the reference).

use std::path::{Path, PathBuf};

use crate::home::{CrumbHome, Project};
use crate::runtime::session;
use crate::runtime::session_dir::SessionDir;

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// `mock-run-1.jsonl` told `times` times over, each time with fresh ids (parents rewritten to
/// match) and ten minutes later: a session longer than the report's last-events list.
fn repeated(times: u32) -> Vec<u8> {
    let text = std::fs::read_to_string(repo("tests/fixtures/transcripts/legacy/mock-run-1.jsonl"))
        .expect("legacy transcript");
    let mut out = Vec::new();
    let mut n = 0u64;
    for round in 0..times {
        let mut ids = std::collections::HashMap::new();
        for line in text.lines() {
            let mut value: serde_json::Value = serde_json::from_str(line).expect("json line");
            n += 1;
            let id = format!("01JZ{n:022}");
            if let Some(old) = value["id"].as_str() {
                ids.insert(old.to_owned(), id.clone());
            }
            value["id"] = id.into();
            if let Some(parent) = value["parent_event_id"].as_str()
                && let Some(new) = ids.get(parent)
            {
                value["parent_event_id"] = new.clone().into();
            }
            if let Some(ts) = value["ts"].as_str()
                && let Ok(at) = chrono::DateTime::parse_from_rfc3339(ts)
            {
                let later = at + chrono::Duration::minutes(10 * i64::from(round));
                value["ts"] = later
                    .to_utc()
                    .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                    .to_string()
                    .into();
            }
            out.extend_from_slice(value.to_string().as_bytes());
            out.push(b'\n');
        }
    }
    out
}

#[test]
fn every_format_writes_what_it_wrote_before() {
    let bless = std::env::var_os("CRUMB_BLESS_EXPORT").is_some();
    let golden = repo("tests/fixtures/export/reference");
    let mut sessions: Vec<(String, Vec<u8>)> = [
        "mock-run-1",
        "mock-run-2",
        "real-01KQMS9E5M1Z7TEF32E81YXAGT",
        "real-01KQNAK1CXTBDEBX2WP2QQK891",
        "real-01KQQ40DCPNGHF54P2BJKP10MH",
    ]
    .iter()
    .map(|name| {
        let path = repo(&format!("tests/fixtures/transcripts/legacy/{name}.jsonl"));
        (
            (*name).to_owned(),
            std::fs::read(path).expect("legacy transcript"),
        )
    })
    .collect();
    sessions.push(("repeated-30".to_owned(), repeated(30)));
    let tmp = tempfile::tempdir().expect("tempdir");
    let project = Project::containing(tmp.path()).expect("project");
    let home = CrumbHome::at(tmp.path().join("home"));
    let mut differ = Vec::new();
    for (n, (name, transcript)) in sessions.iter().enumerate() {
        let created =
            session::create(&home, &project, &repo("pipelines/casual.yaml"), "g").expect("session");
        // A fixed id (the folder's name): OTLP's ids are derived from it.
        let fixed = created.dir.path().with_file_name(format!("01JZ{n:022}"));
        std::fs::rename(created.dir.path(), &fixed).expect("rename");
        let dir = SessionDir::open(&fixed).expect("session dir");
        std::fs::write(dir.transcript(), transcript).expect("transcript");
        let loaded = crate::export::load(&dir).expect("loads");
        for (format, ext) in [
            (crate::cli::export::Format::Html, "html"),
            (crate::cli::export::Format::Md, "md"),
            (crate::cli::export::Format::ChromeTrace, "trace.json"),
            (crate::cli::export::Format::OtlpJson, "otlp.json"),
        ] {
            let text = crate::cli::export::render(&loaded, format).expect("renders");
            let text = text.replace(&fixed.display().to_string(), "DIR");
            let file = golden.join(format!("{name}.{ext}"));
            if bless {
                std::fs::create_dir_all(&golden).expect("golden dir");
                std::fs::write(&file, &text).expect("bless");
            } else if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
                differ.push(file);
            }
        }
    }
    assert!(differ.is_empty(), "output changed: {differ:#?}");
}

/// The golden files are there (a bless that wrote nothing would make the test above vacuous).
#[test]
fn the_reference_outputs_are_kept() {
    let golden = repo("tests/fixtures/export/reference");
    let count = std::fs::read_dir(&golden).map_or(0, Iterator::count);
    assert_eq!(count, 24, "{}", Path::new(&golden).display());
}
