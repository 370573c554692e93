//! Parsing every inbox command, its errors and its "did you mean" hints.

use super::*;

fn roles() -> Vec<String> {
    ["planner-lead", "builder", "verifier", "researcher"]
        .map(String::from)
        .to_vec()
}

fn ok(line: &str) -> UserCommand {
    parse_line(line, &roles()).unwrap().unwrap()
}

fn err(line: &str) -> InboxError {
    parse_line(line, &roles()).unwrap_err()
}

#[test]
fn blank_lines_and_comments_are_ignored() {
    for line in ["", "   ", "\t", "# a comment", "   # indented"] {
        assert_eq!(parse_line(line, &roles()), Ok(None), "{line:?}");
    }
}

#[test]
#[allow(clippy::too_many_lines, reason = "one assertion per grammar form")]
fn every_command() {
    assert_eq!(ok("/approve"), UserCommand::Approve { note: None });
    assert_eq!(
        ok("/APPROVE looks good"),
        UserCommand::Approve {
            note: Some("looks good".into())
        }
    );
    assert_eq!(
        ok("/veto no sound"),
        UserCommand::Veto {
            reason: Some("no sound".into())
        }
    );
    assert_eq!(
        ok("/answer blue, the darker one"),
        UserCommand::Answer {
            text: "blue, the darker one".into()
        }
    );
    assert_eq!(
        ok("/pause"),
        UserCommand::Pause {
            role: None,
            reason: None
        }
    );
    assert_eq!(
        ok("/pause @builder lunch"),
        UserCommand::Pause {
            role: Some("builder".into()),
            reason: Some("lunch".into())
        }
    );
    assert_eq!(
        ok("/pause @researcher"),
        UserCommand::Pause {
            role: Some("researcher".into()),
            reason: None
        }
    );
    assert_eq!(
        ok("/resume @builder"),
        UserCommand::Resume {
            role: Some("builder".into())
        }
    );
    assert_eq!(ok("/resume"), UserCommand::Resume { role: None });
    assert_eq!(
        ok("/pause builder"),
        UserCommand::Pause {
            role: Some("builder".into()),
            reason: None
        }
    );
    assert_eq!(
        ok("/cancel verifier stuck"),
        UserCommand::Cancel {
            role: Some("verifier".into()),
            reason: Some("stuck".into())
        }
    );
    assert_eq!(
        ok("/goto planner-lead"),
        UserCommand::Goto {
            role: "planner-lead".into(),
            message: None
        }
    );
    assert_eq!(
        ok("/goto @builder  use red"),
        UserCommand::Goto {
            role: "builder".into(),
            message: Some("use red".into())
        }
    );
    assert_eq!(
        ok("/swap builder=codex"),
        UserCommand::Swap {
            role: "builder".into(),
            adapter: AdapterKind::Codex
        }
    );
    assert_eq!(
        ok("/append @verifier be strict"),
        UserCommand::Append {
            role: Some("verifier".into()),
            text: "be strict".into()
        }
    );
    assert_eq!(
        ok("/append be brief"),
        UserCommand::Append {
            role: None,
            text: "be brief".into()
        }
    );
    assert_eq!(
        ok("/cancel @researcher"),
        UserCommand::Cancel {
            role: Some("researcher".into()),
            reason: None
        }
    );
    assert_eq!(
        ok("/cancel too slow"),
        UserCommand::Cancel {
            role: None,
            reason: Some("too slow".into())
        }
    );
    assert_eq!(
        ok("/reset-circuit all"),
        UserCommand::ResetCircuit {
            target: CircuitTarget::All
        }
    );
    assert_eq!(
        ok("/reset_circuit builder"),
        UserCommand::ResetCircuit {
            target: CircuitTarget::Role("builder".into())
        }
    );
    assert_eq!(
        ok("/ask COST please"),
        UserCommand::Ask {
            topic: AskTopic::Cost
        }
    );
    assert_eq!(
        ok("/note remember the palette"),
        UserCommand::Note {
            text: "remember the palette".into()
        }
    );
    assert_eq!(ok("/redo"), UserCommand::Redo { message: None });
    assert_eq!(
        ok("/redo with sound"),
        UserCommand::Redo {
            message: Some("with sound".into())
        }
    );
    assert_eq!(
        ok("@builder make it faster"),
        UserCommand::Direct {
            role: "builder".into(),
            message: "make it faster".into()
        }
    );
    assert_eq!(
        ok("  make it pink  "),
        UserCommand::Message {
            text: "make it pink".into()
        }
    );
}

#[test]
fn unknown_roles_are_errors_with_a_suggestion() {
    let error = err("/goto buidler");
    assert_eq!(
        error.to_string(),
        "unknown role `buidler` — did you mean `@builder`? (roles: planner-lead, builder, verifier, researcher)"
    );
    for line in [
        "@ghost hi",
        "/pause @ghost",
        "/cancel @ghost",
        "/swap ghost=mock",
        "/append @ghost x",
        "/reset-circuit ghost",
    ] {
        assert!(
            matches!(err(line), InboxError::UnknownRole { .. }),
            "{line}"
        );
    }
    // Roles are taken from the pipeline, not a built-in list.
    assert!(parse_line("@builder hi", &["writer".to_owned()]).is_err());
}

#[test]
fn malformed_commands_are_errors() {
    assert!(matches!(
        err("/answer"),
        InboxError::MissingArgument {
            command: "answer",
            ..
        }
    ));
    assert!(matches!(
        err("/goto"),
        InboxError::MissingArgument {
            command: "goto",
            ..
        }
    ));
    assert!(matches!(
        err("/swap builder"),
        InboxError::MissingArgument {
            command: "swap",
            ..
        }
    ));
    assert!(matches!(
        err("/swap =codex"),
        InboxError::MissingArgument { .. }
    ));
    assert!(matches!(
        err("/swap builder=gpt"),
        InboxError::UnknownAdapter { .. }
    ));
    assert!(matches!(
        err("/swap builder=codex now"),
        InboxError::UnexpectedText { .. }
    ));
    assert!(matches!(err("/append"), InboxError::MissingArgument { .. }));
    assert!(matches!(
        err("/append @builder"),
        InboxError::MissingArgument { .. }
    ));
    assert!(matches!(err("/note"), InboxError::MissingArgument { .. }));
    assert!(matches!(err("/ask"), InboxError::MissingArgument { .. }));
    assert!(matches!(
        err("/ask weather"),
        InboxError::UnknownTopic { .. }
    ));
    assert!(matches!(
        err("/reset-circuit"),
        InboxError::MissingArgument { .. }
    ));
    assert!(matches!(
        err("/resume @builder now"),
        InboxError::UnexpectedText { .. }
    ));
    assert!(matches!(
        err("@builder"),
        InboxError::MissingArgument { .. }
    ));
    assert_eq!(
        err("/aprove").to_string(),
        format!("unknown command `/aprove` — did you mean `/approve`? (commands: {COMMANDS})")
    );
    assert!(matches!(err("/"), InboxError::UnknownCommand { .. }));
    let long = "x".repeat(MAX_LINE_BYTES + 1);
    assert_eq!(
        err(&long),
        InboxError::TooLong {
            len: MAX_LINE_BYTES + 1
        }
    );
}

proptest::proptest! {
    #[test]
    fn never_panics_on_any_line(line in "\\PC{0,200}") {
        let _ = parse_line(&line, &roles());
    }

    #[test]
    fn never_panics_on_command_shaped_lines(
        command in "/[a-zA-Z_-]{0,14}",
        role in "@?[a-z-]{0,12}",
        rest in "[ -~\u{e9}\u{1f600}]{0,40}",
    ) {
        let line = format!("{command} {role}{rest}");
        if let Ok(Some(parsed)) = parse_line(&line, &roles()) {
            // Whatever parsed names only pipeline roles.
            let named = match &parsed {
                UserCommand::Pause { role, .. } | UserCommand::Resume { role } | UserCommand::Append { role, .. }
                | UserCommand::Cancel { role, .. } => role.clone(),
                UserCommand::Goto { role, .. } | UserCommand::Swap { role, .. } | UserCommand::Direct { role, .. } => Some(role.clone()),
                _ => None,
            };
            if let Some(role) = named {
                proptest::prop_assert!(roles().contains(&role));
            }
        }
    }

    #[test]
    fn plain_text_is_kept_verbatim(text in "[a-zA-Z0-9][a-zA-Z0-9 ,.!?]{0,80}") {
        let parsed = parse_line(&text, &roles()).unwrap().unwrap();
        proptest::prop_assert_eq!(parsed, UserCommand::Message { text: text.trim().to_owned() });
    }
}
