//! A small, allocation-free JSON skimmer for hot stream paths.
//!
//! Walks one JSON document, letting the caller pick out a few fields and skip
//! the rest without building values. Strings without escapes are borrowed;
//! escaped ones are decoded by serde_json. Malformed input is an error (with
//! the byte offset), never a panic. Used where serde's full deserialisation
//! per streamed chunk would dominate the cost of a token.

use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkimError {
    pub offset: usize,
    pub what: &'static str,
}

impl std::fmt::Display for SkimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.what, self.offset)
    }
}

pub type Result<T> = std::result::Result<T, SkimError>;

/// A cursor over one JSON document.
pub struct Skim<'a> {
    b: &'a [u8],
    pos: usize,
}

const MAX_DEPTH: usize = 128;

/// True when `b` holds no `"` and no `\\` (it can sit inside a JSON string as is).
pub fn is_plain_string_body(b: &[u8]) -> bool {
    find_quote_or_backslash(b, 0) == b.len()
}

/// Index of the first `"` or `\\` at or after `from` (or `b.len()`), eight bytes
/// per step (SWAR). Strings in stream chunks are short: a SIMD search's set-up
/// costs more than it saves on them, a byte loop is four times slower.
#[inline]
fn find_quote_or_backslash(b: &[u8], from: usize) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    #[inline]
    fn has(x: u64, byte: u8) -> u64 {
        let y = x ^ (LO * u64::from(byte));
        y.wrapping_sub(LO) & !y & HI
    }
    let mut i = from;
    while i + 8 <= b.len() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i..i + 8]);
        let x = u64::from_le_bytes(w);
        // The lowest flagged byte is always a true match.
        let m = has(x, b'"') | has(x, b'\\');
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() && b[i] != b'"' && b[i] != b'\\' {
        i += 1;
    }
    i
}

impl<'a> Skim<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Skim { b, pos: 0 }
    }

    fn err<T>(&self, what: &'static str) -> Result<T> {
        Err(SkimError { offset: self.pos, what })
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            if matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.pos).copied()
    }

    #[inline]
    fn eat(&mut self, c: u8, what: &'static str) -> Result<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(what)
        }
    }

    /// Only whitespace may follow the document.
    pub fn end(&mut self) -> Result<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => self.err("trailing characters"),
        }
    }

    /// The raw bytes between the quotes of a string, escapes left as they are.
    #[inline]
    fn raw_str(&mut self) -> Result<&'a [u8]> {
        self.eat(b'"', "expected a string")?;
        let start = self.pos;
        let b = self.b;
        let mut i = start;
        loop {
            i = find_quote_or_backslash(b, i);
            match b.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(&b[start..i]);
                }
                Some(_) => i += 2, // backslash + escaped char
                None => {
                    self.pos = b.len();
                    return self.err("unterminated string");
                }
            }
        }
    }

    /// Byte offset of the cursor.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// A string value, decoded.
    pub fn string(&mut self) -> Result<Cow<'a, str>> {
        let start = self.pos;
        let raw = self.raw_str()?;
        if memchr::memchr(b'\\', raw).is_none() {
            return std::str::from_utf8(raw)
                .map(Cow::Borrowed)
                .or_else(|_| self.err("invalid UTF-8 in a string"));
        }
        // Escapes: let serde_json decode the quoted slice exactly.
        let quoted = &self.b[self.ws_before(start)..self.pos];
        serde_json::from_slice::<String>(quoted)
            .map(Cow::Owned)
            .or_else(|_| self.err("invalid escape in a string"))
    }

    fn ws_before(&self, start: usize) -> usize {
        let mut i = start;
        while matches!(self.b.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            i += 1;
        }
        i
    }

    /// A string, or `null` as `None`.
    pub fn opt_string(&mut self) -> Result<Option<Cow<'a, str>>> {
        if self.null()? {
            Ok(None)
        } else {
            self.string().map(Some)
        }
    }

    /// Consume `null` if it is next.
    pub fn null(&mut self) -> Result<bool> {
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    #[inline]
    fn literal(&mut self, word: &'static [u8]) -> Result<()> {
        if self.b[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            self.err("invalid literal")
        }
    }

    #[inline]
    fn number(&mut self) -> Result<()> {
        let start = self.pos;
        while let Some(&c) = self.b.get(self.pos) {
            if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E') {
                self.pos += 1;
            } else {
                break;
            }
        }
        if self.pos == start {
            self.err("expected a value")
        } else {
            Ok(())
        }
    }

    /// Visit each key of an object; `f` must consume the value.
    pub fn object(&mut self, mut f: impl FnMut(&'a [u8], &mut Self) -> Result<()>) -> Result<()> {
        self.eat(b'{', "expected an object")?;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let key = self.raw_str()?;
            self.eat(b':', "expected ':'")?;
            f(key, self)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or '}'"),
            }
        }
    }

    /// Visit each element of an array; `f` must consume the element.
    pub fn array(&mut self, mut f: impl FnMut(usize, &mut Self) -> Result<()>) -> Result<()> {
        self.eat(b'[', "expected an array")?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        let mut i = 0;
        loop {
            f(i, self)?;
            i += 1;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or ']'"),
            }
        }
    }

    /// Skip any value.
    #[inline]
    pub fn skip(&mut self) -> Result<()> {
        // Scalars inline; only containers recurse.
        match self.peek() {
            Some(b'"') => self.raw_str().map(|_| ()),
            Some(b'0'..=b'9' | b'-') => self.number(),
            _ => self.skip_depth(0),
        }
    }

    fn skip_depth(&mut self, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return self.err("nesting too deep");
        }
        match self.peek() {
            Some(b'"') => self.raw_str().map(|_| ()),
            Some(b'{') => self.object(|_, s| s.skip_depth(depth + 1)),
            Some(b'[') => self.array(|_, s| s.skip_depth(depth + 1)),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(_) => self.number(),
            None => self.err("unexpected end of data"),
        }
    }

    /// Skip a value and return its raw bytes (for rare fields parsed by serde).
    pub fn raw_value(&mut self) -> Result<&'a [u8]> {
        self.ws();
        let start = self.pos;
        self.skip()?;
        Ok(&self.b[start..self.pos])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collect every (key path, string value) by skimming, to compare with serde.
    fn strings(doc: &str) -> Result<Vec<String>> {
        fn walk(s: &mut Skim, out: &mut Vec<String>) -> Result<()> {
            match s.peek() {
                Some(b'{') => s.object(|_, s| walk(s, out)),
                Some(b'[') => s.array(|_, s| walk(s, out)),
                Some(b'"') => {
                    out.push(s.string()?.into_owned());
                    Ok(())
                }
                _ => s.skip(),
            }
        }
        let mut s = Skim::new(doc.as_bytes());
        let mut out = Vec::new();
        walk(&mut s, &mut out)?;
        s.end()?;
        Ok(out)
    }

    fn serde_strings(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| serde_strings(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| serde_strings(x, out)),
            _ => {}
        }
    }

    #[test]
    fn agrees_with_serde_on_valid_documents() {
        for doc in [
            r#"{"a":"x","b":[1,-2.5e3,true,false,null,{"c":"é\n\"q\"\\ \u00e9 \ud83d\ude00"}],"d":{}, "e" : [ ] }"#,
            r#" { "choices" : [ { "delta" : { "content" : "Hi" } , "finish_reason" : null } ] } "#,
            r#"{"k":"\/\b\f\r\t"}"#,
        ] {
            let v: serde_json::Value = serde_json::from_str(doc).unwrap();
            let mut expected = Vec::new();
            serde_strings(&v, &mut expected);
            let mut got = strings(doc).unwrap();
            // serde_json's map is ordered by key; compare as sets of values.
            expected.sort();
            got.sort();
            assert_eq!(got, expected, "{doc}");
        }
    }

    #[test]
    fn malformed_documents_are_errors_not_panics() {
        for doc in [
            "",
            "{",
            r#"{"a":"unterminated"#,
            r#"{"a":"x\"#,
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            r#"{"a":nul}"#,
            r#"{"a":tru}"#,
            r#"{"a":}"#,
            r#"{"a":1}x"#,
            r#"[1 2]"#,
            r#"{"a":"\x"}"#,
            "{\"a\":\"\u{0}\"",
        ] {
            assert!(strings(doc).is_err(), "accepted: {doc:?}");
        }
        let deep = "[".repeat(1000) + &"]".repeat(1000);
        assert!(Skim::new(deep.as_bytes()).skip().is_err());
    }

    #[test]
    fn swar_search_finds_the_first_quote_or_backslash_anywhere() {
        for len in 0..40 {
            for pos in 0..=len {
                for c in [b'"', b'\\'] {
                    let mut v = vec![b'a'; len];
                    // Bytes that trip naive SWAR tricks: 0x80+, 0x21, 0x23, 0x5b, 0x5d.
                    for (k, x) in v.iter_mut().enumerate() {
                        *x = [b'a', 0x80, 0x21, 0x23, 0x5b, 0x5d, 0xff][k % 7];
                    }
                    if pos < len {
                        v[pos] = c;
                    }
                    for from in 0..=pos.min(len) {
                        assert_eq!(
                            find_quote_or_backslash(&v, from),
                            pos,
                            "len {len} pos {pos} from {from}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn invalid_utf8_is_rejected() {
        let mut s = Skim::new(b"\"\xff\xfe\"");
        assert!(s.string().is_err());
    }

    #[test]
    fn raw_value_returns_the_exact_slice() {
        let mut s = Skim::new(br#"{"u": {"p":1,"c":[2]} , "x":null}"#);
        let mut raws = Vec::new();
        s.object(|_, s| {
            raws.push(String::from_utf8(s.raw_value()?.to_vec()).unwrap());
            Ok(())
        })
        .unwrap();
        assert_eq!(raws, vec![r#"{"p":1,"c":[2]}"#, "null"]);
    }
}
