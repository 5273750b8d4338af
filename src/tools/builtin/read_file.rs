//! `read_file`: a text file from the workspace, with line numbers and a
//! header (path, lines shown, total lines). Binary files are refused; big
//! files must be read in parts; output stops at the context's limit with a
//! note saying where to continue.

use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, human_size, looks_binary};
use crate::tools::{ToolContext, ToolError, ToolFuture, TypedTool};

const NAME: &str = "read_file";
/// Longest line shown in full; longer ones are cut with a note.
const MAX_LINE_CHARS: usize = 2000;

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// Path of the file, relative to the workspace root (or absolute inside it).
    pub path: String,
    /// First line to show, 1-based (default 1).
    pub start_line: Option<u64>,
    /// Last line to show, inclusive (default: the end of the file).
    pub end_line: Option<u64>,
}

/// Reads text files; see the module doc.
pub struct ReadFile {
    /// Files bigger than this must be read with a line range.
    pub max_whole_file: u64,
}

impl Default for ReadFile {
    fn default() -> Self {
        ReadFile {
            max_whole_file: 2 * 1024 * 1024,
        }
    }
}

impl TypedTool for ReadFile {
    type Args = ReadFileArgs;
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = "Read a text file in the workspace. Lines are shown as `N| text`, where \
        `N| ` is the line number (not part of the file). The header gives the lines shown and the file's total \
        line count. Use start_line/end_line to read part of a long file; when the output is cut, the note says \
        which start_line to continue from. Binary files are refused.";

    fn run(self: Arc<Self>, args: ReadFileArgs, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let start = args.start_line.unwrap_or(1);
            if start == 0 {
                return Err(ToolError::invalid(NAME, "start_line", "lines are numbered from 1"));
            }
            if let Some(end) = args.end_line
                && end < start
            {
                return Err(ToolError::invalid(
                    NAME,
                    "end_line",
                    format!("end_line {end} is before start_line {start}"),
                ));
            }
            let path = ctx.workspace.existing(NAME, &args.path)?;
            let shown = ctx.workspace.display(&path);
            let max_whole = self.max_whole_file;
            let limit = ctx.output_limit;
            let ranged = args.start_line.is_some() || args.end_line.is_some();
            blocking(NAME, move || {
                let meta = std::fs::metadata(&path).map_err(|e| ToolError::failed(NAME, format!("`{shown}`: {e}")))?;
                if meta.is_dir() {
                    return Err(ToolError::invalid(
                        NAME,
                        "path",
                        format!("`{shown}` is a folder; use list_dir to see what it contains"),
                    ));
                }
                if !ranged && meta.len() > max_whole {
                    return Err(ToolError::failed(
                        NAME,
                        format!(
                            "`{shown}` is {} (more than {} can be read at once); read part of it with \
                             start_line and end_line, e.g. start_line=1, end_line=200",
                            human_size(meta.len()),
                            human_size(max_whole)
                        ),
                    ));
                }
                let file =
                    std::fs::File::open(&path).map_err(|e| ToolError::failed(NAME, format!("`{shown}`: {e}")))?;
                render(file, &shown, start, args.end_line, limit)
            })
            .await
        })
    }
}

/// Stream the file once: collect the requested lines (within `limit` bytes)
/// and count all of them.
fn render(file: impl Read, shown: &str, start: u64, end: Option<u64>, limit: usize) -> Result<String, ToolError> {
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader
        .fill_buf()
        .map_err(|e| ToolError::failed(NAME, format!("`{shown}`: {e}")))?;
    if looks_binary(head) {
        return Err(ToolError::failed(
            NAME,
            format!("`{shown}` is a binary file; read_file only shows text"),
        ));
    }
    let width = 6;
    let mut body = String::new();
    let mut total = 0u64;
    let mut last_shown = None;
    let mut cut_at = None;
    let mut raw = Vec::new();
    loop {
        raw.clear();
        let n = reader
            .read_until(b'\n', &mut raw)
            .map_err(|e| ToolError::failed(NAME, format!("`{shown}`: {e}")))?;
        if n == 0 {
            break;
        }
        total += 1;
        let wanted = total >= start && end.is_none_or(|e| total <= e);
        if !wanted || cut_at.is_some() {
            continue;
        }
        let text = String::from_utf8_lossy(&raw);
        let text = text.trim_end_matches(['\n', '\r']);
        let line = match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((i, _)) => format!(
                "{}… [line cut: {} more characters]",
                &text[..i],
                text[i..].chars().count()
            ),
            None => text.to_string(),
        };
        let entry = format!("{total:>width$}| {line}\n");
        if body.len() + entry.len() > limit && last_shown.is_some() {
            cut_at = Some(total);
            continue;
        }
        body.push_str(&entry);
        last_shown = Some(total);
    }
    if total == 0 {
        return Ok(format!("{shown} (empty file)"));
    }
    if start > total {
        return Err(ToolError::invalid(
            NAME,
            "start_line",
            format!("`{shown}` has only {total} lines; start_line must be at most {total}"),
        ));
    }
    let last = last_shown.unwrap_or(start);
    let mut out = format!("{shown} (lines {start}-{last} of {total})\n{body}");
    if let Some(next) = cut_at {
        out.push_str(&format!("… [output limit reached; continue with start_line={next}]\n"));
    } else if last < total {
        out.push_str(&format!("… [{} more lines after line {last}]\n", total - last));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn reads_whole_file_and_ranges_with_header() {
        let env = Env::new();
        env.write("src/a.txt", "one\ntwo\r\nthree\nfour");
        let out = call(ReadFile::default(), json!({"path": "src/a.txt"}), env.ctx())
            .await
            .unwrap();
        assert_eq!(
            out,
            "src/a.txt (lines 1-4 of 4)\n     1| one\n     2| two\n     3| three\n     4| four\n"
        );
        let out = call(
            ReadFile::default(),
            json!({"path": "src/a.txt", "start_line": 2, "end_line": 3}),
            env.ctx(),
        )
        .await
        .unwrap();
        assert_eq!(
            out,
            "src/a.txt (lines 2-3 of 4)\n     2| two\n     3| three\n… [1 more lines after line 3]\n"
        );
        let out = call(
            ReadFile::default(),
            json!({"path": "src/a.txt", "end_line": 99}),
            env.ctx(),
        )
        .await
        .unwrap();
        assert!(out.starts_with("src/a.txt (lines 1-4 of 4)"), "{out}");
        env.write("empty.txt", "");
        let out = call(ReadFile::default(), json!({"path": "empty.txt"}), env.ctx())
            .await
            .unwrap();
        assert_eq!(out, "empty.txt (empty file)");
    }

    #[tokio::test]
    async fn bad_ranges_binary_folders_and_big_files_are_refused_clearly() {
        let env = Env::new();
        env.write("a.txt", "1\n2\n");
        let e = err_text(
            call(
                ReadFile::default(),
                json!({"path": "a.txt", "start_line": 5}),
                env.ctx(),
            )
            .await,
        );
        assert!(e.contains("start_line") && e.contains("only 2 lines"), "{e}");
        let e = err_text(
            call(
                ReadFile::default(),
                json!({"path": "a.txt", "start_line": 0}),
                env.ctx(),
            )
            .await,
        );
        assert!(e.contains("numbered from 1"), "{e}");
        let e = err_text(
            call(
                ReadFile::default(),
                json!({"path": "a.txt", "start_line": 2, "end_line": 1}),
                env.ctx(),
            )
            .await,
        );
        assert!(e.contains("end_line"), "{e}");
        std::fs::write(env.root().join("img.png"), b"\x89PNG\r\n\x1a\n\0\0\0").unwrap();
        let e = err_text(call(ReadFile::default(), json!({"path": "img.png"}), env.ctx()).await);
        assert!(e.contains("binary"), "{e}");
        std::fs::create_dir(env.root().join("dir")).unwrap();
        let e = err_text(call(ReadFile::default(), json!({"path": "dir"}), env.ctx()).await);
        assert!(e.contains("list_dir"), "{e}");
        let e = err_text(call(ReadFile::default(), json!({"path": "nope.txt"}), env.ctx()).await);
        assert!(e.contains("does not exist"), "{e}");
        let e = err_text(call(ReadFile::default(), json!({"file": "a.txt"}), env.ctx()).await);
        assert!(e.contains("file") || e.contains("path"), "{e}");
        // A big file needs a range; with one, it is read.
        env.write("big.txt", &"x\n".repeat(600));
        let small = ReadFile { max_whole_file: 100 };
        let e = err_text(call(small, json!({"path": "big.txt"}), env.ctx()).await);
        assert!(e.contains("start_line and end_line"), "{e}");
        let small = ReadFile { max_whole_file: 100 };
        let out = call(small, json!({"path": "big.txt", "start_line": 599}), env.ctx())
            .await
            .unwrap();
        assert!(out.starts_with("big.txt (lines 599-600 of 600)"), "{out}");
    }

    #[tokio::test]
    async fn output_stops_at_the_limit_with_where_to_continue() {
        let env = Env::new();
        let text: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        env.write("long.txt", &text);
        let mut ctx = env.ctx();
        ctx.output_limit = 200;
        let out = call(ReadFile::default(), json!({"path": "long.txt"}), ctx)
            .await
            .unwrap();
        assert!(out.starts_with("long.txt (lines 1-"), "{out}");
        assert!(out.contains("of 1000)"), "{out}");
        assert!(out.contains("continue with start_line="), "{out}");
        let next: u64 = out
            .rsplit("start_line=")
            .next()
            .unwrap()
            .trim_end_matches([']', '\n'])
            .parse()
            .unwrap();
        assert!(out.contains(&format!("{:>6}| line {}\n", next - 1, next - 1)), "{out}");
        assert!(!out.contains(&format!("line {next}\n")), "{out}");
        // A very long line is cut.
        env.write("wide.txt", &"y".repeat(5000));
        let out = call(ReadFile::default(), json!({"path": "wide.txt"}), env.ctx())
            .await
            .unwrap();
        assert!(out.contains("[line cut: 3000 more characters]"), "{out}");
    }

    #[tokio::test]
    async fn never_reads_outside_the_workspace() {
        let env = Env::new();
        for path in [
            "../secret.txt".to_string(),
            "src/../../secret.txt".to_string(),
            env.outside().join("secret.txt").display().to_string(),
            "/etc/passwd".to_string(),
            "link_out.txt".to_string(),
            "dir_out/o.txt".to_string(),
        ] {
            let r = call(ReadFile::default(), json!({"path": path}), env.ctx()).await;
            if let Ok(out) = &r {
                assert!(!out.contains("SECRET") && !out.contains("outside file"), "{out}");
            }
            assert_refused(r);
        }
        env.assert_outside_untouched();
    }
}
