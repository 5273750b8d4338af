//! Legacy completions adapter against a loopback server serving recorded bodies and faults.

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::{EndpointConfig, Secrets};
use crate::conversation::{Message, Params};
use crate::protocols::{ProtocolAdapter, StreamEvent, TimeoutPhase, ToolSpec};
use crate::testkit::{MockResponse, MockServer, Step, drain, reasoning_of, retry_delays_of, text_of};

/// Recorded from llama.cpp's `/v1/completions` (the lab LLM), cut by max_tokens.
const LLAMACPP_TEXT: &str = include_str!("../../../tests/fixtures/openai-completions/llamacpp_text.sse");
/// Recorded from llama.cpp: an answer ended by the chatml stop sequence.
const LLAMACPP_STOP: &str = include_str!("../../../tests/fixtures/openai-completions/llamacpp_stop.sse");

fn endpoint(server: &MockServer) -> EndpointConfig {
    let mut e = EndpointConfig::openai("mock", &server.base_url()).with_protocol("openai-completions");
    e.first_token_timeout = Duration::from_secs(10);
    e.idle_timeout = Duration::from_secs(10);
    e.max_retries = 3;
    e
}

fn adapter(server: &MockServer) -> OpenAiCompletions {
    OpenAiCompletions::new(&endpoint(server), &Secrets::default()).unwrap()
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

async fn run(a: &OpenAiCompletions) -> (Vec<StreamEvent>, Option<ProtocolError>) {
    drain(a.stream(request(), CancellationToken::new())).await
}

/// Legacy-completions SSE chunks streaming `tokens`, a finish, usage and `[DONE]`.
fn text_chunks(tokens: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = tokens
        .iter()
        .map(|t| {
            format!(
                "data: {}\n\n",
                json!({"id":"cmpl-1","object":"text_completion","choices":[{"text":t,"index":0,"logprobs":null,"finish_reason":null}]})
            )
        })
        .collect();
    v.push("data: {\"id\":\"cmpl-1\",\"choices\":[{\"text\":\"\",\"index\":0,\"finish_reason\":\"stop\"}]}\n\n".into());
    v.push("data: {\"id\":\"cmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2,\"total_tokens\":11}}\n\n".into());
    v.push("data: [DONE]\n\n".into());
    v
}

#[tokio::test]
async fn recorded_llamacpp_stream_and_the_chatml_prompt_that_was_sent() {
    let server = MockServer::start(vec![MockResponse::sse_body(LLAMACPP_TEXT)])
        .await
        .unwrap();
    let mut cfg = endpoint(&server);
    cfg.api_key_env = Some("LLM_KEY".into());
    let a = OpenAiCompletions::new(&cfg, &Secrets::from_pairs([("LLM_KEY", "sk-c-1")])).unwrap();
    let (ev, err) = run(&a).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&ev), "Hi there, welcome to my world. I'm here to");
    assert!(ev.contains(&StreamEvent::Usage(Usage {
        input_tokens: 18,
        output_tokens: 12
    })));
    assert_eq!(ev.iter().filter(|e| matches!(e, StreamEvent::Finished(_))).count(), 1);
    assert!(ev.contains(&StreamEvent::Finished("length".into())));

    let r = &server.requests()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1/completions"));
    assert_eq!(r.header("authorization"), Some("Bearer sk-c-1"));
    assert_eq!(
        r.json(),
        json!({
            "model": "smollm2",
            "prompt": "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\n",
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.5,
            "max_tokens": 12,
            "stop": ["<|im_end|>", "<|im_start|>"],
        })
    );
}

#[tokio::test]
async fn recorded_answer_ended_by_a_stop_sequence() {
    let server = MockServer::start(vec![MockResponse::sse_body(LLAMACPP_STOP)])
        .await
        .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&ev), "The answer is: 4");
    assert!(ev.contains(&StreamEvent::Finished("stop".into())));
    assert!(ev.contains(&StreamEvent::Usage(Usage {
        input_tokens: 16,
        output_tokens: 7
    })));
}

#[tokio::test]
async fn tools_are_refused_before_anything_is_sent() {
    let server = MockServer::start(vec![MockResponse::sse(&text_chunks(&["x"]))])
        .await
        .unwrap();
    let mut req = request();
    req.tools = vec![ToolSpec {
        name: "get_weather".into(),
        description: "Weather".into(),
        parameters: json!({"type":"object"}),
    }];
    let (ev, err) = drain(adapter(&server).stream(req, CancellationToken::new())).await;
    assert!(ev.is_empty());
    let err = err.unwrap();
    assert!(matches!(err, ProtocolError::Unsupported(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("cannot offer tools") && msg.contains("get_weather"),
        "{msg}"
    );
    assert!(msg.contains("protocol = \"openai\""), "{msg}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn preset_and_endpoint_stops_merge_and_custom_templates_render() {
    let server = MockServer::start(vec![MockResponse::sse(&text_chunks(&["ok"]))])
        .await
        .unwrap();
    let mut cfg = endpoint(&server);
    cfg.prompt_template = Some("llama3".into());
    cfg.stop = vec!["<|eot_id|>".into(), "\nUser:".into()];
    let a = OpenAiCompletions::new(&cfg, &Secrets::default()).unwrap();
    let b = a.request_body(&request()).unwrap();
    assert_eq!(b["stop"], json!(["<|eot_id|>", "<|start_header_id|>", "\nUser:"]));
    assert!(
        b["prompt"]
            .as_str()
            .unwrap()
            .ends_with("<|start_header_id|>assistant<|end_header_id|>\n\n")
    );

    cfg.prompt_template = Some("{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}> ".into());
    cfg.stop = vec![];
    let a = OpenAiCompletions::new(&cfg, &Secrets::default()).unwrap();
    let (ev, err) = drain(a.stream(request(), CancellationToken::new())).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&ev), "ok");
    let j = server.requests()[0].json();
    assert_eq!(j["prompt"], "[system] be brief\n[user] Say hi\n> ");
    assert!(j.get("stop").is_none(), "a custom template has no stops of its own");
}

#[test]
fn an_invalid_template_in_a_hand_built_config_is_a_config_error() {
    let mut cfg = EndpointConfig::openai("x", "http://127.0.0.1:9/v1").with_protocol("openai-completions");
    cfg.prompt_template = Some("{% for %}".into());
    match OpenAiCompletions::new(&cfg, &Secrets::default()) {
        Err(ProtocolError::Config(m)) => assert!(m.contains("does not parse"), "{m}"),
        Err(other) => panic!("expected a config error, got {other:?}"),
        Ok(_) => panic!("expected a config error"),
    }
}

#[tokio::test]
async fn think_tags_in_text_become_reasoning() {
    let server = MockServer::start(vec![MockResponse::sse(&text_chunks(&[
        "<think>",
        "Two plus two.",
        "</think>",
        "\n\n4",
    ]))])
    .await
    .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    assert_eq!(reasoning_of(&ev), "Two plus two.");
    assert_eq!(text_of(&ev), "4");
}

#[tokio::test]
async fn unauthorized_names_the_env_variable() {
    let server = MockServer::start(vec![MockResponse::json(
        401,
        r#"{"error":{"message":"Invalid API key","type":"invalid_request_error"}}"#,
    )])
    .await
    .unwrap();
    let mut cfg = endpoint(&server);
    cfg.api_key_env = Some("VLLM_API_KEY".into());
    let a = OpenAiCompletions::new(&cfg, &Secrets::from_pairs([("VLLM_API_KEY", "k-123456")])).unwrap();
    let (ev, err) = run(&a).await;
    assert!(ev.is_empty());
    let err = err.unwrap();
    assert!(matches!(err, ProtocolError::Auth { status: 401, .. }), "{err:?}");
    assert!(err.to_string().contains("VLLM_API_KEY"), "{err}");
}

#[tokio::test]
async fn rate_limit_and_server_error_are_retried_then_succeed() {
    let server = MockServer::start(vec![
        MockResponse::json(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after", "1"),
        MockResponse::json(
            503,
            r#"{"error":{"message":"Loading model","type":"unavailable_error"}}"#,
        ),
        MockResponse::sse(&text_chunks(&["Hel", "lo"])),
    ])
    .await
    .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    let waits = retry_delays_of(&ev);
    assert_eq!(waits.len(), 2);
    assert_eq!(waits[0], Duration::from_secs(1));
    assert_eq!(text_of(&ev), "Hello");
    assert!(ev.contains(&StreamEvent::Usage(Usage {
        input_tokens: 9,
        output_tokens: 2
    })));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn stream_cut_after_output_keeps_text_and_does_not_retry() {
    let mut chunks = text_chunks(&["partial ", "answer"]);
    chunks.truncate(2);
    let server = MockServer::start(vec![MockResponse::sse(&chunks).then(Step::Cut)])
        .await
        .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(text_of(&ev), "partial answer");
    let err = err.unwrap();
    assert!(
        matches!(err, ProtocolError::Network { .. } | ProtocolError::Truncated),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn malformed_chunk_and_error_objects_are_reported() {
    let mut chunks = text_chunks(&["good "]);
    chunks.insert(1, "data: {\"choices\":[{\"text\":\"bro\n\n".into());
    let server = MockServer::start(vec![MockResponse::sse(&chunks)]).await.unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(text_of(&ev), "good ");
    match err {
        Some(ProtocolError::Decode { context, .. }) => assert!(context.contains("bro"), "{context}"),
        other => panic!("expected a decode error, got {other:?}"),
    }

    let mut chunks = text_chunks(&["a"]);
    chunks.insert(1, "data: {\"error\":{\"message\":\"model crashed\"}}\n\n".into());
    let server = MockServer::start(vec![MockResponse::sse(&chunks)]).await.unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(text_of(&ev), "a");
    assert_eq!(
        err,
        Some(ProtocolError::Server {
            detail: "model crashed".into()
        })
    );
}

#[tokio::test]
async fn stall_mid_stream_hits_the_idle_timeout() {
    let mut chunks = text_chunks(&["slow"]);
    chunks.truncate(1);
    let server = MockServer::start(vec![MockResponse::sse(&chunks).then(Step::Stall)])
        .await
        .unwrap();
    let mut cfg = endpoint(&server);
    cfg.idle_timeout = Duration::from_millis(300);
    let (ev, err) = run(&OpenAiCompletions::new(&cfg, &Secrets::default()).unwrap()).await;
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
async fn cancellation_ends_the_stream_promptly() {
    let chunks = text_chunks(&["one ", "two ", "three "]);
    let server = MockServer::start(vec![MockResponse::sse(&chunks).paced(Duration::from_millis(400))])
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
async fn a_whole_json_answer_is_accepted() {
    let body = r#"{"id":"cmpl-9","object":"text_completion","choices":[{"text":"Paris.","index":0,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#;
    let server = MockServer::start(vec![MockResponse::json(200, body)]).await.unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&ev), "Paris.");
    assert!(ev.contains(&StreamEvent::Finished("stop".into())));
}

#[tokio::test]
async fn models_are_listed_sorted() {
    let server = MockServer::start(vec![MockResponse::json(
        200,
        r#"{"object":"list","data":[{"id":"zeta"},{"id":"alpha"}]}"#,
    )])
    .await
    .unwrap();
    assert_eq!(
        adapter(&server).list_models(CancellationToken::new()).await.unwrap(),
        vec!["alpha", "zeta"]
    );
    assert_eq!(server.requests()[0].path, "/v1/models");
}
