//! `pai arena` and `pai compare` through the real binary against REAL
//! servers: one participant on the lab LLM (OpenAI protocol), the other on
//! aimock (Ollama protocol), the judge on a private aimock whose scripted
//! rulings are fixture data. Model words are never asserted; aimock's are.

use std::path::Path;

use crate::support::*;

/// aimock's scripted reply to any message containing "hello" (lab/aimock-fixtures.json).
pub(crate) const MOCK_HELLO: &str = "Hello! How can I help you today?";

/// The judge's fixtures: Mock wins in both orders (as B in the first, as A in the second).
pub(crate) fn judge_fixtures() -> serde_json::Value {
    let ruling = |winner: &str, mock: &str, lab: &str, why: &str| {
        serde_json::json!({
            "winner": winner,
            "scores": {
                mock: {"clarity": 9, "relevance": 8},
                lab: {"clarity": 4, "relevance": 5}
            },
            "reasons": why
        })
        .to_string()
    };
    serde_json::json!({"fixtures": [
        {"match": {"userMessage": format!("[B]: {MOCK_HELLO}")},
         "response": {"content": ruling("B", "B", "A", "B greets the user and offers help.")}},
        {"match": {"userMessage": format!("[A]: {MOCK_HELLO}")},
         "response": {"content": ruling("A", "A", "B", "A is polite and on topic.")}}
    ]})
}

pub(crate) fn config(llm: u16, aimock: u16, judge: u16, arena_extra: &str) -> String {
    format!(
        "[defaults]\nendpoint = \"lab\"\nmax_tokens = 64\n\n\
         [endpoints.lab]\nbase_url = \"http://127.0.0.1:{llm}/v1\"\nmodel = \"smollm2\"\nfirst_token_timeout_s = 300\nidle_timeout_s = 120\n\n\
         [endpoints.mock]\nprotocol = \"ollama\"\nbase_url = \"http://127.0.0.1:{aimock}\"\nmodel = \"llama3.2\"\nmax_retries = 0\n\n\
         [endpoints.judge]\nbase_url = \"http://127.0.0.1:{judge}/v1\"\nmodel = \"judge-model\"\nmax_retries = 0\n\n\
         [arenas.debate]\nopening = \"hello — tabs or spaces? Answer in one sentence.\"\nmax_turns = 6\n{arena_extra}\n\
         [[arenas.debate.participants]]\nname = \"Lab\"\nendpoint = \"lab\"\nsystem = \"Argue for tabs.\"\n\n\
         [[arenas.debate.participants]]\nname = \"Mock\"\nendpoint = \"mock\"\n\n\
         [arenas.debate.judge]\nendpoint = \"judge\"\ncriteria = [\"clarity\", \"relevance\"]\n"
    )
}

fn turn(dir: &Path, id: u32) -> serde_json::Value {
    let p = dir.join(format!("{id:04}-turn.json"));
    serde_json::from_slice(&std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

#[test]
fn a_headless_arena_between_two_real_servers_is_judged_and_recorded_in_one_session() {
    let test = "a_headless_arena_between_two_real_servers_is_judged_and_recorded_in_one_session";
    let Some(llm) = lab_llm_port(test) else { return };
    let Some(aimock) = lab_aimock_port(test) else { return };
    let Some(judge) = PrivateAimock::start(test, &judge_fixtures()) else {
        return;
    };
    let s = Sandbox::new();
    s.config(&config(llm, aimock, judge.port, ""));
    let o = s.run(&["arena", "debate", "--headless", "--turns", "3", "--max-tokens", "24"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    assert_eq!(err, "", "nothing on stderr when all went well");

    // stdout: each turn under its header, then the rulings and the verdict.
    assert!(out.starts_with("── Lab (smollm2 · lab) ──\n"), "{out}");
    assert!(
        out.contains(&format!(
            "\n\n── Mock (llama3.2 · mock) ──\n{MOCK_HELLO}\n\n── Lab (smollm2 · lab) ──\n"
        )),
        "{out}"
    );
    assert!(out.contains("\n\n── judge (judge-model · judge) ──\n"), "{out}");
    assert!(
        out.contains("order 1 (A = Lab, B = Mock): Mock — B greets the user and offers help.\n"),
        "{out}"
    );
    assert!(
        out.contains("order 2 (A = Mock, B = Lab): Mock — A is polite and on topic.\n"),
        "{out}"
    );
    assert!(out.contains("verdict: winner: Mock (both orders agree)\n"), "{out}");
    assert!(out.contains("  Lab   clarity 4 · relevance 5 · mean 4.5\n"), "{out}");
    assert!(out.ends_with("  Mock  clarity 9 · relevance 8 · mean 8.5\n"), "{out}");

    // ONE session folder tells the whole story.
    let sessions = s.sessions();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let d = &sessions[0];
    assert_eq!(
        files_in(d),
        [
            "0001-turn.json",
            "0002-turn.json",
            "0003-turn.json",
            "0004-turn.json",
            "0005-turn.json",
            "conversation.html",
            "gptwink_format.html"
        ]
    );
    for (id, who, model, endpoint, lane) in [
        (1, "Lab", "smollm2", "lab", 0),
        (2, "Mock", "llama3.2", "mock", 1),
        (3, "Lab", "smollm2", "lab", 0),
    ] {
        let t = turn(d, id);
        assert_eq!(t["mode"], "arena", "{t}");
        assert_eq!(t["participant_name"], who, "{t}");
        assert_eq!(
            (t["model"].as_str(), t["endpoint"].as_str()),
            (Some(model), Some(endpoint))
        );
        assert_eq!(t["lane"], lane);
        assert_eq!(t["status"], "completed", "{t}");
        assert!(!t["response"]["text"].as_str().unwrap().trim().is_empty(), "{t}");
    }
    assert_eq!(turn(d, 2)["response"]["text"], MOCK_HELLO);
    // Lab's second turn: its own words as assistant, Mock's as the user's.
    let msgs = turn(d, 3)["request"]["messages"].as_array().unwrap().clone();
    assert!(
        msgs[0]["content"].as_str().unwrap().starts_with("Argue for tabs."),
        "{msgs:?}"
    );
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(msgs.last().unwrap()["role"], "user");
    assert_eq!(msgs.last().unwrap()["content"], MOCK_HELLO);
    for (id, order) in [(4, 1), (5, 2)] {
        let t = turn(d, id);
        assert_eq!(t["mode"], "judge", "{t}");
        assert_eq!(t["participant_name"], format!("Judge · order {order}"));
        assert_eq!(
            (t["model"].as_str(), t["endpoint"].as_str()),
            (Some("judge-model"), Some("judge"))
        );
        assert_eq!(t["ruling"]["winner"], "Mock", "{t}");
        assert_eq!(t["ruling"]["scores"]["Mock"]["clarity"], 9.0);
    }
    assert!(
        turn(d, 4).get("verdict").is_none(),
        "the verdict is on the last judge turn only"
    );
    let v = &turn(d, 5)["verdict"];
    assert_eq!(
        (v["winner"].as_str(), v["agree"].as_bool()),
        (Some("Mock"), Some(true)),
        "{v}"
    );
    assert_eq!(v["scores"]["Lab"]["relevance"], 5.0);

    let html = std::fs::read_to_string(d.join("conversation.html")).unwrap();
    for needle in [
        "Lab <span class=\"model\">lab · smollm2</span>",
        "Mock <span class=\"model\">mock · llama3.2</span>",
        "class=\"msg assistant seat-0\"",
        "class=\"msg assistant seat-1\"",
        "Participants as A = Mock, B = Lab",
        "class=\"verdict winner\"",
        "<strong>Winner: Mock</strong> — both orders agree",
        "<tr class=\"seat-1\"><td class=\"name\">Mock</td><td>9</td><td>8</td><td>8.5</td></tr>",
    ] {
        assert!(html.contains(needle), "conversation.html lacks {needle}");
    }
    let legacy = std::fs::read_to_string(d.join("gptwink_format.html")).unwrap();
    for needle in [
        "Lab (smollm2 · lab):",
        "Mock (llama3.2 · mock):",
        "[ruling: Mock]",
        "Winner: Mock — both orders agree",
        "Mock: clarity 9 relevance 8 (mean 8.5)",
    ] {
        assert!(legacy.contains(needle), "gptwink_format.html lacks {needle}");
    }
}

#[test]
fn arena_json_output_and_a_prompt_that_replaces_the_opening() {
    let test = "arena_json_output_and_a_prompt_that_replaces_the_opening";
    let Some(llm) = lab_llm_port(test) else { return };
    let Some(aimock) = lab_aimock_port(test) else { return };
    let Some(judge) = PrivateAimock::start(test, &judge_fixtures()) else {
        return;
    };
    let s = Sandbox::new();
    s.config(&config(llm, aimock, judge.port, ""));
    let o = s.run(&[
        "arena",
        "debate",
        "--json",
        "--no-log",
        "--turns",
        "2",
        "--max-tokens",
        "16",
        "hello — vim or emacs?",
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["arena"], "debate");
    assert_eq!(v["opening"], "hello — vim or emacs?");
    assert_eq!(v["end"], "completed");
    let turns = v["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(
        (turns[0]["participant"].as_str(), turns[0]["model"].as_str()),
        (Some("Lab"), Some("smollm2"))
    );
    assert_eq!(turns[1]["endpoint"], "mock");
    assert_eq!(turns[1]["text"], MOCK_HELLO);
    assert!(
        turns
            .iter()
            .all(|t| t["status"] == "completed" && t["stats"]["duration_ms"].is_u64())
    );
    assert_eq!(v["judge_turns"].as_array().unwrap().len(), 2);
    assert_eq!(v["verdict"]["summary"], "winner: Mock (both orders agree)");
    assert!(v["session_dir"].is_null(), "--no-log: {v}");
    assert!(s.sessions().is_empty(), "--no-log wrote records");
}

#[test]
fn a_participant_failing_on_a_real_server_ends_the_arena_with_exit_1() {
    let test = "a_participant_failing_on_a_real_server_ends_the_arena_with_exit_1";
    let Some(aimock) = lab_aimock_port(test) else { return };
    let s = Sandbox::new();
    // Mock speaks first; aimock answers "boom" with HTTP 500. Nothing reaches the LLM or judge.
    s.config(
        &config(1, aimock, 1, "")
            .replace("name = \"Lab\"", "name = \"Lab2\"")
            .replace(
                "[[arenas.debate.participants]]\nname = \"Lab2\"",
                "[[arenas.debate.participants]]\nname = \"Mock0\"\nendpoint = \"mock\"\n\n[[arenas.debate.participants]]\nname = \"Lab2\"",
            ),
    );
    let o = s
        .pai()
        .args(["arena", "debate", "--headless"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"boom: tabs or spaces?")?;
            c.wait_with_output()
        });
    let o = o.unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "stdout: {}\nstderr: {err}", stdout(&o));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("pai: arena `debate`: Mock0 failed: "), "{err}");
    assert!(err.contains("HTTP 500"), "{err}");
    assert!(
        stdout(&o).starts_with("── Mock0 (llama3.2 · mock) ──\n[failed]\n"),
        "{}",
        stdout(&o)
    );
    let d = &s.sessions()[0];
    let t = turn(d, 1);
    assert_eq!(
        (t["status"].as_str(), t["participant_name"].as_str()),
        (Some("failed"), Some("Mock0"))
    );
    assert_eq!(
        t["request"]["messages"][1]["content"], "boom: tabs or spaces?",
        "the prompt came from stdin"
    );
}

#[test]
fn unknown_arena_and_missing_opening_are_clear_usage_errors() {
    let s = Sandbox::new();
    s.config(&config(1, 1, 1, "").replace("opening = \"hello — tabs or spaces? Answer in one sentence.\"\n", ""));
    let o = s.run(&["arena", "debat", "--headless"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("unknown arena `debat` — did you mean `debate`? Configured arenas: debate"),
        "{err}"
    );
    let o = s.run(&["arena", "debate", "--headless"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("arena `debate` has no opening prompt"), "{err}");
    let o = s.run(&["arena", "debate", "--turns", "0", "hi"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(s.sessions().is_empty());
}

#[test]
fn compare_asks_the_lab_llm_and_aimock_at_once_and_records_both() {
    let test = "compare_asks_the_lab_llm_and_aimock_at_once_and_records_both";
    let Some(llm) = lab_llm_port(test) else { return };
    let Some(aimock) = lab_aimock_port(test) else { return };
    let s = Sandbox::new();
    s.config(&config(llm, aimock, 1, ""));
    let o = s.run(&[
        "compare",
        "-e",
        "lab",
        "-e",
        "mock/llama3.2",
        "-s",
        "Be brief.",
        "--max-tokens",
        "16",
        "hello, name a prime",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {}", stderr(&o));
    assert!(out.starts_with("── [1] lab/smollm2 ── first token "), "{out}");
    assert!(out.contains(" tok/s · "), "{out}");
    assert!(out.contains("\n\n── [2] mock/llama3.2 ── first token "), "{out}");
    assert!(out.ends_with(&format!("\n{MOCK_HELLO}\n")), "{out}");
    let d = &s.sessions()[0];
    assert_eq!(s.sessions().len(), 1);
    for (id, endpoint, lane) in [(1, "lab", 0), (2, "mock", 1)] {
        let t = turn(d, id);
        assert_eq!(
            (t["mode"].as_str(), t["endpoint"].as_str()),
            (Some("compare"), Some(endpoint)),
            "{t}"
        );
        assert_eq!(t["lane"], lane);
        assert_eq!(t["request"]["messages"][0]["content"], "Be brief.");
        assert_eq!(t["request"]["messages"][1]["content"], "hello, name a prime");
        assert_eq!(t["status"], "completed", "{t}");
    }
    let html = std::fs::read_to_string(d.join("conversation.html")).unwrap();
    assert!(
        html.contains("<span class=\"lane\">answer 1</span>") && html.contains("<span class=\"lane\">answer 2</span>")
    );
    assert_eq!(
        html.matches("hello, name a prime").count(),
        3,
        "the prompt once, plus <title> and <h1>"
    );

    let o = s.run(&[
        "compare",
        "--json",
        "--no-log",
        "-e",
        "mock",
        "-e",
        "lab",
        "-m",
        "smollm2",
        "--max-tokens",
        "8",
        "hello",
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let answers = v["answers"].as_array().unwrap();
    assert_eq!(answers.len(), 2);
    assert_eq!(
        (answers[0]["endpoint"].as_str(), answers[0]["model"].as_str()),
        (Some("mock"), Some("smollm2")),
        "-m for both"
    );
    assert_eq!(answers[0]["text"], MOCK_HELLO);
    assert_eq!(answers[1]["stats"]["usage_reported"], true, "llama.cpp reports usage");
    assert_eq!(s.sessions().len(), 1, "--no-log wrote nothing more");
}

#[test]
fn compare_usage_errors_name_the_fix() {
    let s = Sandbox::new();
    s.config(&config(1, 1, 1, ""));
    let o = s.run(&["compare", "-e", "lab", "hi"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("at least two endpoints"), "{}", stderr(&o));
    let o = s.run(&["compare", "-e", "lab", "-e", "mokc", "hi"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown endpoint `mokc` — did you mean `mock`?"),
        "{}",
        stderr(&o)
    );
    let o = s.run(&["compare", "-e", "lab", "-e", "mock"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no prompt given"), "{}", stderr(&o));
}
