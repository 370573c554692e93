//! `crumb lsp`: a Language Server Protocol server over stdio for pipeline YAML, presets,
//! `include:`/`extends:` fragments and the `.j2` templates they name. Diagnostics come from the
//! one compile `crumb validate` runs ([`crumb_core::pipeline::file_report`]), over the buffers
//! the client has open ([`documents`]), so the editor shows exactly what the command prints;
//! `crumb check`'s findings follow from a background thread ([`check_findings`]).
//!
//! Built on `lsp-server` and `lsp-types` (rust-analyzer's own): a synchronous loop over one
//! channel of messages, where each request is answered before the next is read. A handler that
//! fails or panics answers an error and the loop goes on: no input ends the server but `exit`.

mod check_findings;
mod code_actions;
mod completion;
mod diagnostics;
mod documents;
mod graph_lens;
mod hover;
mod log;
mod navigation;
mod outline;
mod position;
mod recording;
mod rename;
mod schema_docs;
mod server;
mod template_context;
mod uri;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
    Notification as _,
};
use lsp_types::request::{
    CodeActionRequest, CodeLensRequest, Completion, DocumentSymbolRequest, ExecuteCommand,
    GotoDefinition, HoverRequest, References, Rename, Request as _,
};
use lsp_types::{
    CodeActionProviderCapability, CodeLensOptions, CompletionOptions, ExecuteCommandOptions,
    HoverProviderCapability, InitializeResult, OneOf, PositionEncodingKind, ServerCapabilities,
    ServerInfo, TextDocumentPositionParams, TextDocumentSyncCapability, TextDocumentSyncKind,
};
use serde_json::Value;

use server::Server;

/// Serve until the client says `exit` (or closes stdin).
pub(crate) fn serve() -> Result<(), String> {
    let (connection, io_threads) = Connection::stdio();
    let capabilities = ServerCapabilities {
        position_encoding: Some(PositionEncodingKind::UTF16),
        text_document_sync: Some(TextDocumentSyncCapability::Kind(
            TextDocumentSyncKind::INCREMENTAL,
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![
                ":".into(),
                " ".into(),
                ".".into(),
                "[".into(),
                ",".into(),
            ]),
            ..CompletionOptions::default()
        }),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        code_lens_provider: Some(CodeLensOptions {
            resolve_provider: Some(false),
        }),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: vec![graph_lens::COMMAND.to_owned()],
            ..ExecuteCommandOptions::default()
        }),
        ..ServerCapabilities::default()
    };
    let result = InitializeResult {
        capabilities,
        server_info: Some(ServerInfo {
            name: "crumb".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
    };
    let (id, _params) = connection.initialize_start().map_err(|e| e.to_string())?;
    let initialized = serde_json::to_value(result).map_err(|e| e.to_string())?;
    connection
        .initialize_finish(id, initialized)
        .map_err(|e| e.to_string())?;
    log::info("initialized");
    let mut server = Server::new(connection.sender.clone());
    for message in &connection.receiver {
        match message {
            Message::Request(request) => {
                match connection.handle_shutdown(&request) {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(err) => {
                        log::error(&err.to_string());
                        break;
                    }
                }
                let id = request.id.clone();
                let method = request.method.clone();
                let answer = catch_unwind(AssertUnwindSafe(|| respond(&mut server, request)))
                    .unwrap_or_else(|_| {
                        Err((ErrorCode::InternalError, format!("{method} failed")))
                    });
                let response = match answer {
                    Ok(value) => Response {
                        id,
                        result: Some(value),
                        error: None,
                    },
                    Err((code, message)) => {
                        log::error(&format!("{method}: {message}"));
                        Response::new_err(id, code as i32, message)
                    }
                };
                server.send(Message::Response(response));
            }
            Message::Notification(notification) => {
                let method = notification.method.clone();
                let handled = catch_unwind(AssertUnwindSafe(|| notify(&mut server, notification)));
                match handled {
                    Ok(Ok(())) => {}
                    Ok(Err(message)) => log::error(&format!("{method}: {message}")),
                    Err(_) => log::error(&format!("{method} failed")),
                }
            }
            Message::Response(_) => {}
        }
    }
    drop(server);
    drop(connection);
    io_threads.join().map_err(|e| e.to_string())?;
    log::info("exited");
    Ok(())
}

type Answer = Result<Value, (ErrorCode, String)>;

fn params<P: serde::de::DeserializeOwned>(value: Value) -> Result<P, (ErrorCode, String)> {
    serde_json::from_value(value).map_err(|e| (ErrorCode::InvalidParams, e.to_string()))
}

fn json(value: impl serde::Serialize) -> Answer {
    serde_json::to_value(value).map_err(|e| (ErrorCode::InternalError, e.to_string()))
}

/// The file, its text and the byte offset a positional request is about; `None` when the file
/// is neither open nor readable (a request for a deleted file is answered with nothing).
fn located(server: &Server, at: &TextDocumentPositionParams) -> Option<(PathBuf, String, usize)> {
    let path = uri::to_path(&at.text_document.uri)?;
    let text = server.documents.text(&path)?;
    let offset = position::Lines::new(&text).offset(at.position);
    Some((path, text, offset))
}

fn respond(server: &mut Server, request: Request) -> Answer {
    let Request {
        method,
        params: raw,
        ..
    } = request;
    match method.as_str() {
        HoverRequest::METHOD => {
            let p: lsp_types::HoverParams = params(raw)?;
            json(
                located(server, &p.text_document_position_params)
                    .and_then(|(path, text, offset)| hover::hover(server, &path, &text, offset)),
            )
        }
        Completion::METHOD => {
            let p: lsp_types::CompletionParams = params(raw)?;
            json(
                located(server, &p.text_document_position)
                    .map(|(path, text, offset)| completion::complete(server, &path, &text, offset)),
            )
        }
        GotoDefinition::METHOD => {
            let p: lsp_types::GotoDefinitionParams = params(raw)?;
            json(located(server, &p.text_document_position_params).and_then(
                |(path, text, offset)| navigation::definition(server, &path, &text, offset),
            ))
        }
        References::METHOD => {
            let p: lsp_types::ReferenceParams = params(raw)?;
            let with_declaration = p.context.include_declaration;
            json(
                located(server, &p.text_document_position).map(|(path, text, offset)| {
                    navigation::references(server, &path, &text, offset, with_declaration)
                }),
            )
        }
        Rename::METHOD => {
            let p: lsp_types::RenameParams = params(raw)?;
            let Some((path, text, offset)) = located(server, &p.text_document_position) else {
                return Ok(Value::Null);
            };
            let edit = rename::rename(server, &path, &text, offset, &p.new_name)
                .map_err(|message| (ErrorCode::InvalidParams, message))?;
            json(edit)
        }
        DocumentSymbolRequest::METHOD => {
            let p: lsp_types::DocumentSymbolParams = params(raw)?;
            let text =
                uri::to_path(&p.text_document.uri).and_then(|path| server.documents.text(&path));
            json(
                text.map(|text| {
                    lsp_types::DocumentSymbolResponse::Nested(navigation::symbols(&text))
                }),
            )
        }
        CodeActionRequest::METHOD => {
            let p: lsp_types::CodeActionParams = params(raw)?;
            let text =
                uri::to_path(&p.text_document.uri).and_then(|path| server.documents.text(&path));
            json(text.map(|text| {
                code_actions::actions(&p.text_document.uri, &text, &p.context.diagnostics)
            }))
        }
        CodeLensRequest::METHOD => {
            let p: lsp_types::CodeLensParams = params(raw)?;
            let lenses = uri::to_path(&p.text_document.uri)
                .map(|path| graph_lens::lenses(server, &p.text_document.uri, &path));
            json(lenses)
        }
        ExecuteCommand::METHOD => {
            let p: lsp_types::ExecuteCommandParams = params(raw)?;
            if p.command != graph_lens::COMMAND {
                return Err((
                    ErrorCode::InvalidParams,
                    format!("no command `{}`", p.command),
                ));
            }
            let path = p
                .arguments
                .first()
                .and_then(Value::as_str)
                .and_then(|s| s.parse().ok())
                .and_then(|u| uri::to_path(&u));
            json(path.and_then(|path| graph_lens::graph(server, &path)))
        }
        _ => Err((ErrorCode::MethodNotFound, format!("no method `{method}`"))),
    }
}

fn notify(server: &mut Server, notification: Notification) -> Result<(), String> {
    let Notification {
        method,
        params: raw,
    } = notification;
    let decode = |e: serde_json::Error| e.to_string();
    match method.as_str() {
        DidOpenTextDocument::METHOD => {
            let p: lsp_types::DidOpenTextDocumentParams =
                serde_json::from_value(raw).map_err(decode)?;
            let path = uri::to_path(&p.text_document.uri).ok_or("not a file: URI")?;
            server
                .documents
                .open(path.clone(), p.text_document.text, p.text_document.version);
            server.touched(&path);
        }
        DidChangeTextDocument::METHOD => {
            let p: lsp_types::DidChangeTextDocumentParams =
                serde_json::from_value(raw).map_err(decode)?;
            let path = uri::to_path(&p.text_document.uri).ok_or("not a file: URI")?;
            if !server
                .documents
                .change(&path, p.text_document.version, p.content_changes)
            {
                return Err(format!("{} is not open", path.display()));
            }
            server.touched(&path);
        }
        DidSaveTextDocument::METHOD => {
            let p: lsp_types::DidSaveTextDocumentParams =
                serde_json::from_value(raw).map_err(decode)?;
            let path = uri::to_path(&p.text_document.uri).ok_or("not a file: URI")?;
            server.touched(&path);
        }
        DidCloseTextDocument::METHOD => {
            let p: lsp_types::DidCloseTextDocumentParams =
                serde_json::from_value(raw).map_err(decode)?;
            let path = uri::to_path(&p.text_document.uri).ok_or("not a file: URI")?;
            server.closed(&path);
        }
        _ => {}
    }
    Ok(())
}
