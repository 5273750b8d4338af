//! Splits `<think>…</think>` reasoning out of streamed answer text.
//!
//! Models served without a reasoning parser put their chain of thought in the
//! text, wrapped in `<think>` tags at the very start. Tags may be split across
//! chunks; the splitter holds back only what could still be part of a tag.

use std::collections::VecDeque;

use super::StreamEvent;
use super::transport::{push_reasoning, push_text};

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing but whitespace seen yet: an opening tag may still come.
    Start,
    Thinking,
    /// Just closed: drop whitespace before the answer.
    AfterThink,
    Text,
}

/// What one piece of text turned into.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    pub reasoning: String,
    pub text: String,
}

#[derive(Debug)]
pub struct ThinkSplitter {
    state: State,
    pending: String,
}

impl Default for ThinkSplitter {
    fn default() -> Self {
        ThinkSplitter {
            state: State::Start,
            pending: String::new(),
        }
    }
}

/// Length of the longest suffix of `s` that is a proper prefix of `tag`.
fn partial_tag_suffix(s: &str, tag: &str) -> usize {
    (1..tag.len().min(s.len() + 1))
        .rev()
        .find(|&n| s.is_char_boundary(s.len() - n) && tag.starts_with(&s[s.len() - n..]))
        .unwrap_or(0)
}

impl ThinkSplitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// True once plain text flows through unexamined.
    pub fn passthrough(&self) -> bool {
        self.state == State::Text
    }

    /// Feed a delta; returns the reasoning and text it completes.
    pub fn push(&mut self, delta: &str) -> Split {
        let mut out = Split::default();
        if self.state == State::Text {
            out.text.push_str(delta);
            return out;
        }
        self.pending.push_str(delta);
        loop {
            match self.state {
                State::Start => {
                    let trimmed = self.pending.trim_start();
                    if let Some(rest) = trimmed.strip_prefix(OPEN) {
                        self.pending = rest.to_string();
                        self.state = State::Thinking;
                    } else if OPEN.starts_with(trimmed) {
                        return out; // could still become "<think>"
                    } else {
                        self.state = State::Text;
                        out.text.push_str(&std::mem::take(&mut self.pending));
                        return out;
                    }
                }
                State::Thinking => {
                    if let Some(i) = self.pending.find(CLOSE) {
                        out.reasoning.push_str(&self.pending[..i]);
                        self.pending = self.pending[i + CLOSE.len()..].to_string();
                        self.state = State::AfterThink;
                    } else {
                        let keep = partial_tag_suffix(&self.pending, CLOSE);
                        let emit = self.pending.len() - keep;
                        out.reasoning.push_str(&self.pending[..emit]);
                        self.pending.drain(..emit);
                        return out;
                    }
                }
                State::AfterThink => {
                    let t = self.pending.trim_start();
                    if t.is_empty() {
                        self.pending.clear();
                        return out;
                    }
                    out.text.push_str(t);
                    self.pending.clear();
                    self.state = State::Text;
                    return out;
                }
                State::Text => {
                    out.text.push_str(&std::mem::take(&mut self.pending));
                    return out;
                }
            }
        }
    }

    /// Feed answer text and queue the reasoning and text it completes.
    pub fn push_into(&mut self, delta: &str, out: &mut VecDeque<StreamEvent>) {
        if delta.is_empty() {
            return;
        }
        if self.passthrough() {
            push_text(out, delta);
            return;
        }
        let s = self.push(delta);
        push_reasoning(out, &s.reasoning);
        push_text(out, &s.text);
    }

    /// End of stream: queue whatever was held back.
    pub fn finish_into(&mut self, out: &mut VecDeque<StreamEvent>) {
        let s = self.finish();
        push_reasoning(out, &s.reasoning);
        push_text(out, &s.text);
    }

    /// End of stream: release anything held back.
    pub fn finish(&mut self) -> Split {
        let rest = std::mem::take(&mut self.pending);
        let mut out = Split::default();
        match self.state {
            State::Thinking => out.reasoning = rest,
            State::Start | State::Text => out.text = rest,
            State::AfterThink => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&str]) -> (String, String) {
        let mut s = ThinkSplitter::new();
        let (mut r, mut t) = (String::new(), String::new());
        for c in chunks {
            let o = s.push(c);
            r += &o.reasoning;
            t += &o.text;
        }
        let o = s.finish();
        (r + &o.reasoning, t + &o.text)
    }

    #[test]
    fn think_block_at_start_is_reasoning_at_any_split() {
        let full = "  <think>step 1\nstep 2</think>\n\nThe answer is 4.";
        for i in 0..=full.len() {
            for j in i..=full.len() {
                if !(full.is_char_boundary(i) && full.is_char_boundary(j)) {
                    continue;
                }
                let got = run(&[&full[..i], &full[i..j], &full[j..]]);
                assert_eq!(
                    got,
                    ("step 1\nstep 2".into(), "The answer is 4.".into()),
                    "split {i},{j}"
                );
            }
        }
    }

    #[test]
    fn text_without_tags_passes_through() {
        assert_eq!(
            run(&["Hello ", "<b>world</b>"]),
            (String::new(), "Hello <b>world</b>".into())
        );
        assert_eq!(run(&["<", "th", "at is all"]), (String::new(), "<that is all".into()));
    }

    #[test]
    fn later_think_tags_are_plain_text() {
        assert_eq!(run(&["Use <think>", "tags"]), (String::new(), "Use <think>tags".into()));
    }

    #[test]
    fn unterminated_think_is_all_reasoning() {
        assert_eq!(
            run(&["<think>still going </thi"]),
            ("still going </thi".into(), String::new())
        );
    }
}
