//! OpenAI chat completions (`POST {base_url}/chat/completions`): SSE streaming
//! with usage, reasoning (`reasoning_content` / `reasoning` fields and `<think>`
//! tags), streamed tool calls, finish reasons, and a non-streaming fallback when
//! a server answers with plain JSON. Covers every OpenAI-compatible server.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::sse::SseDecoder;
use super::think::ThinkSplitter;
use super::tool_calls::ToolCallAssembler;
use super::transport::{Auth, HttpEndpoint, WireDecoder};
use super::{ChatRequest, EventStream, ProtocolAdapter, ProtocolError, StreamEvent};
use crate::config::{EndpointConfig, Secrets};
use crate::conversation::{Message, Role};
use crate::stats::Usage;

pub struct OpenAiChat {
    http: HttpEndpoint,
}

impl OpenAiChat {
    pub fn new(cfg: &EndpointConfig, secrets: &Secrets) -> Self {
        OpenAiChat {
            http: HttpEndpoint::new(cfg, secrets, Auth::Bearer, &[]),
        }
    }
}

/// One message in OpenAI's shape.
pub fn wire_message(m: &Message) -> Value {
    match m.role {
        Role::Assistant if !m.tool_calls.is_empty() => json!({
            "role": "assistant",
            "content": if m.content.is_empty() { Value::Null } else { Value::String(m.content.clone()) },
            "tool_calls": m.tool_calls.iter().map(|c| json!({
                "id": c.id, "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            })).collect::<Vec<_>>(),
        }),
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
            "content": m.content,
        }),
        Role::System | Role::User | Role::Assistant => json!({"role": m.role.as_str(), "content": m.content}),
    }
}

/// The request body.
pub fn request_body(req: &ChatRequest) -> Value {
    let mut body = json!({
        "model": req.model,
        "messages": req.messages.iter().map(wire_message).collect::<Vec<_>>(),
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if let Some(t) = req.params.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(m) = req.params.max_tokens {
        body["max_tokens"] = json!(m);
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

impl ProtocolAdapter for OpenAiChat {
    fn protocol(&self) -> &'static str {
        "openai"
    }

    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream {
        let body = serde_json::to_vec(&request_body(&request)).unwrap_or_default();
        self.http.stream_post(
            "chat/completions",
            body,
            Arc::new(|ct: &str| -> Box<dyn WireDecoder> {
                Box::new(ChatDecoder::new(ct.contains("application/json")))
            }),
            cancel,
        )
    }

    fn list_models(&self, cancel: CancellationToken) -> BoxFuture<'static, Result<Vec<String>, ProtocolError>> {
        let http = self.http.clone();
        Box::pin(async move {
            let v = http.get_json("models", cancel).await?;
            let mut ids: Vec<String> = v["data"]
                .as_array()
                .map(|a| a.iter().filter_map(|m| m["id"].as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            ids.sort();
            Ok(ids)
        })
    }
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    /// Non-streaming responses carry `message` instead of `delta`.
    #[serde(default, borrow)]
    message: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<WireToolCall<'a>>>,
}

#[derive(Deserialize)]
struct WireToolCall<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<WireFunction<'a>>,
}

#[derive(Deserialize)]
struct WireFunction<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// Chunk-level state, apart from the byte decoder so both can be borrowed.
struct ChunkState {
    think: ThinkSplitter,
    tools: ToolCallAssembler,
    finish: Option<String>,
    /// `[DONE]` seen.
    done: bool,
    /// `Finished` emitted.
    finished: bool,
}

impl ChunkState {
    fn text(&mut self, t: &str, out: &mut VecDeque<StreamEvent>) {
        if t.is_empty() {
            return;
        }
        if self.think.passthrough() {
            out.push_back(StreamEvent::Text(t.to_string()));
            return;
        }
        let s = self.think.push(t);
        if !s.reasoning.is_empty() {
            out.push_back(StreamEvent::Reasoning(s.reasoning));
        }
        if !s.text.is_empty() {
            out.push_back(StreamEvent::Text(s.text));
        }
    }

    fn flush_text(&mut self, out: &mut VecDeque<StreamEvent>) {
        let s = self.think.finish();
        if !s.reasoning.is_empty() {
            out.push_back(StreamEvent::Reasoning(s.reasoning));
        }
        if !s.text.is_empty() {
            out.push_back(StreamEvent::Text(s.text));
        }
    }

    fn chunk(&mut self, data: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        if data == b"[DONE]" {
            self.done = true;
            return self.end(out);
        }
        let chunk: Chunk = serde_json::from_slice(data).map_err(|e| ProtocolError::Decode {
            detail: e.to_string(),
            context: String::from_utf8_lossy(&data[..data.len().min(160)]).into_owned(),
        })?;
        if let Some(err) = chunk.error {
            let msg = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| err.to_string());
            return Err(ProtocolError::Server { detail: msg });
        }
        if let Some(choice) = chunk.choices.into_iter().next() {
            if let Some(d) = choice.delta.or(choice.message) {
                if let Some(r) = d
                    .reasoning_content
                    .as_deref()
                    .or(d.reasoning.as_deref())
                    .filter(|r| !r.is_empty())
                {
                    out.push_back(StreamEvent::Reasoning(r.to_string()));
                }
                if let Some(c) = d.content.as_deref() {
                    self.text(c, out);
                }
                for (i, tc) in d.tool_calls.unwrap_or_default().into_iter().enumerate() {
                    let f = tc.function.as_ref();
                    self.tools.fragment(
                        tc.index.unwrap_or(i),
                        tc.id.as_deref(),
                        f.and_then(|f| f.name.as_deref()),
                        f.and_then(|f| f.arguments.as_deref()),
                        out,
                    );
                }
            }
            if let Some(reason) = choice.finish_reason
                && self.finish.is_none()
            {
                self.finish = Some(reason.into_owned());
                self.end(out)?;
            }
        }
        if let Some(u) = chunk.usage {
            out.push_back(StreamEvent::Usage(Usage {
                input_tokens: u.prompt_tokens,
                output_tokens: u.completion_tokens,
            }));
        }
        Ok(())
    }

    /// The answer is complete: release held text, tool calls and the finish reason (once).
    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        if self.finished {
            return Ok(());
        }
        self.flush_text(out);
        let had_tools = !self.tools.is_empty();
        self.tools.finish(out);
        let reason = match &self.finish {
            Some(r) => r.clone(),
            None if had_tools => "tool_calls".into(),
            None => "stop".into(),
        };
        out.push_back(StreamEvent::Finished(reason));
        self.finished = true;
        Ok(())
    }
}

/// Decodes one chat-completions response (SSE, or one JSON object).
struct ChatDecoder {
    json_mode: bool,
    json: Vec<u8>,
    sse: SseDecoder,
    state: ChunkState,
}

impl ChatDecoder {
    fn new(json_mode: bool) -> Self {
        ChatDecoder {
            json_mode,
            json: Vec::new(),
            sse: SseDecoder::new(),
            state: ChunkState {
                think: ThinkSplitter::new(),
                tools: ToolCallAssembler::new(),
                finish: None,
                done: false,
                finished: false,
            },
        }
    }
}

impl WireDecoder for ChatDecoder {
    fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        if self.json_mode {
            self.json.extend_from_slice(chunk);
            return Ok(());
        }
        let state = &mut self.state;
        self.sse
            .feed(chunk, |ev| if state.done { Ok(()) } else { state.chunk(ev.data, out) })
    }

    fn finish(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        if self.json_mode {
            let body = std::mem::take(&mut self.json);
            self.state.chunk(&body, out)?;
            return self.state.end(out);
        }
        let state = &mut self.state;
        self.sse
            .finish(|ev| if state.done { Ok(()) } else { state.chunk(ev.data, out) })?;
        if self.state.finished {
            Ok(())
        } else {
            // Body ended with neither a finish reason nor [DONE]: keep the text, report the cut.
            self.state.flush_text(out);
            Err(ProtocolError::Truncated)
        }
    }

    fn is_done(&self) -> bool {
        self.state.done
    }
}

#[cfg(test)]
mod tests;
