//! `write_file`: create or replace a file in the workspace, atomically,
//! creating missing parent folders (inside the workspace only).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, human_size, write_file_atomic};
use crate::tools::{ToolContext, ToolError, ToolFuture, TypedTool};

const NAME: &str = "write_file";

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// Path of the file, relative to the workspace root. Missing folders are created.
    pub path: String,
    /// The complete new content of the file (it replaces everything that was there).
    pub content: String,
}

/// Writes whole files; see the module doc.
pub struct WriteFile;

impl TypedTool for WriteFile {
    type Args = WriteFileArgs;
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = "Create a file or replace its whole content, in the workspace. Missing \
        parent folders are created. For a small change to an existing file prefer apply_patch.";

    fn run(self: Arc<Self>, args: WriteFileArgs, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let path = ctx.workspace.writable(NAME, &args.path)?;
            let shown = ctx.workspace.display(&path);
            blocking(NAME, move || {
                let before = match std::fs::symlink_metadata(&path) {
                    Ok(m) if m.is_dir() => {
                        return Err(ToolError::invalid(NAME, "path", format!("`{shown}` is a folder")));
                    }
                    Ok(m) => Some(m.len()),
                    Err(_) => None,
                };
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        ToolError::failed(NAME, format!("cannot create the folders for `{shown}`: {e}"))
                    })?;
                }
                write_file_atomic(&path, args.content.as_bytes())
                    .map_err(|e| ToolError::failed(NAME, format!("cannot write `{shown}`: {e}")))?;
                let n = args.content.len() as u64;
                let lines = args.content.lines().count();
                Ok(match before {
                    None => format!("created `{shown}` ({n} bytes, {lines} lines)"),
                    Some(old) => format!("replaced `{shown}` ({n} bytes, {lines} lines; was {})", human_size(old)),
                })
            })
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn creates_with_parents_then_replaces() {
        let env = Env::new();
        let out = call(
            WriteFile,
            json!({"path": "a/b/c.txt", "content": "hi\nthere\n"}),
            env.ctx(),
        )
        .await
        .unwrap();
        assert_eq!(out, "created `a/b/c.txt` (9 bytes, 2 lines)");
        assert_eq!(env.read("a/b/c.txt"), "hi\nthere\n");
        let out = call(WriteFile, json!({"path": "a/b/c.txt", "content": "é"}), env.ctx())
            .await
            .unwrap();
        assert_eq!(out, "replaced `a/b/c.txt` (2 bytes, 1 lines; was 9 B)");
        assert_eq!(env.read("a/b/c.txt"), "é");
        let names: Vec<_> = std::fs::read_dir(env.root().join("a/b")).unwrap().collect();
        assert_eq!(names.len(), 1, "no temp files left behind");
    }

    #[tokio::test]
    async fn folders_and_bad_arguments_are_refused() {
        let env = Env::new();
        std::fs::create_dir(env.root().join("d")).unwrap();
        let e = err_text(call(WriteFile, json!({"path": "d", "content": "x"}), env.ctx()).await);
        assert!(e.contains("folder"), "{e}");
        let e = err_text(call(WriteFile, json!({"path": "x.txt"}), env.ctx()).await);
        assert!(e.contains("content"), "{e}");
        let e = err_text(call(WriteFile, json!({"path": ".", "content": "x"}), env.ctx()).await);
        assert!(e.contains("workspace"), "{e}");
    }

    #[tokio::test]
    async fn never_writes_outside_the_workspace() {
        let env = Env::new();
        for path in [
            "../evil.txt".to_string(),
            "a/../../evil.txt".to_string(),
            env.outside().join("evil.txt").display().to_string(),
            env.outside().join("secret.txt").display().to_string(),
            "link_out.txt".to_string(),
            "dir_out/evil.txt".to_string(),
            "dir_out/new/deep.txt".to_string(),
        ] {
            assert_refused(call(WriteFile, json!({"path": path, "content": "pwned"}), env.ctx()).await);
        }
        env.assert_outside_untouched();
    }
}
