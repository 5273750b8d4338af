//! The life of a turn in the TUI: starting a chat turn or an agent run,
//! streamed events, the smoother's ticks, settling each finished request
//! (transcript, conversation, stats, records) and ending the run.

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{App, Effect, LiveTurn, RunKind};
use crate::conversation::{Message, Role, TurnMode};
use crate::orchestration::agent::AgentEnd;
use crate::orchestration::{OrchestratorEvent, TurnContext, TurnOutcome, TurnRef};
use crate::protocols::StreamEvent;
use crate::stats::{StatsTracker, estimate_tokens};
use crate::tui::mode::{Activity, Transition, UiMode};
use crate::tui::smoother::{SmootherConfig, StreamSmoother};
use crate::tui::transcript::{Answer, AnswerState, EntryKind, NoticeLevel};

impl App {
    /// Send a prompt in the current mode.
    pub fn start_prompt(&mut self, prompt: String) -> Result<(), String> {
        if !self.modes.can_submit() {
            return Err(match self.modes.activity() {
                Activity::Paused => "paused — /resume first".into(),
                _ => "an answer is still streaming — wait, or press Esc to cancel it".into(),
            });
        }
        match self.modes.mode() {
            UiMode::Chat => self.begin_turn(prompt, false),
            UiMode::Agent => self.begin_turn(prompt, true),
            UiMode::Arena => self.start_arena(prompt),
            UiMode::Compare => self.start_compare(prompt),
        }
    }

    pub(super) fn new_live(
        &mut self,
        turn: TurnRef,
        cancel: CancellationToken,
        input_estimate: u64,
        user_entry: usize,
        kind: RunKind,
    ) {
        let now = Instant::now();
        self.live = Some(LiveTurn {
            turn,
            cancel,
            stats: StatsTracker::start(input_estimate),
            smoother: self
                .smooth
                .then(|| StreamSmoother::new(SmootherConfig::default(), now.into_std())),
            finished: None,
            cancelling: false,
            user_entry,
            kind,
            agent_end: None,
            arena_done: false,
        });
    }

    fn answer_label(&self) -> String {
        format!("{} · {}", self.model, self.endpoint)
    }

    /// Start a chat turn, or (with `agent`) an agent run, for `prompt`.
    fn begin_turn(&mut self, prompt: String, agent: bool) -> Result<(), String> {
        let adapter = self.adapter(&self.endpoint.clone())?;
        let plan = if agent { Some(self.agent_plan(&prompt)?) } else { None };
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
        let label = self.answer_label();
        self.transcript
            .push(EntryKind::Assistant(Box::new(Answer::new(turn, label))));
        self.transcript.scroll_bottom();
        let messages = self.conversation.request_messages();
        let input_estimate = messages.iter().map(|m| estimate_tokens(&m.content) + 4).sum();
        let cancel = CancellationToken::new();
        let kind = if agent { RunKind::Agent } else { RunKind::Chat };
        self.new_live(turn, cancel.clone(), input_estimate, user_entry, kind);
        let ctx = TurnContext {
            turn,
            endpoint: self.endpoint.clone(),
            model: self.model.clone(),
            participant: None,
            mode: if agent { TurnMode::Agent } else { TurnMode::Chat },
            adapter,
            messages,
            params: self.params.clone(),
            tools: Vec::new(),
        };
        self.effects.push(match plan {
            Some(plan) => Effect::StartAgent(Box::new(ctx), cancel, Box::new(plan)),
            None => Effect::StartTurn(Box::new(ctx), cancel),
        });
        Ok(())
    }

    /// An event from an orchestrator.
    pub fn on_orchestrator(&mut self, ev: OrchestratorEvent) {
        let now = Instant::now();
        if ev.turn().is_some_and(|t| self.is_compare_turn(t)) {
            self.on_compare_event(ev, now);
            return;
        }
        match ev {
            OrchestratorEvent::TurnStarted {
                turn,
                endpoint,
                model,
                participant,
            } => self.on_step_started(turn, &endpoint, &model, participant.as_deref()),
            OrchestratorEvent::Stream { turn, event } => self.on_stream(turn, event, now),
            OrchestratorEvent::ApprovalNeeded { turn, request } => self.on_approval_needed(turn, request),
            OrchestratorEvent::ToolStarted {
                turn,
                call_id,
                tool,
                arguments,
                approval,
            } => {
                self.on_tool_started(turn, call_id, tool, arguments, approval);
            }
            OrchestratorEvent::ToolOutput { turn, call_id, chunk } => self.on_tool_output(turn, &call_id, &chunk),
            OrchestratorEvent::ToolFinished { turn, run } => self.on_tool_finished(turn, *run),
            OrchestratorEvent::Arena(e) => self.on_arena(e),
            OrchestratorEvent::Checkpoint { partial, .. } => self.effects.push(Effect::Checkpoint(partial)),
            OrchestratorEvent::AgentFinished { turn, end } => {
                let Some(live) = self
                    .live
                    .as_mut()
                    .filter(|l| l.kind == RunKind::Agent && l.turn.turn_id <= turn.turn_id)
                else {
                    return;
                };
                if live.finished.is_some() {
                    live.agent_end = Some(end); // ends once the last step has drained
                } else {
                    self.end_run(Some(end));
                }
            }
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

    /// A run's next request: an agent's next step (a new answer block after
    /// the tool blocks), an arena's next speaker, the judge.
    fn on_step_started(&mut self, turn: TurnRef, endpoint: &str, model: &str, participant: Option<&str>) {
        // The previous request may still be draining through the smoother: settle it first.
        if let Some(live) = self
            .live
            .as_mut()
            .filter(|l| l.kind != RunKind::Chat && l.turn != turn && l.finished.is_some())
        {
            let rest = live
                .smoother
                .as_mut()
                .map(StreamSmoother::flush_all)
                .unwrap_or_default();
            let prev = live.turn;
            if let Some(a) = self.transcript.answer_mut(prev) {
                a.text.push_str(&rest);
            }
            self.finalize();
        }
        let arena = self.live.as_ref().is_some_and(|l| l.kind == RunKind::Arena);
        let (label, seat) = match (arena, participant) {
            (true, Some(p)) => (
                format!("{p} · {model} · {endpoint}"),
                self.arena.as_ref().filter(|a| !a.judging).map(|_| turn.lane),
            ),
            _ => (self.answer_label(), None),
        };
        let Some(live) = self.live.as_mut().filter(|l| l.kind != RunKind::Chat && l.turn != turn) else {
            return;
        };
        if arena {
            // Each arena turn can be stopped on its own (then the judge's).
            live.cancelling = false;
            if self.modes.apply(Transition::StepStarted).is_err() {
                let _ = self.modes.apply(Transition::TurnStarted);
            }
        } else if live.cancelling {
            return;
        }
        live.turn = turn;
        live.stats = StatsTracker::start(0);
        live.finished = None;
        if let Some(s) = live.smoother.as_mut() {
            let _ = s.flush_all();
        }
        self.next_turn = self.next_turn.max(turn.turn_id + 1);
        if seat.is_some() {
            self.arena_turn_started();
        }
        let mut answer = Answer::new(turn, label);
        answer.seat = seat;
        self.transcript.push(EntryKind::Assistant(Box::new(answer)));
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
                // An agent run shows calls as tool blocks; chat mode lists them on the answer.
                if live.kind == RunKind::Chat
                    && let Some(a) = self.transcript.answer_mut(turn)
                {
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
            StreamEvent::Notice(n) => {
                if let Some(a) = self.transcript.answer_mut(turn) {
                    a.retry_note = Some(n.clone());
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

    /// Clock tick: release smoothed text, expire messages.
    pub fn on_tick(&mut self) {
        let now = Instant::now();
        if self
            .flash
            .as_ref()
            .is_some_and(|(_, _, t)| now.duration_since(*t) >= super::FLASH_FOR)
        {
            self.flash = None;
        }
        if self
            .quit_armed
            .is_some_and(|t| now.duration_since(t) >= super::QUIT_WINDOW)
        {
            self.quit_armed = None;
        }
        self.compare_tick(now);
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

    /// A request is over: settle its answer, the conversation, stats and the
    /// record. A chat turn ends here; an agent run ends with `AgentFinished`,
    /// an arena run with its `Finished`.
    pub(super) fn finalize(&mut self) {
        let Some(live) = self.live.as_mut() else { return };
        let Some(outcome) = live.finished.take() else { return };
        let (turn_ref, user_entry, kind) = (live.turn, live.user_entry, live.kind);
        let (failed, cancelled) = match outcome.as_ref() {
            TurnOutcome::Completed(_) => (false, false),
            TurnOutcome::Cancelled(_) => (false, true),
            TurnOutcome::Failed { .. } => (true, false),
        };
        let error = outcome.error().map(ToString::to_string);
        let turn = outcome.into_turn();
        let answered = !turn.response.text.is_empty() || !turn.response.tool_calls.is_empty();
        if let Some(a) = self.transcript.answer_mut(turn_ref) {
            a.text = turn.response.text.clone();
            a.reasoning = turn.response.reasoning.clone();
            if kind == RunKind::Chat {
                a.tool_calls = turn.response.tool_calls.clone();
            }
            a.stats = Some(turn.stats.clone());
            a.retry_note = None;
            a.state = match (&error, cancelled) {
                (Some(e), _) => AnswerState::Failed(e.clone()),
                (None, true) => AnswerState::Cancelled,
                (None, false) => AnswerState::Done,
            };
        }
        self.transcript.touch_answer(turn_ref);
        let first_step = self.conversation.messages.last().is_some_and(|m| m.role == Role::User);
        if kind == RunKind::Arena {
            // Arena turns live in the arena's exchange, not the chat conversation.
            self.arena_turn_settled(&turn);
        } else if answered {
            self.conversation.push(turn.assistant_message());
            // The agent's tool results follow their call, as the model saw them.
            for r in &turn.tool_runs {
                self.conversation
                    .push(Message::tool_result(r.call_id.clone(), r.result.clone()));
            }
        } else if first_step {
            // Nothing came back: the prompt leaves the context (the transcript
            // keeps it, and /retry sends it again).
            self.conversation.messages.pop();
            if failed {
                self.transcript.set_user_failed(user_entry, true);
            }
        }
        // A request that never reached the model (refused, cancelled before
        // any output) spent no tokens.
        if answered || turn.stats.usage_reported {
            self.conversation.session_tokens += turn.stats.input_tokens + turn.stats.output_tokens;
        }
        self.session.record(&turn.stats, failed, cancelled);
        self.last_stats = Some(turn.stats.clone());
        // For /export keep only what this turn added (the record gets it all):
        // each request repeats the whole conversation, and keeping every copy
        // would grow memory with the square of the session's length.
        let mut slim = turn.clone();
        let msgs = &slim.request.messages;
        let start = msgs
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .map_or(0, |i| i + 1);
        slim.request.messages = msgs[start..].to_vec();
        self.turns.push(slim);
        self.effects.push(Effect::Record(Box::new(turn)));
        let end = self.live.as_mut().and_then(|l| l.agent_end.take());
        let arena_done = self.live.as_ref().is_some_and(|l| l.arena_done);
        match kind {
            RunKind::Chat => self.end_run(if failed {
                Some(AgentEnd::Failed(error.unwrap_or_default()))
            } else {
                None
            }),
            // The agent stops after a failed or cancelled request; AgentFinished ends it.
            RunKind::Agent => {
                if let Some(end) = end {
                    self.end_run(Some(end));
                }
            }
            RunKind::Arena => {
                if arena_done {
                    self.end_arena_run();
                }
            }
        }
    }

    /// The turn or agent run is over.
    pub(super) fn end_run(&mut self, end: Option<AgentEnd>) {
        let Some(live) = self.live.take() else { return };
        if let Some(s) = live.smoother {
            drop(s);
        }
        let failed = matches!(end, Some(AgentEnd::Failed(_)));
        if let Some(AgentEnd::MaxSteps(n)) = end {
            self.notice(format!("the agent stopped after {n} requests (max_steps); ask it to continue, or raise max_steps in [defaults]"), NoticeLevel::Warning);
        }
        let _ = self.modes.apply(Transition::TurnEnded { failed });
    }
}
