//! Test support: a scripted loopback HTTP/1.1 server for adapter tests,
//! integration tests and benchmarks. Each response is a list of steps (bytes,
//! pauses, an abrupt cut, a stall), so chunk boundaries and timing are exact.
//! Requests are recorded for assertions. Not used by the product itself.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One piece of a scripted response body.
#[derive(Debug, Clone)]
pub enum Step {
    /// Send these bytes as one chunk.
    Bytes(Vec<u8>),
    /// Wait before the next step.
    Pause(Duration),
    /// Close the connection abruptly, mid-body.
    Cut,
    /// Keep the connection open and send nothing more.
    Stall,
}

/// A scripted response.
#[derive(Debug, Clone)]
pub struct MockResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub steps: Vec<Step>,
    /// Wait before sending the status line.
    pub head_delay: Duration,
}

impl MockResponse {
    /// An SSE response: each event is sent as its own chunk.
    pub fn sse<S: AsRef<str>>(events: &[S]) -> Self {
        MockResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            steps: events
                .iter()
                .map(|e| Step::Bytes(e.as_ref().as_bytes().to_vec()))
                .collect(),
            head_delay: Duration::ZERO,
        }
    }

    /// A recorded SSE body, split into one chunk per event.
    pub fn sse_body(body: &str) -> Self {
        let events: Vec<String> = body.split_inclusive("\n\n").map(str::to_string).collect();
        Self::sse(&events)
    }

    /// An NDJSON response: each line is sent as its own chunk.
    pub fn ndjson<S: AsRef<str>>(lines: &[S]) -> Self {
        let mut r = Self::sse(lines);
        r.headers = vec![("content-type".into(), "application/x-ndjson".into())];
        r
    }

    /// A recorded NDJSON body, split into one chunk per line.
    pub fn ndjson_body(body: &str) -> Self {
        let lines: Vec<String> = body.split_inclusive('\n').map(str::to_string).collect();
        Self::ndjson(&lines)
    }

    pub fn json(status: u16, body: &str) -> Self {
        MockResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            steps: vec![Step::Bytes(body.as_bytes().to_vec())],
            head_delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, k: &str, v: &str) -> Self {
        self.headers.push((k.into(), v.into()));
        self
    }

    pub fn then(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// Insert a pause between every two steps.
    pub fn paced(mut self, d: Duration) -> Self {
        let mut out = Vec::with_capacity(self.steps.len() * 2);
        for s in self.steps.drain(..) {
            if !out.is_empty() {
                out.push(Step::Pause(d));
            }
            out.push(s);
        }
        self.steps = out;
        self
    }

    pub fn delayed(mut self, d: Duration) -> Self {
        self.head_delay = d;
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// The server. Responses are served in order; the last one repeats.
pub struct MockServer {
    pub port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl MockServer {
    pub async fn start(responses: Vec<MockResponse>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recs = requests.clone();
        let responses = Arc::new(responses);
        let task = tokio::spawn(async move {
            let mut n = 0usize;
            while let Ok((sock, _)) = listener.accept().await {
                let resp = responses.get(n.min(responses.len().saturating_sub(1))).cloned();
                n += 1;
                let recs = recs.clone();
                tokio::spawn(async move {
                    let _ = serve(sock, resp, recs).await;
                });
            }
        });
        Ok(MockServer { port, requests, task })
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The server's root, without `/v1`.
    pub fn root_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn read_request(sock: &mut TcpStream) -> std::io::Result<Option<Recorded>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let first = lines.next().unwrap_or("");
    let mut parts = first.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    Ok(Some(Recorded {
        method,
        path,
        headers,
        body,
    }))
}

async fn serve(
    mut sock: TcpStream,
    resp: Option<MockResponse>,
    recs: Arc<Mutex<Vec<Recorded>>>,
) -> std::io::Result<()> {
    let Some(req) = read_request(&mut sock).await? else {
        return Ok(());
    };
    if let Ok(mut r) = recs.lock() {
        r.push(req);
    }
    let resp = resp.unwrap_or_else(|| MockResponse::json(500, "{\"error\":\"no scripted response\"}"));
    tokio::time::sleep(resp.head_delay).await;
    let mut head = format!(
        "HTTP/1.1 {} Scripted\r\nconnection: close\r\ntransfer-encoding: chunked\r\n",
        resp.status
    );
    for (k, v) in &resp.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    sock.write_all(head.as_bytes()).await?;
    for step in resp.steps {
        match step {
            Step::Bytes(b) => {
                if b.is_empty() {
                    continue;
                }
                let mut chunk = format!("{:x}\r\n", b.len()).into_bytes();
                chunk.extend_from_slice(&b);
                chunk.extend_from_slice(b"\r\n");
                sock.write_all(&chunk).await?;
                sock.flush().await?;
            }
            Step::Pause(d) => tokio::time::sleep(d).await,
            Step::Cut => {
                // Drop without the terminating chunk: the body is incomplete.
                return Ok(());
            }
            Step::Stall => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return Ok(());
            }
        }
    }
    sock.write_all(b"0\r\n\r\n").await?;
    sock.flush().await?;
    Ok(())
}

/// OpenAI-style SSE events streaming `tokens` as text, then a finish, usage and `[DONE]`.
pub fn openai_text_events(tokens: &[&str], usage: Option<(u64, u64)>) -> Vec<String> {
    let mut v: Vec<String> = tokens
        .iter()
        .map(|t| {
            format!(
                "data: {}\n\n",
                serde_json::json!({"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":t},"finish_reason":null}]})
            )
        })
        .collect();
    v.push("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n".into());
    if let Some((i, o)) = usage {
        v.push(format!("data: {{\"id\":\"c1\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{i},\"completion_tokens\":{o},\"total_tokens\":{}}}}}\n\n", i + o));
    }
    v.push("data: [DONE]\n\n".into());
    v
}

/// Drain an adapter's stream: its events, and the error that ended it (checked
/// to be the last item).
pub async fn drain(
    mut s: crate::protocols::EventStream,
) -> (
    Vec<crate::protocols::StreamEvent>,
    Option<crate::protocols::ProtocolError>,
) {
    use futures::StreamExt;
    let mut events = Vec::new();
    while let Some(item) = s.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => {
                assert!(s.next().await.is_none(), "items after an error: {e}");
                return (events, Some(e));
            }
        }
    }
    (events, None)
}

/// All answer text in `events`.
pub fn text_of(events: &[crate::protocols::StreamEvent]) -> String {
    use crate::protocols::StreamEvent;
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// All reasoning text in `events`.
pub fn reasoning_of(events: &[crate::protocols::StreamEvent]) -> String {
    use crate::protocols::StreamEvent;
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Reasoning(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The complete tool calls in `events`.
pub fn tool_calls_of(events: &[crate::protocols::StreamEvent]) -> Vec<crate::conversation::ToolCall> {
    use crate::protocols::StreamEvent;
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

/// The waits of the retries announced in `events`.
pub fn retry_delays_of(events: &[crate::protocols::StreamEvent]) -> Vec<Duration> {
    use crate::protocols::StreamEvent;
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying { delay, .. } => Some(*delay),
            _ => None,
        })
        .collect()
}

/// One step of a scripted model response.
#[derive(Debug, Clone)]
pub enum Scripted {
    Event(crate::protocols::StreamEvent),
    Error(crate::protocols::ProtocolError),
    Pause(Duration),
}

/// An adapter that replays scripts (one per request, the last repeating) and
/// records the requests it got. Honours cancellation like a real adapter.
pub struct ScriptedAdapter {
    scripts: Mutex<std::collections::VecDeque<Vec<Scripted>>>,
    last: Mutex<Vec<Scripted>>,
    requests: Mutex<Vec<crate::protocols::ChatRequest>>,
}

impl ScriptedAdapter {
    pub fn new(scripts: Vec<Vec<Scripted>>) -> Arc<Self> {
        Arc::new(ScriptedAdapter {
            scripts: Mutex::new(scripts.into()),
            last: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
        })
    }

    /// A script that streams `text` in pieces and finishes with `stop`.
    pub fn text_script(pieces: &[&str]) -> Vec<Scripted> {
        use crate::protocols::StreamEvent;
        let mut v: Vec<Scripted> = pieces
            .iter()
            .map(|p| Scripted::Event(StreamEvent::Text((*p).to_string())))
            .collect();
        v.push(Scripted::Event(StreamEvent::Finished("stop".into())));
        v
    }

    pub fn requests(&self) -> Vec<crate::protocols::ChatRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl crate::protocols::ProtocolAdapter for ScriptedAdapter {
    fn protocol(&self) -> &'static str {
        "scripted"
    }

    fn stream(
        &self,
        request: crate::protocols::ChatRequest,
        cancel: tokio_util::sync::CancellationToken,
    ) -> crate::protocols::EventStream {
        use crate::protocols::ProtocolError;
        if let Ok(mut r) = self.requests.lock() {
            r.push(request);
        }
        let script = {
            let next = self.scripts.lock().ok().and_then(|mut s| s.pop_front());
            match next {
                Some(s) => {
                    if let Ok(mut l) = self.last.lock() {
                        *l = s.clone();
                    }
                    s
                }
                None => self.last.lock().map(|l| l.clone()).unwrap_or_default(),
            }
        };
        let items: std::collections::VecDeque<Scripted> = script.into();
        Box::pin(futures::stream::unfold(
            (items, cancel, false),
            |(mut items, cancel, ended)| async move {
                if ended {
                    return None;
                }
                loop {
                    if cancel.is_cancelled() {
                        return Some((Err(ProtocolError::Cancelled), (items, cancel, true)));
                    }
                    match items.pop_front()? {
                        Scripted::Pause(d) => {
                            tokio::select! {
                                _ = cancel.cancelled() => return Some((Err(ProtocolError::Cancelled), (items, cancel, true))),
                                _ = tokio::time::sleep(d) => {}
                            }
                        }
                        Scripted::Event(e) => return Some((Ok(e), (items, cancel, false))),
                        Scripted::Error(e) => return Some((Err(e), (items, cancel, true))),
                    }
                }
            },
        ))
    }
}

/// A fast local SSE source for benchmarks: llama.cpp-shaped chat chunks,
/// generated on the server's own thread and written in ~64 KiB pieces.
pub mod sse_bench {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// One llama.cpp-shaped SSE event for token `i`. With `vary`, each chunk gets
    /// its own id (as servers with per-chunk ids or padding do), so no two chunks
    /// share their bytes around the content and every chunk is fully parsed.
    pub fn event(i: usize, vary: bool, out: &mut Vec<u8>) {
        const WORDS: [&str; 13] = [
            "The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".", "\\n", " Ünï", " 漢字",
        ];
        write!(
            out,
            "data: {{\"choices\":[{{\"finish_reason\":null,\"index\":0,\"delta\":{{\"content\":\"{}\"}}}}],\"created\":1795288438,\"id\":\"chatcmpl-pthDKBNeDXFFPgIRMKt{:016}\",\"model\":\"smollm2\",\"system_fingerprint\":\"b0-unknown\",\"object\":\"chat.completion.chunk\"}}\n\n",
            WORDS[i % WORDS.len()],
            if vary { i } else { 0 }
        )
        .unwrap();
    }

    pub fn tail(n: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(b"data: {\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}]}\n\n");
        write!(
            out,
            "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":10,\"completion_tokens\":{n}}}}}\n\ndata: [DONE]\n\n"
        )
        .unwrap();
    }

    /// Total body size for `n` tokens (the same with or without `vary`).
    pub fn body_len(n: usize) -> usize {
        let mut v = Vec::new();
        let mut size = |i: usize| {
            v.clear();
            event(i, false, &mut v);
            v.len()
        };
        let per_cycle: usize = (0..13).map(&mut size).sum();
        let rest: usize = (0..n % 13).map(&mut size).sum();
        let mut t = Vec::new();
        tail(n, &mut t);
        per_cycle * (n / 13) + rest + t.len()
    }

    /// Serve an `n`-token SSE body to every connection, generated on the fly on the
    /// server's own thread (its CPU is not counted), written in ~64 KiB pieces.
    pub fn serve(n: usize, vary: bool) -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::Builder::new().name("sse-server".into());
        server.spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                let conn = std::thread::Builder::new().name("sse-conn".into());
                let _ = conn.spawn(move || {
                    let mut req = Vec::new();
                    let mut buf = [0u8; 4096];
                    // Read headers and the (small) body.
                    loop {
                        let r = s.read(&mut buf).unwrap_or(0);
                        if r == 0 {
                            return;
                        }
                        req.extend_from_slice(&buf[..r]);
                        if let Some(h) = req.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&req[..h]).to_lowercase();
                            let len = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            if req.len() >= h + 4 + len {
                                break;
                            }
                        }
                    }
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body_len(n)
                    );
                    let _ = s.write_all(head.as_bytes());
                    let mut chunk = Vec::with_capacity(70 * 1024);
                    for i in 0..n {
                        event(i, vary, &mut chunk);
                        if chunk.len() >= 64 * 1024 {
                            if s.write_all(&chunk).is_err() {
                                return;
                            }
                            chunk.clear();
                        }
                    }
                    tail(n, &mut chunk);
                    let _ = s.write_all(&chunk);
                });
            }
        })
        .expect("bench server thread");
        port
    }
}
