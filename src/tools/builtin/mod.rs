//! The built-in tools, one module each, and [`builtin_tools`] which builds
//! them with their approval policies. Shared file helpers live here: running
//! blocking file work off the async threads, binary detection, atomic writes
//! that keep a file's permissions, and human-readable sizes.

pub mod apply_patch;
pub mod current_time;
pub mod fetch_url;
pub mod html;
pub mod list_dir;
pub mod read_file;
pub mod run_shell;
pub mod search_files;
pub mod write_file;

#[cfg(test)]
mod testutil;

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

pub use apply_patch::ApplyPatch;
pub use current_time::CurrentTime;
pub use fetch_url::FetchUrl;
pub use list_dir::ListDir;
pub use read_file::ReadFile;
pub use run_shell::RunShell;
pub use search_files::SearchFiles;
pub use write_file::WriteFile;

use super::{Policy, Tool, ToolError, Typed, TypedTool};
use crate::config::ToolsConfig;

/// The names of the built-in tools.
pub const BUILTIN_NAMES: [&str; 8] = [
    ReadFile::NAME,
    WriteFile::NAME,
    ListDir::NAME,
    SearchFiles::NAME,
    ApplyPatch::NAME,
    RunShell::NAME,
    FetchUrl::NAME,
    CurrentTime::NAME,
];

/// All built-in tools with their policy: `ask` for the ones that change files
/// or run commands, `auto` for the rest, unless `cfg.policy` says otherwise.
/// Empty when `cfg.builtin` is false. `secret_env_names` are the variables that
/// hold API keys; they never reach a shell command.
pub fn builtin_tools(cfg: &ToolsConfig, secret_env_names: &[String]) -> Vec<(Arc<dyn Tool>, Policy)> {
    if !cfg.builtin {
        return Vec::new();
    }
    let tools: Vec<(Arc<dyn Tool>, Policy)> = vec![
        (Arc::new(Typed::new(ReadFile::default())), Policy::Auto),
        (Arc::new(Typed::new(WriteFile)), Policy::Ask),
        (Arc::new(Typed::new(ListDir)), Policy::Auto),
        (Arc::new(Typed::new(SearchFiles)), Policy::Auto),
        (Arc::new(Typed::new(ApplyPatch)), Policy::Ask),
        (
            Arc::new(Typed::new(RunShell::new(cfg.shell_timeout, secret_env_names.to_vec()))),
            Policy::Ask,
        ),
        (Arc::new(Typed::new(FetchUrl::default())), Policy::Auto),
        (Arc::new(Typed::new(CurrentTime)), Policy::Auto),
    ];
    tools
        .into_iter()
        .map(|(tool, default)| {
            let policy = cfg.policy.get(&tool.spec().name).copied().unwrap_or(default);
            (tool, policy)
        })
        .collect()
}

/// Run blocking file work on the blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    tool: &'static str,
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::failed(tool, format!("internal error: {e}")))?
}

/// Bytes looked at to decide whether a file is binary.
pub(crate) const SNIFF_BYTES: usize = 8192;

/// A NUL byte in the first few KB means binary (what git and grep do).
pub(crate) fn looks_binary(start: &[u8]) -> bool {
    memchr::memchr(0, &start[..start.len().min(SNIFF_BYTES)]).is_some()
}

/// `1234` → `1.2 KB`.
pub(crate) fn human_size(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = UNITS[0];
    for u in &UNITS[1..] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}

/// Replace `path` atomically (temp file in the same folder, then rename). An
/// existing file keeps its permissions; a new one gets 0666 minus the umask.
pub(crate) fn write_file_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let perms = match std::fs::metadata(path) {
        Ok(m) => m.permissions(),
        Err(_) => std::fs::Permissions::from_mode(0o666 & !umask()),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-pai-")
        .suffix(".part")
        .permissions(perms)
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_data()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The process umask, read without changing it (Linux `/proc`; else 022).
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

/// Rename the field an error names (e.g. a workspace check on `cwd`, not `path`).
pub(crate) fn with_field(e: ToolError, name: &str) -> ToolError {
    match e {
        ToolError::InvalidArguments { tool, reason, .. } => ToolError::InvalidArguments {
            tool,
            field: name.to_string(),
            reason,
        },
        other @ (ToolError::NotFound { .. }
        | ToolError::Denied { .. }
        | ToolError::Failed { .. }
        | ToolError::TimedOut { .. }
        | ToolError::Cancelled) => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn all_eight_with_default_policies_and_overrides() {
        let mut cfg = ToolsConfig::default();
        let tools = builtin_tools(&cfg, &[]);
        let got: BTreeMap<String, Policy> = tools.iter().map(|(t, p)| (t.spec().name.clone(), *p)).collect();
        assert_eq!(got.len(), 8);
        for name in BUILTIN_NAMES {
            let want = match name {
                "write_file" | "apply_patch" | "run_shell" => Policy::Ask,
                _ => Policy::Auto,
            };
            assert_eq!(got[name], want, "{name}");
        }
        for (t, _) in &tools {
            assert_eq!(t.source(), crate::tools::ToolSource::Builtin);
            assert_eq!(t.spec().parameters["type"], "object", "{}", t.spec().name);
            assert!(!t.spec().description.is_empty());
            let schema = t.spec().parameters.to_string();
            assert!(!schema.contains("\"default\":null"), "{schema}");
        }
        cfg.policy.insert("run_shell".into(), Policy::Deny);
        cfg.policy.insert("read_file".into(), Policy::Ask);
        let got: BTreeMap<String, Policy> = builtin_tools(&cfg, &[])
            .iter()
            .map(|(t, p)| (t.spec().name.clone(), *p))
            .collect();
        assert_eq!(got["run_shell"], Policy::Deny);
        assert_eq!(got["read_file"], Policy::Ask);
        assert_eq!(got["write_file"], Policy::Ask);
        cfg.builtin = false;
        assert!(builtin_tools(&cfg, &[]).is_empty());
    }

    #[test]
    fn sizes_and_binary_sniffing() {
        assert_eq!(human_size(12), "12 B");
        assert_eq!(human_size(1536), "1.5 KB");
        assert_eq!(human_size(5 * 1024 * 1024), "5.0 MB");
        assert!(looks_binary(b"ab\0cd"));
        assert!(!looks_binary("héllo\n".as_bytes()));
    }

    #[test]
    fn atomic_write_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("run.sh");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_file_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o755);
        let q = d.path().join("fresh.txt");
        write_file_atomic(&q, b"x").unwrap();
        let mode = std::fs::metadata(&q).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask());
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temp files left: {names:?}");
    }
}
