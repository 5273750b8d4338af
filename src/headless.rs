//! One-shot mode: one prompt, the answer streamed to stdout as plain text (or one
//! JSON object with `--json`), the turn recorded, an exit code that tells.
//!
//! Owns what goes to stdout/stderr outside the TUI. Writes are coalesced: every
//! event already queued is rendered before one write and one flush.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::conversation::{Message, Params, TurnMode};
use crate::orchestration::agent::{AgentEnd, AgentOutcome, AgentSetup, run_agent};
use crate::orchestration::{OrchestratorEvent, TurnContext, TurnOutcome, TurnRef, chat, event_channel};
use crate::protocols::{ProtocolAdapter, StreamEvent};
use crate::records::{SessionRecorder, Templates, short_id};
use crate::store::{SessionMeta, StoreReport, StoreWriter};
use crate::util::sanitize::terminal_safe;
use crate::util::time::Utc;

/// Exit codes.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILED: i32 = 1;
pub const EXIT_CANCELLED: i32 = 130;
/// An agent run used up `max_steps` without answering.
pub const EXIT_MAX_STEPS: i32 = 3;

/// Everything one one-shot run needs, resolved from config and flags.
pub struct OneShot {
    pub endpoint: String,
    pub model: String,
    pub system: Option<String>,
    pub params: Params,
    pub prompt: String,
    pub json: bool,
    /// Where to record; `None` with `--no-log`.
    pub sessions_dir: Option<PathBuf>,
    pub templates: Arc<Templates>,
    /// Agent mode: tools in a loop (`--agent`).
    pub agent: Option<AgentSetup>,
    /// The history database to record into; `None` with `--no-log`.
    pub history_db: Option<PathBuf>,
    /// Continue a recorded session (`pai resume ID PROMPT`).
    pub resume: Option<Continue>,
}

/// A recorded session to add this turn to.
#[derive(Debug, Clone, PartialEq)]
pub struct Continue {
    /// Its id (folder name).
    pub session: String,
    /// Its folder, when it still exists.
    pub folder: Option<PathBuf>,
    /// The conversation so far, without the system prompt.
    pub history: Vec<Message>,
    pub next_turn_id: u32,
}

/// Where output goes (real stdout/stderr, or buffers in tests and benchmarks).
pub struct Io<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
    /// stderr is a terminal: show reasoning (dimmed) and retry notices there.
    pub err_is_tty: bool,
}

struct Printer<'a, 'b> {
    io: &'a mut Io<'b>,
    json: bool,
    buf: String,
    err_buf: String,
    ends_with_newline: bool,
    wrote_text: bool,
    broken: bool,
    in_reasoning: bool,
}

impl Printer<'_, '_> {
    fn event(&mut self, ev: &OrchestratorEvent) {
        let event = match ev {
            OrchestratorEvent::Stream { event, .. } => event,
            OrchestratorEvent::TurnStarted { turn, .. } => {
                // A later agent step starts on a new line.
                let pending_newline = if self.buf.is_empty() {
                    !self.ends_with_newline
                } else {
                    !self.buf.ends_with('\n')
                };
                if turn.turn_id > 1 && self.wrote_text && !self.json && pending_newline {
                    self.buf.push('\n');
                }
                return;
            }
            OrchestratorEvent::ToolStarted { tool, arguments, .. } => {
                if self.io.err_is_tty {
                    self.end_reasoning();
                    let args: String = arguments.to_string().chars().take(200).collect();
                    self.err_buf.push_str(&format!(
                        "\x1b[2m⚙ {} {}\x1b[0m\n",
                        terminal_safe(tool),
                        terminal_safe(&args)
                    ));
                }
                return;
            }
            OrchestratorEvent::ToolFinished { run, .. } => {
                if self.io.err_is_tty {
                    let first: String = run.result.lines().next().unwrap_or("").chars().take(160).collect();
                    let mark = if run.is_error { "✗" } else { "✓" };
                    self.err_buf.push_str(&format!(
                        "\x1b[2m  {mark} {} ({} ms) {}\x1b[0m\n",
                        terminal_safe(&run.tool),
                        run.duration_ms,
                        terminal_safe(&first)
                    ));
                }
                return;
            }
            OrchestratorEvent::TurnFinished { .. }
            | OrchestratorEvent::ToolOutput { .. }
            | OrchestratorEvent::ApprovalNeeded { .. }
            | OrchestratorEvent::Arena(_)
            | OrchestratorEvent::Checkpoint { .. }
            | OrchestratorEvent::AgentFinished { .. } => return,
        };
        match event {
            StreamEvent::Text(t) if !self.json => {
                self.end_reasoning();
                self.buf.push_str(&terminal_safe(t));
            }
            StreamEvent::Reasoning(r) if !self.json && self.io.err_is_tty => {
                if !self.in_reasoning {
                    self.err_buf.push_str("\x1b[2m");
                    self.in_reasoning = true;
                }
                self.err_buf.push_str(&terminal_safe(r));
            }
            StreamEvent::Notice(n) if self.io.err_is_tty => {
                self.end_reasoning();
                self.err_buf.push_str(&format!("pai: {}\n", terminal_safe(n)));
            }
            StreamEvent::Retrying { attempt, delay, reason } if self.io.err_is_tty => {
                self.end_reasoning();
                self.err_buf.push_str(&format!(
                    "pai: {reason}; retry {attempt} in {:.1}s…\n",
                    delay.as_secs_f64()
                ));
            }
            _ => {}
        }
    }

    fn end_reasoning(&mut self) {
        if self.in_reasoning {
            self.err_buf.push_str("\x1b[0m\n");
            self.in_reasoning = false;
        }
    }

    /// One write and one flush for everything rendered so far.
    fn flush(&mut self) -> bool {
        if !self.err_buf.is_empty() {
            let _ = self.io.err.write_all(self.err_buf.as_bytes());
            let _ = self.io.err.flush();
            self.err_buf.clear();
        }
        if self.buf.is_empty() || self.broken {
            self.buf.clear();
            return !self.broken;
        }
        self.wrote_text = true;
        self.ends_with_newline = self.buf.ends_with('\n');
        let ok = self
            .io
            .out
            .write_all(self.buf.as_bytes())
            .and_then(|()| self.io.out.flush())
            .is_ok();
        self.buf.clear();
        self.broken = !ok;
        ok
    }
}

/// What the producer finished with.
enum Ran {
    Chat(Box<TurnOutcome>),
    Agent(AgentOutcome),
}

/// Run one prompt to the end. Returns the process exit code.
pub async fn run(job: OneShot, adapter: Arc<dyn ProtocolAdapter>, io: &mut Io<'_>, cancel: CancellationToken) -> i32 {
    let mut messages = Vec::with_capacity(2);
    if let Some(s) = job.system.as_deref().filter(|s| !s.trim().is_empty()) {
        messages.push(Message::system(s));
    }
    if let Some(c) = &job.resume {
        messages.extend(c.history.iter().cloned());
    }
    messages.push(Message::user(job.prompt.clone()));
    let first_turn = job.resume.as_ref().map_or(1, |c| c.next_turn_id.max(1));
    let ctx = TurnContext {
        turn: TurnRef {
            turn_id: first_turn,
            lane: 0,
        },
        endpoint: job.endpoint.clone(),
        model: job.model.clone(),
        participant: None,
        mode: if job.agent.is_some() {
            TurnMode::Agent
        } else {
            TurnMode::Chat
        },
        adapter,
        messages,
        params: job.params.clone(),
        tools: Vec::new(),
    };

    // The history database opens on its own thread while the request runs.
    let (report_tx, reports) = std::sync::mpsc::channel::<StoreReport>();
    let history = job.history_db.clone().map(|path| {
        StoreWriter::spawn(path, move |r| {
            let _ = report_tx.send(r);
        })
    });
    let mode = ctx.mode;

    let (tx, mut rx) = event_channel();
    let producer = {
        let cancel = cancel.clone();
        let agent = job.agent.clone();
        async move {
            let ran = match agent {
                Some(setup) => Ran::Agent(run_agent(ctx, setup, &tx, cancel).await),
                None => Ran::Chat(Box::new(chat::run_turn(ctx, &tx, cancel).await)),
            };
            drop(tx);
            ran
        }
    };
    let mut printer = Printer {
        io,
        json: job.json,
        buf: String::with_capacity(8192),
        err_buf: String::new(),
        ends_with_newline: true,
        wrote_text: false,
        broken: false,
        in_reasoning: false,
    };
    // Each finished request is recorded at once: a long agent run keeps its
    // steps even if it is killed later.
    let mut record_error = None;
    let mut recorder = match (&job.sessions_dir, &job.resume) {
        (None, _) => None,
        (Some(d), None) => Some(SessionRecorder::new(d, job.templates.clone())),
        (Some(d), Some(c)) => match &c.folder {
            Some(folder) => match SessionRecorder::reopen(folder, job.templates.clone()) {
                Ok(r) => Some(r),
                Err(e) => {
                    record_error = Some(e.to_string());
                    None
                }
            },
            None => Some(SessionRecorder::named(
                d,
                &c.session,
                &Utc::now().rfc3339(),
                job.templates.clone(),
            )),
        },
    };
    let mut session_dir = None;
    // The history session: the folder's id when there is a folder.
    let session_id = match (&job.resume, &recorder) {
        (Some(c), _) => c.session.clone(),
        (None, Some(rec)) => rec.session_id(),
        (None, None) => format!("{}-{}", Utc::now().stamp(), short_id()),
    };
    let started_at = recorder
        .as_ref()
        .map_or_else(|| Utc::now().rfc3339(), |r| r.started_at().to_string());
    let mut history_session_sent = false;
    let consumer = async {
        while let Some(ev) = rx.recv().await {
            let mut handle = |ev: &OrchestratorEvent, printer: &mut Printer| {
                printer.event(ev);
                // Checkpoints while streaming (crash safety), then the final record.
                let (t, last) = match ev {
                    OrchestratorEvent::TurnFinished { outcome, .. } => (outcome.turn(), true),
                    OrchestratorEvent::Checkpoint { partial, .. } => (partial.as_ref(), false),
                    _ => return,
                };
                if let Some(rec) = recorder.as_mut() {
                    match rec.record(t) {
                        Ok(_) => session_dir = Some(rec.dir().to_path_buf()),
                        Err(e) => record_error = Some(e.to_string()),
                    }
                }
                if let Some(w) = &history {
                    if !history_session_sent {
                        w.session(SessionMeta {
                            id: session_id.clone(),
                            started_at: started_at.clone(),
                            title: None,
                            endpoint: t.endpoint.clone(),
                            model: t.model.clone(),
                            system: job.system.clone().filter(|s| !s.trim().is_empty()),
                            folder: session_dir.clone(),
                            mode,
                        });
                        history_session_sent = true;
                    }
                    if last {
                        w.turn(&session_id, t.clone());
                    } else {
                        w.checkpoint(&session_id, t.clone());
                    }
                }
            };
            handle(&ev, &mut printer);
            while let Ok(ev) = rx.try_recv() {
                handle(&ev, &mut printer);
            }
            if !printer.flush() {
                // stdout closed (e.g. piped into `head`): stop the request.
                cancel.cancel();
            }
        }
    };
    let (ran, ()) = tokio::join!(producer, consumer);
    printer.end_reasoning();
    if printer.wrote_text && !printer.ends_with_newline && !printer.broken {
        printer.buf.push('\n');
    }
    printer.flush();
    let broken_pipe = printer.broken;
    // Dropping the writer waits for its writes.
    let recorded_in_history = history.is_some() && history_session_sent;
    drop(history);
    for r in reports.try_iter() {
        let line = match r {
            StoreReport::Opened { warning: None, .. } => continue,
            StoreReport::Opened { path, warning: Some(w) } => {
                format!("pai: warning: history database {}: {w}", path.display())
            }
            StoreReport::Unavailable(e) => format!("pai: history is off: {e}"),
            StoreReport::Failed { what, error } => format!("pai: history: cannot record {what}: {error}"),
        };
        let _ = writeln!(printer.io.err, "{line}");
    }
    let session_id = (session_dir.is_some() || recorded_in_history).then_some(session_id);

    // The answer's turn (for an agent: the last request) and how it ended.
    let (last, end) = match &ran {
        Ran::Chat(o) => (
            Some(o.turn().clone()),
            match o.as_ref() {
                TurnOutcome::Completed(_) => AgentEnd::Answered,
                TurnOutcome::Cancelled(_) => AgentEnd::Cancelled,
                TurnOutcome::Failed { error, .. } => AgentEnd::Failed(error.to_string()),
            },
        ),
        Ran::Agent(o) => (o.steps.last().cloned(), o.end.clone()),
    };
    if job.json {
        let obj = match &last {
            Some(t) => {
                let mut obj = json!({
                    "text": t.response.text,
                    "reasoning": t.response.reasoning,
                    "tool_calls": t.response.tool_calls,
                    "finish_reason": t.response.finish_reason,
                    "endpoint": t.endpoint,
                    "model": t.model,
                    "status": t.status,
                    "error": t.response.error,
                    "stats": t.stats,
                    "session_dir": session_dir,
                    "session_id": session_id,
                });
                if let Ran::Agent(o) = &ran {
                    let runs: Vec<_> = o.steps.iter().flat_map(|s| s.tool_runs.iter()).collect();
                    obj["steps"] = json!(o.steps.len());
                    obj["tool_runs"] = json!(runs);
                    obj["end"] = json!(match &o.end {
                        AgentEnd::Answered => "answered",
                        AgentEnd::MaxSteps(_) => "max_steps",
                        AgentEnd::Cancelled => "cancelled",
                        AgentEnd::Failed(_) => "failed",
                    });
                }
                obj
            }
            None => json!({"error": "no request was made", "session_dir": session_dir, "session_id": session_id}),
        };
        let _ = writeln!(io_out(&mut printer), "{obj}");
    }

    let code = match end {
        _ if broken_pipe => EXIT_OK,
        AgentEnd::Answered => EXIT_OK,
        AgentEnd::MaxSteps(n) => {
            let _ = writeln!(
                printer.io.err,
                "pai: the agent stopped after {n} requests (max_steps) before answering — ask again to continue, or raise max_steps in [defaults]"
            );
            EXIT_MAX_STEPS
        }
        AgentEnd::Cancelled => {
            let kept = match &session_dir {
                Some(d) => format!("; the partial answer is kept in {}", d.display()),
                None => String::new(),
            };
            let _ = writeln!(printer.io.err, "pai: cancelled{kept}");
            EXIT_CANCELLED
        }
        AgentEnd::Failed(error) => {
            let _ = writeln!(printer.io.err, "pai: endpoint `{}`: {error}", job.endpoint);
            EXIT_FAILED
        }
    };
    if let Some(e) = record_error {
        let _ = writeln!(printer.io.err, "pai: {e}");
        return if code == EXIT_OK { EXIT_FAILED } else { code };
    }
    code
}

fn io_out<'a>(p: &'a mut Printer<'_, '_>) -> &'a mut dyn Write {
    p.io.out
}

#[cfg(test)]
mod tests;
