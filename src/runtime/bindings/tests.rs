//! Binding resolution tests: the layer order, files, flags and the `command` argv.

use super::*;
use crate::pipeline::model::RoleAdapter;

fn roles() -> Vec<String> {
    ["planner-lead", "builder", "verifier"]
        .map(String::from)
        .to_vec()
}

fn shipped_presets() -> Vec<PathBuf> {
    vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("presets")]
}

fn adapters(bindings: &Bindings) -> Vec<(&str, &str)> {
    bindings
        .roles
        .iter()
        .map(|(role, b)| (role.as_str(), b.adapter.as_str()))
        .collect()
}

#[test]
fn nothing_anywhere_means_mock() {
    let bindings = resolve(&roles(), &Request::default(), &Context::default()).unwrap();
    assert!(
        bindings
            .roles
            .values()
            .all(|b| b.adapter == AdapterKind::Mock && b.source == BindingSource::Fallback)
    );
    assert_eq!(bindings.roles["builder"].provider, "none");
}

#[test]
fn bind_beats_adapter_beats_config_beats_preset_beats_ambient() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "preset: cross\nroles:\n  planner-lead: { adapter: gemini-cli, model: flash }\n",
    )
    .unwrap();
    let context = Context {
        config_path: Some(config),
        preset_dirs: shipped_presets(),
        env: Environment::from_pairs([("CODEX_SESSION_ID", "x")]),
        ..Context::default()
    };
    let only_files = resolve(&roles(), &Request::default(), &context).unwrap();
    assert_eq!(
        adapters(&only_files),
        [
            ("planner-lead", "gemini-cli"),
            ("builder", "claude-code"),
            ("verifier", "codex")
        ]
    );
    assert_eq!(
        only_files.roles["planner-lead"].source,
        BindingSource::Config {
            entry: ConfigEntry::Role
        }
    );
    assert_eq!(
        only_files.roles["builder"].source,
        BindingSource::Preset {
            name: "cross".into(),
            entry: ConfigEntry::Default
        }
    );
    assert_eq!(only_files.roles["builder"].model.as_deref(), Some("sonnet"));
    assert_eq!(only_files.roles["verifier"].provider, "openai");

    let request = Request {
        adapter: Some("codex".into()),
        binds: vec!["verifier=claude-code:opus".into()],
        preset: Some("mock".into()),
    };
    let flags = resolve(&roles(), &request, &context).unwrap();
    assert_eq!(
        adapters(&flags),
        [
            ("planner-lead", "codex"),
            ("builder", "codex"),
            ("verifier", "claude-code")
        ]
    );
    assert_eq!(flags.roles["verifier"].model.as_deref(), Some("opus"));
    assert_eq!(flags.roles["verifier"].source, BindingSource::Bind);
    assert_eq!(flags.roles["builder"].source, BindingSource::Adapter);
    assert_eq!(
        flags.preset.as_deref(),
        Some("mock"),
        "--preset replaces the config's preset"
    );

    let ambient_only = Context {
        env: Environment::from_pairs([("CODEX_SESSION_ID", "x")]),
        ..Context::default()
    };
    let ambient = resolve(&roles(), &Request::default(), &ambient_only).unwrap();
    assert!(
        ambient
            .roles
            .values()
            .all(|b| b.adapter == AdapterKind::Codex)
    );
    assert_eq!(
        ambient.roles["builder"].describe(),
        "codex (openai) ← ambient: launched from codex (CODEX_SESSION_ID is set)"
    );
}

#[test]
fn preset_roles_beat_preset_default_and_foreign_roles_are_notes() {
    let context = Context {
        preset_dirs: shipped_presets(),
        ..Context::default()
    };
    let request = Request {
        preset: Some("gemini".into()),
        ..Request::default()
    };
    let doc_roles = vec!["writer".to_owned(), "reviewer".to_owned()];
    let bindings = resolve(&doc_roles, &request, &context).unwrap();
    assert_eq!(bindings.roles["writer"].model.as_deref(), Some("pro"));
    assert_eq!(
        bindings.notes,
        ["preset gemini binds `builder`, which this pipeline does not have (ignored)"]
    );
    let casual = resolve(&roles(), &request, &context).unwrap();
    assert_eq!(casual.roles["builder"].model.as_deref(), Some("flash"));
    assert_eq!(
        casual.roles["builder"].describe(),
        "gemini-cli (google, model flash) ← preset gemini (role)"
    );
}

#[test]
fn typed_errors() {
    let context = Context {
        preset_dirs: shipped_presets(),
        ..Context::default()
    };
    let err = |request: Request| {
        resolve(&roles(), &request, &context)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(Request {
            adapter: Some("gpt".into()),
            ..Request::default()
        }),
        "--adapter: unknown adapter `gpt` (adapters: mock, claude-code, codex, gemini-cli, command)"
    );
    assert_eq!(
        err(Request {
            binds: vec!["ghost=mock".into()],
            ..Request::default()
        }),
        "--bind ghost=mock: unknown role `ghost` (roles: planner-lead, builder, verifier)"
    );
    for bad in ["builder", "=mock", "builder=", "builder=mock:"] {
        assert!(
            err(Request {
                binds: vec![bad.into()],
                ..Request::default()
            })
            .contains("expected ROLE=ADAPTER"),
            "{bad}"
        );
    }
    assert!(
        err(Request {
            binds: vec!["builder=claude".into()],
            ..Request::default()
        })
        .contains("unknown adapter `claude`")
    );
    assert!(
        err(Request {
            preset: Some("nope".into()),
            ..Request::default()
        })
        .starts_with("unknown preset `nope`")
    );

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "roles:\n  builder: { adapter: copilot }\n").unwrap();
    let with_config = Context {
        config_path: Some(config),
        ..Context::default()
    };
    let message = resolve(&roles(), &Request::default(), &with_config)
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        ".crumb/config.yaml roles.builder: unknown adapter `copilot` (adapters: mock, claude-code, codex, gemini-cli, command)"
    );
    let bad_ambient = Context {
        env: Environment::from_pairs([("CRUMB_AMBIENT_ADAPTER", "x")]),
        ..Context::default()
    };
    assert!(resolve(&roles(), &Request::default(), &bad_ambient).is_err());
}

proptest::proptest! {
    #[test]
    fn bind_parsing_never_panics(values in proptest::collection::vec("[a-z:=-]{0,20}", 0..4)) {
        let _ = resolve(&roles(), &Request { binds: values, ..Request::default() }, &Context::default());
    }
}

fn doc_roles() -> Vec<String> {
    vec!["writer".to_owned(), "reviewer".to_owned()]
}

/// The pipeline declares a command for the writer and codex for the reviewer.
fn declaring_pipeline() -> Context {
    let argv = RoleAdapter::Command(crate::pipeline::model::CommandAdapter {
        command: vec!["python3".into(), "../agents/writer.py".into()],
        model: None,
    });
    Context {
        declared: [
            ("writer".to_owned(), argv),
            ("reviewer".to_owned(), RoleAdapter::Name("codex".into())),
        ]
        .into_iter()
        .collect(),
        pipeline_dir: Some(PathBuf::from("/repo/pipelines")),
        cwd: Some(PathBuf::from("/here")),
        ..Context::default()
    }
}

#[test]
fn the_pipeline_layer_sits_below_presets_and_above_ambient() {
    let context = Context {
        env: Environment::from_pairs([("CODEX_SESSION_ID", "x")]),
        ..declaring_pipeline()
    };
    let bindings = resolve(&doc_roles(), &Request::default(), &context).unwrap();
    let writer = &bindings.roles["writer"];
    assert_eq!(writer.adapter, AdapterKind::Command);
    assert_eq!(writer.source, BindingSource::Pipeline);
    assert_eq!(writer.command, ["python3", "/repo/agents/writer.py"]);
    assert_eq!(bindings.roles["reviewer"].adapter, AdapterKind::Codex);
    assert_eq!(bindings.roles["reviewer"].source, BindingSource::Pipeline);

    let dir = tempfile::tempdir().unwrap();
    let preset = dir.path().join("local.yaml");
    std::fs::write(
        &preset,
        "name: local\ndefault: { adapter: command, command: [node, agents/any.js] }\n",
    )
    .unwrap();
    let request = Request {
        preset: Some(preset.display().to_string()),
        ..Request::default()
    };
    let preset_wins = resolve(&doc_roles(), &request, &declaring_pipeline()).unwrap();
    let reviewer = &preset_wins.roles["reviewer"];
    assert_eq!(reviewer.adapter, AdapterKind::Command);
    let script = dir.path().join("agents/any.js").display().to_string();
    assert_eq!(reviewer.command, ["node".to_owned(), script]);
}

#[test]
fn a_command_role_takes_its_argv_from_the_highest_layer_that_has_one() {
    let adapter = Request {
        adapter: Some("command".into()),
        ..Request::default()
    };
    let err = resolve(&doc_roles(), &adapter, &declaring_pipeline())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("role `reviewer` runs on the command adapter (--adapter)"),
        "{err}"
    );
    let bound = Request {
        binds: vec!["reviewer=command:./r.sh --strict".into()],
        ..adapter
    };
    let bindings = resolve(&doc_roles(), &bound, &declaring_pipeline()).unwrap();
    assert_eq!(bindings.roles["writer"].source, BindingSource::Adapter);
    assert_eq!(
        bindings.roles["writer"].command,
        ["python3", "/repo/agents/writer.py"]
    );
    assert_eq!(
        bindings.roles["reviewer"].command,
        ["/here/r.sh", "--strict"]
    );
    let recorded = bindings.to_role_bindings();
    assert_eq!(recorded["reviewer"].command, ["/here/r.sh", "--strict"]);
    assert_eq!(recorded["reviewer"].decided_by, "--bind");
}
