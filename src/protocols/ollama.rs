//! Ollama's native chat API (`POST {base_url}/api/chat`): the request shape
//! (`options` for temperature, length and stop; tools in OpenAI function shape;
//! tool calls with object arguments; tool results as `role: tool`), the NDJSON
//! stream (content, thinking, whole tool calls, `done` with counts, `error`
//! lines), and model listing (`GET /api/tags`). Transport is the shared one.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::sse::NdjsonDecoder;
use super::think::ThinkSplitter;
use super::tool_calls::ToolCallAssembler;
use super::transport::{Auth, HttpEndpoint, WireDecoder, decode_error, push_reasoning};
use super::{ChatRequest, EventStream, ProtocolAdapter, ProtocolError, StreamEvent};
use crate::config::{EndpointConfig, Secrets};
use crate::conversation::{Message, Role};
use crate::stats::Usage;

pub struct OllamaChat {
    http: HttpEndpoint,
    /// `api/` unless the base URL already ends in `/api`.
    prefix: &'static str,
    stop: Vec<String>,
}

impl OllamaChat {
    pub fn new(cfg: &EndpointConfig, secrets: &Secrets) -> Self {
        OllamaChat {
            // Ollama itself needs no key; a proxy in front of it may want a bearer token.
            http: HttpEndpoint::new(cfg, secrets, Auth::Bearer, &[]),
            prefix: if cfg.base_url.ends_with("/api") { "" } else { "api/" },
            stop: cfg.stop.clone(),
        }
    }
}

/// Messages in Ollama's shape. Tool call arguments are objects; a tool result
/// names its tool (`tool_name`) when the call it answers is in the conversation.
pub fn wire_messages(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => json!({
                "role": "assistant",
                "content": m.content,
                "tool_calls": m.tool_calls.iter().map(|c| json!({
                    "function": {
                        "name": c.name,
                        "arguments": match serde_json::from_str::<Value>(&c.arguments) {
                            Ok(v @ Value::Object(_)) => v,
                            _ => json!({}),
                        },
                    },
                })).collect::<Vec<_>>(),
            }),
            Role::Tool => {
                // The nearest earlier call with that id: Ollama's ids repeat across turns.
                let name = m.tool_call_id.as_deref().and_then(|id| {
                    messages[..i]
                        .iter()
                        .rev()
                        .flat_map(|p| &p.tool_calls)
                        .find(|c| c.id == id)
                        .map(|c| c.name.as_str())
                });
                let mut v = json!({"role": "tool", "content": m.content});
                if let Some(n) = name {
                    v["tool_name"] = json!(n);
                }
                v
            }
            Role::System | Role::User | Role::Assistant => json!({"role": m.role.as_str(), "content": m.content}),
        })
        .collect()
}

/// The request body.
pub fn request_body(req: &ChatRequest, stop: &[String]) -> Value {
    let mut body = json!({
        "model": req.model,
        "messages": wire_messages(&req.messages),
        "stream": true,
    });
    let mut options = serde_json::Map::new();
    if let Some(t) = req.params.temperature {
        options.insert("temperature".into(), json!(t));
    }
    if let Some(m) = req.params.max_tokens {
        options.insert("num_predict".into(), json!(m));
    }
    if !stop.is_empty() {
        options.insert("stop".into(), json!(stop));
    }
    if !options.is_empty() {
        body["options"] = Value::Object(options);
    }
    if let Some(schema) = &req.params.response_schema {
        body["format"] = schema.clone();
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
    }
    body
}

impl ProtocolAdapter for OllamaChat {
    fn protocol(&self) -> &'static str {
        "ollama"
    }

    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream {
        let body = serde_json::to_vec(&request_body(&request, &self.stop)).unwrap_or_default();
        self.http.stream_post(
            &format!("{}chat", self.prefix),
            body,
            Arc::new(|_ct: &str| -> Box<dyn WireDecoder> { Box::new(ChatLinesDecoder::new()) }),
            cancel,
        )
    }

    fn list_models(&self, cancel: CancellationToken) -> BoxFuture<'static, Result<Vec<String>, ProtocolError>> {
        let http = self.http.clone();
        let path = format!("{}tags", self.prefix);
        Box::pin(async move {
            let v = http.get_json(&path, cancel).await?;
            let mut names: Vec<String> = v["models"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|m| m["name"].as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            Ok(names)
        })
    }
}

#[derive(Deserialize)]
struct WireFunction<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireToolCall<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: WireFunction<'a>,
}

#[derive(Deserialize)]
struct WireMessage<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<WireToolCall<'a>>>,
}

/// One NDJSON line.
#[derive(Deserialize)]
struct WireLine<'a> {
    #[serde(default, borrow)]
    message: Option<WireMessage<'a>>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

struct LineState {
    think: ThinkSplitter,
    tools: ToolCallAssembler,
    done: bool,
}

impl LineState {
    fn line(&mut self, data: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        if self.done {
            return Ok(());
        }
        let l: WireLine<'_> = serde_json::from_slice(data).map_err(|e| decode_error(data, e))?;
        if let Some(e) = l.error.filter(|e| !e.is_null()) {
            let detail = match e {
                Value::String(s) => s,
                other => other
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| other.to_string()),
            };
            return Err(ProtocolError::Server { detail });
        }
        if let Some(m) = l.message {
            if let Some(t) = m.thinking.as_deref() {
                push_reasoning(out, t);
            }
            if let Some(c) = m.content.as_deref() {
                self.think.push_into(c, out);
            }
            for tc in m.tool_calls.into_iter().flatten() {
                let name = tc.function.name.as_deref().unwrap_or("");
                let args = match &tc.function.arguments {
                    None | Some(Value::Null) => "{}".to_string(),
                    // Some servers send the arguments as JSON text, as OpenAI does.
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                };
                self.tools.whole(tc.id.as_deref(), name, &args, out);
            }
        }
        if l.done {
            self.done = true;
            self.think.finish_into(out);
            let had_tools = !self.tools.is_empty();
            self.tools.finish(out);
            let (i, o) = (l.prompt_eval_count.unwrap_or(0), l.eval_count.unwrap_or(0));
            if i > 0 || o > 0 {
                out.push_back(StreamEvent::Usage(Usage {
                    input_tokens: i,
                    output_tokens: o,
                }));
            }
            // Ollama says `stop` after tool calls, too.
            let reason = match l.done_reason.as_deref() {
                _ if had_tools => "tool_calls".to_string(),
                Some("stop" | "") | None => "stop".into(),
                Some(other) => other.to_string(),
            };
            out.push_back(StreamEvent::Finished(reason));
        }
        Ok(())
    }
}

/// Decodes one `/api/chat` response: NDJSON, or one JSON object when not streamed.
pub struct ChatLinesDecoder {
    ndjson: NdjsonDecoder,
    state: LineState,
}

impl ChatLinesDecoder {
    pub fn new() -> Self {
        ChatLinesDecoder {
            ndjson: NdjsonDecoder::new(),
            state: LineState {
                think: ThinkSplitter::new(),
                tools: ToolCallAssembler::new(),
                done: false,
            },
        }
    }
}

impl Default for ChatLinesDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl WireDecoder for ChatLinesDecoder {
    fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        let state = &mut self.state;
        self.ndjson.feed(chunk, |line| state.line(line, out))
    }

    fn finish(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        let state = &mut self.state;
        self.ndjson.finish(|line| state.line(line, out))?;
        if self.state.done {
            Ok(())
        } else {
            self.state.think.finish_into(out);
            Err(ProtocolError::Truncated)
        }
    }

    fn is_done(&self) -> bool {
        self.state.done
    }
}

#[cfg(test)]
mod tests;
