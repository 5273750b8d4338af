//! Tools in the TUI: the tool environment (workspace, built-in and custom
//! tools, MCP servers), the registry the agent gets, and the tool and
//! approval events of an agent run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{App, Effect};
use crate::conversation::{Approval, ToolRun};
use crate::orchestration::TurnRef;
use crate::orchestration::agent::ApprovalRequest;
use crate::tools::approval::SessionApprovals;
use crate::tools::mcp::McpStatus;
use crate::tools::{ServerTools, ToolEnv, ToolRegistry, Workspace};
use crate::tui::approval::ApprovalUi;
use crate::tui::mode::Transition;
use crate::tui::transcript::{EntryKind, NoticeLevel, ToolBlock};

/// What an agent run needs from the app; the runner adds the approver.
#[derive(Clone)]
pub struct AgentPlan {
    pub registry: Arc<ToolRegistry>,
    pub workspace: Arc<Workspace>,
    pub approvals: Arc<Mutex<SessionApprovals>>,
    pub max_steps: u32,
    pub tool_timeout: Duration,
    pub output_limit: usize,
    pub only_server: Option<String>,
}

impl std::fmt::Debug for AgentPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentPlan")
            .field("tools", &self.registry.len())
            .field("only_server", &self.only_server)
            .finish_non_exhaustive()
    }
}

/// What `/mcp` asks the runner to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpAction {
    Enable(String),
    Disable(String),
    Restart(String),
}

impl App {
    /// Install the tool environment (the runner does it at start-up).
    pub fn set_tool_env(&mut self, env: ToolEnv) {
        self.tool_env = Some(env);
        self.rebuild_registry();
    }

    /// MCP servers changed: new statuses and the tools of those running.
    pub fn set_mcp(&mut self, statuses: Vec<(String, McpStatus)>, tools: ServerTools) {
        for (name, status) in &statuses {
            if let McpStatus::Failed(e) = status {
                self.flash(format!("MCP server {name}: {e}"), NoticeLevel::Warning);
            }
        }
        self.mcp_status = statuses;
        self.mcp_tools = tools;
        self.rebuild_registry();
    }

    fn rebuild_registry(&mut self) {
        self.registry = Arc::new(match &self.tool_env {
            Some(env) => env.registry(&self.mcp_tools),
            None => ToolRegistry::new(),
        });
    }

    /// The plan for an agent run of `prompt` (`@server` limits the tools).
    pub(super) fn agent_plan(&self, prompt: &str) -> Result<AgentPlan, String> {
        let env = self
            .tool_env
            .as_ref()
            .ok_or("tools are not available in this session (no workspace)")?;
        let only_server = prompt
            .split_whitespace()
            .filter_map(|w| w.strip_prefix('@'))
            .map(|w| w.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '_'))
            .find(|w| self.mcp_status.iter().any(|(n, _)| n == w))
            .map(str::to_string);
        if let Some(s) = &only_server
            && !self.mcp_tools.iter().any(|(n, _)| n == s)
        {
            return Err(format!(
                "MCP server `{s}` is not running — /mcp list shows why, /mcp restart {s} starts it"
            ));
        }
        Ok(AgentPlan {
            registry: self.registry.clone(),
            workspace: env.workspace.clone(),
            approvals: self.approvals.clone(),
            max_steps: env.max_steps,
            tool_timeout: env.tool_timeout,
            output_limit: env.output_limit,
            only_server,
        })
    }

    pub(super) fn on_approval_needed(&mut self, turn: TurnRef, request: ApprovalRequest) {
        if self.live.as_ref().is_none_or(|l| l.cancelling) {
            return;
        }
        self.approval = Some(ApprovalUi::new(turn, request));
        let _ = self.modes.apply(Transition::ApprovalNeeded);
    }

    pub(super) fn on_tool_started(
        &mut self,
        turn: TurnRef,
        call_id: String,
        tool: String,
        arguments: serde_json::Value,
        approval: Approval,
    ) {
        let _ = self.modes.apply(Transition::ToolRunning);
        self.transcript.push(EntryKind::Tool(Box::new(ToolBlock {
            turn,
            call_id,
            tool,
            arguments,
            approval,
            output: String::new(),
            done: None,
            original: None,
        })));
    }

    pub(super) fn on_tool_output(&mut self, turn: TurnRef, call_id: &str, chunk: &str) {
        if let Some(e) = self.transcript.tool_mut(turn, call_id) {
            if let EntryKind::Tool(b) = &mut e.kind {
                b.output.push_str(chunk);
                if !chunk.ends_with('\n') {
                    b.output.push('\n');
                }
                // Keep the tail: the block shows the last lines only.
                if b.output.len() > 64 * 1024 {
                    let cut = b.output.len() - 32 * 1024;
                    let cut = (cut..b.output.len())
                        .find(|i| b.output.is_char_boundary(*i))
                        .unwrap_or(cut);
                    b.output.drain(..cut);
                }
            }
            e.touch();
        }
    }

    pub(super) fn on_tool_finished(&mut self, turn: TurnRef, run: ToolRun) {
        let done = Some((!run.is_error, run.result.clone(), run.duration_ms));
        match self.transcript.tool_mut(turn, &run.call_id) {
            Some(e) => {
                if let EntryKind::Tool(b) = &mut e.kind {
                    b.done = done;
                    b.approval = run.approval;
                    b.original = run.original_arguments.clone();
                    b.arguments = run.arguments.clone();
                }
                e.touch();
            }
            None => {
                // Not run (denied, rejected, unknown tool, bad arguments): one block.
                self.transcript.push(EntryKind::Tool(Box::new(ToolBlock {
                    turn,
                    call_id: run.call_id,
                    tool: run.tool,
                    arguments: run.arguments,
                    approval: run.approval,
                    output: String::new(),
                    done,
                    original: run.original_arguments,
                })));
            }
        }
    }

    /// `/tools`: every tool with its source and policy.
    pub fn tools_listing(&self) -> String {
        let list = self.registry.list();
        if list.is_empty() {
            return "no tools are available (tools.builtin = false and no custom or MCP tools)".into();
        }
        let w = list.iter().map(|t| t.name.chars().count()).max().unwrap_or(8);
        let mut s = format!(
            "{} tools (policy: auto runs, ask asks you, deny never runs)\n",
            list.len()
        );
        for t in list {
            let desc: String = t.description.lines().next().unwrap_or("").chars().take(70).collect();
            s.push_str(&format!(
                "  {:<w$}  {:<4}  {:<10}  {desc}\n",
                t.name,
                t.policy.as_str(),
                t.source.label()
            ));
        }
        s
    }

    /// `/mcp list`.
    pub fn mcp_listing(&self) -> String {
        if self.mcp_status.is_empty() {
            return "no MCP servers are configured — add [mcp.NAME] with command (stdio) or url (HTTP) to polyglot.toml".into();
        }
        let mut s = String::from("MCP servers\n");
        for (name, status) in &self.mcp_status {
            s.push_str(&format!("  {name:<16} {}\n", status.label()));
        }
        s
    }

    /// Ask the runner to change an MCP server.
    pub fn mcp_action(&mut self, action: McpAction) {
        self.effects.push(Effect::Mcp(action));
    }
}
