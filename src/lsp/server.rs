//! The server's state between messages: the open buffers, every pipeline diagnosed (the files
//! its compile read, the files it published diagnostics into, its table), and publishing.
//! A change to any file re-diagnoses the file itself when it stands alone (a pipeline or preset)
//! and every pipeline that read it (a template, an `include:`/`extends:` fragment).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};

use crossbeam_channel::Sender;
use crumb_core::pipeline::file_report::{self, is_preset};
use crumb_core::pipeline::source::SourceFiles;
use crumb_core::pipeline::table::TransitionTable;
use lsp_server::{Message, Notification};
use lsp_types::{Diagnostic, PublishDiagnosticsParams, Range};

use super::check_findings::{Checker, Generations, Job};
use super::diagnostics;
use super::documents::Documents;
use super::outline::Outline;
use super::position::Lines;
use super::recording::Recording;
use super::uri::from_path;

/// What one compile of a pipeline left behind.
pub(crate) struct Diagnosed {
    /// Every path the compile asked for (the pipeline, its fragments, its templates).
    pub(crate) reads: BTreeSet<PathBuf>,
    /// The files it published diagnostics into, besides itself.
    into: BTreeSet<PathBuf>,
    pub(crate) table: Option<TransitionTable>,
}

pub(crate) struct Server {
    sender: Sender<Message>,
    pub(crate) documents: Documents,
    pub(crate) pipelines: HashMap<PathBuf, Diagnosed>,
    /// What was last published for each file (hover over a code, code actions read it).
    pub(crate) published: HashMap<PathBuf, Vec<Diagnostic>>,
    generations: Generations,
    checker: Checker,
}

/// Whether `path` is YAML (pipelines, presets, fragments) rather than a template.
pub(crate) fn is_yaml(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "yaml" || e == "yml")
}

impl Server {
    pub(crate) fn new(sender: Sender<Message>) -> Server {
        let generations = Generations::default();
        Server {
            checker: Checker::start(sender.clone(), generations.clone()),
            sender,
            documents: Documents::default(),
            pipelines: HashMap::new(),
            published: HashMap::new(),
            generations,
        }
    }

    pub(crate) fn send(&self, message: Message) {
        let _ = self.sender.send(message);
    }

    /// `path` changed (opened, edited, saved, closed): re-diagnose what depends on it.
    pub(crate) fn touched(&mut self, path: &Path) {
        let mut targets: BTreeSet<PathBuf> = self
            .pipelines
            .iter()
            .filter(|(pipeline, diagnosed)| *pipeline != path && diagnosed.reads.contains(path))
            .map(|(pipeline, _)| pipeline.clone())
            .collect();
        if is_yaml(path) && self.stands_alone(path) {
            targets.insert(path.to_path_buf());
        } else if targets.is_empty() {
            targets.extend(self.discover(path));
        }
        let own = targets.contains(path);
        for target in targets {
            self.diagnose(&target);
        }
        // A template or fragment: its diagnostics (from the pipelines that read it) stand for
        // this version of it too.
        if !own && let Some(version) = self.documents.get(path).map(|d| d.version) {
            let current = self.published.get(path).cloned().unwrap_or_default();
            self.publish(path, current, Some(version));
        }
    }

    /// A file closed: diagnosed again from the disk, or forgotten when it is gone.
    pub(crate) fn closed(&mut self, path: &Path) {
        self.documents.close(path);
        if path.exists() {
            self.touched(path);
            return;
        }
        if let Some(diagnosed) = self.pipelines.remove(path) {
            for file in diagnosed.into {
                self.publish(&file, Vec::new(), None);
            }
        }
        self.bump(path);
        self.publish(path, Vec::new(), None);
    }

    /// Whether a YAML file is checked on its own: a pipeline or preset, not a fragment (a file
    /// with neither `version` nor `name` that some pipeline includes or extends).
    fn stands_alone(&self, path: &Path) -> bool {
        let Some(text) = self.documents.text(path) else {
            return self.documents.get(path).is_some();
        };
        // A top-level `version:` or `name:` line: read from the text, not parsed, since a
        // hostile file costs the compiler's whole parse budget each time it is parsed.
        let top_key = text.lines().any(|line| {
            line.starts_with("version:")
                || line.starts_with("name:")
                || line.starts_with("version :")
        });
        // A file with no top-level key at all (empty, comments only) is reported as validate
        // reports it.
        let any_key = text
            .lines()
            .any(|line| line.starts_with(|c: char| c.is_alphanumeric() || c == '"' || c == '\''));
        top_key || !any_key || is_preset(path, text.as_bytes())
    }

    /// The pipelines near a file no known pipeline reads (its folder, the one above, and that
    /// one's `pipelines/`) that read it, diagnosed on the way.
    fn discover(&mut self, path: &Path) -> Vec<PathBuf> {
        let Some(dir) = path.parent() else {
            return Vec::new();
        };
        let mut candidates = BTreeSet::new();
        for folder in [dir.to_path_buf(), dir.join(".."), dir.join("../pipelines")] {
            let Ok(entries) = std::fs::read_dir(&folder) else {
                continue;
            };
            candidates.extend(
                entries
                    .filter_map(Result::ok)
                    .map(|e| super::uri::normalize(&e.path()))
                    .filter(|p| is_yaml(p) && p != path && !self.pipelines.contains_key(p)),
            );
        }
        let files = self.documents.files();
        candidates
            .into_iter()
            .take(200)
            .filter(|candidate| {
                let recording = Recording::over(files.clone());
                let shared: Arc<dyn SourceFiles> = recording.clone();
                let _ = file_report::read_and_compile(candidate, &shared);
                recording.paths().contains(path)
            })
            .collect()
    }

    /// Compile `pipeline` as `crumb validate` would, over the open buffers, and publish.
    pub(crate) fn diagnose(&mut self, pipeline: &Path) {
        let recording = Recording::over(self.documents.files());
        let files: Arc<dyn SourceFiles> = recording.clone();
        let (report, table) = file_report::read_and_compile(pipeline, &files);
        let by_file = diagnostics::by_file(pipeline, &report, |p| self.documents.text(p));
        let into: BTreeSet<PathBuf> = by_file.keys().filter(|p| *p != pipeline).cloned().collect();
        let stale: Vec<PathBuf> = self
            .pipelines
            .get(pipeline)
            .map(|d| d.into.difference(&into).cloned().collect())
            .unwrap_or_default();
        for file in stale {
            self.publish(&file, Vec::new(), None);
        }
        let generation = self.bump(pipeline);
        let version = self.documents.get(pipeline).map(|d| d.version);
        // The other files first: a client that sees the pipeline's own (versioned) diagnostics
        // has seen everything this compile found.
        let mut own = Vec::new();
        for (file, found) in by_file {
            if file == pipeline {
                own = found;
            } else {
                self.publish(&file, found, None);
            }
        }
        self.publish(pipeline, own.clone(), version);
        // After the validate diagnostics went out, so the findings arrive on top of them.
        if let Some(table) = &table {
            self.submit_check(pipeline, generation, table, &own, version);
        }
        self.pipelines.insert(
            pipeline.to_path_buf(),
            Diagnosed {
                reads: recording.paths(),
                into,
                table,
            },
        );
    }

    fn submit_check(
        &self,
        pipeline: &Path,
        generation: u64,
        table: &TransitionTable,
        validate: &[Diagnostic],
        version: Option<i32>,
    ) {
        let text = self.documents.text(pipeline).unwrap_or_default();
        let lines = Lines::new(&text);
        let outline = Outline::parse(&text);
        let range = |pointer: &str| {
            outline
                .as_ref()
                .and_then(|o| o.span(pointer))
                .map_or_else(diagnostics::file_start, |s| lines.span_range(s))
        };
        self.checker.submit(Job {
            path: pipeline.to_path_buf(),
            generation,
            table: table.clone(),
            validate: validate.to_vec(),
            routes: range("/routes"),
            route_ranges: (0..table.routes.len())
                .map(|i| range(&format!("/routes/{i}")))
                .collect::<Vec<Range>>(),
            version,
        });
    }

    /// A new generation of `path`'s diagnostics: background findings for older ones are dropped.
    fn bump(&self, path: &Path) -> u64 {
        let mut generations = self
            .generations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let next = generations.get(path).map_or(1, |g| g + 1);
        generations.insert(path.to_path_buf(), next);
        next
    }

    fn publish(&mut self, path: &Path, found: Vec<Diagnostic>, version: Option<i32>) {
        let Some(uri) = from_path(path) else { return };
        self.published.insert(path.to_path_buf(), found.clone());
        let params = PublishDiagnosticsParams::new(uri, found, version);
        // Under the generations lock, so a background finding cannot slip in after it.
        let held = self
            .generations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.send(Message::Notification(Notification::new(
            "textDocument/publishDiagnostics".into(),
            params,
        )));
        drop(held);
    }

    /// The YAML files that share names with `path`: itself, the pipelines that read it, and
    /// every YAML file those read (fragments), each readable.
    pub(crate) fn family(&self, path: &Path) -> Vec<PathBuf> {
        let mut set = BTreeSet::from([path.to_path_buf()]);
        for (pipeline, diagnosed) in &self.pipelines {
            if pipeline == path || diagnosed.reads.contains(path) {
                set.insert(pipeline.clone());
                set.extend(diagnosed.reads.iter().filter(|p| is_yaml(p)).cloned());
            }
        }
        set.into_iter()
            .filter(|p| is_yaml(p) && self.documents.text(p).is_some())
            .collect()
    }
}
