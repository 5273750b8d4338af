//! `ProtocolError`: everything that can go wrong talking to a model server, with
//! messages that say what to do next.

use std::time::Duration;

/// Which wait ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    Connect,
    FirstToken,
    Idle,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProtocolError {
    #[error("{}", auth_message(*.status, .env_var.as_deref(), .detail))]
    Auth {
        status: u16,
        env_var: Option<String>,
        detail: String,
    },
    #[error(
        "API key missing: the environment variable {env_var} is not set — export it or add it to .env in the working directory"
    )]
    MissingKey { env_var: String },
    #[error("rate limited (HTTP {status}){}{} — wait and retry, or use another endpoint", .retry_after.map(|d| format!(", retry after {}s", d.as_secs().max(1))).unwrap_or_default(), detail_suffix(.detail))]
    RateLimited {
        status: u16,
        retry_after: Option<Duration>,
        detail: String,
    },
    #[error("the conversation is too long for this model's context window{} — /clear it, or lower max_tokens", detail_suffix(.detail))]
    ContextLength { detail: String },
    #[error("HTTP {status} from {url}{}{}", detail_suffix(.detail), http_hint(*.status))]
    Http { status: u16, url: String, detail: String },
    #[error(
        "cannot connect to {url} ({detail}) — is the server running? Start it, or pick another endpoint with -e / /endpoint"
    )]
    Connect { url: String, detail: String },
    #[error("connection lost mid-answer ({detail}); what arrived was kept")]
    Network { detail: String },
    #[error("the server ended the stream before the answer was complete; what arrived was kept")]
    Truncated,
    #[error("malformed data from the server: {detail} (in: {context})")]
    Decode { detail: String, context: String },
    #[error("the server reported an error mid-stream: {detail}")]
    Server { detail: String },
    #[error("{}", timeout_message(*.phase, *.after))]
    Timeout { phase: TimeoutPhase, after: Duration },
    #[error("cancelled")]
    Cancelled,
    #[error("{0}")]
    Unsupported(String),
    #[error("invalid endpoint settings: {0}")]
    Config(String),
    #[error("{0}")]
    Launch(String),
}

fn detail_suffix(d: &str) -> String {
    if d.is_empty() { String::new() } else { format!(": {d}") }
}

fn http_hint(status: u16) -> &'static str {
    match status {
        404 => " — check the endpoint's base_url and the model name",
        400 | 422 => " — the server rejected the request; check the model name and parameters",
        500..=599 => " — the server failed; try again later",
        _ => "",
    }
}

fn auth_message(status: u16, env_var: Option<&str>, detail: &str) -> String {
    let what = match env_var {
        Some(v) => format!("check the key in {v} (environment or .env)"),
        None => {
            "set api_key_env = \"NAME\" for this endpoint in polyglot.toml and put the key in that environment variable"
                .to_string()
        }
    };
    format!(
        "the server refused the credentials (HTTP {status}){} — {what}",
        detail_suffix(detail)
    )
}

fn timeout_message(phase: TimeoutPhase, after: Duration) -> String {
    let s = after.as_secs_f64();
    match phase {
        TimeoutPhase::Connect => {
            format!("could not connect within {s}s — check the address, or raise connect_timeout_s for this endpoint")
        }
        TimeoutPhase::FirstToken => format!(
            "no answer started within {s}s — the server may be busy; raise first_token_timeout_s for this endpoint"
        ),
        TimeoutPhase::Idle => format!(
            "the stream stalled for {s}s; what arrived was kept — raise idle_timeout_s if the server is just slow"
        ),
    }
}

impl ProtocolError {
    /// Worth retrying (only ever before the first token).
    pub fn is_retryable(&self) -> bool {
        match self {
            ProtocolError::RateLimited { .. }
            | ProtocolError::Connect { .. }
            | ProtocolError::Network { .. }
            | ProtocolError::Truncated => true,
            ProtocolError::Timeout { phase, .. } => *phase == TimeoutPhase::Connect,
            ProtocolError::Http { status, .. } => *status >= 500,
            ProtocolError::Auth { .. }
            | ProtocolError::MissingKey { .. }
            | ProtocolError::ContextLength { .. }
            | ProtocolError::Decode { .. }
            | ProtocolError::Server { .. }
            | ProtocolError::Cancelled
            | ProtocolError::Unsupported(_)
            | ProtocolError::Config(_)
            | ProtocolError::Launch(_) => false,
        }
    }

    /// A server-requested wait before retrying.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProtocolError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub fn is_cancelled(&self) -> bool {
        matches!(self, ProtocolError::Cancelled)
    }

    /// Short label for status bars and retry notices.
    pub fn short(&self) -> String {
        match self {
            ProtocolError::Auth { status, .. } => format!("auth error {status}"),
            ProtocolError::MissingKey { env_var } => format!("{env_var} not set"),
            ProtocolError::RateLimited { status, .. } => format!("rate limited ({status})"),
            ProtocolError::ContextLength { .. } => "context too long".into(),
            ProtocolError::Http { status, .. } => format!("HTTP {status}"),
            ProtocolError::Connect { .. } => "connection failed".into(),
            ProtocolError::Network { .. } => "connection lost".into(),
            ProtocolError::Truncated => "stream cut".into(),
            ProtocolError::Decode { .. } => "malformed data".into(),
            ProtocolError::Server { .. } => "server error".into(),
            ProtocolError::Timeout { phase, .. } => match phase {
                TimeoutPhase::Connect => "connect timeout".into(),
                TimeoutPhase::FirstToken => "first-token timeout".into(),
                TimeoutPhase::Idle => "stalled".into(),
            },
            ProtocolError::Cancelled => "cancelled".into(),
            ProtocolError::Unsupported(_) => "unsupported".into(),
            ProtocolError::Config(_) => "bad settings".into(),
            ProtocolError::Launch(_) => "local server failed".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        let e = ProtocolError::Auth {
            status: 401,
            env_var: Some("OPENAI_API_KEY".into()),
            detail: "Incorrect API key".into(),
        };
        assert!(e.to_string().contains("OPENAI_API_KEY"), "{e}");
        let e = ProtocolError::Connect {
            url: "http://x".into(),
            detail: "refused".into(),
        };
        assert!(e.to_string().contains("is the server running"));
        assert!(e.is_retryable());
        assert!(!ProtocolError::Cancelled.is_retryable());
        let e = ProtocolError::Http {
            status: 503,
            url: "u".into(),
            detail: String::new(),
        };
        assert!(e.is_retryable());
    }
}
