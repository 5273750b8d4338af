//! Carrying out the app's effects: starting orchestrators (turns, agent runs,
//! arenas, judges, compares), recording turns into the session folder and the
//! history, answering history questions off the UI task, the clipboard,
//! model lists, files. Also the approvals that agent runs wait on.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use ratatui::crossterm::execute;
use tokio::sync::mpsc::UnboundedSender;

use super::app::{App, AppEvent, Effect, McpAction};
use super::clipboard;
use super::run::Inbox;

const MODELS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
use crate::conversation::Turn;
use crate::orchestration::agent::{AgentSetup, ApprovalRequest, Approver, run_agent};
use crate::orchestration::{EventSink, TurnRef, arena, chat, compare};
use crate::records::write_atomic;
use crate::records::writer::RecordWriter;
use crate::store::{SessionMeta, StoreWriter};
use crate::tools::Decision;
use crate::tools::mcp::McpHub;

/// Approvals waiting for the user, by request id. A decision may arrive
/// before the agent starts waiting; it is kept until then.
#[derive(Clone, Default)]
pub struct PendingApprovals {
    map: Arc<std::sync::Mutex<std::collections::HashMap<u64, Pending>>>,
}

enum Pending {
    Waiting(tokio::sync::oneshot::Sender<Decision>),
    Decided(Decision),
}

impl PendingApprovals {
    /// The user decided on request `id`.
    pub fn resolve(&self, id: u64, decision: Decision) {
        let mut map = self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match map.remove(&id) {
            Some(Pending::Waiting(tx)) => {
                let _ = tx.send(decision);
            }
            Some(Pending::Decided(_)) | None => {
                map.insert(id, Pending::Decided(decision));
            }
        }
    }
}

impl Approver for PendingApprovals {
    fn decide(&self, _turn: TurnRef, request: ApprovalRequest) -> futures::future::BoxFuture<'static, Decision> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        {
            let mut map = self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match map.remove(&request.id) {
                Some(Pending::Decided(d)) => return Box::pin(async move { d }),
                Some(Pending::Waiting(_)) | None => {
                    map.insert(request.id, Pending::Waiting(tx));
                }
            }
        }
        Box::pin(async move { rx.await.unwrap_or(Decision::Reject(Some("pai is closing".into()))) })
    }
}

/// Where turns go: the session folder and the history database.
pub struct Recorders {
    pub records: Option<RecordWriter>,
    pub history: Option<StoreWriter>,
    /// For reads (`/history`, `/search`, `/resume`).
    pub db: Option<PathBuf>,
    pub sessions_dir: Option<PathBuf>,
    /// The history session last described to the writer.
    described: std::sync::Mutex<Option<String>>,
}

impl Recorders {
    pub fn new(
        records: Option<RecordWriter>,
        history: Option<StoreWriter>,
        db: Option<PathBuf>,
        sessions_dir: Option<PathBuf>,
    ) -> Self {
        Recorders {
            records,
            history,
            db,
            sessions_dir,
            described: std::sync::Mutex::new(None),
        }
    }

    /// Record nothing (tests, benchmarks).
    pub fn none() -> Self {
        Self::new(None, None, None, None)
    }

    /// The history needs to know the session before its first turn.
    fn describe(&self, app: &App, turn: &Turn) {
        let Some(h) = &self.history else { return };
        let mut d = self.described.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if d.as_deref() == Some(app.session_name()) {
            return;
        }
        h.session(SessionMeta {
            id: app.session_name().to_string(),
            started_at: app.record_session.1.clone(),
            title: None,
            endpoint: turn.endpoint.clone(),
            model: turn.model.clone(),
            system: app.conversation.system.clone(),
            folder: app
                .session_dir
                .clone()
                .or_else(|| self.sessions_dir.as_ref().map(|d| d.join(app.session_name()))),
            mode: turn.mode,
        });
        *d = Some(app.session_name().to_string());
    }
}

/// What effects need from the loop.
pub(super) struct Runner {
    pub(super) sink: EventSink,
    pub(super) inbox: UnboundedSender<Inbox>,
    pub(super) approvals: PendingApprovals,
    pub(super) mcp: Option<Arc<McpHub>>,
}

pub(super) fn run_effect<B: Backend + Write>(
    effect: Effect,
    app: &mut App,
    runner: &Runner,
    rec: &Recorders,
    terminal: &mut Terminal<B>,
) {
    let (sink, inbox) = (&runner.sink, &runner.inbox);
    match effect {
        Effect::StartAgent(ctx, cancel, plan) => {
            let sink = sink.clone();
            let setup = AgentSetup {
                registry: plan.registry,
                workspace: plan.workspace,
                approver: Arc::new(runner.approvals.clone()),
                approvals: plan.approvals,
                max_steps: plan.max_steps,
                tool_timeout: plan.tool_timeout,
                output_limit: plan.output_limit,
                only_server: plan.only_server,
            };
            tokio::spawn(async move {
                run_agent(*ctx, setup, &sink, cancel).await;
            });
        }
        Effect::Approve { id, decision } => runner.approvals.resolve(id, decision),
        Effect::Mcp(action) => {
            let Some(hub) = runner.mcp.clone() else { return };
            let inbox = inbox.clone();
            tokio::spawn(async move {
                let name = match &action {
                    McpAction::Enable(n) | McpAction::Disable(n) | McpAction::Restart(n) => n.clone(),
                };
                if let Some(server) = hub.get(&name) {
                    match action {
                        McpAction::Enable(_) | McpAction::Restart(_) => {
                            server.start().await;
                        }
                        McpAction::Disable(_) => server.stop().await,
                    }
                }
                let tools = hub.tools().await;
                let _ = inbox.send(Inbox::App(AppEvent::Mcp {
                    statuses: hub.statuses(),
                    tools,
                }));
            });
        }
        Effect::StartTurn(ctx, cancel) => {
            let sink = sink.clone();
            tokio::spawn(async move {
                chat::run_turn(*ctx, &sink, cancel).await;
            });
        }
        Effect::StartArena(setup, control) => {
            let sink = sink.clone();
            tokio::spawn(async move {
                arena::run_arena(*setup, &sink, control).await;
            });
        }
        Effect::StartJudge(job, cancel) => {
            let sink = sink.clone();
            tokio::spawn(async move {
                let j = *job;
                arena::judge_later(j.setup, j.opening, j.names, j.spoken, j.first_turn_id, &sink, cancel).await;
            });
        }
        Effect::StartCompare(contexts, cancel) => {
            let sink = sink.clone();
            tokio::spawn(async move {
                compare::run_compare(contexts, &sink, cancel).await;
            });
        }
        Effect::Record(turn) => {
            rec.describe(app, &turn);
            if let Some(h) = &rec.history {
                h.turn(app.session_name(), (*turn).clone());
            }
            if let Some(w) = &rec.records {
                w.record(*turn);
            }
        }
        Effect::Checkpoint(turn) => {
            rec.describe(app, &turn);
            if let Some(h) = &rec.history {
                h.checkpoint(app.session_name(), (*turn).clone());
            }
            if let Some(w) = &rec.records {
                w.record(*turn);
            }
        }
        Effect::StartSession(start) => {
            if let Some(w) = &rec.records {
                w.session(start);
            }
        }
        Effect::Vote(v) => {
            if let Some(h) = &rec.history {
                h.vote(*v);
            }
        }
        Effect::History(req) => {
            let inbox = inbox.clone();
            match rec.db.clone() {
                Some(db) => {
                    tokio::task::spawn_blocking(move || {
                        let reply = crate::tui::app::answer_history(&db, req);
                        let _ = inbox.send(Inbox::App(AppEvent::History(reply)));
                    });
                }
                None => {
                    let _ = inbox.send(Inbox::App(AppEvent::History(crate::tui::app::HistoryReply::Failed(
                        "history is off (--no-log)".into(),
                    ))));
                }
            }
        }
        Effect::Copy(text) => {
            let inbox = inbox.clone();
            // Not in the session folder: that holds the record, nothing else.
            let fallback = directories::ProjectDirs::from("", "", "polyglot")
                .map(|d| d.data_dir().to_path_buf())
                .unwrap_or_else(std::env::temp_dir)
                .join("clipboard.txt");
            let env = clipboard::ClipboardEnv::from_process(fallback);
            tokio::task::spawn_blocking(move || {
                let report = clipboard::copy(&text, &env);
                if let Some(bytes) = report.osc52.clone() {
                    let _ = inbox.send(Inbox::TerminalBytes(bytes));
                }
                let _ = inbox.send(Inbox::App(AppEvent::Copied(report.summary())));
            });
        }
        Effect::ListModels { endpoint, show } => {
            let inbox = inbox.clone();
            match app.adapter(&endpoint) {
                Ok(adapter) => {
                    tokio::spawn(async move {
                        let result = match tokio::time::timeout(
                            MODELS_TIMEOUT,
                            adapter.list_models(tokio_util::sync::CancellationToken::new()),
                        )
                        .await
                        {
                            Ok(r) => r.map_err(|e| e.to_string()),
                            Err(_) => Err("no answer within 20 s".into()),
                        };
                        let _ = inbox.send(Inbox::App(AppEvent::Models { endpoint, show, result }));
                    });
                }
                Err(e) => {
                    let _ = inbox.send(Inbox::App(AppEvent::Models {
                        endpoint,
                        show,
                        result: Err(e),
                    }));
                }
            }
        }
        Effect::WriteFile { path, contents } => {
            let inbox = inbox.clone();
            tokio::task::spawn_blocking(move || {
                let r = write_atomic(&path, &contents, true)
                    .map(|()| std::fs::canonicalize(&path).unwrap_or(path.clone()))
                    .map_err(|e| format!("cannot write {}: {e}", path.display()));
                let _ = inbox.send(Inbox::App(AppEvent::FileWritten(r)));
            });
        }
        Effect::SetMouseCapture(on) => {
            let mut out = std::io::stdout();
            let _ = if on {
                execute!(out, EnableMouseCapture)
            } else {
                execute!(out, DisableMouseCapture)
            };
        }
        Effect::Redraw => {
            let _ = terminal.clear();
        }
        Effect::Quit => {}
    }
}
