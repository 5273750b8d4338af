//! Arena and compare commands: /arena, /pause, /resume, /stop, /judge, /compare.

use super::{CommandError, SlashCommand};
use crate::tui::app::{App, HistoryRequest};

fn failed(e: String) -> CommandError {
    CommandError::Failed(e)
}

pub struct Arena;
impl SlashCommand for Arena {
    fn name(&self) -> &'static str {
        "arena"
    }
    fn args(&self) -> &'static str {
        "NAME [TURNS] | off"
    }
    fn about(&self) -> &'static str {
        "arena mode: configured models talk in turns, then a judge rules"
    }
    fn complete(&self, app: &App, _partial: &str) -> Vec<String> {
        let mut v: Vec<String> = app.config.arenas.keys().cloned().collect();
        v.push("off".into());
        v
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        let mut words = args.split_whitespace();
        let Some(name) = words.next() else {
            let names: Vec<&str> = app.config.arenas.keys().map(String::as_str).collect();
            return Err(CommandError::Usage(if names.is_empty() {
                "no arenas are configured — add [arenas.NAME] to polyglot.toml".into()
            } else {
                format!("configured: {}", names.join(", "))
            }));
        };
        if name == "off" {
            return app.close_arena().map_err(failed);
        }
        let turns = match words.next() {
            Some(t) => Some(
                t.parse::<u32>()
                    .ok()
                    .filter(|n| (1..=1000).contains(n))
                    .ok_or_else(|| CommandError::Usage(format!("`{t}` is not a number of turns (1–1000)")))?,
            ),
            None => None,
        };
        if let Some(extra) = words.next() {
            return Err(CommandError::Usage(format!("unexpected `{extra}`")));
        }
        app.open_arena(name, turns, None).map_err(failed)
    }
}

pub struct Pause;
impl SlashCommand for Pause {
    fn name(&self) -> &'static str {
        "pause"
    }
    fn about(&self) -> &'static str {
        "pause the arena after the turn streaming now"
    }
    fn run(&self, app: &mut App, _args: &str) -> Result<(), CommandError> {
        app.arena_pause().map_err(failed)
    }
}

pub struct Resume;
impl SlashCommand for Resume {
    fn name(&self) -> &'static str {
        "resume"
    }
    fn args(&self) -> &'static str {
        "[ID]"
    }
    fn about(&self) -> &'static str {
        "carry on a paused arena; with a session ID: continue that recorded session"
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        if args.is_empty() {
            return app.arena_resume().map_err(failed);
        }
        if args.split_whitespace().count() > 1 {
            return Err(CommandError::Usage("one session id (or a unique part of it)".into()));
        }
        app.history(HistoryRequest::Resume {
            id: args.to_string(),
            focus: None,
        })
        .map_err(failed)
    }
}

pub struct Stop;
impl SlashCommand for Stop {
    fn name(&self) -> &'static str {
        "stop"
    }
    fn about(&self) -> &'static str {
        "stop the arena now (the judge still rules; again: stop the judge)"
    }
    fn run(&self, app: &mut App, _args: &str) -> Result<(), CommandError> {
        app.arena_stop().map_err(failed)
    }
}

pub struct Judge;
impl SlashCommand for Judge {
    fn name(&self) -> &'static str {
        "judge"
    }
    fn args(&self) -> &'static str {
        "[ENDPOINT[/MODEL]]"
    }
    fn about(&self) -> &'static str {
        "ask a judge to rule on the arena (its own, or the one named)"
    }
    fn complete(&self, app: &App, _partial: &str) -> Vec<String> {
        app.config.endpoints.keys().cloned().collect()
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        app.judge_now(args).map_err(failed)
    }
}

pub struct Compare;
impl SlashCommand for Compare {
    fn name(&self) -> &'static str {
        "compare"
    }
    fn args(&self) -> &'static str {
        "A B [C…] | off"
    }
    fn about(&self) -> &'static str {
        "compare mode: each prompt goes to every endpoint (ENDPOINT or ENDPOINT/MODEL); pick the better answer"
    }
    fn complete(&self, app: &App, partial: &str) -> Vec<String> {
        let done = partial.rsplit_once(' ').map_or("", |(d, _)| d);
        let prefix = if done.is_empty() {
            String::new()
        } else {
            format!("{done} ")
        };
        let mut v: Vec<String> = app.config.endpoints.keys().map(|e| format!("{prefix}{e}")).collect();
        if done.is_empty() {
            v.push("off".into());
        }
        v
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        let specs: Vec<&str> = args.split_whitespace().collect();
        match specs.as_slice() {
            ["off"] => app.close_compare().map_err(failed),
            [] | [_] => Err(CommandError::Usage("name two or more endpoints".into())),
            _ => app.open_compare(&specs).map_err(failed),
        }
    }
}
