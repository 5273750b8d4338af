//! The arena: each participant's own perspective, rotation, pause, resume,
//! stop, failures, and the judge at the end.

use std::time::Duration;

use super::*;
use crate::orchestration::event_channel;
use crate::protocols::StreamEvent;
use crate::testkit::{Scripted, ScriptedAdapter};

fn names(n: usize) -> Vec<String> {
    ["Ada", "Bob", "Cy"].iter().take(n).map(|s| s.to_string()).collect()
}

fn said(speaker: usize, text: &str) -> Utterance {
    Utterance {
        speaker,
        text: text.into(),
        cut_off: false,
    }
}

fn roles(m: &[Message]) -> Vec<(Role, String)> {
    m.iter().skip(1).map(|m| (m.role, m.content.clone())).collect()
}

#[test]
fn two_participants_each_see_their_own_turns_as_assistant() {
    let n = names(2);
    let spoken = [said(0, "A1"), said(1, "B1"), said(0, "A2")];
    let ada = perspective(&n, Some("Argue for tabs."), 0, "Tabs?", &spoken);
    assert_eq!(ada[0].role, Role::System);
    assert!(
        ada[0]
            .content
            .starts_with("Argue for tabs.\n\nYou are Ada, in a conversation with Bob.")
    );
    assert_eq!(
        roles(&ada),
        [
            (Role::User, "Tabs?".into()),
            (Role::Assistant, "A1".into()),
            (Role::User, "B1".into()),
            (Role::Assistant, "A2".into())
        ]
    );
    let bob = perspective(&n, None, 1, "Tabs?", &spoken);
    assert!(bob[0].content.starts_with("You are Bob, in a conversation with Ada."));
    // The opening and Ada's first words merge: user and assistant alternate.
    assert_eq!(
        roles(&bob),
        [
            (Role::User, "Tabs?\n\nA1".into()),
            (Role::Assistant, "B1".into()),
            (Role::User, "A2".into())
        ]
    );
}

#[test]
fn with_three_the_others_are_named_and_merged() {
    let n = names(3);
    let spoken = [said(0, "A1"), said(1, "B1"), said(2, "C1"), said(0, "")];
    let ada = perspective(&n, None, 0, "Go", &spoken);
    assert!(ada[0].content.contains("with Bob, Cy"));
    assert_eq!(
        roles(&ada),
        [
            (Role::User, "Go".into()),
            (Role::Assistant, "A1".into()),
            (Role::User, "Bob: B1\n\nCy: C1".into()),
            (Role::Assistant, "(no answer)".into())
        ]
    );
    let cy = perspective(&n, None, 2, "Go", &spoken);
    assert_eq!(
        roles(&cy),
        [
            (Role::User, "Go\n\nAda: A1\n\nBob: B1".into()),
            (Role::Assistant, "C1".into()),
            (Role::User, "Ada: (no answer)".into())
        ]
    );
}

fn seat(name: &str, adapter: Arc<ScriptedAdapter>) -> Seat {
    Seat {
        name: name.into(),
        endpoint: format!("ep-{name}"),
        model: format!("model-{name}"),
        system: None,
        params: Params::default(),
        adapter,
    }
}

fn setup(a: Arc<ScriptedAdapter>, b: Arc<ScriptedAdapter>, turns: u32) -> ArenaSetup {
    ArenaSetup {
        arena: "debate".into(),
        seats: vec![seat("Ada", a), seat("Bob", b)],
        opening: "Tabs or spaces?".into(),
        max_turns: turns,
        first_turn_id: 3,
        judge: None,
        spoken: vec![],
    }
}

async fn collect(mut rx: crate::orchestration::EventSource) -> Vec<OrchestratorEvent> {
    let mut v = vec![];
    while let Some(e) = rx.recv().await {
        v.push(e);
    }
    v
}

#[tokio::test(start_paused = true)]
async fn turns_alternate_up_to_max_turns_each_with_its_own_model() {
    let a = ScriptedAdapter::new(vec![
        ScriptedAdapter::text_script(&["A one"]),
        ScriptedAdapter::text_script(&["A two"]),
    ]);
    let b = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["B one"])]);
    let (tx, rx) = event_channel();
    let events = tokio::spawn(collect(rx));
    let out = run_arena(setup(a.clone(), b.clone(), 3), &tx, ArenaControl::new()).await;
    drop(tx);
    assert_eq!(out.end, ArenaEnd::Completed);
    let who: Vec<(u32, &str, &str, TurnMode)> = out
        .turns
        .iter()
        .map(|t| {
            (
                t.turn_id,
                t.participant_name.as_deref().unwrap(),
                t.model.as_str(),
                t.mode,
            )
        })
        .collect();
    assert_eq!(
        who,
        [
            (3, "Ada", "model-Ada", TurnMode::Arena),
            (4, "Bob", "model-Bob", TurnMode::Arena),
            (5, "Ada", "model-Ada", TurnMode::Arena)
        ]
    );
    assert_eq!(out.spoken, [said(0, "A one"), said(1, "B one"), said(0, "A two")]);
    // What each model was sent: its own perspective.
    let ra = a.requests();
    assert_eq!(
        roles(&ra[1].messages).last().unwrap(),
        &(Role::User, "B one".to_string())
    );
    assert_eq!(ra[1].messages[2], Message::assistant("A one"));
    assert_eq!(
        roles(&b.requests()[0].messages),
        [(Role::User, "Tabs or spaces?\n\nA one".to_string())]
    );
    let events = events.await.unwrap();
    let started: Vec<u8> = events
        .iter()
        .filter_map(|e| match e {
            OrchestratorEvent::TurnStarted { turn, .. } => Some(turn.lane),
            _ => None,
        })
        .collect();
    assert_eq!(started, [0, 1, 0], "each seat streams in its own lane");
    assert!(matches!(
        events.last(),
        Some(OrchestratorEvent::Arena(ArenaEvent::Finished))
    ));
    assert!(matches!(
        events.iter().rev().nth(1),
        Some(OrchestratorEvent::Arena(ArenaEvent::Ended {
            end: ArenaEnd::Completed,
            turns_done: 3
        }))
    ));
}

#[tokio::test(start_paused = true)]
async fn pause_takes_effect_between_turns_and_resume_continues() {
    let slow = |t: &str| {
        vec![
            Scripted::Pause(Duration::from_secs(2)),
            Scripted::Event(StreamEvent::Text(t.into())),
            Scripted::Event(StreamEvent::Finished("stop".into())),
        ]
    };
    let a = ScriptedAdapter::new(vec![slow("A one"), slow("A two")]);
    let b = ScriptedAdapter::new(vec![slow("B one")]);
    let (tx, mut rx) = event_channel();
    let control = ArenaControl::new();
    let c = control.clone();
    let run = tokio::spawn(async move { run_arena(setup(a, b, 3), &tx, c).await });
    // Pause while Ada's first turn streams: it finishes, then nothing starts.
    tokio::time::sleep(Duration::from_secs(1)).await;
    control.pause();
    let mut seen = vec![];
    loop {
        let e = rx.recv().await.unwrap();
        let paused = matches!(e, OrchestratorEvent::Arena(ArenaEvent::Paused { turns_done: 1 }));
        seen.push(e);
        if paused {
            break;
        }
    }
    assert!(seen.iter().any(
        |e| matches!(e, OrchestratorEvent::TurnFinished { outcome, .. } if outcome.turn().response.text == "A one")
    ));
    // A long pause: still nothing.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(rx.try_recv().is_err());
    control.resume();
    let out = run.await.unwrap();
    assert_eq!(out.end, ArenaEnd::Completed);
    assert_eq!(out.spoken.len(), 3);
    let mut rest = vec![];
    while let Ok(e) = rx.try_recv() {
        rest.push(e);
    }
    assert!(matches!(rest[0], OrchestratorEvent::Arena(ArenaEvent::Resumed)));
}

#[tokio::test(start_paused = true)]
async fn stop_cancels_the_stream_keeps_the_partial_turn_and_the_judge_still_rules() {
    let a = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["A one"])]);
    let b = ScriptedAdapter::new(vec![vec![
        Scripted::Event(StreamEvent::Text("B starts".into())),
        Scripted::Pause(Duration::from_secs(60)),
        Scripted::Event(StreamEvent::Text(" never".into())),
    ]]);
    let judge = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["{\"winner\":\"A\"}"])]);
    let mut s = setup(a, b, 6);
    s.judge = Some(JudgeSetup {
        endpoint: "j".into(),
        model: "jm".into(),
        adapter: judge.clone(),
        prompt: None,
        criteria: vec!["logic".into()],
        params: Params::default(),
    });
    let (tx, rx) = event_channel();
    let events = tokio::spawn(collect(rx));
    let control = ArenaControl::new();
    let c = control.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        c.stop();
    });
    let out = run_arena(s, &tx, control).await;
    drop(tx);
    assert_eq!(out.end, ArenaEnd::Stopped);
    assert_eq!(out.turns[1].status, crate::conversation::TurnStatus::Cancelled);
    assert_eq!(out.turns[1].response.text, "B starts");
    assert_eq!(
        out.spoken[1],
        Utterance {
            speaker: 1,
            text: "B starts".into(),
            cut_off: true
        }
    );
    // The judge read the cut-off words and ruled in both orders (A first → Ada; B… the
    // script repeats "A", which is Bob when Bob is presented first).
    assert!(
        judge.requests()[0].messages[1]
            .content
            .contains("[B]: B starts [cut off]")
    );
    let v = out.verdict.as_ref().unwrap();
    assert_eq!(v.agree, Some(false));
    assert_eq!(out.turns.len(), 4);
    assert_eq!(out.turns[3].mode, TurnMode::Judge);
    let events = events.await.unwrap();
    let ended = events
        .iter()
        .position(|e| {
            matches!(
                e,
                OrchestratorEvent::Arena(ArenaEvent::Ended {
                    end: ArenaEnd::Stopped,
                    turns_done: 2
                })
            )
        })
        .unwrap();
    let verdict = events
        .iter()
        .position(|e| matches!(e, OrchestratorEvent::Arena(ArenaEvent::Verdict(_))))
        .unwrap();
    assert!(ended < verdict);
}

#[tokio::test(start_paused = true)]
async fn stop_while_paused_ends_without_another_turn() {
    let a = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["A one"])]);
    let b = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["B one"])]);
    let control = ArenaControl::new();
    control.pause();
    let c = control.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(10)).await;
        c.stop();
    });
    let (tx, _rx) = event_channel();
    let out = run_arena(setup(a.clone(), b, 4), &tx, control).await;
    assert_eq!(out.end, ArenaEnd::Stopped);
    assert!(out.turns.is_empty());
    assert!(a.requests().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_failing_participant_ends_the_arena_with_its_name() {
    let a = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["A one"])]);
    let b = ScriptedAdapter::new(vec![vec![Scripted::Error(crate::protocols::ProtocolError::Connect {
        url: "http://b".into(),
        detail: "refused".into(),
    })]]);
    let judge = ScriptedAdapter::new(vec![]);
    let mut s = setup(a, b, 4);
    s.judge = Some(JudgeSetup {
        endpoint: "j".into(),
        model: "jm".into(),
        adapter: judge.clone(),
        prompt: None,
        criteria: vec!["logic".into()],
        params: Params::default(),
    });
    let (tx, _rx) = event_channel();
    let out = run_arena(s, &tx, ArenaControl::new()).await;
    match &out.end {
        ArenaEnd::Failed { participant, error } => {
            assert_eq!(participant, "Bob");
            assert!(error.contains("cannot connect"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert!(judge.requests().is_empty(), "Bob never spoke: nothing to judge");
    assert!(out.verdict.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_continued_arena_carries_on_the_rotation() {
    let a = ScriptedAdapter::new(vec![]);
    let b = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["B two"])]);
    let mut s = setup(a.clone(), b, 1);
    s.spoken = vec![said(0, "A1"), said(1, "B1"), said(0, "A2")];
    let (tx, _rx) = event_channel();
    let out = run_arena(s, &tx, ArenaControl::new()).await;
    assert_eq!(out.turns[0].participant_name.as_deref(), Some("Bob"));
    assert_eq!(out.spoken.len(), 4);
    assert!(a.requests().is_empty());
}
