//! Compare mode in the TUI: `/compare A B` sends each prompt to every model at
//! once; the answers stream side by side, each with its own TTFT and tokens/s.
//! When they are in, the user picks one (or tie / both bad): the pick is
//! stored as votes, marked on the answers and in their records, and the chosen
//! answer continues the conversation.

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{App, Effect};
use crate::conversation::{Message, Params, PickMark, Turn, TurnMode};
use crate::orchestration::{OrchestratorEvent, TurnContext, TurnOutcome, TurnRef};
use crate::protocols::StreamEvent;
use crate::stats::{StatsTracker, estimate_tokens};
use crate::tui::mode::{Overlay, Transition, UiMode};
use crate::tui::smoother::{SmootherConfig, StreamSmoother};
use crate::tui::transcript::{Answer, AnswerState, CompareEntry, EntryKind, NoticeLevel};

/// The user's choice between compare answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The answer at this position (0 = left).
    Answer(usize),
    Tie,
    BothBad,
}

/// One answer streaming.
struct Lane {
    turn: TurnRef,
    stats: StatsTracker,
    smoother: Option<StreamSmoother>,
    finished: Option<Box<TurnOutcome>>,
    settled: Option<Turn>,
}

/// Answers in flight for one prompt.
struct CompareRun {
    prompt: String,
    cancel: CancellationToken,
    lanes: Vec<Lane>,
    user_entry: usize,
    cancelling: bool,
}

/// Answers in, waiting for the user's pick.
pub struct PendingPick {
    pub prompt: String,
    pub turns: Vec<Turn>,
}

/// Compare mode: the models and what is in flight.
pub struct CompareState {
    /// (endpoint, model) per pane, left to right.
    pub targets: Vec<(String, String)>,
    run: Option<CompareRun>,
    pub pending: Option<PendingPick>,
}

impl CompareState {
    pub fn is_running(&self) -> bool {
        self.run.is_some()
    }

    pub fn next_wake(&self, now: Instant) -> Option<Instant> {
        self.run.as_ref().and_then(|r| {
            r.lanes
                .iter()
                .filter_map(|l| l.smoother.as_ref()?.next_wake(now.into_std()))
                .min()
                .map(Instant::from_std)
        })
    }

    /// For the toolbar: `local · smollm2 vs claude · haiku`.
    pub fn status(&self) -> String {
        self.targets
            .iter()
            .map(|(e, m)| format!("{m} · {e}"))
            .collect::<Vec<_>>()
            .join(" vs ")
    }
}

fn figures(s: &StatsTracker) -> String {
    let mut f = Vec::new();
    if let Some(ms) = s.ttft_ms() {
        f.push(format!("TTFT {:.1}s", ms as f64 / 1000.0));
    }
    if let Some(r) = s.live_tokens_per_sec() {
        f.push(format!("{r:.0} tok/s"));
    }
    f.push(format!("{} tok", s.output_tokens()));
    f.join(" · ")
}

impl App {
    /// `/compare A B [C…]` (each `ENDPOINT` or `ENDPOINT/MODEL`): compare mode.
    pub fn open_compare(&mut self, specs: &[&str]) -> Result<(), String> {
        if specs.len() < 2 {
            return Err("name two or more endpoints, e.g. /compare local openai".into());
        }
        if self.is_busy() {
            return Err("an answer is still streaming — Esc cancels it first".into());
        }
        let mut targets = Vec::new();
        for spec in specs {
            let (ep, model) = spec
                .split_once('/')
                .map_or((*spec, None), |(e, m)| (e, Some(m.to_string())));
            let cfg = self.config.require_endpoint(ep)?.clone();
            self.adapter(&cfg.name)?;
            let model = model.unwrap_or_else(|| self.config.default_model_for(&cfg));
            targets.push((cfg.name, model));
        }
        self.modes
            .apply(Transition::SwitchMode(UiMode::Compare))
            .map_err(|r| r.0.to_string())?;
        let state = CompareState {
            targets,
            run: None,
            pending: None,
        };
        self.flash(
            format!(
                "compare mode: {} — each prompt goes to all; pick the better answer when they are in (/compare off ends it)",
                state.status()
            ),
            NoticeLevel::Info,
        );
        self.compare = Some(state);
        Ok(())
    }

    /// `/compare off`: back to chat.
    pub fn close_compare(&mut self) -> Result<(), String> {
        if self.compare.as_ref().is_some_and(CompareState::is_running) {
            return Err("answers are still streaming — Esc cancels them first".into());
        }
        self.modes
            .apply(Transition::SwitchMode(UiMode::Chat))
            .map_err(|r| r.0.to_string())?;
        self.compare = None;
        self.flash("compare mode off: plain chat", NoticeLevel::Info);
        Ok(())
    }

    /// Send `prompt` to every model of compare mode.
    pub(super) fn start_compare(&mut self, prompt: String) -> Result<(), String> {
        let Some(state) = self.compare.as_ref() else {
            return Err("no models to compare — /compare A B picks them".into());
        };
        if state.pending.is_some() {
            return Err("pick an answer first (1/2/… or ←/→, t tie, b both bad)".into());
        }
        let targets = state.targets.clone();
        let mut next = self.conversation.clone();
        next.push(Message::user(prompt.clone()));
        let messages = next.request_messages();
        let input_estimate: u64 = messages.iter().map(|m| estimate_tokens(&m.content) + 4).sum();
        let mut contexts = Vec::with_capacity(targets.len());
        for (i, (endpoint, model)) in targets.iter().enumerate() {
            contexts.push(TurnContext {
                turn: TurnRef {
                    turn_id: self.next_turn + i as u32,
                    lane: i as u8,
                },
                endpoint: endpoint.clone(),
                model: model.clone(),
                participant: None,
                mode: TurnMode::Compare,
                adapter: self.adapter(endpoint)?,
                messages: messages.clone(),
                params: compare_params(&self.params),
                tools: Vec::new(),
            });
        }
        self.modes.apply(Transition::TurnStarted).map_err(|r| r.0.to_string())?;
        self.next_turn += targets.len() as u32;
        self.last_prompt = Some(prompt.clone());
        let user_entry = self.transcript.push(EntryKind::User {
            text: prompt.clone(),
            failed: false,
        });
        let now = Instant::now();
        let answers = contexts
            .iter()
            .map(|c| {
                let mut a = Answer::new(c.turn, format!("{} · {}", c.model, c.endpoint));
                a.seat = Some(c.turn.lane);
                a.live = Some("waiting…".into());
                a
            })
            .collect();
        self.transcript
            .push(EntryKind::Compare(Box::new(CompareEntry { answers, footer: None })));
        self.transcript.scroll_bottom();
        let cancel = CancellationToken::new();
        let lanes = contexts
            .iter()
            .map(|c| Lane {
                turn: c.turn,
                stats: StatsTracker::start(input_estimate),
                smoother: self
                    .smooth
                    .then(|| StreamSmoother::new(SmootherConfig::default(), now.into_std())),
                finished: None,
                settled: None,
            })
            .collect();
        if let Some(s) = self.compare.as_mut() {
            s.run = Some(CompareRun {
                prompt,
                cancel: cancel.clone(),
                lanes,
                user_entry,
                cancelling: false,
            });
        }
        self.effects.push(Effect::StartCompare(contexts, cancel));
        Ok(())
    }

    pub(super) fn is_compare_turn(&self, turn: TurnRef) -> bool {
        self.compare
            .as_ref()
            .and_then(|c| c.run.as_ref())
            .is_some_and(|r| r.lanes.iter().any(|l| l.turn == turn))
    }

    /// Esc / Ctrl-C while comparing: stop every stream, keep what arrived.
    pub(super) fn cancel_compare(&mut self) -> bool {
        let Some(run) = self.compare.as_mut().and_then(|c| c.run.as_mut()) else {
            return false;
        };
        if !run.cancelling {
            run.cancelling = true;
            run.cancel.cancel();
            self.flash("cancelled — the partial answers are kept", NoticeLevel::Info);
        }
        true
    }

    pub(super) fn on_compare_event(&mut self, ev: OrchestratorEvent, now: Instant) {
        let Some(run) = self.compare.as_mut().and_then(|c| c.run.as_mut()) else {
            return;
        };
        match ev {
            OrchestratorEvent::Stream { turn, event } => {
                let Some(lane) = run.lanes.iter_mut().find(|l| l.turn == turn) else {
                    return;
                };
                let first_anywhere = event.is_output() && !lane.stats.has_output();
                let mut shown = String::new();
                match &event {
                    StreamEvent::Text(t) => {
                        lane.stats.on_output(t);
                        match lane.smoother.as_mut() {
                            Some(s) => s.push(t, now.into_std()),
                            None => shown.push_str(t),
                        }
                    }
                    StreamEvent::Reasoning(r) => lane.stats.on_output(r),
                    StreamEvent::ToolCallStart { .. } | StreamEvent::ToolCall(_) => {}
                    StreamEvent::ToolCallDelta { arguments, .. } => lane.stats.on_output(arguments),
                    StreamEvent::Usage(u) => lane.stats.on_usage(*u),
                    StreamEvent::Finished(reason) => lane.stats.on_finish(reason),
                    StreamEvent::Retrying { .. } => lane.stats.on_retry(),
                    StreamEvent::Notice(_) => {}
                }
                let live = figures(&lane.stats);
                if let Some(a) = self.transcript.answer_mut(turn) {
                    a.text.push_str(&shown);
                    if let StreamEvent::Reasoning(r) = &event {
                        a.reasoning.push_str(r);
                    }
                    match &event {
                        StreamEvent::Retrying { attempt, delay, reason } => {
                            a.retry_note = Some(format!("{reason} — retry {attempt} in {:.1}s", delay.as_secs_f64()));
                        }
                        StreamEvent::Notice(n) => a.retry_note = Some(n.clone()),
                        _ => {}
                    }
                    if event.is_output() && a.state == AnswerState::Waiting {
                        a.state = AnswerState::Streaming;
                        a.retry_note = None;
                    }
                    a.live = Some(live);
                }
                if first_anywhere {
                    let _ = self.modes.apply(Transition::FirstOutput);
                }
                self.transcript.touch_answer(turn);
            }
            OrchestratorEvent::TurnFinished { turn, outcome } => {
                let Some(i) = run.lanes.iter().position(|l| l.turn == turn) else {
                    return;
                };
                let lane = &mut run.lanes[i];
                let drain = matches!(*outcome, TurnOutcome::Completed(_))
                    && lane.smoother.as_ref().is_some_and(|s| s.buffered_chars() > 0);
                lane.finished = Some(outcome);
                if drain {
                    if let Some(s) = lane.smoother.as_mut() {
                        s.finish(now.into_std());
                    }
                } else {
                    self.settle_lane(i);
                }
            }
            OrchestratorEvent::Checkpoint { partial, .. } => self.effects.push(Effect::Checkpoint(partial)),
            OrchestratorEvent::TurnStarted { .. }
            | OrchestratorEvent::ApprovalNeeded { .. }
            | OrchestratorEvent::ToolStarted { .. }
            | OrchestratorEvent::ToolOutput { .. }
            | OrchestratorEvent::ToolFinished { .. }
            | OrchestratorEvent::AgentFinished { .. }
            | OrchestratorEvent::Arena(_) => {}
        }
    }

    /// Clock tick: release each pane's smoothed text.
    pub(super) fn compare_tick(&mut self, now: Instant) {
        let Some(run) = self.compare.as_mut().and_then(|c| c.run.as_mut()) else {
            return;
        };
        let mut settle = Vec::new();
        for (i, lane) in run.lanes.iter_mut().enumerate() {
            let Some(s) = lane.smoother.as_mut() else { continue };
            let out = s.take(now.into_std());
            if !out.is_empty() {
                if let Some(a) = self.transcript.answer_mut(lane.turn) {
                    a.text.push_str(&out);
                }
                self.transcript.touch_answer(lane.turn);
            }
            if lane.finished.is_some() && s.buffered_chars() == 0 {
                settle.push(i);
            }
        }
        for i in settle {
            self.settle_lane(i);
        }
    }

    /// One answer is complete: show it as it is, record it, count it.
    fn settle_lane(&mut self, i: usize) {
        let Some(run) = self.compare.as_mut().and_then(|c| c.run.as_mut()) else {
            return;
        };
        let lane = &mut run.lanes[i];
        let Some(outcome) = lane.finished.take() else { return };
        let (failed, cancelled) = match outcome.as_ref() {
            TurnOutcome::Completed(_) => (false, false),
            TurnOutcome::Cancelled(_) => (false, true),
            TurnOutcome::Failed { .. } => (true, false),
        };
        let error = outcome.error().map(ToString::to_string);
        let turn = outcome.into_turn();
        lane.smoother = None;
        lane.settled = Some(turn.clone());
        if let Some(a) = self.transcript.answer_mut(turn_ref(&turn, i)) {
            a.text = turn.response.text.clone();
            a.reasoning = turn.response.reasoning.clone();
            a.stats = Some(turn.stats.clone());
            a.retry_note = None;
            a.state = match (&error, cancelled) {
                (Some(e), _) => AnswerState::Failed(e.clone()),
                (None, true) => AnswerState::Cancelled,
                (None, false) => AnswerState::Done,
            };
        }
        self.transcript.touch_answer(turn_ref(&turn, i));
        if !turn.response.text.is_empty() || turn.stats.usage_reported {
            self.conversation.session_tokens += turn.stats.input_tokens + turn.stats.output_tokens;
        }
        self.session.record(&turn.stats, failed, cancelled);
        self.last_stats = Some(turn.stats.clone());
        self.effects.push(Effect::Record(Box::new(turn)));
        let all_in = self
            .compare
            .as_ref()
            .and_then(|c| c.run.as_ref())
            .is_some_and(|r| r.lanes.iter().all(|l| l.settled.is_some()));
        if all_in {
            self.compare_done();
        }
    }

    /// Every answer is in: ask for the pick (or settle without one).
    fn compare_done(&mut self) {
        let Some(state) = self.compare.as_mut() else { return };
        let Some(run) = state.run.take() else { return };
        let turns: Vec<Turn> = run.lanes.into_iter().filter_map(|l| l.settled).collect();
        let complete = turns
            .iter()
            .filter(|t| t.status == crate::conversation::TurnStatus::Completed)
            .count();
        let failed = complete == 0 && !run.cancelling;
        let _ = self.modes.apply(Transition::TurnEnded { failed });
        if complete >= 2 && !run.cancelling {
            state.pending = Some(PendingPick {
                prompt: run.prompt,
                turns,
            });
            let _ = self.modes.apply(Transition::Open(Overlay::ComparePick));
            return;
        }
        match turns
            .iter()
            .position(|t| t.status == crate::conversation::TurnStatus::Completed)
        {
            // Only one answered: it continues the conversation, nothing to vote on.
            Some(i) if complete == 1 => {
                self.conversation.push(Message::user(run.prompt));
                self.conversation.push(turns[i].assistant_message());
                self.set_compare_footer(Some(format!(
                    "only {} answered — it continues the conversation",
                    turns[i].model
                )));
            }
            _ => self.transcript.set_user_failed(run.user_entry, !run.cancelling),
        }
    }

    fn set_compare_footer(&mut self, footer: Option<String>) {
        let Some(i) = (0..self.transcript.len())
            .rev()
            .find(|&i| matches!(self.transcript.entries()[i].kind, EntryKind::Compare(_)))
        else {
            return;
        };
        if let Some(e) = self.transcript.get_mut(i) {
            if let EntryKind::Compare(c) = &mut e.kind {
                c.footer = footer;
            }
            e.touch();
        }
        self.transcript.scroll_bottom();
    }

    /// The user's pick (`None`: skipped, no vote).
    pub fn pick(&mut self, pick: Option<Pick>) -> Result<(), String> {
        let Some(state) = self.compare.as_mut() else {
            return Err("nothing to pick".into());
        };
        if let Some(Pick::Answer(i)) = pick
            && state.pending.as_ref().is_none_or(|p| i >= p.turns.len())
        {
            return Err(format!("there is no answer {}", i + 1));
        }
        let Some(pending) = state.pending.take() else {
            return Err("nothing to pick".into());
        };
        let _ = self.modes.apply(Transition::Close);
        let mut turns = pending.turns;
        for (j, t) in turns.iter_mut().enumerate() {
            t.pick = pick.map(|p| match p {
                Pick::Answer(i) if i == j => PickMark::Chosen,
                Pick::Answer(_) => PickMark::Rejected,
                Pick::Tie => PickMark::Tie,
                Pick::BothBad => PickMark::BothBad,
            });
            if let Some(a) = self.transcript.answer_mut(turn_ref(t, j)) {
                a.mark = t.pick.map(|m| m.label().to_string());
            }
            self.transcript.touch_answer(turn_ref(t, j));
        }
        let continues = match pick {
            Some(Pick::Answer(i)) => Some(i),
            Some(Pick::Tie) => Some(0),
            Some(Pick::BothBad) | None => None,
        };
        let footer = match (pick, continues) {
            (Some(Pick::Tie), _) => "a tie — the left answer continues the conversation".to_string(),
            (_, Some(i)) => format!("{} continues the conversation", turns[i].model),
            (Some(Pick::BothBad | Pick::Answer(_)), None) => {
                "both bad — neither continues; rephrase and ask again".into()
            }
            (None, None) => "no pick — neither continues the conversation".into(),
        };
        if let Some(i) = continues {
            self.conversation.push(Message::user(pending.prompt.clone()));
            self.conversation.push(turns[i].assistant_message());
        }
        self.set_compare_footer(Some(footer));
        if pick.is_some() {
            for t in &turns {
                self.effects.push(Effect::Record(Box::new(t.clone())));
            }
            let preference = match pick {
                Some(Pick::Answer(i)) => Some(crate::preference::Preference::Winner(i)),
                Some(Pick::Tie) => Some(crate::preference::Preference::Tie),
                Some(Pick::BothBad) => Some(crate::preference::Preference::BothBad),
                None => None,
            };
            if let Some(p) = preference {
                for v in crate::preference::compare_votes(self.session_name(), &turns, p) {
                    self.effects.push(Effect::Vote(Box::new(v)));
                }
            }
        }
        Ok(())
    }
}

fn turn_ref(t: &Turn, lane: usize) -> TurnRef {
    TurnRef {
        turn_id: t.turn_id,
        lane: lane as u8,
    }
}

/// What compare requests send: the chat's sampling, no tools.
fn compare_params(p: &Params) -> Params {
    Params {
        temperature: p.temperature,
        max_tokens: p.max_tokens,
        ..Params::default()
    }
}
