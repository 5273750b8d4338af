//! Anthropic Messages (`POST {base_url}/v1/messages`): the request shape (top-level
//! `system`, strictly alternating user/assistant turns, `tool_use` /
//! `tool_result` blocks, required `max_tokens`), the SSE event stream (text,
//! thinking and tool-use content blocks, usage, stop reasons, `error` events),
//! a whole-message JSON fallback, and model listing (`GET /v1/models`).
//! Transport (auth as `x-api-key`, retries, timeouts, cancel) is the shared one.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::sse::SseDecoder;
use super::think::ThinkSplitter;
use super::tool_calls::ToolCallAssembler;
use super::transport::{Auth, HttpEndpoint, WireDecoder, decode_error, push_reasoning};
use super::{ChatRequest, EventStream, ProtocolAdapter, ProtocolError, StreamEvent};
use crate::config::{EndpointConfig, Secrets};
use crate::conversation::{Message, Role};
use crate::stats::Usage;

/// The API version this adapter speaks.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this is sent when the request has none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

pub struct AnthropicMessages {
    http: HttpEndpoint,
    /// `v1/` unless the base URL already ends in `/v1`.
    prefix: &'static str,
    stop: Vec<String>,
}

impl AnthropicMessages {
    pub fn new(cfg: &EndpointConfig, secrets: &Secrets) -> Self {
        AnthropicMessages {
            http: HttpEndpoint::new(
                cfg,
                secrets,
                Auth::Header("x-api-key"),
                &[("anthropic-version", API_VERSION)],
            ),
            prefix: if cfg.base_url.ends_with("/v1") { "" } else { "v1/" },
            stop: cfg.stop.clone(),
        }
    }
}

/// A tool call's argument text as the object Anthropic requires.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

/// The system text, and the turns as Anthropic wants them: strictly alternating
/// (consecutive same-role messages merged), assistant tool calls as `tool_use`
/// blocks, tool results as `tool_result` blocks in a user turn, no empty text.
pub fn wire_messages(messages: &[Message]) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in messages {
        let text = || {
            if m.content.trim().is_empty() {
                Vec::new()
            } else {
                vec![json!({"type": "text", "text": m.content})]
            }
        };
        let (role, blocks) = match m.role {
            Role::System => {
                if !m.content.trim().is_empty() {
                    system.push(&m.content);
                }
                continue;
            }
            Role::User => ("user", text()),
            Role::Assistant => {
                let mut b = text();
                b.extend(m.tool_calls.iter().map(
                    |c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": tool_input(&c.arguments)}),
                ));
                ("assistant", b)
            }
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": m.content,
                })],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((r, b)) if *r == role => b.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let wire = turns
        .into_iter()
        .map(|(role, mut blocks)| {
            // A lone text block is sent as a plain string.
            let content = match blocks.as_mut_slice() {
                [one] if one["type"] == "text" => one["text"].take(),
                _ => Value::Array(blocks),
            };
            json!({"role": role, "content": content})
        })
        .collect();
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, wire)
}

/// The request body.
pub fn request_body(req: &ChatRequest, stop: &[String]) -> Value {
    let (system, messages) = wire_messages(&req.messages);
    let mut body = json!({
        "model": req.model,
        "max_tokens": req.params.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
        "stream": true,
    });
    if let Some(s) = system {
        body["system"] = json!(s);
    }
    if let Some(t) = req.params.temperature {
        body["temperature"] = json!(t);
    }
    if !stop.is_empty() {
        body["stop_sequences"] = json!(stop);
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    body
}

impl ProtocolAdapter for AnthropicMessages {
    fn protocol(&self) -> &'static str {
        "anthropic"
    }

    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream {
        let body = serde_json::to_vec(&request_body(&request, &self.stop)).unwrap_or_default();
        self.http.stream_post(
            &format!("{}messages", self.prefix),
            body,
            Arc::new(|ct: &str| -> Box<dyn WireDecoder> {
                Box::new(MessagesDecoder::new(ct.contains("application/json")))
            }),
            cancel,
        )
    }

    fn list_models(&self, cancel: CancellationToken) -> BoxFuture<'static, Result<Vec<String>, ProtocolError>> {
        self.http
            .list_model_ids(format!("{}models?limit=1000", self.prefix), cancel)
    }
}

/// Our finish reason for Anthropic's `stop_reason`.
pub fn finish_reason(stop_reason: Option<&str>, had_tools: bool) -> String {
    match stop_reason {
        Some("end_turn" | "stop_sequence") => "stop".into(),
        Some("max_tokens" | "model_context_window_exceeded") => "length".into(),
        Some("tool_use") => "tool_calls".into(),
        Some("refusal") => "content_filter".into(),
        Some(other) => other.into(),
        None if had_tools => "tool_calls".into(),
        None => "stop".into(),
    }
}

#[derive(Deserialize, Default, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// All input tokens: Anthropic counts cached ones separately.
    fn input(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ];
        parts.iter().any(Option::is_some).then(|| parts.iter().flatten().sum())
    }
}

#[derive(Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
struct WireDelta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default)]
    stop_reason: Option<String>,
}

/// One SSE event's JSON (every event type in one flat shape).
#[derive(Deserialize)]
struct WireEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    delta: Option<WireDelta<'a>>,
    #[serde(default, borrow)]
    content_block: Option<WireBlock<'a>>,
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<WireError>,
}

/// What a content block carries.
enum Block {
    Text,
    Thinking,
    /// Tool call number `ordinal`; `initial` is input given whole at the start.
    Tool {
        ordinal: usize,
        streamed: bool,
        initial: Option<String>,
    },
    Other,
}

/// Message-level state of one response.
struct MessageState {
    blocks: BTreeMap<usize, Block>,
    tools: ToolCallAssembler,
    n_tools: usize,
    think: ThinkSplitter,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    stop_reason: Option<String>,
    /// Model output was decoded (errors after it are never retried).
    output: bool,
    /// `message_stop` seen.
    done: bool,
    /// `Finished` emitted.
    finished: bool,
}

impl MessageState {
    fn new() -> Self {
        MessageState {
            blocks: BTreeMap::new(),
            tools: ToolCallAssembler::new(),
            n_tools: 0,
            think: ThinkSplitter::new(),
            input_tokens: None,
            output_tokens: None,
            stop_reason: None,
            output: false,
            done: false,
            finished: false,
        }
    }

    fn text(&mut self, t: &str, out: &mut VecDeque<StreamEvent>) {
        if !t.is_empty() {
            self.output = true;
            self.think.push_into(t, out);
        }
    }

    fn reasoning(&mut self, t: &str, out: &mut VecDeque<StreamEvent>) {
        if !t.is_empty() {
            self.output = true;
            push_reasoning(out, t);
        }
    }

    fn usage(&mut self, u: &WireUsage) {
        if let Some(i) = u.input() {
            self.input_tokens = Some(i);
        }
        if let Some(o) = u.output_tokens {
            self.output_tokens = Some(o);
        }
    }

    /// A `tool_use` block began; returns its tool ordinal.
    fn tool_start(&mut self, index: usize, b: &WireBlock<'_>, out: &mut VecDeque<StreamEvent>) -> usize {
        let ordinal = self.n_tools;
        self.n_tools += 1;
        let input = b.input.as_ref();
        let initial = input
            .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
            .map(Value::to_string);
        self.blocks.insert(
            index,
            Block::Tool {
                ordinal,
                streamed: false,
                initial,
            },
        );
        self.output = true;
        self.tools
            .fragment(ordinal, b.id.as_deref(), b.name.as_deref(), None, out);
        ordinal
    }

    /// An `error` event: overloaded before any output is retried like HTTP 529.
    fn error(&self, e: Option<WireError>) -> ProtocolError {
        let (kind, message) = e.map(|e| (e.kind, e.message)).unwrap_or_default();
        let detail = match (message.is_empty(), kind.is_empty()) {
            (false, false) => format!("{message} ({kind})"),
            (false, true) => message,
            (true, false) => kind.clone(),
            (true, true) => "unknown error".into(),
        };
        match kind.as_str() {
            "overloaded_error" | "rate_limit_error" if !self.output => ProtocolError::RateLimited {
                status: if kind == "overloaded_error" { 529 } else { 429 },
                retry_after: None,
                detail,
            },
            _ => ProtocolError::Server { detail },
        }
    }

    /// One SSE event.
    fn event(&mut self, data: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        if self.done {
            return Ok(());
        }
        let ev: WireEvent<'_> = serde_json::from_slice(data).map_err(|e| decode_error(data, e))?;
        match ev.kind.as_ref() {
            "message_start" => {
                if let Some(u) = ev.message.as_ref().and_then(|m| m.usage.as_ref()) {
                    self.usage(u);
                }
            }
            "content_block_start" => {
                let (Some(index), Some(b)) = (ev.index, ev.content_block) else {
                    return Err(decode_error(data, "content_block_start without index or block"));
                };
                match b.kind.as_ref() {
                    "text" => {
                        self.blocks.insert(index, Block::Text);
                        self.text(b.text.as_deref().unwrap_or(""), out);
                    }
                    "thinking" => {
                        self.blocks.insert(index, Block::Thinking);
                        self.reasoning(b.thinking.as_deref().unwrap_or(""), out);
                    }
                    "tool_use" => {
                        self.tool_start(index, &b, out);
                    }
                    _ => {
                        self.blocks.insert(index, Block::Other);
                    }
                }
            }
            "content_block_delta" => {
                let Some(d) = ev.delta else {
                    return Err(decode_error(data, "content_block_delta without delta"));
                };
                let block = ev.index.and_then(|i| self.blocks.get_mut(&i));
                match (d.kind.as_deref(), block) {
                    (Some("text_delta"), _) => self.text(d.text.as_deref().unwrap_or(""), out),
                    (Some("thinking_delta"), _) => self.reasoning(d.thinking.as_deref().unwrap_or(""), out),
                    (Some("input_json_delta"), Some(Block::Tool { ordinal, streamed, .. })) => {
                        let ordinal = *ordinal;
                        if let Some(p) = d.partial_json.as_deref().filter(|p| !p.is_empty()) {
                            *streamed = true;
                            self.tools.fragment(ordinal, None, None, Some(p), out);
                        }
                    }
                    // signature_delta, citations, deltas for blocks we do not show.
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(Block::Tool {
                    ordinal,
                    streamed: false,
                    initial: Some(input),
                }) = ev.index.and_then(|i| self.blocks.remove(&i))
                {
                    self.tools.fragment(ordinal, None, None, Some(&input), out);
                }
            }
            "message_delta" => {
                if let Some(r) = ev.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(r);
                }
                if let Some(u) = &ev.usage {
                    self.usage(u);
                }
            }
            "message_stop" => {
                self.done = true;
                self.end(out);
            }
            "error" => return Err(self.error(ev.error)),
            // ping, and event types added later.
            _ => {}
        }
        Ok(())
    }

    /// A whole (non-streamed) message.
    fn whole(&mut self, body: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        let v: Value = serde_json::from_slice(body).map_err(|e| decode_error(body, e))?;
        if v["type"] == "error" {
            let e = serde_json::from_value::<WireError>(v["error"].clone()).ok();
            return Err(self.error(e));
        }
        let m: WireMessage = serde_json::from_value(v).map_err(|e| decode_error(body, e))?;
        for (i, b) in m.content.iter().enumerate() {
            let b: WireBlock<'_> = match WireBlock::deserialize(b) {
                Ok(b) => b,
                Err(e) => return Err(decode_error(body, e)),
            };
            match b.kind.as_ref() {
                "text" => self.text(b.text.as_deref().unwrap_or(""), out),
                "thinking" => self.reasoning(b.thinking.as_deref().unwrap_or(""), out),
                "tool_use" => {
                    let ordinal = self.tool_start(i, &b, out);
                    if let Some(input) = b.input.as_ref() {
                        self.tools.fragment(ordinal, None, None, Some(&input.to_string()), out);
                    }
                }
                _ => {}
            }
        }
        self.stop_reason = m.stop_reason;
        if let Some(u) = &m.usage {
            self.usage(u);
        }
        self.done = true;
        self.end(out);
        Ok(())
    }

    /// The answer is complete: release held text, tool calls, usage and the finish reason (once).
    fn end(&mut self, out: &mut VecDeque<StreamEvent>) {
        if self.finished {
            return;
        }
        self.think.finish_into(out);
        let had_tools = !self.tools.is_empty();
        self.tools.finish(out);
        let (i, o) = (self.input_tokens.unwrap_or(0), self.output_tokens.unwrap_or(0));
        // All zeros is a server that does not count, not an empty exchange.
        if i > 0 || o > 0 {
            out.push_back(StreamEvent::Usage(Usage {
                input_tokens: i,
                output_tokens: o,
            }));
        }
        out.push_back(StreamEvent::Finished(finish_reason(
            self.stop_reason.as_deref(),
            had_tools,
        )));
        self.finished = true;
    }
}

/// Decodes one Messages response (SSE, or one JSON message).
pub struct MessagesDecoder {
    json_mode: bool,
    json: Vec<u8>,
    sse: SseDecoder,
    state: MessageState,
}

impl MessagesDecoder {
    /// A decoder for a streamed (`true`: whole JSON) response.
    pub fn new(json_mode: bool) -> Self {
        MessagesDecoder {
            json_mode,
            json: Vec::new(),
            sse: SseDecoder::new(),
            state: MessageState::new(),
        }
    }
}

impl WireDecoder for MessagesDecoder {
    fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        if self.json_mode {
            self.json.extend_from_slice(chunk);
            return Ok(());
        }
        let state = &mut self.state;
        self.sse.feed(chunk, |ev| state.event(ev.data, out))
    }

    fn finish(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        if self.json_mode {
            let body = std::mem::take(&mut self.json);
            return self.state.whole(&body, out);
        }
        let state = &mut self.state;
        self.sse.finish(|ev| state.event(ev.data, out))?;
        if self.state.finished {
            Ok(())
        } else if self.state.stop_reason.is_some() {
            // Complete but for the final `message_stop`.
            self.state.end(out);
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
