//! Arena, judge and compare turns in the session folder: participants told
//! apart, rulings and the verdict shown, inputs not repeated, everything escaped.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::tests::turn;
use super::*;
use crate::conversation::{Message, TurnMode};
use crate::verdict::{Ruling, combine};

fn read(r: &SessionRecorder, f: &str) -> String {
    std::fs::read_to_string(r.dir().join(f)).unwrap()
}

fn arena_turn(id: u32, seat: u8, name: &str, heard: &str, said: &str) -> Turn {
    let mut t = turn(id, heard, said);
    t.mode = TurnMode::Arena;
    t.lane = Some(seat);
    t.participant_name = Some(name.into());
    t.model = format!("model-{seat}");
    t.endpoint = format!("ep-{seat}");
    t
}

fn ruling(order: &[&str], winner: &str, reasons: &str) -> Ruling {
    let scores: BTreeMap<String, BTreeMap<String, f64>> = order
        .iter()
        .map(|n| {
            let s = if *n == winner { 9.0 } else { 4.5 };
            (
                n.to_string(),
                [("clarity".to_string(), s), ("logic".to_string(), s - 1.0)].into(),
            )
        })
        .collect();
    Ruling {
        order: order.iter().map(|s| s.to_string()).collect(),
        winner: Some(winner.into()),
        tie: false,
        scores,
        reasons: reasons.into(),
        error: None,
    }
}

fn judge_turn(id: u32, k: u32, r: Ruling) -> Turn {
    let mut t = turn(
        id,
        "Participants: A, B. Which participant did best?",
        "{\"winner\": \"A\"}",
    );
    t.mode = TurnMode::Judge;
    t.participant_name = Some(format!("Judge · order {k}"));
    t.endpoint = "judge-ep".into();
    t.model = "judge-model".into();
    t.ruling = Some(Box::new(r));
    t
}

/// Two seats, two turns each, then the judge in both orders.
fn record_debate(r: &mut SessionRecorder, ada: &str, bob: &str) {
    r.record(&arena_turn(1, 0, ada, "Tabs or spaces?", "Tabs, for accessibility."))
        .unwrap();
    r.record(&arena_turn(
        2,
        1,
        bob,
        "Tabs or spaces?\n\nTabs, for accessibility.",
        "Spaces render the same everywhere.",
    ))
    .unwrap();
    r.record(&arena_turn(
        3,
        0,
        ada,
        "Spaces render the same everywhere.",
        "Editors fix that.",
    ))
    .unwrap();
    r.record(&arena_turn(4, 1, bob, "Editors fix that.", "Not in code review tools."))
        .unwrap();
    let first = ruling(&[ada, bob], bob, "Bob's point about review tools was concrete.");
    let second = ruling(&[bob, ada], bob, "B answered every claim.");
    r.record(&judge_turn(5, 1, first.clone())).unwrap();
    let mut last = judge_turn(6, 2, second.clone());
    last.verdict = Some(Box::new(combine("judge-ep · judge-model".into(), vec![first, second])));
    r.record(&last).unwrap();
}

#[test]
fn arena_turns_are_told_apart_and_the_verdict_is_a_block_of_its_own() {
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(Templates::builtin()));
    record_debate(&mut r, "Ada", "Bob");

    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(r.dir().join("0002-turn.json")).unwrap()).unwrap();
    assert_eq!(
        (j["participant_name"].as_str(), j["lane"].as_u64()),
        (Some("Bob"), Some(1))
    );
    assert_eq!(j["mode"], "arena");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(r.dir().join("0006-turn.json")).unwrap()).unwrap();
    assert_eq!(j["ruling"]["winner"], "Bob");
    assert_eq!(j["verdict"]["winner"], "Bob");
    assert_eq!(j["verdict"]["agree"], true);
    assert!(j.get("lane").is_none(), "the judge has one lane: {j}");

    let html = read(&r, "conversation.html");
    // Each seat its own colour class, with name, model and endpoint in the header.
    assert_eq!(html.matches("class=\"msg assistant seat-0\"").count(), 2, "{html}");
    assert_eq!(html.matches("class=\"msg assistant seat-1\"").count(), 2);
    assert!(
        html.contains("Ada <span class=\"model\">ep-0 · model-0</span>"),
        "{html}"
    );
    assert!(html.contains("Bob <span class=\"model\">ep-1 · model-1</span>"));
    // The previous answer is the next speaker's input: shown once, not twice.
    assert_eq!(html.matches("Spaces render the same everywhere.").count(), 1, "{html}");
    assert_eq!(
        html.matches("Tabs or spaces?").count(),
        1 + 2,
        "the opening, <title> and <h1>"
    );
    // Judge turns: what it was asked (folded), its ruling with scores.
    assert_eq!(html.matches("What the judge was asked").count(), 2);
    assert!(html.contains("Participants as A = Ada, B = Bob"), "{html}");
    assert!(html.contains("Participants as A = Bob, B = Ada"));
    assert!(html.contains("Ruling: <strong>Bob</strong>"));
    // The verdict block: winner, mean scores per participant and criterion, reasons per order.
    assert!(html.contains("class=\"verdict winner\""), "{html}");
    assert!(
        html.contains("<strong>Winner: Bob</strong> — both orders agree"),
        "{html}"
    );
    assert!(html.contains("<th>clarity</th><th>logic</th><th>mean</th>"));
    assert!(
        html.contains("<tr class=\"seat-1\"><td class=\"name\">Bob</td><td>9</td><td>8</td><td>8.5</td></tr>"),
        "{html}"
    );
    assert!(html.contains("<tr class=\"seat-0\"><td class=\"name\">Ada</td><td>4.5</td><td>3.5</td><td>4</td></tr>"));
    assert!(html.contains("Order 1 (A = Ada, B = Bob): Bob"));
    assert!(html.contains("Bob&#x27;s point about review tools was concrete."));
    assert!(html.contains("Order 2 (A = Bob, B = Ada): Bob"));

    let legacy = read(&r, "gptwink_format.html");
    assert!(legacy.contains("class=\"entry seat-0\"") && legacy.contains("class=\"entry seat-1\""));
    assert!(legacy.contains("Ada (model-0 · ep-0):"), "{legacy}");
    assert!(legacy.contains("Bob (model-1 · ep-1):"));
    assert_eq!(legacy.matches("Spaces render the same everywhere.").count(), 1);
    assert!(legacy.contains("[ruling: Bob] B answered every claim."), "{legacy}");
    assert!(
        legacy.contains(
            "Verdict (judge-ep · judge-model):</div>\n<div class=\"content\">Winner: Bob — both orders agree"
        ),
        "{legacy}"
    );
    assert!(legacy.contains("Bob: clarity 9 logic 8 (mean 8.5)"), "{legacy}");
    assert!(legacy.contains("Order 2 (A = Bob, B = Ada): Bob — B answered every claim."));
}

#[test]
fn a_split_verdict_and_an_unreadable_ruling_are_shown_as_such() {
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(Templates::builtin()));
    r.record(&arena_turn(1, 0, "Ada", "Go", "A1")).unwrap();
    r.record(&arena_turn(2, 1, "Bob", "Go\n\nA1", "B1")).unwrap();
    let first = ruling(&["Ada", "Bob"], "Ada", "first is better");
    let second = ruling(&["Bob", "Ada"], "Bob", "first is better");
    r.record(&judge_turn(3, 1, first.clone())).unwrap();
    let mut last = judge_turn(4, 2, second.clone());
    last.verdict = Some(Box::new(combine("j".into(), vec![first, second])));
    r.record(&last).unwrap();
    let html = read(&r, "conversation.html");
    assert!(html.contains("class=\"verdict disagreement\""), "{html}");
    assert!(
        html.contains("<strong>No clear winner</strong> — the orders disagree (Ada first → Ada; Bob first → Bob)"),
        "{html}"
    );
    assert!(read(&r, "gptwink_format.html").contains("No clear winner — the orders disagree"));

    let mut bad = ruling(&["Ada", "Bob"], "Ada", "");
    bad.winner = None;
    bad.scores.clear();
    bad.error = Some("the judge did not answer with a JSON verdict: I like both".into());
    let mut t = judge_turn(5, 1, bad.clone());
    t.verdict = Some(Box::new(combine("j".into(), vec![bad.clone(), bad])));
    r.record(&t).unwrap();
    let html = read(&r, "conversation.html");
    assert!(html.contains("No ruling: the judge did not answer with a JSON verdict: I like both"));
    assert!(html.contains("class=\"verdict none\""));
    assert!(
        html.contains("<strong>No verdict</strong> — the judge&#x27;s answers could not be read"),
        "{html}"
    );
    assert!(read(&r, "gptwink_format.html").contains("[no ruling: the judge did not answer"));
}

#[test]
fn compare_answers_show_their_lane_and_the_prompt_once() {
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(Templates::builtin()));
    for lane in 0..3u8 {
        let mut t = turn(
            u32::from(lane) + 1,
            "Name a prime.",
            &format!("answer from lane {lane}"),
        );
        t.mode = TurnMode::Compare;
        t.lane = Some(lane);
        t.endpoint = format!("ep{lane}");
        r.record(&t).unwrap();
    }
    let html = read(&r, "conversation.html");
    assert_eq!(
        html.matches("Name a prime.").count(),
        1 + 2,
        "once, plus <title> and <h1>"
    );
    for lane in 1..=3 {
        assert!(
            html.contains(&format!("<span class=\"lane\">answer {lane}</span>")),
            "{html}"
        );
    }
    assert!(html.contains("data-lane=\"2\"") && html.contains("class=\"msg assistant seat-2\""));
    let legacy = read(&r, "gptwink_format.html");
    assert!(legacy.contains("[answer 3] smollm2:"), "{legacy}");
    assert_eq!(legacy.matches("Name a prime.").count(), 1 + 2);
    // A new prompt after them is shown again.
    let mut t = turn(4, "Another prompt.", "x");
    t.mode = TurnMode::Compare;
    t.lane = Some(0);
    r.record(&t).unwrap();
    assert!(read(&r, "conversation.html").contains("Another prompt."));
}

#[test]
fn compare_picks_are_marked_on_their_answers_in_both_files() {
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(Templates::builtin()));
    let mut turns: Vec<Turn> = (0..2u8)
        .map(|lane| {
            let mut t = turn(u32::from(lane) + 1, "Name a prime.", &format!("answer {lane}"));
            t.mode = TurnMode::Compare;
            t.lane = Some(lane);
            t
        })
        .collect();
    for t in &turns {
        r.record(t).unwrap();
    }
    assert!(!read(&r, "conversation.html").contains("badge pick"), "no pick yet");
    // The pick re-records both answers.
    turns[0].pick = Some(crate::conversation::PickMark::Rejected);
    turns[1].pick = Some(crate::conversation::PickMark::Chosen);
    for t in &turns {
        r.record(t).unwrap();
    }
    let html = read(&r, "conversation.html");
    assert!(
        html.contains("<span class=\"badge pick chosen\">✓ chosen</span>"),
        "{html}"
    );
    assert!(
        html.contains("<span class=\"badge pick rejected\">✗ not chosen</span>"),
        "{html}"
    );
    let legacy = read(&r, "gptwink_format.html");
    assert!(legacy.contains("[answer 2] smollm2: [✓ chosen]"), "{legacy}");
    assert!(legacy.contains("[answer 1] smollm2: [✗ not chosen]"), "{legacy}");
}

#[test]
fn script_in_participant_names_answers_rulings_and_verdicts_is_escaped() {
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(Templates::builtin()));
    let evil = "<script>alert(1)</script>";
    let mut t = arena_turn(1, 0, evil, "Go", &format!("I say {evil}"));
    t.model = evil.into();
    r.record(&t).unwrap();
    r.record(&arena_turn(2, 1, "Bob", "Go", "<img src=x onerror=alert(2)>"))
        .unwrap();
    let mut first = ruling(&[evil, "Bob"], evil, evil);
    first.error = None;
    let mut last = judge_turn(3, 1, first.clone());
    last.request.messages = vec![Message::system(evil), Message::user(evil)];
    last.response.text = evil.into();
    last.verdict = Some(Box::new(combine(evil.into(), vec![first])));
    r.record(&last).unwrap();
    let mut c = turn(4, evil, evil);
    c.mode = TurnMode::Compare;
    c.lane = Some(0);
    r.record(&c).unwrap();
    for f in ["conversation.html", "gptwink_format.html"] {
        let html = read(&r, f);
        assert!(!html.contains("<script"), "{f} contains a raw <script>");
        assert!(!html.contains("<img"), "{f} contains a raw <img>");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"),
            "{f} lost the text"
        );
    }
}

#[test]
fn a_ruling_in_the_second_order_keeps_seat_colours() {
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(Templates::builtin()));
    r.record(&arena_turn(1, 0, "Zed", "Go", "Z1")).unwrap();
    r.record(&arena_turn(2, 1, "Amy", "Go", "A1")).unwrap();
    // No verdict on this turn: seats come from the arena turns recorded before.
    r.record(&judge_turn(3, 2, ruling(&["Amy", "Zed"], "Amy", "r")))
        .unwrap();
    let html = read(&r, "conversation.html");
    let zed = html.find("<td class=\"name\">Zed</td>").unwrap();
    let amy = html.find("<td class=\"name\">Amy</td>").unwrap();
    assert!(zed < amy, "rows in seat order");
    assert!(
        html.contains("<tr class=\"seat-1\"><td class=\"name\">Amy</td>"),
        "{html}"
    );
}

#[test]
fn the_markdown_export_tells_an_arena_and_a_compare_like_the_html() {
    let first = ruling(&["Ada", "Bob"], "Bob", "Bob's point | was concrete.");
    let second = ruling(&["Bob", "Ada"], "Bob", "B answered every claim.");
    let mut last = judge_turn(4, 2, second.clone());
    last.verdict = Some(Box::new(combine(
        "judge-ep · judge-model".into(),
        vec![first.clone(), second],
    )));
    let mut left = turn(5, "Name a prime.", "7");
    left.mode = TurnMode::Compare;
    left.lane = Some(0);
    left.pick = Some(crate::conversation::PickMark::Chosen);
    let mut right = turn(6, "Name a prime.", "9");
    right.mode = TurnMode::Compare;
    right.lane = Some(1);
    right.pick = Some(crate::conversation::PickMark::Rejected);
    let turns = [
        arena_turn(1, 0, "Ada", "Tabs or spaces?", "Tabs, for accessibility."),
        arena_turn(2, 1, "Bob", "Tabs, for accessibility.", "Spaces render the same."),
        judge_turn(3, 1, first),
        last,
        left,
        right,
    ];
    let md = crate::records::export::to_markdown(&turns, "debate");
    // The opening once; an answer is not repeated as the next speaker's input.
    assert_eq!(md.matches("Tabs or spaces?").count(), 1, "{md}");
    assert_eq!(md.matches("Tabs, for accessibility.").count(), 1, "{md}");
    assert!(
        md.contains("## Ada (model-0 · ep-0)\n\nTabs, for accessibility."),
        "{md}"
    );
    assert!(
        md.contains("## Bob (model-1 · ep-1)\n\nSpaces render the same."),
        "{md}"
    );
    // Judge turns: what it was asked is not repeated; the ruling is.
    assert!(!md.contains("Which participant did best?"), "{md}");
    assert!(
        md.contains("**Ruling** (participants as A = Ada, B = Bob): Bob — Bob's point | was concrete."),
        "{md}"
    );
    assert!(
        md.contains("## Verdict — Winner: Bob\n\nboth orders agree (judge: judge-ep · judge-model)"),
        "{md}"
    );
    assert!(
        md.contains("| participant | clarity | logic | mean |\n|---|---|---|---|\n| Ada |"),
        "{md}"
    );
    // Compare: the prompt once, each answer with its lane and the pick.
    assert_eq!(md.matches("Name a prime.").count(), 1, "{md}");
    assert!(md.contains("## smollm2 (local) — answer 1\n\n7\n\n_✓ chosen_"), "{md}");
    assert!(
        md.contains("## smollm2 (local) — answer 2\n\n9\n\n_✗ not chosen_"),
        "{md}"
    );
}

#[test]
fn a_second_exchange_shows_its_opening_and_a_prompt_asked_again_shows_again() {
    let root = tempfile::tempdir().unwrap();
    let mut r = SessionRecorder::new(root.path(), Arc::new(Templates::builtin()));
    // One exchange without a judge, then a new one straight after it.
    r.record(&arena_turn(1, 0, "Ada", "Tabs or spaces?", "Tabs.")).unwrap();
    r.record(&arena_turn(2, 1, "Bob", "Tabs or spaces?\n\nTabs.", "Spaces."))
        .unwrap();
    r.record(&arena_turn(3, 0, "Ada", "Vim or Emacs?", "Vim.")).unwrap();
    // A failed answer is passed on as "(no answer)".
    let mut silent = arena_turn(4, 1, "Bob", "Vim or Emacs?\n\nVim.", "");
    silent.status = crate::conversation::TurnStatus::Failed;
    r.record(&silent).unwrap();
    r.record(&arena_turn(5, 0, "Ada", "(no answer)", "Still Vim.")).unwrap();
    // The same compare prompt twice (the first round skipped): shown twice.
    for (id, lane) in [(6, 0u8), (7, 1), (8, 0), (9, 1)] {
        let mut t = turn(id, "Name a prime.", &format!("answer {id}"));
        t.mode = TurnMode::Compare;
        t.lane = Some(lane);
        r.record(&t).unwrap();
    }
    let turns: Vec<Turn> = (1..=9)
        .map(|i| {
            let p = r.dir().join(format!("{i:04}-turn.json"));
            serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
        })
        .collect();
    let md = crate::records::export::to_markdown(&turns, "two exchanges");
    // The HTML also has the first prompt as its <title> and <h1>.
    for (text, titles) in [(read(&r, "conversation.html"), 2), (md, 0)] {
        assert_eq!(text.matches("Tabs or spaces?").count(), 1 + titles, "{text}");
        assert_eq!(
            text.matches("Vim or Emacs?").count(),
            1,
            "the new opening is shown: {text}"
        );
        assert_eq!(text.matches("(no answer)").count(), 0, "{text}");
        assert_eq!(text.matches("Name a prime.").count(), 2, "asked twice: {text}");
    }
}
