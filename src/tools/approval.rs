//! Approval of tool calls: the policy per tool (`auto` / `ask` / `deny`), the
//! user's decision (approve once, for the session, edit = a correction,
//! reject with a reason), and the approvals already given this session.

use std::collections::HashSet;

pub use crate::config::Policy;

/// The user's answer to an `ask`.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Approve,
    /// Approve this tool for the rest of the session.
    ApproveForSession,
    /// Run with these arguments instead (a correction; both are logged).
    Edit(serde_json::Value),
    /// Do not run; the reason goes back to the model.
    Reject(Option<String>),
    /// Nobody can be asked (headless without `--yes`): not run, with this explanation.
    Deny(String),
}

/// Tools approved "for this session".
#[derive(Debug, Default, Clone)]
pub struct SessionApprovals {
    tools: HashSet<String>,
}

impl SessionApprovals {
    pub fn allow(&mut self, tool: &str) {
        self.tools.insert(tool.to_string());
    }

    pub fn allowed(&self, tool: &str) -> bool {
        self.tools.contains(tool)
    }
}
