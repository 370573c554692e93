//! The symmetry reduction against the unreduced exploration on generated fan-outs of alike
//! judges: the same outcomes, violations, unreached routes and worst cases, in fewer states.

use std::collections::BTreeSet;

use super::{Options, Report, check};
use crate::engine::testkit::judges;

const COMBINES: [&str; 4] = ["all_pass", "majority", "mean", "min"];

/// What a check decides, without the state counts and the example paths.
fn decided(report: &Report) -> (BTreeSet<String>, Vec<String>, Vec<String>, String) {
    let outcomes = report
        .outcomes
        .iter()
        .map(|r| format!("{} ({})", r.outcome, r.reason))
        .collect();
    let findings = report.findings.iter().map(|f| f.code.clone()).collect();
    let worst = format!(
        "longest {} turns, per role {:?}, person loops {}",
        report.longest_turns, report.max_turns_per_role, report.person_loops
    );
    (outcomes, findings, report.declared_unreached.clone(), worst)
}

fn compare(n: usize, join: &str, combine: &str, max_verify: u32, failures: bool) {
    let table = judges(n, join, combine, max_verify);
    let options = Options {
        failures,
        ..Options::default()
    };
    let reduced = check(&table, options);
    let full = check(
        &table,
        Options {
            reduce: false,
            ..options
        },
    );
    let case = format!("{n} judges, join {join}, combine {combine}, failures {failures}");
    assert!(
        !full.findings.iter().any(|f| f.code == "state-limit"),
        "{case}"
    );
    assert_eq!(
        decided(&reduced),
        decided(&full),
        "{case}\nreduced:\n{}\nfull:\n{}",
        reduced.text(),
        full.text()
    );
    assert!(
        reduced.states < full.states,
        "{case}: {} states reduced, {} unreduced",
        reduced.states,
        full.states
    );
}

#[test]
fn two_judges_reduced_decide_what_the_full_search_decides_under_every_combine() {
    for combine in COMBINES {
        for join in ["all", "any"] {
            compare(2, join, combine, 4, true);
        }
    }
}

#[test]
fn three_judges_reduced_decide_what_the_full_search_decides_under_every_combine() {
    // Failing turns (retries, the circuit) multiply the unreduced search: once is enough.
    compare(3, "all", "all_pass", 3, true);
    for combine in COMBINES {
        compare(3, "all", combine, 3, false);
        compare(3, "any", combine, 3, false);
        compare(3, "{ quorum: 2 }", combine, 3, false);
    }
}

#[test]
fn five_judges_are_proven_under_every_combine() {
    for combine in COMBINES {
        let report = check(&judges(5, "all", combine, 10), Options::default());
        assert!(report.ok(), "{combine}: {}", report.text());
        assert!(
            report.outcomes.iter().any(|r| r.reason == "verdict_pass"),
            "{}",
            report.text()
        );
    }
}

/// A circuit that opens on one twin is reached for each of them: the renamed end is reported.
#[test]
fn an_end_that_names_a_twin_is_reported_for_every_twin() {
    let report = check(&judges(3, "all", "all_pass", 8), Options::default());
    for judge in ["judge-1", "judge-2", "judge-3"] {
        let reason = format!("circuit_open:{judge}");
        let reached = report
            .outcomes
            .iter()
            .find(|r| r.reason == reason)
            .unwrap_or_else(|| panic!("{reason}: {}", report.text()));
        assert!(
            reached
                .path
                .iter()
                .any(|s| s.contains(&format!("{judge}'s turn fails"))),
            "{:?}",
            reached.path
        );
    }
}

/// Cut off early, the search says what it did not decide and shows no dead end it has not
/// found: the full search of the same pipeline has none.
#[test]
fn a_state_limit_reports_not_proven_and_no_dead_end() {
    let table = judges(3, "all", "majority", 8);
    let full = check(&table, Options::default());
    assert!(full.ok(), "{}", full.text());
    for max_states in [50, 500, full.states / 2] {
        for reduce in [true, false] {
            let cut = check(
                &table,
                Options {
                    max_states,
                    reduce,
                    ..Options::default()
                },
            );
            let codes: Vec<&str> = cut.findings.iter().map(|f| f.code.as_str()).collect();
            assert_eq!(codes, ["state-limit"], "{max_states}: {}", cut.text());
            assert!(
                cut.findings[0]
                    .message
                    .starts_with(&format!("not proven within {max_states} states")),
                "{}",
                cut.findings[0].message
            );
            assert!(cut.declared_unreached.is_empty(), "{}", cut.text());
        }
    }
}
