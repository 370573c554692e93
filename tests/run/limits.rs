//! The limits agree: the largest goal crumb accepts makes a session every reader opens (status,
//! replay, ls, resume), and one byte more, or a goal too large once escaped, is refused naming the
//! limit, with nothing created.

use super::*;

const MIB: usize = 1024 * 1024;

impl Scratch {
    /// `crumb run --pitch-file <goal>` on the mock adapter.
    fn run_goal(&self, goal: &str) -> Run {
        let file = self.dir.path().join("pitch.txt");
        std::fs::write(&file, goal).unwrap();
        self.command(&["run"])
            .arg(self.pipeline())
            .arg("--pitch-file")
            .arg(&file)
            .args(["--adapter", "mock", "--json"])
            .run()
    }
}

#[test]
fn the_largest_goal_makes_a_session_every_reader_opens() {
    let scratch = Scratch::new();
    summary(&scratch.run_goal(&"a".repeat(MIB)).expect_code(0));
    let session = scratch.session();
    for command in [
        &["status", "--json"][..],
        &["replay", "--json"],
        &["resume", "--json"],
    ] {
        scratch.on(command, &session).expect_code(0);
    }
    let listed = scratch.command(&["ls", "--json"]).run().expect_code(0);
    assert!(
        listed.stdout.contains(&scratch.session_id()),
        "{}",
        listed.stdout
    );
}

#[test]
fn a_goal_past_the_limit_is_refused_naming_it_and_creates_nothing() {
    let scratch = Scratch::new();
    let run = scratch.run_goal(&"a".repeat(MIB + 1)).expect_code(2);
    assert!(
        run.stderr.contains("larger than 1024 KiB"),
        "{}",
        run.stderr
    );
    // Within the byte limit, but past it as the JSON that meta.json and the goal line hold.
    let run = scratch.run_goal(&"\u{1}".repeat(MIB / 2)).expect_code(1);
    assert!(
        run.stderr.contains("as JSON") && run.stderr.contains("the limit is 2097152 bytes"),
        "{}",
        run.stderr
    );
    let sessions = std::fs::read_dir(scratch.home().join("projects"))
        .into_iter()
        .flatten()
        .flat_map(|p| std::fs::read_dir(p.unwrap().path().join("sessions")))
        .flatten()
        .count();
    assert_eq!(sessions, 0, "nothing was created");
}
