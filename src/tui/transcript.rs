//! The transcript: what the conversation looks like on screen. Owns the
//! entries, their cached wrapped lines (per width), the total height and the
//! scroll position. A frame asks only for the visible lines, so drawing costs
//! the viewport, not the transcript.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

mod blocks;

pub use blocks::CompareEntry;

use super::highlight::Highlighter;
use super::markdown::StreamingMarkdown;
use super::theme::Theme;
use super::wrap::wrap_spans;
use crate::conversation::{Approval, ToolCall};
use crate::orchestration::TurnRef;
use crate::stats::RequestStats;
use crate::util::sanitize::terminal_safe;

/// How an answer stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerState {
    Waiting,
    Streaming,
    Done,
    Cancelled,
    Failed(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

/// An assistant answer (possibly still streaming).
pub struct Answer {
    pub turn: TurnRef,
    /// Who answered: model and endpoint, or an arena participant.
    pub label: String,
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    pub state: AnswerState,
    pub stats: Option<RequestStats>,
    /// A retry notice shown while waiting.
    pub retry_note: Option<String>,
    /// Arena seat: its colour.
    pub seat: Option<u8>,
    /// Live figures while streaming (compare panes): TTFT, tok/s, tokens.
    pub live: Option<String>,
    /// The user's pick on a compare answer (`✓ chosen`, …).
    pub mark: Option<String>,
    md: StreamingMarkdown,
}

impl Answer {
    pub fn new(turn: TurnRef, label: String) -> Self {
        Answer {
            turn,
            label,
            text: String::new(),
            reasoning: String::new(),
            tool_calls: Vec::new(),
            state: AnswerState::Waiting,
            stats: None,
            retry_note: None,
            seat: None,
            live: None,
            mark: None,
            md: StreamingMarkdown::default(),
        }
    }
}

/// A tool call in the transcript: what ran, how it was approved, what came back.
pub struct ToolBlock {
    pub turn: TurnRef,
    pub call_id: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub approval: Approval,
    /// Live output while running.
    pub output: String,
    /// `None` while running; then (ok, result text, ms).
    pub done: Option<(bool, String, u64)>,
    /// The model's arguments when the user corrected them.
    pub original: Option<serde_json::Value>,
}

/// Lines of a tool's live output / result shown in the transcript.
const TOOL_LINES: usize = 12;

pub enum EntryKind {
    User {
        text: String,
        failed: bool,
    },
    Assistant(Box<Answer>),
    Notice {
        text: String,
        level: NoticeLevel,
    },
    Tool(Box<ToolBlock>),
    /// The judge's verdict on an arena.
    Verdict(Box<crate::verdict::Verdict>),
    /// Answers to one prompt side by side.
    Compare(Box<CompareEntry>),
}

pub struct Entry {
    pub kind: EntryKind,
    /// Lines before the body (labels, reasoning) and after it (markers, stats).
    head: Vec<Line<'static>>,
    tail: Vec<Line<'static>>,
    /// Body lines for non-markdown entries.
    body: Vec<Line<'static>>,
    /// Rendered for this key; `None` = stale.
    key: Option<RenderKey>,
    height: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RenderKey {
    width: u16,
    show_reasoning: bool,
    highlight_ready: bool,
}

/// Rendering inputs shared by all entries.
pub struct RenderCx<'a> {
    pub theme: &'a Theme,
    pub highlighter: Option<&'a Highlighter>,
    pub show_reasoning: bool,
    pub width: u16,
}

impl RenderCx<'_> {
    fn key(&self) -> RenderKey {
        RenderKey {
            width: self.width,
            show_reasoning: self.show_reasoning,
            highlight_ready: self.highlighter.is_some_and(Highlighter::ready),
        }
    }
}

fn plain_lines(text: &str, style: Style, width: u16, indent: &str) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let text = if text.contains('\t') {
        text.replace('\t', "    ")
    } else {
        text.to_string()
    };
    for raw in terminal_safe(&text).split('\n') {
        let spans = vec![Span::styled(raw.to_string(), style)];
        let ind = || vec![Span::styled(indent.to_string(), style)];
        out.extend(wrap_spans(&spans, width, ind(), ind()));
    }
    out
}

/// One-line JSON, shortened for display.
fn compact_json(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 400 {
        s.chars().take(400).collect::<String>() + "…"
    } else {
        s
    }
}

fn fmt_duration_ms(ms: u64) -> String {
    if ms >= 10_000 {
        format!("{:.0}s", ms as f64 / 1000.0)
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

impl Entry {
    pub fn new(kind: EntryKind) -> Self {
        Entry {
            kind,
            head: Vec::new(),
            tail: Vec::new(),
            body: Vec::new(),
            key: None,
            height: 0,
        }
    }

    /// Mark for re-rendering (content changed).
    pub fn touch(&mut self) {
        self.key = None;
    }

    fn render(&mut self, cx: &RenderCx) {
        let key = cx.key();
        let t = cx.theme;
        let w = cx.width.max(8);
        self.head.clear();
        self.tail.clear();
        self.body.clear();
        match &mut self.kind {
            EntryKind::User { text, failed } => {
                let mut label = vec![Span::styled("▌ You", t.user_label)];
                if *failed {
                    label.push(Span::styled("  ✗ not answered — /retry to send again", t.error));
                }
                self.head.push(Line::from(label));
                self.body = plain_lines(text, t.user_text, w, "  ");
            }
            EntryKind::Notice { text, level } => {
                let style = match level {
                    NoticeLevel::Info => t.notice,
                    NoticeLevel::Warning => t.warning,
                    NoticeLevel::Error => t.error,
                };
                self.body = plain_lines(text, style, w, "  ");
            }
            EntryKind::Tool(b) => {
                let (mark, style) = match &b.done {
                    None => ("⚙", t.tool),
                    Some((true, _, _)) => ("✓", t.tool_ok),
                    Some((false, _, _)) => ("✗", t.tool_err),
                };
                let how = match b.approval {
                    Approval::Auto => "",
                    Approval::Approved => "  approved",
                    Approval::ApprovedForSession => "  approved for the session",
                    Approval::Edited => "  corrected by you",
                    Approval::Rejected => "  rejected",
                    Approval::Denied => "  denied",
                };
                let mut head = vec![
                    Span::styled(format!("  {mark} {}", terminal_safe(&b.tool)), style),
                    Span::styled(how, t.dim),
                ];
                if let Some((_, _, ms)) = &b.done {
                    head.push(Span::styled(format!("  {}", fmt_duration_ms(*ms)), t.dim));
                }
                self.head.push(Line::from(head));
                self.head
                    .extend(plain_lines(&compact_json(&b.arguments), t.dim, w, "    "));
                if let Some(orig) = &b.original {
                    self.head.extend(plain_lines(
                        &format!("(the model asked: {})", compact_json(orig)),
                        t.dim,
                        w,
                        "    ",
                    ));
                }
                let text = match &b.done {
                    None => b.output.as_str(),
                    Some((_, result, _)) => result.as_str(),
                };
                let lines: Vec<&str> = text.lines().collect();
                let skip = lines.len().saturating_sub(TOOL_LINES);
                let mut shown = String::new();
                if skip > 0 {
                    shown.push_str(&format!("… {skip} earlier lines\n"));
                }
                shown.push_str(&lines[skip..].join("\n"));
                let style = match &b.done {
                    Some((false, _, _)) => t.tool_err,
                    Some((true, _, _)) | None => t.code_block,
                };
                if !shown.trim().is_empty() {
                    self.body = plain_lines(&shown, style, w, "    │ ");
                }
            }
            EntryKind::Assistant(a) => {
                let (head, tail) = blocks::answer_frame(a, cx, w);
                self.head = head;
                self.tail = tail;
            }
            EntryKind::Verdict(v) => self.body = blocks::verdict_lines(v, t, w),
            EntryKind::Compare(c) => self.body = blocks::columns(c, cx, w),
        }
        self.key = Some(key);
        self.height = self.head.len() + self.body_len(cx) + self.tail.len() + 1;
    }

    fn body_len(&mut self, cx: &RenderCx) -> usize {
        match &mut self.kind {
            EntryKind::Assistant(a) => {
                a.md.lines(&a.text, cx.width.max(8).saturating_sub(2), cx.theme, cx.highlighter)
                    .len()
            }
            EntryKind::User { .. }
            | EntryKind::Notice { .. }
            | EntryKind::Tool(_)
            | EntryKind::Verdict(_)
            | EntryKind::Compare(_) => self.body.len(),
        }
    }

    /// Bring the cached lines up to date; returns the height (lines, incl. a blank separator).
    pub fn ensure(&mut self, cx: &RenderCx) -> usize {
        if self.key != Some(cx.key()) {
            self.render(cx);
        }
        self.height
    }

    /// Append lines `[from, to)` of this entry to `out`.
    fn lines_into(&self, from: usize, to: usize, out: &mut Vec<Line<'static>>) {
        let head = self.head.len();
        let indent = Span::raw("  ");
        for i in from..to {
            if i < head {
                out.push(self.head[i].clone());
                continue;
            }
            let j = i - head;
            let body: &[Line<'static>] = match &self.kind {
                EntryKind::Assistant(a) => a.md.cached_lines(),
                EntryKind::User { .. }
                | EntryKind::Notice { .. }
                | EntryKind::Tool(_)
                | EntryKind::Verdict(_)
                | EntryKind::Compare(_) => &self.body,
            };
            if j < body.len() {
                let mut l = body[j].clone();
                if matches!(self.kind, EntryKind::Assistant(_)) {
                    l.spans.insert(0, indent.clone());
                }
                out.push(l);
                continue;
            }
            let k = j - body.len();
            if k < self.tail.len() {
                out.push(self.tail[k].clone());
            } else {
                out.push(Line::default()); // separator
            }
        }
    }
}

/// Entries plus layout and scroll state.
#[derive(Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    width: u16,
    total: usize,
    /// Lines scrolled up from the bottom; 0 follows new output.
    scroll_from_bottom: usize,
    /// New output arrived while scrolled up.
    pub unseen: bool,
    viewport: usize,
    /// An entry to bring to the top once heights are known.
    scroll_target: Option<usize>,
}

impl Transcript {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn push(&mut self, kind: EntryKind) -> usize {
        self.entries.push(Entry::new(kind));
        self.entries.len() - 1
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.total = 0;
        self.scroll_from_bottom = 0;
        self.unseen = false;
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut Entry> {
        self.entries.get_mut(i)
    }

    /// The answer of a turn (also inside a compare entry), most recent first.
    pub fn answer_mut(&mut self, turn: TurnRef) -> Option<&mut Answer> {
        self.entries.iter_mut().rev().find_map(|e| match &mut e.kind {
            EntryKind::Assistant(a) if a.turn == turn => Some(a.as_mut()),
            EntryKind::Compare(c) => c.answers.iter_mut().find(|a| a.turn == turn),
            _ => None,
        })
    }

    /// Mark the answer of `turn` changed.
    pub fn touch_answer(&mut self, turn: TurnRef) {
        if let Some(e) = self.entries.iter_mut().rev().find(|e| match &e.kind {
            EntryKind::Assistant(a) => a.turn == turn,
            EntryKind::Compare(c) => c.answers.iter().any(|a| a.turn == turn),
            _ => false,
        }) {
            e.touch();
        }
    }

    /// The entry of a tool call, most recent first.
    pub fn tool_mut(&mut self, turn: TurnRef, call_id: &str) -> Option<&mut Entry> {
        self.entries
            .iter_mut()
            .rev()
            .find(|e| matches!(&e.kind, EntryKind::Tool(b) if b.call_id == call_id && b.turn == turn))
    }

    /// Index of the most recent user entry.
    pub fn last_user_index(&self) -> Option<usize> {
        self.entries
            .iter()
            .rposition(|e| matches!(e.kind, EntryKind::User { .. }))
    }

    /// Mark the user entry at `i` as (not) answered.
    pub fn set_user_failed(&mut self, i: usize, failed: bool) {
        if let Some(e) = self.entries.get_mut(i)
            && let EntryKind::User { failed: f, .. } = &mut e.kind
        {
            *f = failed;
            e.touch();
        }
    }

    /// Bring heights up to date for `width` and a `viewport` of lines.
    /// Cost: entries whose content changed, or all entries after a resize.
    pub fn layout(&mut self, cx: &RenderCx, viewport: usize) {
        if self.scroll_from_bottom > 0 && self.viewport != viewport {
            // Scrolled up: keep the top line where it is when the viewport
            // changes height (e.g. the hint row appears).
            self.scroll_from_bottom = (self.scroll_from_bottom + self.viewport).saturating_sub(viewport);
        }
        self.viewport = viewport;
        let mut total = 0;
        let resized = self.width != cx.width;
        self.width = cx.width;
        for e in &mut self.entries {
            let before = e.height;
            let stale = resized || e.key.is_none() || e.key != Some(cx.key());
            let h = if stale { e.ensure(cx) } else { before };
            total += h;
        }
        let grew = total.saturating_sub(self.total);
        if self.scroll_from_bottom > 0 && grew > 0 && !resized {
            // Keep the view still while new output arrives below it.
            self.scroll_from_bottom += grew;
            self.unseen = true;
        }
        self.total = total;
        if let Some(i) = self.scroll_target.take() {
            let top: usize = self.entries.iter().take(i).map(|e| e.height).sum();
            self.scroll_from_bottom = total.saturating_sub(top + viewport);
        }
        self.clamp();
    }

    fn max_scroll(&self) -> usize {
        self.total.saturating_sub(self.viewport)
    }

    fn clamp(&mut self) {
        self.scroll_from_bottom = self.scroll_from_bottom.min(self.max_scroll());
        if self.scroll_from_bottom == 0 {
            self.unseen = false;
        }
    }

    /// Rows of the last layout.
    pub fn viewport(&self) -> usize {
        self.viewport
    }

    pub fn total_lines(&self) -> usize {
        self.total
    }

    pub fn scroll_from_bottom(&self) -> usize {
        self.scroll_from_bottom
    }

    pub fn is_following(&self) -> bool {
        self.scroll_from_bottom == 0
    }

    pub fn scroll_up(&mut self, n: usize) {
        self.scroll_from_bottom = (self.scroll_from_bottom + n).min(self.max_scroll());
    }

    pub fn scroll_down(&mut self, n: usize) {
        self.scroll_from_bottom = self.scroll_from_bottom.saturating_sub(n);
        self.clamp();
    }

    pub fn scroll_top(&mut self) {
        self.scroll_from_bottom = self.max_scroll();
    }

    pub fn scroll_bottom(&mut self) {
        self.scroll_from_bottom = 0;
        self.unseen = false;
        self.scroll_target = None;
    }

    /// Show entry `i` at the top of the view (applied at the next layout).
    pub fn scroll_to_entry(&mut self, i: usize) {
        self.scroll_target = Some(i);
    }

    /// The lines of the viewport, top to bottom (after `layout`).
    pub fn visible_lines(&self) -> Vec<Line<'static>> {
        let rows = self.viewport;
        // Window [start, end) in transcript line numbers.
        let end = self.total.saturating_sub(self.scroll_from_bottom);
        let start = end.saturating_sub(rows);
        let mut out = Vec::with_capacity(rows);
        // Walk from whichever end is nearer.
        let mut spans: Vec<(usize, usize, usize)> = Vec::new(); // (entry, from, to)
        if self.total - end <= start {
            let mut bottom = self.total;
            for (i, e) in self.entries.iter().enumerate().rev() {
                let top = bottom - e.height;
                if top < end && bottom > start {
                    spans.push((i, start.max(top) - top, end.min(bottom) - top));
                }
                if top <= start {
                    break;
                }
                bottom = top;
            }
            spans.reverse();
        } else {
            let mut top = 0;
            for (i, e) in self.entries.iter().enumerate() {
                let bottom = top + e.height;
                if top < end && bottom > start {
                    spans.push((i, start.max(top) - top, end.min(bottom) - top));
                }
                if bottom >= end {
                    break;
                }
                top = bottom;
            }
        }
        for (i, from, to) in spans {
            self.entries[i].lines_into(from, to, &mut out);
        }
        out
    }

    /// Plain text of the whole transcript (for /copy all).
    pub fn plain_text(&self) -> String {
        let mut s = String::new();
        for e in &self.entries {
            match &e.kind {
                EntryKind::User { text, .. } => s.push_str(&format!("You:\n{text}\n\n")),
                EntryKind::Assistant(a) => s.push_str(&format!("{}:\n{}\n\n", a.label, a.text)),
                EntryKind::Notice { text, .. } => s.push_str(&format!("{text}\n\n")),
                EntryKind::Tool(b) => {
                    let result = b.done.as_ref().map_or(b.output.as_str(), |d| d.1.as_str());
                    s.push_str(&format!(
                        "[tool {} {}]\n{result}\n\n",
                        b.tool,
                        compact_json(&b.arguments)
                    ));
                }
                EntryKind::Verdict(v) => s.push_str(&format!("Verdict ({}): {}\n\n", v.judge, v.summary())),
                EntryKind::Compare(c) => {
                    for a in &c.answers {
                        let mark = a.mark.as_deref().map(|m| format!(" [{m}]")).unwrap_or_default();
                        s.push_str(&format!("{}{mark}:\n{}\n\n", a.label, a.text));
                    }
                }
            }
        }
        s
    }
}
