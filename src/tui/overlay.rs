//! Overlays drawn above the transcript: the help screen and pickers
//! (endpoint, model). Owns their state, their keys and their drawing.

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, List, ListItem, ListState, Paragraph};

use super::app::App;
use super::mode::{Overlay, PickerKind, Transition};
use super::transcript::NoticeLevel;
use super::wrap::wrap_spans;

/// The keys, for the help screen (commands come from the registry).
pub const KEYS: &[(&str, &str)] = &[
    ("Enter", "send the message"),
    ("Alt-Enter, Shift-Enter, Ctrl-J", "new line in the message"),
    (
        "Up / Down",
        "previous / next message from history (at the first / last line)",
    ),
    ("Tab", "complete a /command and its argument"),
    (
        "Esc",
        "cancel the answer being streamed (keeps what arrived); close overlays",
    ),
    ("Ctrl-C", "cancel the answer; when idle, twice to quit"),
    ("Ctrl-D", "quit (when the message box is empty)"),
    ("PgUp / PgDn", "scroll the transcript"),
    (
        "Ctrl-Home / Ctrl-End",
        "top / bottom of the transcript (Home / End when the box is empty)",
    ),
    ("mouse wheel", "scroll the transcript"),
    ("F2", "mouse capture on/off: off lets the terminal select and copy text"),
    (
        "Shift + drag",
        "select text natively in most terminals even with capture on",
    ),
    ("Ctrl-T", "show / hide reasoning"),
    ("Ctrl-L", "redraw the screen"),
    ("F1", "this help"),
];

#[derive(Debug, Default)]
pub struct OverlayState {
    pub help_scroll: u16,
    pub picker: Option<Picker>,
    /// Session picker from `/search`: the hit's turn, by item.
    pub session_focus: Vec<u32>,
}

#[derive(Debug, Clone)]
pub struct Picker {
    pub kind: PickerKind,
    pub items: Vec<String>,
    pub filter: String,
    pub selected: usize,
}

impl Picker {
    pub fn visible(&self) -> Vec<&str> {
        let f = self.filter.to_lowercase();
        self.items
            .iter()
            .filter(|i| i.to_lowercase().contains(&f))
            .map(String::as_str)
            .collect()
    }
}

impl OverlayState {
    pub fn open_picker(&mut self, kind: PickerKind, items: Vec<String>, current: &str) {
        let selected = items.iter().position(|i| i == current).unwrap_or(0);
        self.picker = Some(Picker {
            kind,
            items,
            filter: String::new(),
            selected,
        });
    }

    /// A model list arrived: fill an open model picker.
    pub fn models_arrived(&mut self, _endpoint: &str, list: Vec<String>) {
        if let Some(p) = self.picker.as_mut().filter(|p| p.kind == PickerKind::Model) {
            let current = p.visible().get(p.selected).map(|s| s.to_string());
            p.items = list;
            p.selected = current.and_then(|c| p.items.iter().position(|i| *i == c)).unwrap_or(0);
        }
    }
}

/// Keys while an overlay is on top.
pub fn on_key(app: &mut App, key: KeyEvent) {
    let Some(top) = app.modes.overlay().cloned() else {
        return;
    };
    match top {
        Overlay::Help => match key.code {
            KeyCode::Esc | KeyCode::Enter | KeyCode::F(1) | KeyCode::Char('q') => close(app),
            KeyCode::Up => app.overlay_state.help_scroll = app.overlay_state.help_scroll.saturating_sub(1),
            KeyCode::Down => app.overlay_state.help_scroll = app.overlay_state.help_scroll.saturating_add(1),
            KeyCode::PageUp => app.overlay_state.help_scroll = app.overlay_state.help_scroll.saturating_sub(10),
            KeyCode::PageDown => app.overlay_state.help_scroll = app.overlay_state.help_scroll.saturating_add(10),
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => close(app),
            _ => {}
        },
        Overlay::Picker(_) => picker_key(app, key),
        Overlay::ToolApproval => super::approval::on_key(app, key),
        Overlay::ComparePick => super::pick::on_key(app, key),
    }
}

fn close(app: &mut App) {
    let _ = app.modes.apply(Transition::Close);
}

fn picker_key(app: &mut App, key: KeyEvent) {
    let Some(p) = app.overlay_state.picker.as_mut() else {
        close(app);
        return;
    };
    let n = p.visible().len();
    match key.code {
        KeyCode::Esc => {
            app.overlay_state.picker = None;
            close(app);
        }
        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
            app.overlay_state.picker = None;
            close(app);
        }
        KeyCode::Up => p.selected = p.selected.saturating_sub(1),
        KeyCode::Down => p.selected = (p.selected + 1).min(n.saturating_sub(1)),
        KeyCode::PageUp => p.selected = p.selected.saturating_sub(10),
        KeyCode::PageDown => p.selected = (p.selected + 10).min(n.saturating_sub(1)),
        KeyCode::Backspace => {
            p.filter.pop();
            p.selected = 0;
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
            p.filter.push(c);
            p.selected = 0;
        }
        KeyCode::Enter => {
            let choice = p.visible().get(p.selected).map(|s| s.to_string());
            let index = choice.as_ref().and_then(|c| p.items.iter().position(|i| i == c));
            let kind = p.kind;
            app.overlay_state.picker = None;
            close(app);
            let Some(choice) = choice else { return };
            match kind {
                PickerKind::Endpoint => match app.set_endpoint(&choice, None) {
                    Ok(()) => app.flash(
                        format!("endpoint {} · model {}", app.endpoint, app.model),
                        NoticeLevel::Info,
                    ),
                    Err(e) => app.flash(e, NoticeLevel::Error),
                },
                PickerKind::Model => {
                    app.model = choice;
                    app.flash(format!("model {} on {}", app.model, app.endpoint), NoticeLevel::Info);
                }
                PickerKind::Session => app.session_chosen(&choice, index),
            }
        }
        _ => {}
    }
}

fn centered(area: Rect, w_pct: u16, h_pct: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Percentage(h_pct)])
        .flex(Flex::Center)
        .areas(area);
    let [h] = Layout::horizontal([Constraint::Percentage(w_pct)])
        .flex(Flex::Center)
        .areas(v);
    h
}

fn frame_block<'a>(app: &App, title: &'a str) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(app.theme.overlay_border)
        .title(Span::styled(title, app.theme.overlay_title))
}

/// Draw every overlay, bottom to top.
pub fn draw(app: &App, frame: &mut Frame, area: Rect) {
    for o in app.modes.overlays() {
        match o {
            Overlay::Help => draw_help(app, frame, area),
            Overlay::Picker(_) => draw_picker(app, frame, area),
            Overlay::ToolApproval => super::approval::draw(app, frame, area),
            Overlay::ComparePick => super::pick::draw(app, frame, area),
        }
    }
}

fn draw_help(app: &App, frame: &mut Frame, area: Rect) {
    let r = centered(area, 90, 90);
    frame.render_widget(Clear, r);
    let t = &app.theme;
    let inner = r.width.saturating_sub(2);
    // Two columns; long descriptions wrap under their own column.
    let rows =
        |lines: &mut Vec<Line<'static>>, key: String, key_style: ratatui::style::Style, what: &str, col: usize| {
            let spans = vec![
                Span::styled(format!("  {key:<col$}  "), key_style),
                Span::raw(what.to_string()),
            ];
            let hang = vec![Span::raw(" ".repeat(col + 4))];
            lines.extend(wrap_spans(&spans, inner, Vec::new(), hang));
        };
    let mut lines = vec![Line::from(Span::styled("Commands", t.heading))];
    let cw = app
        .commands
        .all()
        .map(|c| c.usage().chars().count())
        .max()
        .unwrap_or(10);
    for c in app.commands.all() {
        rows(&mut lines, c.usage(), t.inline_code, c.about(), cw);
    }
    lines.push(Line::default());
    lines.push(Line::from(Span::styled("Keys", t.heading)));
    let kw = KEYS.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(10);
    for (k, what) in KEYS {
        rows(&mut lines, (*k).to_string(), t.strong, what, kw);
    }
    lines.push(Line::default());
    lines.extend(wrap_spans(
        &[Span::styled(
            "Sessions are recorded under sessions_dir (turn JSON + HTML). Esc closes this help; Up/Down scroll it.",
            t.dim,
        )],
        inner,
        Vec::new(),
        Vec::new(),
    ));
    let p = Paragraph::new(lines)
        .block(frame_block(app, " pai help "))
        .scroll((app.overlay_state.help_scroll, 0));
    frame.render_widget(p, r);
}

fn draw_picker(app: &App, frame: &mut Frame, area: Rect) {
    let Some(p) = &app.overlay_state.picker else { return };
    // Sessions carry a title or a search snippet: they get the width.
    let r = match p.kind {
        PickerKind::Session => centered(area, 94, 70),
        PickerKind::Endpoint | PickerKind::Model => centered(area, 60, 60),
    };
    frame.render_widget(Clear, r);
    let title = match p.kind {
        PickerKind::Endpoint => " choose an endpoint ",
        PickerKind::Model => " choose a model ",
        PickerKind::Session => " choose a session to resume ",
    };
    let [filter_area, list_area] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(frame_block(app, title).inner(r));
    frame.render_widget(frame_block(app, title), r);
    let visible = p.visible();
    let hint = if visible.is_empty() && p.items.is_empty() {
        "loading…".to_string()
    } else {
        format!(
            "filter: {}▏  ({} of {})  Enter choose · Esc close",
            p.filter,
            visible.len(),
            p.items.len()
        )
    };
    frame.render_widget(Paragraph::new(Span::styled(hint, app.theme.dim)), filter_area);
    let items: Vec<ListItem> = visible
        .iter()
        .map(|i| ListItem::new(crate::util::sanitize::terminal_safe(i).into_owned()))
        .collect();
    let list = List::new(items)
        .highlight_style(app.theme.selected)
        .highlight_symbol("▶ ");
    let mut state = ListState::default().with_selected((!visible.is_empty()).then_some(p.selected));
    frame.render_stateful_widget(list, list_area, &mut state);
}
