//! Arena and compare in the TUI: the labelled exchange with its own stats,
//! pause / resume / stop, the judge's verdict, side-by-side compare panes,
//! the pick and what it does to the conversation and the records.

use std::time::Duration;

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

use super::mode::{Activity, Overlay, UiMode};
use super::testing::{Driver, frame, test_app};
use crate::conversation::{PickMark, Role, TurnMode, TurnStatus};
use crate::protocols::StreamEvent;
use crate::testkit::{Scripted, ScriptedAdapter};

fn key(c: KeyCode) -> Event {
    Event::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn said(words: &[&str]) -> Vec<Scripted> {
    let mut v = vec![Scripted::Pause(Duration::from_millis(400))];
    for w in words {
        v.push(Scripted::Pause(Duration::from_millis(100)));
        v.push(Scripted::Event(StreamEvent::Text((*w).into())));
    }
    v.push(Scripted::Event(StreamEvent::Finished("stop".into())));
    v
}

const VERDICT_A: &str = "{\"winner\":\"A\",\"scores\":{\"A\":{\"logic\":8,\"style\":7},\"B\":{\"logic\":5,\"style\":6}},\"reasons\":\"A gave reasons.\"}";
const VERDICT_B: &str = "{\"winner\":\"B\",\"scores\":{\"A\":{\"logic\":6,\"style\":6},\"B\":{\"logic\":8,\"style\":8}},\"reasons\":\"B was clearer.\"}";

fn screen(app: &mut super::app::App, w: u16, h: u16) -> String {
    format!("{}", frame(app, w, h).backend())
}

#[tokio::test(start_paused = true)]
async fn an_arena_runs_labelled_turns_then_the_judge_rules() {
    let mut app = test_app();
    let local = ScriptedAdapter::new(vec![
        said(&["Tabs ", "are ", "semantic."]),
        said(&["Width ", "is ", "a ", "preference."]),
        said(&[VERDICT_A]),
        said(&[VERDICT_B]),
    ]);
    let other = ScriptedAdapter::new(vec![
        said(&["Spaces ", "look ", "the ", "same."]),
        said(&["Consistency ", "wins."]),
    ]);
    app.set_adapter("local", local.clone());
    app.set_adapter("other", other.clone());
    app.submit("/arena debate".into());
    assert_eq!(app.modes.mode(), UiMode::Arena);
    assert!(app.toolbar_target().contains("debate · type the opening"));
    app.submit("Tabs or spaces?".into());
    let mut d = Driver::new();
    // Mid-way: Con is streaming its first turn.
    d.until(&mut app, |a| {
        a.arena.as_ref().is_some_and(|s| s.started == 2) && a.modes.activity() == Activity::Streaming
    })
    .await;
    assert_eq!(app.toolbar_target(), "debate · turn 2/4");
    insta::assert_snapshot!("arena_mid_exchange", screen(&mut app, 100, 24));
    d.until(&mut app, |a| !a.is_busy()).await;
    assert_eq!(app.modes.activity(), Activity::Idle);
    let s = app.arena.as_ref().unwrap();
    assert_eq!(s.spoken.len(), 4);
    let v = s.verdict.as_ref().unwrap();
    assert_eq!(v.winner.as_deref(), Some("Pro"), "A first = Pro, B second = Pro");
    assert_eq!(v.agree, Some(true));
    // Arena turns are not the chat conversation.
    assert!(app.conversation.messages.is_empty());
    let who: Vec<(Option<&str>, TurnMode)> = d
        .records
        .iter()
        .map(|t| (t.participant_name.as_deref(), t.mode))
        .collect();
    assert_eq!(
        who,
        [
            (Some("Pro"), TurnMode::Arena),
            (Some("Con"), TurnMode::Arena),
            (Some("Pro"), TurnMode::Arena),
            (Some("Con"), TurnMode::Arena),
            (Some("Judge · order 1"), TurnMode::Judge),
            (Some("Judge · order 2"), TurnMode::Judge)
        ]
    );
    assert_eq!(
        d.records.iter().map(|t| t.turn_id).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6]
    );
    assert!(d.records[5].verdict.is_some());
    // Con saw Pro's words as the user's, after the opening.
    let con_first = &other.requests()[0].messages;
    assert_eq!(con_first[1].role, Role::User);
    assert_eq!(con_first[1].content, "Tabs or spaces?\n\nTabs are semantic.");
    assert_eq!(app.toolbar_target(), "debate · over");
    insta::assert_snapshot!("arena_verdict", screen(&mut app, 100, 30));
}

#[tokio::test(start_paused = true)]
async fn pause_takes_effect_between_turns_and_resume_carries_on() {
    let mut app = test_app();
    app.set_adapter(
        "local",
        ScriptedAdapter::new(vec![said(&["one ", "two"]), said(&["three"])]),
    );
    app.set_adapter("other", ScriptedAdapter::new(vec![said(&["uno ", "dos"])]));
    app.submit("/arena open 3".into()); // configured opening: starts at once
    let mut d = Driver::new();
    d.until(&mut app, |a| a.modes.activity() == Activity::Streaming).await;
    app.submit("/pause".into());
    assert!(app.toolbar_target().ends_with("pausing…"), "{}", app.toolbar_target());
    d.until(&mut app, |a| a.modes.activity() == Activity::Paused).await;
    assert_eq!(app.arena.as_ref().unwrap().spoken.len(), 1, "Ann's turn finished first");
    assert!(!app.modes.can_submit());
    insta::assert_snapshot!("arena_paused", screen(&mut app, 90, 16));
    // Typing while paused keeps the text and explains.
    app.submit("hello?".into());
    assert_eq!(app.input.text(), "hello?");
    app.input.clear();
    app.submit("/resume".into());
    d.until(&mut app, |a| !a.is_busy()).await;
    let s = app.arena.as_ref().unwrap();
    assert_eq!(s.spoken.len(), 3);
    assert!(s.verdict.is_none(), "no judge configured");
    let screen = screen(&mut app, 90, 30);
    assert!(screen.contains("/judge ENDPOINT asks a judge"), "{screen}");
}

#[tokio::test(start_paused = true)]
async fn esc_stops_the_arena_mid_stream_and_the_judge_still_rules() {
    let mut app = test_app();
    let slow = vec![
        Scripted::Event(StreamEvent::Text("Spaces are".into())),
        Scripted::Pause(Duration::from_secs(120)),
        Scripted::Event(StreamEvent::Text(" never said".into())),
    ];
    app.set_adapter(
        "local",
        ScriptedAdapter::new(vec![said(&["Tabs."]), said(&[VERDICT_A]), said(&[VERDICT_A])]),
    );
    app.set_adapter("other", ScriptedAdapter::new(vec![slow]));
    app.submit("/arena debate".into());
    app.submit("Tabs or spaces?".into());
    let mut d = Driver::new();
    d.until(&mut app, |a| {
        a.arena.as_ref().is_some_and(|s| s.started == 2) && a.modes.activity() == Activity::Streaming
    })
    .await;
    app.on_terminal(key(KeyCode::Esc));
    d.until(&mut app, |a| !a.is_busy()).await;
    let con = d
        .records
        .iter()
        .find(|t| t.participant_name.as_deref() == Some("Con"))
        .unwrap();
    assert_eq!(con.status, TurnStatus::Cancelled);
    assert_eq!(con.response.text, "Spaces are");
    let s = app.arena.as_ref().unwrap();
    assert!(s.spoken[1].cut_off);
    // Both orders named A: Pro first, then Con — the orders disagree.
    assert_eq!(s.verdict.as_ref().unwrap().agree, Some(false));
    let shown = screen(&mut app, 100, 36);
    assert!(shown.contains("cancelled — partial answer kept"), "{shown}");
    assert!(shown.contains("The arena was stopped after 2 turns"), "{shown}");
    assert!(shown.contains("no clear winner: the orders disagree"), "{shown}");
}

#[tokio::test(start_paused = true)]
async fn judge_on_demand_names_its_endpoint() {
    let mut app = test_app();
    app.set_adapter("local", ScriptedAdapter::new(vec![said(&["wet"])]));
    app.set_adapter(
        "other",
        ScriptedAdapter::new(vec![said(&["dry"]), said(&[VERDICT_B]), said(&[VERDICT_A])]),
    );
    app.submit("/arena open".into());
    let mut d = Driver::new();
    d.until(&mut app, |a| !a.is_busy()).await;
    app.submit("/judge".into());
    let flash = app.flash.as_ref().unwrap().0.clone();
    assert!(flash.contains("no judge — /judge ENDPOINT"), "{flash}");
    app.submit("/judge nowhere".into());
    assert!(app.flash.as_ref().unwrap().0.contains("unknown endpoint `nowhere`"));
    app.submit("/judge other/judge-model".into());
    d.until(&mut app, |a| !a.is_busy()).await;
    let judge = d
        .records
        .iter()
        .filter(|t| t.mode == TurnMode::Judge)
        .collect::<Vec<_>>();
    assert_eq!(judge.len(), 2);
    assert_eq!(
        (judge[0].endpoint.as_str(), judge[0].model.as_str()),
        ("other", "judge-model")
    );
    let v = app.arena.as_ref().unwrap().verdict.as_ref().unwrap();
    assert_eq!(v.winner.as_deref(), Some("Ben"), "B first = Ben; A second = Ben");
}

#[tokio::test(start_paused = true)]
async fn compare_streams_side_by_side_and_the_pick_continues_the_conversation() {
    let mut app = test_app();
    app.set_adapter(
        "local",
        ScriptedAdapter::new(vec![said(&["Left ", "answer ", "here."])]),
    );
    app.set_adapter(
        "other",
        ScriptedAdapter::new(vec![said(&["The ", "right ", "one ", "is ", "longer."])]),
    );
    app.submit("/compare local other".into());
    assert_eq!(app.modes.mode(), UiMode::Compare);
    app.submit("Which is better?".into());
    let mut d = Driver::new();
    // Both panes mid-stream, each with its own figures.
    d.until(&mut app, |a| {
        a.transcript.plain_text().contains("Left answer") && a.transcript.plain_text().contains("The right")
    })
    .await;
    assert_eq!(app.modes.activity(), Activity::Streaming);
    let mid = screen(&mut app, 100, 14);
    assert_eq!(mid.matches("TTFT").count(), 2, "{mid}");
    insta::assert_snapshot!("compare_streaming", mid);
    d.until(&mut app, |a| a.modes.overlay() == Some(&Overlay::ComparePick))
        .await;
    assert_eq!(d.records.len(), 2, "both answers are on disk before the pick");
    assert!(
        d.records
            .iter()
            .all(|t| t.pick.is_none() && t.mode == TurnMode::Compare)
    );
    insta::assert_snapshot!("compare_pick", screen(&mut app, 100, 16));
    // Typing is refused until the pick.
    app.on_terminal(key(KeyCode::Char('x')));
    assert!(app.input.is_empty());
    app.on_terminal(key(KeyCode::Char('2')));
    d.effects(&mut app);
    assert_eq!(app.modes.overlay(), None);
    let msgs = &app.conversation.messages;
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0].content, "Which is better?");
    assert_eq!(msgs[1].content, "The right one is longer.");
    let picks: Vec<(String, Option<PickMark>)> = d.records[2..].iter().map(|t| (t.endpoint.clone(), t.pick)).collect();
    assert_eq!(
        picks,
        [
            ("local".into(), Some(PickMark::Rejected)),
            ("other".into(), Some(PickMark::Chosen))
        ]
    );
    insta::assert_snapshot!("compare_picked", screen(&mut app, 100, 16));
}

#[tokio::test(start_paused = true)]
async fn compare_stacks_on_narrow_terminals_and_both_bad_continues_nothing() {
    let mut app = test_app();
    app.set_adapter("local", ScriptedAdapter::new(vec![said(&["A."])]));
    app.set_adapter("other", ScriptedAdapter::new(vec![said(&["B."])]));
    app.submit("/compare local other/big-model".into());
    app.submit("Q?".into());
    let mut d = Driver::new();
    d.until(&mut app, |a| a.modes.overlay() == Some(&Overlay::ComparePick))
        .await;
    insta::assert_snapshot!("compare_narrow", screen(&mut app, 50, 16));
    app.on_terminal(key(KeyCode::Char('b')));
    d.effects(&mut app);
    assert!(app.conversation.messages.is_empty());
    assert!(d.records[2..].iter().all(|t| t.pick == Some(PickMark::BothBad)));
    assert_eq!(d.records[3].model, "big-model");
    // The next prompt goes out again to both.
    app.submit("Q again?".into());
    assert!(app.is_busy());
}

#[tokio::test(start_paused = true)]
async fn arena_and_compare_commands_explain_mistakes() {
    let mut app = test_app();
    let flash = |app: &super::app::App| app.flash.as_ref().map(|f| f.0.clone()).unwrap_or_default();
    app.submit("/arena debat".into());
    assert!(
        flash(&app).contains("unknown arena `debat` — did you mean `debate`?"),
        "{}",
        flash(&app)
    );
    app.submit("/arena debate many".into());
    assert!(flash(&app).contains("not a number of turns"), "{}", flash(&app));
    app.submit("/pause".into());
    assert!(flash(&app).contains("no arena is running"));
    app.submit("/compare local".into());
    assert!(flash(&app).contains("name two or more endpoints"));
    app.submit("/compare local nowhere".into());
    assert!(flash(&app).contains("unknown endpoint `nowhere`"));
    assert_eq!(app.modes.mode(), UiMode::Chat);
    app.submit("/compare local other".into());
    app.submit("/compare off".into());
    assert_eq!(app.modes.mode(), UiMode::Chat);
}
