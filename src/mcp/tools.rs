//! The server's tools. Each runs the `crumb` command a person would type (or, for `list` and
//! `stop`, the same function that command calls), so a host sees the command's own JSON, its own
//! diagnostics and its own refusals. A command's usage error (a refused inbox line, an unknown
//! session) comes back as a tool error carrying its message; a command that ran and judged (an
//! invalid pipeline, a failing doctor check) comes back as its structured result and exit code.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Json, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::CrumbMcp;
use super::scope::Finished;
use crate::runtime::listing;

/// How long `run` and `fork` wait for their new session's folder before giving up.
const START_LIMIT: Duration = Duration::from_secs(30);

/// What a command printed (its JSON when it prints JSON, else `{"text": …}`) and its exit code
/// (see `crumb`'s documented exit codes).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CommandOutput {
    pub exit_code: i32,
    #[schemars(schema_with = "any_json")]
    pub result: Value,
}

/// Any JSON value, as an (empty) object schema: hosts such as Claude Code refuse a tool whose
/// output schema holds the boolean schema `true` that schemars gives a `Value`.
fn any_json(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "description": "what the command printed: its JSON, or {\"text\": …}" })
}

/// A session started in the background.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Started {
    pub session_id: String,
    pub folder: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunParams {
    /// The pipeline file, relative to the project (e.g. `pipelines/casual.yaml`).
    pub pipeline: String,
    /// The goal (for `casual`, the game pitch).
    #[serde(default)]
    pub pitch: Option<String>,
    /// The pipeline's declared inputs (`--set NAME=VALUE`).
    #[serde(default)]
    pub inputs: BTreeMap<String, String>,
    /// Role bindings (`--bind ROLE=ADAPTER`).
    #[serde(default)]
    pub bindings: BTreeMap<String, String>,
    /// Run every role on this adapter (mock, claude-code, codex, gemini-cli, command).
    #[serde(default)]
    pub adapter: Option<String>,
    /// A preset from `presets/<NAME>.yaml`.
    #[serde(default)]
    pub preset: Option<String>,
    /// The mock adapter's scenario (`pass`, `partial`, `fail-once`, …).
    #[serde(default)]
    pub mock_scenario: Option<String>,
    /// A dry run's script (`FAIL:Critical,PASS`, …): plays the pipeline without an agent.
    #[serde(default)]
    pub dry_run_script: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionParams {
    /// A session id (ULID or unique prefix) or a session folder inside the project or home.
    pub session: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SayParams {
    /// A session id (ULID or unique prefix) or a session folder inside the project or home.
    pub session: String,
    /// One inbox line: `/approve`, `/veto <reason>`, `/goto <role>`, `/append [@role] <text>`,
    /// `/swap <role>=<adapter>`, `/ask status|cost|next|stuck|scorecard`, `@role text`, plain text.
    pub line: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PathsParams {
    /// Pipeline files or folders, relative to the project.
    pub paths: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExplainParams {
    /// A diagnostic code (`E012`) or an event kind (`judge.score`).
    pub name: String,
}

/// The formats `export` writes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ExportFormat {
    Html,
    Md,
    ChromeTrace,
    OtlpJson,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExportParams {
    /// A session id (ULID or unique prefix) or a session folder inside the project or home.
    pub session: String,
    pub format: ExportFormat,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForkParams {
    /// The session to fork.
    pub session: String,
    /// The event to fork at: its id, or a kind's last occurrence as `crumb fork --at` takes it.
    pub at: String,
    /// Role bindings for the fork (`--bind ROLE=ADAPTER`).
    #[serde(default)]
    pub bindings: BTreeMap<String, String>,
    /// Inputs to change (`--set NAME=VALUE`).
    #[serde(default)]
    pub inputs: BTreeMap<String, String>,
    /// The mock adapter's scenario for the fork.
    #[serde(default)]
    pub mock_scenario: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoParams {}

#[tool_router(router = tool_router, vis = "pub(crate)")]
impl CrumbMcp {
    /// Start a session in the background (`crumb run --wait`); answers with its id and folder
    /// as soon as it exists. A session that needs a person waits for `say`.
    #[tool(annotations(read_only_hint = false, destructive_hint = false))]
    async fn run(&self, Parameters(p): Parameters<RunParams>) -> Result<Json<Started>, String> {
        let pipeline = self.scope.confine(&p.pipeline)?;
        let mut args = vec!["run".to_owned(), "--wait".to_owned(), "--json".to_owned()];
        pairs(&mut args, "--set", &p.inputs);
        pairs(&mut args, "--bind", &p.bindings);
        option(&mut args, "--adapter", p.adapter.as_deref());
        option(&mut args, "--preset", p.preset.as_deref());
        option(&mut args, "--mock-scenario", p.mock_scenario.as_deref());
        if let Some(script) = &p.dry_run_script {
            args.extend([
                "--dry-run".to_owned(),
                "--script".to_owned(),
                script.clone(),
            ]);
        }
        // After `--`: a pitch such as `--help me` is text, never an option.
        args.extend(["--".to_owned(), pipeline.display().to_string()]);
        args.extend(p.pitch.filter(|p| !p.trim().is_empty()));
        self.start(&args, "run").await.map(Json)
    }

    /// A session's folded state, what was read and its last events: `crumb status --json`.
    #[tool(annotations(read_only_hint = true))]
    async fn status(
        &self,
        Parameters(p): Parameters<SessionParams>,
    ) -> Result<Json<CommandOutput>, String> {
        let session = self.scope.session(&p.session)?;
        let path = session.path().display().to_string();
        self.command(&["status", "--json", &path]).await
    }

    /// The sessions of this project, newest first (as `crumb ls --json`).
    #[tool(annotations(read_only_hint = true))]
    async fn list(
        &self,
        Parameters(_): Parameters<NoParams>,
    ) -> Result<Json<CommandOutput>, String> {
        let (sessions, _) = listing::list(&self.scope.home, Some(&self.scope.project));
        let result = serde_json::to_value(sessions).map_err(|e| e.to_string())?;
        Ok(Json(CommandOutput {
            exit_code: 0,
            result: serde_json::json!({ "sessions": result }),
        }))
    }

    /// Append one line to a session's inbox (`crumb say`); a line the grammar or the session's
    /// roles refuse is a tool error saying why.
    #[tool(annotations(read_only_hint = false, destructive_hint = false))]
    async fn say(
        &self,
        Parameters(p): Parameters<SayParams>,
    ) -> Result<Json<CommandOutput>, String> {
        let session = self.scope.session(&p.session)?;
        let path = session.path().display().to_string();
        self.command(&["say", &path, "--", p.line.trim()]).await
    }

    /// Take over a stopped or waiting session in the background (`crumb resume --wait`).
    #[tool(annotations(read_only_hint = false, destructive_hint = false))]
    async fn resume(
        &self,
        Parameters(p): Parameters<SessionParams>,
    ) -> Result<Json<Started>, String> {
        let session = self.scope.session(&p.session)?;
        let path = session.path().display().to_string();
        let args = ["resume", "--wait", "--json", &path].map(str::to_owned);
        let log = self.log_path("resume")?;
        let mut exited = self.scope.detach(&args, &log)?;
        // A resume refused at once (nothing to resume) says so; one that runs is left running.
        if let Ok(Ok(code)) = tokio::time::timeout(Duration::from_secs(2), &mut exited).await
            && code == i32::from(crate::exit_codes::USAGE_ERROR)
        {
            return Err(read_log(&log));
        }
        Ok(Json(Started {
            session_id: session.id().to_owned(),
            folder: session.path().display().to_string(),
        }))
    }

    /// Stop a session's live coordinator (SIGTERM, as Studio's Stop): its live turns end and it
    /// exits; `resume` continues it.
    #[tool(annotations(read_only_hint = false, destructive_hint = true))]
    async fn stop(
        &self,
        Parameters(p): Parameters<SessionParams>,
    ) -> Result<Json<CommandOutput>, String> {
        let session = self.scope.session(&p.session)?;
        let pid = crate::runtime::stop::stop_coordinator(&session)?;
        Ok(Json(CommandOutput {
            exit_code: 0,
            result: serde_json::json!({ "stopping": true, "pid": pid }),
        }))
    }

    /// Validate pipeline files: located diagnostics (`crumb validate --format json`; exit 3 when
    /// invalid).
    #[tool(annotations(read_only_hint = true))]
    async fn validate(
        &self,
        Parameters(p): Parameters<PathsParams>,
    ) -> Result<Json<CommandOutput>, String> {
        self.on_pipelines("validate", &p.paths).await
    }

    /// Prove pipelines' routes: every outcome reachable, no dead end, every loop bounded
    /// (`crumb check --format json`).
    #[tool(annotations(read_only_hint = true))]
    async fn check(
        &self,
        Parameters(p): Parameters<PathsParams>,
    ) -> Result<Json<CommandOutput>, String> {
        self.on_pipelines("check", &p.paths).await
    }

    /// What a diagnostic code or an event kind means (`crumb explain`).
    #[tool(annotations(read_only_hint = true))]
    async fn explain(
        &self,
        Parameters(p): Parameters<ExplainParams>,
    ) -> Result<Json<CommandOutput>, String> {
        self.command(&["explain", "--", p.name.trim()]).await
    }

    /// A session as HTML, Markdown, a Chrome trace or OTLP JSON (`crumb export`).
    #[tool(annotations(read_only_hint = true))]
    async fn export(
        &self,
        Parameters(p): Parameters<ExportParams>,
    ) -> Result<Json<CommandOutput>, String> {
        let session = self.scope.session(&p.session)?;
        let format = match p.format {
            ExportFormat::Html => "html",
            ExportFormat::Md => "md",
            ExportFormat::ChromeTrace => "chrome-trace",
            ExportFormat::OtlpJson => "otlp-json",
        };
        let path = session.path().display().to_string();
        self.command(&["export", "--format", format, &path]).await
    }

    /// Check this machine: agent CLIs and their logins, Chromium, the crumb home, limits
    /// (`crumb doctor --json`; exit 1 when a default run cannot work here).
    #[tool(annotations(read_only_hint = true))]
    async fn doctor(
        &self,
        Parameters(_): Parameters<NoParams>,
    ) -> Result<Json<CommandOutput>, String> {
        self.command(&["doctor", "--json"]).await
    }

    /// Start a new session from an event of another, in the background (`crumb fork --wait`).
    #[tool(annotations(read_only_hint = false, destructive_hint = false))]
    async fn fork(&self, Parameters(p): Parameters<ForkParams>) -> Result<Json<Started>, String> {
        let session = self.scope.session(&p.session)?;
        let mut args = vec!["fork".to_owned(), "--wait".to_owned(), "--json".to_owned()];
        args.extend(["--at".to_owned(), p.at.clone()]);
        pairs(&mut args, "--set", &p.inputs);
        pairs(&mut args, "--bind", &p.bindings);
        option(&mut args, "--mock-scenario", p.mock_scenario.as_deref());
        args.push(session.path().display().to_string());
        self.start(&args, "fork").await.map(Json)
    }
}

impl CrumbMcp {
    async fn command(&self, args: &[&str]) -> Result<Json<CommandOutput>, String> {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        self.command_owned(&args).await
    }

    async fn command_owned(&self, args: &[String]) -> Result<Json<CommandOutput>, String> {
        let finished = self.scope.crumb(args).await?;
        output(&finished).map(Json)
    }

    /// `crumb <command> --format json <paths>`, each path confined to the scope.
    async fn on_pipelines(
        &self,
        command: &str,
        paths: &[String],
    ) -> Result<Json<CommandOutput>, String> {
        if paths.is_empty() {
            return Err("name at least one pipeline file or folder".to_owned());
        }
        let mut args = vec![command.to_owned(), "--format".into(), "json".into()];
        for path in paths {
            args.push(self.scope.confine(path)?.display().to_string());
        }
        self.command_owned(&args).await
    }

    /// Start `crumb <args>` detached and answer with the session it creates.
    async fn start(&self, args: &[String], what: &str) -> Result<Started, String> {
        let before = listing::ids(&self.scope.home, &self.scope.project);
        let log = self.log_path(what)?;
        let mut exited = self.scope.detach(args, &log)?;
        let deadline = tokio::time::Instant::now() + START_LIMIT;
        let mut ended = false;
        loop {
            if let Some(new) = listing::new_since(&self.scope.home, &self.scope.project, &before) {
                return Ok(Started {
                    session_id: new.id,
                    folder: new.path.display().to_string(),
                });
            }
            if ended || tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "crumb {what} did not start a session; its output: {}",
                    read_log(&log)
                ));
            }
            tokio::select! {
                _ = &mut exited => ended = true,
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    }

    /// A fresh log file under `<home>/mcp/` for a background command's output.
    fn log_path(&self, what: &str) -> Result<std::path::PathBuf, String> {
        let dir = self.scope.home.root().join("mcp");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(dir.join(format!("{what}-{}.log", ulid::Ulid::new())))
    }
}

/// A finished command as a tool answer: a usage error (or a failure that printed nothing) is a
/// tool error with the command's message; anything else is its output and exit code.
fn output(finished: &Finished) -> Result<CommandOutput, String> {
    let usage = i32::from(crate::exit_codes::USAGE_ERROR);
    if finished.code == usage || (finished.code != 0 && finished.stdout.trim().is_empty()) {
        let message = finished.stderr.trim();
        return Err(if message.is_empty() {
            format!("crumb exited {}", finished.code)
        } else {
            message.to_owned()
        });
    }
    let result = serde_json::from_str(&finished.stdout)
        .unwrap_or_else(|_| serde_json::json!({ "text": finished.stdout }));
    Ok(CommandOutput {
        exit_code: finished.code,
        result,
    })
}

fn pairs(args: &mut Vec<String>, flag: &str, values: &BTreeMap<String, String>) {
    for (name, value) in values {
        args.extend([flag.to_owned(), format!("{name}={value}")]);
    }
}

fn option(args: &mut Vec<String>, flag: &str, value: Option<&str>) {
    if let Some(value) = value.filter(|v| !v.is_empty()) {
        args.extend([flag.to_owned(), value.to_owned()]);
    }
}

fn read_log(path: &std::path::Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The router the handler serves (kept next to the tools it lists).
pub(crate) fn router() -> ToolRouter<CrumbMcp> {
    CrumbMcp::tool_router()
}
