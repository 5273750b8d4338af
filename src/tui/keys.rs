//! Terminal input → app behaviour: keys (by overlay, then editor), paste,
//! mouse wheel, resize, and Tab completion.

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

use super::app::{App, Effect};
use super::input::EditorOutcome;
use super::mode::{InputTarget, Overlay, Transition};
use super::overlay;
use super::transcript::NoticeLevel;

const WHEEL_LINES: usize = 3;

impl App {
    /// One terminal event.
    pub fn on_terminal(&mut self, ev: Event) {
        match ev {
            Event::Key(k) if k.kind != KeyEventKind::Release => self.on_key(k),
            Event::Key(_) => {}
            Event::Paste(s) => {
                if self.modes.input_target() == InputTarget::Editor {
                    self.input.paste(&s);
                }
            }
            Event::Mouse(m) => match m.kind {
                MouseEventKind::ScrollUp => self.transcript.scroll_up(WHEEL_LINES),
                MouseEventKind::ScrollDown => self.transcript.scroll_down(WHEEL_LINES),
                _ => {}
            },
            Event::Resize(_, _) | Event::FocusGained | Event::FocusLost => {}
        }
    }

    fn page(&self) -> usize {
        // The runner's last layout knows the viewport; half a screen is a safe step before it.
        (self.transcript_viewport().saturating_sub(2)).max(1)
    }

    pub fn on_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        // Keys that work everywhere.
        match key.code {
            KeyCode::Char('c') if ctrl && self.modes.input_target() == InputTarget::Editor => {
                self.interrupt();
                return;
            }
            KeyCode::Char('l') if ctrl => {
                self.push_effect(Effect::Redraw);
                return;
            }
            KeyCode::F(1) if self.modes.overlay() != Some(&Overlay::Help) => {
                let _ = self.modes.apply(Transition::Open(Overlay::Help));
                return;
            }
            KeyCode::F(2) => {
                self.mouse_capture = !self.mouse_capture;
                self.push_effect(Effect::SetMouseCapture(self.mouse_capture));
                let msg = if self.mouse_capture {
                    "mouse capture on: the wheel scrolls the transcript"
                } else {
                    "mouse capture off: select text with the mouse, copy with your terminal; F2 turns scrolling back on"
                };
                self.flash(msg, NoticeLevel::Info);
                return;
            }
            _ => {}
        }
        if self.modes.input_target() == InputTarget::Overlay {
            overlay::on_key(self, key);
            return;
        }
        match key.code {
            KeyCode::Esc => {
                if !self.cancel() {
                    self.input.completions.clear();
                }
                return;
            }
            KeyCode::Char('d') if ctrl && self.input.is_empty() => {
                self.quit();
                return;
            }
            KeyCode::Char('t') if ctrl => {
                self.show_reasoning = !self.show_reasoning;
                return;
            }
            KeyCode::PageUp => return self.transcript.scroll_up(self.page()),
            KeyCode::PageDown => return self.transcript.scroll_down(self.page()),
            KeyCode::Home if ctrl || self.input.is_empty() => return self.transcript.scroll_top(),
            KeyCode::End if ctrl || self.input.is_empty() => return self.transcript.scroll_bottom(),
            _ => {}
        }
        match self.input.on_key(key) {
            EditorOutcome::Submit(text) => {
                self.transcript.scroll_bottom();
                self.submit(text);
            }
            EditorOutcome::Complete => self.complete(),
            EditorOutcome::Edited | EditorOutcome::Ignored => {}
        }
    }

    /// Tab: complete the command line; show the candidates when ambiguous.
    pub fn complete(&mut self) {
        let line = self.input.text();
        if !line.starts_with('/') || line.contains('\n') {
            return;
        }
        // /model completion needs the list: fetch it once in the background.
        if line.starts_with("/model ") && !self.models.contains_key(&self.endpoint) {
            self.push_effect(Effect::ListModels {
                endpoint: self.endpoint.clone(),
                show: false,
            });
        }
        let commands = self.commands.clone();
        let mut cands = commands.complete(self, &line);
        cands.sort();
        match cands.len() {
            0 => self.input.completions.clear(),
            1 => {
                let mut c = cands.remove(0);
                if !c.contains(' ')
                    && commands
                        .find(c.trim_start_matches('/'))
                        .is_some_and(|k| !k.args().is_empty())
                {
                    c.push(' ');
                }
                self.input.set_text(&c);
            }
            _ => {
                let prefix = common_prefix(&cands);
                if prefix.len() > line.len() {
                    self.input.set_text(&prefix);
                }
                self.input.completions = cands
                    .iter()
                    .map(|c| c.rsplit(' ').next().unwrap_or(c).to_string())
                    .collect();
            }
        }
    }
}

fn common_prefix(v: &[String]) -> String {
    let Some(first) = v.first() else { return String::new() };
    let mut end = first.len();
    for s in &v[1..] {
        end = end.min(first.bytes().zip(s.bytes()).take_while(|(a, b)| a == b).count());
    }
    while !first.is_char_boundary(end) {
        end -= 1;
    }
    first[..end].to_string()
}
