//! Tests of `tui::wrap`.

use super::*;
use ratatui::style::{Color, Style};

fn text(l: &Line) -> String {
    l.spans.iter().map(|s| s.content.as_ref()).collect()
}

fn texts(lines: &[Line]) -> Vec<String> {
    lines.iter().map(text).collect()
}

fn raw(s: &str) -> Vec<Span<'static>> {
    vec![Span::raw(s.to_string())]
}

fn wrap_plain(s: &str, w: u16) -> Vec<String> {
    texts(&wrap_spans(&raw(s), w, vec![], vec![]))
}

#[test]
fn fits_in_one_line() {
    assert_eq!(wrap_plain("hello world", 20), ["hello world"]);
    assert_eq!(wrap_plain("", 20), [""]);
}

#[test]
fn breaks_at_spaces_and_drops_them() {
    assert_eq!(
        wrap_plain("the quick brown fox jumps", 10),
        ["the quick", "brown fox", "jumps"]
    );
    assert_eq!(wrap_plain("aaa    bbb", 5), ["aaa", "bbb"]);
    assert_eq!(wrap_plain("a b c d e f", 3), ["a b", "c d", "e f"]);
}

#[test]
fn keeps_leading_whitespace_of_first_line() {
    assert_eq!(wrap_plain("    indented text here", 12), ["    indented", "text here"]);
}

#[test]
fn long_words_are_cut_by_grapheme() {
    assert_eq!(
        wrap_plain("see https://example.com/a/very/long/path", 12),
        ["see", "https://exam", "ple.com/a/ve", "ry/long/path"]
    );
    assert_eq!(wrap_plain("abcdefghij", 4), ["abcd", "efgh", "ij"]);
}

#[test]
fn cjk_and_emoji_are_two_columns() {
    let lines = wrap_plain("日本語のテキストです", 7);
    assert_eq!(lines, ["日本語", "のテキ", "ストで", "す"]);
    for l in &lines {
        assert!(str_width(l) <= 7);
    }
    let e = wrap_plain("👍🏽👍🏽👍🏽 ok 👨‍👩‍👧", 5);
    for l in &e {
        assert!(str_width(l) <= 5, "{l:?}");
    }
    assert_eq!(e.concat().replace(' ', ""), "👍🏽👍🏽👍🏽ok👨‍👩‍👧");
    // Mixed: ASCII word next to CJK may break between them.
    assert_eq!(wrap_plain("abc漢字", 4), ["abc", "漢字"]);
}

#[test]
fn combining_marks_are_zero_width() {
    let s = "e\u{301}e\u{301}e\u{301}e\u{301}";
    assert_eq!(str_width(s), 4);
    assert_eq!(wrap_plain(s, 2), ["e\u{301}e\u{301}", "e\u{301}e\u{301}"]);
}

#[test]
fn indents_on_first_and_rest() {
    let lines = wrap_spans(
        &raw("one two three four"),
        10,
        vec![Span::raw("- ")],
        vec![Span::raw("  ")],
    );
    assert_eq!(texts(&lines), ["- one two", "  three", "  four"]);
}

#[test]
fn styles_survive_breaks() {
    let red = Style::default().fg(Color::Red);
    let blue = Style::default().fg(Color::Blue);
    let spans = vec![
        Span::styled("red words here ", red),
        Span::styled("blue", blue),
        Span::raw("tail more"),
    ];
    let lines = wrap_spans(&spans, 9, vec![], vec![]);
    assert_eq!(texts(&lines), ["red words", "here", "bluetail", "more"]);
    assert_eq!(lines[1].spans[0].style, red);
    assert_eq!(lines[2].spans[0].content, "blue");
    assert_eq!(lines[2].spans[0].style, blue);
    assert_eq!(lines[2].spans[1].content, "tail");
    assert_eq!(lines[2].spans[1].style, Style::default());
}

#[test]
fn pieces_of_one_span_are_joined() {
    let lines = wrap_spans(&raw("aa bb cc dd ee"), 8, vec![], vec![]);
    assert_eq!(lines[0].spans.len(), 1);
    assert_eq!(lines[0].spans[0].content, "aa bb cc");
}

#[test]
fn tiny_widths_terminate() {
    for w in 0..4u16 {
        for s in ["", " ", "abc def", "日本語", "a\tb", "x\u{301}", "   ", "👨‍👩‍👧 z"] {
            let lines = wrap_spans(&raw(s), w, vec![Span::raw(">>>> ")], vec![Span::raw("  ")]);
            assert!(!lines.is_empty());
            assert!(lines.len() <= s.len() + 1);
            let hard = wrap_spans_hard(&raw(s), w, vec![Span::raw(">>>> ")], vec![Span::raw("  ")]);
            assert!(!hard.is_empty());
        }
    }
    assert_eq!(wrap_plain("abc def", 0), ["abc def"]);
    assert_eq!(wrap_plain("abc", 1), ["a", "b", "c"]);
    assert_eq!(wrap_plain("日本", 1), ["日", "本"]);
}

#[test]
fn hard_wrap_keeps_spaces() {
    let lines = wrap_spans_hard(&raw("    let x = 1;"), 8, vec![Span::raw("| ")], vec![Span::raw("> ")]);
    assert_eq!(texts(&lines), ["|     le", "> t x = ", "> 1;"]);
}

#[test]
fn never_wider_than_width() {
    let s = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, 日本語のテキスト sed do \
             eiusmod tempor https://example.com/some/really/long/url incididunt ut labore";
    for w in 4..60u16 {
        for l in wrap_spans(&raw(s), w, vec![Span::raw("> ")], vec![Span::raw("> ")]) {
            assert!(spans_width(&l.spans) <= usize::from(w), "w={w} {:?}", text(&l));
        }
    }
}

#[test]
fn ascii_fast_path_and_graphemes_agree_at_their_boundary() {
    // A combining accent on an ASCII base, CJK and emoji amid ASCII words.
    let t = "cafe\u{301} au lait 漢字 and more words here 🎉x ok";
    for w in 3..40u16 {
        let lines = wrap_spans(&[Span::raw(t)], w, vec![], vec![]);
        let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
        assert_eq!(
            squash(&texts(&lines).concat()),
            squash(t),
            "width {w}: text lost or changed"
        );
        for l in &lines {
            assert!(
                spans_width(&l.spans) <= usize::from(w).max(2),
                "width {w}: {:?}",
                text(l)
            );
            // The accent never leaves its base letter.
            assert!(!text(l).starts_with('\u{301}'), "width {w}: {:?}", text(l));
        }
    }
}
