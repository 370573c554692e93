//! Exit codes follow the declared outcome, never the reason's spelling.

use super::*;

/// Rewrite the fixture's `declared` text (which must be there) as `instead`.
fn edit_fixture(scratch: &Scratch, declared: &str, instead: &str) {
    let path = scratch.pipeline();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(declared), "the fixture declares {declared}");
    std::fs::write(&path, text.replace(declared, instead)).unwrap();
}

/// The fixture with its PASS route ending in `done` (YAML) instead.
fn with_pass_route(scratch: &Scratch, done: &str) {
    edit_fixture(
        scratch,
        "done: { outcome: pass, reason: verdict_pass }",
        &format!("done: {done}"),
    );
}

/// `run` printed `text` on stdout.
fn says(run: &crate::support::Run, text: &str) {
    assert!(run.stdout.contains(text), "{text} in:\n{}", run.stdout);
}

#[test]
fn every_declared_outcome_has_its_exit_code() {
    for (outcome, code) in [
        ("pass", crumb::exit_codes::SUCCESS),
        ("fail", crumb::exit_codes::FAILED),
        ("partial", crumb::exit_codes::PARTIAL),
        ("rejected", crumb::exit_codes::REJECTED),
    ] {
        let scratch = Scratch::new();
        with_pass_route(
            &scratch,
            &format!("{{ outcome: {outcome}, reason: accepted }}"),
        );
        let run = scratch.run("pass", &[]).expect_code(i32::from(code));
        let summary = summary(&run);
        assert_eq!(summary["outcome"], outcome);
        assert_eq!(summary["reason"], "accepted");
        assert_eq!(summary["exit_code"], code);
        assert_eq!(summary["degraded"], false);
        let done = of_kind(&transcript(&scratch.session()), "done")[0].clone();
        assert_eq!(done["data"]["outcome"], outcome);
    }
}

#[test]
fn a_rejected_outcome_named_accepted_exits_rejected() {
    let scratch = Scratch::new();
    with_pass_route(&scratch, "{ outcome: rejected, reason: accepted }");
    let run = scratch
        .run_human()
        .expect_code(i32::from(crumb::exit_codes::REJECTED));
    says(&run, "ended    accepted (outcome rejected, exit 22)");
}

#[test]
fn a_reason_word_alone_is_refused_with_the_object_form_as_hint() {
    let scratch = Scratch::new();
    with_pass_route(&scratch, "accepted");
    let run = scratch
        .on(&["validate"], &scratch.pipeline())
        .expect_code(i32::from(crumb::exit_codes::INVALID_PIPELINE));
    says(
        &run,
        "did you mean `done: { outcome: pass, reason: accepted }`?",
    );
}

#[test]
fn approving_a_partial_ends_as_the_approve_route_declares() {
    let scratch = Scratch::new();
    edit_fixture(
        &scratch,
        "{ on: user.approve, done: { outcome: pass, reason: approved } }",
        "{ on: user.approve, done: { outcome: partial, reason: approved } }",
    );
    summary(&scratch.run("partial", &[]).expect_code(10));
    let session = scratch.session();
    scratch.say(&session, "/approve");
    let resumed = scratch
        .on(&["resume", "--json"], &session)
        .expect_code(i32::from(crumb::exit_codes::PARTIAL));
    assert_eq!(summary(&resumed)["outcome"], "partial");
}
