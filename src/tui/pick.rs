//! The compare pick bar: once every answer is in, a one-line box at the bottom
//! asks which is better. Digits or ←/→ pick an answer, `t` a tie, `b` both
//! bad, Esc skips (no vote). The transcript still scrolls so long answers can
//! be read before choosing.

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph};

use super::app::{App, Pick};
use super::transcript::NoticeLevel;

/// Keys while the pick bar is up.
pub fn on_key(app: &mut App, key: KeyEvent) {
    let n = app
        .compare
        .as_ref()
        .and_then(|c| c.pending.as_ref())
        .map_or(0, |p| p.turns.len());
    let pick = match key.code {
        KeyCode::Left => Some(Some(Pick::Answer(0))),
        KeyCode::Right => Some(Some(Pick::Answer(n.saturating_sub(1)))),
        KeyCode::Char(c @ '1'..='9') => Some(Some(Pick::Answer(c as usize - '1' as usize))),
        KeyCode::Char('t' | 'T' | '=') => Some(Some(Pick::Tie)),
        KeyCode::Char('b' | 'B') => Some(Some(Pick::BothBad)),
        KeyCode::Esc => Some(None),
        KeyCode::PageUp => {
            app.transcript
                .scroll_up(app.transcript_viewport().saturating_sub(2).max(1));
            None
        }
        KeyCode::PageDown => {
            app.transcript
                .scroll_down(app.transcript_viewport().saturating_sub(2).max(1));
            None
        }
        KeyCode::Up => {
            app.transcript.scroll_up(1);
            None
        }
        KeyCode::Down => {
            app.transcript.scroll_down(1);
            None
        }
        KeyCode::Home => {
            app.transcript.scroll_top();
            None
        }
        KeyCode::End => {
            app.transcript.scroll_bottom();
            None
        }
        _ => None,
    };
    if let Some(p) = pick
        && let Err(e) = app.pick(p)
    {
        app.flash(e, NoticeLevel::Warning);
    }
}

/// The bar over the prompt box.
pub fn draw(app: &App, frame: &mut Frame, area: Rect) {
    let t = &app.theme;
    let n = app
        .compare
        .as_ref()
        .and_then(|c| c.pending.as_ref())
        .map_or(2, |p| p.turns.len());
    let keys = if n == 2 {
        "1/← left · 2/→ right".to_string()
    } else {
        format!("1–{n} the answer (←/→ first/last)")
    };
    let text = if area.width >= 90 {
        Line::from(vec![
            Span::styled(" Which answer is better?  ", t.strong),
            Span::styled(keys, t.text),
            Span::styled(" · t tie · b both bad · Esc skip · PgUp/PgDn read", t.dim),
        ])
    } else {
        Line::from(vec![
            Span::styled(" Better? ", t.strong),
            Span::styled(
                if n == 2 {
                    "1/← · 2/→".to_string()
                } else {
                    format!("1–{n}")
                },
                t.text,
            ),
            Span::styled(" · t tie · b bad · Esc skip", t.dim),
        ])
    };
    let h = 3.min(area.height);
    let r = Rect {
        x: area.x,
        y: area.y + area.height.saturating_sub(h + 1),
        width: area.width,
        height: h,
    };
    frame.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(t.overlay_border)
        .title(Span::styled(" pick ", t.overlay_title));
    frame.render_widget(Paragraph::new(text).block(block), r);
}
