//! The checker on the cases, and on reads that must pass.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Problem, check_role};
use crate::pipeline::template_variables::RoleView;

/// The problems of `text` for a role that `sees` these kinds (all when empty). `part.j2` reads
/// a loop variable of the including template.
fn problems(text: &str, sees: &[&str]) -> Vec<Problem> {
    let sees: Vec<String> = sees.iter().map(|s| (*s).to_owned()).collect();
    let slots = crate::pipeline::kinds::lower(None);
    let texts: BTreeMap<PathBuf, String> = [
        ("/p/t.j2", text),
        ("/p/part.j2", "{{ c.stauts }}"),
        ("/p/m.j2", "{% macro row(c) %}{{ c.stauts }}{% endmacro %}"),
    ]
    .into_iter()
    .map(|(p, t)| (PathBuf::from(p), t.to_owned()))
    .collect();
    let inputs = ["min_python".to_owned()];
    check_role(
        Path::new("/p/t.j2"),
        &texts,
        RoleView::new(&sees, &slots),
        &inputs,
    )
    .into_iter()
    .map(|f| f.problem)
    .collect()
}

#[test]
fn field_typos_are_caught_through_loops_indexing_set_macros_filters_and_includes() {
    for text in [
        "{% for c in qa.checks %}{{ c.stauts }}{% endfor %}",
        "{{ qa.checks[0].stauts }}",
        "{% for p in spec.ac_predicates %}{{ p.intnet }}{% endfor %}",
        "{% for k in role.produces %}{{ k.name }}{% endfor %}",
        "{% for d in pipeline.rubric %}{{ d.lable }}{% endfor %}",
        "{% set f = feedback %}{{ f.txt }}",
        "{% with f = feedback %}{{ f.txt }}{% endwith %}",
        "{% macro m(c) %}{{ c.stauts }}{% endmacro %}{% for c in qa.checks %}{{ m(c) }}{% endfor %}",
        "{% import 'm.j2' as m %}{% for c in qa.checks %}{{ m.row(c) }}{% endfor %}",
        "{% from 'm.j2' import row %}{{ row(qa.checks | last) }}",
        "{{ (qa.checks | first).stauts }}",
        "{{ qa.checks | map(attribute='stauts') | join }}",
        "{% for c in qa.checks | sort(attribute='id') %}{{ c.stauts }}{% endfor %}",
        "{% for c in qa.checks %}{% include 'part.j2' %}{% endfor %}",
        "{% for k, v in outputs.by_kind | items %}{{ v.bdy }}{% endfor %}",
        "{% for c in qa.checks %}{{ loop.indx }}{% endfor %}",
        "{{ inputs.max_python }}",
    ] {
        let found = problems(text, &[]);
        assert!(
            matches!(found.as_slice(), [Problem::Unknown { why: Some(_), .. }]),
            "{text}: {found:?}"
        );
    }
    assert!(matches!(
        problems("{{ deadline }}", &[]).as_slice(),
        [Problem::Unknown { why: None, .. }]
    ));
}

#[test]
fn correct_reads_pass() {
    for text in [
        "{% for c in qa.checks %}{{ c.status }} {{ loop.index }}{% endfor %}",
        "{{ qa.checks[0].status }} {{ spec.body.upper() }} {{ goal | upper }}",
        "{% set f = feedback %}{% if f %}{{ f.text }}{% endif %}",
        "{% macro m(c, n=1) %}{{ c.status }}{{ n + 1 }}{% endmacro %}{{ m(qa.checks[0]) }}",
        "{% for c in qa.checks | selectattr('status', 'eq', 'fail') %}{{ c.id }}{% endfor %}",
        "{{ outputs.by_kind['spec'].data.anything }} {{ outputs.by_role['w'].body }}",
        "{% set ns = namespace(n=0) %}{% for c in qa.checks %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
        "{{ inputs.min_python }} {{ inputs.goal }} {{ range(3) | length }}",
        "{% for k, v in outputs.by_kind | items %}{{ k }}: {{ v.body }}{% endfor %}",
    ] {
        assert_eq!(problems(text, &[]), [], "{text}");
    }
}

#[test]
fn what_a_role_does_not_see_is_an_error_unless_guarded() {
    let unseen = |text: &str| {
        let found = problems(text, &["goal", "build"]);
        assert!(
            matches!(found.as_slice(), [Problem::Unseen { .. }]),
            "{text}: {found:?}"
        );
    };
    unseen("{{ qa.checks }}");
    unseen("{% if qa.passed %}x{% endif %}");
    unseen("{% for c in qa.checks %}{{ c.id }}{% endfor %}");
    unseen("{{ outputs.by_kind['spec'].body }}");
    for text in [
        "{{ build.body }} {{ outputs.by_kind['build'].body }} {{ feedback }}",
        "{% if qa is defined and qa %}{{ qa.checks | length }}{% endif %}",
        "{% if qa %}x{% endif %}",
        "{% if spec %}{{ spec.body }}{% else %}none{% endif %}",
        "{% if not verdict %}none{% else %}{{ verdict.verdict }}{% endif %}",
        "{% if spec and spec.body %}{{ spec.body }}{% endif %}",
        "{{ spec.body if spec else 'none' }}",
        "{% if verdict is not defined %}none{% else %}{{ verdict.verdict }}{% endif %}",
        "{% if outputs.by_kind['spec'] is defined %}{{ outputs.by_kind['spec'].body }}{% endif %}",
        "{{ qa | default('') }}",
    ] {
        assert_eq!(problems(text, &["goal", "build"]), [], "{text}");
    }
}

#[test]
fn an_unfollowed_shape_is_a_warning_not_a_pass() {
    for text in [
        "{% for g in qa.checks | groupby('status') %}{{ g.grouper }}{% endfor %}",
        "{% macro m(c) %}{{ c.status }}{% endmacro %}",
    ] {
        let found = problems(text, &[]);
        assert!(
            matches!(found.as_slice(), [Problem::ShapeUnknown { .. }]),
            "{text}: {found:?}"
        );
    }
}
