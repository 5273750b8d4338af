//! The TUI runner: owns the terminal and every piece of I/O. It restores the
//! terminal on every exit path (guard + panic hook), runs the event loop —
//! terminal, orchestrator and effect results in one `select!`, draws on demand
//! at most once per frame, sleeps when idle — and carries out the app's effects.

use std::io::{Stdout, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, Event, EventStream,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::time::Instant;

use super::app::{App, AppEvent, AppInit, ToolEnv};
pub use super::effects::{PendingApprovals, Recorders};
use super::effects::{Runner, run_effect};
use super::highlight::Highlighter;
use super::view;
use crate::config::{Config, Secrets};
use crate::conversation::Params;
use crate::orchestration::event_channel;
use crate::records::writer::{RecordWriter, SessionStart};
use crate::records::{Templates, write_atomic};
use crate::store::{StoreReport, StoreWriter};
use crate::tools::mcp::McpHub;

/// Frames are at most this often (~60 per second).
const FRAME: Duration = Duration::from_millis(16);

/// What the TUI starts with.
pub struct TuiOptions {
    pub endpoint: String,
    pub model: String,
    pub system: Option<String>,
    pub params: Params,
    /// Where to record; `None` with `--no-log`.
    pub sessions_dir: Option<PathBuf>,
    /// The history database (read by /history, /search, /resume).
    pub history_db: Option<PathBuf>,
    /// Record turns into it (not with `--no-log`).
    pub record_history: bool,
    /// What to open first: chat, a resumed session, an arena, a comparison.
    pub start: TuiStart,
    pub templates: Arc<Templates>,
    /// Prompt history file.
    pub history_file: Option<PathBuf>,
    /// Tools for agent mode (`None`: no workspace).
    pub tool_env: Option<ToolEnv>,
    /// Configured MCP servers (started in the background).
    pub mcp: Option<Arc<McpHub>>,
}

/// What the TUI opens with (from the command line).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum TuiStart {
    /// Plain chat.
    #[default]
    Chat,
    /// `pai resume ID`: the recorded session, ready to continue.
    Resume(String),
    /// `pai arena NAME`: arena mode; the exchange starts at once with an
    /// opening, else the first prompt typed is the opening.
    Arena {
        name: String,
        turns: u32,
        opening: Option<String>,
    },
    /// `pai compare -e A -e B [PROMPT]`: compare mode on `ENDPOINT/MODEL`
    /// targets, sending PROMPT at once when there is one.
    Compare {
        targets: Vec<String>,
        prompt: Option<String>,
    },
}

impl TuiStart {
    /// Put the app in the starting state; a failure is shown in the TUI.
    fn apply(self, app: &mut App) {
        let result = match self {
            TuiStart::Chat => Ok(()),
            TuiStart::Resume(id) => app.history(crate::tui::app::HistoryRequest::Resume { id, focus: None }),
            TuiStart::Arena { name, turns, opening } => app.open_arena(&name, Some(turns), opening),
            TuiStart::Compare { targets, prompt } => {
                let specs: Vec<&str> = targets.iter().map(String::as_str).collect();
                app.open_compare(&specs).and_then(|()| match prompt {
                    Some(p) => app.start_prompt(p),
                    None => Ok(()),
                })
            }
        };
        if let Err(e) = result {
            app.flash(e, crate::tui::transcript::NoticeLevel::Error);
        }
    }
}

/// Messages to the runner from its helpers.
pub enum Inbox {
    App(AppEvent),
    /// Bytes for the terminal itself (OSC 52), written between frames.
    TerminalBytes(Vec<u8>),
}

/// Raw mode + alternate screen, undone on drop.
struct TerminalGuard {
    terminal: Terminal<CrosstermBackend<Stdout>>,
    enhanced: bool,
}

fn restore_terminal(enhanced: bool) {
    let mut out = std::io::stdout();
    if enhanced {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        ratatui::crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
}

impl TerminalGuard {
    fn enter() -> std::io::Result<Self> {
        enable_raw_mode()?;
        let mut out = std::io::stdout();
        execute!(out, EnterAlternateScreen, EnableBracketedPaste, EnableMouseCapture)?;
        // Shift-Enter is only distinguishable with the kitty keyboard protocol.
        let enhanced = matches!(ratatui::crossterm::terminal::supports_keyboard_enhancement(), Ok(true))
            && execute!(
                out,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            )
            .is_ok();
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal(enhanced);
            prev(info);
        }));
        let terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        Ok(TerminalGuard { terminal, enhanced })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal(self.enhanced);
    }
}

/// Run the TUI to the end; returns the exit code.
pub fn run(config: Arc<Config>, secrets: Secrets, opts: TuiOptions) -> i32 {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pai: cannot start the async runtime: {e}");
            return 1;
        }
    };
    let result = rt.block_on(run_async(config, secrets, opts));
    // Leave tasks (streams being cancelled) a moment, without hanging.
    rt.shutdown_timeout(Duration::from_millis(500));
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("pai: {e}");
            1
        }
    }
}

fn load_history(path: Option<&PathBuf>) -> Vec<String> {
    let Some(p) = path else { return Vec::new() };
    std::fs::read_to_string(p)
        .map(|s| {
            s.lines()
                .filter_map(|l| serde_json::from_str::<String>(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

fn save_history(path: Option<&PathBuf>, history: &[String]) {
    let Some(p) = path else { return };
    if let Some(dir) = p.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let start = history.len().saturating_sub(1000);
    let body: String = history[start..]
        .iter()
        .filter_map(|h| serde_json::to_string(h).ok())
        .map(|l| l + "\n")
        .collect();
    let _ = write_atomic(p, body.as_bytes(), false);
}

async fn run_async(config: Arc<Config>, secrets: Secrets, opts: TuiOptions) -> Result<(), String> {
    let channels = Channels::new().with_mcp(opts.mcp.clone());
    let inbox_tx = channels.inbox_tx.clone();
    let mut app = App::new(AppInit {
        config,
        secrets,
        endpoint: opts.endpoint.clone(),
        model: opts.model.clone(),
        system: opts.system.clone(),
        params: opts.params.clone(),
        history: load_history(opts.history_file.as_ref()),
        highlighter: Some(Highlighter::new()),
    });
    if let Some(env) = opts.tool_env.clone() {
        app.set_tool_env(env);
    }
    let records = opts.sessions_dir.as_ref().map(|dir| {
        let tx = inbox_tx.clone();
        let (name, started_at) = app.record_session.clone();
        RecordWriter::spawn(
            dir,
            opts.templates.clone(),
            SessionStart::New { name, started_at },
            move |r| {
                let _ = tx.send(Inbox::App(AppEvent::Recorded(r)));
            },
        )
    });
    let history = opts.history_db.as_ref().filter(|_| opts.record_history).map(|db| {
        let tx = inbox_tx.clone();
        StoreWriter::spawn(db.clone(), move |r| {
            let ev = match r {
                StoreReport::Opened { warning: None, .. } => return,
                StoreReport::Opened { warning: Some(w), .. } => AppEvent::HistoryWarning(w),
                StoreReport::Unavailable(e) => AppEvent::HistoryOff(e.to_string()),
                StoreReport::Failed { what, error } => {
                    AppEvent::Recorded(Err(format!("history: cannot record {what}: {error}")))
                }
            };
            let _ = tx.send(Inbox::App(ev));
        })
    });
    app.history_on = opts.history_db.is_some();
    let recorders = Recorders::new(records, history, opts.history_db.clone(), opts.sessions_dir.clone());
    opts.start.clone().apply(&mut app);
    let mut guard = TerminalGuard::enter().map_err(|e| format!("cannot set up the terminal: {e}"))?;
    let shutdown = Box::pin(async {
        let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
        let hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup());
        match (term, hup) {
            (Ok(mut t), Ok(mut h)) => {
                tokio::select! {
                    _ = t.recv() => {}
                    _ = h.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    });
    let result = event_loop(
        &mut app,
        &mut guard.terminal,
        EventStream::new(),
        channels,
        &recorders,
        LoopOptions {
            exit_when_idle: false,
            shutdown,
        },
    )
    .await;
    drop(guard);
    if let Some(hub) = &opts.mcp {
        let _ = tokio::time::timeout(Duration::from_secs(3), hub.stop_all()).await;
    }
    save_history(opts.history_file.as_ref(), app.input.history());
    // Dropping the writers waits for queued records.
    drop(recorders);
    result
}

/// The runner's own message channel, approvals and MCP servers.
pub struct Channels {
    inbox_tx: UnboundedSender<Inbox>,
    inbox: tokio::sync::mpsc::UnboundedReceiver<Inbox>,
    approvals: PendingApprovals,
    mcp: Option<Arc<McpHub>>,
}

impl Channels {
    pub fn new() -> Self {
        let (inbox_tx, inbox) = unbounded_channel();
        Channels {
            inbox_tx,
            inbox,
            approvals: PendingApprovals::default(),
            mcp: None,
        }
    }

    pub fn with_mcp(mut self, hub: Option<Arc<McpHub>>) -> Self {
        self.mcp = hub;
        self
    }

    /// Answer approvals from outside (tests drive the TUI this way).
    pub fn approvals(&self) -> PendingApprovals {
        self.approvals.clone()
    }
}

impl Default for Channels {
    fn default() -> Self {
        Self::new()
    }
}

/// How the loop ends besides `/quit`.
pub struct LoopOptions {
    /// Leave once no turn is in flight (benchmarks).
    pub exit_when_idle: bool,
    /// Quit gracefully when this completes (signals).
    pub shutdown: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
}

/// The event loop: terminal input, orchestrator events and effect results in
/// one `select!`; everything queued is handled before a frame is drawn, frames
/// come at most every 16 ms and only when something changed; with nothing to
/// do it sleeps (no idle tick).
pub async fn event_loop<B, E>(
    app: &mut App,
    terminal: &mut Terminal<B>,
    mut events: E,
    channels: Channels,
    recorders: &Recorders,
    mut opts: LoopOptions,
) -> Result<(), String>
where
    B: Backend + Write,
    E: futures::Stream<Item = std::io::Result<Event>> + Unpin,
{
    let Channels {
        inbox_tx,
        mut inbox,
        approvals,
        mcp,
    } = channels;
    let (sink, mut source) = event_channel();
    if let Some(hub) = mcp.clone().filter(|h| !h.is_empty()) {
        // Servers start in the background; the UI never waits for them.
        app.set_mcp(
            hub.statuses()
                .into_iter()
                .map(|(n, s)| {
                    (
                        n,
                        if matches!(s, crate::tools::mcp::McpStatus::Stopped) {
                            crate::tools::mcp::McpStatus::Starting
                        } else {
                            s
                        },
                    )
                })
                .collect(),
            Vec::new(),
        );
        let tx = inbox_tx.clone();
        tokio::spawn(async move {
            hub.start_enabled().await;
            let tools = hub.tools().await;
            let _ = tx.send(Inbox::App(AppEvent::Mcp {
                statuses: hub.statuses(),
                tools,
            }));
        });
    }
    let runner = Runner {
        sink: sink.clone(),
        inbox: inbox_tx.clone(),
        approvals,
        mcp,
    };
    let mut dirty = true;
    let mut last_draw = Instant::now() - FRAME;
    loop {
        // Effects first: some are queued before the loop starts (a prompt
        // submitted at start-up), the rest by the events handled below.
        for effect in app.take_effects() {
            run_effect(effect, app, &runner, recorders, terminal);
        }
        if app.should_quit {
            return Ok(());
        }
        let now = Instant::now();
        if dirty && now >= last_draw + FRAME {
            terminal
                .draw(|f| view::draw(app, f))
                .map_err(|e| format!("cannot draw: {e}"))?;
            dirty = false;
            last_draw = now;
        }
        if opts.exit_when_idle && !app.is_busy() {
            return Ok(());
        }
        let frame_at = dirty.then_some(last_draw + FRAME);
        let wake = [app.next_wake(), frame_at].into_iter().flatten().min();
        tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(ev)) => {
                    if matches!(ev, Event::Resize(..)) {
                        let _ = terminal.autoresize();
                    }
                    app.on_terminal(ev);
                }
                Some(Err(e)) => return Err(format!("terminal input failed: {e}")),
                None => return Ok(()),
            },
            Some(ev) = source.recv() => {
                app.on_orchestrator(ev);
                // Drain the burst before drawing: a burst of tokens costs one frame.
                while let Ok(ev) = source.try_recv() {
                    app.on_orchestrator(ev);
                }
            }
            Some(msg) = inbox.recv() => match msg {
                Inbox::App(ev) => app.on_app_event(ev),
                Inbox::TerminalBytes(b) => {
                    let out = terminal.backend_mut();
                    let _ = out.write_all(&b).and_then(|()| Write::flush(out));
                }
            },
            _ = tokio::time::sleep_until(wake.unwrap_or(now)), if wake.is_some() => app.on_tick(),
            () = &mut opts.shutdown => app.quit(),
        }
        dirty = true;
    }
}
