//! `crumb watch <session>`: a terminal view of a live or finished session, for SSH and headless
//! machines: the outcome and budgets, the story of the rounds, the feed with the live turn's log
//! tail and the scorecard, redrawn from the tail of the transcript ([`model`]). Keys send the
//! same inbox lines `crumb say` sends (approve, veto with a reason, any line), stop the
//! coordinator as Studio's Stop does, and resume in the background. When stdout is not a
//! terminal it prints plain lines instead ([`plain`]).

mod launch;
mod model;
mod plain;
mod screen;

use std::io::IsTerminal as _;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};

use super::error::{CommandError, ExitStatus};
use crate::home::{CrumbHome, Project};
use crate::runtime::resolve::resolve;
use model::Model;
use screen::Footer;

/// How long the view waits for a key before reading the transcript's tail again.
const REDRAW_INTERVAL: Duration = Duration::from_millis(100);

/// Arguments of `crumb watch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Session: a ULID, a unique prefix of one, or a path to a session folder.
    pub session: String,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let home = CrumbHome::from_env()?;
    let project = Project::current().ok();
    let session = resolve(&home, project.as_ref(), &args.session)?;
    let mut model = Model::open(session).map_err(CommandError::usage)?;
    show(&mut model).map(|()| ExitStatus::SUCCESS)
}

pub(crate) use launch::run_and_watch;

/// The full-screen view on a terminal, plain lines anywhere else.
fn show(model: &mut Model) -> Result<(), CommandError> {
    if std::io::stdout().is_terminal() {
        interactive(model)
    } else {
        plain::run(model)
    }
}

/// The full-screen view until `q` or Ctrl-C; the terminal is restored however the loop ends.
fn interactive(model: &mut Model) -> Result<(), CommandError> {
    let mut terminal = ratatui::try_init()
        .map_err(|e| CommandError::failure("cannot take over the terminal").because(e))?;
    let result = view_loop(&mut terminal, model);
    ratatui::restore();
    result
}

/// What the keys are doing.
enum Mode {
    Keys,
    Veto,
    Line,
}

fn view_loop(
    terminal: &mut ratatui::DefaultTerminal,
    model: &mut Model,
) -> Result<(), CommandError> {
    let mut mode = Mode::Keys;
    let mut typed = String::new();
    let mut answer = String::from("watching");
    loop {
        model.poll().map_err(CommandError::failure)?;
        terminal
            .draw(|frame| {
                let footer = match mode {
                    Mode::Keys => Footer::Keys(&answer),
                    Mode::Veto => Footer::Typing {
                        prompt: "veto, because: ",
                        text: &typed,
                    },
                    Mode::Line => Footer::Typing {
                        prompt: "line: ",
                        text: &typed,
                    },
                };
                screen::draw(frame, model, &footer);
            })
            .map_err(CommandError::failure_from)?;
        if !event::poll(REDRAW_INTERVAL).map_err(CommandError::failure_from)? {
            continue;
        }
        let TermEvent::Key(key) = event::read().map_err(CommandError::failure_from)? else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            return Ok(());
        }
        match (&mode, key.code) {
            (Mode::Keys, KeyCode::Char('q')) => return Ok(()),
            (Mode::Keys, KeyCode::Char('a')) => answer = say(model, "/approve"),
            (Mode::Keys, KeyCode::Char('v')) => mode = Mode::Veto,
            (Mode::Keys, KeyCode::Char(':')) => mode = Mode::Line,
            (Mode::Keys, KeyCode::Char('s')) => {
                answer = match crate::runtime::stop::stop_coordinator(&model.session) {
                    Ok(pid) => format!("stopping the coordinator (pid {pid}); r resumes"),
                    Err(e) => format!("cannot stop: {e}"),
                };
            }
            (Mode::Keys, KeyCode::Char('r')) => answer = resume(model),
            (Mode::Veto | Mode::Line, KeyCode::Esc) => {
                mode = Mode::Keys;
                typed.clear();
            }
            (Mode::Veto | Mode::Line, KeyCode::Backspace) => {
                typed.pop();
            }
            (Mode::Veto | Mode::Line, KeyCode::Char(c)) => typed.push(c),
            (Mode::Veto, KeyCode::Enter) => {
                answer = say(model, &format!("/veto {}", typed.trim()));
                mode = Mode::Keys;
                typed.clear();
            }
            (Mode::Line, KeyCode::Enter) => {
                answer = say(model, typed.trim());
                mode = Mode::Keys;
                typed.clear();
            }
            _ => {}
        }
    }
}

/// Send `line` as `crumb say` does; the answer the footer shows.
fn say(model: &Model, line: &str) -> String {
    match super::say::send(&model.session, line) {
        Ok(None) => format!("sent: {line}"),
        Ok(Some(note)) => format!("sent: {line} ({note})"),
        Err(e) => format!("refused: {e}"),
    }
}

/// Start `crumb resume --wait` for the session in the background (its own process group, so it
/// outlives this view); the answer the footer shows.
fn resume(model: &Model) -> String {
    if crate::runtime::lock::is_held(model.session.path()) {
        return "a coordinator is already running".to_owned();
    }
    let spawned = std::env::current_exe().and_then(|exe| {
        std::os::unix::process::CommandExt::process_group(
            crate::process::command::blocking(exe)
                .args(["resume", "--wait"])
                .arg(model.session.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
            0,
        )
        .spawn()
    });
    match spawned {
        Ok(mut child) => {
            let pid = child.id();
            std::thread::spawn(move || child.wait());
            format!("resuming (pid {pid})")
        }
        Err(e) => format!("cannot resume: {e}"),
    }
}
