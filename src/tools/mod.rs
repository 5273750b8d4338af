//! Tools the model may call: the [`Tool`] trait, typed errors, the registry,
//! workspace confinement, approval policy, and the tool families (built-in,
//! custom command lines, MCP servers).
//!
//! Owns running a tool call and turning it into text for the model. It never
//! talks to a terminal: progress goes out through the context's channel.

pub mod approval;
pub mod builtin;
pub mod custom;
pub mod error;
pub mod mcp;
pub mod process;
pub mod registry;
pub mod setup;
pub mod typed;
pub mod workspace;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use approval::{Decision, Policy};
pub use builtin::builtin_tools;
pub use custom::{CustomTool, custom_tools};
pub use error::ToolError;
pub use registry::{ToolInfo, ToolRegistry};
pub use setup::ToolEnv;
pub use typed::{Typed, TypedTool, parse_args, schema_of};
pub use workspace::Workspace;

use crate::protocols::ToolSpec;

/// Where a tool comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSource {
    Builtin,
    Custom,
    Mcp { server: String },
}

impl ToolSource {
    pub fn label(&self) -> String {
        match self {
            ToolSource::Builtin => "built-in".into(),
            ToolSource::Custom => "custom".into(),
            ToolSource::Mcp { server } => format!("mcp:{server}"),
        }
    }
}

/// What a running tool gets besides its arguments.
#[derive(Clone)]
pub struct ToolContext {
    pub workspace: Arc<Workspace>,
    pub cancel: CancellationToken,
    /// Live output (e.g. a shell command's lines) for the UI; best effort.
    pub progress: Option<UnboundedSender<String>>,
    /// Longest a call may run (tools may use a shorter limit of their own).
    pub timeout: Duration,
    /// Most bytes of output returned to the model.
    pub output_limit: usize,
}

impl ToolContext {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        ToolContext {
            workspace,
            cancel: CancellationToken::new(),
            progress: None,
            timeout: Duration::from_secs(120),
            output_limit: 64 * 1024,
        }
    }

    /// Send a line of live output (ignored when nobody listens).
    pub fn report(&self, line: impl Into<String>) {
        if let Some(p) = &self.progress {
            let _ = p.send(line.into());
        }
    }
}

pub type ToolFuture = BoxFuture<'static, Result<String, ToolError>>;

/// A tool with its approval policy.
pub type PolicedTool = (Arc<dyn Tool>, Policy);

/// The tools of each running MCP server.
pub type ServerTools = Vec<(String, Vec<PolicedTool>)>;

/// One tool.
pub trait Tool: Send + Sync {
    /// Name, description and JSON Schema of the arguments.
    fn spec(&self) -> &ToolSpec;
    fn source(&self) -> ToolSource;
    /// Run with already-parsed JSON arguments.
    fn call(&self, args: serde_json::Value, ctx: ToolContext) -> ToolFuture;
}

/// Cut `text` to `limit` bytes (at a char boundary), saying how much was cut.
pub fn cap_output(text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… [{} more bytes not shown]", &text[..end], text.len() - end)
}

/// Run `call` with the context's timeout and cancellation.
pub async fn run_call(
    tool: &Arc<dyn Tool>,
    name: &str,
    args: serde_json::Value,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let timeout = ctx.timeout;
    let cancel = ctx.cancel.clone();
    let limit = ctx.output_limit;
    let fut = tool.call(args, ctx);
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ToolError::Cancelled),
        r = tokio::time::timeout(timeout, fut) => match r {
            Ok(r) => r.map(|out| cap_output(out, limit)),
            Err(_) => Err(ToolError::TimedOut { tool: name.to_string(), after: timeout }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_capped_at_a_char_boundary_with_a_note() {
        assert_eq!(cap_output("short".into(), 10), "short");
        let s = cap_output("ééééé".into(), 5);
        assert!(s.starts_with("éé\n… [6 more bytes not shown]"), "{s}");
    }
}
