//! Every protocol against a REAL third-party server, through the real binary:
//! `anthropic` and `openai-completions` against the lab LLM (llama.cpp's own
//! `/v1/messages` and `/v1/completions`), `ollama` (and `anthropic` once more)
//! against aimock's scripted `/api/chat` and `/v1/messages`. Model words are
//! never asserted; aimock's scripted replies are fixture data, so they are.

use std::path::Path;

use crate::support::*;

/// A config whose default endpoint `name` speaks `protocol`.
fn protocol_config(name: &str, protocol: &str, base_url: &str, model: &str, extra: &str) -> String {
    format!(
        "[defaults]\nendpoint = \"{name}\"\n\n[endpoints.{name}]\nprotocol = \"{protocol}\"\nbase_url = \"{base_url}\"\nmodel = \"{model}\"\nfirst_token_timeout_s = 300\nidle_timeout_s = 120\n{extra}"
    )
}

fn turn_json(session: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(session.join("0001-turn.json")).unwrap()).unwrap()
}

fn json_out(o: &std::process::Output) -> serde_json::Value {
    assert!(o.status.success(), "stderr: {}", stderr(o));
    serde_json::from_str(stdout(o).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn anthropic_protocol_against_the_real_local_llm() {
    let Some(port) = lab_llm_port("anthropic_protocol_against_the_real_local_llm") else {
        return;
    };
    let s = Sandbox::new();
    s.config(&protocol_config(
        "claude",
        "anthropic",
        &format!("http://127.0.0.1:{port}"),
        "smollm2",
        "",
    ));
    let o = s.run(&["-e", "claude", "-s", "Be brief.", "--max-tokens", "16", "Say hi"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert!(!stdout(&o).trim().is_empty(), "no answer printed");
    let sess = s.sessions();
    assert_eq!(sess.len(), 1);
    let t = turn_json(&sess[0]);
    assert_eq!(t["status"], "completed");
    assert_eq!(t["response"]["text"].as_str().unwrap().trim(), stdout(&o).trim());
    assert!(
        matches!(t["response"]["finish_reason"].as_str(), Some("stop" | "length")),
        "{t}"
    );
    assert_eq!(
        t["stats"]["usage_reported"], true,
        "llama.cpp reports usage in message_start/message_delta"
    );
    assert!(t["stats"]["input_tokens"].as_u64().unwrap() > 0, "{t}");
    let out_tokens = t["stats"]["output_tokens"].as_u64().unwrap();
    assert!(out_tokens > 0 && out_tokens <= 16, "{t}");
}

#[test]
fn anthropic_protocol_json_output_and_models_with_a_v1_base_url() {
    let Some(port) = lab_llm_port("anthropic_protocol_json_output_and_models_with_a_v1_base_url") else {
        return;
    };
    let s = Sandbox::new();
    s.config(&protocol_config(
        "claude",
        "anthropic",
        &format!("http://127.0.0.1:{port}/v1"),
        "smollm2",
        "",
    ));
    let v = json_out(&s.run(&[
        "--json",
        "--no-log",
        "--temperature",
        "0",
        "--max-tokens",
        "4",
        "Count from 1 to 100, separated by commas.",
    ]));
    assert_eq!(
        (v["endpoint"].as_str(), v["status"].as_str()),
        (Some("claude"), Some("completed"))
    );
    assert!(!v["text"].as_str().unwrap().is_empty(), "{v}");
    assert_eq!(v["finish_reason"], "length", "4 tokens cut a count to 100 short: {v}");
    assert_eq!(v["stats"]["usage_reported"], true);
    let o = s.run(&["models", "claude"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).lines().any(|l| l == "smollm2"), "{}", stdout(&o));
}

#[test]
fn openai_completions_protocol_against_the_real_local_llm() {
    let Some(port) = lab_llm_port("openai_completions_protocol_against_the_real_local_llm") else {
        return;
    };
    let s = Sandbox::new();
    let base = format!("http://127.0.0.1:{port}/v1");
    // The default chatml preset, and an inline template (with its own stop).
    let inline = "prompt_template = '''\n{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n'''\nstop = [\"<|im_end|>\"]\n";
    s.config(&format!(
        "{}\n[endpoints.inline]\nprotocol = \"openai-completions\"\nbase_url = \"{base}\"\nmodel = \"smollm2\"\n{inline}",
        protocol_config("legacy", "openai-completions", &base, "smollm2", "")
    ));
    for endpoint in ["legacy", "inline"] {
        let mut args = vec!["--json", "-e", endpoint, "--max-tokens", "48", "What is 2+2?"];
        if endpoint == "inline" {
            args.insert(0, "--no-log");
        }
        let v = json_out(&s.run(&args));
        assert_eq!(v["status"], "completed", "{endpoint}: {v}");
        let text = v["text"].as_str().unwrap();
        assert!(!text.trim().is_empty(), "{endpoint}: {v}");
        assert!(
            !text.contains("<|im_"),
            "{endpoint}: the stop sequences did not stop it: {text:?}"
        );
        assert!(
            matches!(v["finish_reason"].as_str(), Some("stop" | "length")),
            "{endpoint}: {v}"
        );
        assert_eq!(v["stats"]["usage_reported"], true, "{endpoint}: {v}");
        assert!(v["stats"]["input_tokens"].as_u64().unwrap() > 0, "{endpoint}: {v}");
    }
    let sess = s.sessions();
    assert_eq!(sess.len(), 1);
    let t = turn_json(&sess[0]);
    assert_eq!(t["endpoint"], "legacy");
    assert_eq!(t["request"]["messages"][0]["content"], "What is 2+2?");
    let o = s.run(&["models", "legacy"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).lines().any(|l| l == "smollm2"), "{}", stdout(&o));
}

#[test]
fn ollama_protocol_against_aimock() {
    let Some(port) = lab_aimock_port("ollama_protocol_against_aimock") else {
        return;
    };
    let s = Sandbox::new();
    s.config(&protocol_config(
        "llama",
        "ollama",
        &format!("http://127.0.0.1:{port}"),
        "llama3.2",
        "",
    ));
    let o = s.run(&["-e", "llama", "hello"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    // aimock's scripted reply for "hello" (lab/aimock-fixtures.json).
    assert_eq!(stdout(&o).trim(), "Hello! How can I help you today?");
    let t = turn_json(&s.sessions()[0]);
    assert_eq!(t["status"], "completed");
    assert_eq!(t["response"]["finish_reason"], "stop");
    assert_eq!(
        t["stats"]["usage_reported"], false,
        "aimock reports zero counts, which are not usage"
    );
    let o = s.run(&["models", "llama"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let listing = stdout(&o);
    let models: Vec<&str> = listing.lines().collect();
    assert!(!models.is_empty(), "no models from /api/tags");
    assert!(models.windows(2).all(|w| w[0] <= w[1]), "{models:?}");
}

#[test]
fn ollama_protocol_faults_from_aimock_are_clear() {
    let Some(port) = lab_aimock_port("ollama_protocol_faults_from_aimock_are_clear") else {
        return;
    };
    let s = Sandbox::new();
    s.config(&protocol_config(
        "llama",
        "ollama",
        &format!("http://127.0.0.1:{port}/api"),
        "llama3.2",
        "max_retries = 0\n",
    ));
    let o = s.run(&["--no-log", "ratelimit"]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("rate limited (HTTP 429), retry after 2s"), "{err}");

    // aimock cuts this reply after 250 ms: the part that arrived is kept.
    let o = s.run(&["disconnect"]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("what arrived was kept"), "{err}");
    let t = turn_json(&s.sessions()[0]);
    assert_eq!(t["status"], "failed");
    let partial = t["response"]["text"].as_str().unwrap();
    assert!(!partial.is_empty(), "{t}");
    assert!(
        "This answer is cut off by a disconnect.".starts_with(partial) && partial.len() < 39,
        "{partial:?}"
    );
}

#[test]
fn anthropic_protocol_against_aimock() {
    let Some(port) = lab_aimock_port("anthropic_protocol_against_aimock") else {
        return;
    };
    let s = Sandbox::new();
    s.config(&protocol_config(
        "claude",
        "anthropic",
        &format!("http://127.0.0.1:{port}"),
        "claude-sonnet-4-5",
        "max_retries = 0\napi_key_env = \"ANTHROPIC_API_KEY\"\n",
    ));
    let o = s
        .pai()
        .env("ANTHROPIC_API_KEY", "sk-ant-lab")
        .args(["hello"])
        .output()
        .unwrap();
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "Hello! How can I help you today?");
    let o = s
        .pai()
        .env("ANTHROPIC_API_KEY", "sk-ant-lab")
        .args(["--no-log", "ratelimit"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("rate limited (HTTP 429)"), "{}", stderr(&o));
    // Without the key, nothing is sent and the message names the variable.
    let o = s.run(&["--no-log", "hello"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("ANTHROPIC_API_KEY is not set"), "{}", stderr(&o));
}
