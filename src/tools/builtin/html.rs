//! HTML → readable text for `fetch_url`: a small hand-written converter.
//! Drops scripts, styles and other non-content elements, turns block
//! elements into line breaks, headings into `#` lines, list items into `- `,
//! links into `[text](url)`, decodes entities and collapses whitespace
//! (except inside `<pre>`). Never panics on malformed input.

/// Elements whose content is never shown.
const SKIP: [&str; 10] = [
    "script", "style", "noscript", "template", "svg", "iframe", "object", "canvas", "title", "select",
];
/// Elements that start and end on their own line.
const BLOCK: [&str; 34] = [
    "p",
    "div",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "main",
    "aside",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "table",
    "tr",
    "blockquote",
    "pre",
    "form",
    "fieldset",
    "figure",
    "figcaption",
    "address",
    "details",
    "summary",
    "hr",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "br",
];

/// The document's `<title>`, if any.
pub fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let end = open_end + lower[open_end..].find("</title")?;
    let t = collapse(&decode_entities(&html[open_end..end]));
    let t = t.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// Convert `html` to text; relative links are resolved against `base`.
pub fn to_text(html: &str, base: Option<&reqwest::Url>) -> String {
    let mut out = Out::default();
    let lower = html.to_ascii_lowercase();
    let bytes = html.as_bytes();
    let mut i = 0;
    let mut pre = 0usize;
    // Open links: (href, position in the output where the link text starts).
    let mut links: Vec<(Option<String>, usize)> = Vec::new();
    while i < html.len() {
        if bytes[i] != b'<' {
            let next = html[i..].find('<').map_or(html.len(), |n| i + n);
            out.text(&decode_entities(&html[i..next]), pre > 0);
            i = next;
            continue;
        }
        let rest = &lower[i..];
        if rest.starts_with("<!--") {
            i = rest.find("-->").map_or(html.len(), |n| i + n + 3);
            continue;
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            i = rest.find('>').map_or(html.len(), |n| i + n + 1);
            continue;
        }
        let Some(tag) = Tag::parse(&html[i..], &lower[i..]) else {
            // A '<' that does not start a tag is text.
            out.text("<", pre > 0);
            i += 1;
            continue;
        };
        i += tag.len;
        let name = tag.name.as_str();
        if !tag.closing && !tag.attrs.trim_end().ends_with('/') && SKIP.contains(&name) {
            // Skip to the matching end tag (or the end of the document).
            let end = format!("</{name}");
            i = lower[i..].find(&end).map_or(html.len(), |n| {
                i + n + lower[i + n..].find('>').map_or(end.len(), |g| g + 1)
            });
            continue;
        }
        match (name, tag.closing) {
            ("br", _) => out.newline(),
            ("hr", false) => out.block("---"),
            ("pre", false) => {
                out.block("");
                pre += 1;
            }
            ("pre", true) => {
                pre = pre.saturating_sub(1);
                out.block("");
            }
            ("li", false) => out.block("- "),
            ("h1" | "h2" | "h3" | "h4" | "h5" | "h6", false) => {
                out.paragraph();
                let level = name[1..].parse::<usize>().unwrap_or(1);
                out.raw(&format!("{} ", "#".repeat(level)));
            }
            ("p" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "blockquote" | "table" | "ul" | "ol", _) => {
                out.paragraph()
            }
            ("td" | "th", false) => out.raw(" | "),
            ("img", _) => {
                if let Some(alt) = tag.attr("alt").filter(|a| !a.trim().is_empty()) {
                    out.text(&format!("[image: {}]", alt.trim()), false);
                }
            }
            ("a", false) => {
                let href = tag.attr("href").and_then(|h| resolve(&h, base));
                links.push((href, out.s.len()));
            }
            ("a", true) => {
                if let Some((Some(href), start)) = links.pop() {
                    let text = out.s.get(start..).unwrap_or("").trim().to_string();
                    if !text.is_empty() && text != href {
                        out.s.truncate(start);
                        out.text(&format!("[{text}]({href})"), false);
                    }
                }
            }
            (n, _) if BLOCK.contains(&n) => out.newline(),
            _ => {}
        }
    }
    out.finish()
}

fn resolve(href: &str, base: Option<&reqwest::Url>) -> Option<String> {
    let href = href.trim();
    if href.is_empty() || href.starts_with('#') || href.starts_with("javascript:") {
        return None;
    }
    let url = match base {
        Some(b) => b.join(href).ok()?,
        None => reqwest::Url::parse(href).ok()?,
    };
    matches!(url.scheme(), "http" | "https").then(|| url.to_string())
}

struct Tag {
    name: String,
    closing: bool,
    /// Raw attribute text.
    attrs: String,
    /// Bytes the tag takes in the source.
    len: usize,
}

impl Tag {
    /// `src` and `lower` start with '<'.
    fn parse(src: &str, lower: &str) -> Option<Tag> {
        let b = lower.as_bytes();
        let mut j = 1;
        let closing = b.get(1) == Some(&b'/');
        if closing {
            j += 1;
        }
        let name_start = j;
        while j < b.len() && b[j].is_ascii_alphanumeric() {
            j += 1;
        }
        if j == name_start || !b[name_start].is_ascii_alphabetic() {
            return None;
        }
        let name = lower[name_start..j].to_string();
        // Find the closing '>' outside quotes.
        let attrs_start = j;
        let mut quote = None;
        while j < b.len() {
            match (quote, b[j]) {
                (None, b'>') => break,
                (None, q @ (b'"' | b'\'')) => quote = Some(q),
                (Some(q), c) if c == q => quote = None,
                _ => {}
            }
            j += 1;
        }
        let end = (j + 1).min(src.len());
        Some(Tag {
            name,
            closing,
            attrs: src[attrs_start..j.min(src.len())].to_string(),
            len: end,
        })
    }

    fn attr(&self, name: &str) -> Option<String> {
        let lower = self.attrs.to_ascii_lowercase();
        let mut from = 0;
        while let Some(n) = lower[from..].find(name) {
            let at = from + n;
            from = at + name.len();
            let before_ok = at == 0 || lower.as_bytes()[at - 1].is_ascii_whitespace();
            let after = lower[from..].trim_start();
            if !before_ok || !after.starts_with('=') {
                continue;
            }
            let value_at = self.attrs.len() - after.len() + 1;
            let v = self.attrs[value_at..].trim_start();
            let value = match v.chars().next() {
                Some(q @ ('"' | '\'')) => v[1..].split(q).next().unwrap_or(""),
                _ => v.split(|c: char| c.is_whitespace() || c == '>').next().unwrap_or(""),
            };
            return Some(decode_entities(value));
        }
        None
    }
}

/// Output with whitespace handling.
#[derive(Default)]
struct Out {
    s: String,
}

impl Out {
    fn text(&mut self, t: &str, pre: bool) {
        if pre {
            self.s.push_str(t);
            return;
        }
        for (k, word) in t.split(|c: char| c.is_whitespace()).enumerate() {
            if k > 0 && !self.s.is_empty() && !self.s.ends_with([' ', '\n']) {
                self.s.push(' ');
            }
            self.s.push_str(word);
        }
    }

    fn raw(&mut self, t: &str) {
        self.s.push_str(t);
    }

    fn newline(&mut self) {
        while self.s.ends_with(' ') {
            self.s.pop();
        }
        self.s.push('\n');
    }

    fn block(&mut self, prefix: &str) {
        if !self.s.is_empty() && !self.s.ends_with('\n') {
            self.newline();
        }
        self.s.push_str(prefix);
    }

    fn paragraph(&mut self) {
        self.newline();
        self.newline();
    }

    fn finish(self) -> String {
        let mut out = String::with_capacity(self.s.len());
        let mut blank = 0;
        for line in self.s.lines() {
            let line = line.trim_end();
            if line.trim().is_empty() {
                blank += 1;
                continue;
            }
            if !out.is_empty() {
                out.push_str(if blank > 0 { "\n\n" } else { "\n" });
            }
            blank = 0;
            out.push_str(line);
        }
        out
    }
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Decode `&amp;`, `&#39;`, `&#x2F;` and the common named entities; unknown ones stay.
pub fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest[1..]
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '#')
            .map(|n| n + 1);
        let (entity, after) = match end {
            Some(e) if e > 1 && e <= 32 => (&rest[1..e], &rest[e..]),
            None if rest.len() > 1 && rest.len() <= 32 => (&rest[1..], ""),
            _ => {
                out.push('&');
                rest = &rest[1..];
                continue;
            }
        };
        match entity_char(entity) {
            Some(c) => {
                if c != '\u{ad}' {
                    out.push(c);
                }
                rest = after.strip_prefix(';').unwrap_or(after);
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity_char(e: &str) -> Option<char> {
    if let Some(num) = e.strip_prefix('#') {
        let n = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return char::from_u32(n).filter(|c| *c != '\0');
    }
    Some(match e {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "middot" => '·',
        "bull" => '•',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "deg" => '°',
        "times" => '×',
        "divide" => '÷',
        "plusmn" => '±',
        "euro" => '€',
        "pound" => '£',
        "yen" => '¥',
        "cent" => '¢',
        "sect" => '§',
        "para" => '¶',
        "shy" => '\u{ad}',
        "larr" => '←',
        "rarr" => '→',
        "uarr" => '↑',
        "darr" => '↓',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_text_from_a_page() {
        let html = r#"<!DOCTYPE html><html><head><title>My &amp; Page</title>
            <style>body { color: red }</style><script>var x = "<p>not text</p>";</script></head>
            <body><nav><a href="/home">Home</a></nav>
            <h1>Main   title</h1><p>Hello <b>bold</b>
            world &mdash; see <a href="https://example.org/doc?a=1&amp;b=2">the docs</a>.</p>
            <!-- a comment <p>hidden</p> -->
            <ul><li>first</li><li>second &lt;item&gt;</li></ul>
            <pre>  keep
    spacing</pre><img src="x.png" alt="a cat"><p>a<br>b</p></body></html>"#;
        let base = reqwest::Url::parse("http://site.test/dir/page.html").unwrap();
        assert_eq!(title(html).as_deref(), Some("My & Page"));
        let text = to_text(html, Some(&base));
        assert_eq!(
            text,
            "[Home](http://site.test/home)\n\n# Main title\n\nHello bold world — see \
             [the docs](https://example.org/doc?a=1&b=2).\n\n- first\n- second <item>\n\n  keep\n    spacing\n\
             [image: a cat]\n\na\nb"
        );
    }

    #[test]
    fn malformed_input_never_panics() {
        for s in [
            "<",
            "<<>>",
            "<a href=",
            "<a href='x",
            "<script>never closed",
            "&",
            "&#",
            "&#xZZ;",
            "&#1114112;",
            "</",
            "<p",
            "a < b > c",
            "<é>",
            "&amp",
            "<!--",
            "<!doctype",
            "<a href=\"é\">é</a>",
            "</a></a>",
        ] {
            let _ = to_text(s, None);
            let _ = title(s);
        }
        assert_eq!(to_text("a < b and c > d", None), "a < b and c > d");
        assert_eq!(decode_entities("&amp &unknown; &#233;&#xe9; &"), "& &unknown; éé &");
    }

    #[test]
    fn random_markup_never_panics() {
        let pieces = [
            "<",
            ">",
            "</",
            "<a href=\"",
            "\"",
            "'",
            "<p>",
            "</p>",
            "<script>",
            "</script",
            "<!--",
            "-->",
            "&",
            "&#",
            "&amp;",
            "&#x1F600;",
            "é",
            "text ",
            "<pre>",
            "</pre>",
            "<h3>",
            "<li>",
            "<img alt='x'/>",
            "<svg/>",
            "=",
            "</a>",
            "<br/>",
            "\n",
            "<td>",
            "<title>",
            "</title>",
        ];
        let mut seed = 7u64;
        for _ in 0..3000 {
            let n = 1 + (next(&mut seed) % 16);
            let s: String = (0..n).map(|_| pieces[next(&mut seed) % pieces.len()]).collect();
            let _ = to_text(&s, reqwest::Url::parse("http://x.test/").ok().as_ref());
            let _ = title(&s);
        }
    }

    fn next(state: &mut u64) -> usize {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*state >> 33) as usize
    }
}
