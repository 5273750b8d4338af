//! Protocol adapters: one wire protocol in, a stream of [`StreamEvent`]s out.
//!
//! Owns the adapter contract, the wire-neutral request and event types, and the
//! registry that maps a config's `protocol` to an adapter. Adapters never leak
//! wire types upward; retries, timeouts and cancellation live in `transport`.

pub mod anthropic;
mod error;
pub mod json_skim;
pub mod ollama;
pub mod openai;
pub mod openai_completions;
pub mod prompt_template;
pub mod sse;
pub mod think;
pub mod tool_calls;
pub mod transport;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use error::{ProtocolError, TimeoutPhase};

use crate::config::{EndpointConfig, Secrets};
use crate::conversation::{Message, Params, ToolCall};
use crate::stats::Usage;

/// The protocols a config may name; the registry below builds each.
pub const PROTOCOL_NAMES: &[&str] = &["openai", "openai-completions", "anthropic", "ollama"];

/// Build the adapter for an endpoint. Adding a provider = one module + one arm here.
pub fn build_adapter(cfg: &EndpointConfig, secrets: &Secrets) -> Result<Arc<dyn ProtocolAdapter>, ProtocolError> {
    let adapter = protocol_adapter(cfg, secrets)?;
    // An endpoint with `launch` starts its server on first use.
    Ok(match &cfg.launch {
        Some(launch) => {
            let data_dir = directories::ProjectDirs::from("", "", "polyglot")
                .map(|d| d.data_dir().to_path_buf())
                .unwrap_or_else(std::env::temp_dir);
            let launcher = Arc::new(crate::launch::Launcher::new(&cfg.name, launch.clone(), data_dir));
            Arc::new(crate::launch::LaunchingAdapter::new(adapter, launcher))
        }
        None => adapter,
    })
}

fn protocol_adapter(cfg: &EndpointConfig, secrets: &Secrets) -> Result<Arc<dyn ProtocolAdapter>, ProtocolError> {
    match cfg.protocol.as_str() {
        "openai" => Ok(Arc::new(openai::OpenAiChat::new(cfg, secrets))),
        "openai-completions" => Ok(Arc::new(openai_completions::OpenAiCompletions::new(cfg, secrets)?)),
        "anthropic" => Ok(Arc::new(anthropic::AnthropicMessages::new(cfg, secrets))),
        "ollama" => Ok(Arc::new(ollama::OllamaChat::new(cfg, secrets))),
        other => Err(ProtocolError::Unsupported(format!(
            "protocol `{other}` is not supported; use one of: {}",
            PROTOCOL_NAMES.join(", ")
        ))),
    }
}

/// A tool offered to the model (name, description, JSON Schema of its arguments).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// One request to a model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    /// System prompt first, if any.
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub params: Params,
}

/// What an adapter reports while a response streams.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    Text(String),
    Reasoning(String),
    /// A tool call began (its name is known).
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// More argument text for call `index`.
    ToolCallDelta {
        index: usize,
        arguments: String,
    },
    /// A complete tool call, ready to run.
    ToolCall(ToolCall),
    Usage(Usage),
    /// The model stopped: `stop`, `length`, `tool_calls`, `content_filter`, …
    Finished(String),
    /// The request failed before any output and will be tried again after `delay`.
    Retrying {
        attempt: u32,
        delay: Duration,
        reason: String,
    },
    /// Progress worth showing before the answer (a local server starting).
    Notice(String),
}

impl StreamEvent {
    /// Model output (as opposed to bookkeeping): after it, no retries.
    pub fn is_output(&self) -> bool {
        match self {
            StreamEvent::Text(_)
            | StreamEvent::Reasoning(_)
            | StreamEvent::ToolCallStart { .. }
            | StreamEvent::ToolCallDelta { .. }
            | StreamEvent::ToolCall(_) => true,
            StreamEvent::Usage(_)
            | StreamEvent::Finished(_)
            | StreamEvent::Retrying { .. }
            | StreamEvent::Notice(_) => false,
        }
    }
}

pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProtocolError>> + Send>>;

/// A whole response, folded from a stream.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
}

/// One wire protocol, bound to one endpoint.
pub trait ProtocolAdapter: Send + Sync {
    /// The protocol's name as written in config.
    fn protocol(&self) -> &'static str;

    /// Stream a response. Errors after output has started end the stream; the
    /// events before them stand.
    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream;

    /// The models the endpoint offers.
    fn list_models(&self, _cancel: CancellationToken) -> BoxFuture<'static, Result<Vec<String>, ProtocolError>> {
        let p = self.protocol();
        Box::pin(async move {
            Err(ProtocolError::Unsupported(format!(
                "the {p} protocol cannot list models"
            )))
        })
    }

    /// Run a request to the end and return the whole answer.
    fn complete(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Completion, ProtocolError>> {
        let mut s = self.stream(request, cancel);
        Box::pin(async move {
            let mut c = Completion::default();
            while let Some(ev) = s.next().await {
                match ev? {
                    StreamEvent::Text(t) => c.text.push_str(&t),
                    StreamEvent::Reasoning(r) => c.reasoning.push_str(&r),
                    StreamEvent::ToolCall(tc) => c.tool_calls.push(tc),
                    StreamEvent::Usage(u) => c.usage = Some(u),
                    StreamEvent::Finished(f) => c.finish_reason = Some(f),
                    StreamEvent::ToolCallStart { .. }
                    | StreamEvent::ToolCallDelta { .. }
                    | StreamEvent::Retrying { .. }
                    | StreamEvent::Notice(_) => {}
                }
            }
            Ok(c)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_name_builds_its_adapter() {
        for name in PROTOCOL_NAMES {
            let cfg = EndpointConfig::openai("x", "http://127.0.0.1:9").with_protocol(name);
            let a = build_adapter(&cfg, &Secrets::default()).unwrap();
            assert_eq!(a.protocol(), *name);
        }
        let cfg = EndpointConfig::openai("x", "http://127.0.0.1:9").with_protocol("gemini");
        let e = build_adapter(&cfg, &Secrets::default()).err().unwrap();
        assert!(
            e.to_string().contains("openai, openai-completions, anthropic, ollama"),
            "{e}"
        );
    }

    /// Every prefix of recorded bodies, and copies with bytes mangled, decode to
    /// events or a typed error — never a panic.
    #[test]
    fn decoders_never_panic_on_cut_or_mangled_bodies() {
        use transport::WireDecoder;
        type Factory = fn() -> Box<dyn WireDecoder>;
        let cases: [(Factory, &str); 6] = [
            (
                || Box::new(anthropic::MessagesDecoder::new(false)),
                include_str!("../../tests/fixtures/anthropic/thinking_tool_use.sse"),
            ),
            (
                || Box::new(anthropic::MessagesDecoder::new(false)),
                include_str!("../../tests/fixtures/anthropic/aimock_tool_use.sse"),
            ),
            (
                || Box::new(anthropic::MessagesDecoder::new(true)),
                r#"{"content":[{"type":"tool_use","id":"t","name":"n","input":{"a":1}}],"stop_reason":"tool_use"}"#,
            ),
            (
                || Box::new(ollama::ChatLinesDecoder::new()),
                include_str!("../../tests/fixtures/ollama/thinking_tool_call.ndjson"),
            ),
            (
                || Box::new(openai_completions::CompletionsDecoder::new(false)),
                include_str!("../../tests/fixtures/openai-completions/llamacpp_stop.sse"),
            ),
            (
                || Box::new(openai_completions::CompletionsDecoder::new(true)),
                r#"{"choices":[{"text":"<think>a</think>b","finish_reason":"stop"}]}"#,
            ),
        ];
        for (make, body) in cases {
            let body = body.as_bytes();
            let mut variants: Vec<Vec<u8>> = (0..=body.len()).map(|n| body[..n].to_vec()).collect();
            for (i, b) in [b'"', b'{', b'}', b'\n', 0xff, b':', b'0'].into_iter().enumerate() {
                let mut m = body.to_vec();
                for at in (i..m.len()).step_by(7 + i * 3) {
                    m[at] = b;
                }
                variants.push(m);
            }
            for v in variants {
                let mut d = make();
                let mut q = std::collections::VecDeque::new();
                if v.chunks(5).try_for_each(|c| d.feed(c, &mut q)).is_ok() {
                    let _ = d.finish(&mut q);
                }
            }
        }
    }
}
