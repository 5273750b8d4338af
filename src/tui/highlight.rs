//! Syntax highlighting of code blocks with syntect.
//!
//! Owns: loading syntect's default syntaxes and themes (once, lazily, on a
//! background thread), language lookup from a Markdown info string, turning
//! syntect styles into ratatui spans, and incremental highlighting of a code
//! block that grows while a message streams ([`IncrementalHighlight`]).
//!
//! Until the background load finishes, every highlighting call returns `None`
//! and callers draw plain code; [`Highlighter::ready`] tells them when to
//! redraw. Code text is made terminal-safe and tabs are expanded to 4-column
//! stops, so the spans can go straight to the screen.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::highlighting::{
    FontStyle, HighlightIterator, HighlightState, Highlighter as SynHighlighter, Style as SynStyle, Theme as SynTheme,
    ThemeSet,
};
use syntect::parsing::{ParseState, ScopeStack, SyntaxReference, SyntaxSet};

use super::wrap::str_width;
use crate::util::sanitize::terminal_safe;

/// Lines longer than this (bytes) are not parsed; they are drawn in the
/// theme's plain colour (regex engines get slow on minified code).
const MAX_LINE: usize = 4096;

/// Tab stops in code.
const TAB: usize = 4;

struct Assets {
    syntaxes: SyntaxSet,
    themes: ThemeSet,
}

impl Assets {
    fn load() -> Self {
        Assets {
            syntaxes: SyntaxSet::load_defaults_newlines(),
            themes: ThemeSet::load_defaults(),
        }
    }

    fn theme(&self, name: &str) -> Option<&SynTheme> {
        let t = &self.themes.themes;
        t.get(name)
            .or_else(|| t.get("base16-eighties.dark"))
            .or_else(|| t.values().next())
    }
}

#[derive(Default)]
struct Shared {
    /// `Some(None)`: loading failed (never ready).
    assets: OnceLock<Option<Assets>>,
    started: AtomicBool,
}

impl Shared {
    fn load(&self) {
        let assets = std::panic::catch_unwind(Assets::load).ok();
        let _ = self.assets.set(assets);
    }
}

/// Syntax highlighter for code blocks. Cheap to clone (shared state); the
/// syntect assets are loaded on a background thread on first use.
#[derive(Clone, Default)]
pub struct Highlighter {
    shared: Arc<Shared>,
}

impl fmt::Debug for Highlighter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Highlighter")
            .field("ready", &self.shared.assets.get().is_some_and(Option::is_some))
            .finish()
    }
}

impl Highlighter {
    /// A highlighter that has not started loading yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Start loading in the background if not started yet.
    pub fn start(&self) {
        if self.shared.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("pai-syntect".into())
            .spawn(move || shared.load());
        if spawned.is_err() {
            self.shared.load();
        }
    }

    fn assets(&self) -> Option<&Assets> {
        self.start();
        self.shared.assets.get().and_then(Option::as_ref)
    }

    /// True once highlighting is available (starts loading if needed).
    pub fn ready(&self) -> bool {
        self.assets().is_some()
    }

    /// Block until loading has finished (successfully or not). For tests and
    /// tools; the UI polls [`Highlighter::ready`] instead.
    pub fn wait_ready(&self) {
        self.start();
        self.shared.assets.wait();
    }

    /// True if `lang` (an info-string token) names a known language.
    pub fn knows(&self, lang: &str) -> bool {
        self.assets().is_some_and(|a| find_syntax(&a.syntaxes, lang).is_some())
    }

    /// Highlight `code` as `lang` with the syntect theme `theme_name`: one
    /// vector of spans per source line (a trailing newline does not make an
    /// extra empty line). `None` while loading or for an unknown language.
    pub fn highlight_lines(&self, lang: &str, code: &str, theme_name: &str) -> Option<Vec<Vec<Span<'static>>>> {
        let mut inc = IncrementalHighlight::new();
        inc.update(self, lang, code, theme_name)?;
        Some(inc.lines)
    }
}

/// Find the syntax for an info-string token such as `rust`, `py`, `sh`,
/// `rust,ignore` or `{.python}`: by token (extension, then name), then by a
/// few common aliases. Plain-text names give `None`.
fn find_syntax<'a>(ss: &'a SyntaxSet, lang: &str) -> Option<&'a SyntaxReference> {
    let token = lang
        .trim()
        .trim_start_matches(['{', '.'])
        .split(|c: char| c == ',' || c == '}' || c.is_whitespace())
        .next()
        .unwrap_or("");
    if token.is_empty() || token.len() > 40 {
        return None;
    }
    let lower = token.to_ascii_lowercase();
    let alias = match lower.as_str() {
        "text" | "txt" | "plain" | "plaintext" | "none" | "output" | "log" => return None,
        "shell" | "console" | "shellsession" | "terminal" | "ksh" => "sh",
        "typescript" | "ts" | "tsx" | "jsx" | "mjs" | "cjs" | "node" => "js",
        "jsonc" | "json5" => "json",
        "golang" => "go",
        "csharp" | "c#" => "cs",
        "objc" | "objective-c" => "m",
        "py3" | "python3" => "py",
        "yml" => "yaml",
        "ps" | "powershell" | "pwsh" => return None,
        _ => lower.as_str(),
    };
    ss.find_syntax_by_token(alias)
        .or_else(|| ss.find_syntax_by_extension(alias))
        .filter(|s| s.name != "Plain Text")
}

fn to_style(s: SynStyle) -> Style {
    let mut style = Style::default();
    if s.foreground.a > 0 {
        style = style.fg(Color::Rgb(s.foreground.r, s.foreground.g, s.foreground.b));
    }
    if s.font_style.contains(FontStyle::BOLD) {
        style = style.add_modifier(Modifier::BOLD);
    }
    if s.font_style.contains(FontStyle::ITALIC) {
        style = style.add_modifier(Modifier::ITALIC);
    }
    if s.font_style.contains(FontStyle::UNDERLINE) {
        style = style.add_modifier(Modifier::UNDERLINED);
    }
    style
}

/// Append code text to a line of spans: made terminal-safe, tabs expanded to
/// the next stop (`col` is the running display column), merged into the last
/// span when the style is the same. Newlines must already be stripped.
pub fn push_code_text(spans: &mut Vec<Span<'static>>, text: &str, style: Style, col: &mut usize) {
    if text.is_empty() {
        return;
    }
    let safe = terminal_safe(text);
    let mut piece = String::new();
    let buf: &str = if safe.contains('\t') {
        for part in safe.split_inclusive('\t') {
            let (body, tab) = match part.strip_suffix('\t') {
                Some(b) => (b, true),
                None => (part, false),
            };
            piece.push_str(body);
            *col += str_width(body);
            if tab {
                let n = TAB - *col % TAB;
                piece.extend(std::iter::repeat_n(' ', n));
                *col += n;
            }
        }
        &piece
    } else {
        *col += str_width(&safe);
        &safe
    };
    if let Some(last) = spans.last_mut()
        && last.style == style
    {
        last.content.to_mut().push_str(buf);
        return;
    }
    spans.push(Span::styled(buf.to_string(), style));
}

fn strip_eol(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// Parse and highlight one source line (with its newline, if any) from the
/// given states, advancing them.
fn highlight_line(
    ss: &SyntaxSet,
    hl: &SynHighlighter<'_>,
    parse: &mut ParseState,
    hs: &mut HighlightState,
    line: &str,
) -> Option<Vec<Span<'static>>> {
    let mut spans = Vec::new();
    let mut col = 0;
    if line.len() > MAX_LINE {
        push_code_text(&mut spans, strip_eol(line), to_style(hl.get_default()), &mut col);
        return Some(spans);
    }
    let ops = parse.parse_line(line, ss).ok()?;
    for (style, text) in HighlightIterator::new(hs, &ops, line, hl) {
        let text = if text.ends_with('\n') { strip_eol(text) } else { text };
        push_code_text(&mut spans, text, to_style(style), &mut col);
    }
    Some(spans)
}

/// Highlighting of a code block whose text grows (a streaming answer).
///
/// Keeps the syntect parse/highlight state after the last complete line, so
/// [`IncrementalHighlight::update`] with an extended text highlights only
/// the new complete lines plus the unfinished last line (from a copy of the
/// saved state, without committing it). Text that is not an extension of the
/// previous one, or another language or theme, starts over. The result is
/// always identical to [`Highlighter::highlight_lines`] on the same input.
#[derive(Default)]
pub struct IncrementalHighlight {
    lang: String,
    theme: String,
    /// Source of the committed (newline-terminated) lines.
    committed: String,
    state: Option<(ParseState, HighlightState)>,
    /// Committed lines, then the unfinished line if `partial`.
    lines: Vec<Vec<Span<'static>>>,
    partial: bool,
    /// Unknown language or a parse error: `None` until the input changes.
    failed: bool,
}

impl fmt::Debug for IncrementalHighlight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IncrementalHighlight")
            .field("lang", &self.lang)
            .field("committed_bytes", &self.committed.len())
            .field("lines", &self.lines.len())
            .finish()
    }
}

impl IncrementalHighlight {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forget everything.
    pub fn reset(&mut self) {
        self.committed.clear();
        self.state = None;
        self.lines.clear();
        self.partial = false;
        self.failed = false;
    }

    /// Highlight `code` (usually an extension of the previous call's code):
    /// one vector of spans per source line. `None` while the highlighter is
    /// loading, for an unknown language, or on a parse error.
    pub fn update(
        &mut self,
        hl: &Highlighter,
        lang: &str,
        code: &str,
        theme_name: &str,
    ) -> Option<&[Vec<Span<'static>>]> {
        let assets = hl.assets()?;
        if self.lang != lang || self.theme != theme_name || !code.starts_with(self.committed.as_str()) {
            self.reset();
            lang.clone_into(&mut self.lang);
            theme_name.clone_into(&mut self.theme);
        }
        if self.failed {
            return None;
        }
        if self.state.is_some() && !self.partial && code.len() == self.committed.len() {
            return Some(&self.lines); // nothing new
        }
        let ss = &assets.syntaxes;
        let Some(theme) = assets.theme(theme_name) else {
            self.failed = true;
            return None;
        };
        let synh = SynHighlighter::new(theme);
        if self.state.is_none() {
            let Some(syntax) = find_syntax(ss, lang) else {
                self.failed = true;
                return None;
            };
            self.state = Some((ParseState::new(syntax), HighlightState::new(&synh, ScopeStack::new())));
        }
        if self.partial {
            self.lines.pop();
            self.partial = false;
        }
        let fresh = &code[self.committed.len()..];
        let (parse, hs) = self.state.as_mut()?;
        for line in fresh.split_inclusive('\n') {
            let spans = if line.ends_with('\n') {
                let spans = highlight_line(ss, &synh, parse, hs, line);
                self.committed.push_str(line);
                spans
            } else {
                self.partial = true;
                let (mut p, mut h) = (parse.clone(), hs.clone());
                highlight_line(ss, &synh, &mut p, &mut h, line)
            };
            match spans {
                Some(s) => self.lines.push(s),
                None => {
                    self.reset();
                    self.failed = true;
                    return None;
                }
            }
        }
        Some(&self.lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const THEME: &str = "base16-eighties.dark";

    const RUST: &str = r#"use std::collections::HashMap;

/// A documented struct.
#[derive(Debug, Clone)]
pub struct Counter {
    counts: HashMap<String, usize>,
    total: u64,
}

impl Counter {
    pub fn new() -> Self {
        Counter { counts: HashMap::new(), total: 0 }
    }

    /* a block comment
       spanning lines */
    pub fn add(&mut self, word: &str) -> usize {
        let n = self.counts.entry(word.to_string()).or_insert(0);
        *n += 1;
        self.total += 1;
        let s = "a string with \"escapes\" and {braces}";
        println!("{s} {}", 'c');
        *n
    }
}

fn main() {
	let mut c = Counter::new();
    c.add("x");
}
"#;

    fn ready() -> Highlighter {
        let h = Highlighter::new();
        h.wait_ready();
        assert!(h.ready());
        h
    }

    #[test]
    fn rust_gets_several_colours() {
        let h = ready();
        let lines = h.highlight_lines("rust", RUST, THEME).unwrap_or_default();
        assert_eq!(lines.len(), RUST.lines().count());
        let colours: HashSet<_> = lines.iter().flatten().filter_map(|s| s.style.fg).collect();
        assert!(colours.len() > 3, "{colours:?}");
        // Text is preserved (tabs expanded), no newlines inside spans.
        let first: String = lines[0].iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(first, "use std::collections::HashMap;");
        let tab_line = RUST.lines().position(|l| l.starts_with('\t')).unwrap_or(0);
        let tabbed: String = lines[tab_line].iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(tabbed, "    let mut c = Counter::new();");
        assert!(lines.iter().flatten().all(|s| !s.content.contains('\n')));
    }

    #[test]
    fn lookup_by_token_and_extension() {
        let h = ready();
        for lang in [
            "rust",
            "rs",
            "py",
            "python",
            "js",
            "sh",
            "bash",
            "shell",
            "json",
            "c++",
            "Rust",
            "rust,ignore",
        ] {
            assert!(h.knows(lang), "{lang}");
        }
        for lang in ["", "text", "klingon", "plaintext"] {
            assert!(h.highlight_lines(lang, "x = 1\n", THEME).is_none(), "{lang}");
        }
    }

    #[test]
    fn unknown_theme_falls_back() {
        let h = ready();
        assert!(h.highlight_lines("rust", "fn x() {}\n", "no such theme").is_some());
    }

    #[test]
    fn control_characters_are_neutralised() {
        let h = ready();
        let lines = h
            .highlight_lines("rust", "let s = \"\x1b[31mred\x07\";\r\n", THEME)
            .unwrap_or_default();
        for s in lines.iter().flatten() {
            assert!(!s.content.chars().any(|c| c.is_control()), "{:?}", s.content);
        }
    }

    #[test]
    fn incremental_equals_full_for_every_prefix() {
        let h = ready();
        let code: String = RUST.lines().take(30).map(|l| format!("{l}\n")).collect();
        let mut inc = IncrementalHighlight::new();
        for end in (0..=code.len()).filter(|&i| code.is_char_boundary(i)) {
            let prefix = &code[..end];
            let full = h.highlight_lines("rust", prefix, THEME);
            let got = inc.update(&h, "rust", prefix, THEME).map(<[_]>::to_vec);
            assert_eq!(got, full, "prefix of {end} bytes");
        }
        // Not an extension: starts over and still agrees.
        let got = inc.update(&h, "rust", "fn other() {}\n", THEME).map(<[_]>::to_vec);
        assert_eq!(got, h.highlight_lines("rust", "fn other() {}\n", THEME));
        // Language switch.
        let got = inc
            .update(&h, "python", "def f():\n    pass\n", THEME)
            .map(<[_]>::to_vec);
        assert_eq!(got, h.highlight_lines("python", "def f():\n    pass\n", THEME));
    }

    #[test]
    fn not_ready_gives_none_then_some() {
        let h = Highlighter::new();
        // Either still loading (None) or already loaded; both are fine, and
        // after waiting it must work.
        let _ = h.highlight_lines("rust", "fn a() {}", THEME);
        h.wait_ready();
        assert!(h.highlight_lines("rust", "fn a() {}", THEME).is_some());
        let clone = h.clone();
        assert!(clone.ready());
    }
}
