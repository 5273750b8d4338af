//! `ToolError`: what can go wrong with a tool call. Most errors go back to
//! the model as the tool's result so it can correct itself; only a cancel
//! ends the turn.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    #[error("there is no tool named `{name}`{}", .suggestion.as_ref().map(|s| format!(" — did you mean `{s}`?")).unwrap_or_default())]
    NotFound { name: String, suggestion: Option<String> },
    #[error("invalid arguments for `{tool}`: {field}: {reason}")]
    InvalidArguments {
        tool: String,
        field: String,
        reason: String,
    },
    #[error("the user denied `{tool}`{}", .reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default())]
    Denied { tool: String, reason: Option<String> },
    #[error("`{tool}` failed: {message}")]
    Failed { tool: String, message: String },
    #[error("`{tool}` timed out after {}s", .after.as_secs_f64())]
    TimedOut { tool: String, after: Duration },
    #[error("cancelled")]
    Cancelled,
}

impl ToolError {
    /// Ends the whole turn (instead of being reported to the model).
    pub fn is_fatal(&self) -> bool {
        match self {
            ToolError::Cancelled => true,
            ToolError::NotFound { .. }
            | ToolError::InvalidArguments { .. }
            | ToolError::Denied { .. }
            | ToolError::Failed { .. }
            | ToolError::TimedOut { .. } => false,
        }
    }

    /// What the model reads as the tool's result.
    pub fn for_model(&self) -> String {
        format!("error: {self}")
    }

    pub fn failed(tool: &str, message: impl Into<String>) -> Self {
        ToolError::Failed {
            tool: tool.to_string(),
            message: message.into(),
        }
    }

    pub fn invalid(tool: &str, field: impl Into<String>, reason: impl Into<String>) -> Self {
        ToolError::InvalidArguments {
            tool: tool.to_string(),
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// Short label for the UI.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolError::NotFound { .. } => "not found",
            ToolError::InvalidArguments { .. } => "invalid arguments",
            ToolError::Denied { .. } => "denied",
            ToolError::Failed { .. } => "failed",
            ToolError::TimedOut { .. } => "timed out",
            ToolError::Cancelled => "cancelled",
        }
    }
}
