//! The prompt editor: a multi-line text area with shell-like history,
//! bracketed paste and Tab completion state. Decides which keys submit, which
//! insert a newline, and when Up/Down recall history instead of moving.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::{CursorMove, TextArea, WrapMode};

use super::theme::Theme;

/// What a key did in the editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorOutcome {
    /// Enter: the text to submit (editor cleared, history updated).
    Submit(String),
    /// Tab: complete the current line.
    Complete,
    /// Consumed (text or cursor changed).
    Edited,
    /// Not an editor key.
    Ignored,
}

/// The editor plus history.
pub struct InputEditor {
    area: TextArea<'static>,
    history: Vec<String>,
    /// Position while browsing history (`history.len()` = the draft).
    cursor: usize,
    draft: Option<String>,
    /// Candidates of the last Tab press, for the hint line.
    pub completions: Vec<String>,
    max_history: usize,
}

impl InputEditor {
    pub fn new(theme: &Theme, history: Vec<String>) -> Self {
        let mut area = TextArea::default();
        area.set_wrap_mode(WrapMode::WordOrGlyph);
        area.set_cursor_line_style(ratatui::style::Style::default());
        area.set_placeholder_text("Message… (Enter sends · Alt-Enter new line · /help)");
        area.set_placeholder_style(theme.dim);
        let cursor = history.len();
        InputEditor {
            area,
            history,
            cursor,
            draft: None,
            completions: Vec::new(),
            max_history: 1000,
        }
    }

    pub fn area(&self) -> &TextArea<'static> {
        &self.area
    }

    pub fn area_mut(&mut self) -> &mut TextArea<'static> {
        &mut self.area
    }

    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.area.is_empty()
    }

    pub fn line_count(&self) -> usize {
        self.area.lines().len()
    }

    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Replace the whole text, cursor at the end.
    pub fn set_text(&mut self, text: &str) {
        self.area.select_all();
        self.area.cut();
        self.area.insert_str(text);
        self.completions.clear();
    }

    pub fn clear(&mut self) {
        self.set_text("");
        self.cursor = self.history.len();
        self.draft = None;
    }

    /// Insert pasted text as-is (CRLF and CR normalised to LF).
    pub fn paste(&mut self, text: &str) {
        let t = text.replace("\r\n", "\n").replace('\r', "\n");
        self.area.insert_str(t);
        self.completions.clear();
    }

    fn push_history(&mut self, entry: &str) {
        if entry.trim().is_empty() {
            return;
        }
        if self.history.last().map(String::as_str) != Some(entry) {
            self.history.push(entry.to_string());
        }
        if self.history.len() > self.max_history {
            let drop = self.history.len() - self.max_history;
            self.history.drain(..drop);
        }
        self.cursor = self.history.len();
        self.draft = None;
    }

    /// Take the text for sending.
    pub fn take(&mut self) -> String {
        let text = self.text();
        self.push_history(&text);
        self.set_text("");
        text
    }

    fn recall(&mut self, older: bool) -> bool {
        if self.history.is_empty() {
            return false;
        }
        if older {
            if self.cursor == 0 {
                return false;
            }
            if self.cursor == self.history.len() {
                self.draft = Some(self.text());
            }
            self.cursor -= 1;
        } else {
            if self.cursor >= self.history.len() {
                return false;
            }
            self.cursor += 1;
        }
        let text = if self.cursor == self.history.len() {
            self.draft.take().unwrap_or_default()
        } else {
            self.history[self.cursor].clone()
        };
        self.set_text(&text);
        true
    }

    pub fn on_key(&mut self, key: KeyEvent) -> EditorOutcome {
        let m = key.modifiers;
        let plain = m.difference(KeyModifiers::SHIFT).is_empty();
        match key.code {
            KeyCode::Enter if m.contains(KeyModifiers::ALT) || m.contains(KeyModifiers::SHIFT) => {
                self.area.insert_newline();
                EditorOutcome::Edited
            }
            KeyCode::Char('j') if m == KeyModifiers::CONTROL => {
                self.area.insert_newline();
                EditorOutcome::Edited
            }
            KeyCode::Enter if m.is_empty() => {
                if self.text().trim().is_empty() {
                    return EditorOutcome::Edited;
                }
                self.completions.clear();
                EditorOutcome::Submit(self.take())
            }
            KeyCode::Tab if m.is_empty() => EditorOutcome::Complete,
            KeyCode::Up if plain && self.area.cursor().0 == 0 => {
                if self.recall(true) {
                    self.area.move_cursor(CursorMove::Top);
                    self.area.move_cursor(CursorMove::End);
                }
                EditorOutcome::Edited
            }
            KeyCode::Down if plain && self.area.cursor().0 + 1 >= self.area.lines().len() => {
                self.recall(false);
                EditorOutcome::Edited
            }
            _ => {
                self.completions.clear();
                if self.area.input(key) {
                    EditorOutcome::Edited
                } else {
                    EditorOutcome::Ignored
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    fn typed(e: &mut InputEditor, s: &str) {
        for c in s.chars() {
            e.on_key(key(KeyCode::Char(c), KeyModifiers::NONE));
        }
    }

    #[test]
    fn enter_submits_and_newline_keys_insert_newlines() {
        let mut e = InputEditor::new(&Theme::default(), vec![]);
        typed(&mut e, "one");
        e.on_key(key(KeyCode::Enter, KeyModifiers::ALT));
        typed(&mut e, "two");
        e.on_key(key(KeyCode::Enter, KeyModifiers::SHIFT));
        typed(&mut e, "three");
        e.on_key(key(KeyCode::Char('j'), KeyModifiers::CONTROL));
        typed(&mut e, "four");
        assert_eq!(
            e.on_key(key(KeyCode::Enter, KeyModifiers::NONE)),
            EditorOutcome::Submit("one\ntwo\nthree\nfour".into())
        );
        assert!(e.is_empty());
        // Blank input does not submit.
        typed(&mut e, "  ");
        assert_eq!(e.on_key(key(KeyCode::Enter, KeyModifiers::NONE)), EditorOutcome::Edited);
    }

    #[test]
    fn up_and_down_recall_history_at_the_edges_and_keep_the_draft() {
        let mut e = InputEditor::new(&Theme::default(), vec!["first".into(), "second".into()]);
        typed(&mut e, "draft");
        e.on_key(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(e.text(), "second");
        e.on_key(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(e.text(), "first");
        e.on_key(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(e.text(), "first", "stops at the oldest");
        e.on_key(key(KeyCode::Down, KeyModifiers::NONE));
        e.on_key(key(KeyCode::Down, KeyModifiers::NONE));
        assert_eq!(e.text(), "draft", "the draft comes back");
        // In a multi-line text, Up moves the cursor first.
        e.set_text("a\nb");
        e.on_key(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(e.text(), "a\nb");
        assert_eq!(e.area().cursor().0, 0);
    }

    #[test]
    fn paste_keeps_text_verbatim_and_a_large_paste_is_one_insert() {
        let mut e = InputEditor::new(&Theme::default(), vec![]);
        e.paste("line1\r\nline2\rline3");
        assert_eq!(e.text(), "line1\nline2\nline3");
        let big: String = (0..20_000)
            .map(|i| format!("row {i:05} of a large paste: fifty-odd bytes of text per row\n"))
            .collect();
        assert!(big.len() > 1_000_000);
        e.clear();
        e.paste(&big);
        assert_eq!(e.text(), big);
        assert_eq!(e.line_count(), 20_001);
    }

    #[test]
    fn history_skips_duplicates_and_blank_entries() {
        let mut e = InputEditor::new(&Theme::default(), vec![]);
        for s in ["a", "a", " ", "b"] {
            e.set_text(s);
            e.take();
        }
        assert_eq!(e.history(), &["a".to_string(), "b".to_string()]);
    }
}
