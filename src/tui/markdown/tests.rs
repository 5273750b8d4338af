//! Tests of Markdown rendering and of the streaming cache. Snapshots live in
//! `src/tui/snapshots/` (named after `tui::markdown`).

use super::*;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::widgets::Paragraph;

const SAMPLE: &str = r#"# Release notes

Version **2.0** brings *faster* parsing, ~~legacy~~ removals and `inline code`.
See [the docs](https://example.com/docs) or <https://example.com>.

## Changes

1. Parser rewrite
   - streaming aware
   - handles *nested* lists
     - three levels deep
2. New **config** format
3. Task list:
   - [x] done item
   - [ ] open item that has a rather long description which needs wrapping

> A quote with **bold** text that is long enough to wrap around at narrow widths.
>
> Second quote paragraph.

```rust
use std::collections::HashMap;

fn main() {
    let mut m: HashMap<&str, i32> = HashMap::new();
    m.insert("answer", 42); // a comment that makes this line quite long indeed
    println!("{:?}", m);
}
```

| Name | Type | Description |
|------|:----:|------------:|
| id | `u64` | Unique identifier of the row |
| name | `String` | Display name |

---

Some <b>inline html</b> and a final paragraph with a hard  
break and an image ![logo](logo.png).

<div>
raw html block
</div>

    indented code
    block
"#;

fn draw(text: &str, width: u16) -> TestBackend {
    let theme = Theme::default();
    let hl = Highlighter::new();
    hl.wait_ready();
    let lines = render(text, width, &theme, Some(&hl));
    for l in &lines {
        let w: usize = crate::tui::wrap::spans_width(&l.spans);
        assert!(w <= usize::from(width), "line wider than {width}: {l:?}");
    }
    let height = u16::try_from(lines.len()).unwrap_or(u16::MAX);
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|f| f.render_widget(Paragraph::new(lines), f.area()))
        .unwrap();
    terminal.backend().clone()
}

#[test]
fn snapshot_width_80() {
    insta::with_settings!({ snapshot_path => "../snapshots" }, {
        insta::assert_snapshot!(draw(SAMPLE, 80));
    });
}

#[test]
fn snapshot_width_40() {
    insta::with_settings!({ snapshot_path => "../snapshots" }, {
        insta::assert_snapshot!(draw(SAMPLE, 40));
    });
}

fn plain(lines: &[Line]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

#[test]
fn code_is_highlighted_when_ready() {
    let theme = Theme::default();
    let hl = Highlighter::new();
    hl.wait_ready();
    let lines = render("```rust\nfn main() { let x = 1; }\n```", 80, &theme, Some(&hl));
    let colours: std::collections::HashSet<_> = lines
        .iter()
        .flat_map(|l| &l.spans)
        .filter_map(|s| match s.style.fg {
            Some(ratatui::style::Color::Rgb(r, g, b)) => Some((r, g, b)),
            _ => None,
        })
        .collect();
    assert!(colours.len() > 1, "{colours:?}");
    // Without a highlighter: plain code style.
    let plain_lines = render("```rust\nfn main() {}\n```", 80, &theme, None);
    assert_eq!(plain(&plain_lines), ["╭─ rust", "│ fn main() {}", "╰─"]);
    assert_eq!(plain_lines[1].spans[1].style, theme.code_block);
}

#[test]
fn escape_sequences_never_reach_spans() {
    let theme = Theme::default();
    let hl = Highlighter::new();
    hl.wait_ready();
    let evil = "# \x1b[2Jtitle\x07\n\ntext \x1b]52;c;ZXZpbA==\x07 *em\x1b[31m* `co\x1bde` \u{9b}31m \u{202e}rtl\n\n\
                [li\x1bnk](http://x\x1b.y) ![i\x1b](u\x1b)\n\n\
                ```ru\x1bst\nlet a = \"\x1b[0m\";\r\n```\n\n```rust\nlet b = \"\x1b[0m\t\";\n```\n\n\
                | a\x1b | b |\n|---|---|\n| \x1bc | d\x08 |\n\n<div>\x1b[5m</div>\n\n> q\x1b\n\n- it\x1bem\n";
    for hl in [None, Some(&hl)] {
        for w in [10, 80] {
            for l in render(evil, w, &theme, hl) {
                for s in &l.spans {
                    assert!(
                        !s.content
                            .chars()
                            .any(|c| c.is_control() || crate::util::sanitize::is_unsafe_control(c)),
                        "{:?}",
                        s.content
                    );
                }
            }
        }
    }
}

#[test]
fn unclosed_fence_renders_as_code() {
    let theme = Theme::default();
    for text in [
        "```python\nprint('hi')\nx = [",
        "Intro\n\n```\nfirst line\n\nafter blank",
        "```rust",
    ] {
        let lines = plain(&render(text, 40, &theme, None));
        assert!(lines.iter().any(|l| l.starts_with("╭─")), "{text:?}: {lines:?}");
        assert_eq!(lines.last().map(String::as_str), Some("╰─"), "{text:?}");
    }
    let lines = plain(&render("```python\nprint('hi')\nx = [", 40, &theme, None));
    assert_eq!(lines, ["╭─ python", "│ print('hi')", "│ x = [", "╰─"]);
}

#[test]
fn unclosed_strong_keeps_text() {
    let theme = Theme::default();
    let lines = plain(&render("Some **bold text still streaming", 80, &theme, None));
    assert_eq!(lines, ["Some **bold text still streaming"]);
}

#[test]
fn half_written_table_row() {
    let theme = Theme::default();
    let lines = plain(&render("| a | b |\n|---|---|\n| 1 | 2 |\n| 3", 40, &theme, None));
    assert_eq!(lines, ["a │ b", "──┼──", "1 │ 2", "3 │ "]);
}

#[test]
fn long_code_lines_wrap_with_mark() {
    let theme = Theme::default();
    let lines = plain(&render("```\nabcdefghijklmnop\n```", 10, &theme, None));
    assert_eq!(lines, ["╭─", "│ abcdefgh", "↪ ijklmnop", "╰─"]);
}

#[test]
fn lists_and_quotes() {
    let theme = Theme::default();
    let lines = plain(&render(
        "- a\n  - b\n- c\n\n1. x\n2. y\n\n> q\n>\n> r",
        40,
        &theme,
        None,
    ));
    assert_eq!(
        lines,
        ["• a", "  ◦ b", "• c", "", "1. x", "2. y", "", "│ q", "│", "│ r"]
    );
    let lines = plain(&render("- one two three four five six", 12, &theme, None));
    assert_eq!(lines, ["• one two", "  three four", "  five six"]);
    let lines = plain(&render("- [ ] todo\n- [x] done", 40, &theme, None));
    assert_eq!(lines, ["[ ] todo", "[x] done"]);
}

#[test]
fn block_scanner_cuts() {
    let mut s = BlockScanner::default();
    let text = "a\n\nb\n  c\n\n  d\n```\nx\n\ny\n```\n\nz";
    s.advance(text);
    let starts: Vec<&str> = s.starts.iter().map(|&i| &text[i..]).collect();
    assert_eq!(starts, ["b\n  c\n\n  d\n```\nx\n\ny\n```\n\nz", "z"]);
}

/// Every char-boundary prefix of SAMPLE: streaming == render.
fn check_streaming(text: &str, widths: &[u16], hl: Option<&Highlighter>) {
    let theme = Theme::default();
    let mut md = StreamingMarkdown::default();
    let bounds: Vec<usize> = (0..=text.len()).filter(|&i| text.is_char_boundary(i)).collect();
    for (n, &end) in bounds.iter().enumerate() {
        let width = widths[n * widths.len() / bounds.len()];
        let prefix = &text[..end];
        let got = md.lines(prefix, width, &theme, hl).to_vec();
        let want = render(prefix, width, &theme, hl);
        assert_eq!(got, want, "prefix of {end} bytes at width {width}: {prefix:?}");
    }
}

fn long_sample() -> String {
    format!("{SAMPLE}\nUnicode: 日本語のテキスト, émoji 👍, combining e\u{301}.\n\n{SAMPLE}")
}

#[test]
fn streaming_equals_render_on_every_prefix() {
    let text = long_sample();
    assert!(text.len() > 2000);
    check_streaming(&text, &[60], None);
}

#[test]
fn streaming_equals_render_with_highlighting() {
    let hl = Highlighter::new();
    hl.wait_ready();
    check_streaming(SAMPLE, &[60, 35, 72], Some(&hl));
}

#[test]
fn streaming_equals_render_when_width_changes() {
    check_streaming(&long_sample(), &[80, 33, 50, 7], None);
}

#[test]
fn streaming_resets_on_non_extension() {
    let theme = Theme::default();
    let mut md = StreamingMarkdown::default();
    let _ = md.lines("# one\n\npara", 40, &theme, None);
    let got = md.lines("# two\n\nother", 40, &theme, None).to_vec();
    assert_eq!(got, render("# two\n\nother", 40, &theme, None));
    let got = md.lines("# two", 40, &theme, None).to_vec();
    assert_eq!(got, render("# two", 40, &theme, None));
}

#[test]
fn tiny_widths_do_not_panic() {
    let theme = Theme::default();
    for w in 0..6 {
        let _ = render(SAMPLE, w, &theme, None);
    }
}

#[test]
fn inline_styles_come_from_the_theme() {
    let theme = Theme::default();
    let lines = render(
        "# Title\n\n*em* **strong** ~~gone~~ `code` [txt](http://u)\n\n> q\n\n- item",
        80,
        &theme,
        None,
    );
    let find = |text: &str| {
        lines
            .iter()
            .flat_map(|l| &l.spans)
            .find(|s| s.content == text)
            .map(|s| s.style)
            .unwrap_or_default()
    };
    assert_eq!(find("# Title"), theme.text.patch(theme.heading));
    assert_eq!(find("em"), theme.text.patch(theme.emphasis));
    assert_eq!(find("strong"), theme.text.patch(theme.strong));
    assert_eq!(find("gone"), theme.text.patch(theme.strike));
    assert_eq!(find("code"), theme.text.patch(theme.inline_code));
    assert_eq!(find("txt"), theme.text.patch(theme.link));
    assert_eq!(find(" (http://u)"), theme.text.patch(theme.dim));
    assert_eq!(find("q"), theme.text.patch(theme.quote));
    assert_eq!(find("• "), theme.list_marker);
}

/// Random Markdown-ish soup: no panics, no control characters, streaming
/// equals render.
#[test]
fn random_inputs() {
    const TOKENS: &[&str] = &[
        "# ",
        "## ",
        "- ",
        "1. ",
        "  ",
        "    ",
        "> ",
        "```",
        "```rust\n",
        "~~~\n",
        "**",
        "*",
        "_",
        "`",
        "~~",
        "|",
        "| a | b |\n|---|--:|\n",
        "[x](y)",
        "<b>",
        "<div>\n",
        "\n",
        "\n\n",
        "word ",
        "long-word-without-breaks ",
        "日本",
        "👍",
        "\t",
        "\x1b[31m",
        "\\",
        "---\n",
        "- [ ] ",
        "\r\n",
        "[^1]",
        "![i](u)",
        "<!--",
        "e\u{301}",
    ];
    let theme = Theme::default();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..150 {
        let n = 5 + next() % 60;
        let doc: String = (0..n)
            .map(|_| TOKENS[(next() % TOKENS.len() as u64) as usize])
            .collect();
        let width = (next() % 50) as u16;
        let mut md = StreamingMarkdown::new();
        let bounds: Vec<usize> = (0..=doc.len()).filter(|&i| doc.is_char_boundary(i)).collect();
        for &end in bounds.iter().step_by(3).chain(std::iter::once(&doc.len())) {
            let prefix = &doc[..end];
            let want = render(prefix, width, &theme, None);
            assert_eq!(
                md.lines(prefix, width, &theme, None),
                want.as_slice(),
                "{prefix:?} at {width}"
            );
            for s in want.iter().flat_map(|l| &l.spans) {
                assert!(
                    !s.content.chars().any(char::is_control),
                    "{:?} in {prefix:?}",
                    s.content
                );
            }
        }
    }
}

#[test]
fn unfinished_lines_do_not_flicker() {
    let theme = Theme::default();
    let r = |t: &str| plain(&render(t, 40, &theme, None));
    // A closing fence being typed is not shown as code.
    assert_eq!(r("```rust\nfn a() {}\n`"), r("```rust\nfn a() {}\n"));
    assert_eq!(r("```rust\nfn a() {}\n``"), r("```rust\nfn a() {}\n```"));
    assert_eq!(r("~~~\nx\n~~"), r("~~~\nx\n~~~\n"));
    // A list item being started does not make the paragraph a heading.
    assert_eq!(r("Options:\n-"), ["Options:"]);
    assert_eq!(r("Options:\n- a"), ["Options:", "", "• a"]);
    // But a finished message keeps its last line.
    assert_eq!(r("text\n-\n"), ["## text"]);
}

#[test]
fn giant_paragraphs_and_lists_are_soft_cut_and_streaming_still_equals_render() {
    let theme = Theme::default();
    // ~40 KB of one paragraph with single newlines, then a long list.
    let mut text = String::new();
    for i in 0..700 {
        text.push_str(&format!("line {i} of one very long paragraph with **bold** words\n"));
    }
    text.push('\n');
    for i in 0..400 {
        text.push_str(&format!("- item {i} in a long list\n"));
    }
    let mut scan = BlockScanner::default();
    scan.advance(&text);
    assert!(
        scan.soft.iter().filter(|s| **s).count() >= 4,
        "no soft cuts in {} bytes",
        text.len()
    );
    // Every block stays near the cut size.
    let mut prev = 0;
    for &s in &scan.starts {
        assert!(s - prev < SOFT_CUT + 200, "block of {} bytes", s - prev);
        prev = s;
    }
    // Streaming over many prefixes equals one-shot rendering.
    let mut sm = StreamingMarkdown::new();
    let step = 997;
    let mut end = 0;
    while end < text.len() {
        end = (end + step).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let got = sm.lines(&text[..end], 70, &theme, None).to_vec();
        assert_eq!(got, render(&text[..end], 70, &theme, None), "prefix {end}");
    }
    // A soft cut adds no blank line: the paragraph's lines run on.
    let lines = render(&text, 200, &theme, None);
    let blank = lines
        .iter()
        .filter(|l| l.spans.iter().all(|s| s.content.trim().is_empty()))
        .count();
    assert_eq!(blank, 1, "only the real paragraph break is blank");
}

#[test]
fn tables_are_never_soft_cut() {
    let mut text = String::from("| a | b |\n|---|---|\n");
    for i in 0..1000 {
        text.push_str(&format!("| row {i} | value {i} |\n"));
    }
    let mut scan = BlockScanner::default();
    scan.advance(&text);
    assert!(
        scan.starts.is_empty(),
        "a table was cut: {:?}",
        &scan.starts[..scan.starts.len().min(3)]
    );
}
