//! The partial-order reduction against the unreduced exploration on fan-outs whose join
//! leaves late branches (`join: any`, a quorum): the same outcomes, violations, unreached
//! routes and worst cases, in fewer states.

use super::symmetry_tests::compare;
use super::{Options, check};
use crate::engine::testkit::judges;

const COMBINES: [&str; 4] = ["all_pass", "majority", "mean", "min"];

#[test]
fn late_branches_with_failing_turns_decide_what_the_full_search_decides() {
    // Failing turns: retries and circuits of late branches, interleaved with the next round.
    for combine in COMBINES {
        compare(2, "any", combine, 3, true);
    }
    compare(3, "any", "all_pass", 3, true);
    compare(3, "{ quorum: 2 }", "majority", 3, true);
}

#[test]
fn late_branches_past_the_verify_budget_decide_what_the_full_search_decides() {
    // `max_verify: 4` with three judges: the late branches of the first round spend the count
    // past the budget, where they are explored one after another.
    for combine in COMBINES {
        compare(3, "any", combine, 4, false);
    }
    compare(2, "any", "mean", 5, true);
}

/// The reduction is what makes `join: any` small: far fewer states than the search that
/// explores every interleaving of late branches with the next round.
#[test]
fn join_any_explores_far_fewer_states_than_every_interleaving() {
    let table = judges(3, "any", "all_pass", 4);
    let reduced = check(&table, Options::default());
    let full = check(
        &table,
        Options {
            reduce: false,
            ..Options::default()
        },
    );
    assert!(reduced.ok(), "{}", reduced.text());
    assert!(
        reduced.states * 3 < full.states,
        "{} states reduced, {} unreduced",
        reduced.states,
        full.states
    );
}
