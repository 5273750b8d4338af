//! Rendering of ONE top-level Markdown block (pulldown-cmark events) into
//! styled, wrapped lines. The block splitting and caching live in the parent
//! module; tables are laid out in `table`.

use std::borrow::Cow;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::table::TableBuf;
use crate::tui::highlight::{Highlighter, IncrementalHighlight, push_code_text};
use crate::tui::theme::Theme;
use crate::tui::wrap::{spans_width, str_width, wrap_spans, wrap_spans_hard};
use crate::util::sanitize::terminal_safe;

const BULLETS: [&str; 3] = ["• ", "◦ ", "▪ "];
const QUOTE_BAR: &str = "│ ";
const CODE_GUTTER: &str = "│ ";
/// Gutter of a display line that continues a long code line.
const CODE_CONTINUED: &str = "↪ ";

/// Parser options: CommonMark plus GFM tables, strikethrough and task lists.
pub(super) fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Render the Markdown block `src` into `out`. Code blocks use
/// `caches[i]` for the i-th code block of the block (incremental
/// highlighting); `hl` must already be filtered to "ready".
pub(super) fn render_block(
    src: &str,
    width: u16,
    theme: &Theme,
    hl: Option<&Highlighter>,
    caches: &mut Vec<IncrementalHighlight>,
    out: &mut Vec<Line<'static>>,
) {
    let mut r = Renderer {
        theme,
        width,
        hl,
        caches,
        start_len: out.len(),
        out,
        containers: Vec::new(),
        lists: Vec::new(),
        inline: Vec::new(),
        styles: Vec::new(),
        quote_depth: 0,
        heading: false,
        table_head: false,
        links: Vec::new(),
        gap: false,
        code: None,
        code_index: 0,
        html: None,
        table: None,
    };
    for ev in Parser::new_ext(src, options()) {
        r.event(ev);
    }
    // Parsers close everything at the end; be defensive anyway.
    r.end_code();
    r.end_html();
    r.end_table();
    r.flush(false);
}

enum Container {
    Quote,
    Item {
        marker: Vec<Span<'static>>,
        indent: usize,
        used: bool,
    },
}

struct ListState {
    /// Next number of an ordered list.
    next: Option<u64>,
    loose: bool,
}

struct LinkState {
    url: String,
    text: String,
    image: bool,
}

struct Renderer<'a> {
    theme: &'a Theme,
    width: u16,
    hl: Option<&'a Highlighter>,
    caches: &'a mut Vec<IncrementalHighlight>,
    out: &'a mut Vec<Line<'static>>,
    start_len: usize,
    containers: Vec<Container>,
    lists: Vec<ListState>,
    /// The logical line being collected (paragraph, heading, table cell).
    inline: Vec<Span<'static>>,
    /// Inline style patches (emphasis, strong, links…).
    styles: Vec<Style>,
    quote_depth: usize,
    heading: bool,
    table_head: bool,
    links: Vec<LinkState>,
    /// A blank line is owed before the next block.
    gap: bool,
    /// Open code block: (info string, text).
    code: Option<(String, String)>,
    code_index: usize,
    html: Option<String>,
    table: Option<TableBuf>,
}

/// Model text made safe for a single display line: controls neutralised,
/// tabs and stray newlines turned into spaces.
fn clean(s: &str) -> Cow<'_, str> {
    let safe = terminal_safe(s);
    if safe.contains(['\t', '\n']) {
        Cow::Owned(safe.replace('\t', "    ").replace('\n', " "))
    } else {
        safe
    }
}

fn spaces(n: usize) -> Span<'static> {
    Span::raw(" ".repeat(n))
}

impl Renderer<'_> {
    fn event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                if let Some((_, code)) = &mut self.code {
                    code.push_str(&t);
                } else if let Some(html) = &mut self.html {
                    html.push_str(&t);
                } else {
                    self.push(&t, self.style());
                }
            }
            Event::Code(t) => self.push(&t, self.style().patch(self.theme.inline_code)),
            Event::InlineMath(t) => self.push(&format!("${t}$"), self.style().patch(self.theme.inline_code)),
            Event::DisplayMath(t) => self.push(&format!("$${t}$$"), self.style().patch(self.theme.inline_code)),
            Event::Html(t) => match &mut self.html {
                Some(html) => html.push_str(&t),
                None => self.push(&t, self.style()),
            },
            Event::InlineHtml(t) => self.push(&t, self.style()),
            Event::FootnoteReference(t) => self.push(&format!("[^{t}]"), self.style()),
            Event::SoftBreak => self.push(" ", self.style()),
            Event::HardBreak => {
                if self.table.is_some() {
                    self.push(" ", self.style());
                } else {
                    self.flush(true);
                }
            }
            Event::Rule => {
                self.begin_block();
                let (mut first, _) = self.prefixes();
                let n = usize::from(self.width).saturating_sub(spans_width(&first)).max(1);
                first.push(Span::styled("─".repeat(n), self.theme.rule));
                self.out.push(Line::from(first));
                self.gap = true;
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "[x] " } else { "[ ] " };
                let unordered = self.lists.last().is_some_and(|l| l.next.is_none());
                match self.containers.last_mut() {
                    Some(Container::Item {
                        marker,
                        indent,
                        used: false,
                    }) if unordered => {
                        *marker = vec![Span::styled(mark, self.theme.list_marker)];
                        *indent = mark.len();
                    }
                    _ => self.push(mark, self.theme.list_marker),
                }
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {
                self.begin_block();
                if matches!(self.containers.last(), Some(Container::Item { .. }))
                    && let Some(l) = self.lists.last_mut()
                {
                    l.loose = true;
                }
            }
            Tag::Heading { level, .. } => {
                self.begin_block();
                self.heading = true;
                let marks = "#".repeat(level as usize);
                self.push(&format!("{marks} "), self.style());
            }
            Tag::BlockQuote(_) => {
                self.begin_block();
                self.containers.push(Container::Quote);
                self.quote_depth += 1;
            }
            Tag::CodeBlock(kind) => {
                self.begin_block();
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.into_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((info, String::new()));
            }
            Tag::HtmlBlock => {
                self.begin_block();
                self.html = Some(String::new());
            }
            Tag::List(start) => {
                self.begin_block();
                self.lists.push(ListState {
                    next: start,
                    loose: false,
                });
            }
            Tag::Item => {
                self.begin_block();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(ListState { next: Some(n), .. }) => {
                        let m = format!("{n}. ");
                        *n = n.saturating_add(1);
                        m
                    }
                    _ => BULLETS[depth % BULLETS.len()].to_string(),
                };
                let indent = str_width(&marker);
                self.containers.push(Container::Item {
                    marker: vec![Span::styled(marker, self.theme.list_marker)],
                    indent,
                    used: false,
                });
            }
            Tag::Table(aligns) => {
                self.begin_block();
                self.table = Some(TableBuf::new(aligns));
            }
            Tag::TableHead => self.table_head = true,
            Tag::TableRow | Tag::TableCell => {}
            Tag::Emphasis => self.styles.push(self.theme.emphasis),
            Tag::Strong => self.styles.push(self.theme.strong),
            Tag::Strikethrough => self.styles.push(self.theme.strike),
            Tag::Superscript | Tag::Subscript => self.styles.push(Style::default()),
            Tag::Link { dest_url, .. } => {
                self.styles.push(self.theme.link);
                self.links.push(LinkState {
                    url: dest_url.into_string(),
                    text: String::new(),
                    image: false,
                });
            }
            Tag::Image { dest_url, .. } => {
                self.styles.push(self.theme.dim);
                self.push("[image: ", self.style());
                self.links.push(LinkState {
                    url: dest_url.into_string(),
                    text: String::new(),
                    image: true,
                });
            }
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.begin_block(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::DefinitionListTitle | TagEnd::DefinitionListDefinition => {
                self.flush(false);
                self.gap = true;
            }
            TagEnd::Heading(_) => {
                self.flush(false);
                self.heading = false;
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush(false);
                if matches!(self.containers.last(), Some(Container::Quote)) {
                    self.containers.pop();
                }
                self.quote_depth = self.quote_depth.saturating_sub(1);
                self.gap = true;
            }
            TagEnd::CodeBlock => {
                self.end_code();
                self.gap = true;
            }
            TagEnd::HtmlBlock => {
                self.end_html();
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush(false);
                self.lists.pop();
                self.gap = match self.containers.last() {
                    Some(Container::Item { .. }) => self.lists.last().is_some_and(|l| l.loose),
                    _ => true,
                };
            }
            TagEnd::Item => {
                self.flush(false);
                if let Some(Container::Item { used: false, .. }) = self.containers.last() {
                    // An item with nothing in it yet (e.g. "- " while streaming).
                    let (first, _) = self.prefixes();
                    self.out.push(Line::from(first));
                }
                if matches!(self.containers.last(), Some(Container::Item { .. })) {
                    self.containers.pop();
                }
            }
            TagEnd::Table => {
                self.end_table();
                self.gap = true;
            }
            TagEnd::TableHead => {
                self.table_head = false;
                if let Some(t) = &mut self.table {
                    t.end_row(true);
                }
            }
            TagEnd::TableRow => {
                if let Some(t) = &mut self.table {
                    t.end_row(false);
                }
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.inline);
                if let Some(t) = &mut self.table {
                    t.push_cell(cell);
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Superscript | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                self.styles.pop();
                if let Some(link) = self.links.pop() {
                    if link.image {
                        self.push("]", self.style().patch(self.theme.dim));
                    }
                    let url = link.url.trim();
                    let same = url == link.text || url.strip_prefix("mailto:") == Some(link.text.as_str());
                    if !url.is_empty() && !same {
                        self.push(&format!(" ({url})"), self.style().patch(self.theme.dim));
                    }
                }
            }
            TagEnd::FootnoteDefinition | TagEnd::DefinitionList | TagEnd::MetadataBlock(_) => {
                self.flush(false);
                self.gap = true;
            }
        }
    }

    /// The style of running text here.
    fn style(&self) -> Style {
        let t = self.theme;
        let mut s = t.text;
        if self.quote_depth > 0 {
            s = s.patch(t.quote);
        }
        if self.heading {
            s = s.patch(t.heading);
        }
        if self.table_head {
            s = s.patch(t.strong);
        }
        for p in &self.styles {
            s = s.patch(*p);
        }
        s
    }

    /// Append model text to the current logical line.
    fn push(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        let text = clean(text);
        if let Some(link) = self.links.last_mut() {
            link.text.push_str(&text);
        }
        if let Some(last) = self.inline.last_mut()
            && last.style == style
        {
            last.content.to_mut().push_str(&text);
            return;
        }
        self.inline.push(Span::styled(text.into_owned(), style));
    }

    /// Line prefixes from the open quotes and list items: (first line,
    /// continuation lines). Consumes unused list markers.
    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for c in &mut self.containers {
            match c {
                Container::Quote => {
                    first.push(Span::styled(QUOTE_BAR, self.theme.quote));
                    rest.push(Span::styled(QUOTE_BAR, self.theme.quote));
                }
                Container::Item { marker, indent, used } => {
                    if *used {
                        first.push(spaces(*indent));
                    } else {
                        first.extend(marker.iter().cloned());
                        *used = true;
                    }
                    rest.push(spaces(*indent));
                }
            }
        }
        (first, rest)
    }

    /// Prefix of a blank line between blocks: quote bars only, no trailing
    /// whitespace, markers untouched.
    fn blank_prefix(&self) -> Vec<Span<'static>> {
        let Some(last_quote) = self.containers.iter().rposition(|c| matches!(c, Container::Quote)) else {
            return Vec::new();
        };
        let mut v = Vec::new();
        for (i, c) in self.containers[..=last_quote].iter().enumerate() {
            match c {
                Container::Quote if i == last_quote => v.push(Span::styled("│", self.theme.quote)),
                Container::Quote => v.push(Span::styled(QUOTE_BAR, self.theme.quote)),
                Container::Item { indent, .. } => v.push(spaces(*indent)),
            }
        }
        v
    }

    /// Before a block-level element: finish pending text, pay an owed gap.
    fn begin_block(&mut self) {
        if self.table.is_none() {
            self.flush(false);
        }
        if self.gap {
            if self.out.len() > self.start_len {
                let p = self.blank_prefix();
                self.out.push(Line::from(p));
            }
            self.gap = false;
        }
    }

    /// Wrap the collected logical line into `out`.
    fn flush(&mut self, force: bool) {
        if self.table.is_some() || (self.inline.is_empty() && !force) {
            return;
        }
        let (first, rest) = self.prefixes();
        self.out.extend(wrap_spans(&self.inline, self.width, first, rest));
        self.inline.clear();
    }

    fn end_code(&mut self) {
        let Some((info, code)) = self.code.take() else {
            return;
        };
        let idx = self.code_index;
        self.code_index += 1;
        let t = self.theme;
        let (mut header, rest) = self.prefixes();
        let lang = clean(info.split(|c: char| c.is_whitespace() || c == ',').next().unwrap_or("")).into_owned();
        header.push(Span::styled("╭─", t.code_border));
        if !lang.is_empty() {
            header.push(Span::styled(format!(" {lang}"), t.code_border));
        }
        self.out
            .extend(wrap_spans(&header, self.width, Vec::new(), rest.clone()));
        let gutter = |mark: &'static str| {
            let mut g = rest.clone();
            g.push(Span::styled(mark, t.code_border));
            g
        };
        let highlighted = match self.hl {
            Some(h) => {
                if self.caches.len() <= idx {
                    self.caches.resize_with(idx + 1, IncrementalHighlight::default);
                }
                self.caches
                    .get_mut(idx)
                    .and_then(|c| c.update(h, &lang, &code, t.code_theme))
            }
            None => None,
        };
        match highlighted {
            Some(lines) => {
                for l in lines {
                    self.out.extend(wrap_spans_hard(
                        l,
                        self.width,
                        gutter(CODE_GUTTER),
                        gutter(CODE_CONTINUED),
                    ));
                }
            }
            None => {
                let mut spans = Vec::new();
                for src in code.split_inclusive('\n') {
                    let src = src.strip_suffix('\n').unwrap_or(src);
                    let src = src.strip_suffix('\r').unwrap_or(src);
                    spans.clear();
                    push_code_text(&mut spans, src, t.code_block, &mut 0);
                    self.out.extend(wrap_spans_hard(
                        &spans,
                        self.width,
                        gutter(CODE_GUTTER),
                        gutter(CODE_CONTINUED),
                    ));
                }
            }
        }
        let mut footer = rest;
        footer.push(Span::styled("╰─", t.code_border));
        self.out.push(Line::from(footer));
    }

    fn end_html(&mut self) {
        let Some(html) = self.html.take() else {
            return;
        };
        let style = self.style();
        for line in html.lines() {
            let spans = vec![Span::styled(clean(line).into_owned(), style)];
            let (first, rest) = self.prefixes();
            self.out.extend(wrap_spans(&spans, self.width, first, rest));
        }
    }

    fn end_table(&mut self) {
        let Some(mut table) = self.table.take() else {
            return;
        };
        table.end_row(false);
        let (first, rest) = self.prefixes();
        let avail = usize::from(self.width).saturating_sub(spans_width(&rest)).max(1);
        for (i, l) in table.layout(avail, self.theme).into_iter().enumerate() {
            let mut line = if i == 0 { first.clone() } else { rest.clone() };
            line.extend(l);
            self.out.push(Line::from(line));
        }
    }
}
