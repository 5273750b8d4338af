//! The domain model: messages, tool calls, turns and conversations.
//!
//! Owns the shapes every layer agrees on. It knows nothing about wire formats
//! (adapters translate), terminals (front ends render) or files (records write).

use serde::{Deserialize, Serialize};

use crate::stats::RequestStats;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// A complete tool call requested by a model. `arguments` is the raw JSON text
/// the model produced (it may be invalid JSON; the tool layer validates it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Speaker's display name (arena participants); adapters may prefix it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Reasoning the model showed before answering (kept for records, not resent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Tool calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            name: None,
            reasoning: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, content)
        }
    }
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnStatus {
    Completed,
    Cancelled,
    Failed,
}

/// Which interaction mode produced a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnMode {
    Chat,
    Agent,
    Arena,
    Compare,
    Judge,
}

impl TurnMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnMode::Chat => "chat",
            TurnMode::Agent => "agent",
            TurnMode::Arena => "arena",
            TurnMode::Compare => "compare",
            TurnMode::Judge => "judge",
        }
    }
}

/// Generation parameters sent with a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Params {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// OpenAI-compatible `tool_choice` (`auto`, `required`, `none`); with
    /// `required`, one call at a time (`parallel_tool_calls: false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<String>,
    /// Ask for a JSON answer matching this schema where the protocol can
    /// enforce it (OpenAI `response_format`, Ollama `format`); others rely on
    /// the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<serde_json::Value>,
}

/// What was sent to the model for one turn (never contains secrets).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnRequest {
    pub messages: Vec<Message>,
    pub params: Params,
}

/// What came back for one turn: whatever arrived, even when it failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnResponse {
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub error: Option<String>,
}

/// How a tool call came to run (or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Policy `auto`.
    Auto,
    /// The user approved this call.
    Approved,
    /// Approved earlier "for this session".
    ApprovedForSession,
    /// The user corrected the arguments, then it ran.
    Edited,
    /// The user said no (the reason went to the model).
    Rejected,
    /// Policy `deny`, or `ask` without anyone to ask.
    Denied,
}

/// One tool call as it was handled: arguments, approval, result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRun {
    pub call_id: String,
    /// Registry name (`read_file`, `server.tool`).
    pub tool: String,
    /// The arguments as run (after a correction).
    pub arguments: serde_json::Value,
    /// The model's original arguments when the user corrected them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_arguments: Option<serde_json::Value>,
    pub approval: Approval,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the model was sent back.
    pub result: String,
    pub is_error: bool,
    pub duration_ms: u64,
}

/// One request/response exchange with one model, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub turn_id: u32,
    /// RFC 3339 UTC timestamp.
    pub started_at: String,
    pub endpoint: String,
    pub model: String,
    pub participant_name: Option<String>,
    pub mode: TurnMode,
    /// The lane the turn ran in: an arena seat or a compare pane (absent for
    /// chat, agent and judge turns, which have one lane).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<u8>,
    pub status: TurnStatus,
    pub request: TurnRequest,
    pub response: TurnResponse,
    pub stats: RequestStats,
    /// Tools this turn's calls ran (agent mode), with approvals and corrections.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_runs: Vec<ToolRun>,
    /// Judge turns: the ruling read from this answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ruling: Option<Box<crate::verdict::Ruling>>,
    /// The last judge turn: the verdict over all orders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Box<crate::verdict::Verdict>>,
    /// Compare turns: how the user judged this answer against the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pick: Option<PickMark>,
}

/// The user's verdict on one compare answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PickMark {
    Chosen,
    Rejected,
    Tie,
    BothBad,
}

impl PickMark {
    pub fn label(self) -> &'static str {
        match self {
            PickMark::Chosen => "✓ chosen",
            PickMark::Rejected => "✗ not chosen",
            PickMark::Tie => "= tie",
            PickMark::BothBad => "✗ both bad",
        }
    }
}

impl Turn {
    /// The assistant message this turn adds to a conversation.
    pub fn assistant_message(&self) -> Message {
        let mut m = Message::assistant(self.response.text.clone());
        m.tool_calls = self.response.tool_calls.clone();
        if !self.response.reasoning.is_empty() {
            m.reasoning = Some(self.response.reasoning.clone());
        }
        if let Some(p) = &self.participant_name {
            m.name = Some(p.clone());
        }
        m
    }
}

/// The running conversation: system prompt plus messages since the last clear.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    pub system: Option<String>,
    pub messages: Vec<Message>,
    /// Tokens (in + out) spent since the last `/clear`.
    pub session_tokens: u64,
}

impl Conversation {
    pub fn new(system: Option<String>) -> Self {
        Conversation {
            system,
            ..Default::default()
        }
    }

    /// The messages to send for the next request: system prompt first.
    pub fn request_messages(&self) -> Vec<Message> {
        let mut out = Vec::with_capacity(self.messages.len() + 1);
        if let Some(s) = self.system.as_deref().filter(|s| !s.trim().is_empty()) {
            out.push(Message::system(s));
        }
        out.extend(self.messages.iter().cloned());
        out
    }

    pub fn push(&mut self, m: Message) {
        self.messages.push(m);
    }

    /// Forget the messages and the token count; keep the system prompt.
    pub fn clear(&mut self) {
        self.messages.clear();
        self.session_tokens = 0;
    }

    /// The last assistant answer, if any.
    pub fn last_answer(&self) -> Option<&Message> {
        self.messages.iter().rev().find(|m| m.role == Role::Assistant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_messages_put_system_first_and_skip_blank_system() {
        let mut c = Conversation::new(Some("be brief".into()));
        c.push(Message::user("hi"));
        let m = c.request_messages();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].role, Role::System);
        assert_eq!(m[1].content, "hi");
        let c2 = Conversation::new(Some("  ".into()));
        assert!(c2.request_messages().is_empty());
    }

    #[test]
    fn clear_keeps_system_and_resets_tokens() {
        let mut c = Conversation::new(Some("s".into()));
        c.push(Message::user("a"));
        c.session_tokens = 42;
        c.clear();
        assert!(c.messages.is_empty());
        assert_eq!(c.session_tokens, 0);
        assert_eq!(c.system.as_deref(), Some("s"));
    }

    #[test]
    fn message_json_omits_empty_optional_fields() {
        let j = serde_json::to_value(Message::user("x")).unwrap();
        assert_eq!(j, serde_json::json!({"role": "user", "content": "x"}));
    }
}
