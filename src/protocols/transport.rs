//! The one HTTP streaming engine every adapter shares: client set-up, auth and
//! extra headers, status → error mapping, retries with exponential backoff and
//! jitter (only before the first token), the three timeouts (connect, first
//! token, idle) and cancellation.
//!
//! Adapters supply a URL, a JSON body and a [`WireDecoder`]; they never touch
//! retries or timers. Secrets are redacted from every error text.

use std::collections::VecDeque;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Once};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{EventStream, ProtocolError, StreamEvent, TimeoutPhase};
use crate::config::{EndpointConfig, Secrets};

/// Longest server-requested wait we honour automatically.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(16);
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Install the rustls crypto provider once, before any client is built.
pub fn ensure_crypto() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// How an endpoint wants its API key sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer KEY`
    Bearer,
    /// A named header carrying the key (e.g. `x-api-key`).
    Header(&'static str),
}

/// Turns body bytes into stream events for one response.
pub trait WireDecoder: Send {
    /// Decode a chunk, appending events.
    fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError>;
    /// The body ended. Error if it ended before the answer was complete.
    fn finish(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProtocolError>;
    /// The terminal marker was seen: stop reading.
    fn is_done(&self) -> bool;
}

/// Append text, merging with a text event still queued from the same read: a
/// burst of tokens becomes one event (fewer allocations, sends and writes).
pub fn push_text(out: &mut VecDeque<StreamEvent>, t: &str) {
    if t.is_empty() {
        return;
    }
    match out.back_mut() {
        Some(StreamEvent::Text(s)) => s.push_str(t),
        _ => out.push_back(StreamEvent::Text(t.to_string())),
    }
}

/// Like [`push_text`], for reasoning.
pub fn push_reasoning(out: &mut VecDeque<StreamEvent>, t: &str) {
    if t.is_empty() {
        return;
    }
    match out.back_mut() {
        Some(StreamEvent::Reasoning(s)) => s.push_str(t),
        _ => out.push_back(StreamEvent::Reasoning(t.to_string())),
    }
}

/// Chooses a decoder from the response's content type.
pub type DecoderFactory = Arc<dyn Fn(&str) -> Box<dyn WireDecoder> + Send + Sync>;

struct Inner {
    base_url: String,
    client: reqwest::Client,
    headers: HeaderMap,
    secret: Option<String>,
    env_var: Option<String>,
    setup_error: Option<ProtocolError>,
    connect_timeout: Duration,
    first_token: Duration,
    idle: Duration,
    max_retries: u32,
}

/// A configured HTTP endpoint, cheap to clone.
#[derive(Clone)]
pub struct HttpEndpoint {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for HttpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEndpoint")
            .field("base_url", &self.inner.base_url)
            .finish_non_exhaustive()
    }
}

/// Expand `${VAR}` in a header value.
pub(crate) fn expand_vars(value: &str, secrets: &Secrets) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after.find('}').ok_or_else(|| format!("unclosed ${{ in `{value}`"))?;
        let var = &after[..end];
        out.push_str(
            &secrets
                .get(var)
                .ok_or_else(|| format!("{var} is not set (used in a header)"))?,
        );
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl HttpEndpoint {
    pub fn new(cfg: &EndpointConfig, secrets: &Secrets, auth: Auth, extra: &[(&'static str, &'static str)]) -> Self {
        ensure_crypto();
        let mut setup_error = None;
        let mut headers = HeaderMap::new();
        let mut secret = None;
        for (k, v) in extra {
            headers.insert(*k, HeaderValue::from_static(v));
        }
        if let Some(var) = &cfg.api_key_env {
            match secrets.get(var) {
                Some(key) => {
                    let (name, value) = match auth {
                        Auth::Bearer => (reqwest::header::AUTHORIZATION, format!("Bearer {key}")),
                        Auth::Header(h) => (HeaderName::from_static(h), key.clone()),
                    };
                    match HeaderValue::from_str(&value) {
                        Ok(mut hv) => {
                            hv.set_sensitive(true);
                            headers.insert(name, hv);
                        }
                        Err(_) => {
                            setup_error = Some(ProtocolError::Config(format!(
                                "{var} contains characters not allowed in an HTTP header"
                            )))
                        }
                    }
                    secret = Some(key);
                }
                None => setup_error = Some(ProtocolError::MissingKey { env_var: var.clone() }),
            }
        }
        for (k, v) in &cfg.headers {
            match expand_vars(v, secrets) {
                Ok(val) => match (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(&val)) {
                    (Ok(n), Ok(mut hv)) => {
                        if v.contains("${") {
                            hv.set_sensitive(true);
                        }
                        headers.insert(n, hv);
                    }
                    _ => setup_error = Some(ProtocolError::Config(format!("header `{k}` has an invalid value"))),
                },
                Err(e) => setup_error = Some(ProtocolError::Config(e)),
            }
        }
        let client = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .user_agent(concat!("pai/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers.clone())
            .build();
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                setup_error = Some(ProtocolError::Config(format!("HTTP client: {e}")));
                reqwest::Client::new()
            }
        };
        HttpEndpoint {
            inner: Arc::new(Inner {
                base_url: cfg.base_url.clone(),
                client,
                headers,
                secret,
                env_var: cfg.api_key_env.clone(),
                setup_error,
                connect_timeout: cfg.connect_timeout,
                first_token: cfg.first_token_timeout,
                idle: cfg.idle_timeout,
                max_retries: cfg.max_retries,
            }),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.inner.base_url, path.trim_start_matches('/'))
    }

    /// Headers sent with every request (for tests and diagnostics).
    pub fn has_header(&self, name: &str) -> bool {
        self.inner.headers.contains_key(name)
    }

    /// POST `body` to `path` and stream decoded events.
    pub fn stream_post(
        &self,
        path: &str,
        body: Vec<u8>,
        decoders: DecoderFactory,
        cancel: CancellationToken,
    ) -> EventStream {
        let driver = Driver {
            ep: self.inner.clone(),
            url: self.url(path),
            body: Bytes::from(body),
            decoders,
            cancel,
            retries: 0,
            attempt_start: Instant::now(),
            emitted: false,
            pending: VecDeque::new(),
            deferred: None,
            phase: Phase::Connect,
        };
        Box::pin(futures::stream::unfold(driver, |mut d| async move {
            d.next().await.map(|item| (item, d))
        }))
    }

    /// GET `path`: the sorted ids of an OpenAI-style model listing
    /// (`data[].id`), which Anthropic's API and llama.cpp's server follow too.
    pub fn list_model_ids(
        &self,
        path: String,
        cancel: CancellationToken,
    ) -> futures::future::BoxFuture<'static, Result<Vec<String>, ProtocolError>> {
        let http = self.clone();
        Box::pin(async move {
            let v = http.get_json(&path, cancel).await?;
            let mut ids: Vec<String> = v["data"]
                .as_array()
                .map(|a| a.iter().filter_map(|m| m["id"].as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            ids.sort();
            Ok(ids)
        })
    }

    /// GET `path` and parse JSON (model listings). One attempt, same timeouts.
    pub async fn get_json(&self, path: &str, cancel: CancellationToken) -> Result<serde_json::Value, ProtocolError> {
        if let Some(e) = &self.inner.setup_error {
            return Err(e.clone());
        }
        let url = self.url(path);
        let deadline = Instant::now() + self.inner.first_token;
        let fut = async {
            let resp = self
                .inner
                .client
                .get(&url)
                .send()
                .await
                .map_err(|e| self.inner.send_error(&url, &e))?;
            let resp = self.inner.check_status(&url, resp).await?;
            let bytes = resp.bytes().await.map_err(|e| ProtocolError::Network {
                detail: self.inner.redact(&root_cause(&e)),
            })?;
            serde_json::from_slice(&bytes).map_err(|e| ProtocolError::Decode {
                detail: e.to_string(),
                context: snippet(&bytes),
            })
        };
        tokio::select! {
            _ = cancel.cancelled() => Err(ProtocolError::Cancelled),
            r = tokio::time::timeout_at(deadline, fut) => r.unwrap_or(Err(ProtocolError::Timeout { phase: TimeoutPhase::FirstToken, after: self.inner.first_token })),
        }
    }
}

impl Inner {
    fn redact(&self, s: &str) -> String {
        match &self.secret {
            Some(k) if k.len() >= 4 && s.contains(k.as_str()) => s.replace(k.as_str(), "[redacted]"),
            _ => s.to_string(),
        }
    }

    fn send_error(&self, url: &str, e: &reqwest::Error) -> ProtocolError {
        if e.is_connect() {
            if e.is_timeout() || root_cause(e).to_lowercase().contains("timed out") {
                return ProtocolError::Timeout {
                    phase: TimeoutPhase::Connect,
                    after: self.connect_timeout,
                };
            }
            return ProtocolError::Connect {
                url: url.to_string(),
                detail: self.redact(&root_cause(e)),
            };
        }
        ProtocolError::Network {
            detail: self.redact(&root_cause(e)),
        }
    }

    /// Pass 2xx through; turn anything else into a typed error.
    async fn check_status(&self, url: &str, resp: reqwest::Response) -> Result<reqwest::Response, ProtocolError> {
        let status = resp.status().as_u16();
        if resp.status().is_success() {
            return Ok(resp);
        }
        let retry_after = retry_after(resp.headers());
        let mut body = Vec::new();
        let mut s = resp.bytes_stream();
        while let Some(Ok(chunk)) = s.next().await {
            body.extend_from_slice(&chunk);
            if body.len() > ERROR_BODY_LIMIT {
                break;
            }
        }
        let detail = self.redact(&error_detail(&body));
        Err(match status {
            401 | 403 => ProtocolError::Auth {
                status,
                env_var: self.env_var.clone(),
                detail,
            },
            429 | 529 => ProtocolError::RateLimited {
                status,
                retry_after,
                detail,
            },
            400 | 413 | 422 if looks_like_context_overflow(&detail) => ProtocolError::ContextLength { detail },
            _ => ProtocolError::Http {
                status,
                url: url.to_string(),
                detail,
            },
        })
    }
}

/// The innermost cause of an error chain ("Connection refused (os error 111)").
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &dyn std::error::Error = e;
    while let Some(s) = cur.source() {
        cur = s;
    }
    cur.to_string()
}

fn snippet(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(160)]);
    crate::util::sanitize::terminal_safe(&s).into_owned()
}

/// A malformed-data error quoting the start of the offending bytes.
pub fn decode_error(data: &[u8], detail: impl std::fmt::Display) -> ProtocolError {
    ProtocolError::Decode {
        detail: detail.to_string(),
        context: snippet(data),
    }
}

/// The human part of an error body: `error.message`, `message`, `error`, `detail`, or the text.
pub fn error_detail(body: &[u8]) -> String {
    let text = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(v) => {
            let pick = |v: &serde_json::Value| v.as_str().map(str::to_string);
            v.pointer("/error/message")
                .and_then(pick)
                .or_else(|| v.get("message").and_then(pick))
                .or_else(|| v.get("error").and_then(pick))
                .or_else(|| v.get("detail").and_then(pick))
                .unwrap_or_else(|| v.to_string())
        }
        Err(_) => String::from_utf8_lossy(body).trim().to_string(),
    };
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut s = crate::util::sanitize::terminal_safe(&one_line).into_owned();
    if s.chars().count() > 300 {
        s = s.chars().take(300).collect::<String>() + "…";
    }
    s
}

fn looks_like_context_overflow(detail: &str) -> bool {
    let d = detail.to_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "maximum context",
        "too many tokens",
        "prompt is too long",
        "exceeds the context",
        "exceed_context",
    ]
    .iter()
    .any(|p| d.contains(p))
}

/// `retry-after-ms` or `retry-after` (seconds); HTTP dates are not honoured.
pub fn retry_after(h: &HeaderMap) -> Option<Duration> {
    let num = |name: &str| {
        h.get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    num("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| num("retry-after").map(Duration::from_secs_f64))
}

/// Exponential backoff with "equal jitter": between half and all of the step.
pub fn backoff(retry: u32) -> Duration {
    let step = BACKOFF_BASE.saturating_mul(1u32 << retry.min(10)).min(BACKOFF_CAP);
    let r = RandomState::new().hash_one((retry, std::time::SystemTime::now()));
    let frac = 0.5 + (r % 1000) as f64 / 2000.0;
    step.mul_f64(frac)
}

enum Phase {
    Connect,
    Backoff(Instant),
    Body {
        body: std::pin::Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
        decoder: Box<dyn WireDecoder>,
    },
    Done,
}

struct Driver {
    ep: Arc<Inner>,
    url: String,
    body: Bytes,
    decoders: DecoderFactory,
    cancel: CancellationToken,
    retries: u32,
    attempt_start: Instant,
    emitted: bool,
    pending: VecDeque<StreamEvent>,
    deferred: Option<ProtocolError>,
    phase: Phase,
}

impl Driver {
    async fn next(&mut self) -> Option<Result<StreamEvent, ProtocolError>> {
        loop {
            if let Some(ev) = self.pending.pop_front() {
                self.emitted |= ev.is_output();
                return Some(Ok(ev));
            }
            if let Some(e) = self.deferred.take() {
                self.phase = Phase::Done;
                return Some(Err(e));
            }
            match &mut self.phase {
                Phase::Done => return None,
                Phase::Backoff(until) => {
                    let until = *until;
                    tokio::select! {
                        biased;
                        _ = self.cancel.cancelled() => self.fail(ProtocolError::Cancelled),
                        _ = tokio::time::sleep_until(until) => self.phase = Phase::Connect,
                    }
                }
                Phase::Connect => {
                    if let Some(e) = self.ep.setup_error.clone() {
                        self.fail(e);
                        continue;
                    }
                    self.attempt_start = Instant::now();
                    match self.connect().await {
                        Ok(resp) => {
                            let ct = resp
                                .headers()
                                .get(reqwest::header::CONTENT_TYPE)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or("")
                                .to_ascii_lowercase();
                            self.phase = Phase::Body {
                                decoder: (self.decoders)(&ct),
                                body: Box::pin(resp.bytes_stream()),
                            };
                        }
                        Err(e) => self.fail(e),
                    }
                }
                Phase::Body { body, decoder } => {
                    let (deadline, phase, after) = if self.emitted {
                        (Instant::now() + self.ep.idle, TimeoutPhase::Idle, self.ep.idle)
                    } else {
                        (
                            self.attempt_start + self.ep.first_token,
                            TimeoutPhase::FirstToken,
                            self.ep.first_token,
                        )
                    };
                    let next = tokio::select! {
                        biased;
                        _ = self.cancel.cancelled() => Err(ProtocolError::Cancelled),
                        r = tokio::time::timeout_at(deadline, body.next()) => r.map_err(|_| ProtocolError::Timeout { phase, after }),
                    };
                    let result = match next {
                        Err(e) => Err(e),
                        Ok(Some(Ok(bytes))) => decoder.feed(&bytes, &mut self.pending).map(|()| decoder.is_done()),
                        Ok(Some(Err(e))) => Err(ProtocolError::Network {
                            detail: self.ep.redact(&root_cause(&e)),
                        }),
                        Ok(None) => decoder.finish(&mut self.pending).map(|()| true),
                    };
                    match result {
                        Ok(false) => {}
                        Ok(true) => self.phase = Phase::Done,
                        Err(e) => self.fail(e),
                    }
                }
            }
        }
    }

    async fn connect(&mut self) -> Result<reqwest::Response, ProtocolError> {
        let req = self
            .ep
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "text/event-stream, application/x-ndjson, application/json",
            )
            .body(self.body.clone());
        let deadline = self.attempt_start + self.ep.first_token;
        let ep = self.ep.clone();
        let url = self.url.clone();
        let fut = async move {
            let resp = req.send().await.map_err(|e| ep.send_error(&url, &e))?;
            ep.check_status(&url, resp).await
        };
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(ProtocolError::Cancelled),
            r = tokio::time::timeout_at(deadline, fut) => r.unwrap_or(Err(ProtocolError::Timeout { phase: TimeoutPhase::FirstToken, after: self.ep.first_token })),
        }
    }

    /// Retry if nothing was shown yet and the error allows it; otherwise end
    /// after delivering what is pending.
    fn fail(&mut self, e: ProtocolError) {
        let shown = self.emitted || self.pending.iter().any(StreamEvent::is_output);
        if !shown && e.is_retryable() && self.retries < self.ep.max_retries {
            let delay = e.retry_after().unwrap_or_else(|| backoff(self.retries));
            if delay <= MAX_RETRY_AFTER {
                self.retries += 1;
                self.pending.clear();
                self.pending.push_back(StreamEvent::Retrying {
                    attempt: self.retries,
                    delay,
                    reason: e.short(),
                });
                self.phase = Phase::Backoff(Instant::now() + delay);
                return;
            }
        }
        self.deferred = Some(e);
        self.phase = Phase::Done;
    }
}

#[cfg(test)]
#[path = "transport_tests.rs"]
mod tests;
