//! `search_files`: lines matching a pattern in the workspace, as
//! `file:line: text`. Literal by default, or a regex (`regex-lite`); skips
//! binary files, big files and `.git`, and never follows symlinks.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{blocking, looks_binary};
use crate::tools::{ToolContext, ToolError, ToolFuture, TypedTool};

const NAME: &str = "search_files";
const DEFAULT_MAX: usize = 100;
const MAX_MAX: usize = 2000;
/// Files bigger than this are skipped (generated or data files).
const MAX_FILE: u64 = 4 * 1024 * 1024;
/// A matching line is shown up to this many characters.
const MAX_SHOWN: usize = 300;

/// Arguments of `search_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchFilesArgs {
    /// Text to look for. Matched literally unless `regex` is true.
    pub pattern: String,
    /// File or folder to search, relative to the workspace root (default: the whole workspace).
    pub path: Option<String>,
    /// Treat `pattern` as a regular expression (Rust regex syntax, e.g. `fn\s+\w+`). Default false.
    pub regex: Option<bool>,
    /// Ignore letter case (for regexes: ASCII letters only). Default false.
    pub case_insensitive: Option<bool>,
    /// Most matching lines to return (default 100, at most 2000).
    pub max_results: Option<usize>,
}

/// Searches file contents; see the module doc.
pub struct SearchFiles;

impl TypedTool for SearchFiles {
    type Args = SearchFilesArgs;
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = "Search the text files of the workspace (or one file or folder in it) for \
        a pattern; returns matching lines as `path:line: text`. Literal text by default; set regex=true for a \
        regular expression. Binary files, files over 4 MB, `.git` and symlinks are skipped.";

    fn run(self: Arc<Self>, args: SearchFilesArgs, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let matcher = Matcher::new(&args)?;
            let max = args.max_results.unwrap_or(DEFAULT_MAX);
            if max == 0 || max > MAX_MAX {
                return Err(ToolError::invalid(
                    NAME,
                    "max_results",
                    format!("use a number from 1 to {MAX_MAX}"),
                ));
            }
            let start = ctx.workspace.existing(NAME, args.path.as_deref().unwrap_or("."))?;
            let ws = ctx.workspace.clone();
            let cancel = ctx.cancel.clone();
            let deadline = Instant::now().checked_add(ctx.timeout);
            let pattern = args.pattern.clone();
            blocking(NAME, move || {
                let mut s = Search {
                    matcher,
                    max,
                    cancel,
                    deadline,
                    hits: Vec::new(),
                    files: 0,
                    files_with_hits: 0,
                    skipped: 0,
                    stopped: None,
                };
                s.visit(&start, &|p| ws.display(p))?;
                Ok(s.report(&pattern, &ws.display(&start)))
            })
            .await
        })
    }
}

enum Matcher {
    Literal(String),
    /// Unicode lower-cased needle.
    LiteralNoCase(String),
    Regex(regex_lite::Regex),
}

impl Matcher {
    fn new(args: &SearchFilesArgs) -> Result<Matcher, ToolError> {
        if args.pattern.is_empty() {
            return Err(ToolError::invalid(NAME, "pattern", "the pattern is empty"));
        }
        let nocase = args.case_insensitive.unwrap_or(false);
        Ok(match (args.regex.unwrap_or(false), nocase) {
            (true, _) => Matcher::Regex(
                regex_lite::RegexBuilder::new(&args.pattern)
                    .case_insensitive(nocase)
                    .build()
                    .map_err(|e| {
                        ToolError::invalid(
                            NAME,
                            "pattern",
                            format!("not a valid regex: {e}; fix it, or set regex=false to search literally"),
                        )
                    })?,
            ),
            (false, false) => Matcher::Literal(args.pattern.clone()),
            (false, true) => Matcher::LiteralNoCase(args.pattern.to_lowercase()),
        })
    }

    fn matches(&self, line: &str) -> bool {
        match self {
            Matcher::Literal(p) => line.contains(p.as_str()),
            Matcher::LiteralNoCase(p) => line.to_lowercase().contains(p.as_str()),
            Matcher::Regex(r) => r.is_match(line),
        }
    }
}

struct Search {
    matcher: Matcher,
    max: usize,
    cancel: CancellationToken,
    /// `None` when the timeout is too far away to matter.
    deadline: Option<Instant>,
    hits: Vec<String>,
    files: usize,
    files_with_hits: usize,
    skipped: usize,
    /// Why the search ended early.
    stopped: Option<Stop>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stop {
    Results,
    Time,
}

impl Search {
    fn visit(&mut self, path: &Path, display: &dyn Fn(&Path) -> String) -> Result<(), ToolError> {
        if self.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        if self.stopped.is_some() {
            return Ok(());
        }
        if self.deadline.is_some_and(|d| Instant::now() > d) {
            self.stopped = Some(Stop::Time);
            return Ok(());
        }
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return Ok(());
        };
        let ft = meta.file_type();
        if ft.is_dir() {
            let Ok(rd) = std::fs::read_dir(path) else {
                self.skipped += 1;
                return Ok(());
            };
            let mut entries: Vec<(std::ffi::OsString, PathBuf)> =
                rd.filter_map(Result::ok).map(|e| (e.file_name(), e.path())).collect();
            entries.sort();
            for (name, child) in entries {
                if name == ".git" {
                    continue;
                }
                self.visit(&child, display)?;
            }
        } else if ft.is_file() {
            self.search_file(path, meta.len(), display);
        }
        // Symlinks and special files are never followed.
        Ok(())
    }

    fn search_file(&mut self, path: &Path, len: u64, display: &dyn Fn(&Path) -> String) {
        if len > MAX_FILE {
            self.skipped += 1;
            return;
        }
        let Ok(bytes) = std::fs::read(path) else {
            self.skipped += 1;
            return;
        };
        if looks_binary(&bytes) {
            return;
        }
        self.files += 1;
        let text = String::from_utf8_lossy(&bytes);
        let mut any = false;
        for (i, line) in text.lines().enumerate() {
            if !self.matcher.matches(line) {
                continue;
            }
            if self.hits.len() >= self.max {
                self.stopped = Some(Stop::Results);
                break;
            }
            any = true;
            let line = line.trim_end();
            let shown = match line.char_indices().nth(MAX_SHOWN) {
                Some((cut, _)) => format!("{}…", &line[..cut]),
                None => line.to_string(),
            };
            self.hits.push(format!("{}:{}: {shown}", display(path), i + 1));
        }
        if any {
            self.files_with_hits += 1;
        }
    }

    fn report(&self, pattern: &str, root: &str) -> String {
        let mut out = if self.hits.is_empty() {
            format!(
                "no matches for `{pattern}` in `{root}` ({} files searched)\n",
                self.files
            )
        } else {
            format!(
                "{} matching lines for `{pattern}` in {} files ({} files searched in `{root}`)\n",
                self.hits.len(),
                self.files_with_hits,
                self.files
            )
        };
        for h in &self.hits {
            out.push_str(h);
            out.push('\n');
        }
        match self.stopped {
            Some(Stop::Results) => out.push_str(&format!(
                "… [stopped at {} results; narrow the pattern or path, or raise max_results]\n",
                self.max
            )),
            Some(Stop::Time) => out.push_str("… [search stopped at the time limit; narrow the path]\n"),
            None => {}
        }
        if self.skipped > 0 {
            out.push_str(&format!("({} files skipped: unreadable or over 4 MB)\n", self.skipped));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use serde_json::json;

    fn fixture() -> Env {
        let env = Env::new();
        env.write("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
        env.write("src/lib.rs", "pub fn hello() {}\n// HELLO again\n");
        env.write("notes.md", "say hello\n");
        env.write(".git/config", "hello from git\n");
        std::fs::write(env.root().join("data.bin"), b"hello\0binary").unwrap();
        env
    }

    #[tokio::test]
    async fn literal_search_lists_file_line_text() {
        let env = fixture();
        let out = call(SearchFiles, json!({"pattern": "hello"}), env.ctx()).await.unwrap();
        assert_eq!(
            out,
            "2 matching lines for `hello` in 2 files (3 files searched in `.`)\n\
             notes.md:1: say hello\n\
             src/lib.rs:1: pub fn hello() {}\n"
        );
        let out = call(
            SearchFiles,
            json!({"pattern": "HeLLo", "case_insensitive": true, "path": "src"}),
            env.ctx(),
        )
        .await
        .unwrap();
        assert!(out.starts_with("3 matching lines"), "{out}");
        assert!(out.contains("src/main.rs:2:     println!(\"Hello\");"), "{out}");
        // Regex metacharacters are literal unless regex=true.
        let out = call(SearchFiles, json!({"pattern": "hello()"}), env.ctx())
            .await
            .unwrap();
        assert!(out.starts_with("1 matching lines"), "{out}");
        let out = call(SearchFiles, json!({"pattern": "nothing here"}), env.ctx())
            .await
            .unwrap();
        assert!(out.starts_with("no matches for `nothing here`"), "{out}");
        let out = call(SearchFiles, json!({"pattern": "hello", "path": "notes.md"}), env.ctx())
            .await
            .unwrap();
        assert!(out.contains("notes.md:1: say hello"), "{out}");
    }

    #[tokio::test]
    async fn regex_search_and_limits() {
        let env = fixture();
        let out = call(SearchFiles, json!({"pattern": r"fn\s+\w+\(", "regex": true}), env.ctx())
            .await
            .unwrap();
        assert!(out.contains("src/lib.rs:1:") && out.contains("src/main.rs:1:"), "{out}");
        let e = err_text(call(SearchFiles, json!({"pattern": "(", "regex": true}), env.ctx()).await);
        assert!(e.contains("pattern") && e.contains("regex"), "{e}");
        let e = err_text(call(SearchFiles, json!({"pattern": ""}), env.ctx()).await);
        assert!(e.contains("empty"), "{e}");
        let many: String = (0..50).map(|i| format!("match {i}\n")).collect();
        env.write("many.txt", &many);
        let out = call(SearchFiles, json!({"pattern": "match", "max_results": 5}), env.ctx())
            .await
            .unwrap();
        assert_eq!(out.lines().filter(|l| l.starts_with("many.txt:")).count(), 5, "{out}");
        assert!(out.contains("stopped at 5 results"), "{out}");
        env.write("wide.txt", &format!("needle {}", "z".repeat(1000)));
        let out = call(SearchFiles, json!({"pattern": "needle"}), env.ctx())
            .await
            .unwrap();
        assert!(out.contains("wide.txt:1: needle zzz") && out.contains("…\n"), "{out}");
        assert!(out.len() < 600, "{out}");
    }

    #[tokio::test]
    async fn never_searches_outside_the_workspace() {
        let env = fixture();
        // Symlinks inside the workspace lead to files with these words; they are not followed.
        let out = call(SearchFiles, json!({"pattern": "SECRET"}), env.ctx())
            .await
            .unwrap();
        assert!(out.starts_with("no matches"), "{out}");
        let out = call(SearchFiles, json!({"pattern": "outside"}), env.ctx())
            .await
            .unwrap();
        assert!(out.starts_with("no matches"), "{out}");
        for path in [
            "..".to_string(),
            "../secret.txt".to_string(),
            env.outside().display().to_string(),
            "link_out.txt".to_string(),
            "dir_out".to_string(),
        ] {
            assert_refused(call(SearchFiles, json!({"pattern": "SECRET", "path": path}), env.ctx()).await);
        }
        env.assert_outside_untouched();
    }
}
