//! Against the REAL tiny LLM from `lab/` (llama.cpp server + SmolLM2-135M).
//! Assert on structure, never on the model's words.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::*;

#[test]
fn say_hi_against_the_real_local_llm() {
    let Some(port) = lab_llm_port("say_hi_against_the_real_local_llm") else {
        return;
    };
    let s = Sandbox::new();
    s.config(&endpoint_config("lab", port, ""));
    let o = s.run(&["-e", "lab", "--max-tokens", "16", "--temperature", "0", "Say hi"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert!(!stdout(&o).trim().is_empty(), "no answer printed");
    let sess = s.sessions();
    assert_eq!(sess.len(), 1);
    assert_eq!(
        files_in(&sess[0]),
        vec!["0001-turn.json", "conversation.html", "gptwink_format.html"]
    );
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(sess[0].join("0001-turn.json")).unwrap()).unwrap();
    assert_eq!(t["status"], "completed");
    assert_eq!(t["response"]["text"].as_str().unwrap().trim(), stdout(&o).trim());
    assert_eq!(
        t["stats"]["usage_reported"], true,
        "llama.cpp reports usage with include_usage"
    );
    assert!(t["stats"]["output_tokens"].as_u64().unwrap() <= 16);
    let html = std::fs::read_to_string(sess[0].join("conversation.html")).unwrap();
    assert!(html.contains("Say hi"));
}

#[test]
fn json_output_against_the_real_local_llm() {
    let Some(port) = lab_llm_port("json_output_against_the_real_local_llm") else {
        return;
    };
    let s = Sandbox::new();
    s.config(&endpoint_config("lab", port, ""));
    let o = s.run(&["--json", "--no-log", "--max-tokens", "8", "Name a colour."]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["endpoint"], "lab");
    assert_eq!(v["model"], "smollm2");
    assert!(matches!(v["finish_reason"].as_str(), Some("stop" | "length")));
    assert!(v["stats"]["ttft_ms"].as_u64().is_some());
    assert!(v["stats"]["input_tokens"].as_u64().unwrap() > 0);
    assert!(s.sessions().is_empty(), "--no-log wrote records");
}

#[test]
fn models_are_listed_by_the_real_server() {
    let Some(port) = lab_llm_port("models_are_listed_by_the_real_server") else {
        return;
    };
    let s = Sandbox::new();
    s.config(&endpoint_config("lab", port, ""));
    let o = s.run(&["models", "lab"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).lines().any(|l| l == "smollm2"), "{}", stdout(&o));
}

/// Kill a real server while it streams: one clear line, non-zero exit, the
/// partial text in the turn JSON, no panic.
#[test]
fn killing_the_server_mid_stream_keeps_the_partial_answer() {
    if lab_llm_port("killing_the_server_mid_stream_keeps_the_partial_answer").is_none() {
        return;
    }
    assert!(
        lab_llm_installed(),
        "the lab LLM answers but is not installed where expected"
    );
    let mut llm = PrivateLlm::start().expect("a private lab LLM starts");
    let s = Sandbox::new();
    s.config(&endpoint_config("lab", llm.port, "max_retries = 0\n"));
    let mut child = s
        .pai()
        .args([
            "--max-tokens",
            "400",
            "Write a long story about a lighthouse keeper, in many paragraphs.",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for some streamed text, then kill the server.
    let mut out = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut buf = [0u8; 256];
    while seen.len() < 20 && Instant::now() < deadline {
        match out.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    assert!(
        seen.len() >= 20,
        "no streamed text before the kill: {:?}",
        String::from_utf8_lossy(&seen)
    );
    llm.kill();
    let mut rest = Vec::new();
    out.read_to_end(&mut rest).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("pai: endpoint `lab`: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let sess = s.sessions();
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(sess[0].join("0001-turn.json")).unwrap()).unwrap();
    assert_eq!(t["status"], "failed");
    let text = t["response"]["text"].as_str().unwrap();
    let printed = String::from_utf8_lossy(&[seen, rest].concat()).trim().to_string();
    assert!(
        !text.is_empty() && printed.starts_with(text.trim()),
        "turn text {text:?} vs printed {printed:?}"
    );
    assert!(t["response"]["error"].as_str().is_some());
}
