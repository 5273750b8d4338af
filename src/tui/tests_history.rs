//! History in the TUI against a real SQLite history: /search opens the hit
//! in a picker, choosing it resumes the session (conversation, endpoint,
//! model, system prompt, transcript, the same folder, the next turn id),
//! and compare picks become votes.

use std::path::Path;

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

use super::app::{Effect, HistoryRequest, answer_history};
use super::mode::{Overlay, PickerKind};
use super::testing::{Driver, frame, test_app};
use crate::conversation::{Message, Params, Role, Turn, TurnMode, TurnRequest, TurnResponse, TurnStatus};
use crate::records::writer::SessionStart;
use crate::stats::RequestStats;
use crate::store::{SessionMeta, Store, VoteChoice};

fn key(c: KeyCode) -> Event {
    Event::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn turn(id: u32, endpoint: &str, model: &str, messages: Vec<Message>, answer: &str) -> Turn {
    Turn {
        turn_id: id,
        started_at: format!("2026-11-21T10:0{id}:00.000Z"),
        endpoint: endpoint.into(),
        model: model.into(),
        participant_name: None,
        lane: None,
        mode: TurnMode::Chat,
        status: TurnStatus::Completed,
        request: TurnRequest {
            messages,
            params: Params {
                temperature: Some(0.3),
                max_tokens: Some(200),
                ..Params::default()
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
            ttft_ms: Some(100),
            duration_ms: 900,
            input_tokens: 30,
            output_tokens: 12,
            usage_reported: true,
            tokens_per_sec: Some(13.3),
            finish_reason: Some("stop".into()),
            retries: 0,
        },
        tool_runs: vec![],
        ruling: None,
        verdict: None,
        pick: None,
    }
}

/// A history with one two-turn session (on endpoint `other`) and its folder.
fn history(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("history.db");
    let folder = dir.join("sessions/20261121-100000-abc123");
    std::fs::create_dir_all(&folder).unwrap();
    let mut s = Store::open(&db).unwrap();
    s.upsert_session(&SessionMeta {
        id: "20261121-100000-abc123".into(),
        started_at: "2026-11-21T10:00:00.000Z".into(),
        title: None,
        endpoint: "other".into(),
        model: "other-model".into(),
        system: Some("Be terse.".into()),
        folder: Some(folder),
        mode: TurnMode::Chat,
    })
    .unwrap();
    let mut convo = vec![Message::system("Be terse."), Message::user("What is WAL in SQLite?")];
    let t1 = turn(
        1,
        "other",
        "other-model",
        convo.clone(),
        "A write-ahead log: readers never block the writer.",
    );
    s.upsert_turn("20261121-100000-abc123", &t1).unwrap();
    convo.push(t1.assistant_message());
    convo.push(Message::user("And FTS5?"));
    let t2 = turn(2, "other", "other-model", convo, "Full-text search with bm25 ranking.");
    s.upsert_turn("20261121-100000-abc123", &t2).unwrap();
    db
}

#[tokio::test(start_paused = true)]
async fn search_picks_a_hit_and_resuming_restores_the_conversation() {
    let tmp = tempfile::tempdir().unwrap();
    let db = history(tmp.path());
    let mut app = test_app();
    app.history_on = true;
    app.submit("/search bm25".into());
    let Some(Effect::History(req)) = app.take_effects().pop() else {
        panic!("no history request")
    };
    assert_eq!(req, HistoryRequest::Search("bm25".into()));
    app.on_history(answer_history(&db, req));
    assert_eq!(app.modes.overlay(), Some(&Overlay::Picker(PickerKind::Session)));
    let shown = format!("{}", frame(&mut app, 100, 14).backend());
    assert!(shown.contains("20261121-100000-abc123  #2 other-model"), "{shown}");
    assert!(shown.contains("«bm25»"), "{shown}");
    app.on_terminal(key(KeyCode::Enter));
    let Some(Effect::History(req)) = app.take_effects().pop() else {
        panic!("no resume request")
    };
    assert_eq!(
        req,
        HistoryRequest::Resume {
            id: "20261121-100000-abc123".into(),
            focus: Some(2)
        }
    );
    app.on_history(answer_history(&db, req));
    // The conversation, settings and session carry on.
    assert_eq!(app.endpoint, "other");
    assert_eq!(app.model, "other-model");
    assert_eq!(app.conversation.system.as_deref(), Some("Be terse."));
    let roles: Vec<Role> = app.conversation.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User, Role::Assistant]);
    assert_eq!(app.params.temperature, Some(0.3));
    assert_eq!(app.session_name(), "20261121-100000-abc123");
    let effects = app.take_effects();
    assert!(
        effects.iter().any(
            |e| matches!(e, Effect::StartSession(SessionStart::Reopen(p)) if p.ends_with("20261121-100000-abc123"))
        ),
        "{effects:?}"
    );
    insta::assert_snapshot!("resumed_session", format!("{}", frame(&mut app, 90, 20).backend()));
    // The next prompt continues: turn 3, with the whole history in the request.
    let mut d = Driver::new();
    app.set_adapter(
        "other",
        crate::testkit::ScriptedAdapter::new(vec![crate::testkit::ScriptedAdapter::text_script(&["Yes."])]),
    );
    app.submit("Both in one file?".into());
    d.until(&mut app, |a| !a.is_busy()).await;
    let last = d.records.last().unwrap();
    assert_eq!(last.turn_id, 3);
    assert_eq!(last.request.messages.len(), 6, "system, 2 exchanges, the new prompt");
}

#[tokio::test(start_paused = true)]
async fn resume_by_prefix_and_mistakes_are_clear() {
    let tmp = tempfile::tempdir().unwrap();
    let db = history(tmp.path());
    let mut app = test_app();
    app.history_on = true;
    app.on_history(answer_history(
        &db,
        HistoryRequest::Resume {
            id: "abc1".into(),
            focus: None,
        },
    ));
    assert_eq!(app.session_name(), "20261121-100000-abc123");
    app.on_history(answer_history(
        &db,
        HistoryRequest::Resume {
            id: "zzz".into(),
            focus: None,
        },
    ));
    let flash = app.flash.as_ref().unwrap().0.clone();
    assert!(flash.contains("zzz"), "{flash}");
    app.on_history(answer_history(&db, HistoryRequest::Search("nothing-like-this".into())));
    assert!(app.flash.as_ref().unwrap().0.contains("nothing in the history matches"));
    // /history lists the session.
    app.on_history(answer_history(&db, HistoryRequest::Recent));
    let shown = format!("{}", frame(&mut app, 100, 12).backend());
    assert!(
        shown.contains("20261121-100000-abc123  2 turns · other-model"),
        "{shown}"
    );
    // History off: a clear line, no request.
    let mut off = test_app();
    off.submit("/history".into());
    assert!(off.take_effects().is_empty());
    assert!(off.flash.as_ref().unwrap().0.contains("history is off"));
    // A damaged file is reported, not a panic.
    std::fs::write(tmp.path().join("bad.db"), b"not a database at all, just text").unwrap();
    app.on_history(answer_history(&tmp.path().join("bad.db"), HistoryRequest::Recent));
    let flash = app.flash.as_ref().unwrap().0.clone();
    assert!(flash.contains("bad.db"), "{flash}");
}

#[tokio::test(start_paused = true)]
async fn a_compare_pick_becomes_a_vote() {
    let mut app = test_app();
    app.set_adapter(
        "local",
        crate::testkit::ScriptedAdapter::new(vec![crate::testkit::ScriptedAdapter::text_script(&["L"])]),
    );
    app.set_adapter(
        "other",
        crate::testkit::ScriptedAdapter::new(vec![crate::testkit::ScriptedAdapter::text_script(&["R"])]),
    );
    app.submit("/compare local other".into());
    app.submit("Q".into());
    let mut d = Driver::new();
    d.until(&mut app, |a| a.modes.overlay() == Some(&Overlay::ComparePick))
        .await;
    app.on_terminal(key(KeyCode::Left));
    let votes: Vec<_> = app
        .take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::Vote(v) => Some(*v),
            _ => None,
        })
        .collect();
    assert_eq!(votes.len(), 1);
    let v = &votes[0];
    assert_eq!(v.choice, VoteChoice::Left);
    assert_eq!(v.voter, "user");
    assert_eq!((v.left.model.as_str(), v.left.answer.as_str()), ("smollm2", "L"));
    assert_eq!((v.right.model.as_str(), v.right.answer.as_str()), ("other-model", "R"));
    assert_eq!(v.prompt.last().unwrap().content, "Q");
    assert_eq!(v.session_id.as_deref(), Some(app.session_name()));
}
