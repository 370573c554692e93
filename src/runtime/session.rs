//! Creating a session: its folder built under a temporary name, the pipeline frozen, the
//! first events written, then renamed into place ([`Prepared::commit`]). The folder's layout is
//! [`super::session_dir`].

use std::path::{Path, PathBuf};

use super::authority_record::{AuthorityError, AuthorityRecord};
use super::freeze::{FreezeError, FreezeSource, FrozenPipeline, freeze};
use super::lock::{CoordinatorLock, LockError};
use super::meta::{META_SCHEMA_VERSION, Meta, MetaError, SessionStatus, now_rfc3339};
use super::session_dir::{INBOX_FILE, META_FILE, NotASession, SessionDir, TRANSCRIPT_FILE};
use super::session_read::{OpenError, compile_frozen_recording};
use crate::home::{CrumbHome, Project};
use crate::transcript::Draft;
use crate::transcript::writer::Writer;

/// A session could not be created or opened.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot create {path}: {source}")]
    Create {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    NotASession(#[from] NotASession),
    #[error(transparent)]
    Pipeline(#[from] OpenError),
    #[error(transparent)]
    Freeze(#[from] FreezeError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Meta(#[from] MetaError),
    #[error(transparent)]
    Authority(#[from] AuthorityError),
    #[error("cannot write the session's first events: {0}")]
    Header(String),
    #[error("refused: {0}; nothing was created")]
    GoalTooLarge(String),
}

impl SessionError {
    /// Whether a write failed (a full disk, a quota) rather than the request being refused.
    pub(crate) fn is_write(&self) -> bool {
        matches!(
            self,
            SessionError::Create { .. }
                | SessionError::Header(_)
                | SessionError::Freeze(FreezeError::Write { .. })
                | SessionError::Meta(MetaError::Write { .. })
                | SessionError::Authority(AuthorityError::Write { .. })
                | SessionError::Lock(LockError::Io { .. })
        )
    }
}

/// A freshly created session, locked by the caller, which becomes its coordinator.
#[derive(Debug)]
pub struct CreatedSession {
    pub dir: SessionDir,
    pub lock: CoordinatorLock,
    pub meta: Meta,
    pub frozen: FrozenPipeline,
}

/// Prefix of a session folder still being built; `crumb ls` and id lookups never see these.
pub(crate) const BUILDING_PREFIX: &str = ".tmp-";

/// How old an abandoned folder under construction must be before it is swept (see [`sweep`]).
const SWEEP_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// A session being built under a temporary name (`sessions/.tmp-<ULID>/`), locked by its
/// creator. It appears under its real name only whole ([`Prepared::commit`]); dropped without a
/// commit, it is removed, so a failed start leaves nothing behind.
#[derive(Debug)]
pub(crate) struct Prepared {
    building: PathBuf,
    final_path: PathBuf,
    id: String,
    lock: Option<CoordinatorLock>,
    pub meta: Meta,
    pub frozen: FrozenPipeline,
}

impl Prepared {
    /// Where the session will live once committed (bindings point at its frozen copies there).
    pub(crate) fn final_path(&self) -> &Path {
        &self.final_path
    }

    /// The folder as it is being built (its frozen pipeline can be compiled from here).
    pub(crate) fn building_path(&self) -> &Path {
        &self.building
    }

    /// Write the transcript's first events in one append, then rename the folder into place.
    pub(crate) fn commit(mut self, first: Vec<Draft>) -> Result<CreatedSession, SessionError> {
        let transcript = self.building.join(TRANSCRIPT_FILE);
        Writer::open(&transcript, &self.id)
            .and_then(|mut writer| writer.append_all(first))
            .map_err(|e| SessionError::Header(e.to_string()))?;
        std::fs::rename(&self.building, &self.final_path).map_err(|source| {
            SessionError::Create {
                path: self.final_path.display().to_string(),
                source,
            }
        })?;
        let lock = self
            .lock
            .take()
            .ok_or_else(|| SessionError::Header("the session lock was lost".into()))?
            .moved_to(&self.final_path);
        Ok(CreatedSession {
            dir: SessionDir::created(self.final_path.clone(), self.id.clone()),
            lock,
            meta: self.meta.clone(),
            frozen: self.frozen.clone(),
        })
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if self.lock.is_some() {
            // Not committed: the half-built folder goes (the lock first, so nothing holds it).
            drop(self.lock.take());
            let _ = std::fs::remove_dir_all(&self.building);
        }
    }
}

/// Create a new session whose transcript starts with just `goal` (tests, benches, Studio's
/// Compile the pipeline at `pipeline_path` as a frozen copy is compiled and create a session
/// for it (tests, benches and tools; `crumb run` prepares from the plan it already compiled).
pub fn create(
    home: &CrumbHome,
    project: &Project,
    pipeline_path: &Path,
    goal: &str,
) -> Result<CreatedSession, SessionError> {
    let (table, read) = compile_frozen_recording(pipeline_path)?;
    let source = FreezeSource {
        path: pipeline_path,
        table: &table,
        read: &read,
    };
    prepare(home, project, source, goal)?.commit(Vec::new())
}

/// Start building a session for `project` under `home` in a temporary folder: make the folders,
/// take the coordinator lock, freeze the pipeline, write `authority.json` and `meta.json` (status
/// `running`, our pid). Abandoned folders of earlier, killed runs are swept first.
pub(crate) fn prepare(
    home: &CrumbHome,
    project: &Project,
    source: FreezeSource<'_>,
    goal: &str,
) -> Result<Prepared, SessionError> {
    if let Some(problem) = super::limits::goal_problem(goal) {
        return Err(SessionError::GoalTooLarge(problem));
    }
    let sessions = home.sessions_dir(project);
    let create_err = |path: &Path| {
        let path = path.display().to_string();
        move |source| SessionError::Create { path, source }
    };
    std::fs::create_dir_all(&sessions).map_err(create_err(&sessions))?;
    sweep(&sessions);
    let id = next_session_id();
    let building = sessions.join(format!("{BUILDING_PREFIX}{id}"));
    // `create_dir` (not `_all`) fails on an existing folder, so two runs can never share one.
    std::fs::create_dir(&building).map_err(create_err(&building))?;
    let lock = match CoordinatorLock::acquire(&building) {
        Ok(lock) => lock,
        Err(err) => {
            let _ = std::fs::remove_dir_all(&building);
            return Err(err.into());
        }
    };
    let (frozen, meta) = match populate(&building, &id, source, goal) {
        Ok(done) => done,
        Err(err) => {
            drop(lock);
            let _ = std::fs::remove_dir_all(&building);
            return Err(err);
        }
    };
    Ok(Prepared {
        final_path: sessions.join(&id),
        building,
        id,
        lock: Some(lock),
        meta,
        frozen,
    })
}

/// Remove folders under construction that their creator abandoned: the creator holds the
/// coordinator lock from just after `mkdir` until the rename, and the kernel drops it when the
/// process dies, so a free lock on a folder older than `SWEEP_GRACE` (the grace covers the
/// instant between `mkdir` and the lock) means nobody will finish it.
pub(crate) fn sweep(sessions: &Path) {
    let Ok(entries) = std::fs::read_dir(sessions) else {
        return;
    };
    for entry in entries.flatten() {
        let is_building = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(BUILDING_PREFIX));
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age >= SWEEP_GRACE);
        if is_building && old && !super::lock::is_held(&entry.path()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Make the sub-folders and empty files, freeze the pipeline and write `meta.json`.
fn populate(
    path: &Path,
    id: &str,
    source: FreezeSource<'_>,
    goal: &str,
) -> Result<(FrozenPipeline, Meta), SessionError> {
    let create_err = |path: &Path| {
        let path = path.display().to_string();
        move |source| SessionError::Create { path, source }
    };
    for sub in ["artifacts", "prompts", "logs", "qa"] {
        let dir = path.join(sub);
        std::fs::create_dir(&dir).map_err(create_err(&dir))?;
    }
    for file in [TRANSCRIPT_FILE, INBOX_FILE] {
        let file = path.join(file);
        std::fs::File::create(&file).map_err(create_err(&file))?;
    }
    let frozen = freeze(source, path)?;
    // The frozen copy is the same bytes the table was compiled from, so its authority is the
    // table's: nothing is compiled a second time.
    AuthorityRecord::of(source.table).write(path)?;
    let now = now_rfc3339();
    let meta = Meta {
        schema_version: META_SCHEMA_VERSION,
        session_id: id.to_owned(),
        status: SessionStatus::Running,
        pid: Some(std::process::id()),
        pipeline: frozen.name.clone(),
        pipeline_file: frozen.pipeline_file.clone(),
        pipeline_hash: frozen.hash.clone(),
        roles: frozen.roles.clone(),
        created: now.clone(),
        updated: now,
        goal: goal.to_owned(),
    };
    meta.write(&path.join(META_FILE))?;
    Ok((frozen, meta))
}

/// A new session id: a ULID, strictly increasing within this process (so sessions created in the
/// same millisecond still list in creation order).
fn next_session_id() -> String {
    static GENERATOR: std::sync::Mutex<ulid::Generator> =
        std::sync::Mutex::new(ulid::Generator::new());
    let mut generator = GENERATOR
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Overflow needs 2^80 ids in one millisecond; fall back to a fresh random ULID regardless.
    generator
        .generate()
        .unwrap_or_else(|_| ulid::Ulid::new())
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_setup_leaves_no_folder_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let home = CrumbHome::at(tmp.path().join("home"));
        let project = Project::from_root(tmp.path().to_path_buf());
        let pipeline = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipelines/doc-review.yaml");
        let (table, read) = compile_frozen_recording(&pipeline).unwrap();
        // A file the compile read that is gone by the time the session is frozen.
        let read: Vec<PathBuf> = read
            .into_iter()
            .chain([tmp.path().join("gone.yaml")])
            .collect();
        let source = FreezeSource {
            path: &pipeline,
            table: &table,
            read: &read,
        };
        assert!(matches!(
            prepare(&home, &project, source, "g"),
            Err(SessionError::Freeze(_))
        ));
        let sessions = home.sessions_dir(&project);
        assert_eq!(std::fs::read_dir(sessions).unwrap().count(), 0);
    }

    #[test]
    fn a_session_appears_only_when_committed_with_its_first_events() {
        let tmp = tempfile::tempdir().unwrap();
        let home = CrumbHome::at(tmp.path().join("home"));
        let project = Project::from_root(tmp.path().to_path_buf());
        let pipeline = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipelines/doc-review.yaml");
        let sessions = home.sessions_dir(&project);
        let names = || -> Vec<String> {
            std::fs::read_dir(&sessions)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        };

        let (table, read) = compile_frozen_recording(&pipeline).unwrap();
        let source = FreezeSource {
            path: &pipeline,
            table: &table,
            read: &read,
        };
        drop(prepare(&home, &project, source, "g").unwrap());
        assert!(names().is_empty(), "an uncommitted session leaves nothing");

        let prepared = prepare(&home, &project, source, "g").unwrap();
        assert!(!prepared.final_path().exists());
        assert!(names()[0].starts_with(BUILDING_PREFIX));
        let first = vec![
            Draft::new("system", crate::transcript::Kind::Note).body("a"),
            Draft::new("user", crate::transcript::Kind::Goal).body("g"),
        ];
        let created = prepared.commit(first).unwrap();
        assert_eq!(names(), [created.dir.id()]);
        let text = std::fs::read_to_string(created.dir.transcript()).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(super::super::lock::is_held(created.dir.path()));
    }
}
