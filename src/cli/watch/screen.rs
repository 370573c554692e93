//! Drawing one frame of `crumb watch`: a header with the outcome and budgets and the story of the
//! rounds, the feed (the latest events, then the live turn's log tail), the scorecard, and a
//! footer with the keys, the last action's answer or the line being typed. Fits 80×24.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Text};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::model::Model;

/// What the footer shows.
pub(crate) enum Footer<'a> {
    /// The keys, and the answer to the last action.
    Keys(&'a str),
    /// A line being typed after `prompt`.
    Typing { prompt: &'a str, text: &'a str },
}

pub(crate) fn draw(frame: &mut Frame<'_>, model: &Model, footer: &Footer<'_>) {
    let state = &model.replay.state;
    let rubric = &model.table.scoring.rubric;
    let [header, feed, scores, foot] = Layout::vertical([
        Constraint::Length(5),
        Constraint::Min(4),
        Constraint::Length(4),
        Constraint::Length(2),
    ])
    .areas(frame.area());

    let budgets = &state.budgets;
    let rounds = if model.rounds.is_empty() {
        "no verdict yet".to_owned()
    } else {
        model.rounds.join(" → ")
    };
    let head = Text::from(vec![
        Line::styled(
            format!(
                "{} · {} · {}",
                model.session.id(),
                model.table.name,
                crate::cli::replay::outcome(state)
            ),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Line::from(format!(
            "events {} · tokens {} · builds {} · re-plans {} · errors in a row {}",
            state.events, budgets.tokens, budgets.builds, budgets.respecs, budgets.errors_in_a_row
        )),
        Line::from(format!("rounds  {rounds}")),
    ]);
    frame.render_widget(
        Paragraph::new(head)
            .wrap(Wrap { trim: true })
            .block(Block::default().borders(Borders::BOTTOM)),
        header,
    );

    let mut lines: Vec<Line<'_>> = Vec::new();
    let log = model.live_log(5);
    let log_rows = log.as_ref().map_or(0, |(_, l)| l.len() + 1);
    let room = usize::from(feed.height).saturating_sub(log_rows);
    let skip = model.recent.len().saturating_sub(room);
    for event in model.recent.iter().skip(skip) {
        lines.push(Line::from(crate::cli::tail::human_line(event)));
    }
    if let Some((role, log)) = log {
        lines.push(Line::styled(
            format!("── {role} is working: its log ──"),
            Style::default().add_modifier(Modifier::DIM),
        ));
        lines.extend(log.into_iter().map(Line::from));
    }
    frame.render_widget(Paragraph::new(lines), feed);

    let mut card: Vec<Line<'_>> = Vec::new();
    match &state.verification.latest {
        None => card.push(Line::from("no judge.score yet")),
        Some(record) => {
            let dimensions: Vec<String> = record
                .corrected
                .dimensions
                .iter()
                .enumerate()
                .map(|(index, value)| {
                    format!(
                        "{} {value}",
                        rubric.get(index).map_or("?", |d| d.id.as_str())
                    )
                })
                .collect();
            card.push(Line::from(dimensions.join(" · ")));
            card.push(Line::from(format!(
                "aggregate {} · verdict {} ({})",
                record.corrected.aggregate, record.corrected.verdict, record.severity
            )));
        }
    }
    frame.render_widget(
        Paragraph::new(card)
            .wrap(Wrap { trim: true })
            .block(Block::default().borders(Borders::TOP).title("scorecard")),
        scores,
    );

    let footer_text = match footer {
        Footer::Keys(answer) => vec![
            Line::from(
                "a approve · v veto · s stop · r resume · : send a line · q quit".to_owned(),
            ),
            Line::from((*answer).to_owned()),
        ],
        Footer::Typing { prompt, text } => vec![
            Line::from(format!("{prompt}{text}▏")),
            Line::from("Enter sends · Esc cancels".to_owned()),
        ],
    };
    frame.render_widget(Paragraph::new(footer_text), foot);
}
