//! `pai arena NAME` and `pai compare` on a terminal: the real binary in tmux
//! opens the TUI in arena or compare mode against REAL servers (the lab LLM
//! and aimock), and what happens there — a paused and resumed debate with the
//! judge's verdict, a compare pick — ends up in the session folder, the
//! history, `pai votes export` and `pai leaderboard`.

use std::time::Duration;

use serde_json::Value;

use crate::arena::{MOCK_HELLO, config, judge_fixtures};
use crate::support::*;
use crate::tmux::Tmux;
use crate::tui_e2e::{pai_cmd_with, tmux_or_skip};

const T: Duration = Duration::from_secs(120);

fn turn_files(dir: &std::path::Path) -> Vec<String> {
    files_in(dir)
        .into_iter()
        .filter(|f| f.ends_with("-turn.json"))
        .collect()
}

fn json(o: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(o), stderr(o)))
}

#[test]
fn pai_arena_in_the_tui_pauses_resumes_and_ends_with_the_verdict() {
    let test = "pai_arena_in_the_tui_pauses_resumes_and_ends_with_the_verdict";
    if !tmux_or_skip(test) {
        return;
    }
    let Some(llm) = lab_llm_port(test) else { return };
    let Some(aimock) = lab_aimock_port(test) else { return };
    let Some(judge) = PrivateAimock::start(test, &judge_fixtures()) else {
        return;
    };
    let s = Sandbox::new();
    s.config(
        &format!("{}\n", config(llm, aimock, judge.port, "")).replace("[defaults]\n", "[defaults]\nsmooth = false\n"),
    );
    let t = Tmux::start(&pai_cmd_with(&s, "arena debate --turns 8 --max-tokens 16"), 110, 40).expect("tmux");

    // The exchange starts at once with the configured opening.
    let screen = t.wait_for("the first turns", T, |s| s.contains("● Mock · llama3.2 · mock"));
    assert!(screen.contains("Arena │"), "{screen}");
    t.type_text("/pause");
    t.key("Enter");
    let screen = t.wait_for("the pause", T, |s| s.contains("│ Paused │"));
    assert!(screen.contains("/resume continues"), "{screen}");
    // The toolbar says how far it got: `debate · paused after N/8`.
    let spoken: u32 = screen
        .split("debate · paused after ")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no turn count in the toolbar:\n{screen}"));
    assert!((1..8).contains(&spoken), "{screen}");

    t.type_text("/resume");
    t.key("Enter");
    let screen = t.wait_for("the verdict", T, |s| {
        s.contains("⚖ Verdict — winner: Mock (both orders agree)") && s.contains("│ Idle │")
    });
    assert!(screen.contains("Mock  clarity 9 · relevance 8"), "{screen}");
    t.type_text("/quit");
    t.key("Enter");
    t.wait_for_in("pai to exit", T, true, |s| s.contains("PAI-EXIT=0"));

    // One session folder: eight participant turns, then the judge twice.
    let sessions = s.sessions();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let d = &sessions[0];
    assert_eq!(turn_files(d).len(), 10, "{:?}", files_in(d));
    for id in 1..=8u32 {
        let t: Value = serde_json::from_slice(&std::fs::read(d.join(format!("{id:04}-turn.json"))).unwrap()).unwrap();
        assert_eq!(t["mode"], "arena", "{t}");
        assert_eq!(t["participant_name"], if id % 2 == 1 { "Lab" } else { "Mock" }, "{t}");
        assert_eq!(t["status"], "completed", "{t}");
    }
    let last: Value = serde_json::from_slice(&std::fs::read(d.join("0010-turn.json")).unwrap()).unwrap();
    assert_eq!(last["mode"], "judge", "{last}");
    assert_eq!(last["verdict"]["winner"], "Mock", "{last}");
    let html = std::fs::read_to_string(d.join("conversation.html")).unwrap();
    assert!(
        html.contains("Mock") && html.contains("both orders agree"),
        "verdict in the HTML"
    );

    // The agreeing verdict is a judge's vote: the leaderboard has Mock first.
    let o = s.run(&["leaderboard", "--voter", "judge", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["votes"], 1, "{v}");
    assert_eq!(v["models"][0]["model"], "llama3.2", "{v}");
    assert_eq!(v["models"][0]["wins"], 1, "{v}");
    assert_eq!(v["models"][1]["model"], "smollm2", "{v}");

    // The history tells the same story: the Markdown export has the verdict.
    let id = d.file_name().unwrap().to_str().unwrap();
    let o = s.run(&["sessions", "export", id, "--format", "md"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = stdout(&o);
    assert!(md.contains("## Mock (llama3.2 · mock)\n\nHello!"), "{md}");
    assert!(md.contains("## Verdict — Winner: Mock\n\nboth orders agree"), "{md}");
    assert_eq!(md.matches("**Ruling**").count(), 2, "{md}");
}

#[test]
fn pai_compare_in_the_tui_records_the_pick_and_the_leaderboard_reflects_it() {
    let test = "pai_compare_in_the_tui_records_the_pick_and_the_leaderboard_reflects_it";
    if !tmux_or_skip(test) {
        return;
    }
    let Some(llm) = lab_llm_port(test) else { return };
    let Some(aimock) = lab_aimock_port(test) else { return };
    let s = Sandbox::new();
    // The judge endpoint is configured but never asked here.
    s.config(&config(llm, aimock, 9, "").replace("[defaults]\n", "[defaults]\nsmooth = false\n"));
    let t = Tmux::start(
        &pai_cmd_with(
            &s,
            "compare -e lab -e mock/llama3.2 --max-tokens 24 hello, who are you?",
        ),
        110,
        40,
    )
    .expect("tmux");

    let screen = t.wait_for("both answers and the pick bar", T, |s| {
        s.contains("Which answer is better?")
    });
    assert!(screen.contains("Compare │"), "{screen}");
    assert!(screen.contains(MOCK_HELLO), "{screen}");
    assert!(screen.contains("tok/s"), "each pane has its own stats: {screen}");
    t.key("2");
    let screen = t.wait_for("the pick", T, |s| s.contains("llama3.2 continues the conversation"));
    assert!(!screen.contains("Which answer is better?"), "{screen}");
    t.type_text("/quit");
    t.key("Enter");
    t.wait_for_in("pai to exit", T, true, |s| s.contains("PAI-EXIT=0"));

    // Both answers are recorded, the right one marked as picked.
    let sessions = s.sessions();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let d = &sessions[0];
    assert_eq!(turn_files(d).len(), 2, "{:?}", files_in(d));
    let turn = |id: u32| -> Value {
        serde_json::from_slice(&std::fs::read(d.join(format!("{id:04}-turn.json"))).unwrap()).unwrap()
    };
    let (left, right) = (turn(1), turn(2));
    assert_eq!(
        (left["mode"].as_str(), left["lane"].as_u64()),
        (Some("compare"), Some(0))
    );
    assert_eq!(left["pick"], "rejected", "{left}");
    assert_eq!(
        (right["model"].as_str(), right["pick"].as_str()),
        (Some("llama3.2"), Some("chosen"))
    );
    assert_eq!(right["response"]["text"], MOCK_HELLO);
    let html = std::fs::read_to_string(d.join("conversation.html")).unwrap();
    assert!(
        html.contains("✓ chosen") && html.contains("✗ not chosen"),
        "the pick in the HTML"
    );

    // The vote: a preference pair for export, and a win on the leaderboard.
    let o = s.run(&["votes", "export", "--format", "dpo-jsonl"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 1, "{}", stdout(&o));
    assert_eq!(rows[0]["chosen_model"], "llama3.2");
    assert_eq!(rows[0]["rejected_model"], "smollm2");
    assert_eq!(rows[0]["chosen"][0]["content"], MOCK_HELLO);
    assert_eq!(rows[0]["voter"], "user");
    let prompt = rows[0]["prompt"].as_array().unwrap();
    assert_eq!(prompt.last().unwrap()["content"], "hello, who are you?");

    let o = s.run(&["leaderboard", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["votes"], 1, "{v}");
    let first = &v["models"][0];
    assert_eq!(
        (first["model"].as_str(), first["endpoint"].as_str()),
        (Some("llama3.2"), Some("mock"))
    );
    assert_eq!((first["wins"].as_u64(), first["matches"].as_u64()), (Some(1), Some(1)));
    assert!(
        first["rating"].as_f64().unwrap() > v["models"][1]["rating"].as_f64().unwrap(),
        "{v}"
    );
}
