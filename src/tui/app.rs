//! The TUI's state and behaviour, free of I/O: it receives events (keys,
//! orchestrator events, results of effects, clock ticks) and answers with
//! [`Effect`]s that the runner carries out. Snapshot tests drive it directly.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use super::commands::Registry;
use super::highlight::Highlighter;
use super::input::InputEditor;
use super::mode::{Activity, ModeMachine, Transition, UiMode};
use super::smoother::{SmootherConfig, StreamSmoother};
use super::theme::Theme;
use super::transcript::{Answer, AnswerState, EntryKind, NoticeLevel, Transcript};
use crate::config::{Config, Secrets};
use crate::conversation::{Conversation, Message, Params, Turn, TurnMode};
use crate::orchestration::{OrchestratorEvent, TurnContext, TurnOutcome, TurnRef};
use crate::protocols::{ProtocolAdapter, StreamEvent, build_adapter};
use crate::stats::{RequestStats, SessionStats, StatsTracker};

/// How long a one-line message stays in the hint row.
const FLASH_FOR: Duration = Duration::from_secs(6);
/// Two Ctrl-C within this window quit.
const QUIT_WINDOW: Duration = Duration::from_secs(2);

/// Work for the runner (the only part that does I/O).
#[derive(Debug)]
pub enum Effect {
    /// Run one turn with the chat orchestrator.
    StartTurn(Box<TurnContext>, CancellationToken),
    /// Write a finished turn to the session records.
    Record(Box<Turn>),
    /// Start a new session folder (after /clear).
    NewRecordSession,
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
#[derive(Debug)]
pub enum AppEvent {
    Models {
        endpoint: String,
        show: bool,
        result: Result<Vec<String>, String>,
    },
    Recorded(Result<PathBuf, String>),
    Copied(String),
    FileWritten(Result<PathBuf, String>),
}

/// The turn in flight.
struct LiveTurn {
    turn: TurnRef,
    cancel: CancellationToken,
    stats: StatsTracker,
    smoother: Option<StreamSmoother>,
    /// The outcome, held while the smoother drains.
    finished: Option<Box<TurnOutcome>>,
    cancelling: bool,
    user_entry: usize,
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
        }
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
        self.live.is_some()
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

    /// Send a prompt in the current mode.
    pub fn start_prompt(&mut self, prompt: String) -> Result<(), String> {
        if !self.modes.can_submit() {
            return Err(match self.modes.activity() {
                Activity::Paused => "paused — /resume first".into(),
                _ => "an answer is still streaming — wait, or press Esc to cancel it".into(),
            });
        }
        match self.modes.mode() {
            UiMode::Chat => self.start_chat_turn(prompt),
            m @ (UiMode::Agent | UiMode::Arena | UiMode::Compare) => Err(format!(
                "{} mode cannot take prompts in this build — /mode chat",
                m.label()
            )),
        }
    }

    fn start_chat_turn(&mut self, prompt: String) -> Result<(), String> {
        let adapter = self.adapter(&self.endpoint.clone())?;
        self.modes.apply(Transition::TurnStarted).map_err(|r| r.0.to_string())?;
        self.last_prompt = Some(prompt.clone());
        self.conversation.push(Message::user(prompt.clone()));
        let user_entry = self.transcript.push(EntryKind::User {
            text: prompt,
            failed: false,
        });
        let turn = TurnRef {
            turn_id: self.next_turn,
            lane: 0,
        };
        self.next_turn += 1;
        let label = format!("{} · {}", self.model, self.endpoint);
        self.transcript
            .push(EntryKind::Assistant(Box::new(Answer::new(turn, label))));
        self.transcript.scroll_bottom();
        let messages = self.conversation.request_messages();
        let input_estimate = messages
            .iter()
            .map(|m| crate::stats::estimate_tokens(&m.content) + 4)
            .sum();
        let cancel = CancellationToken::new();
        let now = Instant::now();
        self.live = Some(LiveTurn {
            turn,
            cancel: cancel.clone(),
            stats: StatsTracker::start(input_estimate),
            smoother: self
                .smooth
                .then(|| StreamSmoother::new(SmootherConfig::default(), now.into_std())),
            finished: None,
            cancelling: false,
            user_entry,
        });
        let ctx = TurnContext {
            turn,
            endpoint: self.endpoint.clone(),
            model: self.model.clone(),
            participant: None,
            mode: TurnMode::Chat,
            adapter,
            messages,
            params: self.params.clone(),
            tools: Vec::new(),
        };
        self.effects.push(Effect::StartTurn(Box::new(ctx), cancel));
        Ok(())
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
    pub fn cancel(&mut self) -> bool {
        let Some(live) = &mut self.live else { return false };
        if live.cancelling {
            return true;
        }
        live.cancelling = true;
        live.cancel.cancel();
        let turn = live.turn;
        let shown = live
            .smoother
            .as_mut()
            .map(StreamSmoother::flush_all)
            .unwrap_or_default();
        if let Some(a) = self.transcript.answer_mut(turn) {
            a.text.push_str(&shown);
            a.state = AnswerState::Cancelled;
        }
        self.transcript.touch_answer(turn);
        self.flash("cancelled — the partial answer is kept", NoticeLevel::Info);
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
        self.should_quit = true;
        self.effects.push(Effect::Quit);
    }

    /// An event from an orchestrator.
    pub fn on_orchestrator(&mut self, ev: OrchestratorEvent) {
        let now = Instant::now();
        match ev {
            OrchestratorEvent::TurnStarted { .. } => {}
            OrchestratorEvent::Stream { turn, event } => self.on_stream(turn, event, now),
            OrchestratorEvent::TurnFinished { turn, outcome } => {
                let Some(live) = self.live.as_mut().filter(|l| l.turn == turn) else {
                    return;
                };
                let drain = matches!(*outcome, TurnOutcome::Completed(_))
                    && live.smoother.as_ref().is_some_and(|s| s.buffered_chars() > 0);
                live.finished = Some(outcome);
                if drain {
                    if let Some(s) = live.smoother.as_mut() {
                        s.finish(now.into_std());
                    }
                } else {
                    self.finalize();
                }
            }
        }
    }

    fn on_stream(&mut self, turn: TurnRef, event: StreamEvent, now: Instant) {
        let Some(live) = self.live.as_mut().filter(|l| l.turn == turn) else {
            return;
        };
        if live.cancelling {
            return; // what arrives after a cancel is not shown
        }
        let first = !live.stats.has_output() && event.is_output();
        match &event {
            StreamEvent::Text(t) => {
                live.stats.on_output(t);
                match live.smoother.as_mut() {
                    Some(s) => s.push(t, now.into_std()),
                    None => {
                        if let Some(a) = self.transcript.answer_mut(turn) {
                            a.text.push_str(t);
                        }
                    }
                }
            }
            StreamEvent::Reasoning(r) => {
                live.stats.on_output(r);
                if let Some(a) = self.transcript.answer_mut(turn) {
                    a.reasoning.push_str(r);
                }
            }
            StreamEvent::ToolCallStart { .. } => live.stats.on_output(""),
            StreamEvent::ToolCallDelta { arguments, .. } => live.stats.on_output(arguments),
            StreamEvent::ToolCall(tc) => {
                if let Some(a) = self.transcript.answer_mut(turn) {
                    a.tool_calls.push(tc.clone());
                }
            }
            StreamEvent::Usage(u) => live.stats.on_usage(*u),
            StreamEvent::Finished(reason) => live.stats.on_finish(reason),
            StreamEvent::Retrying { attempt, delay, reason } => {
                live.stats.on_retry();
                if let Some(a) = self.transcript.answer_mut(turn) {
                    a.retry_note = Some(format!("{reason} — retry {attempt} in {:.1}s", delay.as_secs_f64()));
                }
            }
        }
        if first {
            let _ = self.modes.apply(Transition::FirstOutput);
            if let Some(a) = self.transcript.answer_mut(turn) {
                a.state = AnswerState::Streaming;
                a.retry_note = None;
            }
        }
        self.transcript.touch_answer(turn);
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
        let flash = self.flash.as_ref().map(|(_, _, t)| *t + FLASH_FOR);
        let quit = self.quit_armed.map(|t| t + QUIT_WINDOW);
        [smoother, flash, quit].into_iter().flatten().min()
    }

    /// Clock tick: release smoothed text, expire messages.
    pub fn on_tick(&mut self) {
        let now = Instant::now();
        if self
            .flash
            .as_ref()
            .is_some_and(|(_, _, t)| now.duration_since(*t) >= FLASH_FOR)
        {
            self.flash = None;
        }
        if self.quit_armed.is_some_and(|t| now.duration_since(t) >= QUIT_WINDOW) {
            self.quit_armed = None;
        }
        let Some(live) = self.live.as_mut() else { return };
        let Some(s) = live.smoother.as_mut() else { return };
        let out = s.take(now.into_std());
        let drained = live.finished.is_some() && s.buffered_chars() == 0;
        let turn = live.turn;
        if !out.is_empty() {
            if let Some(a) = self.transcript.answer_mut(turn) {
                a.text.push_str(&out);
            }
            self.transcript.touch_answer(turn);
        }
        if drained {
            self.finalize();
        }
    }

    /// The turn is over: settle the transcript, the conversation and the records.
    fn finalize(&mut self) {
        let Some(mut live) = self.live.take() else { return };
        let Some(outcome) = live.finished.take() else {
            self.live = Some(live);
            return;
        };
        let (status_failed, cancelled) = match outcome.as_ref() {
            TurnOutcome::Completed(_) => (false, false),
            TurnOutcome::Cancelled(_) => (false, true),
            TurnOutcome::Failed { .. } => (true, false),
        };
        let error = outcome.error().map(ToString::to_string);
        let turn = outcome.into_turn();
        let answered = !turn.response.text.is_empty() || !turn.response.tool_calls.is_empty();
        if let Some(a) = self.transcript.answer_mut(live.turn) {
            a.text = turn.response.text.clone();
            a.reasoning = turn.response.reasoning.clone();
            a.tool_calls = turn.response.tool_calls.clone();
            a.stats = Some(turn.stats.clone());
            a.retry_note = None;
            a.state = match (&error, cancelled) {
                (Some(e), _) => AnswerState::Failed(e.clone()),
                (None, true) => AnswerState::Cancelled,
                (None, false) => AnswerState::Done,
            };
        }
        self.transcript.touch_answer(live.turn);
        if answered {
            self.conversation.push(turn.assistant_message());
        } else {
            // Nothing came back: the prompt leaves the context (the transcript
            // keeps it, and /retry sends it again).
            if self
                .conversation
                .messages
                .last()
                .is_some_and(|m| m.role == crate::conversation::Role::User)
            {
                self.conversation.messages.pop();
            }
            if status_failed {
                self.transcript.set_user_failed(live.user_entry, true);
            }
        }
        // A request that never reached the model (refused, cancelled before
        // any output) spent no tokens.
        if answered || turn.stats.usage_reported {
            self.conversation.session_tokens += turn.stats.input_tokens + turn.stats.output_tokens;
        }
        self.session.record(&turn.stats, status_failed, cancelled);
        self.last_stats = Some(turn.stats.clone());
        let _ = self.modes.apply(Transition::TurnEnded { failed: status_failed });
        // For /export keep only what this turn added (the record gets it all):
        // each request repeats the whole conversation, and keeping every copy
        // would grow memory with the square of the session's length.
        let mut slim = turn.clone();
        let msgs = &slim.request.messages;
        let start = msgs
            .iter()
            .rposition(|m| m.role == crate::conversation::Role::Assistant)
            .map_or(0, |i| i + 1);
        slim.request.messages = msgs[start..].to_vec();
        self.turns.push(slim);
        self.effects.push(Effect::Record(Box::new(turn)));
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
        self.session_dir = None;
        self.effects.push(Effect::NewRecordSession);
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
