//! Drawing: the layout (transcript, hint row, prompt box, toolbar) and the
//! toolbar's content. Pure: reads the app, writes the frame, no I/O.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Scrollbar, ScrollbarOrientation, ScrollbarState};

use super::app::App;
use super::mode::Activity;
use super::overlay;
use super::transcript::{NoticeLevel, RenderCx};

/// Most lines the prompt box grows to.
const MAX_INPUT_LINES: usize = 10;

/// Compact token counts: 950, 12.3k, 4.1M.
pub fn compact(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

pub fn draw(app: &mut App, frame: &mut Frame) {
    let area = frame.area();
    let hint = hint_line(app);
    let input_lines = app.input.line_count().clamp(1, MAX_INPUT_LINES) as u16;
    let [transcript_area, hint_area, input_area, status_area] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(u16::from(hint.is_some())),
        Constraint::Length(input_lines + 1),
        Constraint::Length(1),
    ])
    .areas(area);

    draw_transcript(app, frame, transcript_area);
    if let Some(h) = hint {
        frame.render_widget(Paragraph::new(h), hint_area);
    }
    let block = Block::default().borders(Borders::TOP).border_style(app.theme.dim);
    let inner = block.inner(input_area);
    frame.render_widget(block, input_area);
    frame.render_widget(app.input.area(), inner);
    frame.render_widget(
        Paragraph::new(status_line(app, status_area.width)).style(app.theme.status_bar),
        status_area,
    );
    overlay::draw(app, frame, area);
}

fn draw_transcript(app: &mut App, frame: &mut Frame, area: Rect) {
    // Leave a column for the scrollbar.
    let width = area.width.saturating_sub(1).max(1);
    let cx = RenderCx {
        theme: &app.theme,
        highlighter: app.highlighter.as_ref(),
        show_reasoning: app.show_reasoning,
        width,
    };
    app.transcript.layout(&cx, area.height as usize);
    let lines = app.transcript.visible_lines();
    let text_area = Rect { width, ..area };
    if app.transcript.is_empty() {
        let t = &app.theme;
        let welcome = vec![
            Line::from(Span::styled("pai — Polyglot AI", t.heading)),
            Line::from(Span::styled(
                format!("talking to {} on {}", app.model, app.endpoint),
                t.dim,
            )),
            Line::from(Span::styled(
                "type a message and press Enter · /help or F1 for commands and keys",
                t.dim,
            )),
        ];
        frame.render_widget(Paragraph::new(welcome), text_area);
        return;
    }
    frame.render_widget(Paragraph::new(lines), text_area);
    let total = app.transcript.total_lines();
    if total > area.height as usize {
        let pos = total.saturating_sub(area.height as usize + app.transcript.scroll_from_bottom());
        let mut sb = ScrollbarState::new(total.saturating_sub(area.height as usize)).position(pos);
        frame.render_stateful_widget(
            Scrollbar::new(ScrollbarOrientation::VerticalRight)
                .begin_symbol(None)
                .end_symbol(None),
            area,
            &mut sb,
        );
    }
}

/// The row above the prompt box: completions, a message, or "new output below".
fn hint_line(app: &App) -> Option<Line<'static>> {
    let t = &app.theme;
    if !app.input.completions.is_empty() {
        return Some(Line::from(Span::styled(
            format!(" {}", app.input.completions.join("  ")),
            t.dim,
        )));
    }
    if let Some((msg, level, _)) = &app.flash {
        let style = match level {
            NoticeLevel::Info => t.notice,
            NoticeLevel::Warning => t.warning,
            NoticeLevel::Error => t.error,
        };
        return Some(Line::from(Span::styled(format!(" {msg}"), style)));
    }
    if app.transcript.unseen {
        return Some(Line::from(Span::styled(
            " ↓ new output below — End or Ctrl-End to follow",
            t.warning,
        )));
    }
    None
}

/// The toolbar: segments by priority, dropped from the right when narrow.
pub fn status_line(app: &App, width: u16) -> Line<'static> {
    let t = &app.theme;
    let activity = app.modes.activity();
    let act_style = match activity {
        Activity::Idle => t.status_key,
        Activity::Error => t.status_error,
        Activity::Waiting
        | Activity::Streaming
        | Activity::RunningTool
        | Activity::AwaitingApproval
        | Activity::Paused => t.status_busy,
    };
    // (text, style, priority: lower = kept longer)
    let mut segs: Vec<(String, Style, u8)> = vec![
        (format!(" {} ", app.modes.mode().label()), t.status_key, 0),
        (format!(" {} ", activity.label()), act_style, 0),
        (format!(" {} ", app.toolbar_target()), t.status_bar, 1),
    ];
    let (rate, ttft, req_tokens) = match app.live_figures() {
        Some((rate, ttft, out)) => (rate, ttft, Some(out)),
        None => match &app.last_stats {
            Some(s) => (s.tokens_per_sec, s.ttft_ms, Some(s.output_tokens)),
            None => (None, None, None),
        },
    };
    if let Some(r) = rate {
        segs.push((format!(" {r:.1} tok/s "), t.status_bar, 2));
    }
    if let Some(ms) = ttft {
        segs.push((format!(" TTFT {ms} ms "), t.status_bar, 3));
    }
    if let Some(n) = req_tokens {
        segs.push((format!(" req {} tok ", compact(n)), t.status_bar, 4));
    }
    segs.push((
        format!(" session {} tok ", compact(app.conversation.session_tokens)),
        t.status_bar,
        4,
    ));
    if !app.mouse_capture {
        segs.push((" mouse off (F2) ".into(), t.status_busy, 2));
    }
    if app.smooth {
        segs.push((" smooth ".into(), t.status_bar, 6));
    }
    segs.push((" F1 help ".into(), t.status_bar, 5));
    let width = width as usize;
    let used = |s: &[(String, Style, u8)]| s.iter().map(|(x, _, _)| x.chars().count() + 1).sum::<usize>();
    while used(&segs) > width {
        // Drop the least important segment.
        let Some((i, _)) = segs.iter().enumerate().max_by_key(|(i, (_, _, p))| (*p, *i)) else {
            break;
        };
        if segs[i].2 == 0 {
            break;
        }
        segs.remove(i);
    }
    let mut spans = Vec::new();
    for (i, (text, style, _)) in segs.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled("│", t.status_bar));
        }
        spans.push(Span::styled(text, style));
    }
    Line::from(spans)
}
