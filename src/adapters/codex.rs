//! Codex: `codex exec --json … -`, the prompt on stdin.
//!
//! - `-` makes exec read the whole prompt from stdin, which is then closed (a positional prompt
//!   with an open stdin would block waiting for more).
//! - `--skip-git-repo-check` because the session directory is not a git repository;
//!   `--sandbox workspace-write` so the agent can edit its session; `--cd` pins the workspace.
//! - `-c allow_login_shell=false`: codex runs its shell tool as `bash -lc`, and Debian's
//!   `/etc/profile` resets `PATH`, dropping the crumb directory the dispatcher prepended. Without
//!   a login shell the environment (and `$CRUMB_BIN`) reaches `crumb event` intact.
//! - Effort has no flag: `-c model_reasoning_effort=<minimal|low|medium|high|xhigh>`.
//! - Top-level `error` lines are retry notices ("Reconnecting… 2/5"): chatter for the idle
//!   timeout, kept as the CLI's words; one that says auth, input too large or "waiting for
//!   network" ends the turn at once (codex with no network never exits by itself).
//! - The outcome is decided on `turn.completed` / `turn.failed` only: a top-level `error` line
//!   is often a transient "Reconnecting…" notice.
//! - `turn.completed.usage` counts cached input inside `input_tokens`; we report the uncached
//!   part as `tokens_in` and the cached part as `cache_read`.

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::Value;

use super::adapter::{Adapter, Login, LoginCheck, VarSource, credential_set};
use super::diagnosis::{FailureClass, Problem, RetryNotices, class_of_text};
use super::turn::{
    Invocation, InvocationError, StreamParser, Terminal, ToolCall, TurnRequest, TurnSummary, Usage,
    number,
};
use crate::pipeline::preset::Effort;
use crate::process::LineFlow;

/// The codex `model_provider` crumb defines for a binding's `base_url`, and the variable that
/// carries its key.
pub(crate) const ENDPOINT_PROVIDER: &str = "crumb-endpoint";
pub(crate) const ENDPOINT_KEY_ENV: &str = "CRUMB_ENDPOINT_API_KEY";

/// Codex refuses input over this many characters (`input_too_large`).
pub(crate) const MAX_INPUT_CHARS: usize = 1_048_576;

/// The codex adapter.
pub(crate) struct Codex;

impl Adapter for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn binary(&self) -> Option<&'static str> {
        Some("codex")
    }

    fn default_provider(&self) -> &'static str {
        "openai"
    }

    fn invocation(&self, request: &TurnRequest) -> Result<Invocation, InvocationError> {
        Ok(invocation(request))
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(Parser::default())
    }

    fn auth_hint(&self) -> Option<&'static str> {
        Some("log in with `codex login` (or set CODEX_API_KEY); `crumb doctor` checks it")
    }

    fn install_hint(&self) -> Option<&'static str> {
        Some("npm install -g @openai/codex")
    }

    fn login_hint(&self) -> Option<&'static str> {
        Some(
            "run `codex login`, or set CODEX_API_KEY, or configure a `model_provider` in ~/.codex/config.toml for a local model",
        )
    }

    /// The key, else a model provider of its own in codex's settings (which needs no login),
    /// else `codex login status`.
    fn login_check(&self, env: &dyn VarSource) -> LoginCheck {
        if let Some(set) = credential_set(env, &["CODEX_API_KEY"]) {
            return set;
        }
        match model_provider(env) {
            Some(provider) => LoginCheck::Known(
                Login::Yes,
                format!("model provider `{provider}` in codex's config.toml (no login needed)"),
            ),
            None => LoginCheck::StatusCommand(&["login", "status"]),
        }
    }

    fn ambient_markers(&self) -> &'static [&'static str] {
        &["CODEX_SESSION_ID", "OPENAI_AGENT_SESSION"]
    }
}

/// `model_provider = "…"` (not `openai`) in codex's config: a provider with its own key or none.
/// This is codex's settings file, not its credential store (`auth.json` is never opened).
fn model_provider(env: &dyn VarSource) -> Option<String> {
    let home = env.var("CODEX_HOME").map(PathBuf::from).or_else(|| {
        env.var("HOME")
            .map(|home| PathBuf::from(home).join(".codex"))
    })?;
    let text = std::fs::read_to_string(home.join("config.toml")).ok()?;
    text.lines()
        .take_while(|line| !line.trim_start().starts_with('['))
        .filter_map(|line| line.split_once('='))
        .find(|(key, _)| key.trim() == "model_provider")
        .map(|(_, value)| value.trim().trim_matches('"').to_owned())
        .filter(|provider| provider != "openai")
}

/// The `codex` invocation for `request`.
fn invocation(request: &TurnRequest) -> Invocation {
    let mut args: Vec<std::ffi::OsString> = vec![
        "exec".into(),
        "--json".into(),
        "--skip-git-repo-check".into(),
        "--sandbox".into(),
        "workspace-write".into(),
        "--color".into(),
        "never".into(),
        "--cd".into(),
        request.session_dir.clone().into_os_string(),
        "-c".into(),
        "allow_login_shell=false".into(),
    ];
    if let Some(model) = &request.model {
        args.push("--model".into());
        args.push(model.into());
    }
    let mut notes = Vec::new();
    if let Some(effort) = request.effort {
        let level = match effort {
            Effort::Max => {
                notes.push("codex has no `max` effort: running at `xhigh`".to_owned());
                "xhigh"
            }
            other => other.as_str(),
        };
        args.push("-c".into());
        args.push(format!("model_reasoning_effort={level}").into());
    }
    let mut env = Vec::new();
    if let Some(endpoint) = &request.endpoint {
        // A provider of its own, speaking the Responses API, with the key in a variable of ours.
        let url = endpoint.base_url.replace('\\', "\\\\").replace('"', "\\\"");
        args.push("-c".into());
        args.push(format!("model_provider=\"{ENDPOINT_PROVIDER}\"").into());
        args.push("-c".into());
        args.push(
            format!(
                "model_providers.{ENDPOINT_PROVIDER}={{ name = \"{ENDPOINT_PROVIDER}\", base_url = \"{url}\", env_key = \"{ENDPOINT_KEY_ENV}\", wire_api = \"responses\" }}"
            )
            .into(),
        );
        env.push((ENDPOINT_KEY_ENV.into(), endpoint.api_key.clone().into()));
    }
    args.push("-".into());
    Invocation {
        program: "codex".into(),
        args,
        env,
        env_remove: Vec::new(),
        stdin: Some(prompt_within_limit(request).into_bytes()),
        notes,
        files: Vec::new(),
    }
}

/// The prompt, or, when it is over codex's input limit, a short prompt that points at the
/// rendered prompt file (already on disk) so codex reads it with its tools.
fn prompt_within_limit(request: &TurnRequest) -> String {
    // Headroom for codex's own instructions and the tool schemas it adds.
    if request.prompt.chars().count() < MAX_INPUT_CHARS / 2 {
        return request.prompt.clone();
    }
    format!(
        "Your instructions for this turn are too long to send inline. Read them from the file {} \
         (for example with `sed -n '1,400p'` and onwards), then follow them exactly, writing your \
         results back with \"$CRUMB_BIN\" event as they describe.",
        request.prompt_file.display()
    )
}

/// Parser of `codex exec --json` lines.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    summary: TurnSummary,
    seen_items: HashSet<String>,
    flow: LineFlow,
    retries: RetryNotices,
}

impl StreamParser for Parser {
    fn line(&mut self, line: &str) -> Vec<ToolCall> {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        self.flow = LineFlow::Progress;
        match event.get("type").and_then(Value::as_str) {
            Some("error") => {
                self.error_line(&event);
                Vec::new()
            }
            Some("thread.started") => {
                self.summary.adapter_session_id = event
                    .get("thread_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Vec::new()
            }
            Some("turn.completed") => {
                self.summary.terminal = Terminal::Success;
                if let Some(usage) = event.get("usage") {
                    self.summary.usage = usage_of(usage);
                }
                Vec::new()
            }
            Some("turn.failed") => {
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("turn failed")
                    .chars()
                    .take(super::diagnosis::MAX_WORDS)
                    .collect::<String>();
                let earlier = self.summary.problem.as_ref().and_then(|p| p.class);
                let class = class_of_text(&message).or(earlier);
                self.summary.problem = Some(Problem::new(class, &message));
                self.summary.terminal = Terminal::Failed { message };
                Vec::new()
            }
            Some("item.started" | "item.updated" | "item.completed") => {
                self.item(event.get("item"))
            }
            _ => Vec::new(),
        }
    }

    fn summary(&self) -> TurnSummary {
        self.summary.clone()
    }

    fn flow(&self) -> LineFlow {
        self.flow
    }
}

impl Parser {
    /// A top-level `error` line: a retry notice unless its cause cannot go away by retrying.
    fn error_line(&mut self, event: &Value) {
        let Some(message) = event.get("message").and_then(Value::as_str) else {
            return;
        };
        let lowered = message.to_lowercase();
        let class = class_of_text(message);
        self.summary.problem = Some(Problem::new(class, message));
        self.flow = match class {
            Some(FailureClass::Network) if lowered.contains("waiting for network") => {
                LineFlow::GiveUp
            }
            _ => self.retries.notice(class),
        };
    }

    /// A tool call the first time its item id is seen.
    fn item(&mut self, item: Option<&Value>) -> Vec<ToolCall> {
        let Some(item) = item else {
            return Vec::new();
        };
        // Old builds used `item_type`; current ones use `type`.
        let kind = item
            .get("type")
            .or_else(|| item.get("item_type"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let call = match kind {
            "command_execution" => ToolCall {
                tool: kind.to_owned(),
                target: text(item, "command"),
            },
            "file_change" => ToolCall {
                tool: kind.to_owned(),
                target: item
                    .get("changes")
                    .and_then(Value::as_array)
                    .map(|changes| {
                        changes
                            .iter()
                            .filter_map(|c| c.get("path").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .filter(|paths| !paths.is_empty()),
            },
            "mcp_tool_call" => ToolCall {
                tool: format!(
                    "{}/{}",
                    text(item, "server").unwrap_or_default(),
                    text(item, "tool").unwrap_or_default()
                ),
                target: None,
            },
            "web_search" => ToolCall {
                tool: kind.to_owned(),
                target: text(item, "query"),
            },
            _ => return Vec::new(),
        };
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if !id.is_empty() && !self.seen_items.insert(id) {
            return Vec::new();
        }
        vec![call]
    }
}

fn text(item: &Value, key: &str) -> Option<String> {
    item.get(key)
        .and_then(Value::as_str)
        .map(|text| text.chars().take(200).collect())
}

fn usage_of(usage: &Value) -> Usage {
    let input = number(usage, "input_tokens");
    let cached = number(usage, "cached_input_tokens");
    Usage {
        tokens_in: input.map(|input| input.saturating_sub(cached.unwrap_or(0))),
        tokens_out: number(usage, "output_tokens"),
        thinking_tokens: number(usage, "reasoning_output_tokens"),
        cache_read: cached,
        cache_write: number(usage, "cache_write_input_tokens"),
        cost_usd: None,
        model: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_reads_the_prompt_from_stdin() {
        let request = TurnRequest {
            prompt: "build it".into(),
            prompt_file: "/s/prompts/builder-1.md".into(),
            session_dir: "/s".into(),
            role: "builder".into(),
            model: Some("gpt-5.5-codex".into()),
            effort: Some(Effort::Low),
            command: Vec::new(),
            endpoint: None,
        };
        let invocation = invocation(&request);
        let args: Vec<String> = invocation
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--sandbox",
                "workspace-write",
                "--color",
                "never",
                "--cd",
                "/s",
                "-c",
                "allow_login_shell=false",
                "--model",
                "gpt-5.5-codex",
                "-c",
                "model_reasoning_effort=low",
                "-"
            ]
        );
        assert_eq!(invocation.stdin.as_deref(), Some(&b"build it"[..]));
    }

    #[test]
    fn parses_items_usage_and_terminal_events() {
        let mut parser = Parser::default();
        let lines = [
            r#"{"type":"thread.started","thread_id":"0199a213"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","exit_code":0,"status":"completed"}}"#,
            r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
            r#"{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"artifacts/game/index.html","kind":"add"}],"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Done."}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122,"reasoning_output_tokens":64}}"#,
        ];
        let calls: Vec<ToolCall> = lines.iter().flat_map(|line| parser.line(line)).collect();
        assert_eq!(
            calls,
            [
                ToolCall {
                    tool: "command_execution".into(),
                    target: Some("bash -lc ls".into())
                },
                ToolCall {
                    tool: "file_change".into(),
                    target: Some("artifacts/game/index.html".into())
                },
            ]
        );
        let summary = parser.summary();
        assert_eq!(summary.terminal, Terminal::Success);
        assert_eq!(summary.adapter_session_id.as_deref(), Some("0199a213"));
        assert_eq!(summary.usage.tokens_in, Some(315));
        assert_eq!(summary.usage.cache_read, Some(24448));
        assert_eq!(summary.usage.tokens_out, Some(122));
        assert_eq!(summary.usage.thinking_tokens, Some(64));
    }

    #[test]
    fn long_prompts_go_by_file_and_max_effort_is_xhigh() {
        let request = TurnRequest {
            prompt: "p".repeat(MAX_INPUT_CHARS + 1),
            prompt_file: "/s/prompts/builder-1.md".into(),
            session_dir: "/s".into(),
            role: "builder".into(),
            model: None,
            effort: Some(Effort::Max),
            command: Vec::new(),
            endpoint: None,
        };
        let invocation = invocation(&request);
        let stdin = String::from_utf8(invocation.stdin.unwrap()).unwrap();
        assert!(stdin.len() < 1000 && stdin.contains("/s/prompts/builder-1.md"));
        assert!(
            invocation
                .args
                .contains(&"model_reasoning_effort=xhigh".into())
        );
        assert_eq!(invocation.notes.len(), 1);
    }

    #[test]
    fn a_model_server_becomes_a_provider_of_its_own() {
        let request = TurnRequest {
            prompt: "p".into(),
            prompt_file: "/s/prompts/builder-1.md".into(),
            session_dir: "/s".into(),
            role: "builder".into(),
            model: Some("qwen3-coder".into()),
            effort: None,
            command: Vec::new(),
            endpoint: Some(crate::adapters::Endpoint {
                base_url: "http://127.0.0.1:8080/v1".into(),
                api_key: "k".into(),
            }),
        };
        let invocation = invocation(&request);
        assert!(
            invocation
                .args
                .contains(&"model_provider=\"crumb-endpoint\"".into())
        );
        assert!(invocation.args.contains(&"model_providers.crumb-endpoint={ name = \"crumb-endpoint\", base_url = \"http://127.0.0.1:8080/v1\", env_key = \"CRUMB_ENDPOINT_API_KEY\", wire_api = \"responses\" }".into()));
        assert_eq!(
            invocation.env,
            [("CRUMB_ENDPOINT_API_KEY".into(), "k".into())]
        );
    }

    #[test]
    fn fatal_error_lines_end_the_turn_and_retries_are_chatter() {
        let mut parser = Parser::default();
        parser.line(r#"{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}"#);
        assert_eq!(parser.flow(), LineFlow::Chatter);
        parser.line(r#"{"type":"error","message":"Reconnecting... waiting for network"}"#);
        assert_eq!(parser.flow(), LineFlow::GiveUp);
        assert_eq!(
            parser.summary().problem.unwrap().class,
            Some(FailureClass::Network)
        );
        let mut big = Parser::default();
        big.line(r#"{"type":"error","message":"input_too_large: input exceeds the maximum length of 1048576 characters"}"#);
        assert_eq!(big.flow(), LineFlow::GiveUp);
        big.line(r#"{"type":"turn.completed","usage":{}}"#);
        assert_eq!(big.flow(), LineFlow::Progress);
    }

    #[test]
    fn a_transient_error_is_not_terminal_but_turn_failed_is() {
        let mut parser = Parser::default();
        parser.line(r#"{"type":"error","message":"Reconnecting... 1/5"}"#);
        assert_eq!(parser.summary().terminal, Terminal::Missing);
        parser.line(r#"{"type":"turn.failed","error":{"message":"model response stream ended unexpectedly"}}"#);
        assert_eq!(
            parser.summary().terminal,
            Terminal::Failed {
                message: "model response stream ended unexpectedly".into()
            }
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_json_shaped_lines(kind in "(item.started|item.completed|turn.completed|turn.failed)", body in "[\\[\\]{}\":,a-z0-9 ]{0,120}") {
            let mut parser = Parser::default();
            parser.line(&format!(r#"{{"type":"{kind}","item":{body},"usage":{body},"error":{body}}}"#));
        }
    }

    /// The variables a test makes visible.
    struct Vars(Vec<(&'static str, std::ffi::OsString)>);

    impl VarSource for Vars {
        fn var(&self, name: &str) -> Option<&std::ffi::OsString> {
            self.0
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value)
        }
    }

    #[test]
    fn the_model_provider_is_read_from_codex_s_config_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "model = \"m\"\nmodel_provider = \"local\"\n[model_providers.local]\nmodel_provider = \"x\"\n",
        )
        .unwrap();
        let env = Vars(vec![("CODEX_HOME", dir.path().into())]);
        assert_eq!(model_provider(&env).as_deref(), Some("local"));
        assert!(matches!(
            Codex.login_check(&env),
            LoginCheck::Known(Login::Yes, detail) if detail.contains("`local`")
        ));
        std::fs::write(
            dir.path().join("config.toml"),
            "model_provider = \"openai\"\n",
        )
        .unwrap();
        assert_eq!(model_provider(&env), None);
        assert_eq!(
            Codex.login_check(&env),
            LoginCheck::StatusCommand(&["login", "status"])
        );
        let keyed = Vars(vec![("CODEX_API_KEY", "k".into())]);
        assert_eq!(
            Codex.login_check(&keyed),
            LoginCheck::Known(Login::Yes, "CODEX_API_KEY is set".to_owned())
        );
    }
}
