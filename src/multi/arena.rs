//! `pai arena NAME`, headless: the participants' turns streamed to stdout
//! under a header each, then the judge's rulings and the verdict with scores
//! (or one JSON object with `--json`); every turn, the judge's included, in
//! one session folder; Ctrl-C stops the exchange (the judge still rules) and
//! a second aborts. Exit codes: 0 completed, 1 a request failed, 130 stopped.
//!
//! Owns the arena's terminal output and exit code. The exchange itself is
//! [`crate::orchestration::arena`]'s; the TUI's arena mode is not here.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::arena_print::{Printer, one_line};
use super::{Adapters, Recording, joined, piped_stdin, runtime, turn_json};
use crate::cli::ArenaArgs;
use crate::config::{ArenaConfig, Config, Secrets};
use crate::conversation::{Params, Turn, TurnMode, TurnStatus};
use crate::headless::{EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, Io};
use crate::orchestration::arena::{ArenaControl, ArenaEnd, ArenaEvent, ArenaOutcome, ArenaSetup, Seat, run_arena};
use crate::orchestration::judge::JudgeSetup;
use crate::orchestration::{OrchestratorEvent, event_channel};
use crate::records::Templates;
use crate::util::sanitize::terminal_safe;
use crate::util::suggest::closest;

/// What `pai arena` was asked to run, resolved from config and flags.
#[derive(Debug, Clone)]
pub struct ArenaPlan {
    pub arena: ArenaConfig,
    /// PROMPT, else piped stdin, else the arena's `opening`; `None` when
    /// there is none (the TUI can ask for one; headless cannot run).
    pub opening: Option<String>,
    /// Turns to run: `--turns`, else the arena's `max_turns`.
    pub turns: u32,
    /// `--max-tokens` for the participants' answers.
    pub max_tokens: Option<u32>,
    pub json: bool,
}

/// The arena named, or an error that lists the configured ones.
pub fn find<'a>(config: &'a Config, name: &str) -> Result<&'a ArenaConfig, String> {
    if let Some(a) = config.arenas.get(name) {
        return Ok(a);
    }
    if config.arenas.is_empty() {
        return Err(format!(
            "unknown arena `{name}`: no arenas are configured in {} — add [arenas.{name}] with two [[arenas.{name}.participants]] (see the README)",
            config.source
        ));
    }
    let names: Vec<&str> = config.arenas.keys().map(String::as_str).collect();
    let hint = closest(name, names.iter().copied())
        .map(|s| format!(" — did you mean `{s}`?"))
        .unwrap_or_default();
    Err(format!(
        "unknown arena `{name}`{hint} Configured arenas: {} (in {})",
        names.join(", "),
        config.source
    ))
}

/// Resolve the command line: the arena, the opening (reading piped stdin), the turns.
pub fn plan(config: &Config, args: &ArenaArgs) -> Result<ArenaPlan, String> {
    let arena = find(config, &args.name)?.clone();
    let opening = match joined(&args.prompt) {
        Some(p) => Some(p),
        None => piped_stdin()?.or_else(|| arena.opening.clone()),
    };
    Ok(ArenaPlan {
        turns: args.turns.unwrap_or(arena.max_turns),
        arena,
        opening,
        max_tokens: args.max_tokens,
        json: args.json,
    })
}

/// Seats and judge with their adapters (one per endpoint).
pub fn setup(
    config: &Config,
    adapters: &mut Adapters,
    plan: &ArenaPlan,
    opening: String,
) -> Result<ArenaSetup, String> {
    let mut seats = Vec::with_capacity(plan.arena.participants.len());
    for p in &plan.arena.participants {
        let ep = config.require_endpoint(&p.endpoint)?;
        seats.push(Seat {
            name: p.name.clone(),
            endpoint: ep.name.clone(),
            model: p.model.clone(),
            system: p.system.clone(),
            params: Params {
                temperature: p.temperature.or(config.defaults.temperature),
                max_tokens: plan.max_tokens.or(config.defaults.max_tokens),
                tool_choice: None,
                response_schema: None,
            },
            adapter: adapters.get(ep)?,
        });
    }
    let judge = match &plan.arena.judge {
        Some(j) => {
            let ep = config.require_endpoint(&j.endpoint)?;
            Some(JudgeSetup {
                endpoint: ep.name.clone(),
                model: j.model.clone(),
                adapter: adapters.get(ep)?,
                prompt: j.prompt.clone(),
                criteria: j.criteria.clone(),
                params: JudgeSetup::params(),
            })
        }
        None => None,
    };
    Ok(ArenaSetup {
        arena: plan.arena.name.clone(),
        seats,
        opening,
        max_turns: plan.turns,
        first_turn_id: 1,
        judge,
        spoken: Vec::new(),
    })
}

/// The error for an arena with no opening prompt anywhere.
pub fn no_opening(name: &str) -> String {
    format!(
        "arena `{name}` has no opening prompt — give one (pai arena {name} \"…\"), pipe one in, or set opening = \"…\" in [arenas.{name}]"
    )
}

/// Shared between the run and the Ctrl-C handler.
#[derive(Debug, Default)]
pub struct RunState {
    /// The exchange is over; the judge (if any) is at work.
    pub judging: AtomicBool,
    /// The user pressed Ctrl-C.
    pub interrupted: AtomicBool,
}

/// Run the arena headless to the end (blocking); returns the exit code.
pub fn run(config: &Config, secrets: &Secrets, templates: Arc<Templates>, no_log: bool, plan: ArenaPlan) -> i32 {
    let Some(opening) = plan.opening.clone() else {
        eprintln!("pai: {}", no_opening(&plan.arena.name));
        return crate::app::EXIT_USAGE;
    };
    let mut adapters = Adapters::new(secrets);
    let setup = match setup(config, &mut adapters, &plan, opening) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pai: arena `{}`: {e}", plan.arena.name);
            return EXIT_FAILED;
        }
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pai: {e}");
            return EXIT_FAILED;
        }
    };
    rt.block_on(async {
        let control = ArenaControl::new();
        let state = Arc::new(RunState::default());
        let (c, s) = (control.clone(), state.clone());
        let tty = std::io::stderr().is_terminal();
        tokio::spawn(async move {
            let mut presses = 0;
            while tokio::signal::ctrl_c().await.is_ok() {
                presses += 1;
                s.interrupted.store(true, Ordering::SeqCst);
                if presses == 1 && !s.judging.load(Ordering::SeqCst) {
                    c.stop();
                    if tty {
                        eprintln!("\npai: stopping the arena — the judge still rules; Ctrl-C again to abort");
                    }
                } else if presses <= 2 {
                    c.abort();
                } else {
                    std::process::exit(EXIT_CANCELLED);
                }
            }
        });
        let recording = Recording::for_run(config, templates, no_log);
        let mut out = std::io::stdout().lock();
        let mut err = std::io::stderr();
        let mut io = Io {
            out: &mut out,
            err: &mut err,
            err_is_tty: tty,
        };
        headless(setup, plan.json, recording, &mut io, control, state).await
    })
}

/// The `--json` object.
pub fn outcome_json(
    setup_arena: &str,
    opening: &str,
    o: &ArenaOutcome,
    session_dir: Option<&std::path::Path>,
) -> Value {
    let (turns, judging): (Vec<&Turn>, Vec<&Turn>) = o.turns.iter().partition(|t| t.mode != TurnMode::Judge);
    let (end, failed, error) = match &o.end {
        ArenaEnd::Completed => ("completed", None, None),
        ArenaEnd::Stopped => ("stopped", None, None),
        ArenaEnd::Failed { participant, error } => ("failed", Some(participant), Some(error)),
    };
    let verdict = o.verdict.as_ref().map(|v| {
        let mut j = json!(v);
        j["summary"] = json!(v.summary());
        j
    });
    json!({
        "arena": setup_arena,
        "opening": opening,
        "turns": turns.iter().map(|t| turn_json(t)).collect::<Vec<_>>(),
        "end": end,
        "failed_participant": failed,
        "error": error,
        "judge_turns": judging.iter().map(|t| {
            let mut j = turn_json(t);
            j["ruling"] = json!(t.ruling);
            j
        }).collect::<Vec<_>>(),
        "verdict": verdict,
        "session_dir": session_dir,
    })
}

/// Run the arena, printing as it goes; returns the exit code.
pub async fn headless(
    setup: ArenaSetup,
    json: bool,
    recording: Recording,
    io: &mut Io<'_>,
    control: ArenaControl,
    state: Arc<RunState>,
) -> i32 {
    let (tx, mut rx) = event_channel();
    let arena = setup.arena.clone();
    let opening = setup.opening.clone();
    let has_judge = setup.judge.is_some();
    let seats = setup.seats.len();
    let names: Vec<String> = setup.seats.iter().map(|s| s.name.clone()).collect();
    let mut finished: Vec<crate::conversation::Turn> = Vec::new();
    let producer = {
        let control = control.clone();
        async move {
            let out = run_arena(setup, &tx, control).await;
            drop(tx);
            out
        }
    };
    let mut p = Printer {
        io,
        json,
        out: String::with_capacity(8192),
        err: String::new(),
        col0: true,
        started: false,
        judging: false,
        judge_header: false,
        rulings: 0,
        broken: false,
    };
    let consumer = async {
        while let Some(ev) = rx.recv().await {
            let mut handle = |ev: &OrchestratorEvent, p: &mut Printer| {
                match ev {
                    OrchestratorEvent::TurnFinished { outcome, .. } => {
                        recording.record(outcome.turn());
                        finished.push(outcome.turn().clone());
                    }
                    OrchestratorEvent::Checkpoint { partial, .. } => recording.checkpoint(partial),
                    OrchestratorEvent::Arena(ArenaEvent::Verdict(v)) => {
                        for vote in
                            crate::preference::verdict_votes(recording.session(), &opening, &names, &finished, v)
                        {
                            recording.vote(vote);
                        }
                    }
                    _ => {}
                }
                if let OrchestratorEvent::Arena(ArenaEvent::Ended { .. }) = ev {
                    state.judging.store(true, Ordering::SeqCst);
                }
                p.event(ev);
            };
            handle(&ev, &mut p);
            while let Ok(ev) = rx.try_recv() {
                handle(&ev, &mut p);
            }
            if !p.flush() {
                // stdout closed (e.g. piped into `head`): nobody is reading.
                control.abort();
            }
        }
    };
    let (outcome, ()) = tokio::join!(producer, consumer);
    if !p.col0 {
        p.push("\n");
    }
    p.flush();
    let (session_dir, record_errors) = recording.finish();
    if p.broken {
        // Nobody reads stdout any more (e.g. `| head`): not a failure.
        return EXIT_OK;
    }
    if json {
        let obj = outcome_json(&arena, &opening, &outcome, session_dir.as_deref());
        let _ = writeln!(p.io.out, "{obj}");
    }
    let code = ending(
        &mut *p.io.err,
        &arena,
        &outcome,
        seats,
        has_judge,
        &state,
        session_dir.as_deref(),
    );
    for e in &record_errors {
        let _ = writeln!(p.io.err, "pai: {e}");
    }
    if code == EXIT_OK && !record_errors.is_empty() {
        EXIT_FAILED
    } else {
        code
    }
}

/// The lines on stderr about how it ended, and the exit code.
fn ending(
    err: &mut dyn Write,
    arena: &str,
    o: &ArenaOutcome,
    seats: usize,
    has_judge: bool,
    state: &RunState,
    dir: Option<&std::path::Path>,
) -> i32 {
    let kept = dir
        .map(|d| format!("; the exchange is kept in {}", d.display()))
        .unwrap_or_default();
    let judge_turns: Vec<&Turn> = o.turns.iter().filter(|t| t.mode == TurnMode::Judge).collect();
    let mut judge_failed = false;
    for t in judge_turns
        .iter()
        .filter(|t| t.ruling.is_some() && t.status == TurnStatus::Failed)
    {
        judge_failed = true;
        let why = t.response.error.as_deref().unwrap_or("the request failed");
        let _ = writeln!(err, "pai: judge `{}`: {}", t.endpoint, one_line(why, 400));
    }
    let interrupted = state.interrupted.load(Ordering::SeqCst);
    if has_judge && judge_turns.is_empty() && o.end == ArenaEnd::Stopped {
        let everyone = (0..seats).all(|i| o.spoken.iter().any(|u| u.speaker == i));
        let why = if everyone {
            "the judge was stopped"
        } else {
            "not every participant spoke before the arena ended"
        };
        let _ = writeln!(err, "pai: no verdict — {why}");
    }
    match &o.end {
        ArenaEnd::Failed { participant, error } => {
            let _ = writeln!(
                err,
                "pai: arena `{arena}`: {} failed: {}{kept}",
                terminal_safe(participant),
                one_line(error, 400)
            );
            EXIT_FAILED
        }
        ArenaEnd::Stopped => {
            let n = o.turns.iter().filter(|t| t.mode == TurnMode::Arena).count();
            let _ = writeln!(
                err,
                "pai: arena stopped after {n} turn{}{kept}",
                if n == 1 { "" } else { "s" }
            );
            EXIT_CANCELLED
        }
        ArenaEnd::Completed if interrupted && has_judge && o.verdict.is_none() => {
            let _ = writeln!(err, "pai: the judge was stopped{kept}");
            EXIT_CANCELLED
        }
        ArenaEnd::Completed => {
            let usable = o
                .verdict
                .as_ref()
                .is_some_and(|v| v.rulings.iter().any(|r| r.error.is_none()));
            if judge_failed && !usable { EXIT_FAILED } else { EXIT_OK }
        }
    }
}

#[cfg(test)]
#[path = "arena_tests.rs"]
mod tests;
