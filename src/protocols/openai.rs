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

use super::json_skim::{self as skim, Skim};
use super::sse::SseDecoder;
use super::think::ThinkSplitter;
use super::tool_calls::ToolCallAssembler;
use super::transport::{Auth, HttpEndpoint, WireDecoder, push_reasoning, push_text};
use super::{ChatRequest, EventStream, ProtocolAdapter, ProtocolError, StreamEvent};
use crate::config::{EndpointConfig, Secrets};
use crate::conversation::{Message, Role};
use crate::stats::Usage;

pub struct OpenAiChat {
    http: HttpEndpoint,
    /// The endpoint's extra stop sequences.
    stop: Vec<String>,
}

impl OpenAiChat {
    pub fn new(cfg: &EndpointConfig, secrets: &Secrets) -> Self {
        OpenAiChat {
            http: HttpEndpoint::new(cfg, secrets, Auth::Bearer, &[]),
            stop: cfg.stop.clone(),
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
    if let Some(c) = req.params.tool_choice.as_deref().filter(|_| !req.tools.is_empty()) {
        body["tool_choice"] = json!(c);
        if c == "required" {
            body["parallel_tool_calls"] = json!(false);
        }
    }
    if let Some(schema) = &req.params.response_schema {
        body["response_format"] =
            json!({"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": schema}});
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
        let mut body = request_body(&request);
        if !self.stop.is_empty() {
            body["stop"] = json!(self.stop);
        }
        let body = serde_json::to_vec(&body).unwrap_or_default();
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
        self.http.list_model_ids("models".to_string(), cancel)
    }
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

fn decode_error(data: &[u8], detail: impl std::fmt::Display) -> ProtocolError {
    ProtocolError::Decode {
        detail: detail.to_string(),
        context: crate::util::sanitize::terminal_safe(&String::from_utf8_lossy(&data[..data.len().min(160)]))
            .into_owned(),
    }
}

/// The bytes around the content string of a plain text chunk. Chunks of one
/// stream differ only in their content, so a chunk that starts with `prefix`,
/// ends with `suffix` and holds no `"` or `\\` in between is that same chunk with
/// other text: its content is the middle, exactly, without re-parsing.
#[derive(Debug, Default)]
struct ChunkTemplate {
    prefix: Vec<u8>,
    suffix: Vec<u8>,
    /// Consecutive chunks that did not fit: a stream whose chunks all differ
    /// (per-chunk ids, padding) stops paying for learning.
    misses: u32,
}

impl ChunkTemplate {
    const GIVE_UP_AFTER: u32 = 8;

    fn content<'a>(&mut self, data: &'a [u8]) -> Option<&'a str> {
        if self.prefix.is_empty() {
            return None;
        }
        if data.len() < self.prefix.len() + self.suffix.len()
            || !(data.starts_with(&self.prefix) && data.ends_with(&self.suffix))
        {
            self.misses += 1;
            if self.misses >= Self::GIVE_UP_AFTER {
                self.prefix.clear(); // stop checking, too
            }
            return None;
        }
        self.misses = 0;
        let mid = &data[self.prefix.len()..data.len() - self.suffix.len()];
        if !skim::is_plain_string_body(mid) {
            return None;
        }
        std::str::from_utf8(mid).ok()
    }

    fn learn(&mut self, data: &[u8], body: std::ops::Range<usize>) {
        if self.misses >= Self::GIVE_UP_AFTER {
            return;
        }
        self.prefix.clear();
        self.prefix.extend_from_slice(&data[..body.start]);
        self.suffix.clear();
        self.suffix.extend_from_slice(&data[body.end..]);
    }
}

/// What a fully skimmed chunk contained, to decide whether it can be a template.
#[derive(Debug, Default)]
struct ChunkShape {
    /// Byte range of the content string's body.
    content: Option<std::ops::Range<usize>>,
    /// Anything besides plain content (reasoning, tool calls, finish, usage…).
    other: bool,
}

/// Chunk-level state, apart from the byte decoder so both can be borrowed.
struct ChunkState {
    template: ChunkTemplate,
    scratch: VecDeque<StreamEvent>,
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
            push_text(out, t);
            return;
        }
        let s = self.think.push(t);
        push_reasoning(out, &s.reasoning);
        push_text(out, &s.text);
    }

    fn flush_text(&mut self, out: &mut VecDeque<StreamEvent>) {
        let s = self.think.finish();
        push_reasoning(out, &s.reasoning);
        push_text(out, &s.text);
    }

    /// One JSON chunk (or a whole non-streamed response). The common fields
    /// are skimmed without allocation; rare ones go through serde.
    fn chunk(&mut self, data: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        if data == b"[DONE]" {
            self.done = true;
            return self.end(out);
        }
        if let Some(content) = self.template.content(data) {
            self.text(content, out);
            return Ok(());
        }
        // Events of a fully parsed chunk wait in a scratch queue, so that a
        // malformed chunk contributes nothing.
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = self.parse_chunk(data, &mut scratch);
        for ev in scratch.drain(..) {
            match ev {
                StreamEvent::Text(t) => push_text(out, &t),
                StreamEvent::Reasoning(r) => push_reasoning(out, &r),
                other => out.push_back(other),
            }
        }
        self.scratch = scratch;
        result
    }

    fn parse_chunk(&mut self, data: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        let mut finish: Option<String> = None;
        let mut usage: Option<&[u8]> = None;
        let mut error: Option<&[u8]> = None;
        let mut shape = ChunkShape::default();
        let mut sk = Skim::new(data);
        sk.object(|key, sk| match key {
            b"choices" => sk.array(|i, sk| {
                if i == 0 {
                    self.choice(sk, out, &mut finish, &mut shape)
                } else {
                    shape.other = true;
                    sk.skip()
                }
            }),
            b"usage" => sk.raw_value().map(|raw| usage = Some(raw)),
            b"error" => sk.raw_value().map(|raw| error = Some(raw)),
            _ => sk.skip(),
        })
        .and_then(|()| sk.end())
        .map_err(|e| {
            out.clear();
            decode_error(data, e)
        })?;
        shape.other |= finish.is_some() || usage.is_some_and(|u| u != b"null") || error.is_some_and(|e| e != b"null");
        if let (Some(range), false) = (shape.content.clone(), shape.other)
            && skim::is_plain_string_body(&data[range.clone()])
        {
            self.template.learn(data, range);
        }
        if let Some(raw) = error.filter(|r| *r != b"null") {
            let v: Value = serde_json::from_slice(raw).map_err(|e| decode_error(data, e))?;
            let msg = v
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            return Err(ProtocolError::Server { detail: msg });
        }
        if let Some(reason) = finish
            && self.finish.is_none()
        {
            self.finish = Some(reason);
            self.end(out)?;
        }
        if let Some(raw) = usage.filter(|r| *r != b"null") {
            let u: WireUsage = serde_json::from_slice(raw).map_err(|e| decode_error(data, e))?;
            out.push_back(StreamEvent::Usage(Usage {
                input_tokens: u.prompt_tokens,
                output_tokens: u.completion_tokens,
            }));
        }
        Ok(())
    }

    fn choice(
        &mut self,
        sk: &mut Skim<'_>,
        out: &mut VecDeque<StreamEvent>,
        finish: &mut Option<String>,
        shape: &mut ChunkShape,
    ) -> skim::Result<()> {
        sk.object(|key, sk| match key {
            b"delta" | b"message" => {
                if sk.null()? {
                    return Ok(());
                }
                sk.object(|key, sk| match key {
                    b"content" => {
                        let before = sk.offset();
                        let c = sk.opt_string()?;
                        if let Some(c) = c {
                            // An escape-free string is borrowed: its body is the
                            // bytes between the quotes just read.
                            if let Cow::Borrowed(body) = &c {
                                let end = sk.offset() - 1;
                                shape.content = Some(end - body.len()..end).filter(|r| r.start > before);
                            }
                            self.text(&c, out);
                        }
                        Ok(())
                    }
                    b"reasoning_content" | b"reasoning" => sk.opt_string().map(|r| {
                        if let Some(r) = r {
                            shape.other = true;
                            push_reasoning(out, &r);
                        }
                    }),
                    b"tool_calls" => {
                        let raw = sk.raw_value()?;
                        if raw != b"null" {
                            shape.other = true;
                            let calls: Vec<WireToolCall> =
                                serde_json::from_slice(raw).map_err(|_| skim::SkimError {
                                    offset: 0,
                                    what: "invalid tool_calls",
                                })?;
                            for (i, tc) in calls.into_iter().enumerate() {
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
                        Ok(())
                    }
                    _ => sk.skip(),
                })
            }
            b"finish_reason" => sk
                .opt_string()
                .map(|r| *finish = r.map(|r| r.into_owned()).filter(|r| !r.is_empty())),
            _ => sk.skip(),
        })
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
pub struct ChatDecoder {
    json_mode: bool,
    json: Vec<u8>,
    sse: SseDecoder,
    state: ChunkState,
}

impl ChatDecoder {
    /// A decoder for a streamed (`true`: plain JSON) response.
    pub fn new(json_mode: bool) -> Self {
        ChatDecoder {
            json_mode,
            json: Vec::new(),
            sse: SseDecoder::new(),
            state: ChunkState {
                template: ChunkTemplate::default(),
                scratch: VecDeque::new(),
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
