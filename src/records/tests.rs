//! Session folder layout, JSON schema, HTML escaping and refresh, atomicity.

use std::sync::Arc;

use super::*;
use crate::conversation::{Message, Params, ToolCall, Turn, TurnMode, TurnRequest, TurnResponse, TurnStatus};
use crate::stats::RequestStats;

pub(crate) fn turn(id: u32, prompt: &str, answer: &str) -> Turn {
    Turn {
        turn_id: id,
        started_at: "2026-11-21T10:00:00.000Z".into(),
        endpoint: "local".into(),
        model: "smollm2".into(),
        participant_name: None,
        mode: TurnMode::Chat,
        lane: None,
        status: TurnStatus::Completed,
        request: TurnRequest {
            messages: vec![Message::system("sys"), Message::user(prompt)],
            params: Params {
                temperature: Some(0.7),
                max_tokens: None,
                tool_choice: None,
                response_schema: None,
            },
        },
        response: TurnResponse {
            text: answer.into(),
            reasoning: String::new(),
            tool_calls: vec![],
            finish_reason: Some("stop".into()),
            error: None,
        },
        stats: RequestStats {
            ttft_ms: Some(12),
            duration_ms: 40,
            input_tokens: 5,
            output_tokens: 6,
            usage_reported: true,
            tokens_per_sec: Some(150.0),
            finish_reason: Some("stop".into()),
            retries: 0,
        },
        tool_runs: vec![],
        ruling: None,
        verdict: None,
        pick: None,
    }
}

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn folder_layout_and_turn_json_schema() {
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(Templates::builtin()));
    let name = r.dir().file_name().unwrap().to_string_lossy().into_owned();
    assert!(!r.dir().exists(), "the folder appears with the first turn");
    // YYYYmmdd-HHMMSS-xxxxxx
    assert_eq!(name.len(), 22, "{name}");
    assert!(
        name[..8].chars().all(|c| c.is_ascii_digit()) && &name[8..9] == "-",
        "{name}"
    );
    let p = r.record(&turn(1, "hi", "hello")).unwrap();
    assert_eq!(p.file_name().unwrap(), "0001-turn.json");
    assert_eq!(
        files(r.dir()),
        vec!["0001-turn.json", "conversation.html", "gptwink_format.html"]
    );

    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&j),
        [
            "endpoint",
            "mode",
            "model",
            "participant_name",
            "request",
            "response",
            "started_at",
            "stats",
            "status",
            "turn_id"
        ]
    );
    assert_eq!(keys(&j["request"]), ["messages", "params"]);
    assert_eq!(
        keys(&j["response"]),
        ["error", "finish_reason", "reasoning", "text", "tool_calls"]
    );
    for k in [
        "ttft_ms",
        "duration_ms",
        "input_tokens",
        "output_tokens",
        "tokens_per_sec",
    ] {
        assert!(j["stats"].get(k).is_some(), "stats.{k} missing");
    }
    assert_eq!(j["turn_id"], 1);
    assert_eq!(j["mode"], "chat");
    assert_eq!(j["response"]["text"], "hello");
    assert_eq!(j["request"]["messages"][1]["content"], "hi");
}

#[test]
fn html_is_refreshed_after_every_turn_and_a_rewritten_turn_replaces_its_entry() {
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(Templates::builtin()));
    r.record(&turn(1, "first question", "first answer")).unwrap();
    r.record(&turn(2, "second question", "second answer")).unwrap();
    let html = std::fs::read_to_string(r.dir().join("conversation.html")).unwrap();
    assert!(html.contains("first answer") && html.contains("second answer"));
    assert!(html.contains("2 turns"));
    let legacy = std::fs::read_to_string(r.dir().join("gptwink_format.html")).unwrap();
    assert!(legacy.contains("second question") && legacy.contains("second answer"));
    // Rewrite turn 2 (e.g. a partial answer that later completed).
    r.record(&turn(2, "second question", "second answer, revised")).unwrap();
    let html = std::fs::read_to_string(r.dir().join("conversation.html")).unwrap();
    assert_eq!(html.matches("id=\"turn-2\"").count(), 1);
    assert!(html.contains("second answer, revised"));
    assert_eq!(
        files(r.dir()).len(),
        4,
        "no temp files left behind: {:?}",
        files(r.dir())
    );
}

#[test]
fn script_in_any_field_is_escaped_in_both_html_files() {
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(Templates::builtin()));
    let evil = "<script>alert('x')</script>";
    let mut t = turn(1, evil, &format!("answer {evil} <img src=x onerror=alert(1)>"));
    t.response.reasoning = evil.into();
    t.response.tool_calls = vec![ToolCall {
        id: "c1".into(),
        name: evil.into(),
        arguments: format!("{{\"a\":\"{evil}\"}}"),
    }];
    t.response.error = Some(evil.into());
    t.participant_name = Some(evil.into());
    t.status = TurnStatus::Failed;
    r.record(&t).unwrap();
    for f in ["conversation.html", "gptwink_format.html"] {
        let html = std::fs::read_to_string(r.dir().join(f)).unwrap();
        assert!(!html.contains("<script"), "{f} contains a raw <script>");
        assert!(!html.contains("<img"), "{f} contains a raw <img>");
        assert!(html.contains("&lt;script&gt;"), "{f} lost the text");
        assert!(html.contains("Content-Security-Policy"), "{f} has no CSP");
    }
}

#[test]
fn failed_and_cancelled_turns_are_marked() {
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(Templates::builtin()));
    let mut t = turn(1, "q", "partial");
    t.status = TurnStatus::Cancelled;
    r.record(&t).unwrap();
    let mut t = turn(2, "q2", "half");
    t.status = TurnStatus::Failed;
    t.response.error = Some("connection lost".into());
    r.record(&t).unwrap();
    let html = std::fs::read_to_string(r.dir().join("conversation.html")).unwrap();
    assert!(html.contains("badge cancelled") && html.contains("badge failed"));
    assert!(html.contains("Error: connection lost"));
    let legacy = std::fs::read_to_string(r.dir().join("gptwink_format.html")).unwrap();
    assert!(legacy.contains("[cancelled]") && legacy.contains("[failed: connection lost]"));
}

#[test]
fn user_templates_override_builtin_ones_by_name_and_still_autoescape() {
    let tdir = tempfile::tempdir().unwrap();
    std::fs::write(
        tdir.path().join("conversation.turn.html.j2"),
        "<p>{{ t.turn.response.text }}</p>",
    )
    .unwrap();
    let templates = Templates::load(Some(tdir.path())).unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(templates));
    r.record(&turn(1, "q", "<b>x</b>")).unwrap();
    let html = std::fs::read_to_string(r.dir().join("conversation.html")).unwrap();
    assert!(html.contains("<p>&lt;b&gt;x&lt;&#x2f;b&gt;</p>"), "{html}");
    std::fs::write(tdir.path().join("gptwink_format.html.j2"), "{% if %}").unwrap();
    let e = Templates::load(Some(tdir.path())).err().unwrap();
    assert!(e.contains("gptwink_format.html.j2"), "{e}");
}

#[test]
fn unwritable_sessions_dir_is_a_clear_error() {
    let root = tempfile::tempdir().unwrap();
    let blocker = root.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let mut r = SessionRecorder::new(&blocker, Arc::new(Templates::builtin()));
    let e = r.record(&turn(1, "q", "a")).unwrap_err().to_string();
    assert!(e.contains("sessions_dir"), "{e}");
}

#[test]
fn tool_runs_approvals_and_corrections_appear_in_json_and_both_html_files() {
    use crate::conversation::{Approval, ToolRun};
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(Templates::builtin()));
    let mut t = turn(1, "fix it", "");
    t.mode = TurnMode::Agent;
    t.tool_runs = vec![
        ToolRun {
            call_id: "c1".into(),
            tool: "write_file".into(),
            arguments: serde_json::json!({"path": "a.txt", "content": "fixed"}),
            original_arguments: Some(serde_json::json!({"path": "../a.txt", "content": "fixed"})),
            approval: Approval::Edited,
            reason: None,
            result: "created `a.txt` <script>alert(1)</script>".into(),
            is_error: false,
            duration_ms: 3,
        },
        ToolRun {
            call_id: "c2".into(),
            tool: "run_shell".into(),
            arguments: serde_json::json!({"command": "rm -rf /"}),
            original_arguments: None,
            approval: Approval::Rejected,
            reason: Some("never that".into()),
            result: "error: the user denied `run_shell`: never that".into(),
            is_error: true,
            duration_ms: 0,
        },
    ];
    let p = r.record(&t).unwrap();
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    assert_eq!(j["tool_runs"][0]["approval"], "edited");
    assert_eq!(j["tool_runs"][0]["original_arguments"]["path"], "../a.txt");
    assert_eq!(j["tool_runs"][1]["reason"], "never that");
    for f in ["conversation.html", "gptwink_format.html"] {
        let html = std::fs::read_to_string(r.dir().join(f)).unwrap();
        assert!(html.contains("write_file") && html.contains("run_shell"), "{f}");
        assert!(html.contains("never that"), "{f}: the rejection reason");
        assert!(html.contains("../a.txt"), "{f}: the original arguments");
        assert!(!html.contains("<script>"), "{f}: tool output was not escaped");
    }
    let html = std::fs::read_to_string(r.dir().join("conversation.html")).unwrap();
    assert!(html.contains("Corrected by the user"));
}
