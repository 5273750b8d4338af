//! The tool-approval overlay: shows the tool and its full arguments (pretty
//! JSON) and takes the user's decision — approve once, approve for the
//! session, edit the arguments (a correction), or reject with a reason.

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph};
use ratatui_textarea::TextArea;

use super::app::{App, Effect};
use super::mode::Transition;
use super::wrap::wrap_spans;
use crate::orchestration::TurnRef;
use crate::orchestration::agent::ApprovalRequest;
use crate::tools::Decision;
use crate::util::sanitize::terminal_safe;

/// What the overlay is doing.
pub enum Step {
    Choose,
    /// Editing the arguments as JSON.
    Edit(Box<TextArea<'static>>),
    /// Typing the reason for a rejection.
    Reason(Box<TextArea<'static>>),
}

/// A pending approval on screen.
pub struct ApprovalUi {
    pub turn: TurnRef,
    pub request: ApprovalRequest,
    pub step: Step,
    pub scroll: u16,
    pub error: Option<String>,
}

impl ApprovalUi {
    pub fn new(turn: TurnRef, request: ApprovalRequest) -> Self {
        ApprovalUi {
            turn,
            request,
            step: Step::Choose,
            scroll: 0,
            error: None,
        }
    }

    fn pretty(&self) -> String {
        serde_json::to_string_pretty(&self.request.arguments).unwrap_or_else(|_| self.request.arguments.to_string())
    }
}

fn area(lines: &str) -> Box<TextArea<'static>> {
    let mut t = TextArea::from(lines.lines().map(str::to_string).collect::<Vec<_>>());
    t.set_cursor_line_style(ratatui::style::Style::default());
    Box::new(t)
}

/// Keys while the approval overlay is on top.
pub fn on_key(app: &mut App, key: KeyEvent) {
    let Some(ui) = app.approval.as_mut() else {
        let _ = app.modes.apply(Transition::Close);
        return;
    };
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let decision = match &mut ui.step {
        Step::Choose => match key.code {
            KeyCode::Char('y') | KeyCode::Enter => Some(Decision::Approve),
            KeyCode::Char('a') => Some(Decision::ApproveForSession),
            KeyCode::Char('e') => {
                let pretty = ui.pretty();
                ui.step = Step::Edit(area(&pretty));
                None
            }
            KeyCode::Char('r') => {
                ui.step = Step::Reason(area(""));
                None
            }
            KeyCode::Char('n') | KeyCode::Esc => Some(Decision::Reject(None)),
            KeyCode::Up => {
                ui.scroll = ui.scroll.saturating_sub(1);
                None
            }
            KeyCode::Down => {
                ui.scroll = ui.scroll.saturating_add(1);
                None
            }
            KeyCode::PageUp => {
                ui.scroll = ui.scroll.saturating_sub(10);
                None
            }
            KeyCode::PageDown => {
                ui.scroll = ui.scroll.saturating_add(10);
                None
            }
            _ => None,
        },
        Step::Edit(t) => {
            let submit = (ctrl && key.code == KeyCode::Char('s'))
                || (key.code == KeyCode::Enter && key.modifiers.contains(KeyModifiers::ALT));
            if key.code == KeyCode::Esc {
                ui.step = Step::Choose;
                ui.error = None;
                None
            } else if submit {
                let text = t.lines().join("\n");
                match serde_json::from_str::<serde_json::Value>(&text) {
                    Ok(v) if v.is_object() => Some(Decision::Edit(v)),
                    Ok(_) => {
                        ui.error = Some("the arguments must be a JSON object {…}".into());
                        None
                    }
                    Err(e) => {
                        ui.error = Some(format!("not valid JSON: {e}"));
                        None
                    }
                }
            } else {
                t.input(key);
                None
            }
        }
        Step::Reason(t) => match key.code {
            KeyCode::Esc => {
                ui.step = Step::Choose;
                None
            }
            KeyCode::Enter => {
                let r = t.lines().join(" ").trim().to_string();
                Some(Decision::Reject((!r.is_empty()).then_some(r)))
            }
            _ => {
                t.input(key);
                None
            }
        },
    };
    if let Some(d) = decision {
        let id = ui.request.id;
        app.approval = None;
        let _ = app.modes.apply(Transition::ApprovalGiven);
        app.push_effect(Effect::Approve { id, decision: d });
    }
}

pub fn draw(app: &App, frame: &mut Frame, full: Rect) {
    let Some(ui) = &app.approval else { return };
    let t = &app.theme;
    let [v] = Layout::vertical([Constraint::Percentage(80)])
        .flex(Flex::Center)
        .areas(full);
    let [r] = Layout::horizontal([Constraint::Percentage(86)])
        .flex(Flex::Center)
        .areas(v);
    frame.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(t.warning)
        .title(Span::styled(" approve this tool call? ", t.warning));
    let inner = block.inner(r);
    frame.render_widget(block, r);
    let keys = match &ui.step {
        Step::Choose => {
            "y/Enter approve once · a approve for this session · e edit the arguments · r reject with a reason · n/Esc reject"
        }
        Step::Edit(_) => "editing the arguments (JSON) · Ctrl-S or Alt-Enter run with these · Esc back",
        Step::Reason(_) => "the reason goes back to the model · Enter reject · Esc back",
    };
    let mut head = vec![Line::from(vec![
        Span::styled(terminal_safe(&ui.request.tool).into_owned(), t.strong),
        Span::styled(format!("   call {}", terminal_safe(&ui.request.call_id)), t.dim),
    ])];
    head.extend(wrap_spans(
        &[Span::styled(terminal_safe(&ui.request.description).into_owned(), t.dim)],
        inner.width,
        vec![],
        vec![],
    ));
    head.truncate(4);
    let footer = wrap_spans(&[Span::styled(keys, t.status_key)], inner.width, vec![], vec![]);
    let err = ui.error.as_ref().map(|e| Line::from(Span::styled(e.clone(), t.error)));
    let [head_area, body_area, err_area, foot_area] = Layout::vertical([
        Constraint::Length(head.len() as u16 + 1),
        Constraint::Min(3),
        Constraint::Length(u16::from(err.is_some())),
        Constraint::Length(footer.len() as u16),
    ])
    .areas(inner);
    frame.render_widget(Paragraph::new(head), head_area);
    match &ui.step {
        Step::Choose => {
            let lines: Vec<Line> = ui
                .pretty()
                .lines()
                .flat_map(|l| {
                    wrap_spans(
                        &[Span::styled(terminal_safe(l).into_owned(), t.code_block)],
                        body_area.width,
                        vec![],
                        vec![Span::raw("  ")],
                    )
                })
                .collect();
            frame.render_widget(Paragraph::new(lines).scroll((ui.scroll, 0)), body_area);
        }
        Step::Edit(ta) => frame.render_widget(ta.as_ref(), body_area),
        Step::Reason(ta) => {
            let [label, input] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(body_area);
            frame.render_widget(Paragraph::new(Span::styled("why not? (optional)", t.dim)), label);
            frame.render_widget(ta.as_ref(), input);
        }
    }
    if let Some(e) = err {
        frame.render_widget(Paragraph::new(e), err_area);
    }
    frame.render_widget(Paragraph::new(footer), foot_area);
}
