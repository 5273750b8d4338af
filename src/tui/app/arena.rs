//! Arena mode in the TUI: choosing an arena from the config, starting its
//! exchange with the opening prompt, pause / resume / stop, the judge (at the
//! end, or on demand with `/judge`) and the verdict in the transcript. The
//! exchange is mirrored here from finished turns, so `/judge` can rule on it
//! after the run is over.

use tokio_util::sync::CancellationToken;

use super::{App, Effect, RunKind};
use crate::config::{ArenaConfig, DEFAULT_CRITERIA, JudgeConfig};
use crate::conversation::{Params, Turn, TurnMode, TurnStatus};
use crate::orchestration::TurnRef;
use crate::orchestration::agent::AgentEnd;
use crate::orchestration::arena::{ArenaControl, ArenaEnd, ArenaEvent, ArenaSetup, Seat, Utterance};
use crate::orchestration::judge::JudgeSetup;
use crate::tui::mode::{Activity, Transition, UiMode};
use crate::tui::transcript::{EntryKind, NoticeLevel};
use crate::util::suggest::closest;
use crate::verdict::Verdict;

/// The arena chosen with `/arena` and what happened in it.
pub struct ArenaState {
    pub config: ArenaConfig,
    /// Turns a run takes (`/arena NAME TURNS` overrides `max_turns`).
    pub turns: u32,
    /// The opening of the current (or last) exchange.
    pub opening: Option<String>,
    pub spoken: Vec<Utterance>,
    /// Set while a run (or a judge) is in flight.
    pub control: Option<ArenaControl>,
    /// Participant turns started in this run.
    pub started: u32,
    /// The turns in flight now are the judge's.
    pub judging: bool,
    /// A pause was asked for (it takes effect after the turn streaming now).
    pub pausing: bool,
    pub end: Option<ArenaEnd>,
    pub verdict: Option<Verdict>,
    /// The first turn of the current exchange.
    pub first_turn: u32,
}

impl ArenaState {
    fn everyone_spoke(&self) -> bool {
        (0..self.config.participants.len()).all(|i| self.spoken.iter().any(|u| u.speaker == i))
    }

    fn names(&self) -> Vec<String> {
        self.config.participants.iter().map(|p| p.name.clone()).collect()
    }

    /// For the toolbar: `debate · turn 3/6`, `debate · judging`, ….
    pub fn status(&self, activity: Activity) -> String {
        let name = &self.config.name;
        if self.judging {
            format!("{name} · judging")
        } else if activity == Activity::Paused {
            format!("{name} · paused after {}/{}", self.spoken.len(), self.turns)
        } else if self.control.is_some() {
            let pausing = if self.pausing { " · pausing…" } else { "" };
            format!("{name} · turn {}/{}{pausing}", self.started.max(1), self.turns)
        } else if self.opening.is_none() {
            format!("{name} · type the opening")
        } else {
            format!("{name} · over")
        }
    }
}

/// A judge asked after the arena is over (`/judge`).
pub struct JudgeJob {
    pub setup: JudgeSetup,
    pub opening: String,
    pub names: Vec<String>,
    pub spoken: Vec<Utterance>,
    pub first_turn_id: u32,
}

impl std::fmt::Debug for JudgeJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgeJob")
            .field("judge", &format_args!("{} · {}", self.setup.endpoint, self.setup.model))
            .field("spoken", &self.spoken.len())
            .field("first_turn_id", &self.first_turn_id)
            .finish()
    }
}

fn turns_word(n: u32) -> &'static str {
    if n == 1 { "turn" } else { "turns" }
}

fn describe(cfg: &ArenaConfig, turns: u32) -> String {
    let who: Vec<String> = cfg
        .participants
        .iter()
        .map(|p| format!("{} ({} · {})", p.name, p.model, p.endpoint))
        .collect();
    let judge = match &cfg.judge {
        Some(j) => format!("judge: {} · {} on {}", j.model, j.endpoint, j.criteria.join(", ")),
        None => "no judge configured (/judge ENDPOINT asks one afterwards)".into(),
    };
    format!(
        "Arena `{}`: {} · {turns} turns · {judge}\n/pause, /resume and /stop (or Esc) control it.",
        cfg.name,
        who.join(" vs ")
    )
}

impl App {
    fn unknown_arena(&self, name: &str) -> String {
        let names: Vec<&str> = self.config.arenas.keys().map(String::as_str).collect();
        if names.is_empty() {
            return "no arenas are configured — add an [arenas.NAME] table to polyglot.toml".into();
        }
        let hint = closest(name, names.iter().copied())
            .map(|c| format!(" — did you mean `{c}`?"))
            .unwrap_or_default();
        format!("unknown arena `{name}`{hint} Configured: {}", names.join(", "))
    }

    /// `/arena NAME [TURNS]`: arena mode with NAME. An opening (given, else
    /// the configured one) starts it at once; without one, the next prompt
    /// typed is the opening.
    pub fn open_arena(&mut self, name: &str, turns: Option<u32>, opening: Option<String>) -> Result<(), String> {
        if self.is_busy() {
            return Err("an answer is still streaming — Esc cancels it first".into());
        }
        let cfg = self
            .config
            .arenas
            .get(name)
            .cloned()
            .ok_or_else(|| self.unknown_arena(name))?;
        for p in &cfg.participants {
            self.adapter(&p.endpoint)?;
        }
        if let Some(j) = &cfg.judge {
            self.adapter(&j.endpoint)?;
        }
        self.modes
            .apply(Transition::SwitchMode(UiMode::Arena))
            .map_err(|r| r.0.to_string())?;
        let turns = turns.unwrap_or(cfg.max_turns);
        let opening = opening.or_else(|| cfg.opening.clone());
        self.notice(describe(&cfg, turns), NoticeLevel::Info);
        self.arena = Some(ArenaState {
            config: cfg,
            turns,
            opening: None,
            spoken: Vec::new(),
            control: None,
            started: 0,
            judging: false,
            pausing: false,
            end: None,
            verdict: None,
            first_turn: 0,
        });
        match opening {
            Some(o) => self.start_arena(o),
            None => {
                self.flash(
                    "type the opening prompt and press Enter to start the arena",
                    NoticeLevel::Info,
                );
                Ok(())
            }
        }
    }

    /// Leave arena mode (`/arena off`).
    pub fn close_arena(&mut self) -> Result<(), String> {
        if self.arena.as_ref().is_some_and(|a| a.control.is_some()) {
            return Err("the arena is running — /stop it first".into());
        }
        self.modes
            .apply(Transition::SwitchMode(UiMode::Chat))
            .map_err(|r| r.0.to_string())?;
        self.arena = None;
        self.flash("arena mode off: plain chat", NoticeLevel::Info);
        Ok(())
    }

    fn judge_setup(&mut self, j: &JudgeConfig) -> Result<JudgeSetup, String> {
        Ok(JudgeSetup {
            endpoint: j.endpoint.clone(),
            model: j.model.clone(),
            adapter: self.adapter(&j.endpoint)?,
            prompt: j.prompt.clone(),
            criteria: j.criteria.clone(),
            params: JudgeSetup::params(),
        })
    }

    /// Start a new exchange of the chosen arena with `opening`.
    pub(super) fn start_arena(&mut self, opening: String) -> Result<(), String> {
        let Some(state) = self.arena.as_ref() else {
            return Err("no arena chosen — /arena NAME picks one".into());
        };
        if state.control.is_some() {
            return Err("the arena is running — /pause, /resume, /stop".into());
        }
        let cfg = state.config.clone();
        let turns = state.turns;
        let mut seats = Vec::with_capacity(cfg.participants.len());
        for p in &cfg.participants {
            let params = Params {
                temperature: p.temperature.or(self.params.temperature),
                max_tokens: self.params.max_tokens,
                ..Params::default()
            };
            seats.push(Seat {
                name: p.name.clone(),
                endpoint: p.endpoint.clone(),
                model: p.model.clone(),
                system: p.system.clone(),
                params,
                adapter: self.adapter(&p.endpoint)?,
            });
        }
        let judge = match &cfg.judge {
            Some(j) => Some(self.judge_setup(j)?),
            None => None,
        };
        self.modes.apply(Transition::TurnStarted).map_err(|r| r.0.to_string())?;
        let user_entry = self.transcript.push(EntryKind::User {
            text: opening.clone(),
            failed: false,
        });
        self.transcript.scroll_bottom();
        let control = ArenaControl::new();
        // No answer block yet: each TurnStarted opens its speaker's.
        self.new_live(
            TurnRef { turn_id: 0, lane: 0 },
            CancellationToken::new(),
            0,
            user_entry,
            RunKind::Arena,
        );
        self.flash = None;
        let first_turn = self.next_turn;
        if let Some(a) = self.arena.as_mut() {
            a.first_turn = first_turn;
            a.opening = Some(opening.clone());
            a.spoken.clear();
            a.control = Some(control.clone());
            a.started = 0;
            a.judging = false;
            a.pausing = false;
            a.end = None;
            a.verdict = None;
        }
        self.effects.push(Effect::StartArena(
            Box::new(ArenaSetup {
                arena: cfg.name,
                seats,
                opening,
                max_turns: turns,
                first_turn_id: self.next_turn,
                judge,
                spoken: Vec::new(),
            }),
            control,
        ));
        Ok(())
    }

    fn running_control(&self) -> Result<ArenaControl, String> {
        self.arena
            .as_ref()
            .and_then(|a| a.control.clone())
            .ok_or_else(|| "no arena is running".to_string())
    }

    /// `/pause`: no new turn starts after the one streaming now.
    pub fn arena_pause(&mut self) -> Result<(), String> {
        let control = self.running_control()?;
        let a = self.arena.as_mut().ok_or("no arena is running")?;
        if a.judging {
            return Err("the judge is ruling — /stop stops it".into());
        }
        if a.pausing {
            return Err("already paused — /resume continues".into());
        }
        control.pause();
        a.pausing = true;
        self.flash(
            "the arena pauses after this turn — /resume continues, /stop ends it",
            NoticeLevel::Info,
        );
        Ok(())
    }

    /// `/resume` (no argument): carry on a paused arena.
    pub fn arena_resume(&mut self) -> Result<(), String> {
        let control = self.running_control()?;
        let a = self.arena.as_mut().ok_or("no arena is running")?;
        if !a.pausing {
            return Err("the arena is not paused".into());
        }
        control.resume();
        a.pausing = false;
        if self.modes.activity() == Activity::Paused {
            let _ = self.modes.apply(Transition::Resume);
        }
        self.flash("resumed", NoticeLevel::Info);
        Ok(())
    }

    /// `/stop`: end the exchange now (the judge still rules); again: stop the judge.
    pub fn arena_stop(&mut self) -> Result<(), String> {
        let control = self.running_control()?;
        if self.modes.activity() == Activity::Paused {
            control.stop();
            self.flash("stopped", NoticeLevel::Info);
            return Ok(());
        }
        self.cancel();
        Ok(())
    }

    /// `/judge [ENDPOINT[/MODEL]]`: rule on the exchange that is over.
    pub fn judge_now(&mut self, spec: &str) -> Result<(), String> {
        if self.is_busy() {
            return Err("the arena is still running — wait for it, or /stop it".into());
        }
        let a = self.arena.as_ref().ok_or("no arena to judge — /arena NAME runs one")?;
        if !a.everyone_spoke() {
            return Err("every participant must have spoken before a judge can rule".into());
        }
        let configured = a.config.judge.clone();
        let cfg = if spec.is_empty() {
            configured.ok_or("this arena has no judge — /judge ENDPOINT[/MODEL] names one")?
        } else {
            let (ep, model) = spec
                .split_once('/')
                .map_or((spec, None), |(e, m)| (e, Some(m.to_string())));
            let endpoint = self.config.require_endpoint(ep)?.clone();
            JudgeConfig {
                model: model.unwrap_or_else(|| self.config.default_model_for(&endpoint)),
                endpoint: endpoint.name,
                prompt: configured.as_ref().and_then(|j| j.prompt.clone()),
                criteria: configured
                    .map(|j| j.criteria)
                    .unwrap_or_else(|| DEFAULT_CRITERIA.iter().map(|s| s.to_string()).collect()),
            }
        };
        let setup = self.judge_setup(&cfg)?;
        let a = self.arena.as_ref().ok_or("no arena to judge")?;
        let job = JudgeJob {
            opening: a.opening.clone().unwrap_or_default(),
            names: a.names(),
            spoken: a.spoken.clone(),
            first_turn_id: self.next_turn,
            setup,
        };
        self.modes.apply(Transition::TurnStarted).map_err(|r| r.0.to_string())?;
        let cancel = CancellationToken::new();
        let user_entry = self.transcript.len();
        self.new_live(
            TurnRef { turn_id: 0, lane: 0 },
            cancel.clone(),
            0,
            user_entry,
            RunKind::Arena,
        );
        if let Some(a) = self.arena.as_mut() {
            a.judging = true;
            a.control = Some(ArenaControl::new());
            a.verdict = None;
        }
        self.notice(
            format!(
                "The judge ({} · {}) rules, asked twice with the participants in opposite orders…",
                cfg.model, cfg.endpoint
            ),
            NoticeLevel::Info,
        );
        self.effects.push(Effect::StartJudge(Box::new(job), cancel));
        Ok(())
    }

    /// Progress of the arena run.
    pub(super) fn on_arena(&mut self, e: ArenaEvent) {
        let Some(a) = self.arena.as_mut() else { return };
        match e {
            ArenaEvent::Paused { turns_done } => {
                a.pausing = true;
                let _ = self.modes.apply(Transition::Pause);
                self.flash(
                    format!(
                        "arena paused after {turns_done} {} — /resume continues, /stop ends it",
                        turns_word(turns_done)
                    ),
                    NoticeLevel::Info,
                );
            }
            ArenaEvent::Resumed => {}
            ArenaEvent::Ended { end, turns_done } => {
                a.end = Some(end.clone());
                a.pausing = false;
                a.judging = a.config.judge.is_some() && a.everyone_spoke();
                let (mut text, level) = match &end {
                    ArenaEnd::Completed => (
                        format!("The arena is over after {turns_done} {}.", turns_word(turns_done)),
                        NoticeLevel::Info,
                    ),
                    ArenaEnd::Stopped => (
                        format!("The arena was stopped after {turns_done} {}.", turns_word(turns_done)),
                        NoticeLevel::Info,
                    ),
                    ArenaEnd::Failed { participant, error } => (
                        format!("The arena ended: {participant} failed — {error}"),
                        NoticeLevel::Error,
                    ),
                };
                match (&a.config.judge, a.judging) {
                    (Some(j), true) => text.push_str(&format!(
                        " The judge ({} · {}) rules, asked twice with the participants in opposite orders…",
                        j.model, j.endpoint
                    )),
                    (None, _) if a.everyone_spoke() => text.push_str(" /judge ENDPOINT asks a judge to rule."),
                    _ => {}
                }
                self.notice(text, level);
            }
            ArenaEvent::Verdict(v) => {
                a.verdict = Some((*v).clone());
                let names = a.names();
                let opening = a.opening.clone().unwrap_or_default();
                let first = a.first_turn;
                let exchange: Vec<Turn> = self.turns.iter().filter(|t| t.turn_id >= first).cloned().collect();
                let votes = crate::preference::verdict_votes(self.session_name(), &opening, &names, &exchange, &v);
                for vote in votes {
                    self.effects.push(Effect::Vote(Box::new(vote)));
                }
                self.transcript.push(EntryKind::Verdict(v));
                self.transcript.scroll_bottom();
            }
            ArenaEvent::Finished => {
                a.control = None;
                a.judging = false;
                a.pausing = false;
                let draining = self.live.as_mut().filter(|l| l.kind == RunKind::Arena).map(|l| {
                    l.arena_done = l.finished.is_some();
                    l.arena_done
                });
                if draining == Some(false) {
                    self.end_arena_run();
                }
            }
        }
    }

    /// The arena run (or a judge asked later) is over.
    pub(super) fn end_arena_run(&mut self) {
        let failed = match self.arena.as_ref().and_then(|a| a.end.as_ref()) {
            Some(ArenaEnd::Failed { error, .. }) => Some(AgentEnd::Failed(error.clone())),
            _ => None,
        };
        self.end_run(failed);
    }

    /// A finished participant turn joins the exchange; a new speaker counts.
    pub(super) fn arena_turn_settled(&mut self, turn: &Turn) {
        let Some(a) = self.arena.as_mut() else { return };
        if turn.mode != TurnMode::Arena {
            return;
        }
        let Some(speaker) = a
            .config
            .participants
            .iter()
            .position(|p| turn.participant_name.as_deref() == Some(p.name.as_str()))
        else {
            return;
        };
        let text = turn.response.text.clone();
        match turn.status {
            TurnStatus::Completed => a.spoken.push(Utterance {
                speaker,
                text,
                cut_off: false,
            }),
            TurnStatus::Cancelled if !text.trim().is_empty() => a.spoken.push(Utterance {
                speaker,
                text,
                cut_off: true,
            }),
            TurnStatus::Cancelled | TurnStatus::Failed => {}
        }
    }

    /// A participant's turn started (for the toolbar's count).
    pub(super) fn arena_turn_started(&mut self) {
        if let Some(a) = self.arena.as_mut().filter(|a| !a.judging) {
            a.started += 1;
        }
    }
}
