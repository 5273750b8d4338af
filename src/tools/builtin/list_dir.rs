//! `list_dir`: the entries of a workspace folder, sorted, with type and size;
//! optionally recursive (never into `.git`, never through symlinks), capped at
//! a number of entries with a note.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{blocking, human_size};
use crate::tools::{ToolContext, ToolError, ToolFuture, TypedTool};

const NAME: &str = "list_dir";
const DEFAULT_MAX: usize = 200;
const MAX_MAX: usize = 5000;

/// Arguments of `list_dir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirArgs {
    /// Folder to list, relative to the workspace root (default: the root itself).
    pub path: Option<String>,
    /// Also list the contents of sub-folders (default false). `.git` is skipped.
    pub recursive: Option<bool>,
    /// Most entries to show (default 200, at most 5000).
    pub max_entries: Option<usize>,
}

/// Lists folders; see the module doc.
pub struct ListDir;

impl TypedTool for ListDir {
    type Args = ListDirArgs;
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = "List a folder in the workspace: one entry per line, sorted by name, \
        folders ending in `/` with their entry count, files with their size, symlinks as `name -> target`. \
        With recursive=true, sub-folders are listed too (paths relative to the listed folder; `.git` skipped).";

    fn run(self: Arc<Self>, args: ListDirArgs, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let max = args.max_entries.unwrap_or(DEFAULT_MAX);
            if max == 0 || max > MAX_MAX {
                return Err(ToolError::invalid(
                    NAME,
                    "max_entries",
                    format!("use a number from 1 to {MAX_MAX}"),
                ));
            }
            let given = args.path.unwrap_or_else(|| ".".into());
            let dir = ctx.workspace.existing(NAME, &given)?;
            let shown = ctx.workspace.display(&dir);
            let recursive = args.recursive.unwrap_or(false);
            let cancel = ctx.cancel.clone();
            blocking(NAME, move || {
                if !dir.is_dir() {
                    return Err(ToolError::invalid(
                        NAME,
                        "path",
                        format!("`{shown}` is a file, not a folder; use read_file to read it"),
                    ));
                }
                let mut lines = Vec::new();
                let complete = walk(&dir, &dir, recursive, max, &cancel, &mut lines)?;
                let mut out = format!(
                    "{shown}/ ({}{} entries{})\n",
                    if complete { "" } else { "first " },
                    lines.len(),
                    if recursive { ", recursive" } else { "" }
                );
                if lines.is_empty() {
                    out.push_str("(empty folder)\n");
                }
                for l in &lines {
                    out.push_str(l);
                    out.push('\n');
                }
                if !complete {
                    out.push_str(&format!(
                        "… [stopped at {max} entries; list a sub-folder or raise max_entries (at most {MAX_MAX})]\n"
                    ));
                }
                Ok(out)
            })
            .await
        })
    }
}

/// Sorted children of `dir`: (name, path).
fn children(dir: &Path) -> Result<Vec<(String, PathBuf)>, ToolError> {
    let rd =
        std::fs::read_dir(dir).map_err(|e| ToolError::failed(NAME, format!("cannot list `{}`: {e}", dir.display())))?;
    let mut v: Vec<(String, PathBuf)> = rd
        .filter_map(Result::ok)
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    v.sort();
    Ok(v)
}

/// Append entries of `dir` (depth first); false when the cap was reached.
fn walk(
    base: &Path,
    dir: &Path,
    recursive: bool,
    max: usize,
    cancel: &CancellationToken,
    out: &mut Vec<String>,
) -> Result<bool, ToolError> {
    if cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    for (name, path) in children(dir)? {
        if out.len() >= max {
            return Ok(false);
        }
        let rel = path.strip_prefix(base).unwrap_or(&path).display().to_string();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            let target = std::fs::read_link(&path)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            out.push(format!("{rel} -> {target}"));
        } else if ft.is_dir() {
            if recursive && name == ".git" {
                out.push(format!("{rel}/ (skipped)"));
                continue;
            }
            let count = std::fs::read_dir(&path).map(|r| r.count()).unwrap_or(0);
            out.push(format!("{rel}/ ({count} entries)"));
            if recursive && !walk(base, &path, recursive, max, cancel, out)? {
                return Ok(false);
            }
        } else if ft.is_file() {
            out.push(format!("{rel}  {}", human_size(meta.len())));
        } else {
            out.push(format!("{rel}  (special file)"));
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn lists_sorted_with_types_and_sizes() {
        let env = Env::new();
        env.write("b.txt", "12345");
        env.write("a/x.rs", "");
        env.write("a/deep/y.rs", "y");
        env.write(".git/HEAD", "ref");
        let out = call(ListDir, json!({}), env.ctx()).await.unwrap();
        let want = format!(
            "./ (5 entries)\n.git/ (1 entries)\na/ (2 entries)\nb.txt  5 B\ndir_out -> {}\nlink_out.txt -> {}\n",
            env.outside().join("outside").display(),
            env.outside().join("secret.txt").display()
        );
        assert_eq!(out, want);
        let out = call(ListDir, json!({"path": "a", "recursive": true}), env.ctx())
            .await
            .unwrap();
        assert_eq!(
            out,
            "a/ (3 entries, recursive)\ndeep/ (1 entries)\ndeep/y.rs  1 B\nx.rs  0 B\n"
        );
        let out = call(ListDir, json!({"recursive": true}), env.ctx()).await.unwrap();
        assert!(out.contains(".git/ (skipped)\n") && !out.contains("HEAD"), "{out}");
        assert!(!out.contains("o.txt"), "symlinks are not followed: {out}");
    }

    #[tokio::test]
    async fn capped_with_a_note_and_errors_are_clear() {
        let env = Env::new();
        for i in 0..10 {
            env.write(&format!("d/f{i}.txt"), "x");
        }
        let out = call(ListDir, json!({"path": "d", "max_entries": 3}), env.ctx())
            .await
            .unwrap();
        assert!(out.starts_with("d/ (first 3 entries)\nf0.txt"), "{out}");
        assert!(out.contains("stopped at 3 entries"), "{out}");
        let e = err_text(call(ListDir, json!({"path": "d/f1.txt"}), env.ctx()).await);
        assert!(e.contains("read_file"), "{e}");
        let e = err_text(call(ListDir, json!({"max_entries": 0}), env.ctx()).await);
        assert!(e.contains("max_entries"), "{e}");
        let e = err_text(call(ListDir, json!({"recursive": "yes"}), env.ctx()).await);
        assert!(e.contains("recursive"), "{e}");
        std::fs::create_dir(env.root().join("empty")).unwrap();
        let out = call(ListDir, json!({"path": "empty"}), env.ctx()).await.unwrap();
        assert_eq!(out, "empty/ (0 entries)\n(empty folder)\n");
    }

    #[tokio::test]
    async fn never_lists_outside_the_workspace() {
        let env = Env::new();
        for path in [
            "..".to_string(),
            "../outside".to_string(),
            env.outside().display().to_string(),
            "/".to_string(),
            "dir_out".to_string(),
        ] {
            let r = call(ListDir, json!({"path": path, "recursive": true}), env.ctx()).await;
            if let Ok(out) = &r {
                assert!(!out.contains("o.txt") && !out.contains("secret"), "{out}");
            }
            assert_refused(r);
        }
        env.assert_outside_untouched();
    }
}
