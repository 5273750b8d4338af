//! Tool commands: /agent, /tools, /mcp.

use super::{CommandError, SlashCommand, parse_switch};
use crate::tui::app::{App, McpAction};
use crate::tui::mode::{Transition, UiMode};
use crate::tui::transcript::NoticeLevel;

pub struct Agent;
impl SlashCommand for Agent {
    fn name(&self) -> &'static str {
        "agent"
    }
    fn args(&self) -> &'static str {
        "[on|off]"
    }
    fn about(&self) -> &'static str {
        "agent mode: the model may call tools in a loop (with your approval where configured)"
    }
    fn complete(&self, _app: &App, _partial: &str) -> Vec<String> {
        vec!["on".into(), "off".into()]
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        let on = if args.is_empty() {
            app.modes.mode() != UiMode::Agent
        } else {
            parse_switch(args).ok_or_else(|| CommandError::Usage(format!("`{args}` is not on or off")))?
        };
        let mode = if on { UiMode::Agent } else { UiMode::Chat };
        app.modes
            .apply(Transition::SwitchMode(mode))
            .map_err(|r| CommandError::Failed(r.0.into()))?;
        if on {
            let n = app.registry.len();
            app.flash(format!("agent mode on: {n} tools available (/tools lists them; @server in a prompt limits them to one MCP server)"), NoticeLevel::Info);
        } else {
            app.flash("agent mode off: plain chat", NoticeLevel::Info);
        }
        Ok(())
    }
}

pub struct Tools;
impl SlashCommand for Tools {
    fn name(&self) -> &'static str {
        "tools"
    }
    fn about(&self) -> &'static str {
        "list the tools the agent can use, with their approval policy"
    }
    fn run(&self, app: &mut App, _args: &str) -> Result<(), CommandError> {
        let listing = app.tools_listing();
        app.notice(listing, NoticeLevel::Info);
        Ok(())
    }
}

pub struct Mcp;
impl SlashCommand for Mcp {
    fn name(&self) -> &'static str {
        "mcp"
    }
    fn args(&self) -> &'static str {
        "[list|enable|disable|restart NAME]"
    }
    fn about(&self) -> &'static str {
        "MCP servers: status, start, stop, restart"
    }
    fn complete(&self, app: &App, partial: &str) -> Vec<String> {
        match partial.split_once(' ') {
            None => ["list", "enable", "disable", "restart"].map(String::from).to_vec(),
            Some((verb, _)) => app.mcp_status.iter().map(|(n, _)| format!("{verb} {n}")).collect(),
        }
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        let (verb, name) = args
            .split_once(char::is_whitespace)
            .map_or((args, ""), |(v, n)| (v, n.trim()));
        if matches!(verb, "" | "list") {
            let listing = app.mcp_listing();
            app.notice(listing, NoticeLevel::Info);
            return Ok(());
        }
        if name.is_empty() {
            return Err(CommandError::Usage("name a server".into()));
        }
        if !app.mcp_status.iter().any(|(n, _)| n == name) {
            let names: Vec<&str> = app.mcp_status.iter().map(|(n, _)| n.as_str()).collect();
            return Err(CommandError::Failed(format!(
                "no MCP server `{name}` (configured: {})",
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            )));
        }
        let action = match verb {
            "enable" | "start" => McpAction::Enable(name.into()),
            "disable" | "stop" => McpAction::Disable(name.into()),
            "restart" => McpAction::Restart(name.into()),
            other => return Err(CommandError::Usage(format!("unknown action `{other}`"))),
        };
        app.flash(format!("MCP server {name}: {verb}…"), NoticeLevel::Info);
        app.mcp_action(action);
        Ok(())
    }
}
