//! Anthropic adapter against a loopback server serving recorded bodies and faults.

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::{EndpointConfig, Secrets};
use crate::conversation::{Message, Params, ToolCall};
use crate::protocols::{ProtocolAdapter, StreamEvent, TimeoutPhase, ToolSpec};
use crate::testkit::{MockResponse, MockServer, Step, drain, reasoning_of, retry_delays_of, text_of, tool_calls_of};

/// Recorded from llama.cpp's `/v1/messages` (the lab LLM).
const LLAMACPP_TEXT: &str = include_str!("../../../tests/fixtures/anthropic/llamacpp_text.sse");
/// Recorded from aimock: a tool_use block with one input_json_delta.
const AIMOCK_TOOL_USE: &str = include_str!("../../../tests/fixtures/anthropic/aimock_tool_use.sse");
/// Hand-written after Anthropic's documented stream: thinking, text, two tool_use blocks.
const THINKING_TOOLS: &str = include_str!("../../../tests/fixtures/anthropic/thinking_tool_use.sse");

fn endpoint(base_url: &str) -> EndpointConfig {
    let mut e = EndpointConfig::openai("mock", base_url).with_protocol("anthropic");
    e.first_token_timeout = Duration::from_secs(10);
    e.idle_timeout = Duration::from_secs(10);
    e.max_retries = 3;
    e
}

fn adapter(server: &MockServer) -> AnthropicMessages {
    AnthropicMessages::new(&endpoint(&server.root_url()), &Secrets::default())
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

async fn run(a: &AnthropicMessages) -> (Vec<StreamEvent>, Option<ProtocolError>) {
    drain(a.stream(request(), CancellationToken::new())).await
}

/// Anthropic-style SSE events streaming `tokens` as one text block.
fn text_events(tokens: &[&str], stop_reason: &str) -> Vec<String> {
    let ev = |v: serde_json::Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or(""));
    let mut out = vec![
        ev(
            json!({"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":5,"output_tokens":1}}}),
        ),
        ev(json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})),
    ];
    for t in tokens {
        out.push(ev(
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":t}}),
        ));
    }
    out.push(ev(json!({"type":"content_block_stop","index":0})));
    out.push(ev(
        json!({"type":"message_delta","delta":{"stop_reason":stop_reason,"stop_sequence":null},"usage":{"output_tokens":tokens.len()}}),
    ));
    out.push(ev(json!({"type":"message_stop"})));
    out
}

#[tokio::test]
async fn recorded_llamacpp_stream_gives_text_usage_and_finish_and_the_request_is_right() {
    let server = MockServer::start(vec![MockResponse::sse_body(LLAMACPP_TEXT)])
        .await
        .unwrap();
    let mut cfg = endpoint(&server.root_url());
    cfg.api_key_env = Some("ANTHROPIC_API_KEY".into());
    let a = AnthropicMessages::new(&cfg, &Secrets::from_pairs([("ANTHROPIC_API_KEY", "sk-ant-test-1")]));
    let (ev, err) = run(&a).await;
    assert_eq!(err, None);
    assert_eq!(
        text_of(&ev),
        "Hello! I'm here to help with your creative writing project"
    );
    // input_tokens 1 + cache_read_input_tokens 17.
    assert!(ev.contains(&StreamEvent::Usage(Usage {
        input_tokens: 18,
        output_tokens: 12
    })));
    assert_eq!(ev.iter().filter(|e| matches!(e, StreamEvent::Finished(_))).count(), 1);
    assert_eq!(ev.last(), Some(&StreamEvent::Finished("length".into())));

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1/messages"));
    assert_eq!(r.header("x-api-key"), Some("sk-ant-test-1"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let j = r.json();
    assert_eq!(j["model"], "smollm2");
    assert_eq!(j["stream"], true);
    assert_eq!(j["max_tokens"], 12);
    assert_eq!(j["temperature"], 0.5);
    assert_eq!(j["system"], "be brief");
    assert_eq!(j["messages"], json!([{"role":"user","content":"Say hi"}]));
    assert!(j.get("tools").is_none() && j.get("stop_sequences").is_none());
}

#[tokio::test]
async fn base_url_with_v1_works_and_max_tokens_defaults() {
    let server = MockServer::start(vec![MockResponse::sse(&text_events(&["ok"], "end_turn"))])
        .await
        .unwrap();
    let a = AnthropicMessages::new(&endpoint(&server.base_url()), &Secrets::default());
    let mut req = request();
    req.params = Params::default();
    let (ev, err) = drain(a.stream(req, CancellationToken::new())).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&ev), "ok");
    assert!(ev.contains(&StreamEvent::Finished("stop".into())));
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.json()["max_tokens"], DEFAULT_MAX_TOKENS);
    assert!(r.json().get("temperature").is_none());
}

#[tokio::test]
async fn thinking_text_and_streamed_tool_input_assemble() {
    let server = MockServer::start(vec![MockResponse::sse_body(THINKING_TOOLS)])
        .await
        .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    assert_eq!(
        reasoning_of(&ev),
        "The user wants the weather in Paris; I should call the tool."
    );
    assert_eq!(text_of(&ev), "Let me check that for you.");
    let calls = tool_calls_of(&ev);
    assert_eq!(
        calls,
        vec![
            ToolCall {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "get_weather".into(),
                arguments: "{\"city\": \"Paris\", \"unit\": \"celsius\"}".into(),
            },
            ToolCall {
                id: "toolu_02Time".into(),
                name: "current_time".into(),
                arguments: "{}".into(),
            },
        ]
    );
    let starts: Vec<usize> = ev
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStart { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![0, 1], "tool calls are numbered among tools, not blocks");
    assert!(ev.contains(&StreamEvent::Usage(Usage {
        input_tokens: 512,
        output_tokens: 89
    })));
    assert_eq!(ev.last(), Some(&StreamEvent::Finished("tool_calls".into())));
}

#[tokio::test]
async fn recorded_aimock_tool_use_is_one_complete_call_and_zero_usage_is_not_reported() {
    let server = MockServer::start(vec![MockResponse::sse_body(AIMOCK_TOOL_USE)])
        .await
        .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    let calls = tool_calls_of(&ev);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "get_weather");
    assert!(calls[0].id.starts_with("toolu_"), "{}", calls[0].id);
    let args: serde_json::Value = serde_json::from_str(&calls[0].arguments).unwrap();
    assert_eq!(args, json!({"city": "Paris"}));
    assert!(!ev.iter().any(|e| matches!(e, StreamEvent::Usage(_))), "{ev:?}");
    assert_eq!(ev.last(), Some(&StreamEvent::Finished("tool_calls".into())));
}

#[test]
fn any_chunking_of_a_recorded_stream_decodes_the_same() {
    let whole = {
        let mut d = MessagesDecoder::new(false);
        let mut q = std::collections::VecDeque::new();
        d.feed(THINKING_TOOLS.as_bytes(), &mut q).unwrap();
        d.finish(&mut q).unwrap();
        q.into_iter().collect::<Vec<_>>()
    };
    for size in [1, 2, 3, 7, 64] {
        let mut d = MessagesDecoder::new(false);
        let mut q = std::collections::VecDeque::new();
        for c in THINKING_TOOLS.as_bytes().chunks(size) {
            d.feed(c, &mut q).unwrap();
        }
        d.finish(&mut q).unwrap();
        let ev: Vec<_> = q.into_iter().collect();
        assert_eq!(text_of(&ev), text_of(&whole), "chunk size {size}");
        assert_eq!(reasoning_of(&ev), reasoning_of(&whole), "chunk size {size}");
        assert_eq!(tool_calls_of(&ev), tool_calls_of(&whole), "chunk size {size}");
        assert_eq!(ev.last(), whole.last(), "chunk size {size}");
    }
}

#[test]
fn messages_alternate_with_system_on_top_and_tool_blocks() {
    let mut asst = Message::assistant("Checking.");
    asst.tool_calls = vec![
        ToolCall {
            id: "toolu_1".into(),
            name: "get_weather".into(),
            arguments: "{\"city\":\"Paris\"}".into(),
        },
        ToolCall {
            id: "toolu_2".into(),
            name: "current_time".into(),
            arguments: "not json".into(),
        },
    ];
    let req = ChatRequest {
        model: "claude".into(),
        messages: vec![
            Message::system("Be brief."),
            Message::user("Hi"),
            Message::user("Weather in Paris?"),
            asst,
            Message::tool_result("toolu_1", "21C"),
            Message::tool_result("toolu_2", "12:00"),
            Message::user("Thanks. And tomorrow?"),
            Message::assistant(""),
            Message::system("Answer in French."),
        ],
        tools: vec![ToolSpec {
            name: "get_weather".into(),
            description: "Weather for a city".into(),
            parameters: json!({"type":"object","properties":{"city":{"type":"string"}}}),
        }],
        params: Params::default(),
    };
    let b = request_body(&req, &["\n\nHuman:".to_string()]);
    assert_eq!(b["system"], "Be brief.\n\nAnswer in French.");
    assert_eq!(
        b["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "Hi"},
                {"type": "text", "text": "Weather in Paris?"},
            ]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "current_time", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21C"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "12:00"},
                {"type": "text", "text": "Thanks. And tomorrow?"},
            ]},
        ])
    );
    assert_eq!(
        b["tools"],
        json!([{"name": "get_weather", "description": "Weather for a city",
                "input_schema": {"type":"object","properties":{"city":{"type":"string"}}}}])
    );
    assert_eq!(b["stop_sequences"], json!(["\n\nHuman:"]));
}

#[test]
fn stop_reasons_map_to_ours() {
    assert_eq!(finish_reason(Some("end_turn"), false), "stop");
    assert_eq!(finish_reason(Some("stop_sequence"), false), "stop");
    assert_eq!(finish_reason(Some("max_tokens"), false), "length");
    assert_eq!(finish_reason(Some("tool_use"), true), "tool_calls");
    assert_eq!(finish_reason(Some("refusal"), false), "content_filter");
    assert_eq!(finish_reason(Some("pause_turn"), false), "pause_turn");
    assert_eq!(finish_reason(None, true), "tool_calls");
}

#[tokio::test]
async fn unauthorized_names_the_env_variable_and_hides_the_key() {
    let server = MockServer::start(vec![MockResponse::json(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-SECRET77"}}"#,
    )])
    .await
    .unwrap();
    let mut cfg = endpoint(&server.root_url());
    cfg.api_key_env = Some("ANTHROPIC_API_KEY".into());
    let a = AnthropicMessages::new(&cfg, &Secrets::from_pairs([("ANTHROPIC_API_KEY", "sk-ant-SECRET77")]));
    let (ev, err) = run(&a).await;
    assert!(ev.is_empty());
    let err = err.unwrap();
    assert!(matches!(err, ProtocolError::Auth { status: 401, .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("ANTHROPIC_API_KEY"), "{msg}");
    assert!(!msg.contains("SECRET77") && msg.contains("[redacted]"), "{msg}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn overloaded_529_and_rate_limit_429_honour_retry_after_then_succeed() {
    let server = MockServer::start(vec![
        MockResponse::json(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .header("retry-after", "1"),
        MockResponse::json(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Rate limit exceeded"}}"#,
        )
        .header("retry-after-ms", "200"),
        MockResponse::sse(&text_events(&["Hel", "lo"], "end_turn")),
    ])
    .await
    .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    assert_eq!(
        retry_delays_of(&ev),
        vec![Duration::from_secs(1), Duration::from_millis(200)]
    );
    let reasons: Vec<&str> = ev
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying { reason, .. } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons, vec!["rate limited (529)", "rate limited (429)"]);
    assert_eq!(text_of(&ev), "Hello");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn overloaded_error_event_before_output_is_retried() {
    let overloaded = vec![
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n",
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    ];
    let server = MockServer::start(vec![
        MockResponse::sse(&overloaded),
        MockResponse::sse(&text_events(&["fine"], "end_turn")),
    ])
    .await
    .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    assert_eq!(retry_delays_of(&ev).len(), 1);
    assert_eq!(text_of(&ev), "fine");
}

#[tokio::test]
async fn error_event_after_output_ends_the_stream_keeping_the_text() {
    let mut events = text_events(&["partial"], "end_turn");
    events.truncate(3);
    events.push(
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
            .into(),
    );
    let server = MockServer::start(vec![MockResponse::sse(&events)]).await.unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(text_of(&ev), "partial");
    assert_eq!(
        err,
        Some(ProtocolError::Server {
            detail: "Overloaded (overloaded_error)".into()
        })
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_error_is_retried_with_backoff_then_succeeds() {
    let server = MockServer::start(vec![
        MockResponse::json(
            500,
            r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
        ),
        MockResponse::sse(&text_events(&["ok"], "end_turn")),
    ])
    .await
    .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    let waits = retry_delays_of(&ev);
    assert_eq!(waits.len(), 1);
    assert!(
        waits[0] >= Duration::from_millis(250) && waits[0] <= Duration::from_millis(500),
        "{waits:?}"
    );
    assert_eq!(text_of(&ev), "ok");
}

#[tokio::test]
async fn stream_cut_after_output_keeps_text_and_does_not_retry() {
    let mut events = text_events(&["partial ", "answer"], "end_turn");
    events.truncate(4);
    let server = MockServer::start(vec![MockResponse::sse(&events).then(Step::Cut)])
        .await
        .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(text_of(&ev), "partial answer");
    let err = err.unwrap();
    assert!(
        matches!(err, ProtocolError::Network { .. } | ProtocolError::Truncated),
        "{err:?}"
    );
    assert!(err.to_string().contains("kept"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn body_ending_without_message_stop_after_a_stop_reason_is_complete() {
    let mut events = text_events(&["done"], "end_turn");
    events.pop();
    let server = MockServer::start(vec![MockResponse::sse(&events)]).await.unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    assert_eq!(ev.last(), Some(&StreamEvent::Finished("stop".into())));
}

#[tokio::test]
async fn malformed_event_is_an_error_with_context_after_the_good_text() {
    let mut events = text_events(&["good "], "end_turn");
    events.insert(
        3,
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"text\":\"bro\n\n"
            .into(),
    );
    let server = MockServer::start(vec![MockResponse::sse(&events)]).await.unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(text_of(&ev), "good ");
    match err {
        Some(ProtocolError::Decode { context, .. }) => assert!(context.contains("bro"), "{context}"),
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[tokio::test]
async fn stall_mid_stream_hits_the_idle_timeout() {
    let mut events = text_events(&["slow"], "end_turn");
    events.truncate(3);
    let server = MockServer::start(vec![MockResponse::sse(&events).then(Step::Stall)])
        .await
        .unwrap();
    let mut cfg = endpoint(&server.root_url());
    cfg.idle_timeout = Duration::from_millis(300);
    let (ev, err) = run(&AnthropicMessages::new(&cfg, &Secrets::default())).await;
    assert_eq!(text_of(&ev), "slow");
    assert_eq!(
        err,
        Some(ProtocolError::Timeout {
            phase: TimeoutPhase::Idle,
            after: Duration::from_millis(300)
        })
    );
}

#[tokio::test]
async fn cancellation_ends_the_stream_promptly_keeping_what_arrived() {
    let events = text_events(&["one ", "two ", "three "], "end_turn");
    let server = MockServer::start(vec![MockResponse::sse(&events).paced(Duration::from_millis(400))])
        .await
        .unwrap();
    let a = adapter(&server);
    let cancel = CancellationToken::new();
    let mut s = a.stream(request(), cancel.clone());
    assert_eq!(s.next().await, Some(Ok(StreamEvent::Text("one ".into()))));
    cancel.cancel();
    let next = tokio::time::timeout(Duration::from_secs(5), s.next())
        .await
        .expect("cancel must not wait for the server");
    assert_eq!(next, Some(Err(ProtocolError::Cancelled)));
    assert_eq!(s.next().await, None);
}

#[tokio::test]
async fn a_whole_json_message_is_accepted() {
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [
            {"type": "thinking", "thinking": "Hmm.", "signature": "x"},
            {"type": "text", "text": "Paris is sunny."},
            {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Paris"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 20, "output_tokens": 7},
    });
    let server = MockServer::start(vec![MockResponse::json(200, &body.to_string())])
        .await
        .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    assert_eq!(reasoning_of(&ev), "Hmm.");
    assert_eq!(text_of(&ev), "Paris is sunny.");
    assert_eq!(
        tool_calls_of(&ev),
        vec![ToolCall {
            id: "toolu_9".into(),
            name: "get_weather".into(),
            arguments: "{\"city\":\"Paris\"}".into()
        }]
    );
    assert!(ev.contains(&StreamEvent::Usage(Usage {
        input_tokens: 20,
        output_tokens: 7
    })));
    assert_eq!(ev.last(), Some(&StreamEvent::Finished("tool_calls".into())));
}

#[tokio::test]
async fn models_are_listed_sorted() {
    let server = MockServer::start(vec![MockResponse::json(
        200,
        r#"{"data":[{"type":"model","id":"claude-sonnet-4-5","display_name":"Claude Sonnet 4.5"},{"type":"model","id":"claude-haiku-4-5"}],"has_more":false}"#,
    )])
    .await
    .unwrap();
    assert_eq!(
        adapter(&server).list_models(CancellationToken::new()).await.unwrap(),
        vec!["claude-haiku-4-5", "claude-sonnet-4-5"]
    );
    let r = &server.requests()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", "/v1/models?limit=1000"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
}
