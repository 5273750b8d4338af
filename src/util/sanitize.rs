//! Neutralising untrusted text (model and tool output) before it reaches a terminal.
//!
//! Control characters, including ESC that starts every terminal escape sequence,
//! are replaced by visible stand-ins; newlines and tabs survive.

use std::borrow::Cow;

/// True for characters that must never reach a terminal raw.
#[inline]
pub fn is_unsafe_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The visible stand-in for an unsafe control character.
fn stand_in(c: char) -> char {
    match c {
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
        '\u{7f}' => '\u{2421}',
        _ => '\u{fffd}',
    }
}

/// Replace unsafe control characters (ESC, CR, BEL, C1, bidi overrides…) with
/// visible symbols. Borrowed when the text is already clean (the common case).
pub fn terminal_safe(s: &str) -> Cow<'_, str> {
    // Fast path: everything printable ASCII or newline/tab.
    if s.bytes().all(|b| (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t') {
        return Cow::Borrowed(s);
    }
    if !s.chars().any(is_unsafe_control) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| if is_unsafe_control(c) { stand_in(c) } else { c })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_neutralised() {
        let evil = "hi\x1b[2J\x1b]52;c;ZXZpbA==\x07there\r\n\tok\u{9b}31m";
        let safe = terminal_safe(evil);
        assert!(!safe.chars().any(is_unsafe_control), "{safe:?}");
        assert!(safe.contains("hi␛[2J"));
        assert!(safe.contains("\n\tok"));
    }

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(terminal_safe("plain text\n"), Cow::Borrowed(_)));
        assert!(matches!(terminal_safe("héllo wörld ✓"), Cow::Borrowed(_)));
    }
}
