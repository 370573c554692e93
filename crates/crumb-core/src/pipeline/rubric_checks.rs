//! Validation of a declared `scoring.rubric`: well-formed dimensions, and every dimension property
//! matched by a listed guard (and every listed dimension guard by a property).

use std::collections::HashSet;

use crate::pipeline::choices::Guard;
use crate::pipeline::codes;
use crate::pipeline::pass_context::Ctx;
use crate::pipeline::rubric::{
    DimensionDecl, SLOT_IDS, SLOT_MAX, is_dimension_guard, property_guards,
};

/// Check a declared rubric against itself and the guards.
pub(crate) fn check(declared: &[DimensionDecl], guards: &[Guard], ctx: &mut Ctx<'_>) {
    if declared.is_empty() {
        let d = ctx
            .at(
                &codes::RUBRIC_DIMENSION,
                "/scoring/rubric",
                "the rubric declares no dimension",
            )
            .label("nothing to score")
            .hint("declare at least one dimension, or omit `rubric:` for the default D1–D6");
        ctx.emit(d);
        return;
    }
    let mut seen = HashSet::new();
    let mut declared_guards = HashSet::new();
    for (i, dim) in declared.iter().enumerate() {
        let base = format!("/scoring/rubric/{i}");
        if let Some(problem) = dimension_problem(dim, &mut seen) {
            let (field, message) = problem;
            let d = ctx
                .at(
                    &codes::RUBRIC_DIMENSION,
                    &format!("{base}/{field}"),
                    message,
                )
                .label("malformed dimension");
            ctx.emit(d);
        }
        for (guard, field) in property_guards(dim) {
            declared_guards.insert(guard);
            if !guards.contains(&guard) {
                let d = ctx
                    .at(
                        &codes::RUBRIC_GUARD,
                        &format!("{base}/{field}"),
                        format!(
                            "dimension `{}` declares `{field}`, but `scoring.guards` does not list `{}`",
                            dim.id,
                            guard_name(guard)
                        ),
                    )
                    .label("would be ignored")
                    .hint(format!("add `{}` to `scoring.guards`", guard_name(guard)));
                ctx.emit(d);
            }
        }
    }
    for (i, guard) in guards.iter().enumerate() {
        if is_dimension_guard(*guard) && !declared_guards.contains(guard) {
            let d = ctx
                .at(
                    &codes::RUBRIC_GUARD,
                    &format!("/scoring/guards/{i}"),
                    format!("guard `{}` applies to no dimension", guard_name(*guard)),
                )
                .label("would be ignored")
                .hint(property_hint(*guard));
            ctx.emit(d);
        }
    }
}

/// In a pipeline without `qa:`: each listed guard that acts on QA evidence.
pub(crate) fn check_qa_guards(listed: &[Guard], ctx: &mut Ctx<'_>) {
    for (i, guard) in listed.iter().enumerate() {
        if guard.needs_qa() {
            let d = ctx
                .at(
                    &codes::GUARD_NEEDS_QA,
                    &format!("/scoring/guards/{i}"),
                    format!(
                        "guard `{}` needs a QA run, but the pipeline declares no `qa:`",
                        guard_name(*guard)
                    ),
                )
                .label(if *guard == Guard::PassRequiresQa {
                    "no verdict could ever pass"
                } else {
                    "would never act"
                })
                .hint("declare `qa:` and a `run: qa` route, or leave the guard out");
            ctx.emit(d);
        }
    }
}

/// The first problem of one dimension: (field, message).
fn dimension_problem(
    dim: &DimensionDecl,
    seen: &mut HashSet<String>,
) -> Option<(&'static str, String)> {
    let well_formed = !dim.id.is_empty()
        && dim
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !well_formed {
        return Some((
            "id",
            format!(
                "dimension id `{}` is not letters, digits, `_` or `-`",
                dim.id
            ),
        ));
    }
    if !seen.insert(dim.id.clone()) {
        return Some(("id", format!("dimension `{}` is declared twice", dim.id)));
    }
    if !(dim.scale.is_finite() && dim.scale > 0.0) {
        return Some(("scale", format!("scale {} is not positive", dim.scale)));
    }
    if SLOT_IDS.contains(&dim.id.as_str()) && dim.scale > SLOT_MAX {
        return Some((
            "scale",
            format!(
                "`{}` is a transcript slot scored 0–{SLOT_MAX}; scale {} cannot be sent there (use another id, read from `scores.dims`)",
                dim.id, dim.scale
            ),
        ));
    }
    if !(dim.weight.is_finite() && dim.weight > 0.0) {
        return Some(("weight", format!("weight {} is not positive", dim.weight)));
    }
    if let Some(cap) = dim.ac_failure_cap
        && !(0.0..=dim.scale).contains(&cap)
    {
        return Some((
            "ac_failure_cap",
            format!("cap {cap} is outside the scale 0–{}", dim.scale),
        ));
    }
    if let Some(factor) = dim.same_provider_discount
        && !(factor > 0.0 && factor <= 1.0)
    {
        return Some((
            "same_provider_discount",
            format!("discount {factor} is not a multiplier in (0, 1]"),
        ));
    }
    None
}

fn guard_name(guard: Guard) -> String {
    serde_json::to_value(guard)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn property_hint(guard: Guard) -> &'static str {
    match guard {
        Guard::ExecFromQa => "give the dimension QA decides `source: qa`",
        Guard::ReworkCapsConvergence => "give the dimension rework caps `source: rework`",
        Guard::AcFailureCapsSpecFit => "declare `ac_failure_cap: <n>` on the dimension it caps",
        Guard::SameProviderDiscount => {
            "declare `same_provider_discount: <factor>` on the dimensions it discounts"
        }
        Guard::PassRequiresQa => "",
    }
}
