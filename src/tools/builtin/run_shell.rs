//! `run_shell`: a command line run with `sh -c` in the workspace, in its own
//! process group (a timeout or cancel kills the whole tree), without the
//! user's secrets in its environment; output streamed live and returned with
//! the exit code.

use std::ffi::OsString;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::with_field;
use crate::tools::process::{ProcessSpec, base_env, child_env, run_process};
use crate::tools::{ToolContext, ToolError, ToolFuture, TypedTool};

const NAME: &str = "run_shell";

/// Arguments of `run_shell`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunShellArgs {
    /// The command line, run with `sh -c` (pipes, redirections and `&&` work). Standard input is empty,
    /// so interactive programs get end-of-file; pass flags like `--yes` or `--no-pager`.
    pub command: String,
    /// Folder to run in, relative to the workspace root (default: the root).
    pub cwd: Option<String>,
    /// Seconds before the command is killed (default and maximum: the configured shell timeout).
    pub timeout_s: Option<f64>,
}

/// Runs shell commands; see the module doc.
pub struct RunShell {
    timeout: Duration,
    secrets: Vec<String>,
    /// The environment to start from; `None` = this process's, read at each call.
    base_env: Option<Vec<(OsString, OsString)>>,
}

impl RunShell {
    /// `timeout`: the default and longest run time; `secrets`: variables never passed on.
    pub fn new(timeout: Duration, secrets: Vec<String>) -> Self {
        RunShell {
            timeout,
            secrets,
            base_env: None,
        }
    }

    /// Start from `env` instead of this process's environment (tests).
    pub fn with_base_env(mut self, env: Vec<(OsString, OsString)>) -> Self {
        self.base_env = Some(env);
        self
    }
}

impl TypedTool for RunShell {
    type Args = RunShellArgs;
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = "Run a shell command (sh -c) in the workspace and return its exit code, \
        stdout and stderr (long output keeps its start and end). A non-zero exit code is reported, not an \
        error. The command is killed with everything it started when it times out; background jobs are \
        stopped when it ends. Secrets (API keys, tokens, passwords) are not in its environment.";

    fn run(self: Arc<Self>, args: RunShellArgs, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            if args.command.trim().is_empty() {
                return Err(ToolError::invalid(NAME, "command", "the command is empty"));
            }
            if args.command.contains('\0') {
                return Err(ToolError::invalid(NAME, "command", "contains a NUL byte"));
            }
            let mut timeout = self.timeout.min(ctx.timeout);
            if let Some(t) = args.timeout_s {
                if !(t.is_finite() && t > 0.0) {
                    return Err(ToolError::invalid(NAME, "timeout_s", "use a number of seconds above 0"));
                }
                timeout = timeout.min(Duration::try_from_secs_f64(t).unwrap_or(timeout));
            }
            let cwd = ctx
                .workspace
                .existing(NAME, args.cwd.as_deref().unwrap_or("."))
                .map_err(|e| with_field(e, "cwd"))?;
            if !cwd.is_dir() {
                return Err(ToolError::invalid(NAME, "cwd", "not a folder"));
            }
            let spec = ProcessSpec {
                program: "sh".into(),
                args: vec!["-c".into(), args.command],
                cwd,
                env: child_env(base_env(self.base_env.as_deref()), &self.secrets),
                timeout,
            };
            let out = run_process(NAME, spec, &ctx).await?;
            Ok(out.render(ctx.output_limit))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::tools::process::env_pairs;
    use crate::tools::run_call;
    use serde_json::json;

    fn shell() -> RunShell {
        RunShell::new(Duration::from_secs(30), vec!["MY_ENDPOINT_CRED".into()]).with_base_env(env_pairs([
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
            ("OPENAI_API_KEY", "sk-test-123"),
            ("MY_ENDPOINT_CRED", "cred-456"),
            ("GH_TOKEN", "ghp-789"),
            ("HARMLESS", "visible"),
        ]))
    }

    /// Whether a process is gone (or a zombie waiting for its parent).
    fn dead(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(s) => s
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    async fn wait_dead(pid: i32) {
        for _ in 0..200 {
            if dead(pid) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("process {pid} is still alive");
    }

    #[tokio::test]
    async fn exit_codes_stdout_and_stderr() {
        let env = Env::new();
        let out = call(shell(), json!({"command": "echo hi; echo oops >&2"}), env.ctx())
            .await
            .unwrap();
        assert!(out.starts_with("exit code: 0 (took "), "{out}");
        assert!(out.ends_with("--- stdout ---\nhi\n--- stderr ---\noops\n"), "{out}");
        let out = call(shell(), json!({"command": "exit 3"}), env.ctx()).await.unwrap();
        assert!(
            out.starts_with("exit code: 3 ") && out.ends_with("(no output)\n"),
            "{out}"
        );
        let out = call(shell(), json!({"command": "kill -9 $$"}), env.ctx())
            .await
            .unwrap();
        assert!(out.starts_with("killed by signal 9"), "{out}");
        env.write("sub/f.txt", "");
        let out = call(shell(), json!({"command": "pwd; ls", "cwd": "sub"}), env.ctx())
            .await
            .unwrap();
        assert!(
            out.contains(&format!("{}\nf.txt\n", env.root().join("sub").display())),
            "{out}"
        );
        let out = call(shell(), json!({"command": "read x; echo \"[$x]\""}), env.ctx())
            .await
            .unwrap();
        assert!(out.contains("[]"), "stdin is empty: {out}");
    }

    #[tokio::test]
    async fn lines_are_streamed_to_the_progress_channel() {
        let env = Env::new();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut ctx = env.ctx();
        ctx.progress = Some(tx);
        call(shell(), json!({"command": "echo one; echo two >&2; printf three"}), ctx)
            .await
            .unwrap();
        let mut got = Vec::new();
        while let Ok(l) = rx.try_recv() {
            got.push(l);
        }
        got.sort();
        assert_eq!(got, ["one", "three", "two"]);
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_process_tree() {
        let env = Env::new();
        let r = call(
            shell(),
            json!({"command": "sleep 60 & echo $! > bg.pid; wait", "timeout_s": 1}),
            env.ctx(),
        )
        .await;
        assert!(
            matches!(&r, Err(ToolError::TimedOut { tool, .. }) if tool == "run_shell"),
            "{r:?}"
        );
        let pid: i32 = env.read("bg.pid").trim().parse().unwrap();
        wait_dead(pid).await;
        // Also when the context's timeout is the shorter one (run_call drops the future).
        let mut ctx = env.ctx();
        ctx.timeout = Duration::from_millis(800);
        let tool: Arc<dyn crate::tools::Tool> = Arc::new(crate::tools::Typed::new(shell()));
        let r = run_call(
            &tool,
            NAME,
            json!({"command": "sleep 60 & echo $! > bg2.pid; wait"}),
            ctx,
        )
        .await;
        assert!(matches!(r, Err(ToolError::TimedOut { .. })), "{r:?}");
        wait_dead(env.read("bg2.pid").trim().parse().unwrap()).await;
    }

    #[tokio::test]
    async fn cancel_kills_the_whole_process_tree() {
        let env = Env::new();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut ctx = env.ctx();
        ctx.progress = Some(tx);
        let cancel = ctx.cancel.clone();
        let task = tokio::spawn(call(
            shell(),
            json!({"command": "sleep 60 & echo started $!; wait"}),
            ctx,
        ));
        let line = rx.recv().await.unwrap();
        let pid: i32 = line.strip_prefix("started ").unwrap().parse().unwrap();
        assert!(!dead(pid));
        cancel.cancel();
        let r = task.await.unwrap();
        assert!(matches!(r, Err(ToolError::Cancelled)), "{r:?}");
        wait_dead(pid).await;
    }

    #[tokio::test]
    async fn background_jobs_do_not_hold_the_call_open() {
        let env = Env::new();
        let out = call(
            shell(),
            json!({"command": "sleep 60 & echo $! > bg.pid; echo done"}),
            env.ctx(),
        )
        .await
        .unwrap();
        assert!(out.contains("done"), "{out}");
        wait_dead(env.read("bg.pid").trim().parse().unwrap()).await;
    }

    #[tokio::test]
    async fn secrets_are_not_in_the_environment() {
        let env = Env::new();
        let out = call(shell(), json!({"command": "env"}), env.ctx()).await.unwrap();
        assert!(out.contains("HARMLESS=visible"), "{out}");
        for secret in ["sk-test-123", "cred-456", "ghp-789", "OPENAI_API_KEY", "GH_TOKEN"] {
            assert!(!out.contains(secret), "{secret} leaked: {out}");
        }
    }

    #[tokio::test]
    async fn output_is_capped_keeping_start_and_end() {
        let env = Env::new();
        let mut ctx = env.ctx();
        ctx.output_limit = 2000;
        let out = call(shell(), json!({"command": "seq 1 100000"}), ctx).await.unwrap();
        assert!(out.len() < 2200, "{}", out.len());
        assert!(out.contains("--- stdout ---\n1\n2\n3\n"), "{out}");
        assert!(out.contains("bytes omitted"), "{out}");
        assert!(out.ends_with("99999\n100000\n"), "{out}");
    }

    #[tokio::test]
    async fn bad_arguments_and_cwd_outside_are_refused() {
        let env = Env::new();
        let e = err_text(call(shell(), json!({"command": "  "}), env.ctx()).await);
        assert!(e.contains("command"), "{e}");
        let e = err_text(call(shell(), json!({"command": "ls", "timeout_s": -1}), env.ctx()).await);
        assert!(e.contains("timeout_s"), "{e}");
        for cwd in ["..", "/", "dir_out"] {
            let r = call(shell(), json!({"command": "touch pwned", "cwd": cwd}), env.ctx()).await;
            let e = err_text(r);
            assert!(
                e.contains("cwd:") && (e.contains("outside") || e.contains("symlink")),
                "{e}"
            );
        }
        env.assert_outside_untouched();
        let e = err_text(call(shell(), json!({"command": "ls", "cwd": "nope"}), env.ctx()).await);
        assert!(e.contains("cwd") && e.contains("does not exist"), "{e}");
    }
}
