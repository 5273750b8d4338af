//! Agent runs with real counterparts: aimock decides to call `get_weather`, a
//! real MCP server (the in-repo test server over stdio) runs it, the answer
//! uses the result — through the real binary. And one tool call produced by
//! the REAL local LLM.

use std::sync::Arc;

use futures::StreamExt;
use polyglot::config::{EndpointConfig, Secrets};
use polyglot::conversation::{Message, Params};
use polyglot::protocols::{ChatRequest, StreamEvent, ToolSpec, build_adapter};
use tokio_util::sync::CancellationToken;

use crate::support::*;

const FAULT_SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp_fault_server.py");

fn config(aimock: u16, policy: &str) -> String {
    format!(
        "[defaults]\nendpoint = \"mock\"\n[endpoints.mock]\nbase_url = \"http://127.0.0.1:{aimock}/v1\"\nmodel = \"gpt-4o\"\n[mcp.weather]\ncommand = \"python3\"\nargs = [\"{FAULT_SERVER}\"]\npolicy = \"{policy}\"\n"
    )
}

#[test]
fn headless_agent_runs_an_mcp_tool_chosen_by_the_model() {
    let Some(port) = lab_aimock_port("headless_agent_runs_an_mcp_tool_chosen_by_the_model") else {
        return;
    };
    let s = Sandbox::new();
    s.config(&config(port, "auto"));
    let o = s.run(&["--agent", "What's the weather in Paris?"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "It is 21C in Paris.");
    let d = &s.sessions()[0];
    assert_eq!(
        files_in(d),
        [
            "0001-turn.json",
            "0002-turn.json",
            "conversation.html",
            "gptwink_format.html"
        ]
    );
    let t1: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("0001-turn.json")).unwrap()).unwrap();
    assert_eq!(t1["mode"], "agent");
    assert_eq!(t1["tool_runs"][0]["tool"], "get_weather");
    assert_eq!(t1["tool_runs"][0]["arguments"], serde_json::json!({"city": "Paris"}));
    assert_eq!(t1["tool_runs"][0]["result"], "21C in Paris");
    assert_eq!(t1["tool_runs"][0]["approval"], "auto");
    // The request offered the MCP tool with its schema.
    let t2: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("0002-turn.json")).unwrap()).unwrap();
    let msgs = t2["request"]["messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap()["role"], "tool");
    let html = std::fs::read_to_string(d.join("conversation.html")).unwrap();
    assert!(html.contains("get_weather") && html.contains("21C in Paris"));
}

#[test]
fn without_yes_an_ask_tool_is_refused_and_the_model_is_told() {
    let Some(port) = lab_aimock_port("without_yes_an_ask_tool_is_refused_and_the_model_is_told") else {
        return;
    };
    let s = Sandbox::new();
    s.config(&config(port, "ask"));
    let o = s.run(&["--agent", "--json", "What's the weather in Paris?"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let run = &v["tool_runs"][0];
    assert_eq!(run["approval"], "denied");
    assert!(run["result"].as_str().unwrap().contains("--yes"), "{run}");
    assert_eq!(v["end"], "answered");
    // With --yes it runs.
    let o = s.run(&["--agent", "--yes", "--json", "What's the weather in Paris?"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["tool_runs"][0]["approval"], "approved");
    assert_eq!(v["text"], "It is 21C in Paris.");
}

#[test]
fn pai_mcp_and_pai_tools_list_servers_and_tools() {
    let s = Sandbox::new();
    s.config(&config(1, "ask"));
    let o = s.run(&["mcp"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("weather  ready (5 tools"), "{out}");
    assert!(out.contains("get_weather") && out.contains("ask"), "{out}");
    let out = stdout(&s.run(&["tools"]));
    for t in [
        "read_file",
        "write_file",
        "list_dir",
        "search_files",
        "apply_patch",
        "run_shell",
        "fetch_url",
        "current_time",
        "get_weather",
    ] {
        assert!(out.contains(t), "{t} missing:\n{out}");
    }
    assert!(
        out.lines().any(|l| l.starts_with("run_shell") && l.contains("ask")),
        "{out}"
    );
}

/// The lab recipe for a reliable tool call from a 135M model: tool_choice
/// "required", no parallel calls, and an assistant prefill "<tool_call>\n".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_local_llm_makes_a_real_tool_call() {
    let Some(port) = lab_llm_port("the_real_local_llm_makes_a_real_tool_call") else {
        return;
    };
    let mut cfg = EndpointConfig::openai("lab", &format!("http://127.0.0.1:{port}/v1"));
    cfg.first_token_timeout = std::time::Duration::from_secs(300);
    let adapter = build_adapter(&cfg, &Secrets::default()).unwrap();
    let request = ChatRequest {
        model: "smollm2".into(),
        messages: vec![
            Message::user("What is the weather in Paris?"),
            Message::assistant("<tool_call>\n"),
        ],
        tools: vec![ToolSpec {
            name: "get_weather".into(),
            description: "Get the current weather for a city".into(),
            parameters: serde_json::json!({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}),
        }],
        params: Params {
            temperature: Some(0.0),
            max_tokens: Some(80),
            tool_choice: Some("required".into()),
            response_schema: None,
        },
    };
    let mut s = adapter.stream(request, CancellationToken::new());
    let mut calls = Vec::new();
    while let Some(ev) = s.next().await {
        if let StreamEvent::ToolCall(c) = ev.unwrap() {
            calls.push(c);
        }
    }
    assert!(!calls.is_empty(), "the model made no tool call");
    assert_eq!(calls[0].name, "get_weather");
    let args: serde_json::Value = serde_json::from_str(&calls[0].arguments).expect("the arguments are JSON");
    assert!(args.get("city").and_then(|c| c.as_str()).is_some(), "{args}");
    // The call runs through the registry against a real MCP server.
    let hub = polyglot::tools::mcp::McpHub::new(
        &[(
            "weather".to_string(),
            crate::mcp::stdio("weather", "python3", &[FAULT_SERVER]),
        )]
        .into_iter()
        .collect(),
        &Secrets::default(),
        None,
    );
    hub.start_enabled().await;
    let mut reg = polyglot::tools::ToolRegistry::new();
    for (n, t) in hub.tools().await {
        reg.insert_server(&n, t);
    }
    let (name, tool, _) = reg.resolve(&calls[0].name).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = polyglot::tools::ToolContext::new(Arc::new(polyglot::tools::Workspace::new(dir.path()).unwrap()));
    let out = polyglot::tools::run_call(&tool, &name, args, ctx).await.unwrap();
    assert!(out.starts_with("21C in "), "{out}");
    hub.stop_all().await;
}
