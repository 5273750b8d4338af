//! Running a child process for a tool (`run_shell`, custom tools): its own
//! process group (a timeout or cancel kills the whole tree), an environment
//! without secrets, stdout/stderr captured with bounded memory and streamed
//! line by line to the context's progress channel, and a result text that
//! reports the exit code.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use super::{ToolContext, ToolError};

/// After the main process exits, how long to wait for the output pipes to
/// close before killing what is left of its process group (background jobs).
const EXIT_GRACE: Duration = Duration::from_millis(200);
/// A line longer than this is passed on in pieces.
const MAX_LINE: usize = 16 * 1024;
/// Most lines sent to the progress channel per stream (the UI needs no more).
const MAX_STREAMED_LINES: usize = 5_000;

/// A process to run.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// The complete environment of the child (see [`child_env`]).
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
}

/// How a process ended, with its captured output.
#[derive(Debug, Clone)]
pub struct ProcessOutput {
    pub status: ExitStatus,
    pub stdout: Capture,
    pub stderr: Capture,
    pub elapsed: Duration,
}

impl ProcessOutput {
    /// The exit code, or `None` when a signal ended the process.
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// The text the model reads: exit status, then stdout and stderr, within `limit` bytes.
    pub fn render(&self, limit: usize) -> String {
        use std::os::unix::process::ExitStatusExt;
        let mut out = match (self.status.code(), self.status.signal()) {
            (Some(c), _) => format!("exit code: {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "exit status unknown".to_string(),
        };
        out.push_str(&format!(" (took {:.2}s)\n", self.elapsed.as_secs_f64()));
        let (o, e) = (self.stdout.total, self.stderr.total);
        if o == 0 && e == 0 {
            out.push_str("(no output)\n");
            return out;
        }
        // Share the budget, keeping at least a third for stderr (errors live there).
        let budget = limit.saturating_sub(out.len() + 40).max(256);
        let err_budget = if o + e <= budget {
            e
        } else {
            e.min((budget / 3).max(budget.saturating_sub(o)))
        };
        let out_budget = budget.saturating_sub(err_budget);
        if o > 0 {
            out.push_str("--- stdout ---\n");
            out.push_str(&self.stdout.render(out_budget));
        }
        if e > 0 {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("--- stderr ---\n");
            out.push_str(&self.stderr.render(err_budget));
        }
        out
    }
}

/// Bounded capture of a stream: the first and the last bytes, with the count of
/// what was dropped between them.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    half: usize,
    /// Bytes the stream produced in total.
    pub total: usize,
}

impl Capture {
    fn new(limit: usize) -> Self {
        Capture {
            half: (limit / 2).max(1),
            ..Default::default()
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        let room = self.half.saturating_sub(self.head.len());
        let (h, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(h);
        let rest = &rest[rest.len().saturating_sub(self.half)..];
        let overflow = (self.tail.len() + rest.len()).saturating_sub(self.half);
        self.tail.drain(..overflow.min(self.tail.len()));
        self.tail.extend(rest);
    }

    /// The captured text, at most about `budget` bytes: head and tail with a
    /// note in the middle when something is left out.
    pub fn render(&self, budget: usize) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let kept = self.head.len() + tail.len();
        if kept == self.total && kept <= budget {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let h = (budget / 2).min(self.head.len());
        let t = (budget - h).min(tail.len());
        let head = String::from_utf8_lossy(&self.head[..h]);
        let tail = String::from_utf8_lossy(&tail[tail.len() - t..]);
        let omitted = self.total - h - t;
        format!("{head}\n… [{omitted} bytes omitted] …\n{tail}")
    }
}

/// Whether an environment variable may hold a secret: named in `secrets`, or
/// ending in `_KEY`, `_TOKEN`, `_SECRET`, `_PASSWORD`, or containing `API_KEY`.
pub fn is_secret_name(name: &str, secrets: &[String]) -> bool {
    let upper = name.to_ascii_uppercase();
    secrets.iter().any(|s| s == name)
        || ["_KEY", "_TOKEN", "_SECRET", "_PASSWORD"]
            .iter()
            .any(|suffix| upper.ends_with(suffix))
        || upper.contains("API_KEY")
}

/// `base` minus every variable that may hold a secret (see [`is_secret_name`]).
pub fn child_env(
    base: impl IntoIterator<Item = (OsString, OsString)>,
    secrets: &[String],
) -> Vec<(OsString, OsString)> {
    base.into_iter()
        .filter(|(k, _)| !is_secret_name(&k.to_string_lossy(), secrets))
        .collect()
}

/// Kills the process group when dropped (timeout, cancel, or a dropped future).
struct GroupKill(Option<i32>);

impl GroupKill {
    fn kill(&self) {
        // Never signal pid 0 or 1: kill(0, ..) and kill(-1, ..) mean "everyone".
        if let Some(pgid) = self.0.filter(|p| *p > 1) {
            // SAFETY: plain syscall on a process group we created for this child.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Run `spec`; output lines go to `ctx.report` as they arrive. A non-zero exit
/// is a normal result; failing to start, a timeout and a cancel are errors.
pub async fn run_process(tool: &str, spec: ProcessSpec, ctx: &ToolContext) -> Result<ProcessOutput, ToolError> {
    let mut cmd = tokio::process::Command::new(&spec.program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k.as_os_str(), v.as_os_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| spawn_error(tool, &spec.program, &e))?;
    let guard = GroupKill(child.id().and_then(|id| i32::try_from(id).ok()));
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolError::failed(tool, "could not capture the process output"));
    };
    let limit = ctx.output_limit;
    let exited = CancellationToken::new();
    let work = async {
        let waiter = async {
            let status = child.wait().await;
            exited.cancel();
            status
        };
        let readers = async {
            let mut both = std::pin::pin!(futures::future::join(
                read_stream(stdout, ctx, limit),
                read_stream(stderr, ctx, limit)
            ));
            tokio::select! {
                r = &mut both => r,
                _ = async { exited.cancelled().await; tokio::time::sleep(EXIT_GRACE).await } => {
                    // Background jobs still hold the pipes: stop them.
                    guard.kill();
                    both.await
                }
            }
        };
        tokio::join!(waiter, readers)
    };
    let result = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
        r = tokio::time::timeout(spec.timeout, work) => match r {
            Ok((status, (stdout, stderr))) => {
                let status = status.map_err(|e| ToolError::failed(tool, format!("waiting for the process failed: {e}")))?;
                Ok(ProcessOutput { status, stdout, stderr, elapsed: started.elapsed() })
            }
            Err(_) => Err(ToolError::TimedOut { tool: tool.to_string(), after: spec.timeout }),
        },
    };
    // Whatever happened, nothing of the group outlives the call.
    drop(guard);
    result
}

fn spawn_error(tool: &str, program: &str, e: &std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::failed(
            tool,
            format!("cannot start `{program}`: program not found (check the command and PATH)"),
        ),
        std::io::ErrorKind::PermissionDenied => ToolError::failed(
            tool,
            format!("cannot start `{program}`: permission denied (is it executable?)"),
        ),
        _ => ToolError::failed(tool, format!("cannot start `{program}`: {e}")),
    }
}

/// Read a stream to its end: capture it and report it line by line.
async fn read_stream(mut r: impl AsyncRead + Unpin, ctx: &ToolContext, limit: usize) -> Capture {
    let mut cap = Capture::new(limit);
    let mut pending: Vec<u8> = Vec::new();
    let mut streamed = 0usize;
    let mut buf = vec![0u8; 8192];
    let report = |line: &[u8], streamed: &mut usize| {
        if ctx.progress.is_none() {
            return;
        }
        *streamed += 1;
        if *streamed < MAX_STREAMED_LINES {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            ctx.report(String::from_utf8_lossy(line).into_owned());
        } else if *streamed == MAX_STREAMED_LINES {
            ctx.report("… (more output; not shown live)");
        }
    };
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        cap.push(&buf[..n]);
        pending.extend_from_slice(&buf[..n]);
        let mut start = 0;
        while let Some(i) = memchr::memchr(b'\n', &pending[start..]) {
            report(&pending[start..start + i], &mut streamed);
            start += i + 1;
        }
        pending.drain(..start);
        if pending.len() > MAX_LINE {
            report(&pending, &mut streamed);
            pending.clear();
        }
    }
    if !pending.is_empty() {
        report(&pending, &mut streamed);
    }
    cap
}

/// The user's environment (read at call time), or a fixed one for tests.
pub fn base_env(fixed: Option<&[(OsString, OsString)]>) -> Vec<(OsString, OsString)> {
    match fixed {
        Some(v) => v.to_vec(),
        None => std::env::vars_os().collect(),
    }
}

/// `(name, value)` pairs for tests and callers building an environment by hand.
pub fn env_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<(OsString, OsString)> {
    pairs
        .into_iter()
        .map(|(k, v)| (OsStr::new(k).to_owned(), OsStr::new(v).to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_variables_are_dropped() {
        let base = env_pairs([
            ("PATH", "/bin"),
            ("OPENAI_API_KEY", "sk-1"),
            ("GITHUB_TOKEN", "t"),
            ("DB_PASSWORD", "p"),
            ("AWS_SECRET", "s"),
            ("my_api_key_v2", "k"),
            ("CUSTOM_CRED", "c"),
            ("HOME", "/home/u"),
        ]);
        let env = child_env(base, &["CUSTOM_CRED".to_string()]);
        let names: Vec<String> = env.iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["PATH", "HOME"]);
    }

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::new(10);
        c.push(b"0123456789");
        c.push(b"abcdefghij");
        assert_eq!(c.total, 20);
        let s = c.render(10);
        assert_eq!(s, "01234\n… [10 bytes omitted] …\nfghij");
        let mut small = Capture::new(100);
        small.push(b"hello\n");
        assert_eq!(small.render(100), "hello\n");
        assert_eq!(Capture::new(100).render(10), "");
    }
}
