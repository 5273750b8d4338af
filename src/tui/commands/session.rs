//! Session commands: /help, /quit, /clear, /stats, /retry.

use super::{CommandError, SlashCommand};
use crate::tui::app::App;
use crate::tui::mode::{Overlay, Transition};
use crate::tui::transcript::NoticeLevel;

pub struct Help;
impl SlashCommand for Help {
    fn name(&self) -> &'static str {
        "help"
    }
    fn about(&self) -> &'static str {
        "show commands and keys"
    }
    fn run(&self, app: &mut App, _args: &str) -> Result<(), CommandError> {
        app.modes
            .apply(Transition::Open(Overlay::Help))
            .map_err(|r| CommandError::Failed(r.0.into()))
    }
}

pub struct Quit;
impl SlashCommand for Quit {
    fn name(&self) -> &'static str {
        "quit"
    }
    fn about(&self) -> &'static str {
        "leave pai (the session is already recorded)"
    }
    fn run(&self, app: &mut App, _args: &str) -> Result<(), CommandError> {
        app.quit();
        Ok(())
    }
}

pub struct Clear;
impl SlashCommand for Clear {
    fn name(&self) -> &'static str {
        "clear"
    }
    fn about(&self) -> &'static str {
        "start a new conversation (new session folder; token count resets)"
    }
    fn run(&self, app: &mut App, _args: &str) -> Result<(), CommandError> {
        app.clear_conversation().map_err(CommandError::Failed)?;
        app.flash("new conversation", NoticeLevel::Info);
        Ok(())
    }
}

pub struct Stats;
impl SlashCommand for Stats {
    fn name(&self) -> &'static str {
        "stats"
    }
    fn about(&self) -> &'static str {
        "show session statistics"
    }
    fn run(&self, app: &mut App, _args: &str) -> Result<(), CommandError> {
        let s = &app.session;
        let mut lines = vec![
            "session statistics".to_string(),
            format!(
                "  requests      {} ({} failed, {} cancelled, {} retries)",
                s.requests, s.errors, s.cancelled, s.retries
            ),
            format!("  tokens        {} in / {} out", s.input_tokens, s.output_tokens),
            format!(
                "  conversation  {} tokens since the last /clear",
                app.conversation.session_tokens
            ),
        ];
        let rates: Vec<f64> = app.turns.iter().filter_map(|t| t.stats.tokens_per_sec).collect();
        if !rates.is_empty() {
            lines.push(format!(
                "  speed         {:.1} tok/s on average",
                rates.iter().sum::<f64>() / rates.len() as f64
            ));
        }
        let ttfts: Vec<u64> = app.turns.iter().filter_map(|t| t.stats.ttft_ms).collect();
        if !ttfts.is_empty() {
            lines.push(format!(
                "  first token   {} ms on average",
                ttfts.iter().sum::<u64>() / ttfts.len() as u64
            ));
        }
        if let Some(l) = &app.last_stats {
            lines.push(format!(
                "  last request  {} ms, {} in / {} out{}",
                l.duration_ms,
                l.input_tokens,
                l.output_tokens,
                if l.usage_reported { "" } else { " (estimated)" }
            ));
        }
        if let Some(d) = &app.session_dir {
            lines.push(format!("  records       {}", d.display()));
        }
        app.notice(lines.join("\n"), NoticeLevel::Info);
        Ok(())
    }
}

pub struct Retry;
impl SlashCommand for Retry {
    fn name(&self) -> &'static str {
        "retry"
    }
    fn about(&self) -> &'static str {
        "send the last prompt again (e.g. after an error or /endpoint)"
    }
    fn run(&self, app: &mut App, _args: &str) -> Result<(), CommandError> {
        app.retry().map_err(CommandError::Failed)
    }
}
