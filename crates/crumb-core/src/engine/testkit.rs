//! Test helpers: the casual pipeline's table and a small script runner that numbers events.

#[cfg(test)]
use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::effect::{Effect, Spawn};
use super::state::State;
#[cfg(test)]
use crate::pipeline::choices::{CircuitAction, Guard};
use crate::pipeline::table::TransitionTable;
#[cfg(test)]
use crate::pipeline::table::{Action, CompiledRoute, LimitsSpec, RoleSpec, ScoringSpec, Trigger};
use crate::transcript::{Deviation, Dimension, Draft, Event, Kind, Metadata, ScoreSource, Scores};
#[cfg(test)]
use crate::vocab::Outcome;
use crate::vocab::{Severity, Verdict};

/// The table `pipelines/casual.yaml` compiles to: the conformance suite runs against the real
/// shipped pipeline.
pub fn casual() -> TransitionTable {
    compiled(
        include_str!("../../../../pipelines/casual.yaml"),
        "pipelines/casual.yaml",
    )
}

/// The table `yaml` compiles to (templates not read), as if it were the file `path`.
fn compiled(yaml: &str, path: &str) -> TransitionTable {
    let compiled = crate::pipeline::compile::compile_str(
        yaml,
        std::path::Path::new(path),
        &crate::pipeline::compile::CompileOptions {
            check_templates: false,
        },
        &crate::pipeline::source::InMemory::new().shared(),
    );
    compiled
        .table
        .unwrap_or_else(|| panic!("{path} compiles: {:#?}", compiled.diagnostics))
}

/// A writer and `judges` alike judges in one fan-out, joined with `join` (`all`, `any` or
/// `{ quorum: n }`) and `combine` (`all_pass`, `majority`, `mean`, `min`), at most `max_verify`
/// verifications: the pipelines `crumb check` is measured and tested on as fan-outs grow.
pub fn judges(judges: usize, join: &str, combine: &str, max_verify: u32) -> TransitionTable {
    use std::fmt::Write as _;
    let mut yaml = String::from(
        "version: 1\nname: judges\nkinds:\n  build: { slot: build }\nroles:\n  writer: { template: w.md.j2, produces: [build] }\n",
    );
    let names: Vec<String> = (1..=judges).map(|i| format!("judge-{i}")).collect();
    for name in &names {
        let _ = writeln!(
            yaml,
            "  {name}: {{ template: j.md.j2, produces: [judge.score], sees: [goal, build, qa.result] }}"
        );
    }
    let _ = write!(
        yaml,
        "qa:\n  checks:\n    - {{ id: draft, kind: file, path: draft.md }}\n\
         scoring:\n  rubric:\n    - {{ id: D1, label: Accuracy, weight: 2 }}\n    - {{ id: D2, label: Checks, source: qa }}\n    - {{ id: D3, label: Clarity, weight: 2 }}\n  pass_at: 20\n  partial_at: 14\n  guards: [pass_requires_qa, exec_from_qa]\n\
         routes:\n  - {{ on: goal, spawn: writer }}\n  - {{ on: build, run: qa }}\n  - {{ on: qa.result, spawn: [{}] }}\n  - {{ on: judge.score, join: {join}, combine: {combine} }}\n\
         \x20 - {{ on: verdict, when: {{ verdict: PASS }}, done: {{ outcome: pass, reason: verdict_pass }} }}\n\
         \x20 - {{ on: verdict, when: {{ verdict: REJECT }}, done: {{ outcome: rejected, reason: rejected }} }}\n\
         \x20 - {{ on: verdict, when: {{ verdict: [PARTIAL, FAIL] }}, spawn: writer, with: feedback }}\n\
         \x20 - {{ on: user.veto, spawn: writer, with: feedback }}\n\
         limits:\n  max_respec: 0\n  max_verify: {max_verify}\n  stuck_after_errors: 3\n  circuit: {{ open_after: 2, then: stop }}\n",
        names.join(", ")
    );
    compiled(&yaml, "judges.yaml")
}

#[cfg(test)]
/// The same table written out by hand, to pin what the suite assumes the file says.
#[allow(
    clippy::too_many_lines,
    reason = "one literal table, easier to check in one piece"
)]
pub(crate) fn casual_by_hand() -> TransitionTable {
    let role = |id: &str, produces: &str, fallback: &[&str]| RoleSpec {
        adapter: None,
        id: id.to_owned(),
        template: format!("../templates/{id}.md.j2"),
        produces: vec![produces.to_owned()],
        wall_timeout_ms: 1_800_000,
        idle_timeout_ms: 300_000,
        sees: Vec::new(),
        fallback: fallback.iter().map(|s| (*s).to_owned()).collect(),
        description: None,
    };
    let kind_route = |index: usize, kind: &str, action: Action| CompiledRoute {
        index,
        trigger: Trigger::Kind {
            kind: kind.to_owned(),
            from: None,
        },
        action,
        with_feedback: false,
        max: None,
    };
    let verdict_route = |index: usize,
                         verdicts: &[Verdict],
                         severities: &[Severity],
                         action: Action,
                         with_feedback| {
        CompiledRoute {
            index,
            trigger: Trigger::Verdict {
                verdicts: verdicts.to_vec(),
                severities: severities.to_vec(),
            },
            action,
            with_feedback,
            max: None,
        }
    };
    let spawn = |role: &str| Action::Spawn {
        role: role.to_owned(),
    };
    let fails = [Verdict::Fail, Verdict::Reject];
    let routes = vec![
        kind_route(0, "goal", spawn("planner-lead")),
        kind_route(1, "spec", spawn("builder")),
        kind_route(2, "build", Action::RunQa),
        kind_route(3, "qa.result", spawn("verifier")),
        verdict_route(
            4,
            &[Verdict::Pass],
            &Severity::ALL,
            Action::Done {
                outcome: Outcome::Pass,
                reason: "verdict_pass".into(),
            },
            false,
        ),
        verdict_route(
            5,
            &[Verdict::Partial],
            &Severity::ALL,
            Action::AwaitHuman,
            false,
        ),
        verdict_route(
            6,
            &fails,
            &[Severity::Critical],
            spawn("planner-lead"),
            true,
        ),
        verdict_route(
            7,
            &fails,
            &[Severity::Important, Severity::Minor],
            spawn("builder"),
            true,
        ),
        kind_route(
            8,
            "user.approve",
            Action::Done {
                outcome: Outcome::Pass,
                reason: "approved".into(),
            },
        ),
        kind_route(9, "user.answer", spawn("builder")),
        CompiledRoute {
            with_feedback: true,
            ..kind_route(10, "user.veto", spawn("builder"))
        },
    ];
    let by_kind: HashMap<String, Vec<usize>> = [
        ("goal", 0),
        ("spec", 1),
        ("build", 2),
        ("qa.result", 3),
        ("user.approve", 8),
        ("user.answer", 9),
        ("user.veto", 10),
    ]
    .into_iter()
    .map(|(k, i)| (k.to_owned(), vec![i]))
    .collect();
    let mut verdict_matrix = [[None; 3]; 4];
    verdict_matrix[Verdict::Pass.index()] = [Some(4); 3];
    verdict_matrix[Verdict::Partial.index()] = [Some(5); 3];
    for verdict in fails {
        verdict_matrix[verdict.index()] = [Some(6), Some(7), Some(7)];
    }
    TransitionTable {
        name: "casual".into(),
        description: None,
        roles: vec![
            role("planner-lead", "spec", &[]),
            role("builder", "build", &[]),
            role("verifier", "judge.score", &[]),
        ],
        routes,
        qa: Some(crate::pipeline::table::QaSpec {
            timeout_ms: 120_000,
            entry: Some("game/index.html".into()),
            checks: Vec::new(),
            retry: crate::pipeline::table::QaRetrySpec::default(),
        }),
        kinds: crate::pipeline::kinds::lower(None),
        declared_kinds: Vec::new(),
        kind_schemas: std::collections::BTreeMap::new(),
        inputs: Vec::new(),
        scoring: {
            let guards = vec![
                Guard::PassRequiresQa,
                Guard::ExecFromQa,
                Guard::AcFailureCapsSpecFit,
                Guard::ReworkCapsConvergence,
                Guard::SameProviderDiscount,
            ];
            ScoringSpec {
                rubric: crate::pipeline::rubric::compile(
                    &crate::pipeline::rubric::default_rubric(),
                    &guards,
                    false,
                ),
                pass_at: 24.0,
                partial_at: 18.0,
                guards,
            }
        },
        limits: LimitsSpec {
            max_respec: 3,
            max_verify: 5,
            tokens_warn: 250_000,
            tokens_hard: 300_000,
            wall_clock_warn_ms: 50 * 60_000,
            wall_clock_hard_ms: 60 * 60_000,
            stuck_after_errors: 5,
            circuit_open_after: 3,
            circuit_then: CircuitAction::Swap,
            max_store_mb: 256,
        },
        by_kind,
        verdict_matrix,
    }
}

/// An event with a numbered id and a timestamp one second after the previous one.
pub fn event(n: u32, from: &str, kind: Kind) -> Event {
    Draft::new(from, kind).into_event(id(n), ts_ms(i64::from(n) * 1000), "sess-test".into())
}

/// A ULID-shaped id for event `n`.
pub fn id(n: u32) -> String {
    format!("01H{n:023}")
}

/// `2026-05-01T00:00:00.000Z` plus `ms`.
pub(crate) fn ts_ms(ms: i64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339("2026-05-01T00:00:00.000Z").expect("base ts");
    (base + chrono::Duration::milliseconds(ms))
        .to_utc()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// A `data` object from JSON.
pub fn data(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("data must be an object"),
    }
}

/// Scores D1–D6 with a claimed aggregate and verdict.
pub fn scores(
    dims: [f64; 6],
    verdict: Verdict,
    severity: Option<Severity>,
    feedback: Option<&str>,
) -> Scores {
    let dim = |score: f64, source| {
        Some(Dimension {
            score,
            source,
            lookup: None,
            evidence: Vec::new(),
        })
    };
    Scores {
        d1: dim(dims[0], ScoreSource::VerifierLlm),
        d2: dim(dims[1], ScoreSource::QaCheckEffect),
        d3: dim(dims[2], ScoreSource::VerifierLlm),
        d4: dim(dims[3], ScoreSource::ReducerAuto),
        d5: dim(dims[4], ScoreSource::VerifierLlm),
        d6: dim(dims[5], ScoreSource::QaCheckEffect),
        dims: std::collections::BTreeMap::new(),
        aggregate: Some(dims.iter().sum()),
        verdict: Some(verdict),
        feedback: feedback.map(str::to_owned),
        suggested_change: None,
        deviation: severity.map(|kind| Deviation { kind }),
        courteval: None,
        audit_violations: Vec::new(),
    }
}

#[cfg(test)]
/// Dimensions of an honest PASS (aggregate 27).
pub(crate) const PASS_DIMS: [f64; 6] = [5.0, 5.0, 4.0, 5.0, 4.0, 4.0];
#[cfg(test)]
/// Dimensions of an honest PARTIAL (aggregate 20).
pub(crate) const PARTIAL_DIMS: [f64; 6] = [3.0, 5.0, 3.0, 3.0, 3.0, 3.0];
#[cfg(test)]
/// Dimensions of an honest FAIL (aggregate 12, D2 consistent with a passing QA run).
pub(crate) const FAIL_DIMS: [f64; 6] = [1.0, 5.0, 2.0, 2.0, 1.0, 1.0];

/// A running session: numbers events and keeps the state.
pub struct Script {
    pub table: TransitionTable,
    pub state: State,
    pub n: u32,
}

impl Default for Script {
    fn default() -> Self {
        Script::with(casual())
    }
}

impl Script {
    pub fn new() -> Self {
        Script::default()
    }

    pub fn with(table: TransitionTable) -> Self {
        Script {
            table,
            state: State::new(),
            n: 0,
        }
    }

    /// A fresh event, numbered after the previous one.
    pub fn next(&mut self, from: &str, kind: Kind) -> Event {
        self.n += 1;
        event(self.n, from, kind)
    }

    /// Reduce `event` and return its effects.
    pub fn feed(&mut self, event: &Event) -> Vec<Effect> {
        let (next, effects) = super::reduce(&self.table, &self.state, event);
        self.state = next;
        effects
    }

    /// Reduce a fresh event of `kind` from `from`, shaped by `edit`.
    pub fn send(&mut self, from: &str, kind: Kind, edit: impl FnOnce(&mut Event)) -> Vec<Effect> {
        let mut event = self.next(from, kind);
        edit(&mut event);
        self.feed(&event)
    }

    pub fn goal(&mut self) -> Vec<Effect> {
        self.send("user", Kind::Goal, |e| {
            e.body = Some("60-second match-3".into());
        })
    }

    pub fn spec(&mut self) -> Vec<Effect> {
        self.send("planner-lead", Kind::Spec, |e| {
            e.data = Some(data(json!({"acceptance_criteria": ["a", "b"], "ac_predicates": [{"id": "ac1", "predicate_js": "true"}]})));
        })
    }

    pub fn build(&mut self, provider: Option<&str>) -> Vec<Effect> {
        self.send("builder", Kind::Build, |e| {
            if let Some(p) = provider {
                e.metadata = Some(Box::new(Metadata {
                    provider: Some(p.into()),
                    ..Metadata::default()
                }));
            }
        })
    }

    pub fn qa(&mut self, exit: i64) -> Vec<Effect> {
        self.send("system", Kind::QaResult, |e| {
            e.data = Some(data(json!({"exec_exit_code": exit})));
        })
    }

    pub fn judge(&mut self, scores: Scores) -> Vec<Effect> {
        self.send("verifier", Kind::JudgeScore, |e| {
            e.scores = Some(Box::new(scores));
        })
    }

    pub fn user(&mut self, kind: Kind, body: &str, value: Value) -> Vec<Effect> {
        self.send("user", kind, |e| {
            if !body.is_empty() {
                e.body = Some(body.into());
            }
            if !value.is_null() {
                e.data = Some(data(value));
            }
        })
    }

    pub fn error(&mut self, role: &str) -> Vec<Effect> {
        self.send("system", Kind::Error, |e| {
            e.data = Some(data(json!({"role": role, "reason": "exit_nonzero"})));
        })
    }

    #[cfg(test)]
    /// Goal, spec, build and a QA run with `exit`: the verifier has just been spawned.
    pub(crate) fn up_to_verifier(&mut self, exit: i64) {
        self.goal();
        self.spec();
        self.build(None);
        self.qa(exit);
    }
}

/// The spawns among `effects`.
pub fn spawns(effects: &[Effect]) -> Vec<&Spawn> {
    effects
        .iter()
        .filter_map(|e| {
            if let Effect::Spawn(s) = e {
                Some(s)
            } else {
                None
            }
        })
        .collect()
}

/// `role` of every spawn.
pub fn spawned(effects: &[Effect]) -> Vec<&str> {
    spawns(effects).iter().map(|s| s.role.as_str()).collect()
}

/// The appended drafts of `kind`.
pub fn appended(effects: &[Effect], kind: Kind) -> Vec<&crate::transcript::Draft> {
    effects
        .iter()
        .filter_map(|e| {
            if let Effect::Append(a) = e {
                Some(&*a.draft)
            } else {
                None
            }
        })
        .filter(|d| d.kind == kind)
        .collect()
}

#[cfg(test)]
/// The `done` outcome among `effects`.
pub(crate) fn done_outcome(effects: &[Effect]) -> Option<Outcome> {
    effects.iter().find_map(|e| {
        if let Effect::Done(d) = e {
            Some(d.outcome)
        } else {
            None
        }
    })
}

#[cfg(test)]
/// The `done` reason among `effects`.
pub(crate) fn done_reason(effects: &[Effect]) -> Option<&str> {
    effects.iter().find_map(|e| {
        if let Effect::Done(d) = e {
            Some(d.reason.as_str())
        } else {
            None
        }
    })
}

#[cfg(test)]
/// Non-ack effects.
pub(crate) fn without_acks(effects: &[Effect]) -> Vec<&Effect> {
    effects
        .iter()
        .filter(|e| !matches!(e, Effect::Append(a) if a.draft.kind == Kind::Ack))
        .collect()
}

/// The body of the ack among `effects`.
pub fn ack(effects: &[Effect]) -> (bool, String) {
    let acks = appended(effects, Kind::Ack);
    assert_eq!(acks.len(), 1, "exactly one ack expected: {effects:#?}");
    let ok = acks[0]
        .data
        .as_ref()
        .and_then(|d| d.get("ok"))
        .and_then(Value::as_bool)
        .expect("ack carries data.ok");
    (ok, acks[0].body.clone().unwrap_or_default())
}
