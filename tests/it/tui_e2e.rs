//! The real `pai` TUI in tmux: type, see the answer and the toolbar, switch
//! endpoint, cancel a slow stream, quit with the terminal restored, and find
//! the session records matching the screen.

use std::io::Write;
use std::time::Duration;

use polyglot::testkit::{MockResponse, MockServer, openai_text_events};

use crate::support::*;
use crate::tmux::{self, Tmux};

const T: Duration = Duration::from_secs(60);

pub(crate) fn pai_cmd(s: &Sandbox) -> String {
    pai_cmd_with(s, "")
}

/// `pai ARGS` (shell words) in the sandbox, with a clean environment.
pub(crate) fn pai_cmd_with(s: &Sandbox, args: &str) -> String {
    format!(
        "cd {dir} && env -i PATH=\"$PATH\" HOME={dir} XDG_CONFIG_HOME={dir}/xdg-config XDG_DATA_HOME={dir}/xdg-data TERM=xterm-256color RUST_BACKTRACE=0 {bin} {args}; echo PAI-EXIT=$?; sleep 30",
        dir = s.path().display(),
        bin = BIN
    )
}

pub(crate) fn tmux_or_skip(test: &str) -> bool {
    if tmux::available() {
        return true;
    }
    let msg = format!("SKIPPED {test}: tmux is not installed (apt-get install tmux)");
    if std::env::var("PAI_REQUIRE_LAB").as_deref() == Ok("1") {
        panic!("{msg} (PAI_REQUIRE_LAB=1 forbids skipping)");
    }
    let _ = writeln!(std::io::stderr(), "{msg}");
    false
}

/// A slow stream: 400 tokens, 50 ms apart.
pub(crate) fn slow_events() -> MockResponse {
    let words: Vec<String> = (1..=400).map(|i| format!("n{i} ")).collect();
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    MockResponse::sse(&openai_text_events(&refs, None)).paced(Duration::from_millis(50))
}

fn turn_json(dir: &std::path::Path, n: u32) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join(format!("{n:04}-turn.json"))).unwrap()).unwrap()
}

/// Everything against loopback servers (always runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_chat_switch_cancel_quit_with_records() {
    if !tmux_or_skip("tui_chat_switch_cancel_quit_with_records") {
        return;
    }
    let quick = MockServer::start(vec![MockResponse::sse(&openai_text_events(
        &["Hello", " from", " the", " **quick**", " server."],
        Some((11, 5)),
    ))])
    .await
    .unwrap();
    let slow = MockServer::start(vec![slow_events()]).await.unwrap();
    let s = Sandbox::new();
    s.config(&format!(
        "[defaults]\nendpoint = \"quick\"\nsmooth = false\n[endpoints.quick]\nbase_url = \"{}\"\nmodel = \"q-model\"\n[endpoints.slow]\nbase_url = \"{}\"\nmodel = \"s-model\"\n",
        quick.base_url(),
        slow.base_url()
    ));
    let cmd = pai_cmd(&s);
    let dir = s.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let t = Tmux::start(&cmd, 100, 30).expect("tmux session");
        t.wait_for("the welcome screen", T, |s| {
            s.contains("pai — Polyglot AI") && s.contains("Idle")
        });
        assert_eq!(t.pane("alternate_on"), "1", "the TUI runs on the alternate screen");

        t.type_text("Greet me");
        t.key("Enter");
        let screen = t.wait_for("the answer and its stats", T, |s| {
            s.contains("Hello from the quick server.") && s.contains("Idle") && s.contains("tok/s")
        });
        assert!(screen.contains("● q-model · quick"), "{screen}");
        assert!(
            screen.contains("TTFT") && screen.contains("req 5 tok"),
            "toolbar stats: {screen}"
        );
        assert!(!screen.contains("**quick**"), "markdown is rendered: {screen}");

        t.type_text("/endpoint slow");
        t.key("Enter");
        t.wait_for("the endpoint switch", T, |s| s.contains("slow · s-model"));
        t.type_text("Count slowly");
        t.key("Enter");
        t.wait_for("streaming", T, |s| s.contains("Streaming") && s.contains("n3 "));
        t.key("Escape");
        let screen = t.wait_for("the cancel", Duration::from_secs(10), |s| {
            s.contains("cancelled") && s.contains("Idle")
        });
        assert!(screen.contains("● s-model · slow"), "{screen}");

        t.type_text("/quit");
        t.key("Enter");
        // The shell's line shows on the normal screen: pai left the alternate
        // screen and exited 0; mouse capture and the hidden cursor are undone.
        let screen = t.wait_for_in("pai to exit", T, true, |s| s.contains("PAI-EXIT="));
        assert!(screen.contains("PAI-EXIT=0"), "{screen}");
        // The shell is still running: these flags are what pai left behind.
        assert_eq!(t.pane("alternate_on"), "0", "the alternate screen was left");
        assert_eq!(t.pane("mouse_any_flag"), "0", "mouse capture was released");
        assert_eq!(t.pane("cursor_flag"), "1", "the cursor is visible again");
    })
    .await
    .unwrap();

    // The records tell the same story as the screen.
    let sessions: Vec<_> = std::fs::read_dir(dir.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let d = &sessions[0];
    let first = turn_json(d, 1);
    assert_eq!(
        (first["endpoint"].as_str(), first["status"].as_str()),
        (Some("quick"), Some("completed"))
    );
    assert_eq!(first["response"]["text"], "Hello from the **quick** server.");
    let second = turn_json(d, 2);
    assert_eq!(
        (second["endpoint"].as_str(), second["status"].as_str()),
        (Some("slow"), Some("cancelled"))
    );
    let partial = second["response"]["text"].as_str().unwrap();
    assert!(
        partial.starts_with("n1 n2 n3 ") && !partial.contains("n400"),
        "{partial}"
    );
    // The second request carried the first exchange: one conversation across endpoints.
    let msgs = second["request"]["messages"].as_array().unwrap();
    assert!(
        msgs.iter().any(|m| m["content"] == "Hello from the **quick** server."),
        "{msgs:?}"
    );
    let html = std::fs::read_to_string(d.join("conversation.html")).unwrap();
    assert!(html.contains("Greet me") && html.contains("Count slowly") && html.contains("badge cancelled"));
}

/// Chat with the REAL local LLM in the TUI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_chat_with_the_real_local_llm() {
    if !tmux_or_skip("tui_chat_with_the_real_local_llm") {
        return;
    }
    let Some(port) = lab_llm_port("tui_chat_with_the_real_local_llm") else {
        return;
    };
    let s = Sandbox::new();
    s.config(&endpoint_config("lab", port, "").replace("[defaults]\n", "[defaults]\nmax_tokens = 24\nsmooth = true\n"));
    let cmd = pai_cmd(&s);
    let dir = s.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let t = Tmux::start(&cmd, 100, 30).expect("tmux session");
        t.wait_for("the welcome screen", T, |s| s.contains("pai — Polyglot AI"));
        t.type_text("Say hi");
        t.key("Enter");
        let screen = t.wait_for("the answer", Duration::from_secs(240), |s| {
            s.contains("● smollm2 · lab") && s.contains("Idle") && s.contains("tok/s")
        });
        assert!(screen.contains("TTFT"), "{screen}");
        t.key("C-d");
        let screen = t.wait_for_in("pai to exit on Ctrl-D", T, true, |s| s.contains("PAI-EXIT="));
        assert!(screen.contains("PAI-EXIT=0"), "{screen}");
        assert_eq!(t.pane("alternate_on"), "0");
    })
    .await
    .unwrap();
    let sessions: Vec<_> = std::fs::read_dir(dir.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let t1 = turn_json(&sessions[0], 1);
    assert_eq!(t1["status"], "completed");
    assert!(!t1["response"]["text"].as_str().unwrap().trim().is_empty());
    assert_eq!(t1["stats"]["usage_reported"], true);
}

/// A panic inside the event loop still gives the terminal back.
#[test]
fn a_panic_restores_the_terminal_and_reports() {
    if !tmux_or_skip("a_panic_restores_the_terminal_and_reports") {
        return;
    }
    let s = Sandbox::new();
    s.config("[endpoints.x]\nbase_url = \"http://127.0.0.1:9/v1\"\n");
    let cmd = pai_cmd(&s).replace("RUST_BACKTRACE=0", "RUST_BACKTRACE=0 PAI_TEST_HOOKS=1");
    let t = Tmux::start(&cmd, 100, 30).expect("tmux session");
    t.wait_for("the welcome screen", T, |s| s.contains("pai — Polyglot AI"));
    t.type_text("/__panic");
    t.key("Enter");
    let screen = t.wait_for_in("pai to die", T, true, |s| s.contains("PAI-EXIT="));
    assert!(screen.contains("PAI-EXIT=101"), "a panic exits 101: {screen}");
    assert!(
        screen.contains("test panic requested"),
        "the panic message is readable: {screen}"
    );
    assert_eq!(t.pane("alternate_on"), "0", "the alternate screen was left");
    assert_eq!(t.pane("mouse_any_flag"), "0", "mouse capture was released");
    assert_eq!(t.pane("cursor_flag"), "1", "the cursor is visible again");
}

/// Agent mode in the real TUI: the model (aimock) asks for `list_dir`, whose
/// policy is `ask`; the approval prompt appears, the user approves, the tool
/// runs in the workspace, the answer follows, and the record has it all.
#[test]
fn tui_agent_mode_asks_before_running_a_tool() {
    if !tmux_or_skip("tui_agent_mode_asks_before_running_a_tool") {
        return;
    }
    let fixtures = serde_json::json!({"fixtures": [
        {"match": {"userMessage": "list the files here", "hasToolResult": false},
         "response": {"toolCalls": [{"name": "list_dir", "arguments": {"path": "."}}]}},
        {"match": {"userMessage": "list the files here", "hasToolResult": true},
         "response": {"content": "The folder holds README.md and notes.txt."}}
    ]});
    let Some(mock) = crate::support::PrivateAimock::start("tui_agent_mode_asks_before_running_a_tool", &fixtures)
    else {
        return;
    };
    let s = Sandbox::new();
    std::fs::write(s.path().join("README.md"), "# demo\n").unwrap();
    std::fs::write(s.path().join("notes.txt"), "notes\n").unwrap();
    s.config(&format!(
        "[defaults]\nendpoint = \"mock\"\nsmooth = false\n[endpoints.mock]\nbase_url = \"http://127.0.0.1:{}/v1\"\nmodel = \"gpt-4o\"\n[tools.policy]\nlist_dir = \"ask\"\n",
        mock.port
    ));
    let t = Tmux::start(&pai_cmd(&s), 100, 30).expect("tmux session");
    t.wait_for("the welcome screen", T, |s| s.contains("pai — Polyglot AI"));
    t.type_text("/agent on");
    t.key("Enter");
    t.wait_for("agent mode", T, |s| s.contains("Agent │"));
    t.type_text("list the files here and summarise the README");
    t.key("Enter");
    let screen = t.wait_for("the approval prompt", T, |s| s.contains("approve this tool call?"));
    assert!(
        screen.contains("list_dir") && screen.contains("\"path\": \".\""),
        "{screen}"
    );
    assert!(screen.contains("Awaiting approval"), "{screen}");
    t.key("y");
    let screen = t.wait_for("the answer", T, |s| {
        s.contains("README.md and notes.txt.") && s.contains("Idle")
    });
    assert!(screen.contains("✓ list_dir") && screen.contains("approved"), "{screen}");
    t.type_text("/quit");
    t.key("Enter");
    t.wait_for_in("pai to exit", T, true, |s| s.contains("PAI-EXIT=0"));
    let d = &s.sessions()[0];
    let t1: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("0001-turn.json")).unwrap()).unwrap();
    assert_eq!(t1["tool_runs"][0]["tool"], "list_dir");
    assert_eq!(t1["tool_runs"][0]["approval"], "approved");
    assert!(t1["tool_runs"][0]["result"].as_str().unwrap().contains("README.md"));
}

/// One conversation carried across three protocols with `/endpoint`: OpenAI
/// chat and Anthropic Messages against the REAL local LLM, Ollama's native
/// API against aimock. Each later request carries the whole history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_one_conversation_across_openai_anthropic_and_ollama() {
    let test = "tui_one_conversation_across_openai_anthropic_and_ollama";
    if !tmux_or_skip(test) {
        return;
    }
    let (Some(llm), Some(mock)) = (lab_llm_port(test), lab_aimock_port(test)) else {
        return;
    };
    let s = Sandbox::new();
    s.config(&format!(
        "[defaults]\nendpoint = \"oa\"\nmax_tokens = 16\nsmooth = false\n\
         [endpoints.oa]\nbase_url = \"http://127.0.0.1:{llm}/v1\"\nmodel = \"smollm2\"\nfirst_token_timeout_s = 300\n\
         [endpoints.an]\nprotocol = \"anthropic\"\nbase_url = \"http://127.0.0.1:{llm}\"\nmodel = \"smollm2\"\nfirst_token_timeout_s = 300\n\
         [endpoints.ol]\nprotocol = \"ollama\"\nbase_url = \"http://127.0.0.1:{mock}\"\nmodel = \"llama3.2\"\n"
    ));
    let cmd = pai_cmd(&s);
    let dir = s.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let t = Tmux::start(&cmd, 110, 40).expect("tmux session");
        t.wait_for("the welcome screen", T, |s| s.contains("pai — Polyglot AI"));
        let long = Duration::from_secs(240);
        t.type_text("Say hi");
        t.key("Enter");
        t.wait_for("the OpenAI answer", long, |s| {
            s.contains("● smollm2 · oa") && s.contains("Idle")
        });
        t.type_text("/endpoint an");
        t.key("Enter");
        t.wait_for("the switch to an", T, |s| s.contains("an · smollm2"));
        t.type_text("Say it again");
        t.key("Enter");
        t.wait_for("the Anthropic answer", long, |s| {
            s.contains("● smollm2 · an") && s.contains("Idle")
        });
        t.type_text("/endpoint ol");
        t.key("Enter");
        t.wait_for("the switch to ol", T, |s| s.contains("ol · llama3.2"));
        t.type_text("hello");
        t.key("Enter");
        t.wait_for("the Ollama answer", T, |s| {
            s.contains("Hello! How can I help you today?")
        });
        t.key("C-d");
        let screen = t.wait_for_in("pai to exit", T, true, |s| s.contains("PAI-EXIT="));
        assert!(screen.contains("PAI-EXIT=0"), "{screen}");
    })
    .await
    .unwrap();
    let session = std::fs::read_dir(dir.join("sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let turns: Vec<serde_json::Value> = (1..=3).map(|n| turn_json(&session, n)).collect();
    let endpoints: Vec<&str> = turns.iter().map(|t| t["endpoint"].as_str().unwrap()).collect();
    assert_eq!(endpoints, ["oa", "an", "ol"]);
    for t in &turns {
        assert_eq!(t["status"], "completed", "{t}");
        assert!(!t["response"]["text"].as_str().unwrap().trim().is_empty(), "{t}");
    }
    // The third request, on Ollama, carried both earlier exchanges verbatim.
    let msgs = turns[2]["request"]["messages"].as_array().unwrap();
    let texts: Vec<(&str, &str)> = msgs
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .filter(|(r, _)| *r != "system")
        .collect();
    let a1 = turns[0]["response"]["text"].as_str().unwrap();
    let a2 = turns[1]["response"]["text"].as_str().unwrap();
    assert_eq!(
        texts,
        [
            ("user", "Say hi"),
            ("assistant", a1),
            ("user", "Say it again"),
            ("assistant", a2),
            ("user", "hello")
        ]
    );
    assert_eq!(turns[2]["response"]["text"], "Hello! How can I help you today?");
}
