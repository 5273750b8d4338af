//! Slash commands: each command is its own type implementing [`SlashCommand`];
//! [`Registry::builtin`] is the one place they are listed. `/help`, Tab
//! completion and "did you mean" are all generated from the registry.

mod arena;
mod history;
mod output;
mod session;
mod settings;
mod tools;

use super::app::App;
use super::transcript::NoticeLevel;
use crate::util::suggest::closest;

/// Why a command did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandError {
    /// Bad arguments: the detail is shown after the usage line.
    Usage(String),
    /// Valid, but it could not be done now.
    Failed(String),
}

/// One slash command.
pub trait SlashCommand: Send + Sync {
    /// Name without the slash.
    fn name(&self) -> &'static str;
    /// Argument synopsis, e.g. `[on|off]`.
    fn args(&self) -> &'static str {
        ""
    }
    /// One line for /help.
    fn about(&self) -> &'static str;
    /// Candidates for the argument being typed.
    fn complete(&self, _app: &App, _partial: &str) -> Vec<String> {
        Vec::new()
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError>;

    fn usage(&self) -> String {
        if self.args().is_empty() {
            format!("/{}", self.name())
        } else {
            format!("/{} {}", self.name(), self.args())
        }
    }
}

/// All commands, in /help order.
pub struct Registry {
    commands: Vec<Box<dyn SlashCommand>>,
}

impl Registry {
    pub fn builtin() -> Self {
        let commands: Vec<Box<dyn SlashCommand>> = vec![
            Box::new(session::Help),
            Box::new(session::Quit),
            Box::new(session::Clear),
            Box::new(settings::Endpoint),
            Box::new(settings::Model),
            Box::new(settings::Models),
            Box::new(settings::System),
            Box::new(settings::Temp),
            Box::new(settings::MaxTokens),
            Box::new(settings::Smooth),
            Box::new(session::Stats),
            Box::new(session::Retry),
            Box::new(output::Copy),
            Box::new(output::Export),
            Box::new(tools::Agent),
            Box::new(tools::Tools),
            Box::new(tools::Mcp),
            Box::new(arena::Arena),
            Box::new(arena::Pause),
            Box::new(arena::Resume),
            Box::new(arena::Stop),
            Box::new(arena::Judge),
            Box::new(arena::Compare),
            Box::new(history::History),
            Box::new(history::Search),
        ];
        Registry { commands }
    }

    pub fn all(&self) -> impl Iterator<Item = &dyn SlashCommand> {
        self.commands.iter().map(AsRef::as_ref)
    }

    pub fn find(&self, name: &str) -> Option<&dyn SlashCommand> {
        self.all().find(|c| c.name() == name)
    }

    /// Run `/name args…`, reporting problems as one line.
    pub fn dispatch(&self, app: &mut App, line: &str) {
        let body = line.trim().trim_start_matches('/');
        let (name, args) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        let Some(cmd) = self.find(name) else {
            let hint = closest(name, self.all().map(SlashCommand::name))
                .map(|c| format!(" — did you mean /{c}?"))
                .unwrap_or_else(|| " — /help lists the commands".into());
            app.flash(format!("unknown command /{name}{hint}"), NoticeLevel::Warning);
            return;
        };
        match cmd.run(app, args.trim()) {
            Ok(()) => {}
            Err(CommandError::Usage(detail)) => {
                let sep = if detail.is_empty() { "" } else { " — " };
                app.flash(format!("usage: {}{sep}{detail}", cmd.usage()), NoticeLevel::Warning);
            }
            Err(CommandError::Failed(e)) => app.flash(e, NoticeLevel::Warning),
        }
    }

    /// Completions for a partly typed command line, as whole lines.
    pub fn complete(&self, app: &App, line: &str) -> Vec<String> {
        let Some(body) = line.strip_prefix('/') else {
            return Vec::new();
        };
        match body.split_once(' ') {
            None => self
                .all()
                .filter(|c| c.name().starts_with(body))
                .map(|c| format!("/{}", c.name()))
                .collect(),
            Some((name, partial)) => {
                let Some(cmd) = self.find(name) else { return Vec::new() };
                let partial = partial.trim_start();
                let mut v: Vec<String> = cmd
                    .complete(app, partial)
                    .into_iter()
                    .filter(|c| c.starts_with(partial))
                    .map(|c| format!("/{name} {c}"))
                    .collect();
                v.dedup();
                v
            }
        }
    }
}

/// `on`/`off` (and friends) → bool.
pub(crate) fn parse_switch(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Some(true),
        "off" | "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
