//! `crumb doctor`: can this machine run a pipeline? The agent CLIs (found, version, logged in),
//! Chromium (found and able to start), the crumb home (writable, with room) and the shared limits,
//! each problem with its fix. `crumb run` runs the agent part for the adapters its roles are bound
//! to ([`preflight`]) before the first spawn.

pub(crate) mod agents;
pub(crate) mod machine;
pub(crate) mod preset;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::adapters::AdapterKind;
use crate::runtime::bindings::{Environment, ambient};
pub(crate) use agents::{AgentCheck, Login};

/// One thing that stops a default run, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Problem {
    pub what: String,
    pub fix: String,
}

/// Everything `crumb doctor` found.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    /// Whether a default `crumb run` can work here.
    pub ok: bool,
    /// The adapter a default run binds its roles to (ambient detection), `mock` when none.
    pub default_adapter: AdapterKind,
    pub agents: Vec<AgentCheck>,
    pub chromium: machine::ChromiumCheck,
    pub home: machine::HomeCheck,
    pub limits: machine::Limits,
    pub problems: Vec<Problem>,
    /// Worth knowing, but no reason a default run fails.
    pub notes: Vec<String>,
    /// With `--preset`: its bindings, checked instead of the default run's vendor login.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<preset::PresetCheck>,
}

/// A preset to check in place of the default run: the preset and the file it came from.
pub(crate) type PresetToCheck<'a> = (&'a crate::pipeline::preset::Preset, &'a Path);

/// Check the whole machine, with `home` as the crumb home; with `preset`, its bindings rather
/// than the logins a default run needs.
pub(crate) fn run(env: &Environment, home: &Path, preset: Option<PresetToCheck<'_>>) -> Report {
    let home_root = home;
    let agents: Vec<AgentCheck> = agents::agents()
        .map(|kind| agents::check(kind, env))
        .collect();
    let chromium = machine::chromium();
    let home = machine::home(home);
    let limits = machine::limits();
    let default_adapter = ambient::detect(env)
        .ok()
        .flatten()
        .map_or(AdapterKind::FALLBACK, |found| found.adapter);
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let preset = preset.map(|(preset, path)| {
        let (check, found) = preset::check(preset, path, env);
        problems.extend(found);
        check
    });
    for agent in &agents {
        // With a preset, its bindings say which CLIs must be logged in (checked above).
        let used = agent.adapter == default_adapter && preset.is_none();
        match (agent.path.is_some(), agent.logged_in) {
            (true, Some(Login::No)) if used => problems.push(Problem {
                what: format!(
                    "a default run binds every role to {} ({}), which is not logged in: {}",
                    agent.adapter,
                    agent.binary,
                    agent.login_detail.as_deref().unwrap_or("")
                ),
                fix: agents::login_fix(agent.adapter).to_owned(),
            }),
            (true, Some(Login::No)) => notes.push(format!(
                "{} is installed but not logged in ({})",
                agent.binary,
                agents::login_fix(agent.adapter)
            )),
            (true, Some(Login::Unknown)) => notes.push(format!(
                "{}: login unknown ({})",
                agent.binary,
                agent.login_detail.as_deref().unwrap_or("")
            )),
            _ => {}
        }
    }
    if default_adapter == AdapterKind::FALLBACK {
        notes.push(
            "no agent CLI found: a default run uses the built-in mock adapter (and says so)"
                .to_owned(),
        );
    }
    if let (Some(error), Some(fix)) = (&chromium.error, &chromium.fix) {
        problems.push(Problem {
            what: format!("Chromium (execution QA): {error}"),
            fix: fix.clone(),
        });
    }
    if let (Some(error), Some(fix)) = (&home.error, &home.fix) {
        problems.push(Problem {
            what: format!("crumb home: {error}"),
            fix: fix.clone(),
        });
    }
    if let Some(fix) = &limits.fix {
        problems.push(Problem {
            what: "open-files limit too low".to_owned(),
            fix: fix.clone(),
        });
    }
    problems.extend(damaged_stores(home_root));
    Report {
        ok: problems.is_empty(),
        default_adapter,
        agents,
        chromium,
        home,
        limits,
        problems,
        notes,
        preset,
    }
}

/// Every session under `home` whose artifact store lost or damaged an object its transcript
/// records (see [`crate::runtime::artifact_store::health`]).
fn damaged_stores(home: &Path) -> Vec<Problem> {
    let sessions = std::fs::read_dir(home.join("projects"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|project| std::fs::read_dir(project.path().join("sessions")).ok())
        .flat_map(|sessions| sessions.flatten().map(|s| s.path()));
    sessions
        .filter(|session| session.join(crate::runtime::artifact_store::objects::OBJECTS_DIR).is_dir())
        .filter_map(|session| {
            let line = crate::runtime::artifact_store::health::check_session(&session).problem_line()?;
            Some(Problem {
                what: format!("session {}: the artifact store has {}", session.display(), line.trim_start_matches("store").trim_start()),
                fix: "fork, release or diff from an event before the damaged files, or restore the session folder from a backup".to_owned(),
            })
        })
        .collect()
}

/// The human report.
pub(crate) fn render(report: &Report) -> String {
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    for agent in &report.agents {
        let Some(path) = &agent.path else {
            line(format!(
                "agent     {:<7} not found — {}",
                agent.binary,
                agent.fix.as_deref().unwrap_or("")
            ));
            continue;
        };
        let login = match agent.logged_in {
            Some(Login::Yes) => "logged in",
            Some(Login::No) => "NOT logged in",
            _ => "login unknown",
        };
        line(format!(
            "agent     {:<7} {} ({}) — {login}: {}",
            agent.binary,
            agent.version.as_deref().unwrap_or("version unknown"),
            path.display(),
            agent.login_detail.as_deref().unwrap_or("")
        ));
    }
    line(format!(
        "default   {} (what a default run binds)",
        report.default_adapter
    ));
    let chromium = &report.chromium;
    match (&chromium.path, chromium.starts) {
        (Some(path), true) => line(format!(
            "chromium  {} ({}) — starts headless",
            chromium.version.as_deref().unwrap_or("version unknown"),
            path.display()
        )),
        (Some(path), false) => line(format!("chromium  {} — does NOT start", path.display())),
        (None, _) => line("chromium  not found".to_owned()),
    }
    let home = &report.home;
    line(format!(
        "home      {} — {}{}",
        home.path.display(),
        if home.writable {
            "writable"
        } else {
            "NOT writable"
        },
        home.free_bytes
            .map(|free| format!(", {} MiB free", free / (1024 * 1024)))
            .unwrap_or_default()
    ));
    let limits = &report.limits;
    let show = |n: Option<u64>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
    line(format!(
        "limits    ARG_MAX {} bytes, open files {} (hard {})",
        show(limits.arg_max),
        show(limits.open_files_soft),
        show(limits.open_files_hard)
    ));
    if let Some(preset) = &report.preset {
        line(format!(
            "preset    {} ({})",
            preset.name,
            preset.path.display()
        ));
        for binding in &preset.bindings {
            line(format!("  {}", preset::describe(binding)));
        }
    }
    for note in &report.notes {
        line(format!("note      {note}"));
    }
    for problem in &report.problems {
        line(format!("PROBLEM   {}", problem.what));
        line(format!("  fix     {}", problem.fix));
    }
    line(if report.ok {
        if report.preset.is_some() {
            "ok        a run with this preset can work here".to_owned()
        } else {
            "ok        a default run can work here".to_owned()
        }
    } else {
        format!("not ok    {} problem(s) above", report.problems.len())
    });
    out
}

/// Before `crumb run`'s first spawn: the agent CLIs its roles are bound to. A CLI that is
/// installed but reports itself logged out is a problem for each role on it that has no
/// fallback on another adapter (a missing CLI is left to the dispatcher, which fails at once and
/// swaps to the fallback as declared). `roles`: role, adapter, fallbacks.
pub(crate) fn preflight(
    roles: &[(String, AdapterKind, Vec<String>)],
    env: &Environment,
) -> Vec<Problem> {
    let mut checked: BTreeMap<AdapterKind, AgentCheck> = BTreeMap::new();
    let mut problems = Vec::new();
    for (role, adapter, fallbacks) in roles {
        if adapter.binary().is_none() {
            continue;
        }
        let check = checked
            .entry(*adapter)
            .or_insert_with(|| agents::check(*adapter, env));
        let escapes = fallbacks.iter().any(|f| f != adapter.as_str());
        if check.path.is_some() && check.logged_in == Some(Login::No) && !escapes {
            problems.push(Problem {
                what: format!(
                    "{role} is bound to {adapter}, which is not logged in ({})",
                    check.login_detail.as_deref().unwrap_or("")
                ),
                fix: agents::login_fix(*adapter).to_owned(),
            });
        }
    }
    problems
}
