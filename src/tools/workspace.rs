//! The workspace: the one folder file tools may touch. Every path a model
//! gives is resolved here; `..` that climbs out, absolute paths elsewhere and
//! symlinks that lead outside are refused.
//!
//! Paths are checked lexically first, then against the real (canonical) path
//! of what exists, so a symlink inside the workspace cannot point a tool
//! outside it. (A race with a process that swaps files between the check and
//! the use is out of scope: the workspace is the user's own folder.)

use std::path::{Component, Path, PathBuf};

use super::ToolError;

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// `root` must exist; it is canonicalised.
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Ok(Workspace {
            root: root.canonicalize()?,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `p` relative to the root, for messages and listings.
    pub fn display(&self, p: &Path) -> String {
        match p.strip_prefix(&self.root) {
            Ok(r) if r.as_os_str().is_empty() => ".".into(),
            Ok(r) => r.display().to_string(),
            Err(_) => p.display().to_string(),
        }
    }

    /// Join and normalise lexically; refuse anything that leaves the root.
    fn lexical(&self, tool: &str, given: &str) -> Result<PathBuf, ToolError> {
        if given.contains('\0') {
            return Err(ToolError::invalid(tool, "path", "contains a NUL byte"));
        }
        let given_path = Path::new(given);
        let joined = if given_path.is_absolute() {
            given_path.to_path_buf()
        } else {
            self.root.join(given_path)
        };
        let mut out = PathBuf::new();
        for c in joined.components() {
            match c {
                Component::Prefix(p) => out.push(p.as_os_str()),
                Component::RootDir => out.push(Component::RootDir.as_os_str()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !out.pop() {
                        return Err(self.outside(tool, given));
                    }
                }
                Component::Normal(n) => out.push(n),
            }
        }
        if !out.starts_with(&self.root) {
            return Err(self.outside(tool, given));
        }
        Ok(out)
    }

    fn outside(&self, tool: &str, given: &str) -> ToolError {
        ToolError::invalid(
            tool,
            "path",
            format!(
                "`{given}` is outside the workspace ({}); use a path inside it",
                self.root.display()
            ),
        )
    }

    /// An existing file or folder inside the workspace (symlinks resolved).
    pub fn existing(&self, tool: &str, given: &str) -> Result<PathBuf, ToolError> {
        let p = self.lexical(tool, given)?;
        let real = p.canonicalize().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ToolError::invalid(tool, "path", format!("`{given}` does not exist")),
            _ => ToolError::failed(tool, format!("cannot open `{given}`: {e}")),
        })?;
        if !real.starts_with(&self.root) {
            return Err(ToolError::invalid(
                tool,
                "path",
                format!("`{given}` leads outside the workspace through a symlink"),
            ));
        }
        Ok(real)
    }

    /// A path to create or overwrite inside the workspace. Missing parent
    /// folders may be created by the caller; what exists must resolve inside.
    pub fn writable(&self, tool: &str, given: &str) -> Result<PathBuf, ToolError> {
        let p = self.lexical(tool, given)?;
        if p == self.root {
            return Err(ToolError::invalid(
                tool,
                "path",
                "name a file, not the workspace itself",
            ));
        }
        // The deepest part that exists must be inside once symlinks are resolved.
        let mut existing = p.as_path();
        while !existing.exists() && existing.symlink_metadata().is_err() {
            match existing.parent() {
                Some(parent) => existing = parent,
                None => break,
            }
        }
        let real = existing
            .canonicalize()
            .map_err(|e| ToolError::failed(tool, format!("cannot resolve `{given}`: {e}")))?;
        if !real.starts_with(&self.root) {
            return Err(ToolError::invalid(
                tool,
                "path",
                format!("`{given}` leads outside the workspace through a symlink"),
            ));
        }
        if real.is_dir() && existing == p {
            return Err(ToolError::invalid(tool, "path", format!("`{given}` is a folder")));
        }
        // Re-attach the missing tail to the resolved part (joining an empty
        // tail would add a trailing `/`, which makes a file path unusable).
        match p.strip_prefix(existing) {
            Ok(tail) if !tail.as_os_str().is_empty() => Ok(real.join(tail)),
            _ => Ok(real),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.txt"), "a").unwrap();
        std::fs::write(d.path().join("secret.txt"), "s").unwrap();
        let w = Workspace::new(&root).unwrap();
        (d, w)
    }

    fn refused(r: Result<PathBuf, ToolError>) -> String {
        match r {
            Err(ToolError::InvalidArguments { field, reason, .. }) => {
                assert_eq!(field, "path");
                reason
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn paths_inside_resolve() {
        let (_d, w) = ws();
        assert_eq!(w.existing("t", "src/a.txt").unwrap(), w.root().join("src/a.txt"));
        assert_eq!(
            w.existing("t", "./src/../src/a.txt").unwrap(),
            w.root().join("src/a.txt")
        );
        let abs = w.root().join("src/a.txt");
        assert_eq!(w.existing("t", abs.to_str().unwrap()).unwrap(), abs);
        assert_eq!(w.existing("t", ".").unwrap(), w.root());
        assert_eq!(
            w.writable("t", "new/deep/file.rs").unwrap(),
            w.root().join("new/deep/file.rs")
        );
        assert_eq!(w.display(&w.root().join("src/a.txt")), "src/a.txt");
        // An existing file resolves to itself (no trailing separator).
        let existing = w.writable("t", "src/a.txt").unwrap();
        assert_eq!(existing, w.root().join("src/a.txt"));
        assert!(!existing.as_os_str().to_string_lossy().ends_with('/'));
    }

    #[test]
    fn dot_dot_and_absolute_paths_outside_are_refused() {
        let (_d, w) = ws();
        assert!(refused(w.existing("t", "../secret.txt")).contains("outside the workspace"));
        assert!(refused(w.existing("t", "src/../../secret.txt")).contains("outside"));
        assert!(refused(w.writable("t", "../evil.txt")).contains("outside"));
        assert!(refused(w.existing("t", "/etc/passwd")).contains("outside"));
        assert!(refused(w.writable("t", "/tmp/evil.txt")).contains("outside"));
        assert!(refused(w.existing("t", "../../../../../../../../etc/passwd")).contains("outside"));
        // A sibling whose name starts like the root is not inside it.
        let sib = format!("{}-other/x", w.root().display());
        assert!(refused(w.writable("t", &sib)).contains("outside"));
    }

    #[test]
    fn symlinks_leading_out_are_refused() {
        let (d, w) = ws();
        std::os::unix::fs::symlink(d.path().join("secret.txt"), w.root().join("link.txt")).unwrap();
        std::os::unix::fs::symlink(d.path(), w.root().join("up")).unwrap();
        assert!(refused(w.existing("t", "link.txt")).contains("symlink"));
        assert!(refused(w.existing("t", "up/secret.txt")).contains("symlink"));
        assert!(refused(w.writable("t", "up/new.txt")).contains("symlink"));
        assert!(refused(w.writable("t", "link.txt")).contains("symlink"));
        // A symlink that stays inside is fine.
        std::os::unix::fs::symlink(w.root().join("src"), w.root().join("alias")).unwrap();
        assert_eq!(w.existing("t", "alias/a.txt").unwrap(), w.root().join("src/a.txt"));
    }

    #[test]
    fn odd_inputs_are_errors_not_panics() {
        let (_d, w) = ws();
        assert!(refused(w.existing("t", "missing.txt")).contains("does not exist"));
        assert!(refused(w.writable("t", "src")).contains("is a folder"));
        assert!(refused(w.writable("t", ".")).contains("not the workspace"));
        assert!(refused(w.existing("t", "a\0b")).contains("NUL"));
    }
}
