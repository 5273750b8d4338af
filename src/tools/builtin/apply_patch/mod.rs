//! `apply_patch`: apply a unified diff to files in the workspace — one or
//! more files, new files from `/dev/null`, deletions to `/dev/null`, renames,
//! several hunks per file.
//!
//! All-or-nothing: every hunk of every file is checked against the file first
//! (whitespace at line ends is ignored, and a hunk whose context moved is
//! found near the stated line); only when everything applies are the files
//! written, each atomically. On a mismatch the error names the file and hunk
//! and shows the expected lines next to the closest lines of the file, so the
//! model can correct its patch.

mod parse;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

pub use parse::{FilePatch, Hunk, Line, parse};

use super::{blocking, looks_binary, with_field, write_file_atomic};
use crate::tools::{ToolContext, ToolError, ToolFuture, TypedTool, Workspace};

const NAME: &str = "apply_patch";
/// Files bigger than this are not patched.
const MAX_FILE: u64 = 8 * 1024 * 1024;
/// Line numbers above this are treated as this (no file is that long).
const MAX_LINE_NO: usize = isize::MAX as usize / 4;
/// Lines of a hunk shown in a mismatch report.
const SHOW_LINES: usize = 30;

/// Arguments of `apply_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchArgs {
    /// A unified diff, as `git diff` or `diff -u` print it. For each file: `--- a/PATH` and `+++ b/PATH`
    /// (paths relative to the workspace root; `/dev/null` on the `---` side creates a file, on the `+++`
    /// side deletes it), then hunks: `@@ -START,COUNT +START,COUNT @@` followed by lines starting with ' '
    /// (unchanged context), '-' (removed) or '+' (added). Include about 3 lines of context around each
    /// change, copied exactly from the file.
    pub patch: String,
}

/// Applies unified diffs; see the module doc.
pub struct ApplyPatch;

impl TypedTool for ApplyPatch {
    type Args = ApplyPatchArgs;
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = "Edit files in the workspace by applying a unified diff (one or more \
        files; create files from /dev/null, delete them to /dev/null). Every hunk is checked first; if any \
        does not match the file, nothing is written and the error shows the expected and actual lines. \
        Context lines must match the file (whitespace at line ends is ignored; a hunk a few lines off is \
        still found).";

    fn run(self: Arc<Self>, args: ApplyPatchArgs, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let files = parse(&args.patch).map_err(|e| ToolError::invalid(NAME, "patch", e))?;
            let ws = ctx.workspace.clone();
            blocking(NAME, move || apply_all(&ws, &files)).await
        })
    }
}

/// A text file as lines (each without its `\n`; a `\r` of CRLF files stays on the line).
#[derive(Debug, Clone, PartialEq)]
struct Doc {
    lines: Vec<String>,
    eol_at_end: bool,
    crlf: bool,
}

impl Doc {
    fn empty() -> Doc {
        Doc {
            lines: Vec::new(),
            eol_at_end: true,
            crlf: false,
        }
    }

    fn parse(text: &str) -> Doc {
        if text.is_empty() {
            return Doc::empty();
        }
        let nl = text.matches('\n').count();
        let crlf = nl > 0 && text.matches("\r\n").count() * 2 >= nl;
        let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
        let eol_at_end = text.ends_with('\n');
        if eol_at_end {
            lines.pop();
        }
        Doc {
            lines,
            eol_at_end,
            crlf,
        }
    }

    fn render(&self) -> String {
        let mut s = self.lines.join("\n");
        if self.eol_at_end && !self.lines.is_empty() {
            s.push('\n');
        }
        s
    }
}

/// Lines are equal when they differ only in whitespace at the end (and `\r`).
fn same(file: &str, patch: &str) -> bool {
    file.trim_end() == patch.trim_end()
}

/// A file touched by the patch: as it is on disk and as the patch leaves it.
struct FileState {
    path: PathBuf,
    shown: String,
    original: Option<String>,
    current: Option<Doc>,
}

fn failed(msg: String) -> ToolError {
    ToolError::failed(NAME, format!("{msg}. Nothing was written."))
}

/// Apply every section in memory, then write (or delete) the changed files.
fn apply_all(ws: &Workspace, files: &[FilePatch]) -> Result<String, ToolError> {
    let mut states: Vec<FileState> = Vec::new();
    let mut report = Vec::new();
    for fp in files {
        let (adds, removes) = fp.hunks.iter().fold((0, 0), |(a, r), h| {
            let (ha, hr) = h.counts();
            (a + ha, r + hr)
        });
        match (&fp.old, &fp.new) {
            (None, Some(new)) => {
                let i = state(ws, &mut states, new)?;
                let st = &mut states[i];
                if st.current.is_some() {
                    return Err(failed(format!(
                        "`{}` already exists, but the patch creates it (`--- /dev/null`); make the patch \
                         against its current content, or use write_file to replace it",
                        st.shown
                    )));
                }
                let (doc, _) = apply_hunks(&Doc::empty(), fp, &st.shown)?;
                st.current = Some(doc);
                report.push(format!("created {} (+{adds} lines)", st.shown));
            }
            (Some(old), new) => {
                let i = state(ws, &mut states, old)?;
                let Some(current) = &states[i].current else {
                    return Err(failed(format!(
                        "`{old}` does not exist; check the path (relative to the workspace root), or create \
                         the file with a `--- /dev/null` header"
                    )));
                };
                if fp.hunks.is_empty() && new.as_deref() == Some(old.as_str()) {
                    return Err(ToolError::invalid(
                        NAME,
                        "patch",
                        format!("the section for `{old}` has no hunks (`@@ … @@` followed by changed lines)"),
                    ));
                }
                let (doc, notes) = apply_hunks(current, fp, &states[i].shown)?;
                let hunks = match fp.hunks.len() {
                    1 => "1 hunk".to_string(),
                    n => format!("{n} hunks"),
                };
                match new {
                    None => {
                        if !doc.lines.is_empty() {
                            return Err(failed(format!(
                                "the patch deletes `{}`, but its hunks leave {} of its lines; list every line \
                                 of the file as a '-' line",
                                states[i].shown,
                                doc.lines.len()
                            )));
                        }
                        states[i].current = None;
                        report.push(format!("deleted {}", states[i].shown));
                    }
                    Some(new) => {
                        let j = state(ws, &mut states, new)?;
                        if i == j {
                            states[i].current = Some(doc);
                            report.push(format!("modified {} ({hunks}, +{adds} -{removes})", states[i].shown));
                        } else {
                            if states[j].current.is_some() {
                                return Err(failed(format!(
                                    "the patch renames `{}` to `{}`, which already exists",
                                    states[i].shown, states[j].shown
                                )));
                            }
                            states[i].current = None;
                            states[j].current = Some(doc);
                            report.push(format!(
                                "renamed {} -> {} ({hunks}, +{adds} -{removes})",
                                states[i].shown, states[j].shown
                            ));
                        }
                    }
                }
                report.extend(notes.into_iter().map(|n| format!("  {n}")));
            }
            (None, None) => {
                return Err(ToolError::invalid(
                    NAME,
                    "patch",
                    "a file header has /dev/null on both sides",
                ));
            }
        }
    }
    write_all(&states)?;
    let changed = report.iter().filter(|l| !l.starts_with(' ')).count();
    Ok(format!(
        "patch applied: {changed} file{} changed\n{}\n",
        if changed == 1 { "" } else { "s" },
        report.join("\n")
    ))
}

/// The index of the state for `given`, loading the file on first use.
fn state(ws: &Workspace, states: &mut Vec<FileState>, given: &str) -> Result<usize, ToolError> {
    let path = ws.writable(NAME, given).map_err(|e| with_field(e, "patch"))?;
    if let Some(i) = states.iter().position(|s| s.path == path) {
        return Ok(i);
    }
    let shown = ws.display(&path);
    let original = match std::fs::metadata(&path) {
        Err(_) => None,
        Ok(m) if m.is_dir() => return Err(failed(format!("`{shown}` is a folder"))),
        Ok(m) if m.len() > MAX_FILE => {
            return Err(failed(format!(
                "`{shown}` is too big to patch ({} bytes); use write_file",
                m.len()
            )));
        }
        Ok(_) => {
            let bytes = std::fs::read(&path).map_err(|e| failed(format!("cannot read `{shown}`: {e}")))?;
            if looks_binary(&bytes) {
                return Err(failed(format!(
                    "`{shown}` is a binary file; apply_patch edits text files"
                )));
            }
            Some(String::from_utf8(bytes).map_err(|_| {
                failed(format!(
                    "`{shown}` is not UTF-8 text; apply_patch edits UTF-8 text files"
                ))
            })?)
        }
    };
    states.push(FileState {
        path,
        shown,
        current: original.as_deref().map(Doc::parse),
        original,
    });
    Ok(states.len() - 1)
}

/// Write the files that changed (new content first, deletions last).
fn write_all(states: &[FileState]) -> Result<(), ToolError> {
    let mut done: Vec<&str> = Vec::new();
    let partial = |done: &[&str]| {
        if done.is_empty() {
            "nothing was written".to_string()
        } else {
            format!("already written: {}", done.join(", "))
        }
    };
    for st in states {
        let Some(doc) = &st.current else { continue };
        let text = doc.render();
        if st.original.as_deref() == Some(text.as_str()) {
            continue;
        }
        let r = match st.path.parent() {
            Some(parent) => std::fs::create_dir_all(parent),
            None => Ok(()),
        }
        .and_then(|()| write_file_atomic(&st.path, text.as_bytes()));
        if let Err(e) = r {
            return Err(ToolError::failed(
                NAME,
                format!("cannot write `{}`: {e} ({})", st.shown, partial(&done)),
            ));
        }
        done.push(&st.shown);
    }
    for st in states {
        if st.current.is_none()
            && st.original.is_some()
            && let Err(e) = std::fs::remove_file(&st.path)
        {
            return Err(ToolError::failed(
                NAME,
                format!("cannot delete `{}`: {e} ({})", st.shown, partial(&done)),
            ));
        }
    }
    Ok(())
}

/// Apply a file section's hunks to `doc`; notes say where hunks matched away
/// from their stated line.
fn apply_hunks(doc: &Doc, fp: &FilePatch, shown: &str) -> Result<(Doc, Vec<String>), ToolError> {
    let mut out = doc.clone();
    let mut notes = Vec::new();
    let mut min_pos = 0usize;
    let mut delta = 0isize;
    for (k, h) in fp.hunks.iter().enumerate() {
        let old: Vec<&str> = h.old_lines().collect();
        let n = out.lines.len();
        // 0-based; absurd line numbers are clamped so the arithmetic cannot overflow.
        let stated = h
            .old_start
            .map(|s| if h.old_len == Some(0) { s } else { s.saturating_sub(1) })
            .map(|s| s.min(MAX_LINE_NO) as isize);
        let expected = stated
            .map(|s| (s + delta).max(0) as usize)
            .unwrap_or(min_pos)
            .clamp(min_pos.min(n), n);
        let pos = if old.is_empty() {
            Some(expected)
        } else {
            find(&out.lines, &old, min_pos, expected)
        };
        let Some(pos) = pos else {
            return Err(failed(mismatch(&out.lines, h, k, shown, expected)));
        };
        let mut repl = Vec::with_capacity(h.lines.len());
        let mut at = pos;
        for l in &h.lines {
            match l {
                Line::Context(_) => {
                    repl.push(out.lines[at].clone());
                    at += 1;
                }
                Line::Remove(_) => at += 1,
                Line::Add(s) if out.crlf && !s.ends_with('\r') => repl.push(format!("{s}\r")),
                Line::Add(s) => repl.push(s.clone()),
            }
        }
        let reaches_end = pos + old.len() == n;
        let added = repl.len();
        out.lines.splice(pos..pos + old.len(), repl);
        if reaches_end {
            if h.new_no_eol {
                out.eol_at_end = false;
            } else if h.old_no_eol {
                out.eol_at_end = true;
            }
        }
        if let Some(s) = stated {
            let want = (s + delta).max(0) as usize;
            if want != pos && !old.is_empty() {
                notes.push(format!(
                    "hunk {} matched at line {} ({} lines from where the patch placed it)",
                    k + 1,
                    pos + 1,
                    pos.abs_diff(want)
                ));
            }
            delta = pos as isize - s;
        }
        delta += added as isize - old.len() as isize;
        min_pos = pos + added;
    }
    Ok((out, notes))
}

/// Where `old` occurs in `lines` at or after `min_pos`, nearest to `expected` first.
fn find(lines: &[String], old: &[&str], min_pos: usize, expected: usize) -> Option<usize> {
    let len = old.len();
    let last = lines.len().checked_sub(len)?;
    if min_pos > last {
        return None;
    }
    let at = |p: usize| (0..len).all(|i| same(&lines[p + i], old[i]));
    let e = expected.clamp(min_pos, last);
    for d in 0..=(last - min_pos) {
        let up = e + d;
        let down = e.checked_sub(d).filter(|p| *p >= min_pos);
        if up <= last && at(up) {
            return Some(up);
        }
        if d > 0
            && let Some(p) = down
            && at(p)
        {
            return Some(p);
        }
        if up > last && down.is_none() {
            break;
        }
    }
    None
}

/// The report for a hunk that does not match: what the patch expects and the
/// closest lines of the file.
fn mismatch(lines: &[String], h: &Hunk, k: usize, shown: &str, expected: usize) -> String {
    let old: Vec<&str> = h.old_lines().collect();
    let (n, len) = (lines.len(), old.len());
    let score = |p: usize| (0..len).filter(|&i| p + i < n && same(&lines[p + i], old[i])).count();
    let (lo, hi) = if n.saturating_mul(len) > 4_000_000 {
        (expected.saturating_sub(1000), (expected + 1000).min(n))
    } else {
        (0, n)
    };
    let best = (lo..hi)
        .map(|p| (score(p), std::cmp::Reverse(p.abs_diff(expected)), p))
        .max()
        .filter(|(s, _, _)| *s > 0)
        .map(|(_, _, p)| p);
    let at = best.unwrap_or(expected.min(n.saturating_sub(1)));
    let mut msg = format!(
        "hunk {} of `{shown}` (`{}`) does not match the file.\nThe patch expects these lines (its context and \
         '-' lines):\n",
        k + 1,
        h.header
    );
    for l in old.iter().take(SHOW_LINES) {
        msg.push_str(&format!("        | {l}\n"));
    }
    if len > SHOW_LINES {
        msg.push_str(&format!("        … {} more\n", len - SHOW_LINES));
    }
    if n == 0 {
        msg.push_str("but the file is empty.\n");
    } else {
        let end = (at + len).min(n);
        msg.push_str(&format!(
            "{} lines {}-{end} of the file are ('!' marks a line that differs):\n",
            if best.is_some() {
                "The closest match,"
            } else {
                "At the stated position,"
            },
            at + 1
        ));
        for (i, want) in old.iter().enumerate().take(SHOW_LINES) {
            let Some(line) = lines.get(at + i) else {
                msg.push_str("        (end of file)\n");
                break;
            };
            let line = line.trim_end_matches('\r');
            let differs = !same(line, want);
            let hint = if differs && line.trim() == want.trim() {
                "   <- indentation differs"
            } else {
                ""
            };
            msg.push_str(&format!(
                "{} {:>5} | {line}{hint}\n",
                if differs { "!" } else { " " },
                at + i + 1
            ));
        }
    }
    msg.push_str(&format!(
        "Read the file (read_file `{shown}` with start_line={}) and send the corrected patch",
        (at + 1).saturating_sub(3).max(1)
    ));
    msg
}
