//! The compiler's API without the binary: the casual table, in-memory compiles, template
//! confinement through symlinks, unit parsing, graph ids and preset detection.

use super::*;

#[test]
fn casual_compiles_to_the_expected_table() {
    let compiled = compile_file(
        &repo_root().join("pipelines/casual.yaml"),
        &CompileOptions::default(),
        &crumb::fs::real_files(),
    );
    assert!(
        compiled.diagnostics.is_empty(),
        "{:?}",
        compiled.diagnostics
    );
    assert_eq!(compiled.source_hash.len(), 64);
    let table = compiled.table.expect("table");
    assert_eq!(table.name, "casual");
    assert_eq!(
        table.route_for("goal", "user").map(|r| &r.action),
        Some(&Action::Spawn {
            role: "planner-lead".into()
        })
    );
    assert_eq!(
        table.route_for("build", "builder").map(|r| &r.action),
        Some(&Action::RunQa)
    );
    let pass = table
        .route_for_verdict(Verdict::Pass, Severity::Minor)
        .expect("PASS routed");
    assert_eq!(
        pass.action,
        Action::Done {
            outcome: crumb_core::vocab::Outcome::Pass,
            reason: "verdict_pass".into()
        }
    );
    let redesign = table
        .route_for_verdict(Verdict::Reject, Severity::Critical)
        .expect("routed");
    assert_eq!(
        redesign.action,
        Action::Spawn {
            role: "planner-lead".into()
        }
    );
    assert!(redesign.with_feedback);
    let repair = table
        .route_for_verdict(Verdict::Fail, Severity::Minor)
        .expect("routed");
    assert_eq!(
        repair.action,
        Action::Spawn {
            role: "builder".into()
        }
    );
    assert!(
        table.verdict_matrix.iter().flatten().all(Option::is_some),
        "exhaustive"
    );
    assert!(matches!(table.routes[4].trigger, Trigger::Verdict { .. }));
    assert_eq!(
        table.role("builder").map(|r| r.wall_timeout_ms),
        Some(30 * 60 * 1000)
    );
    assert_eq!(table.limits.wall_clock_hard_ms, 60 * 60 * 1000);
}

#[test]
fn compile_str_without_templates_needs_no_files() {
    let text =
        std::fs::read_to_string(repo_root().join("pipelines/casual.yaml")).expect("readable");
    // A path where nothing exists: the frozen copy inside a session.
    let origin = Path::new("/nonexistent/session/pipeline.yaml");
    let compiled = compile_str(
        &text,
        origin,
        &CompileOptions {
            check_templates: false,
        },
        &crumb::fs::real_files(),
    );
    assert!(compiled.table.is_some(), "{:?}", compiled.diagnostics);
    let same = compile_file(
        &repo_root().join("pipelines/casual.yaml"),
        &CompileOptions::default(),
        &crumb::fs::real_files(),
    );
    assert_eq!(compiled.table, same.table, "one compiler, one meaning");
    assert_eq!(compiled.source_hash, same.source_hash);
}

#[test]
fn template_escape_is_refused_even_through_a_symlink() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("pipelines")).expect("mkdir");
    let outside = dir.path().join("secret.md.j2");
    std::fs::write(&outside, "{{ goal }}").expect("write");
    std::os::unix::fs::symlink(&outside, project.join("link.md.j2")).expect("symlink");
    let pipeline = project.join("pipelines/p.yaml");
    std::fs::write(
        &pipeline,
        "version: 1\nname: p\nroles:\n  w: { template: ../link.md.j2, produces: [build] }\nroutes:\n  - { on: goal, spawn: w }\n  - { on: build, done: { outcome: pass, reason: ok } }\n",
    )
    .expect("write");
    let compiled = compile_file(
        &pipeline,
        &CompileOptions::default(),
        &crumb::fs::real_files(),
    );
    assert!(
        compiled
            .diagnostics
            .iter()
            .any(|d| d.code == "crumb::template-escapes-root"),
        "{:?}",
        compiled.diagnostics
    );
}

const CASUAL: &str = include_str!("../../pipelines/casual.yaml");

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_the_loader(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let compiled = compile_bytes(&bytes, Path::new("fuzz.yaml"), &CompileOptions { check_templates: false }, &crumb::fs::real_files());
        prop_assert!(compiled.table.is_none() || compiled.diagnostics.iter().all(|d| !d.is_error()));
        let _ = check_preset_bytes(&bytes, Path::new("fuzz.preset.yaml"));
    }

    #[test]
    fn unit_parsers_never_panic_and_round_trip(text in "\\PC{0,40}", n in 0u64..=u64::MAX) {
        let _ = parse_duration_ms(&text);
        let _ = parse_size_bytes(&text);
        prop_assert_eq!(parse_duration_ms(&format!("{n}ms")), Ok(n));
        prop_assert_eq!(parse_size_bytes(&format!("{n}B")), Ok(n));
        let minutes = format!("{n}m");
        match n.checked_mul(60_000) {
            Some(ms) => prop_assert_eq!(parse_duration_ms(&minutes), Ok(ms)),
            None => prop_assert!(parse_duration_ms(&minutes).is_err()),
        }
        let mebibytes = format!("{n}MiB");
        match n.checked_mul(1 << 20) {
            Some(bytes) => prop_assert_eq!(parse_size_bytes(&mebibytes), Ok(bytes)),
            None => prop_assert!(parse_size_bytes(&mebibytes).is_err()),
        }
    }

    #[test]
    fn yaml_ish_text_never_panics_the_loader(text in "[a-z_:{}\\[\\], \\-\\n\\t#'\"&*!|>%@.0-9]{0,400}") {
        let compiled = compile_str(&text, Path::new("fuzz.yaml"), &CompileOptions { check_templates: false }, &crumb::fs::real_files());
        prop_assert!(compiled.has_errors() || compiled.table.is_some());
    }

    #[test]
    fn mutated_pipelines_never_panic_and_errors_have_locations(
        at in 0usize..CASUAL.len(),
        cut in 0usize..40,
        insert in "[a-z:{}\\[\\],\\- \\n]{0,8}",
    ) {
        let start = (0..=at).rev().find(|i| CASUAL.is_char_boundary(*i)).unwrap_or(0);
        let end = (start + cut..=CASUAL.len()).find(|i| CASUAL.is_char_boundary(*i)).unwrap_or(CASUAL.len());
        let text = format!("{}{insert}{}", &CASUAL[..start], &CASUAL[end..]);
        let compiled = compile_str(&text, Path::new("mutant.yaml"), &CompileOptions { check_templates: false }, &crumb::fs::real_files());
        for diagnostic in &compiled.diagnostics {
            // Whole-file problems are the only ones allowed to lack a position.
            let whole_file = ["crumb::empty-file", "crumb::wrong-type"].contains(&diagnostic.code);
            prop_assert!(diagnostic.span.is_some() || whole_file, "{diagnostic:?}");
        }
    }
}

#[test]
fn graph_node_ids_stay_distinct_when_names_sanitise_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = dir.path().join("p.yaml");
    std::fs::write(
        &pipeline,
        "version: 1\nname: p\nroles:\n  a-b: { template: t.j2, produces: [spec] }\n  a_b: { template: t.j2, produces: [build] }\nroutes:\n  - { on: goal, spawn: a-b }\n  - { on: spec, spawn: a_b }\n  - { on: build, done: { outcome: pass, reason: \"said \\\"done\\\"\" } }\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("t.j2"), "{{ goal }}").expect("write");
    let mermaid = crumb()
        .arg("graph")
        .arg(&pipeline)
        .run()
        .expect_code(0)
        .stdout;
    assert!(
        mermaid.contains("role_a_b[\"a-b\"]") && mermaid.contains("role_a_b_2[\"a_b\"]"),
        "{mermaid}"
    );
    assert!(
        mermaid.contains("role_a_b -->|\"#2 spec\"| role_a_b_2"),
        "{mermaid}"
    );
    let dot = crumb()
        .args(["graph", "--format", "dot"])
        .arg(&pipeline)
        .run()
        .expect_code(0)
        .stdout;
    assert!(
        dot.contains("[label=\"done: said \\\"done\\\"\", shape=doublecircle]"),
        "{dot}"
    );
}

#[test]
fn presets_are_recognised_by_content_outside_the_presets_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("mine.yaml");
    std::fs::copy(repo_root().join("presets/cross.yaml"), &copy).expect("copy");
    let run = crumb().arg("validate").arg(&copy).run().expect_code(0);
    assert!(run.stdout.starts_with("ok: "), "{}", run.stdout);
}
