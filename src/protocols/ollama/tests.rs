//! Ollama adapter against a loopback server serving recorded bodies and faults.

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::{EndpointConfig, Secrets};
use crate::conversation::{Message, Params, ToolCall};
use crate::protocols::{ProtocolAdapter, StreamEvent, TimeoutPhase, ToolSpec};
use crate::testkit::{MockResponse, MockServer, Step, drain, reasoning_of, retry_delays_of, text_of, tool_calls_of};

/// Recorded from aimock's `/api/chat` (it reports zero counts).
const AIMOCK_TEXT: &str = include_str!("../../../tests/fixtures/ollama/aimock_text.ndjson");
/// Recorded from aimock: one tool call, arguments as an object, no id.
const AIMOCK_TOOL_CALL: &str = include_str!("../../../tests/fixtures/ollama/aimock_tool_call.ndjson");
/// Recorded from aimock's `/api/tags`.
const AIMOCK_TAGS: &str = include_str!("../../../tests/fixtures/ollama/aimock_tags.json");
/// Hand-written after Ollama's documented stream: thinking, text, two tool calls, counts.
const THINKING_TOOLS: &str = include_str!("../../../tests/fixtures/ollama/thinking_tool_call.ndjson");

fn endpoint(base_url: &str) -> EndpointConfig {
    let mut e = EndpointConfig::openai("mock", base_url).with_protocol("ollama");
    e.first_token_timeout = Duration::from_secs(10);
    e.idle_timeout = Duration::from_secs(10);
    e.max_retries = 3;
    e
}

fn adapter(server: &MockServer) -> OllamaChat {
    OllamaChat::new(&endpoint(&server.root_url()), &Secrets::default())
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "llama3.2".into(),
        messages: vec![Message::system("be brief"), Message::user("hello")],
        tools: vec![],
        params: Params {
            temperature: Some(0.5),
            max_tokens: Some(12),
            tool_choice: None,
            response_schema: None,
        },
    }
}

async fn run(a: &OllamaChat) -> (Vec<StreamEvent>, Option<ProtocolError>) {
    drain(a.stream(request(), CancellationToken::new())).await
}

/// Ollama-style NDJSON lines streaming `tokens`, then `done` with counts.
fn text_lines(tokens: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = tokens
        .iter()
        .map(|t| {
            format!(
                "{}\n",
                json!({"model":"m","message":{"role":"assistant","content":t},"done":false})
            )
        })
        .collect();
    v.push(format!(
        "{}\n",
        json!({"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":4,"eval_count":tokens.len()})
    ));
    v
}

#[tokio::test]
async fn recorded_aimock_stream_gives_text_and_finish_and_the_request_is_right() {
    let server = MockServer::start(vec![MockResponse::ndjson_body(AIMOCK_TEXT)])
        .await
        .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&ev), "Hello! How can I help you today?");
    assert!(
        !ev.iter().any(|e| matches!(e, StreamEvent::Usage(_))),
        "zero counts are not usage"
    );
    assert_eq!(ev.last(), Some(&StreamEvent::Finished("stop".into())));

    let r = &server.requests()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/api/chat"));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(
        r.json(),
        json!({
            "model": "llama3.2",
            "messages": [{"role":"system","content":"be brief"},{"role":"user","content":"hello"}],
            "stream": true,
            "options": {"temperature": 0.5, "num_predict": 12},
        })
    );
}

#[tokio::test]
async fn base_url_with_api_works_and_a_proxy_key_is_sent_as_bearer() {
    let server = MockServer::start(vec![MockResponse::ndjson(&text_lines(&["ok"]))])
        .await
        .unwrap();
    let mut cfg = endpoint(&format!("{}/api", server.root_url()));
    cfg.api_key_env = Some("OLLAMA_PROXY_KEY".into());
    cfg.stop = vec!["###".into()];
    let a = OllamaChat::new(&cfg, &Secrets::from_pairs([("OLLAMA_PROXY_KEY", "tok-1")]));
    let mut req = request();
    req.params = Params::default();
    let (ev, err) = drain(a.stream(req, CancellationToken::new())).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&ev), "ok");
    assert!(ev.contains(&StreamEvent::Usage(Usage {
        input_tokens: 4,
        output_tokens: 1
    })));
    let r = &server.requests()[0];
    assert_eq!(r.path, "/api/chat");
    assert_eq!(r.header("authorization"), Some("Bearer tok-1"));
    assert_eq!(r.json()["options"], json!({"stop": ["###"]}));
}

#[tokio::test]
async fn thinking_text_tool_calls_and_counts() {
    let server = MockServer::start(vec![MockResponse::ndjson_body(THINKING_TOOLS)])
        .await
        .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    assert_eq!(reasoning_of(&ev), "The user asks about Paris weather; call the tool.");
    assert_eq!(text_of(&ev), "Checking.");
    assert_eq!(
        tool_calls_of(&ev),
        vec![
            ToolCall {
                id: "call_k3x9".into(),
                name: "get_weather".into(),
                arguments: "{\"city\":\"Paris\",\"unit\":\"celsius\"}".into(),
            },
            ToolCall {
                id: "call_1".into(),
                name: "current_time".into(),
                arguments: "{}".into(),
            },
        ]
    );
    assert!(ev.contains(&StreamEvent::Usage(Usage {
        input_tokens: 187,
        output_tokens: 41
    })));
    assert_eq!(ev.last(), Some(&StreamEvent::Finished("tool_calls".into())));
}

#[tokio::test]
async fn recorded_aimock_tool_call_is_complete() {
    let server = MockServer::start(vec![MockResponse::ndjson_body(AIMOCK_TOOL_CALL)])
        .await
        .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    let calls = tool_calls_of(&ev);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(calls[0].id, "call_0");
    let args: serde_json::Value = serde_json::from_str(&calls[0].arguments).unwrap();
    assert_eq!(args, json!({"city": "Paris"}));
    assert_eq!(ev.last(), Some(&StreamEvent::Finished("tool_calls".into())));
}

#[tokio::test]
async fn think_tags_in_content_become_reasoning() {
    let server = MockServer::start(vec![MockResponse::ndjson(&text_lines(&[
        "<thi",
        "nk>Two and two.</th",
        "ink>\n\n4",
    ]))])
    .await
    .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    assert_eq!(reasoning_of(&ev), "Two and two.");
    assert_eq!(text_of(&ev), "4");
}

#[test]
fn tools_and_tool_messages_use_ollama_shapes() {
    let mut asst = Message::assistant("");
    asst.tool_calls = vec![ToolCall {
        id: "call_0".into(),
        name: "get_weather".into(),
        arguments: "{\"city\":\"Paris\"}".into(),
    }];
    let mut earlier = Message::assistant("");
    earlier.tool_calls = vec![ToolCall {
        id: "call_0".into(),
        name: "current_time".into(),
        arguments: "{}".into(),
    }];
    let req = ChatRequest {
        model: "llama3.2".into(),
        messages: vec![
            earlier,
            Message::tool_result("call_0", "12:00"),
            Message::user("Weather?"),
            asst,
            Message::tool_result("call_0", "21C"),
            Message::tool_result("call_unknown", "?"),
        ],
        tools: vec![ToolSpec {
            name: "get_weather".into(),
            description: "Weather".into(),
            parameters: json!({"type":"object"}),
        }],
        params: Params::default(),
    };
    let b = request_body(&req, &[]);
    assert_eq!(
        b["tools"],
        json!([{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object"}}}])
    );
    assert_eq!(
        b["messages"][3],
        json!({"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]})
    );
    assert_eq!(
        b["messages"][1],
        json!({"role":"tool","content":"12:00","tool_name":"current_time"})
    );
    assert_eq!(
        b["messages"][4],
        json!({"role":"tool","content":"21C","tool_name":"get_weather"}),
        "ids repeat across turns: the nearest earlier call names the tool"
    );
    assert_eq!(b["messages"][5], json!({"role":"tool","content":"?"}));
    assert!(b.get("options").is_none());
    assert!(b.get("format").is_none());
    let mut req = req;
    req.params.response_schema = Some(json!({"type":"object"}));
    assert_eq!(request_body(&req, &[])["format"], json!({"type":"object"}));
}

#[tokio::test]
async fn unauthorized_names_the_env_variable() {
    let server = MockServer::start(vec![MockResponse::json(401, r#"{"error":"unauthorized"}"#)])
        .await
        .unwrap();
    let mut cfg = endpoint(&server.root_url());
    cfg.api_key_env = Some("OLLAMA_PROXY_KEY".into());
    let a = OllamaChat::new(&cfg, &Secrets::from_pairs([("OLLAMA_PROXY_KEY", "tok-1")]));
    let (ev, err) = run(&a).await;
    assert!(ev.is_empty());
    let err = err.unwrap();
    assert!(matches!(err, ProtocolError::Auth { status: 401, .. }), "{err:?}");
    assert!(err.to_string().contains("OLLAMA_PROXY_KEY"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn rate_limit_then_server_error_are_retried_then_succeed() {
    let server = MockServer::start(vec![
        // aimock's recorded 429.
        MockResponse::json(
            429,
            r#"{"error":{"message":"Rate limit exceeded","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}"#,
        )
        .header("retry-after", "1"),
        MockResponse::json(500, r#"{"error":"llama runner process has terminated"}"#),
        MockResponse::ndjson(&text_lines(&["Hel", "lo"])),
    ])
    .await
    .unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    let waits = retry_delays_of(&ev);
    assert_eq!(waits.len(), 2);
    assert_eq!(waits[0], Duration::from_secs(1));
    assert!(
        waits[1] >= Duration::from_millis(500) && waits[1] <= Duration::from_millis(1000),
        "{waits:?}"
    );
    assert_eq!(text_of(&ev), "Hello");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn missing_model_is_not_retried_and_says_so() {
    let server = MockServer::start(vec![MockResponse::json(
        404,
        r#"{"error":"model \"llama9\" not found, try pulling it first"}"#,
    )])
    .await
    .unwrap();
    let (_, err) = run(&adapter(&server)).await;
    let msg = err.unwrap().to_string();
    assert!(msg.contains("not found, try pulling it first"), "{msg}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn stream_cut_after_output_keeps_text() {
    let mut lines = text_lines(&["partial ", "answer"]);
    lines.pop();
    let server = MockServer::start(vec![MockResponse::ndjson(&lines).then(Step::Cut)])
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
async fn body_ending_before_done_is_truncated() {
    let mut lines = text_lines(&["half"]);
    lines.pop();
    let server = MockServer::start(vec![MockResponse::ndjson(&lines)]).await.unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(text_of(&ev), "half");
    assert_eq!(err, Some(ProtocolError::Truncated));
}

#[tokio::test]
async fn error_line_mid_stream_is_a_server_error() {
    let mut lines = text_lines(&["a"]);
    lines.insert(
        1,
        "{\"error\":\"an error was encountered while running the model: GGML_ASSERT\"}\n".into(),
    );
    let server = MockServer::start(vec![MockResponse::ndjson(&lines)]).await.unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(text_of(&ev), "a");
    assert_eq!(
        err,
        Some(ProtocolError::Server {
            detail: "an error was encountered while running the model: GGML_ASSERT".into()
        })
    );
}

#[tokio::test]
async fn malformed_line_is_an_error_with_context() {
    let mut lines = text_lines(&["good "]);
    lines.insert(1, "{\"message\":{\"content\":\"bro\n".into());
    let server = MockServer::start(vec![MockResponse::ndjson(&lines)]).await.unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(text_of(&ev), "good ");
    match err {
        Some(ProtocolError::Decode { context, .. }) => assert!(context.contains("bro"), "{context}"),
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[tokio::test]
async fn stall_mid_stream_hits_the_idle_timeout() {
    let mut lines = text_lines(&["slow"]);
    lines.pop();
    let server = MockServer::start(vec![MockResponse::ndjson(&lines).then(Step::Stall)])
        .await
        .unwrap();
    let mut cfg = endpoint(&server.root_url());
    cfg.idle_timeout = Duration::from_millis(300);
    let (ev, err) = run(&OllamaChat::new(&cfg, &Secrets::default())).await;
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
    let lines = text_lines(&["one ", "two ", "three "]);
    let server = MockServer::start(vec![MockResponse::ndjson(&lines).paced(Duration::from_millis(400))])
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
    let body = r#"{"model":"m","message":{"role":"assistant","content":"Hi."},"done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":2}"#;
    let server = MockServer::start(vec![MockResponse::json(200, body)]).await.unwrap();
    let (ev, err) = run(&adapter(&server)).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&ev), "Hi.");
    assert_eq!(ev.last(), Some(&StreamEvent::Finished("length".into())));
}

#[tokio::test]
async fn models_come_from_api_tags_sorted() {
    let server = MockServer::start(vec![MockResponse::json(200, AIMOCK_TAGS)])
        .await
        .unwrap();
    let models = adapter(&server).list_models(CancellationToken::new()).await.unwrap();
    assert_eq!(models.len(), 5);
    assert!(models.windows(2).all(|w| w[0] <= w[1]), "{models:?}");
    assert!(models.contains(&"gpt-4o".to_string()), "{models:?}");
    let r = &server.requests()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", "/api/tags"));
}
