//! Stage 2: a person's commands, written by the runtime as `user.*` events.
//!
//! - `user.pause` / `user.resume`: the whole session, or one role (`to`, or `data.actor`). A pause
//!   queues spawns instead of issuing them; a resume re-fires exactly the queued spawns with the
//!   context they were queued with. A global resume also lifts every per-role pause.
//! - `user.approve`: fires the pipeline's `user.approve` route, only while a verdict awaits a
//!   person (approving a question or anything else that is not a verdict is refused).
//! - `/redo` (`user.intervene` with `data.redo`): while the session waits because QA could not
//!   run, runs QA again; otherwise a message like any other.
//! - `user.veto <reason>`: fires the pipeline's `user.veto` route with the reason as feedback; a
//!   repair it starts counts against `limits.max_verify`.
//! - `user.answer <text>`: while the session awaits a person (a question or a verdict), fires the
//!   pipeline's `user.answer` route; the roles it spawns get the answer as a person's message. A
//!   pipeline can so route an answer to a question differently from a veto of a verdict.
//!
//! Without a declared route, each of these commands is refused with an error ack and the run goes
//! on: while the session awaits a person, only the declared `user.*` routes move it.
//! - `user.intervene`: verbs in `data`, all optional and combinable — `goto: <role>`,
//!   `swap: {from: <role>, to: <adapter>}`, `append` / `sandwich_append: <text>` (for `to` /
//!   `data.target_actor`, or every role), `cancel: <role>|"all"`, `reset_circuit: <role>|"all"|true`,
//!   `ask: <topic>`, `note: <text>`. A body with a target role and no verb is queued for that
//!   role's next turn (`@role message`: acknowledged as queued, never a wake: only routes and
//!   `/goto` start turns); a body with neither is a message for every role's next spawn.
//!
//! Every command is answered by one `ack` event (`metadata.ack_for`). A command that names a role
//! the pipeline does not have, or that makes no sense in the current state, is answered with an
//! error ack (`data.ok: false`) and changes nothing. A terminal session stays terminal: commands
//! after `done` get an error ack, except `/ask`.

use serde_json::{Map, Value, json};

use super::ask::TOPICS;
use super::effect::{Cancel, Effect, Feedback, SpawnCause};
use super::reducer::{Step, VETO_CELL};
use super::state::{MAX_TEXT, clip};
use crate::pipeline::table::{Action, CompiledRoute};
use crate::pipeline::triggers::QA_ERROR_TRIGGER;
use crate::transcript::payload::{data, data_str};
use crate::transcript::{Draft, Kind, Metadata};

/// The verbs of one `user.intervene`, checked.
struct Verbs {
    body: Option<String>,
    ask: Option<String>,
    note: bool,
    goto: Option<String>,
    swap: Option<(String, String)>,
    cancel: Option<Scope>,
    reset: Option<Scope>,
    append: Option<String>,
    target: Option<String>,
    /// `/redo`: runs QA again while the session waits because QA could not run.
    redo: bool,
}

impl Verbs {
    /// No verb at all: the body is a message.
    fn is_plain_message(&self) -> bool {
        self.ask.is_none()
            && !self.note
            && self.goto.is_none()
            && self.swap.is_none()
            && self.cancel.is_none()
            && self.reset.is_none()
            && self.append.is_none()
    }
}

/// A verb's reach: one role or all of them.
#[derive(Clone)]
enum Scope {
    All,
    One(String),
}

impl Scope {
    fn role(&self) -> Option<String> {
        match self {
            Scope::All => None,
            Scope::One(role) => Some(role.clone()),
        }
    }
}

/// Who a command is aimed at.
enum Target {
    All,
    Role(String),
    Unknown(String),
}

impl Step<'_> {
    pub(super) fn user_command(&mut self, answer: Option<String>, was_done: bool) {
        let kind = self.event.kind;
        if !matches!(
            kind,
            Kind::UserPause
                | Kind::UserResume
                | Kind::UserApprove
                | Kind::UserVeto
                | Kind::UserAnswer
                | Kind::UserIntervene
        ) {
            return;
        }
        if let Some(answer) = answer {
            let metadata = Metadata {
                in_reply_to: Some(self.event.id.clone()),
                ..Metadata::default()
            };
            self.append(
                Draft::new("system", Kind::Note)
                    .body(answer)
                    .metadata(metadata),
            );
            if was_done {
                self.ack(Ok("answered".to_owned()));
                return;
            }
        }
        if let Some(done) = &self.state.done {
            let message = format!("session already done ({}); nothing changed", done.reason);
            self.ack(Err(message));
            return;
        }
        let outcome = match kind {
            Kind::UserPause => self.pause(),
            Kind::UserResume => self.resume(),
            Kind::UserApprove => self.approve(),
            Kind::UserVeto => self.veto(),
            Kind::UserAnswer => self.answer(),
            _ => self.intervene_verbs(),
        };
        self.ack(outcome);
    }

    fn ack(&mut self, outcome: Result<String, String>) {
        let (ok, body) = match outcome {
            Ok(body) => (true, body),
            Err(problem) => (false, format!("error: {problem}")),
        };
        let mut data = Map::new();
        data.insert("ok".into(), json!(ok));
        let metadata = Metadata {
            ack_for: Some(self.event.id.clone()),
            ..Metadata::default()
        };
        self.append(
            Draft::new("system", Kind::Ack)
                .body(body)
                .data(data)
                .metadata(metadata),
        );
    }

    fn resolve(&self, name: &str) -> Target {
        let name = name.trim().trim_start_matches('@');
        if name.is_empty() || name == "*" || name == "all" {
            Target::All
        } else if self.table.is_role(name) {
            Target::Role(name.to_owned())
        } else {
            Target::Unknown(name.to_owned())
        }
    }

    /// The role a command is aimed at: `to`, else `data.actor` / `data.target_actor` / `data.role`.
    fn target(&self) -> Target {
        let named = self.event.to.as_deref().or_else(|| {
            ["actor", "target_actor", "role"]
                .into_iter()
                .find_map(|key| data_str(self.event, key))
        });
        named.map_or(Target::All, |name| self.resolve(name))
    }

    fn unknown_role(&self, name: &str) -> String {
        let roles: Vec<&str> = self.table.roles.iter().map(|r| r.id.as_str()).collect();
        format!(
            "unknown role `{}` (roles: {})",
            clip(name, 64),
            roles.join(", ")
        )
    }

    fn pause(&mut self) -> Result<String, String> {
        match self.target() {
            Target::All => {
                self.state.paused = true;
                Ok("paused globally".to_owned())
            }
            Target::Role(role) => {
                self.state.role_mut(&role).paused = true;
                Ok(format!("paused @{role}"))
            }
            Target::Unknown(name) => Err(self.unknown_role(&name)),
        }
    }

    fn resume(&mut self) -> Result<String, String> {
        let released: Vec<String> = match self.target() {
            Target::All => {
                self.state.paused = false;
                for record in self.state.roles.values_mut() {
                    record.paused = false;
                }
                let roles: Vec<String> = self.table.roles.iter().map(|r| r.id.clone()).collect();
                roles
                    .into_iter()
                    .filter(|role| self.release(role))
                    .collect()
            }
            Target::Role(role) => {
                self.state.role_mut(&role).paused = false;
                if !self.state.paused && self.release(&role) {
                    vec![role]
                } else {
                    Vec::new()
                }
            }
            Target::Unknown(name) => return Err(self.unknown_role(&name)),
        };
        let scope = match self.target() {
            Target::Role(role) => format!("resumed @{role}"),
            _ => "resumed globally".to_owned(),
        };
        if released.is_empty() {
            Ok(scope)
        } else {
            Ok(format!("{scope}; re-fired {}", released.join(", ")))
        }
    }

    /// `/approve`: the pipeline's `user.approve` route, only while a verdict awaits a person.
    fn approve(&mut self) -> Result<String, String> {
        let Some(awaiting) = &self.state.awaiting else {
            return Err("nothing is awaiting approval".to_owned());
        };
        if awaiting.on == QA_ERROR_TRIGGER {
            return Err(
                "QA could not run, so there is nothing to approve; /redo runs QA again".to_owned(),
            );
        }
        if !awaiting.is_verdict() {
            return Err(format!(
                "/approve answers a verdict, and the session awaits `{}`; nothing changed",
                awaiting.on
            ));
        }
        let Some(route) = self.person_route(Kind::UserApprove) else {
            return Err(
                "the pipeline declares no `user.approve` route; nothing changed".to_owned(),
            );
        };
        self.state.awaiting = None;
        self.fire(&route, None, SpawnCause::Route);
        Ok("approved".to_owned())
    }

    /// `/veto <reason>`: the pipeline's `user.veto` route, with the reason as feedback. A repair
    /// counts against `limits.max_verify` like a verdict's.
    fn veto(&mut self) -> Result<String, String> {
        let Some(mut route) = self.person_route(Kind::UserVeto) else {
            return Err("the pipeline declares no `user.veto` route; nothing changed".to_owned());
        };
        let (verdict, severity) = VETO_CELL;
        let reason = self
            .event
            .body
            .as_deref()
            .or_else(|| data_str(self.event, "reason"))
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or("vetoed by a person");
        let feedback = Feedback {
            source_event_id: self.event.id.clone(),
            verdict,
            severity,
            text: clip(reason, MAX_TEXT),
            suggested_change: None,
        };
        self.state.awaiting = None;
        let repairs = matches!(
            route.action,
            Action::Spawn { .. } | Action::SpawnAll { .. } | Action::RunQa
        );
        if repairs && self.state.verification.count >= self.table.limits.max_verify {
            self.stop("too_many_verify");
            return Ok("vetoed; the verification budget is spent".to_owned());
        }
        // A veto always hands its reason over, whether or not the route says `with: feedback`.
        route.with_feedback = true;
        self.fire(&route, Some(feedback), SpawnCause::Veto);
        match data_str(self.event, "target_msg_id") {
            Some(target) => Ok(format!("vetoed {}", clip(target, 64))),
            None => Ok("vetoed".to_owned()),
        }
    }

    /// `/answer <text>`: the pipeline's `user.answer` route, only while the session awaits a
    /// person. The roles the route spawns get the answer as a person's message; a repair counts
    /// against `limits.max_verify` like a veto's.
    fn answer(&mut self) -> Result<String, String> {
        let Some(awaiting) = &self.state.awaiting else {
            return Err("nothing awaits an answer; nothing changed".to_owned());
        };
        let on = awaiting.on.clone();
        let Some(route) = self.person_route(Kind::UserAnswer) else {
            return Err("the pipeline declares no `user.answer` route; nothing changed".to_owned());
        };
        let Some(text) = self
            .event
            .body
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| clip(t, MAX_TEXT))
        else {
            return Err("/answer needs the answer's text; nothing changed".to_owned());
        };
        self.state.awaiting = None;
        let spawned: Vec<String> = match &route.action {
            Action::Spawn { role } => vec![role.clone()],
            Action::SpawnAll { roles } => roles.clone(),
            _ => Vec::new(),
        };
        let repairs = !spawned.is_empty() || matches!(route.action, Action::RunQa);
        if repairs && self.state.verification.count >= self.table.limits.max_verify {
            self.stop("too_many_verify");
            return Ok(format!("answered `{on}`; the verification budget is spent"));
        }
        for role in &spawned {
            self.intervene(role, &text);
        }
        self.fire(&route, None, SpawnCause::Answer);
        Ok(format!("answered `{on}`"))
    }

    /// The route a person's command fires, if the pipeline declares one.
    fn person_route(&self, kind: Kind) -> Option<CompiledRoute> {
        self.table
            .route_for(kind.as_str(), &self.event.from)
            .cloned()
    }

    /// A role-or-everyone argument of a verb (`cancel`, `reset_circuit`).
    fn role_or_all(&self, verb: &str, value: &Value, problems: &mut Vec<String>) -> Option<Scope> {
        match value {
            Value::Bool(true) => Some(Scope::All),
            Value::String(name) => match self.resolve(name) {
                Target::All => Some(Scope::All),
                Target::Role(role) => Some(Scope::One(role)),
                Target::Unknown(name) => {
                    problems.push(self.unknown_role(&name));
                    None
                }
            },
            _ => {
                problems.push(format!("/{verb} needs a role or `all`"));
                None
            }
        }
    }

    /// Read and check every verb of a `user.intervene`; any problem rejects the whole command.
    fn parse_verbs(&self) -> Result<Verbs, String> {
        let event = self.event;
        let empty = Map::new();
        let data = data(event).unwrap_or(&empty);
        let mut problems = Vec::new();

        let ask = data
            .get("ask")
            .map(|v| clip(v.as_str().unwrap_or_default().trim(), 32));
        if let Some(topic) = &ask
            && !TOPICS.contains(&topic.as_str())
        {
            problems.push(format!(
                "unknown /ask topic `{topic}` (topics: {})",
                TOPICS.join(", ")
            ));
        }
        let goto = data.get("goto").and_then(|value| {
            match value.as_str().map(|name| self.resolve(name)) {
                Some(Target::Role(role)) => Some(role),
                Some(Target::Unknown(name)) => {
                    problems.push(self.unknown_role(&name));
                    None
                }
                _ => {
                    problems.push("/goto needs a role".to_owned());
                    None
                }
            }
        });
        let swap = data.get("swap").and_then(|value| {
            let from = value
                .get("from")
                .or_else(|| value.get("role"))
                .and_then(Value::as_str);
            let to = value
                .get("to")
                .or_else(|| value.get("adapter"))
                .and_then(Value::as_str);
            match (
                from.map(|f| self.resolve(f)),
                to.map(str::trim).filter(|t| !t.is_empty()),
            ) {
                (Some(Target::Role(role)), Some(adapter)) => Some((role, clip(adapter, 64))),
                (Some(Target::Unknown(name)), _) => {
                    problems.push(self.unknown_role(&name));
                    None
                }
                _ => {
                    problems.push("/swap needs {from: <role>, to: <adapter>}".to_owned());
                    None
                }
            }
        });
        let cancel = data
            .get("cancel")
            .and_then(|v| self.role_or_all("cancel", v, &mut problems));
        let reset = data
            .get("reset_circuit")
            .and_then(|v| self.role_or_all("reset-circuit", v, &mut problems));
        let append = ["append", "sandwich_append"]
            .into_iter()
            .find_map(|key| data.get(key))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| clip(t, MAX_TEXT));
        let target = match self.target() {
            Target::Unknown(name) => {
                problems.push(self.unknown_role(&name));
                None
            }
            Target::All => None,
            Target::Role(role) => Some(role),
        };
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        Ok(Verbs {
            body: event
                .body
                .as_deref()
                .map(str::trim)
                .filter(|b| !b.is_empty())
                .map(|b| clip(b, MAX_TEXT)),
            ask,
            note: data.contains_key("note"),
            goto,
            swap,
            cancel,
            reset,
            append,
            target,
            redo: data.get("redo") == Some(&Value::Bool(true)),
        })
    }

    /// `user.intervene`: check every verb first, then apply them all (or none).
    fn intervene_verbs(&mut self) -> Result<String, String> {
        let verbs = self.parse_verbs()?;
        let mut acks: Vec<String> = Vec::new();
        if verbs.redo && self.redo_qa() {
            acks.push("redo: QA runs again".to_owned());
        }
        if let Some((role, adapter)) = &verbs.swap {
            self.state.record_swap(role, adapter, "person");
            self.state.role_mut(role).adapter = Some(adapter.clone());
            acks.push(format!("swapped {role} → {adapter}"));
        }
        if let Some(reset) = &verbs.reset {
            let roles: Vec<String> = match reset {
                Scope::One(role) => vec![role.clone()],
                Scope::All => self.table.roles.iter().map(|r| r.id.clone()).collect(),
            };
            for role in roles {
                let record = self.state.role_mut(&role);
                record.failures_in_a_row = 0;
                record.circuit_swaps = 0;
            }
            acks.push(reset.role().map_or_else(
                || "reset all circuits".to_owned(),
                |r| format!("reset circuit for {r}"),
            ));
        }
        if let Some(cancel) = &verbs.cancel {
            let reason = verbs.body.as_ref().map_or_else(
                || "user-requested cancel".to_owned(),
                |b| format!("user-requested cancel: {b}"),
            );
            let id = self.next_id();
            self.effects.push(Effect::Cancel(Cancel {
                id,
                role: cancel.role(),
                reason,
            }));
            acks.push(cancel.role().map_or_else(
                || "cancelled all spawns".to_owned(),
                |r| format!("cancelled @{r}"),
            ));
        }
        // An explicit append goes to its target, else to the goto's role, else to every role.
        let message_target = verbs.target.clone().or_else(|| verbs.goto.clone());
        if let Some(text) = &verbs.append {
            self.deliver(message_target.as_deref(), text);
            acks.push(match &message_target {
                Some(role) => format!("appended to next @{role} spawn"),
                None => "appended to next spawn".to_owned(),
            });
        }
        if let Some(role) = &verbs.goto {
            if let Some(text) = &verbs.body
                && verbs.append.as_ref() != Some(text)
            {
                self.deliver(Some(role), text);
            }
            self.spawn(role, SpawnCause::Goto, None, Vec::new());
            acks.insert(0, format!("goto {role}"));
        } else if let Some(text) = verbs.body.as_ref().filter(|_| verbs.is_plain_message()) {
            // `@role message` waits for that role's next turn, which only a route or `/goto`
            // starts: a person's line never moves the session outside the declared routes.
            self.deliver(verbs.target.as_deref(), text);
            match &verbs.target {
                Some(role) => acks.push(format!(
                    "queued for @{role}'s next turn (not a wake: /goto @{role} starts one)"
                )),
                None => acks.push("intervene queued".to_owned()),
            }
        }
        if verbs.ask.is_some() {
            acks.push("answered".to_owned());
        } else if verbs.note {
            acks.push("noted".to_owned());
        }
        if acks.is_empty() {
            acks.push("intervene queued".to_owned());
        }
        Ok(acks.join("; "))
    }

    /// Queue `text` for the next spawn of `role`, or of every role.
    fn deliver(&mut self, role: Option<&str>, text: &str) {
        if let Some(role) = role {
            self.intervene(role, text);
            return;
        }
        let roles: Vec<String> = self.table.roles.iter().map(|r| r.id.clone()).collect();
        for role in roles {
            self.intervene(&role, text);
        }
    }
}
