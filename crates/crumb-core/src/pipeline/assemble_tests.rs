//! `extends:`/`include:`: merge rules, paths rewritten, and every diagnostic located in the file
//! it is about.

use std::path::{Path, PathBuf};

use crate::pipeline::source::InMemory;
use crate::pipeline::{CompileOptions, Compiled, compile_file};

/// A project: `pipelines/` with the given files, and a template every role can use.
fn project(files: &[(&str, &str)]) -> (InMemory, PathBuf) {
    let root = Path::new("/project");
    let mut project = InMemory::new().with(
        root.join("templates/w.md.j2"),
        "{{ goal }} for {{ inputs.audience }}",
    );
    for (path, text) in files {
        project = project.with(root.join("pipelines").join(path), *text);
    }
    (project, root.join("pipelines/main.yaml"))
}

fn compile(project: InMemory, main: &Path) -> Compiled {
    compile_file(main, &CompileOptions::default(), &project.shared())
}

/// `code file:line:col` of every diagnostic, file relative to `pipelines/`.
fn located(compiled: &Compiled, main: &Path) -> Vec<String> {
    let base = main.parent().expect("dir");
    compiled
        .diagnostics
        .iter()
        .map(|d| {
            let file = d
                .file
                .strip_prefix(base)
                .unwrap_or(&d.file)
                .display()
                .to_string();
            let (line, col) = d.span.map_or((0, 0), |s| (s.line, s.col));
            format!("{} {file}:{line}:{col}", d.code)
        })
        .collect()
}

const SHARED: &str = "roles:\n  writer: { template: ../../templates/w.md.j2, produces: [build] }\nroutes:\n  - { on: build, done: pass }\n";
const MAIN: &str = "version: 1\nname: main\ninputs:\n  audience: { default: engineers }\ninclude: [shared/roles.yaml]\nroles: {}\nroutes:\n  - { on: goal, spawn: writer }\n";

#[test]
fn include_adds_roles_and_appends_routes_with_paths_rewritten() {
    let (files, main) = project(&[("main.yaml", MAIN), ("shared/roles.yaml", SHARED)]);
    let compiled = compile(files, &main);
    assert!(
        compiled.diagnostics.is_empty(),
        "{:#?}",
        compiled.diagnostics
    );
    let table = compiled.table.expect("compiles");
    assert_eq!(table.roles[0].template, "../templates/w.md.j2");
    assert_eq!(table.routes.len(), 2);
    assert!(
        compiled
            .sources
            .iter()
            .any(|(p, _)| p.ends_with("shared/roles.yaml"))
    );
}

#[test]
fn an_error_inside_a_fragment_points_at_the_fragment() {
    let bad = SHARED.replace("produces: [build] }", "produces: [build], tmeout: 3 }");
    let (files, main) = project(&[("main.yaml", MAIN), ("shared/roles.yaml", &bad)]);
    let compiled = compile(files, &main);
    assert_eq!(
        located(&compiled, &main),
        ["crumb::unknown-key shared/roles.yaml:2:67"]
    );
}

#[test]
fn a_role_defined_twice_points_at_the_second_and_names_the_first() {
    let main_text = MAIN.replace(
        "roles: {}",
        "roles:\n  writer: { template: ../templates/w.md.j2, produces: [build] }",
    );
    let (files, main) = project(&[("main.yaml", &main_text), ("shared/roles.yaml", SHARED)]);
    let compiled = compile(files, &main);
    assert_eq!(
        located(&compiled, &main),
        ["crumb::duplicate-role shared/roles.yaml:2:3"]
    );
    let hint = compiled.diagnostics[0].hint.clone().unwrap_or_default();
    assert!(hint.contains("main.yaml:7:3"), "{hint}");
}

#[test]
fn extends_merges_named_sections_and_replaces_the_rest() {
    let base = "version: 1\nname: base\ninputs:\n  audience: { default: everyone }\nroles:\n  writer: { template: ../templates/w.md.j2, produces: [build] }\nroutes:\n  - { on: goal, spawn: writer }\n  - { on: build, done: pass }\n";
    let child = "extends: base.yaml\nname: child\nroles:\n  checker: { template: ../templates/w.md.j2, produces: [build] }\n";
    let (files, main) = project(&[("main.yaml", child), ("base.yaml", base)]);
    let compiled = compile(files, &main);
    // `checker` is declared but no route spawns it: the warning points at the child.
    assert_eq!(
        located(&compiled, &main),
        ["crumb::role-never-spawned main.yaml:4:3"]
    );
    let table = compiled.table.expect("warnings only");
    assert_eq!(table.name, "child");
    let roles: Vec<&str> = table.roles.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(roles, ["writer", "checker"]);
    assert_eq!(table.routes.len(), 2);
}

#[test]
fn a_cycle_is_an_error_showing_the_chain() {
    let a = "include: [b.yaml]\nroles: {}\n";
    let b = "include: [a.yaml]\n";
    let (files, main) = project(&[
        ("main.yaml", &MAIN.replace("shared/roles.yaml", "a.yaml")),
        ("a.yaml", a),
        ("b.yaml", b),
    ]);
    let compiled = compile(files, &main);
    let cycle = compiled
        .diagnostics
        .iter()
        .find(|d| d.code == "crumb::include-cycle")
        .expect("a cycle error");
    assert!(cycle.file.ends_with("b.yaml"), "{cycle:?}");
    assert!(
        cycle.message.contains("a.yaml → ") && cycle.message.ends_with("a.yaml"),
        "{}",
        cycle.message
    );
}

#[test]
fn fragments_stay_in_the_project_and_hold_only_fragment_keys() {
    let (files, main) = project(&[
        (
            "main.yaml",
            &MAIN.replace(
                "[shared/roles.yaml]",
                "[shared/roles.yaml, ../../../etc/passwd, nope.yaml]",
            ),
        ),
        (
            "shared/roles.yaml",
            &format!("{SHARED}limits: {{ max_verify: 2 }}\n"),
        ),
    ]);
    let compiled = compile(files, &main);
    let codes: Vec<&str> = compiled.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(
        codes,
        [
            "crumb::fragment-key",
            "crumb::include-file",
            "crumb::include-file"
        ],
        "{:#?}",
        compiled.diagnostics
    );
}

#[test]
fn an_input_a_template_reads_must_be_declared() {
    let main_text = MAIN.replace(
        "  audience: { default: engineers }\n",
        "  audiense: { default: engineers }\n",
    );
    let (files, main) = project(&[("main.yaml", &main_text), ("shared/roles.yaml", SHARED)]);
    let compiled = compile(files, &main);
    let d = &compiled.diagnostics[0];
    assert_eq!(d.code, "crumb::unknown-template-variable", "{d:#?}");
    assert!(
        d.label
            .as_deref()
            .unwrap_or_default()
            .contains("did you mean `audiense`"),
        "{d:#?}"
    );
}

#[test]
fn bad_input_declarations_are_each_reported() {
    let main_text = MAIN.replace(
        "  audience: { default: engineers }\n",
        "  audience: { default: engineers }\n  count: { type: integer, default: many }\n  goal: { type: integer }\n  size: { type: enum }\n",
    );
    let (files, main) = project(&[("main.yaml", &main_text), ("shared/roles.yaml", SHARED)]);
    let compiled = compile(files, &main);
    assert_eq!(
        located(&compiled, &main),
        [
            "crumb::input-default main.yaml:5:36",
            "crumb::input-declaration main.yaml:6:17",
            "crumb::input-declaration main.yaml:7:17",
        ]
    );
}
