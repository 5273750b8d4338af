//! Markdown → styled, wrapped display lines, for whole messages ([`render`])
//! and for messages that are still streaming in ([`StreamingMarkdown`]).
//!
//! Owns: splitting a message into top-level blocks, rendering each block with
//! pulldown-cmark (`render`), table layout (`table`) and the streaming cache.
//!
//! How a message is rendered:
//! - The text is cut into top-level blocks at a line that starts in column 0
//!   right after a blank line, unless a fenced code block (opened with at
//!   most 3 spaces of indent) is open. Each block is parsed and rendered on
//!   its own; non-empty blocks are joined with one blank line. Because a cut
//!   only depends on the text before it, the blocks before the last one never
//!   change as the text grows — that is what makes streaming cheap. (Cost of
//!   the split: a reference-style link whose definition is in another block
//!   stays literal; HTML comments spanning blank lines show as text anyway.)
//! - Headings keep their `#` marks; emphasis/strong/strikethrough/inline code
//!   and links (text, then the URL dimmed in parentheses) are styled from the
//!   [`Theme`]; soft breaks are spaces (CommonMark).
//! - Quotes get a `│ ` gutter, list items a marker (`•` `◦` `▪`, `1.`,
//!   `[ ]`/`[x]` for tasks) and a hanging indent.
//! - Code blocks sit between `╭─ lang` and `╰─`, each line behind a `│ `
//!   gutter, highlighted when the [`Highlighter`] is ready. Code is never
//!   word-wrapped: a long line is hard-wrapped by grapheme and each
//!   continuation row gets a `↪ ` gutter instead, so nothing is lost.
//! - HTML (blocks and inline) is shown as literal text. Every piece of model
//!   text goes through `terminal_safe` first; tabs become spaces.
//! - Unfinished input (a prefix of a message) renders sanely: an unclosed
//!   fence is a code block, an unclosed `**` stays literal text until closed,
//!   a half-written table row has empty cells, and an unfinished last line
//!   that would flicker (a closing fence being typed, a lone `-`) is held
//!   back until it is complete.

mod render;
mod table;

use ratatui::style::Style;
use ratatui::text::Line;

use super::highlight::{Highlighter, IncrementalHighlight};
use super::theme::Theme;

/// Render a whole Markdown message into lines at most `width` columns wide.
/// Code is highlighted only if `hl` is ready.
pub fn render(text: &str, width: u16, theme: &Theme, hl: Option<&Highlighter>) -> Vec<Line<'static>> {
    let hl = hl.filter(|h| h.ready());
    let mut scan = BlockScanner::default();
    scan.advance(text);
    let mut out = Vec::new();
    let mut caches = Vec::new();
    let mut start = 0;
    let mut soft = false;
    let ends = scan
        .starts
        .iter()
        .copied()
        .chain(std::iter::once(scan.visible_end(text)));
    let softs = scan.soft.iter().copied().chain(std::iter::once(false));
    for (end, next_soft) in ends.zip(softs) {
        render_joined(&text[start..end], soft, width, theme, hl, &mut caches, &mut out);
        caches.clear();
        start = end;
        soft = next_soft;
    }
    out
}

/// Render one block after the previous ones, with a blank line between
/// non-empty blocks (none after a soft cut).
fn render_joined(
    src: &str,
    soft: bool,
    width: u16,
    theme: &Theme,
    hl: Option<&Highlighter>,
    caches: &mut Vec<IncrementalHighlight>,
    out: &mut Vec<Line<'static>>,
) {
    let before = out.len();
    let gap = before > 0 && !soft;
    if gap {
        out.push(Line::default());
    }
    let mark = out.len();
    render::render_block(src, width, theme, hl, caches, out);
    if out.len() == mark && gap {
        out.pop();
    }
}

/// Finds top-level block starts, incrementally: `advance` resumes where the
/// previous call stopped, so scanning a growing text costs only the new part.
#[derive(Debug, Default, Clone)]
struct BlockScanner {
    /// Start of the first line not yet completely scanned.
    pos: usize,
    /// Open fence: (character, length).
    fence: Option<(u8, usize)>,
    /// The line before `pos` was blank.
    prev_blank: bool,
    /// Block starts after the first (which is 0), ascending.
    starts: Vec<usize>,
    /// For each start: a soft cut (inside a long paragraph or list, joined
    /// without a blank line) rather than a blank-line boundary.
    soft: Vec<bool>,
    /// The line before `pos` could end a soft-cut block (not a table row).
    prev_cuttable: bool,
}

/// A block longer than this may be cut at a line boundary, so the cost of a
/// token never grows with the length of one giant paragraph or list.
const SOFT_CUT: usize = 8 * 1024;

/// May a soft cut come before this line? Only before a line that starts a
/// plain paragraph line or a list item in column 0: never a table row, a
/// setext underline, a fence, a heading or a quote marker.
fn soft_cut_before(line: &[u8]) -> bool {
    // Up to three spaces of indent keep a line at the paragraph's level.
    let indent = line.iter().take(4).take_while(|c| **c == b' ').count();
    if indent > 3 {
        return false;
    }
    match &line[indent..] {
        // "1. item" is fine too: an ordered item keeps its number.
        [c, ..] if c.is_ascii_alphanumeric() => true,
        [b'-' | b'*' | b'+', b' ', ..] => true,
        // Four bytes always hold the whole first character.
        rest => String::from_utf8_lossy(&rest[..rest.len().min(4)])
            .chars()
            .next()
            .is_some_and(char::is_alphanumeric),
    }
}

impl BlockScanner {
    fn advance(&mut self, text: &str) {
        let b = text.as_bytes();
        while self.pos < b.len() {
            let start = self.pos;
            if self.prev_blank
                && self.fence.is_none()
                && !matches!(b[start], b' ' | b'\t' | b'\r' | b'\n')
                && self.starts.last() != Some(&start)
            {
                self.starts.push(start);
                self.soft.push(false);
            }
            let Some(nl) = memchr::memchr(b'\n', &b[start..]) else {
                break; // unfinished line: decide its fate when it is complete
            };
            let line = &b[start..start + nl];
            if !self.prev_blank
                && self.fence.is_none()
                && self.prev_cuttable
                && self.starts.last() != Some(&start)
                && start - self.starts.last().copied().unwrap_or(0) >= SOFT_CUT
                && soft_cut_before(line)
            {
                self.starts.push(start);
                self.soft.push(true);
            }
            self.prev_blank = line.iter().all(|c| matches!(c, b' ' | b'\t' | b'\r'));
            self.prev_cuttable = !line.trim_ascii_start().starts_with(b"|");
            match (self.fence, fence_of(line)) {
                (None, Some((c, n, _))) => self.fence = Some((c, n)),
                (Some((c, n)), Some((c2, n2, rest))) if c == c2 && n2 >= n && rest.trim_ascii().is_empty() => {
                    self.fence = None;
                }
                _ => {}
            }
            self.pos = start + nl + 1;
        }
    }

    /// Where the rendered part of `text` (already scanned) ends: the whole
    /// text, except an unfinished last line that would flicker — the start
    /// of a closing fence (only fence characters, inside an open fence) or a
    /// lone `-` (a list item being started, which would otherwise turn the
    /// paragraph above into a heading for a moment). Both are shown once
    /// the line grows or ends.
    fn visible_end(&self, text: &str) -> usize {
        let Some(line) = text.get(self.pos..).filter(|l| !l.is_empty()) else {
            return text.len();
        };
        let body = line.trim_start_matches(' ');
        if line.len() - body.len() > 3 {
            return text.len();
        }
        let hide = match self.fence {
            Some((c, _)) => body.bytes().all(|b| b == c),
            None => body == "-" || body == "- ",
        };
        if hide { self.pos } else { text.len() }
    }
}

/// A code fence line: (char, run length, rest of the line).
fn fence_of(line: &[u8]) -> Option<(u8, usize, &[u8])> {
    let indent = line.iter().take_while(|&&c| c == b' ').count();
    if indent > 3 {
        return None;
    }
    let c = *line.get(indent)?;
    if c != b'`' && c != b'~' {
        return None;
    }
    let n = line[indent..].iter().take_while(|&&x| x == c).count();
    let rest = &line[indent + n..];
    if n < 3 || (c == b'`' && rest.contains(&b'`')) {
        return None;
    }
    Some((c, n, rest))
}

/// Everything in the theme that rendering depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    width: u16,
    highlight: bool,
    styles: [Style; 13],
    code_theme: &'static str,
}

impl Key {
    fn new(width: u16, highlight: bool, t: &Theme) -> Self {
        Key {
            width,
            highlight,
            styles: [
                t.text,
                t.dim,
                t.heading,
                t.emphasis,
                t.strong,
                t.strike,
                t.inline_code,
                t.code_block,
                t.code_border,
                t.link,
                t.quote,
                t.list_marker,
                t.rule,
            ],
            code_theme: t.code_theme,
        }
    }
}

/// Rendering of a message that grows (a token stream), caching the blocks
/// that can no longer change.
///
/// Each call re-renders only the last top-level block; earlier blocks were
/// rendered once, when a later block started. Code blocks are highlighted
/// incrementally, and the highlighting of every block is kept across width
/// and theme changes, so a resize re-wraps but never re-highlights. Asking
/// again for the same text costs a comparison. Text that is not an
/// extension of the previous text starts over. The lines are always
/// identical to [`render`] on the same input.
#[derive(Default)]
pub struct StreamingMarkdown {
    /// What `lines` were laid out for.
    key: Option<Key>,
    /// The text the lines are for.
    text: String,
    scan: BlockScanner,
    /// Blocks rendered into `lines[..stable_len]`.
    stable_blocks: usize,
    stable_len: usize,
    lines: Vec<Line<'static>>,
    /// Highlighting of each block's code blocks (index: block number).
    highlights: Vec<Vec<IncrementalHighlight>>,
    /// `lines` are complete for `text`.
    valid: bool,
}

impl std::fmt::Debug for StreamingMarkdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamingMarkdown")
            .field("text_bytes", &self.text.len())
            .field("stable_blocks", &self.stable_blocks)
            .field("lines", &self.lines.len())
            .finish()
    }
}

impl StreamingMarkdown {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forget everything (text, lines and highlighting).
    pub fn reset(&mut self) {
        self.text.clear();
        self.scan = BlockScanner::default();
        self.highlights.clear();
        self.relayout();
    }

    /// Forget the lines but keep the text's blocks and highlighting.
    fn relayout(&mut self) {
        self.key = None;
        self.stable_blocks = 0;
        self.stable_len = 0;
        self.lines.clear();
        self.valid = false;
    }

    /// The lines of the last [`StreamingMarkdown::lines`] call, without
    /// checking the text again (empty before the first call).
    pub fn cached_lines(&self) -> &[Line<'static>] {
        &self.lines
    }

    /// The rendered lines of `text` (normally an extension of the previous
    /// call's text), at most `width` columns wide.
    pub fn lines(&mut self, text: &str, width: u16, theme: &Theme, hl: Option<&Highlighter>) -> &[Line<'static>] {
        let hl = hl.filter(|h| h.ready());
        let key = Key::new(width, hl.is_some(), theme);
        if !text.starts_with(self.text.as_str()) {
            self.reset();
        } else if self.key != Some(key) {
            self.relayout();
        } else if self.valid && text.len() == self.text.len() {
            return &self.lines;
        }
        self.key = Some(key);
        self.text.push_str(&text[self.text.len()..]);
        self.scan.advance(text);
        let blocks = self.scan.starts.len() + 1;
        if self.highlights.len() < blocks {
            self.highlights.resize_with(blocks, Vec::new);
        }
        self.lines.truncate(self.stable_len);
        // Blocks completed since the last call.
        while let Some(&end) = self.scan.starts.get(self.stable_blocks) {
            let i = self.stable_blocks;
            let start = if i == 0 { 0 } else { self.scan.starts[i - 1] };
            let soft = i > 0 && self.scan.soft[i - 1];
            render_joined(
                &text[start..end],
                soft,
                width,
                theme,
                hl,
                &mut self.highlights[i],
                &mut self.lines,
            );
            self.stable_blocks += 1;
        }
        self.stable_len = self.lines.len();
        let tail = self.scan.starts.last().copied().unwrap_or(0);
        let end = self.scan.visible_end(text);
        render_joined(
            &text[tail..end],
            self.scan.soft.last().copied().unwrap_or(false),
            width,
            theme,
            hl,
            &mut self.highlights[blocks - 1],
            &mut self.lines,
        );
        self.valid = true;
        &self.lines
    }
}

#[cfg(test)]
mod tests;
