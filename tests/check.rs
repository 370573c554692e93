//! `crumb check`: the shipped pipelines are proven; pipelines that validate but can end in a dead
//! end are refused with the path that shows it; an unbounded loop is refused before exploring.

use serde_json::Value;

use crate::support::{crumb, repo_root};

fn check_fixture(file: &str) {
    let run = crumb()
        .current_dir(repo_root())
        .args(["check", file])
        .run()
        .expect_code(1);
    let name = std::path::Path::new(file)
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("a name")
        .to_owned();
    insta::assert_snapshot!(format!("check_{name}"), run.stdout);
}

fixture_tests! {
    folder: "tests/pipelines/check", suffix: ".yaml", check: check_fixture,
    listed: every_check_fixture_has_a_test,
    check_dead_end => "dead-end.yaml",
    check_unanswerable => "unanswerable.yaml",
}

#[test]
fn the_shipped_pipelines_are_proven() {
    let run = crumb()
        .current_dir(repo_root())
        .args(["check", "pipelines/", "--format", "json"])
        .run()
        .expect_code(0);
    let reports: Vec<Value> = serde_json::from_str(&run.stdout).expect("JSON reports");
    let names: Vec<&str> = reports
        .iter()
        .map(|r| r["pipeline"].as_str().expect("a name"))
        .collect();
    assert!(
        names.contains(&"casual") && names.contains(&"doc-review"),
        "{names:?}"
    );
    for report in &reports {
        assert_eq!(report["findings"], Value::Array(Vec::new()), "{report}");
        let outcomes = report["outcomes"].as_array().expect("outcomes");
        assert!(
            outcomes.iter().any(|o| o["outcome"] == "pass"),
            "{}: no path passes",
            report["pipeline"]
        );
    }
}

#[test]
fn doc_review_report() {
    let run = crumb()
        .current_dir(repo_root())
        .args(["check", "pipelines/doc-review.yaml"])
        .run()
        .expect_code(0);
    insta::assert_snapshot!("check_doc_review", run.stdout);
}

#[test]
fn an_unbounded_loop_is_refused_with_its_cycle() {
    let run = crumb()
        .current_dir(repo_root())
        .args(["check", "tests/pipelines/invalid/unbounded-loop.yaml"])
        .run()
        .expect_code(3);
    assert!(
        run.stderr.contains("unbounded loop: note → looper → note"),
        "{}",
        run.stderr
    );
}
