//! Unified diff parser, lenient where models are sloppy: `a/` `b/` prefixes
//! optional, hunk line counts may be wrong, `@@ @@` headers without numbers
//! are accepted (the hunk is then found by its content), a context line whose
//! leading space was lost (an empty line) is still context, and text around
//! the file sections (`diff --git`, `index`, prose) is ignored.

/// One file's changes.
#[derive(Debug, Clone, PartialEq)]
pub struct FilePatch {
    /// `None` = `/dev/null` (the file is created).
    pub old: Option<String>,
    /// `None` = `/dev/null` (the file is deleted).
    pub new: Option<String>,
    pub hunks: Vec<Hunk>,
}

impl FilePatch {
    /// The path for messages.
    pub fn name(&self) -> &str {
        self.new.as_deref().or(self.old.as_deref()).unwrap_or("/dev/null")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Context(String),
    Remove(String),
    Add(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hunk {
    /// The `@@ … @@` line, for messages.
    pub header: String,
    /// 1-based start and length on the old side, when the header had numbers.
    pub old_start: Option<usize>,
    pub old_len: Option<usize>,
    pub lines: Vec<Line>,
    /// `\ No newline at end of file` after an old-side / new-side last line.
    pub old_no_eol: bool,
    pub new_no_eol: bool,
}

impl Hunk {
    /// Lines the file must contain (context and removed), in order.
    pub fn old_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|l| match l {
            Line::Context(s) | Line::Remove(s) => Some(s.as_str()),
            Line::Add(_) => None,
        })
    }

    pub fn counts(&self) -> (usize, usize) {
        self.lines.iter().fold((0, 0), |(a, r), l| match l {
            Line::Add(_) => (a + 1, r),
            Line::Remove(_) => (a, r + 1),
            Line::Context(_) => (a, r),
        })
    }
}

const SHAPE: &str = "a unified diff has, per file, a `--- a/PATH` line, a `+++ b/PATH` line, then hunks: \
    `@@ -START,COUNT +START,COUNT @@` followed by lines starting with ' ' (context), '-' (removed) or '+' (added)";

/// Parse a patch into file sections. Errors say which line is wrong and why.
pub fn parse(patch: &str) -> Result<Vec<FilePatch>, String> {
    let mut lines: Vec<&str> = patch.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    let mut files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if is_file_header(&lines, i) {
            let (old, new) =
                header_paths(&lines[i][4..], &lines[i + 1][4..]).map_err(|e| format!("line {}: {e}", i + 1))?;
            i += 2;
            let mut hunks = Vec::new();
            while i < lines.len() && lines[i].starts_with("@@") {
                let (hunk, next) = parse_hunk(&lines, i)?;
                hunks.push(hunk);
                i = next;
            }
            files.push(FilePatch { old, new, hunks });
            continue;
        }
        if line.starts_with("@@") {
            return Err(format!(
                "line {}: hunk `{line}` has no file header before it; {SHAPE}",
                i + 1
            ));
        }
        if line.starts_with("GIT binary patch") || (line.starts_with("Binary files ") && line.ends_with(" differ")) {
            return Err(format!(
                "line {}: binary patches are not supported; use write_file for that file",
                i + 1
            ));
        }
        i += 1;
    }
    if files.is_empty() {
        let hint = if patch.contains("*** Begin Patch") {
            " (this is the `*** Begin Patch` format; apply_patch takes a unified diff)"
        } else {
            ""
        };
        return Err(format!("no file header found{hint}; {SHAPE}"));
    }
    Ok(files)
}

fn is_file_header(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "))
}

/// `a/x`, `b/x` → `x`, `x`; `/dev/null` → `None`. Prefixes are stripped only
/// when both sides follow the git convention.
fn header_paths(old: &str, new: &str) -> Result<(Option<String>, Option<String>), String> {
    let old = one_path(old)?;
    let new = one_path(new)?;
    if old.is_none() && new.is_none() {
        return Err("both sides of the file header are /dev/null".into());
    }
    let git = old.as_deref().is_none_or(|p| p.starts_with("a/")) && new.as_deref().is_none_or(|p| p.starts_with("b/"));
    let strip = |p: Option<String>| if git { p.map(|p| p[2..].to_string()) } else { p };
    Ok((strip(old), strip(new)))
}

fn one_path(raw: &str) -> Result<Option<String>, String> {
    // A tab starts the timestamp (`--- a.txt\t2024-01-01 …`).
    let raw = raw.split('\t').next().unwrap_or("").trim();
    let path = match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(quoted) => unquote(quoted),
        None => raw.to_string(),
    };
    if path.is_empty() {
        return Err("a file header has no path".into());
    }
    Ok(if path == "/dev/null" { None } else { Some(path) })
}

/// Git's C-style quoting of unusual paths (octal escapes for UTF-8 bytes).
fn unquote(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            i += 1;
            match b[i] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'"' => out.push(b'"'),
                b'\\' => out.push(b'\\'),
                d @ b'0'..=b'3' if i + 2 < b.len() && b[i + 1].is_ascii_digit() && b[i + 2].is_ascii_digit() => {
                    out.push((d - b'0') * 64 + (b[i + 1] - b'0') * 8 + (b[i + 2] - b'0'));
                    i += 2;
                }
                other => out.push(other),
            }
        } else {
            out.push(b[i]);
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `@@ -12,5 +12,6 @@ fn x` → (Some(12), Some(5)); `@@ @@` → (None, None).
fn hunk_numbers(header: &str) -> Result<(Option<usize>, Option<usize>), String> {
    let inner = header.trim_start_matches('@').trim_start();
    let Some(old) = inner.strip_prefix('-') else {
        // No numbers at all ("@@ @@", "@@ fn main @@"): locate the hunk by content.
        return Ok((None, None));
    };
    let spec = old.split_whitespace().next().unwrap_or("");
    let mut parts = spec.splitn(2, ',');
    let start = parts.next().unwrap_or("").parse::<usize>();
    let len = parts.next().map(str::parse::<usize>);
    match (start, len) {
        (Ok(s), None) => Ok((Some(s), Some(1))),
        (Ok(s), Some(Ok(l))) => Ok((Some(s), Some(l))),
        _ => Err(format!(
            "bad hunk header `{header}`; write it as `@@ -START,COUNT +START,COUNT @@`"
        )),
    }
}

fn new_len(header: &str) -> Option<usize> {
    let plus = header.split_whitespace().find(|w| w.starts_with('+'))?;
    let mut parts = plus[1..].splitn(2, ',');
    let _start: usize = parts.next()?.parse().ok()?;
    match parts.next() {
        Some(l) => l.parse().ok(),
        None => Some(1),
    }
}

/// A line that may belong to a hunk body.
fn is_body_line(lines: &[&str], j: usize) -> bool {
    let l = lines[j];
    (l.starts_with([' ', '+', '-', '\\']) && !is_file_header(lines, j)) || l.is_empty()
}

/// Parse the hunk starting at `lines[i]` (its `@@` line); returns it and the
/// index of the first line after it.
fn parse_hunk(lines: &[&str], i: usize) -> Result<(Hunk, usize), String> {
    let header = lines[i];
    let (old_start, old_len) = hunk_numbers(header).map_err(|e| format!("line {}: {e}", i + 1))?;
    let want_new = old_len.and(new_len(header));
    let mut hunk = Hunk {
        header: header.to_string(),
        old_start,
        old_len,
        lines: Vec::new(),
        old_no_eol: false,
        new_no_eol: false,
    };
    let (mut n_old, mut n_new) = (0usize, 0usize);
    let mut j = i + 1;
    while j < lines.len() {
        let l = lines[j];
        let done = match (old_len, want_new) {
            (Some(o), Some(n)) => n_old >= o && n_new >= n,
            _ => false,
        };
        let counted = old_len.is_some() && want_new.is_some();
        if l.starts_with("@@") || is_file_header(lines, j) {
            break;
        }
        if l.is_empty() {
            // A blank context line that lost its space, or the blank lines after
            // the hunk: it is context only if more hunk lines follow.
            let more = lines[j..]
                .iter()
                .position(|x| !x.is_empty())
                .is_some_and(|k| is_body_line(lines, j + k) && !lines[j + k].starts_with("@@"));
            if (done || !counted) && !more {
                break;
            }
            hunk.lines.push(Line::Context(String::new()));
            n_old += 1;
            n_new += 1;
            j += 1;
            continue;
        }
        let rest = l.get(1..).unwrap_or("");
        match l.as_bytes()[0] {
            b' ' => {
                hunk.lines.push(Line::Context(rest.to_string()));
                n_old += 1;
                n_new += 1;
            }
            b'-' => {
                hunk.lines.push(Line::Remove(rest.to_string()));
                n_old += 1;
            }
            b'+' => {
                hunk.lines.push(Line::Add(rest.to_string()));
                n_new += 1;
            }
            b'\\' => match hunk.lines.last() {
                Some(Line::Context(_)) => {
                    hunk.old_no_eol = true;
                    hunk.new_no_eol = true;
                }
                Some(Line::Remove(_)) => hunk.old_no_eol = true,
                Some(Line::Add(_)) => hunk.new_no_eol = true,
                None => {}
            },
            _ => {
                if done || !counted || l.starts_with("diff ") {
                    break;
                }
                return Err(format!(
                    "line {}: `{}` is inside the hunk `{header}` but does not start with ' ' (context), \
                     '-' (removed) or '+' (added); every unchanged line needs one leading space",
                    j + 1,
                    l.chars().take(80).collect::<String>()
                ));
            }
        }
        j += 1;
    }
    if hunk.lines.is_empty() {
        return Err(format!("line {}: the hunk `{header}` has no lines", i + 1));
    }
    Ok((hunk, j))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_style_multi_file_patch() {
        let p = "diff --git a/src/a.rs b/src/a.rs\nindex 1..2 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n\
                 @@ -1,3 +1,3 @@ fn main\n one\n-two\n+TWO\n three\n@@ -10,2 +10,3 @@\n x\n+y\n z\n\
                 --- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n\\ No newline at end of file\n\
                 --- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
        let f = parse(p).unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!(
            (f[0].old.as_deref(), f[0].new.as_deref()),
            (Some("src/a.rs"), Some("src/a.rs"))
        );
        assert_eq!(f[0].hunks.len(), 2);
        assert_eq!(f[0].hunks[0].old_start, Some(1));
        assert_eq!(
            f[0].hunks[0].lines,
            vec![
                Line::Context("one".into()),
                Line::Remove("two".into()),
                Line::Add("TWO".into()),
                Line::Context("three".into())
            ]
        );
        assert_eq!(f[0].hunks[1].counts(), (1, 0));
        assert_eq!((f[1].old.as_deref(), f[1].new.as_deref()), (None, Some("new.txt")));
        assert!(f[1].hunks[0].new_no_eol && !f[1].hunks[0].old_no_eol);
        assert_eq!((f[2].old.as_deref(), f[2].new.as_deref()), (Some("gone.txt"), None));
        assert_eq!(f[2].hunks[0].old_len, Some(1));
    }

    #[test]
    fn lenient_forms() {
        // No prefixes, timestamps, CRLF, a blank context line without its space,
        // wrong counts, trailing prose.
        let p = "--- x.txt\t2024-01-01\r\n+++ x.txt\t2024-01-02\r\n@@ -1,2 +1,2 @@\r\n a\r\n\r\n-b\r\n+B\r\n c\r\n\r\nThanks!\r\n";
        let f = parse(p).unwrap();
        assert_eq!(f[0].old.as_deref(), Some("x.txt"));
        assert_eq!(
            f[0].hunks[0].lines,
            vec![
                Line::Context("a".into()),
                Line::Context("".into()),
                Line::Remove("b".into()),
                Line::Add("B".into()),
                Line::Context("c".into())
            ]
        );
        // Headers without numbers; a/ only on one side means a real folder named a.
        let f = parse("--- a/x\n+++ a/x\n@@ @@\n-1\n+2\n").unwrap();
        assert_eq!(f[0].old.as_deref(), Some("a/x"));
        assert_eq!(f[0].hunks[0].old_start, None);
        let f = parse("--- \"a/sp ace\\303\\251\"\n+++ \"b/sp ace\\303\\251\"\n@@ -1 +1 @@\n-x\n+y\n").unwrap();
        assert_eq!(f[0].new.as_deref(), Some("sp aceé"));
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert!(parse("just text").unwrap_err().contains("no file header"));
        let e = parse("*** Begin Patch\n*** Update File: x\n").unwrap_err();
        assert!(
            e.contains("`*** Begin Patch` format") && e.contains("`--- a/PATH`"),
            "{e}"
        );
        assert!(
            parse("@@ -1 +1 @@\n-a\n+b\n")
                .unwrap_err()
                .contains("no file header before it")
        );
        let e = parse("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\nb\n c\n").unwrap_err();
        assert!(e.contains("line 5") && e.contains("leading space"), "{e}");
        let e = parse("--- a/x\n+++ b/x\n@@ -x +1 @@\n a\n").unwrap_err();
        assert!(e.contains("bad hunk header"), "{e}");
        let e = parse("--- a/x\n+++ b/x\n@@ -1 +1 @@\n").unwrap_err();
        assert!(e.contains("no lines"), "{e}");
        assert!(
            parse("--- /dev/null\n+++ /dev/null\n")
                .unwrap_err()
                .contains("both sides")
        );
        assert!(
            parse("--- a/x\n+++ b/x\nGIT binary patch\n")
                .unwrap_err()
                .contains("binary")
        );
    }
}
