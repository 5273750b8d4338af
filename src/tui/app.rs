//! The TUI's state and behaviour, free of I/O: it receives events (keys,
//! orchestrator events, results of effects, clock ticks) and answers with
//! [`Effect`]s that the runner carries out. Snapshot tests drive it directly.
//! `turns` holds the life of a turn or agent run, `tools` the tool side.

mod arena;
mod compare;
mod history;
mod tools;
mod turns;

pub use crate::tools::ToolEnv;
pub use arena::{ArenaState, JudgeJob};
pub use compare::{CompareState, Pick};
pub use history::{HistoryReply, HistoryRequest, answer as answer_history};
pub use tools::{AgentPlan, McpAction};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use std::sync::Mutex;

use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use super::approval::ApprovalUi;
use super::commands::Registry;
use super::highlight::Highlighter;
use super::input::InputEditor;
use super::mode::{ModeMachine, Transition, UiMode};
use super::smoother::StreamSmoother;
use super::theme::Theme;
use super::transcript::{AnswerState, EntryKind, NoticeLevel, Transcript};
use crate::config::{Config, Secrets};
use crate::conversation::{Conversation, Params, Turn};
use crate::orchestration::agent::AgentEnd;
use crate::orchestration::{TurnContext, TurnOutcome, TurnRef};
use crate::protocols::{ProtocolAdapter, build_adapter};
use crate::records::writer::SessionStart;
use crate::stats::{RequestStats, SessionStats, StatsTracker};
use crate::tools::approval::SessionApprovals;
use crate::tools::mcp::McpStatus;
use crate::tools::{Decision, ServerTools, ToolRegistry};

/// How long a one-line message stays in the hint row.
const FLASH_FOR: Duration = Duration::from_secs(6);
/// Two Ctrl-C within this window quit.
const QUIT_WINDOW: Duration = Duration::from_secs(2);

/// Work for the runner (the only part that does I/O).
#[derive(Debug)]
pub enum Effect {
    /// Run one turn with the chat orchestrator.
    StartTurn(Box<TurnContext>, CancellationToken),
    /// Run an agent turn (tools in a loop).
    StartAgent(Box<TurnContext>, CancellationToken, Box<AgentPlan>),
    /// Run an arena (its turns, then its judge).
    StartArena(
        Box<crate::orchestration::arena::ArenaSetup>,
        crate::orchestration::arena::ArenaControl,
    ),
    /// Ask a judge about an arena that is over (`/judge`).
    StartJudge(Box<JudgeJob>, CancellationToken),
    /// Send one prompt to several models at once.
    StartCompare(Vec<TurnContext>, CancellationToken),
    /// The user's decision on a tool call.
    Approve {
        id: u64,
        decision: Decision,
    },
    /// Start, stop or restart an MCP server.
    Mcp(McpAction),
    /// Write a finished turn to the session records and the history.
    Record(Box<Turn>),
    /// Save a streaming turn as it stands (crash safety); `Record` replaces it.
    Checkpoint(Box<Turn>),
    /// The following turns belong to this session (after /clear, on resume).
    StartSession(SessionStart),
    /// Store a vote (a compare pick, a judge's verdict) in the history.
    Vote(Box<crate::store::Vote>),
    /// Ask the history database; the answer comes back as `AppEvent::History`.
    History(HistoryRequest),
    /// Put text on the clipboard.
    Copy(String),
    /// Fetch an endpoint's model list; the answer comes back as `AppEvent::Models`.
    ListModels {
        endpoint: String,
        show: bool,
    },
    /// Write a file (exports).
    WriteFile {
        path: PathBuf,
        contents: Vec<u8>,
    },
    SetMouseCapture(bool),
    /// Repaint everything (Ctrl-L).
    Redraw,
    Quit,
}

/// Results of effects, coming back to the app.
pub enum AppEvent {
    Models {
        endpoint: String,
        show: bool,
        result: Result<Vec<String>, String>,
    },
    Recorded(Result<PathBuf, String>),
    Copied(String),
    FileWritten(Result<PathBuf, String>),
    /// MCP servers changed.
    Mcp {
        statuses: Vec<(String, McpStatus)>,
        tools: ServerTools,
    },
    /// The history database answered.
    History(HistoryReply),
    /// The history database cannot be used this run (why).
    HistoryOff(String),
    /// The history database opened with something to tell.
    HistoryWarning(String),
}

impl std::fmt::Debug for AppEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppEvent::Models { endpoint, result, .. } => {
                write!(f, "Models({endpoint}, {:?})", result.as_ref().map(Vec::len))
            }
            AppEvent::Recorded(r) => write!(f, "Recorded({r:?})"),
            AppEvent::Copied(s) => write!(f, "Copied({s})"),
            AppEvent::FileWritten(r) => write!(f, "FileWritten({r:?})"),
            AppEvent::Mcp { statuses, .. } => write!(f, "Mcp({statuses:?})"),
            AppEvent::History(r) => write!(f, "History({r:?})"),
            AppEvent::HistoryOff(e) => write!(f, "HistoryOff({e})"),
            AppEvent::HistoryWarning(e) => write!(f, "HistoryWarning({e})"),
        }
    }
}

/// The turn (or agent run) in flight.
struct LiveTurn {
    /// The request streaming now (an agent run moves through several).
    turn: TurnRef,
    cancel: CancellationToken,
    stats: StatsTracker,
    smoother: Option<StreamSmoother>,
    /// The outcome, held while the smoother drains.
    finished: Option<Box<TurnOutcome>>,
    cancelling: bool,
    user_entry: usize,
    kind: RunKind,
    /// `AgentFinished` arrived while the last step was still draining.
    agent_end: Option<AgentEnd>,
    /// The arena run reported `Finished` while the last step was still draining.
    arena_done: bool,
}

/// What kind of run the live turn belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunKind {
    /// One request.
    Chat,
    /// Requests and tool calls until the model answers.
    Agent,
    /// Participants in turn, then the judge.
    Arena,
}

pub struct App {
    pub config: Arc<Config>,
    secrets: Secrets,
    adapters: HashMap<String, Arc<dyn ProtocolAdapter>>,
    pub modes: ModeMachine,
    pub conversation: Conversation,
    pub endpoint: String,
    pub model: String,
    pub params: Params,
    pub smooth: bool,
    pub show_reasoning: bool,
    pub mouse_capture: bool,
    pub transcript: Transcript,
    pub input: InputEditor,
    pub theme: Theme,
    pub highlighter: Option<Highlighter>,
    pub session: SessionStats,
    /// Turns of this session, for /export.
    pub turns: Vec<Turn>,
    live: Option<LiveTurn>,
    pub last_stats: Option<RequestStats>,
    next_turn: u32,
    quit_armed: Option<Instant>,
    pub flash: Option<(String, NoticeLevel, Instant)>,
    effects: Vec<Effect>,
    /// Model lists per endpoint (for /model completion and the picker).
    pub models: HashMap<String, Vec<String>>,
    /// The prompt of the last turn (for /retry).
    last_prompt: Option<String>,
    pub session_dir: Option<PathBuf>,
    pub commands: Arc<Registry>,
    pub overlay_state: super::overlay::OverlayState,
    pub should_quit: bool,
    /// Tools: environment, the registry agent runs get, MCP state, approvals.
    tool_env: Option<ToolEnv>,
    pub registry: Arc<ToolRegistry>,
    mcp_tools: ServerTools,
    pub mcp_status: Vec<(String, McpStatus)>,
    approvals: Arc<Mutex<SessionApprovals>>,
    /// The tool call waiting for the user's decision.
    pub approval: Option<ApprovalUi>,
    /// Arena mode: the arena, its exchange so far, its run.
    pub arena: Option<ArenaState>,
    /// Compare mode: the models, the answers streaming, the pick.
    pub compare: Option<CompareState>,
    /// The session being recorded: its name (folder and history id) and start.
    pub record_session: (String, String),
    /// The history database can be asked (`/history`, `/search`, `/resume`).
    pub history_on: bool,
}

/// What the app starts with.
pub struct AppInit {
    pub config: Arc<Config>,
    pub secrets: Secrets,
    pub endpoint: String,
    pub model: String,
    pub system: Option<String>,
    pub params: Params,
    pub history: Vec<String>,
    pub highlighter: Option<Highlighter>,
}

impl App {
    pub fn new(init: AppInit) -> Self {
        let theme = Theme::default();
        let smooth = init.config.defaults.smooth;
        App {
            input: InputEditor::new(&theme, init.history),
            config: init.config,
            secrets: init.secrets,
            adapters: HashMap::new(),
            modes: ModeMachine::new(UiMode::Chat),
            conversation: Conversation::new(init.system),
            endpoint: init.endpoint,
            model: init.model,
            params: init.params,
            smooth,
            show_reasoning: false,
            mouse_capture: true,
            transcript: Transcript::default(),
            theme,
            highlighter: init.highlighter,
            session: SessionStats::default(),
            turns: Vec::new(),
            live: None,
            last_stats: None,
            next_turn: 1,
            quit_armed: None,
            flash: None,
            effects: Vec::new(),
            models: HashMap::new(),
            last_prompt: None,
            session_dir: None,
            commands: Arc::new(Registry::builtin()),
            overlay_state: Default::default(),
            should_quit: false,
            tool_env: None,
            registry: Arc::new(ToolRegistry::new()),
            mcp_tools: Vec::new(),
            mcp_status: Vec::new(),
            approvals: Arc::new(Mutex::new(SessionApprovals::default())),
            approval: None,
            arena: None,
            compare: None,
            record_session: crate::records::new_session_name(),
            history_on: false,
        }
    }

    /// The session id the records and the history use now.
    pub fn session_name(&self) -> &str {
        &self.record_session.0
    }

    /// Record the following turns as session `name` (resumed: in `start`'s folder).
    fn continue_session(&mut self, name: &str, start: Option<SessionStart>) {
        let started_at = crate::util::time::Utc::now().rfc3339();
        self.record_session = (name.to_string(), started_at.clone());
        self.session_dir = match &start {
            Some(SessionStart::Reopen(dir)) => Some(dir.clone()),
            _ => None,
        };
        self.effects
            .push(Effect::StartSession(start.unwrap_or(SessionStart::New {
                name: name.to_string(),
                started_at,
            })));
    }

    /// Effects queued since the last call.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    pub fn push_effect(&mut self, e: Effect) {
        self.effects.push(e);
    }

    /// A one-line message under the transcript.
    pub fn flash(&mut self, text: impl Into<String>, level: NoticeLevel) {
        self.flash = Some((text.into(), level, Instant::now()));
    }

    /// A block of text in the transcript (command output).
    pub fn notice(&mut self, text: impl Into<String>, level: NoticeLevel) {
        self.transcript.push(EntryKind::Notice {
            text: text.into(),
            level,
        });
        self.transcript.scroll_bottom();
    }

    pub fn is_busy(&self) -> bool {
        self.live.is_some() || self.compare.as_ref().is_some_and(CompareState::is_running)
    }

    /// The adapter for an endpoint (built once, then reused).
    pub fn adapter(&mut self, endpoint: &str) -> Result<Arc<dyn ProtocolAdapter>, String> {
        if let Some(a) = self.adapters.get(endpoint) {
            return Ok(a.clone());
        }
        let cfg = self.config.require_endpoint(endpoint)?;
        let a = build_adapter(cfg, &self.secrets).map_err(|e| e.to_string())?;
        self.adapters.insert(endpoint.to_string(), a.clone());
        Ok(a)
    }

    /// Use `adapter` for `endpoint` (tests and benchmarks script the model this way).
    pub fn set_adapter(&mut self, endpoint: &str, adapter: Arc<dyn ProtocolAdapter>) {
        self.adapters.insert(endpoint.to_string(), adapter);
    }

    /// Switch endpoint (and its default model unless one is given).
    pub fn set_endpoint(&mut self, name: &str, model: Option<String>) -> Result<(), String> {
        let ep = self.config.require_endpoint(name)?.clone();
        self.endpoint = ep.name.clone();
        self.model = model.unwrap_or_else(|| self.config.default_model_for(&ep));
        Ok(())
    }

    /// Live figures of the request in flight: (tok/s, ttft ms, output tokens).
    pub fn live_figures(&self) -> Option<(Option<f64>, Option<u64>, u64)> {
        self.live.as_ref().map(|l| {
            (
                l.stats.live_tokens_per_sec(),
                l.stats.ttft_ms(),
                l.stats.output_tokens(),
            )
        })
    }

    /// What the toolbar says the prompt goes to: the endpoint and model, the
    /// arena and its progress, or the models compared.
    pub fn toolbar_target(&self) -> String {
        match (self.modes.mode(), &self.arena, &self.compare) {
            (UiMode::Arena, Some(a), _) => a.status(self.modes.activity()),
            (UiMode::Compare, _, Some(c)) => c.status(),
            _ => format!("{} · {}", self.endpoint, self.model),
        }
    }

    /// Submit what the user typed: a slash command or a prompt.
    pub fn submit(&mut self, text: String) {
        // Test hook (debug builds only, and only with PAI_TEST_HOOKS=1): a panic
        // inside the event loop, to prove the terminal is restored on panics.
        #[cfg(debug_assertions)]
        if text == "/__panic" && std::env::var_os("PAI_TEST_HOOKS").is_some() {
            panic!("test panic requested with /__panic");
        }
        let _ = self.modes.apply(Transition::Acknowledge);
        if text.trim_start().starts_with('/') {
            let commands = self.commands.clone();
            commands.dispatch(self, text.trim());
            return;
        }
        if let Err(e) = self.start_prompt(text.clone()) {
            self.flash(e, NoticeLevel::Warning);
            // Never lose a prompt: put it back.
            if self.input.is_empty() {
                self.input.set_text(&text);
            }
        }
    }

    /// Re-send the last prompt (after an error, or to another model).
    pub fn retry(&mut self) -> Result<(), String> {
        if self.is_busy() {
            return Err("an answer is still streaming — Esc cancels it".into());
        }
        let prompt = self.last_prompt.clone().ok_or("nothing to retry yet")?;
        // Drop the last exchange from the context; the transcript keeps it.
        if self
            .conversation
            .messages
            .last()
            .is_some_and(|m| m.role == crate::conversation::Role::Assistant)
        {
            self.conversation.messages.pop();
        }
        if self
            .conversation
            .messages
            .last()
            .is_some_and(|m| m.role == crate::conversation::Role::User && m.content == prompt)
        {
            self.conversation.messages.pop();
        }
        self.start_prompt(prompt)
    }

    /// Cancel the turn in flight (Esc / Ctrl-C). Effective immediately on screen.
    /// In an arena this is `/stop`: the exchange ends, the judge still rules
    /// (a second press stops the judge).
    pub fn cancel(&mut self) -> bool {
        if self.cancel_compare() {
            return true;
        }
        let Some(live) = &mut self.live else { return false };
        if live.cancelling {
            return true;
        }
        live.cancelling = true;
        live.cancel.cancel();
        let kind = live.kind;
        if live.kind == RunKind::Arena
            && let Some(c) = self.arena.as_ref().and_then(|a| a.control.as_ref())
        {
            c.stop();
        }
        let turn = live.turn;
        self.approval = None;
        let shown = live
            .smoother
            .as_mut()
            .map(StreamSmoother::flush_all)
            .unwrap_or_default();
        if let Some(a) = self.transcript.answer_mut(turn) {
            a.text.push_str(&shown);
            // Between an arena's turns the last answer is already complete.
            if matches!(a.state, AnswerState::Waiting | AnswerState::Streaming) {
                a.state = AnswerState::Cancelled;
            }
        }
        self.transcript.touch_answer(turn);
        let judging = self.arena.as_ref().is_some_and(|a| a.judging);
        self.flash(
            match (kind, judging) {
                (RunKind::Arena, false) => "arena stopped — the judge still rules (Esc again stops it)",
                (RunKind::Arena, true) => "judge stopped",
                _ => "cancelled — the partial answer is kept",
            },
            NoticeLevel::Info,
        );
        true
    }

    /// Ctrl-C: cancel if busy; otherwise clear the input and arm quitting.
    pub fn interrupt(&mut self) {
        if self.cancel() {
            return;
        }
        let now = Instant::now();
        if self.quit_armed.is_some_and(|t| now.duration_since(t) < QUIT_WINDOW) {
            self.quit();
            return;
        }
        if !self.input.is_empty() {
            self.input.clear();
        }
        self.quit_armed = Some(now);
        self.flash("press Ctrl-C again to quit (or Ctrl-D, /quit)", NoticeLevel::Info);
    }

    pub fn quit(&mut self) {
        if let Some(l) = &self.live {
            l.cancel.cancel();
        }
        if let Some(c) = self.arena.as_ref().and_then(|a| a.control.as_ref()) {
            c.abort();
        }
        self.cancel_compare();
        self.should_quit = true;
        self.effects.push(Effect::Quit);
    }

    /// When the app next needs a tick (smoother output, flash expiry).
    pub fn next_wake(&self) -> Option<Instant> {
        let now = Instant::now();
        let smoother = self
            .live
            .as_ref()
            .and_then(|l| l.smoother.as_ref())
            .and_then(|s| s.next_wake(now.into_std()))
            .map(Instant::from_std);
        let compare = self.compare.as_ref().and_then(|c| c.next_wake(now));
        let flash = self.flash.as_ref().map(|(_, _, t)| *t + FLASH_FOR);
        let quit = self.quit_armed.map(|t| t + QUIT_WINDOW);
        [smoother, compare, flash, quit].into_iter().flatten().min()
    }

    /// Results of effects.
    pub fn on_app_event(&mut self, ev: AppEvent) {
        match ev {
            AppEvent::Models { endpoint, show, result } => match result {
                Ok(list) => {
                    if show {
                        let body = if list.is_empty() {
                            "(none)".to_string()
                        } else {
                            list.join("\n")
                        };
                        self.notice(format!("models on {endpoint}:\n{body}"), NoticeLevel::Info);
                    }
                    self.models.insert(endpoint.clone(), list);
                    self.overlay_state
                        .models_arrived(&endpoint, self.models.get(&endpoint).cloned().unwrap_or_default());
                }
                Err(e) => self.flash(format!("cannot list models on {endpoint}: {e}"), NoticeLevel::Error),
            },
            AppEvent::Recorded(Ok(path)) => {
                if self.session_dir.is_none() {
                    self.session_dir = path.parent().map(std::path::Path::to_path_buf);
                }
            }
            AppEvent::Recorded(Err(e)) => self.flash(e, NoticeLevel::Error),
            AppEvent::Copied(summary) => self.flash(summary, NoticeLevel::Info),
            AppEvent::FileWritten(Ok(p)) => self.flash(format!("wrote {}", p.display()), NoticeLevel::Info),
            AppEvent::FileWritten(Err(e)) => self.flash(e, NoticeLevel::Error),
            AppEvent::Mcp { statuses, tools } => self.set_mcp(statuses, tools),
            AppEvent::History(r) => self.on_history(r),
            AppEvent::HistoryOff(e) => {
                self.history_on = false;
                self.flash(format!("history is off: {e}"), NoticeLevel::Warning);
            }
            AppEvent::HistoryWarning(w) => self.flash(format!("history: {w}"), NoticeLevel::Warning),
        }
    }

    /// Start a fresh conversation (keeps endpoint, model, system prompt).
    pub fn clear_conversation(&mut self) -> Result<(), String> {
        if self.is_busy() {
            return Err("an answer is still streaming — Esc cancels it first".into());
        }
        self.conversation.clear();
        self.transcript.clear();
        self.turns.clear();
        self.last_prompt = None;
        if self.arena.take().is_some() | self.compare.take().is_some() {
            let _ = self.modes.apply(Transition::SwitchMode(UiMode::Chat));
        }
        let (name, started_at) = crate::records::new_session_name();
        self.record_session = (name.clone(), started_at.clone());
        self.session_dir = None;
        self.effects
            .push(Effect::StartSession(SessionStart::New { name, started_at }));
        Ok(())
    }

    pub fn transcript_viewport(&self) -> usize {
        self.transcript.viewport().max(2)
    }

    /// Text of the last answer.
    pub fn last_answer(&self) -> Option<String> {
        self.conversation.last_answer().map(|m| m.content.clone())
    }
}
