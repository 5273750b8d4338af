//! Wrapping of styled text into display lines of a fixed column width.
//!
//! Owns: measuring text the way ratatui draws it ([`str_width`],
//! [`spans_width`]), word wrapping ([`wrap_spans`]) and hard wrapping by
//! grapheme for code ([`wrap_spans_hard`]).
//!
//! Rules shared by both wrappers:
//! - widths come from `unicode-width` per grapheme cluster (wide CJK/emoji = 2
//!   columns, combining marks = 0); graphemes holding control characters count
//!   0 columns because ratatui skips them when drawing;
//! - every display line starts with an indent (`first_indent` on the first
//!   line, `rest_indent` on continuation lines) that counts against `width`;
//! - styles are kept: a span cut by a break continues on the next line with
//!   the same style; adjacent pieces of one span are re-joined;
//! - every display line holds at least one grapheme, so a width narrower than
//!   the indent plus one grapheme overflows rather than looping; `width == 0`
//!   means "do not wrap" (one display line).
//!
//! Cost: one pass over the text; ASCII spans are scanned by byte, and an
//! allocation happens per output span piece, never per character. A line that
//! already fits is returned without scanning for breaks.

use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Display width of `s` as ratatui draws it.
pub fn str_width(s: &str) -> usize {
    let b = s.as_bytes();
    if b.iter().all(|&c| (0x20..0x7f).contains(&c)) {
        return b.len();
    }
    if s.is_ascii() {
        return b.iter().filter(|c| !c.is_ascii_control()).count();
    }
    s.graphemes(true).map(grapheme_width).sum()
}

/// Display width of a run of spans.
pub fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| str_width(&s.content)).sum()
}

#[inline]
fn grapheme_width(g: &str) -> usize {
    if g.chars().any(char::is_control) { 0 } else { g.width() }
}

/// A break opportunity: ASCII whitespace and Unicode spaces, except the
/// no-break ones.
#[inline]
fn is_break_space(g: &str) -> bool {
    g.chars()
        .all(|c| c.is_whitespace() && !matches!(c, '\u{a0}' | '\u{2007}' | '\u{202f}' | '\u{feff}'))
}

/// Word-wrap one logical line of styled `spans` into display lines at most
/// `width` columns wide (indent included).
///
/// Breaks at whitespace; whitespace at a break is dropped, leading whitespace
/// of the first line is kept. Wide graphemes (CJK) are break opportunities on
/// both sides. A word wider than a whole line starts on a fresh line and is
/// cut by grapheme. Always returns at least one line (an empty input gives
/// just `first_indent`).
pub fn wrap_spans(
    spans: &[Span<'static>],
    width: u16,
    first_indent: Vec<Span<'static>>,
    rest_indent: Vec<Span<'static>>,
) -> Vec<Line<'static>> {
    wrap(spans, width, first_indent, rest_indent, Mode::Words)
}

/// Hard-wrap one logical line by grapheme: fill each display line to `width`
/// columns, keeping every character including whitespace (for code). Same
/// indent rules as [`wrap_spans`].
pub fn wrap_spans_hard(
    spans: &[Span<'static>],
    width: u16,
    first_indent: Vec<Span<'static>>,
    rest_indent: Vec<Span<'static>>,
) -> Vec<Line<'static>> {
    wrap(spans, width, first_indent, rest_indent, Mode::Hard)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Words,
    Hard,
}

fn wrap(
    spans: &[Span<'static>],
    width: u16,
    first_indent: Vec<Span<'static>>,
    rest_indent: Vec<Span<'static>>,
    mode: Mode,
) -> Vec<Line<'static>> {
    let first_w = spans_width(&first_indent);
    if width == 0 || first_w + spans_width(spans) <= usize::from(width) {
        let mut line = first_indent;
        line.extend(spans.iter().filter(|s| !s.content.is_empty()).cloned());
        return vec![Line::from(line)];
    }
    let mut w = Wrapper {
        spans,
        width: usize::from(width),
        rest_w: spans_width(&rest_indent),
        rest: rest_indent,
        out: Vec::new(),
        indent: first_indent,
        cur: Vec::new(),
        cur_w: first_w,
        has_content: false,
        first_line: true,
        word: Vec::new(),
        word_w: 0,
        ws: Vec::new(),
        ws_w: 0,
    };
    match mode {
        Mode::Words => {
            for (i, s) in spans.iter().enumerate() {
                w.scan_span(i, &s.content);
            }
            w.commit_word();
        }
        Mode::Hard => {
            for (i, s) in spans.iter().enumerate() {
                push_piece(
                    &mut w.word,
                    Piece {
                        span: i,
                        start: 0,
                        end: s.content.len(),
                    },
                );
            }
            w.break_word();
        }
    }
    w.emit_line();
    w.out
}

/// A byte range of one input span.
#[derive(Clone, Copy)]
struct Piece {
    span: usize,
    start: usize,
    end: usize,
}

fn push_piece(v: &mut Vec<Piece>, p: Piece) {
    if p.start == p.end {
        return;
    }
    if let Some(last) = v.last_mut()
        && last.span == p.span
        && last.end == p.start
    {
        last.end = p.end;
        return;
    }
    v.push(p);
}

struct Wrapper<'s> {
    spans: &'s [Span<'static>],
    width: usize,
    rest: Vec<Span<'static>>,
    rest_w: usize,
    out: Vec<Line<'static>>,
    /// Indent of the line being built.
    indent: Vec<Span<'static>>,
    /// Content of the line being built.
    cur: Vec<Piece>,
    /// Width of the line being built, indent included.
    cur_w: usize,
    has_content: bool,
    first_line: bool,
    /// The word being read, not yet placed.
    word: Vec<Piece>,
    word_w: usize,
    /// Whitespace between the placed text and `word`.
    ws: Vec<Piece>,
    ws_w: usize,
}

impl Wrapper<'_> {
    fn scan_span(&mut self, i: usize, s: &str) {
        let b = s.as_bytes();
        if s.is_ascii() {
            self.scan_ascii(i, b, 0, b.len());
            return;
        }
        // ASCII runs take the fast path; grapheme segmentation only runs
        // around non-ASCII bytes. The ASCII character just before non-ASCII
        // text goes with it, as a combining mark may attach to it.
        let mut at = 0;
        while at < b.len() {
            let mut end = at;
            while end < b.len() && b[end] < 0x80 {
                end += 1;
            }
            let ascii_end = if end < b.len() && end > at { end - 1 } else { end };
            if ascii_end > at {
                self.scan_ascii(i, b, at, ascii_end);
            }
            // The non-ASCII region ends at an ASCII byte followed by ASCII
            // (or the end): both are char boundaries and cannot join a cluster
            // with what comes before except through a combining mark, which
            // is non-ASCII.
            let mut k = end;
            while k < b.len() && !(b[k] < 0x80 && (k + 1 == b.len() || b[k + 1] < 0x80)) {
                k += 1;
            }
            if k > ascii_end {
                self.scan_graphemes(i, s, ascii_end, k);
            }
            at = k;
        }
    }

    /// An ASCII byte range `[from, to)` of span `i`.
    fn scan_ascii(&mut self, i: usize, b: &[u8], from: usize, to: usize) {
        let mut at = from;
        while at < to {
            let space = b[at] == b' ' || b[at] == b'\t';
            let mut end = at + 1;
            while end < to && (b[end] == b' ' || b[end] == b'\t') == space {
                end += 1;
            }
            let run = &b[at..end];
            let w = if run.iter().all(|c| !c.is_ascii_control()) {
                run.len()
            } else {
                run.iter().filter(|c| !c.is_ascii_control()).count()
            };
            let p = Piece {
                span: i,
                start: at,
                end,
            };
            if space {
                self.space(p, w)
            } else {
                self.word_part(p, w)
            }
            at = end;
        }
    }

    /// The byte range `[from, to)` of span `i`, grapheme by grapheme.
    fn scan_graphemes(&mut self, i: usize, s: &str, from: usize, to: usize) {
        // Narrow run not yet handed over: (start, end, width).
        let mut run: Option<(usize, usize, usize)> = None;
        for (rel, g) in s[from..to].grapheme_indices(true) {
            let at = from + rel;
            let end = at + g.len();
            if is_break_space(g) {
                if let Some((a, e, w)) = run.take() {
                    self.word_part(
                        Piece {
                            span: i,
                            start: a,
                            end: e,
                        },
                        w,
                    );
                }
                self.space(
                    Piece {
                        span: i,
                        start: at,
                        end,
                    },
                    grapheme_width(g),
                );
                continue;
            }
            let gw = grapheme_width(g);
            if gw >= 2 {
                if let Some((a, e, w)) = run.take() {
                    self.word_part(
                        Piece {
                            span: i,
                            start: a,
                            end: e,
                        },
                        w,
                    );
                }
                self.commit_word();
                self.word_part(
                    Piece {
                        span: i,
                        start: at,
                        end,
                    },
                    gw,
                );
                self.commit_word();
                continue;
            }
            run = Some(match run {
                Some((a, _, w)) => (a, end, w + gw),
                None => (at, end, gw),
            });
        }
        if let Some((a, e, w)) = run {
            self.word_part(
                Piece {
                    span: i,
                    start: a,
                    end: e,
                },
                w,
            );
        }
    }

    fn space(&mut self, p: Piece, w: usize) {
        self.commit_word();
        push_piece(&mut self.ws, p);
        self.ws_w += w;
    }

    fn word_part(&mut self, p: Piece, w: usize) {
        push_piece(&mut self.word, p);
        self.word_w += w;
    }

    /// Place the pending word (and the whitespace before it).
    fn commit_word(&mut self) {
        if self.word.is_empty() {
            return;
        }
        if self.cur_w + self.ws_w + self.word_w <= self.width {
            self.place_ws();
            self.place_word();
        } else if self.has_content {
            self.emit_line();
            if self.cur_w + self.word_w <= self.width {
                self.place_word();
            } else {
                self.break_word();
            }
        } else {
            if self.first_line && self.cur_w + self.ws_w < self.width {
                self.place_ws();
            }
            self.break_word();
        }
        self.ws.clear();
        self.ws_w = 0;
    }

    fn place_ws(&mut self) {
        if self.has_content || self.first_line {
            for i in 0..self.ws.len() {
                let p = self.ws[i];
                push_piece(&mut self.cur, p);
            }
            self.cur_w += self.ws_w;
        }
        self.ws.clear();
        self.ws_w = 0;
    }

    fn place_word(&mut self) {
        for i in 0..self.word.len() {
            let p = self.word[i];
            push_piece(&mut self.cur, p);
        }
        self.cur_w += self.word_w;
        self.has_content = true;
        self.word.clear();
        self.word_w = 0;
    }

    /// Place the pending word grapheme by grapheme, starting on the current
    /// line and breaking wherever a line is full.
    fn break_word(&mut self) {
        let word = std::mem::take(&mut self.word);
        for p in &word {
            let s: &str = &self.spans[p.span].content;
            let mut start = p.start;
            while start < p.end {
                let room = self.width.saturating_sub(self.cur_w);
                let (end, w) = fit(&s[start..p.end], room, !self.has_content);
                if end == 0 {
                    self.emit_line();
                    continue;
                }
                push_piece(
                    &mut self.cur,
                    Piece {
                        span: p.span,
                        start,
                        end: start + end,
                    },
                );
                self.cur_w += w;
                self.has_content = true;
                start += end;
                if start < p.end {
                    self.emit_line();
                }
            }
        }
        self.word = word;
        self.word.clear();
        self.word_w = 0;
    }

    fn emit_line(&mut self) {
        let indent = std::mem::replace(&mut self.indent, self.rest.clone());
        let mut line = indent;
        line.reserve(self.cur.len());
        for p in &self.cur {
            let span = &self.spans[p.span];
            if p.start == 0 && p.end == span.content.len() {
                line.push(span.clone());
            } else {
                line.push(Span::styled(span.content[p.start..p.end].to_string(), span.style));
            }
        }
        self.out.push(Line::from(line));
        self.cur.clear();
        self.cur_w = self.rest_w;
        self.has_content = false;
        self.first_line = false;
    }
}

/// The longest prefix of `s` at most `room` columns wide: (bytes, columns).
/// With `force`, at least one grapheme even if it does not fit.
fn fit(s: &str, room: usize, force: bool) -> (usize, usize) {
    let b = s.as_bytes();
    if b.iter().all(|&c| (0x20..0x7f).contains(&c)) {
        let n = b.len().min(room);
        if n == 0 && force && !b.is_empty() {
            return (1, 1);
        }
        return (n, n);
    }
    let mut used = 0;
    let mut w = 0;
    for g in s.graphemes(true) {
        let gw = grapheme_width(g);
        if w + gw > room {
            if used == 0 && force {
                return (g.len(), gw);
            }
            break;
        }
        used += g.len();
        w += gw;
    }
    (used, w)
}

#[cfg(test)]
#[path = "wrap_tests.rs"]
mod tests;
