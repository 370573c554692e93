//! Pass 3, the parts that are not about routing: version, role ids, route shape, QA checks,
//! scoring and limits. Each rule has its own code.

use std::collections::HashMap;

use globset::GlobBuilder;

use crate::pipeline::codes::{self, KNOWN_ADAPTERS};
use crate::pipeline::located_yaml::escape_segment;
use crate::pipeline::model::{Check, OneOrMany, Pipeline, Qa, RoleAdapter};
use crate::pipeline::pass_context::Ctx;
use crate::pipeline::suggest;
use crate::pipeline::table::{CheckKindSpec, CheckSpec, TransitionTable};
use crate::pipeline::triggers::VERDICT_TRIGGER;
use crate::transcript::Kind;
use crate::vocab::RESERVED_ACTORS;

/// Run every non-routing check.
pub(crate) fn check(pipeline: &Pipeline, table: &TransitionTable, ctx: &mut Ctx<'_>) {
    roles(pipeline, ctx);
    route_shapes(pipeline, ctx);
    qa_checks(pipeline, table, ctx);
    scoring(pipeline, table, ctx);
    kinds(pipeline, ctx);
    limits(table, ctx);
}

fn roles(pipeline: &Pipeline, ctx: &mut Ctx<'_>) {
    for (id, role) in &pipeline.roles {
        let base = format!("/roles/{}", escape_segment(id));
        if RESERVED_ACTORS.contains(&id.as_str()) {
            let d = ctx
                .at_key(
                    &codes::RESERVED_ROLE_ID,
                    &base,
                    format!("role id `{id}` is reserved for a built-in actor"),
                )
                .label("reserved")
                .hint(format!(
                    "rename the role; reserved ids are {}",
                    RESERVED_ACTORS.join(", ")
                ));
            ctx.emit(d);
        }
        if let Some(adapter) = &role.adapter {
            role_adapter(adapter, &format!("{base}/adapter"), ctx);
        }
        for (i, adapter) in role.fallback.iter().enumerate() {
            if !KNOWN_ADAPTERS.contains(&adapter.as_str()) {
                let d = ctx
                    .at(
                        &codes::UNKNOWN_ADAPTER,
                        &format!("{base}/fallback/{i}"),
                        format!("unknown adapter `{adapter}`"),
                    )
                    .label("no such adapter")
                    .hint(adapter_hint(adapter));
                ctx.emit(d);
            }
        }
    }
}

/// A role's `adapter:` names a known adapter, and `command` comes with a program to run.
fn role_adapter(adapter: &RoleAdapter, pointer: &str, ctx: &mut Ctx<'_>) {
    let name = adapter.name();
    if !KNOWN_ADAPTERS.contains(&name) {
        let d = ctx
            .at(
                &codes::UNKNOWN_ADAPTER,
                pointer,
                format!("unknown adapter `{name}`"),
            )
            .label("no such adapter")
            .hint(adapter_hint(name));
        ctx.emit(d);
    } else if name == "command" && adapter.command().first().is_none_or(String::is_empty) {
        let (at, label) = match adapter {
            RoleAdapter::Name(_) => (pointer.to_owned(), "no argv"),
            RoleAdapter::Command(_) => (format!("{pointer}/command"), "empty argv"),
        };
        let d = ctx
            .at(
                &codes::COMMAND_WITHOUT_ARGV,
                &at,
                "the `command` adapter needs the program to run",
            )
            .label(label)
            .hint("write `adapter: { command: [python3, ../agents/<role>.py] }`");
        ctx.emit(d);
    }
}

/// `did you mean` plus the list of adapters.
pub(crate) fn adapter_hint(adapter: &str) -> String {
    match suggest::closest(adapter, KNOWN_ADAPTERS.iter().copied()) {
        Some(s) => format!(
            "did you mean `{s}`? adapters: {}",
            KNOWN_ADAPTERS.join(", ")
        ),
        None => format!("adapters: {}", KNOWN_ADAPTERS.join(", ")),
    }
}

fn route_shapes(pipeline: &Pipeline, ctx: &mut Ctx<'_>) {
    for (i, route) in pipeline.routes.iter().enumerate() {
        let base = format!("/routes/{i}");
        let actions: Vec<&str> = [
            route.spawn.as_ref().map(|_| "spawn"),
            route.join.as_ref().map(|_| "join"),
            route.run.as_ref().map(|_| "run"),
            route.done.as_ref().map(|_| "done"),
            route.r#await.as_ref().map(|_| "await"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if actions.len() != 1 {
            let message = if actions.is_empty() {
                format!("route {} (on `{}`) has no action", i + 1, route.on)
            } else {
                format!(
                    "route {} (on `{}`) has {} actions: {}",
                    i + 1,
                    route.on,
                    actions.len(),
                    actions.join(", ")
                )
            };
            let d = ctx
                .at(&codes::ROUTE_ACTION, &base, message)
                .label("exactly one of spawn, join, run, done, await")
                .hint("split it into one route per action, or keep only the one you mean");
            ctx.emit(d);
        }
        crate::pipeline::fan_out::check_route(pipeline, i, route, ctx);
        let is_verdict = route.on == VERDICT_TRIGGER;
        if route.when.is_some() && !is_verdict {
            let d = ctx
                .at_key(
                    &codes::ROUTE_CONDITION,
                    &format!("{base}/when"),
                    format!("`when` on a route for `{}`", route.on),
                )
                .label("only verdict routes have verdict conditions")
                .hint("use `on: verdict` for routing on a verdict, or remove `when`");
            ctx.emit(d);
        }
        if route.from.is_some() && is_verdict {
            let d = ctx
                .at_key(
                    &codes::ROUTE_CONDITION,
                    &format!("{base}/from"),
                    "`from` on a verdict route",
                )
                .label("verdicts come from the engine's correction of a judge.score")
                .hint("remove `from`");
            ctx.emit(d);
        }
        if route.with.is_some() && route.spawn.is_none() {
            let d = ctx
                .at_key(
                    &codes::ROUTE_CONDITION,
                    &format!("{base}/with"),
                    "`with` on a route that does not spawn",
                )
                .label("only a spawned role receives feedback")
                .hint("remove `with`, or make the route `spawn:` a role");
            ctx.emit(d);
        }
        if let Some(when) = &route.when {
            let empty_verdict = matches!(&when.verdict, Some(OneOrMany::Many(v)) if v.is_empty());
            let empty_severity = matches!(&when.severity, Some(OneOrMany::Many(v)) if v.is_empty());
            for (empty, key) in [(empty_verdict, "verdict"), (empty_severity, "severity")] {
                if empty {
                    let d = ctx
                        .at(
                            &codes::ROUTE_CONDITION,
                            &format!("{base}/when/{key}"),
                            format!("empty `{key}` list"),
                        )
                        .label("matches nothing")
                        .hint(format!(
                            "list at least one {key}, or remove the key to match all"
                        ));
                    ctx.emit(d);
                }
            }
        }
    }
    await_has_answers(pipeline, ctx);
}

/// `await: human` needs something a person can answer with: a `user.approve`, `user.veto` or
/// `user.answer` route.
fn await_has_answers(pipeline: &Pipeline, ctx: &mut Ctx<'_>) {
    let answers = pipeline.routes.iter().any(|r| {
        [Kind::UserApprove, Kind::UserVeto, Kind::UserAnswer]
            .iter()
            .any(|k| r.on == k.as_str())
    });
    if answers {
        return;
    }
    for (i, route) in pipeline.routes.iter().enumerate() {
        if route.r#await.is_none() {
            continue;
        }
        let d = ctx
            .at(
                &codes::AWAIT_WITHOUT_ANSWER,
                &format!("/routes/{i}/await"),
                "the session waits for a person, but no route handles `user.approve`, `user.veto` or `user.answer`",
            )
            .label("nothing a person says could move the session on")
            .hint("add `{ on: user.approve, done: { outcome: pass, reason: approved } }` and/or `{ on: user.veto, spawn: <role>, with: feedback }`");
        ctx.emit(d);
    }
}

fn qa_checks(pipeline: &Pipeline, table: &TransitionTable, ctx: &mut Ctx<'_>) {
    let (Some(qa), Some(spec)) = (&pipeline.qa, &table.qa) else {
        return;
    };
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, (check, compiled)) in qa.checks.iter().zip(&spec.checks).enumerate() {
        let base = format!("/qa/checks/{i}");
        if let Some(first) = seen.insert(check.id(), i) {
            let d = ctx
                .at(
                    &codes::DUPLICATE_CHECK_ID,
                    &format!("{base}/id"),
                    format!("duplicate check id `{}`", check.id()),
                )
                .label("used again here")
                .hint(format!("check {first} already uses this id"));
            ctx.emit(d);
        }
        if let (Some(check_ms), true) = (compiled.timeout_ms, spec.timeout_ms > 0)
            && check_ms > spec.timeout_ms
        {
            let d = ctx
                .at(&codes::CHECK_CONTRADICTION, &format!("{base}/timeout"), "check timeout is longer than `qa.timeout`")
                .label("can never be reached")
                .hint("the whole QA run is stopped at `qa.timeout`; shorten this timeout or raise `qa.timeout`");
            ctx.emit(d);
        }
        kind_parameters(qa, check, compiled, &base, ctx);
    }
}

/// Parameters of one check that are missing or contradict each other.
fn kind_parameters(qa: &Qa, check: &Check, compiled: &CheckSpec, base: &str, ctx: &mut Ctx<'_>) {
    match (check, &compiled.kind) {
        (
            Check::File { .. },
            CheckKindSpec::File {
                min_bytes: Some(min),
                max_bytes: Some(max),
                ..
            },
        ) if min > max && *max > 0 => {
            let d = ctx
                .at(
                    &codes::CHECK_CONTRADICTION,
                    &format!("{base}/min_size"),
                    "`min_size` is larger than `max_size`",
                )
                .label("no file can satisfy both")
                .hint("swap the two sizes or fix one of them");
            ctx.emit(d);
        }
        (Check::MaxBytes { glob, .. }, _) => {
            if let Err(err) = GlobBuilder::new(glob).literal_separator(true).build() {
                let d = ctx
                        .at(&codes::BAD_GLOB, &format!("{base}/glob"), format!("bad glob `{glob}`: {}", err.kind()))
                        .label("does not compile")
                        .hint("globs use `*`, `**`, `?`, `[abc]` and `{a,b}`; close every bracket and brace");
                ctx.emit(d);
            }
        }
        (Check::Command { argv, .. }, _)
            if argv.first().is_none_or(|program| program.trim().is_empty()) =>
        {
            let d = ctx
                .at(
                    &codes::CHECK_MISSING_PARAMETER,
                    &format!("{base}/argv"),
                    "command check has no program to run",
                )
                .label("empty")
                .hint("give the program and its arguments, e.g. `argv: [node, test.js]`");
            ctx.emit(d);
        }
        (Check::Browser { wait_for, .. }, _) => {
            if qa.entry.is_none() {
                let d = ctx
                    .at(
                        &codes::CHECK_MISSING_PARAMETER,
                        base,
                        "browser check without `qa.entry`",
                    )
                    .label("nothing to open")
                    .hint("set `qa.entry` to the page to open, e.g. `entry: game/index.html`");
                ctx.emit(d);
            }
            if wait_for.trim().is_empty() {
                let d = ctx
                    .at(
                        &codes::CHECK_MISSING_PARAMETER,
                        &format!("{base}/wait_for"),
                        "empty `wait_for` selector",
                    )
                    .hint("give a CSS selector, e.g. `canvas`");
                ctx.emit(d);
            }
        }
        (Check::AcPredicates { .. }, _) if qa.entry.is_none() => {
            let d = ctx
                .at(
                    &codes::CHECK_MISSING_PARAMETER,
                    base,
                    "ac_predicates check without `qa.entry`",
                )
                .label("predicates run in the page")
                .hint("set `qa.entry` to the page the predicates run in");
            ctx.emit(d);
        }
        _ => {}
    }
}

fn scoring(pipeline: &Pipeline, table: &TransitionTable, ctx: &mut Ctx<'_>) {
    let s = &pipeline.scoring;
    let guards = s.guards_for(pipeline.qa.is_some());
    if let Some(declared) = &s.rubric {
        crate::pipeline::rubric_checks::check(declared, &guards, ctx);
    }
    if pipeline.qa.is_none() {
        crate::pipeline::rubric_checks::check_qa_guards(
            s.guards.as_deref().unwrap_or_default(),
            ctx,
        );
    }
    let max = crate::pipeline::rubric::max_aggregate(&table.scoring.rubric);
    let in_range = |v: f64| (0.0..=max).contains(&v);
    if !in_range(s.pass_at) || !in_range(s.partial_at) || s.partial_at > s.pass_at {
        let pointer = if in_range(s.pass_at) {
            "/scoring/partial_at"
        } else {
            "/scoring/pass_at"
        };
        let d = ctx
            .at(
                &codes::SCORING_THRESHOLDS,
                pointer,
                format!(
                    "scoring thresholds out of order: partial_at {} and pass_at {}",
                    s.partial_at, s.pass_at
                ),
            )
            .label(format!(
                "thresholds must satisfy 0 <= partial_at <= pass_at <= {max}"
            ))
            .hint(format!(
                "the aggregate is Σ weight × score over the rubric, at most {max}"
            ));
        ctx.emit(d);
    }
}

/// `kinds:` names event kinds outside the engine's fixed core.
fn kinds(pipeline: &Pipeline, ctx: &mut Ctx<'_>) {
    for (kind, decl) in pipeline.kinds.iter().flatten() {
        if let Some(schema) = &decl.schema
            && let Err(e) = jsonschema::validator_for(schema)
        {
            let d = ctx
                .at(
                    &codes::KIND_DECLARATION,
                    &format!("/kinds/{}/schema", escape_segment(kind)),
                    format!("the `data` schema of `{kind}` is not a valid JSON Schema: {e}"),
                )
                .label("invalid schema")
                .hint("write a JSON Schema (draft 7) object, e.g. `{ type: object, required: [words] }`");
            ctx.emit(d);
        }
        let problem = match Kind::vocabulary(kind) {
            // A name of the pipeline's own: it only has to be spelt like one.
            None => crate::transcript::DeclaredKind::new(kind)
                .err()
                .map(|e| e.to_string()),
            Some(k) if decl.slot.is_some() && !crate::transcript::payload::reads_data(k) => {
                Some("a kind whose data the engine does not read (tool traffic)".to_owned())
            }
            Some(_)
                if crate::pipeline::kinds::CORE_KINDS.contains(&kind.as_str())
                    || kind.starts_with("user.") =>
            {
                Some("a kind of the engine's fixed core".to_owned())
            }
            Some(_) => None,
        };
        if let Some(label) = problem {
            let d = ctx
                .at_key(
                    &codes::KIND_DECLARATION,
                    &format!("/kinds/{}", escape_segment(kind)),
                    format!("`{kind}` cannot be declared"),
                )
                .label(label)
                .hint("declare the artifact kinds your roles exchange, e.g. `research.note: {}`");
            ctx.emit(d);
        }
    }
}

fn limits(table: &TransitionTable, ctx: &mut Ctx<'_>) {
    let l = &table.limits;
    let order = [
        (l.tokens_warn, l.tokens_hard, "/limits/tokens", "tokens"),
        (
            l.wall_clock_warn_ms,
            l.wall_clock_hard_ms,
            "/limits/wall_clock",
            "wall_clock",
        ),
    ];
    for (warn, hard, pointer, name) in order {
        if hard > 0 && warn > hard {
            let d = ctx
                .at(
                    &codes::LIMIT_ORDER,
                    &format!("{pointer}/hard"),
                    format!("`{name}.hard` is below `{name}.warn`"),
                )
                .label("hard stop before the warning")
                .hint("set `warn` below `hard`");
            ctx.emit(d);
        }
    }
}
