//! A real full disk at every write of a run. The crumb home is a small tmpfs mounted in a private
//! mount namespace (`unshare -m` as root, `unshare -rm` otherwise), so the kernel itself answers
//! ENOSPC: tmpfs allocates a 4 KiB page at a time and an inode per file, so a run on a tmpfs of
//! `n` pages (or `n` inodes) fails at exactly the write that needs page (inode) `n + 1`, and
//! stepping `n` through every page and every inode an unfaulted run uses puts the fault on each
//! write that can fail — the frozen pipeline, `authority.json`, `meta.json` (created, at the
//! drive's start and end), the transcript, prompts, logs, capability records, the agents' own
//! files and `crumb event`s, the artifact store's objects. At each: the run exits 1 naming the
//! cause and the free space, no line is torn, nothing half-written is left behind; then the
//! tmpfs is grown (space freed) and the same thing a user would do — `crumb resume`, or `crumb
//! run` again when no session was created — reaches the unfaulted outcome with no turn counted
//! as failed and nothing lost or repeated.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::*;
use crate::support::Crumb;

/// The faulted run, the space freed, the recovery, the home copied out of the namespace.
const SCRIPT: &str = r#"
set -u
home=$1 out=$2 opts=$3 pipeline=$4 pitch=$5
mount -t tmpfs -o "$opts" crumbfull "$home" || exit 90
"$CRUMB" run "$pipeline" "$pitch" --adapter mock --json >"$out/run.out" 2>"$out/run.err"
echo $? >"$out/run.code"
df -k "$home" | tail -1 >"$out/df.k"
df -i "$home" | tail -1 >"$out/df.i"
mount -o remount,size=256m,nr_inodes=100000 "$home" || exit 91
session=
for s in "$home"/projects/*/sessions/*; do [ -d "$s" ] && session=$s; done
if [ -n "$session" ]; then
  "$CRUMB" resume --json "$session" >"$out/recover.out" 2>"$out/recover.err"
else
  ls -A "$home"/projects/*/sessions >"$out/left" 2>/dev/null
  "$CRUMB" run "$pipeline" "$pitch" --adapter mock --json >"$out/recover.out" 2>"$out/recover.err"
fi
echo $? >"$out/recover.code"
mkdir "$out/home" && cp -a "$home/." "$out/home/"
"#;

/// How this machine makes a private mount namespace (`unshare -m` needs root, `unshare -rm` an
/// unprivileged user namespace); the test fails loudly when neither can mount a tmpfs.
pub(super) fn namespace() -> &'static [&'static str] {
    static FOUND: OnceLock<&'static [&'static str]> = OnceLock::new();
    FOUND.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        for prefix in [&["unshare", "-m"][..], &["unshare", "-rm"][..]] {
            let mounted = std::process::Command::new(prefix[0])
                .args(&prefix[1..])
                .args(["sh", "-c", "mount -t tmpfs -o size=4k probe \"$0\""])
                .arg(dir.path())
                .output()
                .is_ok_and(|out| out.status.success());
            if mounted {
                return prefix;
            }
        }
        panic!(
            "this test needs a private mount namespace to mount a small tmpfs \
             (`unshare -m` as root, or unprivileged user namespaces for `unshare -rm`)"
        )
    })
}

/// What one faulted run and its recovery left.
struct Faulted {
    out: tempfile::TempDir,
}

impl Faulted {
    /// The casual-static mock run on a tmpfs mounted with `opts`, then its recovery.
    fn run(opts: &str) -> Faulted {
        let scratch = Scratch::new();
        std::fs::create_dir_all(scratch.home()).unwrap();
        let out = tempfile::tempdir().unwrap();
        let prefix = namespace();
        let run = Crumb::shell(&format!("exec {} sh -c \"$0\" sh \"$@\"", prefix.join(" ")))
            .arg(SCRIPT)
            .arg(scratch.home())
            .arg(out.path())
            .arg(opts)
            .arg(scratch.pipeline())
            .arg(PITCH)
            .current_dir(scratch.dir.path())
            .env("CRUMB_HOME", scratch.home())
            .env("CRUMB_STUDIO_PORT", "1")
            .timeout(Duration::from_secs(180))
            .run();
        assert_eq!(run.code, 0, "the harness failed ({opts}): {}", run.stderr);
        Faulted { out }
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.out.path().join(name)).unwrap_or_default()
    }

    fn code(&self, name: &str) -> i32 {
        self.read(name).trim().parse().unwrap_or(-1)
    }

    /// The `used` column of `df -k` / `df -i` after the faulted run.
    fn used(&self, which: &str) -> u64 {
        self.read(which)
            .split_whitespace()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .unwrap()
    }

    fn home(&self) -> PathBuf {
        self.out.path().join("home")
    }
}

/// Every session folder (and folder under construction) under `home`.
fn sessions(home: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for project in std::fs::read_dir(home.join("projects"))
        .into_iter()
        .flatten()
    {
        let dir = project.unwrap().path().join("sessions");
        for session in std::fs::read_dir(dir).into_iter().flatten() {
            found.push(session.unwrap().path());
        }
    }
    found
}

/// Files a failed write must never leave behind: temporaries and probes.
fn leftovers(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains(".tmp.") || name.starts_with(".storage-probe") || name.starts_with(".tmp-")
        {
            found.push(path.clone());
        }
        if path.is_dir() {
            leftovers(&path, found);
        }
    }
}

/// How often each piece of work was done in `events` (nothing lost or repeated means equal).
fn work(events: &[Value]) -> Vec<(String, usize)> {
    [
        "spec",
        "build",
        "qa.result",
        "judge.score",
        "agent.stop",
        "done",
    ]
    .iter()
    .map(|kind| ((*kind).to_owned(), of_kind(events, kind).len()))
    .collect()
}

/// The unfaulted run on a roomy tmpfs: its summary, its work, and the pages and inodes it used.
struct Reference {
    summary: Value,
    work: Vec<(String, usize)>,
    pages: u64,
    inodes: u64,
}

fn reference() -> &'static Reference {
    static REFERENCE: OnceLock<Reference> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let run = Faulted::run("size=64m");
        assert_eq!(run.code("run.code"), 0, "{}", run.read("run.err"));
        let summary: Value = serde_json::from_str(&run.read("run.out")).unwrap();
        let session = sessions(&run.home()).remove(0);
        Reference {
            summary,
            work: work(&transcript(&session)),
            pages: run.used("df.k") / 4,
            inodes: run.used("df.i"),
        }
    })
}

/// Run with `opts` and hold the run and its recovery to the reference; returns the cause the
/// run stopped with (`None` when the limit fell on no write).
fn check(opts: &str) -> Option<String> {
    let reference = reference();
    let run = Faulted::run(opts);
    let code = run.code("run.code");
    let stderr = run.read("run.err");
    if code == 0 {
        return None;
    }
    assert_eq!(code, 1, "{opts}: {stderr}");
    assert!(
        stderr.contains("KiB free"),
        "{opts}: no free space: {stderr}"
    );
    let created = stderr.contains("no session was created");
    assert!(
        created && stderr.contains("run the same command again")
            || stderr.contains("a write to the session failed") && stderr.contains("crumb resume"),
        "{opts}: {stderr}"
    );
    assert!(
        run.read("left").trim().is_empty(),
        "{opts}: a session that was not created left {}",
        run.read("left")
    );
    let mut left = Vec::new();
    leftovers(&run.home(), &mut left);
    assert!(left.is_empty(), "{opts}: left behind: {left:?}");

    assert_eq!(
        run.code("recover.code"),
        0,
        "{opts}: the recovery failed: {}",
        run.read("recover.err")
    );
    let recovered: Value = serde_json::from_str(&run.read("recover.out")).unwrap();
    for field in ["outcome", "reason"] {
        assert_eq!(
            recovered[field], reference.summary[field],
            "{opts}: {field}"
        );
    }
    let found = sessions(&run.home());
    assert_eq!(
        found.len(),
        1,
        "{opts}: one session for the pitch: {found:?}"
    );
    // `transcript` parses every line against the schema: a torn line fails here.
    let events = transcript(&found[0]);
    assert_effects_once(&events);
    assert_eq!(
        of_kind(&events, "error"),
        Vec::<&Value>::new(),
        "{opts}: a turn was counted as failed"
    );
    assert_eq!(
        work(&events),
        reference.work,
        "{opts}: work lost or repeated"
    );
    Some(stderr)
}

/// Each write's kind must appear among the causes of a sweep.
fn assert_covers(causes: &BTreeSet<String>, kinds: &[&str]) {
    for kind in kinds {
        assert!(
            causes.iter().any(|cause| cause.contains(kind)),
            "no fault fell on a write of {kind}: {causes:#?}"
        );
    }
}

/// Sweep `limits` two at a time (the machine has two cores) and collect the causes.
fn sweep(limits: &[String]) -> BTreeSet<String> {
    let mut causes = BTreeSet::new();
    for pair in limits.chunks(2) {
        std::thread::scope(|scope| {
            let runs: Vec<_> = pair
                .iter()
                .map(|opts| scope.spawn(move || check(opts)))
                .collect();
            for run in runs {
                causes.extend(run.join().unwrap());
            }
        });
    }
    causes
}

#[test]
fn a_full_disk_at_every_page_a_run_writes_never_changes_its_outcome() {
    let pages = reference().pages;
    let limits: Vec<String> = (1..=pages + 4)
        .map(|n| format!("size={}k", n * 4))
        .collect();
    let causes = sweep(&limits);
    // Not "prompt": a prompt's first page is taken while the previous turn's log may still be
    // flushing, so which of the two meets the full page first depends on the scheduler (seen
    // under load). Every prompt is a new file, and the inode sweep below hits it every time.
    assert_covers(
        &causes,
        &[
            "no session was created",
            "meta.json",
            "transcript",
            "capability",
            "log",
            "store",
        ],
    );
}

#[test]
fn running_out_of_inodes_at_every_file_a_run_creates_never_changes_its_outcome() {
    let inodes = reference().inodes;
    let limits: Vec<String> = (1..=inodes + 8)
        .map(|n| format!("size=64m,nr_inodes={n}"))
        .collect();
    let causes = sweep(&limits);
    assert_covers(
        &causes,
        &[
            "no session was created",
            "meta.json",
            "capability",
            "log",
            "prompt",
            "inodes free",
        ],
    );
}

/// `crumb status` of a long session on a full disk, then with room: `$1` the home to copy onto
/// the tmpfs, `$2` where the outputs go, `$3` the session id. The tmpfs is shrunk to what the
/// copy uses, so the snapshot the first status would keep cannot be written.
const STATUS_SCRIPT: &str = r#"
set -u
home=$1 out=$2 id=$3 full=$2/full
mkdir "$full" && mount -t tmpfs -o size=64m crumbfull "$full" || exit 90
cp -a "$home/." "$full/"
used=$(df -k "$full" | tail -1 | awk '{print $3}')
mount -o remount,size="${used}k" "$full" || exit 91
CRUMB_HOME=$full "$CRUMB" status --json "$id" >"$out/full.json" 2>"$out/full.err"
echo $? >"$out/full.code"
df -k "$full" | tail -1 >"$out/df.k"
find "$full" -name 'state.snapshot*' >"$out/full.snapshots"
mount -o remount,size=256m "$full" || exit 92
CRUMB_HOME=$full "$CRUMB" status --json "$id" >"$out/roomy.json" 2>"$out/roomy.err"
echo $? >"$out/roomy.code"
find "$full" -name 'state.snapshot*' >"$out/roomy.snapshots"
umount "$full"
"#;

#[test]
fn a_snapshot_that_cannot_be_written_changes_no_answer() {
    let scratch = Scratch::new();
    let summary = summary(&scratch.run("pass", &[]).expect_code(0));
    let session = scratch.session();
    let id = scratch.session_id();
    // Past `state_snapshot::MIN_LINES`, so `status` keeps a snapshot when it can.
    let filler = (0..12_000)
        .map(|n| {
            let note = serde_json::json!({
                "id": format!("7ZZZZZZZZZZZZZZZZZ{n:08}"),
                "ts": "2026-05-01T10:00:00.000Z",
                "session_id": id,
                "from": "system",
                "kind": "note",
                "body": format!("filler {n:08}"),
            });
            format!("{note}\n")
        })
        .collect::<Vec<_>>()
        .concat();
    let mut transcript = std::fs::OpenOptions::new()
        .append(true)
        .open(session.join("transcript.jsonl"))
        .unwrap();
    std::io::Write::write_all(&mut transcript, filler.as_bytes()).unwrap();
    assert_eq!(summary["outcome"], "pass");

    let out = tempfile::tempdir().unwrap();
    let run = Crumb::shell(&format!(
        "exec {} sh -c \"$0\" sh \"$@\"",
        namespace().join(" ")
    ))
    .arg(STATUS_SCRIPT)
    .arg(scratch.home())
    .arg(out.path())
    .arg(&id)
    .current_dir(scratch.dir.path())
    .env("CRUMB_STUDIO_PORT", "1")
    .timeout(Duration::from_secs(120))
    .run();
    assert_eq!(run.code, 0, "the harness failed: {}", run.stderr);
    let read = |name: &str| std::fs::read_to_string(out.path().join(name)).unwrap_or_default();
    let free: u64 = read("df.k")
        .split_whitespace()
        .nth(3)
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(free < 4, "the tmpfs was not full: {free} KiB free");
    assert_eq!(read("full.code").trim(), "0", "{}", read("full.err"));
    assert_eq!(
        read("full.snapshots").trim(),
        "",
        "no snapshot, and no half of one, on the full disk"
    );
    assert_eq!(read("roomy.code").trim(), "0", "{}", read("roomy.err"));
    assert!(
        read("roomy.snapshots").trim().ends_with("state.snapshot"),
        "with room the snapshot is kept: {}",
        read("roomy.snapshots")
    );
    let full: Value = serde_json::from_str(&read("full.json")).unwrap();
    let roomy: Value = serde_json::from_str(&read("roomy.json")).unwrap();
    assert_eq!(full, roomy, "the full disk changed what status says");
}
