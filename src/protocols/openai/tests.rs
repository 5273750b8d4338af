//! OpenAI adapter against a loopback server serving recorded bodies and faults.

use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::{EndpointConfig, Secrets};
use crate::conversation::{Message, Params};
use crate::protocols::{ProtocolAdapter, StreamEvent, TimeoutPhase};
use crate::testkit::{MockResponse, MockServer, Step, openai_text_events};

const TEXT_SSE: &str = include_str!("../../../tests/fixtures/openai/llamacpp_text.sse");
const TOOL_SSE: &str = include_str!("../../../tests/fixtures/openai/llamacpp_tool_call.sse");
const REASONING_SSE: &str = include_str!("../../../tests/fixtures/openai/reasoning_content.sse");
const THINK_SSE: &str = include_str!("../../../tests/fixtures/openai/think_tags.sse");
const NONSTREAM_JSON: &str = include_str!("../../../tests/fixtures/openai/nonstream.json");

fn endpoint(server: &MockServer) -> EndpointConfig {
    let mut e = EndpointConfig::openai("mock", &server.base_url());
    e.first_token_timeout = Duration::from_secs(10);
    e.idle_timeout = Duration::from_secs(10);
    e.max_retries = 3;
    e
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "smollm2".into(),
        messages: vec![Message::system("be brief"), Message::user("Say hi")],
        tools: vec![],
        params: Params {
            temperature: Some(0.5),
            max_tokens: Some(12),
            tool_choice: None,
            response_schema: None,
        },
    }
}

async fn run(adapter: &OpenAiChat, cancel: CancellationToken) -> (Vec<StreamEvent>, Option<ProtocolError>) {
    let mut s = adapter.stream(request(), cancel);
    let mut events = Vec::new();
    while let Some(item) = s.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => {
                // An error is always the last item.
                assert!(s.next().await.is_none(), "items after an error");
                return (events, Some(e));
            }
        }
    }
    (events, None)
}

fn text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn reasoning(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Reasoning(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn retries(events: &[StreamEvent]) -> Vec<Duration> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying { delay, .. } => Some(*delay),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn happy_path_streams_text_usage_and_finish_and_sends_the_right_request() {
    let server = MockServer::start(vec![MockResponse::sse_body(TEXT_SSE)]).await.unwrap();
    let mut cfg = endpoint(&server);
    cfg.api_key_env = Some("MOCK_KEY".into());
    cfg.headers = vec![("X-Extra".into(), "v-${MOCK_KEY}".into())];
    let a = OpenAiChat::new(&cfg, &Secrets::from_pairs([("MOCK_KEY", "sk-test-123")]));
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(err, None);
    assert_eq!(text(&ev), "I'm glad you're here! I'm glad to meet");
    assert!(ev.contains(&StreamEvent::Usage(Usage {
        input_tokens: 34,
        output_tokens: 12
    })));
    assert_eq!(ev.iter().filter(|e| matches!(e, StreamEvent::Finished(_))).count(), 1);
    assert!(ev.contains(&StreamEvent::Finished("length".into())));

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(r.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(r.header("x-extra"), Some("v-sk-test-123"));
    let j = r.json();
    assert_eq!(j["model"], "smollm2");
    assert_eq!(j["stream"], true);
    assert_eq!(j["stream_options"]["include_usage"], true);
    assert_eq!(j["max_tokens"], 12);
    assert_eq!(j["temperature"], 0.5);
    assert_eq!(
        j["messages"][0],
        serde_json::json!({"role":"system","content":"be brief"})
    );
    assert_eq!(j["messages"][1], serde_json::json!({"role":"user","content":"Say hi"}));
    assert!(j.get("tools").is_none());
}

#[tokio::test]
async fn streamed_tool_call_deltas_assemble_into_complete_calls() {
    let server = MockServer::start(vec![MockResponse::sse_body(TOOL_SSE)]).await.unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(err, None);
    let calls: Vec<_> = ev
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    for c in &calls {
        assert_eq!(c.name, "get_weather");
        let args: serde_json::Value = serde_json::from_str(&c.arguments).unwrap();
        assert_eq!(args, serde_json::json!({"city": "Paris"}));
    }
    assert_eq!(calls[0].id, "vxMUkd6Y1O2DzsNHbbsrp2DvIc3l6d8v");
    assert_ne!(calls[0].id, calls[1].id);
    assert!(ev.contains(&StreamEvent::Finished("tool_calls".into())));
    let starts = ev
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallStart { .. }))
        .count();
    assert_eq!(starts, 2);
}

#[tokio::test]
async fn tool_definitions_and_tool_messages_use_openai_shapes() {
    let mut req = request();
    req.tools = vec![crate::protocols::ToolSpec {
        name: "get_weather".into(),
        description: "Weather".into(),
        parameters: serde_json::json!({"type":"object"}),
    }];
    let mut asst = Message::assistant("");
    asst.tool_calls = vec![crate::conversation::ToolCall {
        id: "c1".into(),
        name: "get_weather".into(),
        arguments: "{}".into(),
    }];
    req.messages.push(asst);
    req.messages.push(Message::tool_result("c1", "21C"));
    let b = request_body(&req);
    assert_eq!(b["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(b["tools"][0]["type"], "function");
    assert_eq!(b["messages"][2]["content"], serde_json::Value::Null);
    assert_eq!(b["messages"][2]["tool_calls"][0]["function"]["arguments"], "{}");
    assert_eq!(
        b["messages"][3],
        serde_json::json!({"role":"tool","tool_call_id":"c1","content":"21C"})
    );
}

#[test]
fn a_response_schema_becomes_a_strict_json_schema_response_format() {
    let mut req = request();
    let schema = serde_json::json!({"type":"object","properties":{"winner":{"type":"string"}},"required":["winner"],"additionalProperties":false});
    assert!(request_body(&req).get("response_format").is_none());
    req.params.response_schema = Some(schema.clone());
    let b = request_body(&req);
    assert_eq!(b["response_format"]["type"], "json_schema");
    assert_eq!(b["response_format"]["json_schema"]["strict"], true);
    assert_eq!(b["response_format"]["json_schema"]["schema"], schema);
}

#[tokio::test]
async fn endpoint_stop_sequences_are_sent() {
    let server = MockServer::start(vec![MockResponse::sse(&openai_text_events(&["ok"], None))])
        .await
        .unwrap();
    let mut cfg = endpoint(&server);
    cfg.stop = vec!["\nUser:".into()];
    let (_, err) = run(&OpenAiChat::new(&cfg, &Secrets::default()), CancellationToken::new()).await;
    assert_eq!(err, None);
    assert_eq!(server.requests()[0].json()["stop"], serde_json::json!(["\nUser:"]));
}

#[tokio::test]
async fn reasoning_content_field_is_reasoning() {
    let server = MockServer::start(vec![MockResponse::sse_body(REASONING_SSE)])
        .await
        .unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(err, None);
    assert_eq!(reasoning(&ev), "The user wants a sum.");
    assert_eq!(text(&ev), "2 + 2 = 4");
    assert!(ev.contains(&StreamEvent::Usage(Usage {
        input_tokens: 9,
        output_tokens: 11
    })));
}

#[tokio::test]
async fn think_tags_split_across_chunks_become_reasoning() {
    let server = MockServer::start(vec![MockResponse::sse_body(THINK_SSE)])
        .await
        .unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(err, None);
    assert_eq!(reasoning(&ev), "Count: one, two.");
    assert_eq!(text(&ev), "Two apples.");
}

#[tokio::test]
async fn unauthorized_names_the_env_variable_and_is_not_retried() {
    let server = MockServer::start(vec![MockResponse::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided: sk-live-SECRET99","type":"invalid_request_error"}}"#,
    )])
    .await
    .unwrap();
    let mut cfg = endpoint(&server);
    cfg.api_key_env = Some("OPENAI_API_KEY".into());
    let a = OpenAiChat::new(&cfg, &Secrets::from_pairs([("OPENAI_API_KEY", "sk-live-SECRET99")]));
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert!(ev.is_empty());
    let err = err.unwrap();
    assert!(matches!(err, ProtocolError::Auth { status: 401, .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("OPENAI_API_KEY"), "{msg}");
    assert!(!msg.contains("SECRET99"), "the key leaked into the message: {msg}");
    assert!(msg.contains("[redacted]"), "{msg}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn missing_key_fails_before_any_request() {
    let server = MockServer::start(vec![MockResponse::sse_body(TEXT_SSE)]).await.unwrap();
    let mut cfg = endpoint(&server);
    cfg.api_key_env = Some("PAI_NOT_SET_ANYWHERE".into());
    let a = OpenAiChat::new(&cfg, &Secrets::from_pairs::<[(&str, &str); 0], _, _>([]));
    let (_, err) = run(&a, CancellationToken::new()).await;
    let err = err.unwrap();
    assert!(err.to_string().contains("PAI_NOT_SET_ANYWHERE"), "{err}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_succeeds() {
    let server = MockServer::start(vec![
        MockResponse::json(429, r#"{"error":{"message":"Rate limit exceeded"}}"#).header("retry-after", "1"),
        MockResponse::sse(&openai_text_events(&["Hel", "lo"], Some((3, 2)))),
    ])
    .await
    .unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(err, None);
    assert_eq!(retries(&ev), vec![Duration::from_secs(1)]);
    assert_eq!(text(&ev), "Hello");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn server_error_is_retried_with_backoff_then_succeeds() {
    let server = MockServer::start(vec![
        MockResponse::json(500, r#"{"error":{"message":"Internal error"}}"#),
        MockResponse::json(503, "overloaded"),
        MockResponse::sse(&openai_text_events(&["ok"], None)),
    ])
    .await
    .unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(err, None);
    let waits = retries(&ev);
    assert_eq!(waits.len(), 2);
    assert!(
        waits[0] >= Duration::from_millis(250) && waits[0] <= Duration::from_millis(500),
        "{waits:?}"
    );
    assert!(
        waits[1] >= Duration::from_millis(500) && waits[1] <= Duration::from_millis(1000),
        "{waits:?}"
    );
    assert_eq!(text(&ev), "ok");
}

#[tokio::test]
async fn retries_stop_at_max_retries_with_the_last_error() {
    let server = MockServer::start(vec![MockResponse::json(502, "bad gateway")])
        .await
        .unwrap();
    let mut cfg = endpoint(&server);
    cfg.max_retries = 1;
    let a = OpenAiChat::new(&cfg, &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(retries(&ev).len(), 1);
    assert!(matches!(err, Some(ProtocolError::Http { status: 502, .. })), "{err:?}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn stream_cut_after_output_keeps_text_and_does_not_retry() {
    let mut events = openai_text_events(&["partial ", "answer"], None);
    events.truncate(2);
    let server = MockServer::start(vec![MockResponse::sse(&events).then(Step::Cut)])
        .await
        .unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(text(&ev), "partial answer");
    let err = err.unwrap();
    assert!(
        matches!(err, ProtocolError::Network { .. } | ProtocolError::Truncated),
        "{err:?}"
    );
    assert!(err.to_string().contains("kept"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn stream_cut_before_any_output_is_retried() {
    let server = MockServer::start(vec![
        MockResponse::sse(&["data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"])
            .then(Step::Cut),
        MockResponse::sse(&openai_text_events(&["second try"], None)),
    ])
    .await
    .unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(err, None);
    assert_eq!(retries(&ev).len(), 1);
    assert_eq!(text(&ev), "second try");
}

#[tokio::test]
async fn malformed_chunk_is_an_error_with_context_after_the_good_text() {
    let mut events = openai_text_events(&["good "], None);
    events.insert(1, "data: {\"choices\":[{\"delta\":{\"content\":\"bro\n\n".into());
    let server = MockServer::start(vec![MockResponse::sse(&events)]).await.unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(text(&ev), "good ");
    match err {
        Some(ProtocolError::Decode { context, .. }) => assert!(context.contains("bro"), "{context}"),
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[tokio::test]
async fn error_object_mid_stream_is_reported() {
    let mut events = openai_text_events(&["a"], None);
    events.insert(1, "data: {\"error\":{\"message\":\"model crashed\"}}\n\n".into());
    let server = MockServer::start(vec![MockResponse::sse(&events)]).await.unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(text(&ev), "a");
    assert_eq!(
        err,
        Some(ProtocolError::Server {
            detail: "model crashed".into()
        })
    );
}

#[tokio::test]
async fn stall_mid_stream_hits_the_idle_timeout() {
    let mut events = openai_text_events(&["slow"], None);
    events.truncate(1);
    let server = MockServer::start(vec![MockResponse::sse(&events).then(Step::Stall)])
        .await
        .unwrap();
    let mut cfg = endpoint(&server);
    cfg.idle_timeout = Duration::from_millis(300);
    let a = OpenAiChat::new(&cfg, &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(text(&ev), "slow");
    assert_eq!(
        err,
        Some(ProtocolError::Timeout {
            phase: TimeoutPhase::Idle,
            after: Duration::from_millis(300)
        })
    );
}

#[tokio::test]
async fn silent_server_hits_the_first_token_timeout_without_retrying() {
    let server = MockServer::start(vec![
        MockResponse::sse(&openai_text_events(&["late"], None)).delayed(Duration::from_secs(30)),
    ])
    .await
    .unwrap();
    let mut cfg = endpoint(&server);
    cfg.first_token_timeout = Duration::from_millis(300);
    let a = OpenAiChat::new(&cfg, &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert!(ev.is_empty());
    assert!(
        matches!(
            err,
            Some(ProtocolError::Timeout {
                phase: TimeoutPhase::FirstToken,
                ..
            })
        ),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn cancellation_ends_the_stream_promptly_keeping_what_arrived() {
    let events = openai_text_events(&["one ", "two ", "three ", "four"], None);
    let server = MockServer::start(vec![MockResponse::sse(&events).paced(Duration::from_millis(400))])
        .await
        .unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    let cancel = CancellationToken::new();
    let mut s = a.stream(request(), cancel.clone());
    let first = s.next().await.unwrap().unwrap();
    assert_eq!(first, StreamEvent::Text("one ".into()));
    cancel.cancel();
    let next = tokio::time::timeout(Duration::from_secs(5), s.next())
        .await
        .expect("cancel must not wait for the server");
    assert_eq!(next, Some(Err(ProtocolError::Cancelled)));
    assert_eq!(s.next().await, None);
}

#[tokio::test]
async fn plain_json_response_is_accepted_as_a_whole_answer() {
    let server = MockServer::start(vec![MockResponse::json(200, NONSTREAM_JSON)])
        .await
        .unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(err, None);
    assert_eq!(text(&ev), "Paris is sunny.");
    assert!(
        ev.iter().any(
            |e| matches!(e, StreamEvent::ToolCall(c) if c.id == "call_9" && c.arguments == "{\"city\":\"Paris\"}")
        )
    );
    assert!(ev.contains(&StreamEvent::Usage(Usage {
        input_tokens: 20,
        output_tokens: 7
    })));
    assert!(ev.contains(&StreamEvent::Finished("tool_calls".into())));
}

#[tokio::test]
async fn refused_connection_is_retried_then_says_what_to_do() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut cfg = EndpointConfig::openai("gone", &format!("http://127.0.0.1:{port}/v1"));
    cfg.max_retries = 1;
    let a = OpenAiChat::new(&cfg, &Secrets::default());
    let (ev, err) = run(&a, CancellationToken::new()).await;
    assert_eq!(retries(&ev).len(), 1);
    let err = err.unwrap();
    assert!(matches!(err, ProtocolError::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains("is the server running"), "{err}");
}

#[tokio::test]
async fn models_are_listed_sorted() {
    let server = MockServer::start(vec![MockResponse::json(
        200,
        r#"{"object":"list","data":[{"id":"zeta"},{"id":"alpha"}]}"#,
    )])
    .await
    .unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    assert_eq!(
        a.list_models(CancellationToken::new()).await.unwrap(),
        vec!["alpha", "zeta"]
    );
    assert_eq!(server.requests()[0].path, "/v1/models");
}

#[tokio::test]
async fn context_overflow_is_recognised() {
    let server = MockServer::start(vec![MockResponse::json(
        400,
        r#"{"error":{"message":"This model's maximum context length is 4096 tokens."}}"#,
    )])
    .await
    .unwrap();
    let a = OpenAiChat::new(&endpoint(&server), &Secrets::default());
    let (_, err) = run(&a, CancellationToken::new()).await;
    assert!(matches!(err, Some(ProtocolError::ContextLength { .. })), "{err:?}");
}

/// Decode chunks one by one through the full decoder (template fast path on).
fn decode_all(chunks: &[&str]) -> (Vec<StreamEvent>, Option<ProtocolError>) {
    let mut d = ChatDecoder::new(false);
    let mut q = std::collections::VecDeque::new();
    for c in chunks {
        let body = format!("data: {c}\n\n");
        if let Err(e) = d.feed(body.as_bytes(), &mut q) {
            return (q.into_iter().collect(), Some(e));
        }
    }
    let r = d.finish(&mut q).err();
    (q.into_iter().collect(), r)
}

fn llama_chunk(content_json: &str, created: u64) -> String {
    format!(
        r#"{{"choices":[{{"finish_reason":null,"index":0,"delta":{{"content":{content_json}}}}}],"created":{created},"id":"chatcmpl-x","model":"m","object":"chat.completion.chunk"}}"#
    )
}

#[test]
fn chunk_template_fast_path_matches_a_full_parse() {
    let chunks = [
        llama_chunk(r#""Hel""#, 1),        // learns the template
        llama_chunk(r#""lo""#, 1),         // fast path
        llama_chunk(r#""\u00e9""#, 1),     // escape: full parse
        llama_chunk(r#""\u00e9x""#, 1),    // starts like the escape: must not be misread
        llama_chunk(r#""q\"uote""#, 1),    // escaped quote: full parse
        llama_chunk(r#""new second""#, 2), // suffix differs: full parse, relearn
        llama_chunk(r#"" ok""#, 2),        // fast path again
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"a","reasoning_content":"r"}}]}"#.to_string(),
        llama_chunk(r#""""#, 2), // empty content
        r#"{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":2,"id":"chatcmpl-x","model":"m","object":"chat.completion.chunk"}"#
            .to_string(),
        "[DONE]".to_string(),
    ];
    let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let (ev, err) = decode_all(&refs);
    assert_eq!(err, None);
    assert_eq!(text(&ev), "Helloééxq\"uotenew second oka");
    assert_eq!(reasoning(&ev), "r");
    assert!(ev.contains(&StreamEvent::Finished("stop".into())));
}

#[test]
fn chunk_template_never_hides_malformed_data() {
    // Same prefix and suffix as a learned chunk, but a raw quote in the middle.
    let bad = llama_chunk(r#""a"b""#, 1);
    let (ev, err) = decode_all(&[&llama_chunk(r#""ok""#, 1), &bad]);
    assert_eq!(text(&ev), "ok");
    assert!(matches!(err, Some(ProtocolError::Decode { .. })), "{err:?}");
    // Invalid UTF-8 in the middle falls back to the full parse, which rejects it.
    let mut d = ChatDecoder::new(false);
    let mut q = std::collections::VecDeque::new();
    d.feed(format!("data: {}\n\n", llama_chunk(r#""ok""#, 1)).as_bytes(), &mut q)
        .unwrap();
    let mut raw = format!("data: {}\n\n", llama_chunk(r#""XX""#, 1)).into_bytes();
    let at = raw.windows(2).position(|w| w == b"XX").unwrap();
    raw[at] = 0xff;
    assert!(matches!(d.feed(&raw, &mut q), Err(ProtocolError::Decode { .. })));
}
