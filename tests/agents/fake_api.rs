//! A fake model API on `127.0.0.1:0` that speaks each vendor's wire format with scripted replies,
//! so the real `claude`, `codex` and `gemini` CLIs can run whole turns without an account:
//! Anthropic Messages (SSE), `OpenAI` Responses (SSE) and Gemini `streamGenerateContent` (SSE).
//!
//! In [`Mode::Pass`] every conversation gets one shell tool call that runs the role through
//! `"$CRUMB_BIN" mock-agent` (which writes its results back with `crumb event`), then, once the
//! tool result is in the request, a final answer. The other modes answer every model request
//! with one vendor error (401, 429, input too large).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The shell command every scripted tool call runs: the role's whole turn, through crumb itself.
pub const TURN_COMMAND: &str = r#""$CRUMB_BIN" mock-agent < "$CRUMB_PROMPT_PATH""#;

/// How the fake answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One tool call, then a final answer.
    Pass,
    /// Every model request is rejected with this HTTP status and the vendor's error body.
    Status(u16),
    /// Every model request is refused as too large (the vendor's input-limit error).
    InputTooLarge,
    /// Anthropic only: call crumb's MCP `run` tool, then `status` on the session it started,
    /// then answer.
    CrumbMcp,
}

/// A running fake API; dropped, it stops.
pub struct FakeApi {
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    _runtime: tokio::runtime::Runtime,
}

impl FakeApi {
    pub fn start(mode: Mode) -> FakeApi {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let log = Arc::new(Mutex::new(Vec::new()));
        let state = (mode, log.clone());
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let app = Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let (mode, log) = state.clone();
                async move { answer(mode, &log, &method, &uri, &headers, &body) }
            },
        );
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeApi {
            addr,
            log,
            _runtime: runtime,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request seen, as `METHOD path`.
    pub fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

fn answer(
    mode: Mode,
    log: &Mutex<Vec<String>>,
    method: &Method,
    uri: &Uri,
    _headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let path = uri.path().to_owned();
    log.lock().unwrap().push(format!("{method} {path}"));
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if path.ends_with("/messages/count_tokens") {
        return axum::Json(json!({"input_tokens": 100})).into_response();
    }
    if path.ends_with("/messages") {
        return anthropic(mode, &request);
    }
    if path.ends_with("/responses") {
        return openai(mode, &request);
    }
    if path.contains(":streamGenerateContent") || path.contains(":generateContent") {
        return gemini(mode, &request, path.contains(":stream"));
    }
    if path.contains(":countTokens") {
        return axum::Json(json!({"totalTokens": 100})).into_response();
    }
    if path.ends_with("/models") {
        return axum::Json(json!({"data": [], "models": []})).into_response();
    }
    (StatusCode::NOT_FOUND, "not part of the fake API").into_response()
}

fn sse(events: &[(Option<&str>, Value)]) -> Response {
    let mut body = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            let _ = writeln!(body, "event: {name}");
        }
        let _ = write!(body, "data: {data}\n\n");
    }
    let mut response = body.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

fn error(status: u16, body: Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = (status, axum::Json(body)).into_response();
    if status == StatusCode::TOO_MANY_REQUESTS {
        response
            .headers_mut()
            .insert("retry-after", HeaderValue::from_static("0"));
    }
    response
}

// ---- Anthropic Messages ------------------------------------------------------------------------

fn anthropic(mode: Mode, request: &Value) -> Response {
    match mode {
        Mode::Status(status) => {
            let (kind, message) = match status {
                401 => ("authentication_error", "invalid x-api-key"),
                429 => (
                    "rate_limit_error",
                    "This request would exceed your organization's rate limit.",
                ),
                _ => ("api_error", "Internal server error"),
            };
            return error(
                status,
                json!({"type": "error", "error": {"type": kind, "message": message}}),
            );
        }
        Mode::InputTooLarge => {
            return error(
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 1048577 tokens > 200000 maximum"}}),
            );
        }
        Mode::Pass => {}
        Mode::CrumbMcp => return anthropic_reply(request, &crumb_mcp_step(request)),
    }
    let answered = request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .and_then(|last| last["content"].as_array())
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"));
    let has_bash = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "Bash"));
    let block = if answered || !has_bash {
        json!({"type": "text", "text": "Done."})
    } else {
        json!({"type": "tool_use", "id": "toolu_fake_1", "name": "Bash", "input": {"command": TURN_COMMAND, "description": "Run the turn"}})
    };
    anthropic_reply(request, &block)
}

/// The next step of [`Mode::CrumbMcp`], from the tool results so far: `run`, then `status` of
/// the session `run` answered with, then a final answer: `Done.` only when `status` answered
/// with the session's state.
fn crumb_mcp_step(request: &Value) -> Value {
    let has_crumb = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "mcp__crumb__run"));
    let results: Vec<String> = request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].to_string())
        .collect();
    match (has_crumb, results.as_slice()) {
        (true, []) => {
            json!({"type": "tool_use", "id": "toolu_fake_1", "name": "mcp__crumb__run", "input": {"pipeline": "pipelines/casual-static.yaml", "pitch": "a snake game", "adapter": "mock"}})
        }
        (true, [run]) => {
            let id = run
                .split("session_id")
                .nth(1)
                .and_then(|rest| {
                    rest.split(|c: char| !c.is_ascii_alphanumeric())
                        .find(|w| w.len() == 26)
                })
                .unwrap_or("missing");
            json!({"type": "tool_use", "id": "toolu_fake_2", "name": "mcp__crumb__status", "input": {"session": id}})
        }
        // The answer says whether `status` came back with the session's folded state.
        (true, [_, status]) if status.contains("session_id") && status.contains("state") => {
            json!({"type": "text", "text": "Done."})
        }
        (true, [_, status]) => json!({"type": "text", "text": format!("status failed: {status}")}),
        _ => json!({"type": "text", "text": "Done."}),
    }
}

/// One Anthropic Messages answer holding `block`, streamed when the request asks for it.
fn anthropic_reply(request: &Value, block: &Value) -> Response {
    let model = request["model"].as_str().unwrap_or("claude-fake");
    let stop_reason = if block["type"] == "tool_use" {
        "tool_use"
    } else {
        "end_turn"
    };
    let usage = json!({"input_tokens": 120, "output_tokens": 30, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0});
    if request["stream"] != Value::Bool(true) {
        return axum::Json(json!({
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop_reason, "stop_sequence": null, "usage": usage,
        }))
        .into_response();
    }
    let (start, delta) = if block["type"] == "tool_use" {
        (
            json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
            json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
        )
    } else {
        (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": "Done."}),
        )
    };
    sse(&[
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 120, "output_tokens": 1}}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            Some("message_delta"),
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 30}}),
        ),
        (Some("message_stop"), json!({"type": "message_stop"})),
    ])
}

// ---- OpenAI Responses --------------------------------------------------------------------------

fn openai(mode: Mode, request: &Value) -> Response {
    match mode {
        Mode::Status(status) => {
            let (code, message) = match status {
                401 => ("invalid_api_key", "Incorrect API key provided: fake."),
                429 => (
                    "insufficient_quota",
                    "You exceeded your current quota, please check your plan and billing details.",
                ),
                _ => ("server_error", "The server had an error."),
            };
            return error(
                status,
                json!({"error": {"type": code, "code": code, "message": message, "param": null}}),
            );
        }
        Mode::InputTooLarge => {
            return error(
                400,
                json!({"error": {"type": "invalid_request_error", "code": "context_length_exceeded", "message": "Your input exceeds the context window of this model.", "param": "input"}}),
            );
        }
        Mode::Pass | Mode::CrumbMcp => {}
    }
    let input = request["input"].as_array().cloned().unwrap_or_default();
    let answered = input.iter().any(|item| {
        item["type"]
            .as_str()
            .is_some_and(|kind| kind.ends_with("call_output"))
    });
    let tools: Vec<&str> = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    let item = if answered {
        json!({"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Done.", "annotations": []}]})
    } else if tools.contains(&"exec_command") {
        json!({"type": "function_call", "id": "fc_fake", "call_id": "call_fake_1", "status": "completed", "name": "exec_command", "arguments": json!({"cmd": TURN_COMMAND}).to_string()})
    } else if tools.contains(&"shell") {
        json!({"type": "function_call", "id": "fc_fake", "call_id": "call_fake_1", "status": "completed", "name": "shell", "arguments": json!({"command": ["bash", "-c", TURN_COMMAND]}).to_string()})
    } else {
        json!({"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "No shell tool was offered.", "annotations": []}]})
    };
    let response = json!({"id": "resp_fake", "object": "response", "status": "completed", "model": request["model"], "output": [item.clone()],
        "usage": {"input_tokens": 200, "input_tokens_details": {"cached_tokens": 50}, "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 12}, "total_tokens": 240}});
    sse(&[
        (
            Some("response.created"),
            json!({"type": "response.created", "response": {"id": "resp_fake", "object": "response", "status": "in_progress", "output": []}}),
        ),
        (
            Some("response.output_item.added"),
            json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        ),
        (
            Some("response.output_item.done"),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            Some("response.completed"),
            json!({"type": "response.completed", "response": response}),
        ),
    ])
}

// ---- Gemini generateContent --------------------------------------------------------------------

fn gemini(mode: Mode, request: &Value, stream: bool) -> Response {
    match mode {
        Mode::Status(status) => {
            let (state, message) = match status {
                401 => (
                    "UNAUTHENTICATED",
                    "API key not valid. Please pass a valid API key.",
                ),
                429 => ("RESOURCE_EXHAUSTED", "Quota exceeded for this project."),
                _ => ("INTERNAL", "Internal error encountered."),
            };
            return error(
                status,
                json!({"error": {"code": status, "message": message, "status": state}}),
            );
        }
        Mode::InputTooLarge => {
            return error(
                400,
                json!({"error": {"code": 400, "message": "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}),
            );
        }
        Mode::Pass | Mode::CrumbMcp => {}
    }
    let contents = request["contents"].as_array().cloned().unwrap_or_default();
    let answered = contents.last().is_some_and(|last| {
        last["parts"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some()))
    });
    let has_shell = request["tools"].as_array().is_some_and(|tools| {
        tools.iter().any(|tool| {
            tool["functionDeclarations"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f["name"] == "run_shell_command"))
        })
    });
    let part = if !answered && has_shell {
        json!({"functionCall": {"name": "run_shell_command", "args": {"command": TURN_COMMAND, "description": "Run the turn"}}})
    } else if has_shell || answered {
        json!({"text": "Done."})
    } else {
        // A helper request (routing, next-speaker check): a small JSON answer.
        json!({"text": "{\"next_speaker\": \"user\", \"reasoning\": \"done\", \"model_choice\": \"flash\"}"})
    };
    let chunk = json!({
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 300, "candidatesTokenCount": 25, "totalTokenCount": 325, "thoughtsTokenCount": 7},
        "modelVersion": "gemini-2.5-flash",
    });
    if stream {
        sse(&[(None, chunk)])
    } else {
        axum::Json(chunk).into_response()
    }
}
