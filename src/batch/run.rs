//! Running a batch on this machine: each pitch is a child `crumb run` (so a session killed with
//! the batch is resumed by the next `crumb run` of the same pitch), at most `jobs` at once, under
//! one progress display, within a global token and wall budget.

use crate::fs::stdout::outln;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::record::{BatchDir, BatchFile, PitchRecord};
use super::summary::Row;
use crate::exit_codes::INTERRUPTED;

/// How a batch runs.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// The crumb home every child uses.
    pub home: PathBuf,
    pub jobs: usize,
    /// Arguments every child `crumb run` gets (`--adapter`, `--mock-scenario`, `--bind`, …).
    pub run_args: Vec<String>,
    /// Start no pitch once the finished sessions used this many tokens together.
    pub max_tokens: Option<u64>,
    /// Start nothing after this long, and stop (resumably) what still runs.
    pub max_wall: Option<Duration>,
    /// Run only this pitch (one pod of a Kubernetes Indexed Job).
    pub only: Option<usize>,
    /// Plain lines instead of the multi-bar (not a terminal, or `--json`/`--csv` quiet).
    pub plain: bool,
    pub quiet: bool,
}

/// What a pitch's record says about running it now.
fn settled(dir: &BatchDir, index: usize) -> Option<String> {
    let record = dir.pitch(index);
    match (record.session, record.exit_code) {
        // Interrupted (or killed before exiting): `crumb run` resumes it.
        (Some(session), Some(code)) if code != INTERRUPTED => Some(session),
        _ => None,
    }
}

/// The session folder of `session` under `home`, in any project.
pub(crate) fn session_path(home: &std::path::Path, session: &str) -> Option<PathBuf> {
    std::fs::read_dir(home.join("projects"))
        .ok()?
        .flatten()
        .map(|project| project.path().join("sessions").join(session))
        .find(|path| path.is_dir())
}

/// Shared between the workers.
struct Shared<'a> {
    dir: &'a BatchDir,
    batch: &'a BatchFile,
    pipeline: &'a std::path::Path,
    options: &'a Options,
    queue: Mutex<std::vec::IntoIter<usize>>,
    rows: Mutex<Vec<Option<Row>>>,
    children: Mutex<Vec<u32>>,
    tokens: AtomicU64,
    stop: AtomicBool,
    stop_note: Mutex<String>,
    bars: MultiProgress,
    total: ProgressBar,
}

/// Run the pitches of `batch` that are not settled yet and return every pitch's row.
pub(crate) fn run(
    dir: &BatchDir,
    batch: &BatchFile,
    options: &Options,
) -> Result<Vec<Row>, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the crumb binary: {e}"))?;
    let indices: Vec<usize> = match options.only {
        Some(index) => vec![index],
        None => (0..batch.pitches.len()).collect(),
    };
    let mut rows: Vec<Option<Row>> = vec![None; batch.pitches.len()];
    let mut pending = Vec::new();
    for &index in &indices {
        let pitch = &batch.pitches[index].pitch;
        match settled(dir, index).and_then(|s| session_path(&options.home, &s)) {
            Some(path) => rows[index] = Some(Row::of_session(index, pitch, &path)),
            None => pending.push(index),
        }
    }
    let bars = MultiProgress::with_draw_target(if options.plain || options.quiet {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    });
    let total = bars.add(ProgressBar::new(indices.len() as u64));
    total.set_style(
        ProgressStyle::with_template("batch [{elapsed}] {pos}/{len} sessions ended · {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    total.set_position((indices.len() - pending.len()) as u64);
    let shared = Shared {
        dir,
        batch,
        pipeline: &batch.pipeline,
        options,
        queue: Mutex::new(pending.into_iter()),
        rows: Mutex::new(rows),
        children: Mutex::new(Vec::new()),
        tokens: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        stop_note: Mutex::new(String::new()),
        bars,
        total,
    };
    let started = Instant::now();
    std::thread::scope(|scope| {
        let (done_tx, done_rx) = mpsc::channel::<()>();
        for _ in 0..options.jobs.max(1) {
            let done = done_tx.clone();
            let shared = &shared;
            let exe = &exe;
            scope.spawn(move || {
                worker(shared, exe);
                drop(done);
            });
        }
        drop(done_tx);
        if let Some(limit) = options.max_wall {
            let left = limit.saturating_sub(started.elapsed());
            if let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(left) {
                stop(&shared, "the batch's wall budget is spent");
                for pid in lock(&shared.children).iter() {
                    crate::process::group::terminate_process(*pid);
                }
            }
        }
    });
    shared.total.finish_and_clear();
    let rows = shared
        .rows
        .into_inner()
        .map_err(|_| "a batch worker panicked".to_owned())?;
    let note = lock(&shared.stop_note).clone();
    Ok(indices
        .into_iter()
        .map(|i| {
            rows[i]
                .clone()
                .unwrap_or_else(|| Row::not_run(i, &batch.pitches[i].pitch, note.clone()))
        })
        .collect())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn stop(shared: &Shared<'_>, why: &str) {
    let mut note = lock(&shared.stop_note);
    if note.is_empty() {
        *note = format!("{why}; run the batch again to go on");
    }
    shared.stop.store(true, Ordering::SeqCst);
}

fn worker(shared: &Shared<'_>, exe: &std::path::Path) {
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Some(index) = lock(&shared.queue).next() else {
            return;
        };
        let row = run_one(shared, exe, index);
        let tokens = shared.tokens.fetch_add(row.tokens, Ordering::SeqCst) + row.tokens;
        if shared.options.max_tokens.is_some_and(|max| tokens >= max) {
            stop(shared, "the batch's token budget is spent");
        }
        let line = format!(
            "#{index} {} {} ({})",
            row.outcome,
            clip(&row.pitch, 40),
            row.session.as_deref().unwrap_or("no session")
        );
        if shared.options.plain && !shared.options.quiet {
            outln!("{line}");
        } else {
            let _ = shared.bars.println(line);
        }
        shared.total.inc(1);
        shared.total.set_message(format!("{tokens} tokens"));
        lock(&shared.rows)[index] = Some(row);
    }
}

fn clip(text: &str, n: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    if first.chars().count() > n {
        format!("{}…", first.chars().take(n).collect::<String>())
    } else {
        first.to_owned()
    }
}

/// The line of one running session: its pitch, elapsed time and current role.
fn session_bar(shared: &Shared<'_>, index: usize, pitch: &str) -> ProgressBar {
    let bar = shared.bars.add(ProgressBar::new_spinner());
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed:>4}] {prefix} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_prefix(format!("#{index} {}", clip(pitch, 30)));
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The child that drives pitch `index`: `crumb resume` of its known session (bindings are in
/// its `session.start`), else `crumb run` reading the pitch on stdin.
fn child_command(
    shared: &Shared<'_>,
    exe: &std::path::Path,
    index: usize,
    known: Option<&std::path::Path>,
    log: &std::path::Path,
) -> Command {
    let pitch = &shared.batch.pitches[index];
    let mut command = crate::process::command::blocking(exe);
    match known {
        // The session is known: take it over exactly (its bindings are in `session.start`).
        Some(path) => command.arg("resume").arg(path),
        None => command
            .arg("run")
            .arg(shared.pipeline)
            .arg("-")
            .args(run_args(&shared.options.run_args, pitch))
            .args(pitch.bind.iter().flat_map(|b| ["--bind", b.as_str()]))
            .args(pitch.set.iter().flat_map(|s| ["--set", s.as_str()])),
    };
    command
        .arg("--home")
        .arg(&shared.options.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(match std::fs::File::create(log) {
            Ok(file) => Stdio::from(file),
            Err(_) => Stdio::null(),
        });
    command
}

/// The batch's `crumb run` arguments for `pitch`: its own `mock_scenario` replaces the batch's.
fn run_args(args: &[String], pitch: &super::plan::Pitch) -> Vec<String> {
    let Some(scenario) = &pitch.mock_scenario else {
        return args.to_vec();
    };
    let mut out = Vec::with_capacity(args.len() + 2);
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--mock-scenario" {
            rest.next();
        } else {
            out.push(arg.clone());
        }
    }
    out.extend(["--mock-scenario".to_owned(), scenario.clone()]);
    out
}

/// Drive pitch `index` with a child `crumb run` and read its session back.
fn run_one(shared: &Shared<'_>, exe: &std::path::Path, index: usize) -> Row {
    let pitch = &shared.batch.pitches[index];
    let bar = session_bar(shared, index, &pitch.pitch);
    let log = shared
        .dir
        .path()
        .join("pitches")
        .join(format!("{index}.log"));
    let record = shared.dir.pitch(index);
    if let (Some(pid), None) = (record.pid, record.exit_code) {
        stop_leftover(pid);
    }
    let known = record
        .session
        .as_deref()
        .and_then(|s| session_path(&shared.options.home, s));
    if let Some(path) = &known
        && crate::transcript::end::has_ended(&path.join("transcript.jsonl"))
    {
        bar.finish_and_clear();
        shared.bars.remove(&bar);
        return Row::of_session(index, &pitch.pitch, path);
    }
    let mut command = child_command(shared, exe, index, known.as_deref(), &log);
    let spawned = command.spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) => {
            bar.finish_and_clear();
            return Row::not_run(
                index,
                &pitch.pitch,
                format!("cannot start crumb run: {err}"),
            );
        }
    };
    lock(&shared.children).push(child.id());
    let _ = shared.dir.set_pitch(
        index,
        &PitchRecord {
            session: record.session.clone(),
            pid: Some(child.id()),
            exit_code: None,
        },
    );
    if let Some(mut stdin) = child.stdin.take()
        && known.is_none()
    {
        let _ = stdin.write_all(pitch.pitch.as_bytes());
    }
    let session = follow(shared, index, &mut child, &bar);
    let code = child.wait().ok().and_then(|status| status.code());
    lock(&shared.children).retain(|pid| *pid != child.id());
    bar.finish_and_clear();
    shared.bars.remove(&bar);
    let exit_code = code.and_then(|c| u8::try_from(c).ok());
    let _ = shared.dir.set_pitch(
        index,
        &PitchRecord {
            session: session.clone().or(record.session.clone()),
            pid: None,
            exit_code,
        },
    );
    match session
        .as_deref()
        .or(record.session.as_deref())
        .and_then(|s| session_path(&shared.options.home, s))
    {
        Some(path) => {
            let mut row = Row::of_session(index, &pitch.pitch, &path);
            if exit_code == Some(INTERRUPTED) {
                row.note = Some("interrupted; run the batch again to resume it".into());
            }
            row
        }
        None => Row::not_run(
            index,
            &pitch.pitch,
            format!(
                "crumb run exited {} before a session existed; see {}",
                code.map_or_else(|| "on a signal".to_owned(), |c| c.to_string()),
                log.display()
            ),
        ),
    }
}

/// Read a child's progress: record its session as soon as it names it, show its activity.
fn follow(
    shared: &Shared<'_>,
    index: usize,
    child: &mut std::process::Child,
    bar: &ProgressBar,
) -> Option<String> {
    let mut session = None;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("session  ") {
                let id = rest.split_whitespace().next().unwrap_or("").to_owned();
                let record = PitchRecord {
                    session: Some(id.clone()),
                    pid: Some(child.id()),
                    exit_code: None,
                };
                if let Err(err) = shared.dir.set_pitch(index, &record) {
                    let _ = shared.bars.println(format!(
                        "crumb batch: cannot record pitch #{index}'s session: {err}"
                    ));
                }
                session = Some(id);
            } else if let Some(activity) = activity(&line) {
                bar.set_message(activity);
            }
        }
    }
    session
}

/// Stop a `crumb run` left running by a batch that was killed (SIGTERM: it stops its agents and
/// leaves its session resumable) and wait for it to go, so its session is never driven twice.
/// The pid is checked to still be a crumb process, in case it was reused.
fn stop_leftover(pid: u32) {
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let is_crumb = std::fs::read(proc.join("cmdline")).is_ok_and(|cmdline| {
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        args.first().is_some_and(|exe| exe.ends_with(b"crumb"))
            && args.iter().any(|a| *a == b"run" || *a == b"resume")
    });
    if !is_crumb {
        return;
    }
    crate::process::group::terminate_process(pid);
    let deadline = Instant::now() + Duration::from_secs(30);
    while proc.join("cmdline").exists() && !zombie(&proc) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn zombie(proc: &std::path::Path) -> bool {
    std::fs::read_to_string(proc.join("stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

/// The role and event of a plain progress line of `crumb run` (`[  1.2s] builder build: …`).
fn activity(line: &str) -> Option<String> {
    let rest = line.strip_prefix('[')?.split_once("] ")?.1;
    Some(clip(rest.split(": ").next().unwrap_or(rest), 60))
}
