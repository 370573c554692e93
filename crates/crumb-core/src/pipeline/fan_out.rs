//! Validation of parallel routes: a `spawn:` list (a fan-out) and the `join:` route that collects
//! its judges' verdicts and combines them.

use std::collections::HashSet;

use crate::pipeline::choices::{JoinMode, Quorum};
use crate::pipeline::codes;
use crate::pipeline::model::{OneOrMany, Pipeline, Route};
use crate::pipeline::pass_context::Ctx;
use crate::pipeline::triggers::JUDGE_SCORE_KIND;

/// Check route `i`'s fan-out and join keys.
pub(crate) fn check_route(pipeline: &Pipeline, i: usize, route: &Route, ctx: &mut Ctx<'_>) {
    let base = format!("/routes/{i}");
    if let Some(OneOrMany::Many(roles)) = &route.spawn {
        let mut seen = HashSet::new();
        let twice = roles.iter().find(|r| !seen.insert(r.as_str()));
        let problem = if roles.is_empty() {
            Some("the spawn list is empty".to_owned())
        } else {
            twice.map(|r| format!("the spawn list names `{r}` twice"))
        };
        if let Some(message) = problem {
            emit(
                ctx,
                &format!("{base}/spawn"),
                message,
                "spawn distinct roles",
            );
        }
    }
    match (route.join, route.combine) {
        (Some(_), None) => emit(
            ctx,
            &format!("{base}/join"),
            "a join without `combine`".to_owned(),
            "add `combine: all_pass | majority | mean | min`",
        ),
        (None, Some(_)) => emit(
            ctx,
            &format!("{base}/combine"),
            "`combine` without `join`".to_owned(),
            "add `join: all | any | { quorum: n }`, or remove `combine`",
        ),
        (Some(mode), Some(_)) => join_route(pipeline, &base, route, mode, ctx),
        (None, None) => {}
    }
}

fn join_route(pipeline: &Pipeline, base: &str, route: &Route, mode: JoinMode, ctx: &mut Ctx<'_>) {
    if route.on != JUDGE_SCORE_KIND {
        emit(
            ctx,
            &format!("{base}/on"),
            format!("a join on `{}`", route.on),
            "joins combine verdicts: use `on: judge.score`",
        );
        return;
    }
    // The widest fan-out of judging roles the join can collect.
    let branches = pipeline
        .routes
        .iter()
        .filter_map(|r| match &r.spawn {
            Some(OneOrMany::Many(roles)) => Some(roles),
            _ => None,
        })
        .filter(|roles| {
            roles.iter().all(|role| {
                pipeline
                    .roles
                    .get(role)
                    .is_some_and(|spec| spec.produces.iter().any(|k| k == JUDGE_SCORE_KIND))
            })
        })
        .map(Vec::len)
        .max();
    let Some(branches) = branches else {
        emit(
            ctx,
            &format!("{base}/join"),
            "a join that no fan-out of judges feeds".to_owned(),
            "spawn the judges together first: `spawn: [judge-a, judge-b]`",
        );
        return;
    };
    if let JoinMode::Quorum(Quorum { quorum: n }) = mode
        && (n == 0 || usize::try_from(n).is_ok_and(|n| n > branches))
    {
        emit(
            ctx,
            &format!("{base}/join/quorum"),
            format!("a quorum of {n} out of {branches} branches"),
            "use a quorum between 1 and the number of roles spawned together",
        );
    }
}

fn emit(ctx: &mut Ctx<'_>, pointer: &str, message: String, hint: &str) {
    let d = ctx
        .at(&codes::FAN_OUT, pointer, message)
        .label("cannot work")
        .hint(hint);
    ctx.emit(d);
}
