//! OpenAI legacy completions (`POST {base_url}/completions`): the conversation
//! becomes one prompt through the endpoint's [`PromptTemplate`] (with its stop
//! sequences plus the endpoint's `stop`), and the SSE stream of `choices[0].text`
//! chunks becomes text (with `<think>` splitting), usage and a finish reason.
//! Tools cannot be offered on this protocol: such requests are refused before
//! anything is sent. Models are listed like OpenAI (`GET /models`).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::prompt_template::PromptTemplate;
use super::sse::SseDecoder;
use super::think::ThinkSplitter;
use super::transport::{Auth, HttpEndpoint, WireDecoder, decode_error};
use super::{ChatRequest, EventStream, ProtocolAdapter, ProtocolError, StreamEvent};
use crate::config::{EndpointConfig, Secrets};
use crate::stats::Usage;

pub struct OpenAiCompletions {
    http: HttpEndpoint,
    template: PromptTemplate,
    /// The template's stop sequences, then the endpoint's own.
    stop: Vec<String>,
}

impl OpenAiCompletions {
    /// Fails when the endpoint's `prompt_template` is invalid (config loading
    /// has already checked it, so only hand-built configs get here).
    pub fn new(cfg: &EndpointConfig, secrets: &Secrets) -> Result<Self, ProtocolError> {
        let template = PromptTemplate::from_config(cfg.prompt_template.as_deref())
            .map_err(|e| ProtocolError::Config(e.to_string()))?;
        let mut stop: Vec<String> = template.stops().to_vec();
        for s in &cfg.stop {
            if !stop.contains(s) {
                stop.push(s.clone());
            }
        }
        Ok(OpenAiCompletions {
            http: HttpEndpoint::new(cfg, secrets, Auth::Bearer, &[]),
            template,
            stop,
        })
    }

    /// The request body, or why the request cannot go out on this protocol.
    pub fn request_body(&self, req: &ChatRequest) -> Result<Value, ProtocolError> {
        if !req.tools.is_empty() {
            let names: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
            return Err(ProtocolError::Unsupported(format!(
                "the openai-completions protocol cannot offer tools to the model ({}) — use an endpoint with protocol = \"openai\" (chat completions) for tools, or turn tools off",
                names.join(", ")
            )));
        }
        let prompt = self
            .template
            .render(&req.messages, true)
            .map_err(ProtocolError::Config)?;
        let mut body = json!({
            "model": req.model,
            "prompt": prompt,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if let Some(t) = req.params.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(m) = req.params.max_tokens {
            body["max_tokens"] = json!(m);
        }
        if !self.stop.is_empty() {
            body["stop"] = json!(self.stop);
        }
        Ok(body)
    }
}

impl ProtocolAdapter for OpenAiCompletions {
    fn protocol(&self) -> &'static str {
        "openai-completions"
    }

    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream {
        let body = match self.request_body(&request) {
            Ok(b) => serde_json::to_vec(&b).unwrap_or_default(),
            Err(e) => return Box::pin(futures::stream::once(async move { Err(e) })),
        };
        self.http.stream_post(
            "completions",
            body,
            Arc::new(|ct: &str| -> Box<dyn WireDecoder> {
                Box::new(CompletionsDecoder::new(ct.contains("application/json")))
            }),
            cancel,
        )
    }

    fn list_models(&self, cancel: CancellationToken) -> BoxFuture<'static, Result<Vec<String>, ProtocolError>> {
        self.http.list_model_ids("models".to_string(), cancel)
    }
}

#[derive(Deserialize)]
struct WireChoice<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// One chunk (or a whole non-streamed response).
#[derive(Deserialize)]
struct WireChunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<WireChoice<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

struct ChunkState {
    think: ThinkSplitter,
    finish: Option<String>,
    /// `[DONE]` seen.
    done: bool,
    /// `Finished` emitted.
    finished: bool,
}

impl ChunkState {
    fn chunk(&mut self, data: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        if self.done {
            return Ok(());
        }
        if data == b"[DONE]" {
            self.done = true;
            self.end(out);
            return Ok(());
        }
        let c: WireChunk<'_> = serde_json::from_slice(data).map_err(|e| decode_error(data, e))?;
        if let Some(e) = c.error.filter(|e| !e.is_null()) {
            let detail = e
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| e.as_str().map(str::to_string))
                .unwrap_or_else(|| e.to_string());
            return Err(ProtocolError::Server { detail });
        }
        if let Some(choice) = c.choices.first() {
            if let Some(t) = choice.text.as_deref() {
                self.think.push_into(t, out);
            }
            if let Some(r) = choice.finish_reason.as_deref().filter(|r| !r.is_empty())
                && self.finish.is_none()
            {
                self.finish = Some(r.to_string());
                self.end(out);
            }
        }
        if let Some(u) = c.usage {
            out.push_back(StreamEvent::Usage(Usage {
                input_tokens: u.prompt_tokens,
                output_tokens: u.completion_tokens,
            }));
        }
        Ok(())
    }

    /// The answer is complete: release held text and the finish reason (once).
    fn end(&mut self, out: &mut VecDeque<StreamEvent>) {
        if self.finished {
            return;
        }
        self.think.finish_into(out);
        out.push_back(StreamEvent::Finished(
            self.finish.clone().unwrap_or_else(|| "stop".into()),
        ));
        self.finished = true;
    }
}

/// Decodes one completions response (SSE, or one JSON object).
pub struct CompletionsDecoder {
    json_mode: bool,
    json: Vec<u8>,
    sse: SseDecoder,
    state: ChunkState,
}

impl CompletionsDecoder {
    /// A decoder for a streamed (`true`: whole JSON) response.
    pub fn new(json_mode: bool) -> Self {
        CompletionsDecoder {
            json_mode,
            json: Vec::new(),
            sse: SseDecoder::new(),
            state: ChunkState {
                think: ThinkSplitter::new(),
                finish: None,
                done: false,
                finished: false,
            },
        }
    }
}

impl WireDecoder for CompletionsDecoder {
    fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        if self.json_mode {
            self.json.extend_from_slice(chunk);
            return Ok(());
        }
        let state = &mut self.state;
        self.sse.feed(chunk, |ev| state.chunk(ev.data, out))
    }

    fn finish(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError> {
        if self.json_mode {
            let body = std::mem::take(&mut self.json);
            self.state.chunk(&body, out)?;
            self.state.end(out);
            return Ok(());
        }
        let state = &mut self.state;
        self.sse.finish(|ev| state.chunk(ev.data, out))?;
        if self.state.finished {
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
