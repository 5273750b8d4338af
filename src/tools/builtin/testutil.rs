//! Test helpers: a workspace inside a temp folder with a secret file and
//! symlinks leading out of it, and calling a typed tool with JSON arguments.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::tools::{Tool, ToolContext, ToolError, Typed, TypedTool, Workspace};

/// `<tmp>/ws` is the workspace; `<tmp>/secret.txt` and `<tmp>/outside/` are not.
/// Inside: `link_out.txt` → the secret file, `dir_out` → the outside folder.
pub struct Env {
    pub tmp: tempfile::TempDir,
    pub ws: Arc<Workspace>,
}

impl Env {
    pub fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("ws");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(base.join("secret.txt"), "TOP SECRET\n").unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/o.txt"), "outside file\n").unwrap();
        std::os::unix::fs::symlink(base.join("secret.txt"), root.join("link_out.txt")).unwrap();
        std::os::unix::fs::symlink(base.join("outside"), root.join("dir_out")).unwrap();
        let ws = Arc::new(Workspace::new(&root).unwrap());
        Env { tmp, ws }
    }

    pub fn root(&self) -> &Path {
        self.ws.root()
    }

    pub fn outside(&self) -> PathBuf {
        self.tmp.path().canonicalize().unwrap()
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root().join(rel)).unwrap()
    }

    pub fn ctx(&self) -> ToolContext {
        ToolContext::new(self.ws.clone())
    }

    /// Everything outside the workspace is as the fixture left it.
    pub fn assert_outside_untouched(&self) {
        let t = self.tmp.path();
        assert_eq!(std::fs::read_to_string(t.join("secret.txt")).unwrap(), "TOP SECRET\n");
        let names: Vec<_> = std::fs::read_dir(t.join("outside"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["o.txt"]);
        let mut top: Vec<_> = std::fs::read_dir(t)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        top.sort();
        assert_eq!(top, ["outside", "secret.txt", "ws"]);
    }
}

pub async fn call<T: TypedTool>(tool: T, args: serde_json::Value, ctx: ToolContext) -> Result<String, ToolError> {
    Typed::new(tool).call(args, ctx).await
}

/// The error's text, panicking with the output when the call succeeded.
pub fn err_text(r: Result<String, ToolError>) -> String {
    match r {
        Ok(out) => panic!("expected an error, got:\n{out}"),
        Err(e) => e.to_string(),
    }
}

/// Asserts a refusal to leave the workspace.
pub fn assert_refused(r: Result<String, ToolError>) {
    let msg = err_text(r);
    assert!(
        msg.contains("outside the workspace") || msg.contains("symlink"),
        "not a workspace refusal: {msg}"
    );
}
