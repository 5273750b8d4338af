//! The judge: prompts in both orders, lenient reading of rulings, combining.

use super::*;
use crate::conversation::Role;
use crate::orchestration::arena::Utterance;
use crate::orchestration::event_channel;
use crate::protocols::StreamEvent;
use crate::testkit::{Scripted, ScriptedAdapter};

fn names() -> Vec<String> {
    vec!["Pro".into(), "Con".into()]
}

fn setup(adapter: Arc<ScriptedAdapter>) -> JudgeSetup {
    JudgeSetup {
        endpoint: "j".into(),
        model: "judge-model".into(),
        adapter,
        prompt: None,
        criteria: vec!["logic".into(), "style".into()],
        params: Params::default(),
    }
}

fn spoken() -> Vec<Utterance> {
    vec![
        Utterance {
            speaker: 0,
            text: "Tabs are semantic.".into(),
            cut_off: false,
        },
        Utterance {
            speaker: 1,
            text: "Spaces look the same everywhere.".into(),
            cut_off: true,
        },
    ]
}

fn crit() -> Vec<String> {
    vec!["logic".into(), "style".into()]
}

#[test]
fn both_orders_relabel_the_participants() {
    let s = setup(ScriptedAdapter::new(vec![]));
    let names = names();
    let spoken = spoken();
    let t = Transcript {
        opening: "Tabs or spaces?",
        names: &names,
        utterances: &spoken,
    };
    let fwd = request(&s, &t, &[0, 1]);
    let bwd = request(&s, &t, &[1, 0]);
    assert_eq!(fwd[0].role, Role::System);
    assert!(fwd[0].content.starts_with(DEFAULT_PROMPT));
    assert!(fwd[0].content.contains("on: logic, style"), "{}", fwd[0].content);
    assert!(
        fwd[1].content.contains("[A]: Tabs are semantic.\n"),
        "{}",
        fwd[1].content
    );
    assert!(
        fwd[1]
            .content
            .contains("[B]: Spaces look the same everywhere. [cut off]")
    );
    assert!(
        bwd[1].content.contains("[B]: Tabs are semantic.\n"),
        "{}",
        bwd[1].content
    );
    assert!(bwd[1].content.contains("[A]: Spaces look"));
    // Names never reach the judge: it sees labels only.
    assert!(!fwd[1].content.contains("Pro") && !bwd[1].content.contains("Con"));
    // A configured prompt replaces the instructions, the format stays.
    let mut s2 = s.clone();
    s2.prompt = Some("Judge like a debate coach.".into());
    let custom = request(&s2, &t, &[0, 1]);
    assert!(custom[0].content.starts_with("Judge like a debate coach."));
    assert!(
        custom[0].content.contains("\"winner\": \"A\", \"B\" or \"tie\""),
        "{}",
        custom[0].content
    );
}

#[test]
fn the_schema_names_every_label_and_criterion() {
    let s = schema(&["A".into(), "B".into()], &crit());
    assert_eq!(s["properties"]["winner"]["enum"], json!(["A", "B", "tie"]));
    assert_eq!(s["properties"]["scores"]["required"], json!(["A", "B"]));
    assert_eq!(
        s["properties"]["scores"]["properties"]["B"]["required"],
        json!(["logic", "style"])
    );
    assert_eq!(s["additionalProperties"], false);
}

#[test]
fn rulings_are_read_leniently_and_mapped_back_to_names() {
    let order = vec!["Con".to_string(), "Pro".to_string()];
    let r = parse_ruling(
        "Sure! Here you go:\n```json\n{\"winner\": \"Participant B\", \"scores\": {\"a\": {\"Logic\": 6, \"style\": \"7\"}, \"B\": {\"logic\": 12, \"style\": 8}}, \"reasons\": [\"B cited\", \"facts.\"]}\n```",
        &order,
        &crit(),
    );
    assert_eq!(r.error, None);
    assert_eq!(r.winner.as_deref(), Some("Pro"), "B is the second presented: Pro");
    assert!(!r.tie);
    assert_eq!(r.scores["Con"]["logic"], 6.0);
    assert_eq!(r.scores["Con"]["style"], 7.0);
    assert_eq!(r.scores["Pro"]["logic"], 10.0, "clamped to 0–10");
    assert_eq!(r.reasons, "B cited facts.");

    let tie = parse_ruling("{\"winner\":\"tie\",\"reasons\":\"even\"}", &order, &crit());
    assert!(tie.tie && tie.winner.is_none() && tie.error.is_none());

    let junk = parse_ruling("I think A won, clearly.", &order, &crit());
    assert!(
        junk.error
            .as_deref()
            .unwrap()
            .contains("did not answer with a JSON verdict: I think A won")
    );
    let stranger = parse_ruling("{\"winner\": \"C\"}", &order, &crit());
    assert!(
        stranger
            .error
            .as_deref()
            .unwrap()
            .contains("`C`, who is not a participant")
    );
    // A JSON object without a winner is skipped for the next one.
    let second = parse_ruling("{\"note\": 1} then {\"winner\": \"a\"}", &order, &crit());
    assert_eq!(second.winner.as_deref(), Some("Con"));
}

fn ruling(order: [&str; 2], winner: Option<&str>, tie: bool, error: Option<&str>) -> Ruling {
    Ruling {
        order: order.iter().map(|s| s.to_string()).collect(),
        winner: winner.map(Into::into),
        tie,
        scores: BTreeMap::new(),
        reasons: String::new(),
        error: error.map(Into::into),
    }
}

#[test]
fn combining_reports_agreement() {
    let v = combine(
        "j".into(),
        vec![
            ruling(["Pro", "Con"], Some("Pro"), false, None),
            ruling(["Con", "Pro"], Some("Pro"), false, None),
        ],
    );
    assert_eq!((v.winner.as_deref(), v.agree), (Some("Pro"), Some(true)));
    assert_eq!(v.summary(), "winner: Pro (both orders agree)");

    let v = combine(
        "j".into(),
        vec![
            ruling(["Pro", "Con"], Some("Pro"), false, None),
            ruling(["Con", "Pro"], Some("Con"), false, None),
        ],
    );
    assert_eq!((v.winner.as_deref(), v.agree), (None, Some(false)));
    assert_eq!(
        v.summary(),
        "no clear winner: the orders disagree (Pro first → Pro; Con first → Con)"
    );

    let v = combine(
        "j".into(),
        vec![
            ruling(["Pro", "Con"], None, true, None),
            ruling(["Con", "Pro"], None, true, None),
        ],
    );
    assert!(v.tie && v.agree == Some(true));
    assert_eq!(v.summary(), "a tie (both orders agree)");

    let v = combine(
        "j".into(),
        vec![
            ruling(["Pro", "Con"], None, false, Some("HTTP 500")),
            ruling(["Con", "Pro"], Some("Con"), false, None),
        ],
    );
    assert_eq!((v.winner.as_deref(), v.agree), (Some("Con"), None));
    assert!(v.summary().contains("one order only"));

    let v = combine("j".into(), vec![ruling(["Pro", "Con"], None, false, Some("x"))]);
    assert_eq!(v.summary(), "no verdict: the judge's answers could not be read");
}

fn answer(text: &str) -> Vec<Scripted> {
    ScriptedAdapter::text_script(&[text])
}

#[tokio::test(start_paused = true)]
async fn run_judge_asks_both_orders_and_records_rulings_and_verdict() {
    let a = ScriptedAdapter::new(vec![
        answer(
            "{\"winner\":\"A\",\"scores\":{\"A\":{\"logic\":8,\"style\":6},\"B\":{\"logic\":4,\"style\":6}},\"reasons\":\"A argued better.\"}",
        ),
        answer(
            "{\"winner\":\"B\",\"scores\":{\"A\":{\"logic\":5,\"style\":5},\"B\":{\"logic\":6,\"style\":8}},\"reasons\":\"B argued better.\"}",
        ),
    ]);
    let names = names();
    let spoken = spoken();
    let t = Transcript {
        opening: "Tabs or spaces?",
        names: &names,
        utterances: &spoken,
    };
    let (tx, mut rx) = event_channel();
    let out = run_judge(&setup(a.clone()), &t, 7, &tx, &CancellationToken::new()).await;
    drop(tx);
    let v = &out.verdict;
    assert_eq!(
        v.winner.as_deref(),
        Some("Pro"),
        "A first, then B second: Pro both times"
    );
    assert_eq!(v.agree, Some(true));
    assert_eq!(v.judge, "judge-model · j");
    assert_eq!(v.scores["Pro"]["logic"], 7.0, "mean of 8 and 6");
    assert_eq!(v.scores["Con"]["style"], 5.5);
    assert_eq!(out.turns.len(), 2);
    assert_eq!(out.turns[0].turn_id, 7);
    assert_eq!(out.turns[1].turn_id, 8);
    assert_eq!(out.turns[0].mode, TurnMode::Judge);
    assert_eq!(out.turns[0].participant_name.as_deref(), Some("Judge · order 1"));
    assert_eq!(out.turns[0].ruling.as_ref().unwrap().order, ["Pro", "Con"]);
    assert_eq!(out.turns[1].ruling.as_ref().unwrap().order, ["Con", "Pro"]);
    assert!(out.turns[0].verdict.is_none());
    assert_eq!(out.turns[1].verdict.as_deref(), Some(v));
    let reqs = a.requests();
    assert!(reqs[0].params.response_schema.is_some());
    assert!(reqs[0].messages[1].content.contains("[A]: Tabs"));
    assert!(reqs[1].messages[1].content.contains("[B]: Tabs"));
    // The front end saw each turn finish, the last one with the verdict.
    let mut finished = vec![];
    while let Some(e) = rx.recv().await {
        if let OrchestratorEvent::TurnFinished { outcome, .. } = e {
            finished.push(outcome.turn().verdict.is_some());
        }
    }
    assert_eq!(finished, [false, true]);
}

#[tokio::test(start_paused = true)]
async fn a_server_refusing_the_schema_is_asked_again_without_it() {
    let a = ScriptedAdapter::new(vec![
        vec![Scripted::Error(ProtocolError::Http {
            status: 400,
            url: "http://j/v1/chat/completions".into(),
            detail: "response_format is not supported".into(),
        })],
        answer("{\"winner\":\"tie\"}"),
    ]);
    let names = names();
    let spoken = spoken();
    let t = Transcript {
        opening: "Q",
        names: &names,
        utterances: &spoken,
    };
    let (tx, _rx) = event_channel();
    let out = run_judge(&setup(a.clone()), &t, 1, &tx, &CancellationToken::new()).await;
    let reqs = a.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[0].params.response_schema.is_some());
    assert!(reqs[1].params.response_schema.is_none());
    assert_eq!(out.turns.iter().map(|t| t.turn_id).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(out.verdict.tie && out.verdict.agree == Some(true));
}

#[tokio::test(start_paused = true)]
async fn stopping_the_judge_gives_no_verdict_but_keeps_the_turn() {
    let a = ScriptedAdapter::new(vec![vec![
        Scripted::Event(StreamEvent::Text("{\"winner\"".into())),
        Scripted::Pause(std::time::Duration::from_secs(60)),
        Scripted::Event(StreamEvent::Text(":\"A\"}".into())),
    ]]);
    let names = names();
    let spoken = spoken();
    let t = Transcript {
        opening: "Q",
        names: &names,
        utterances: &spoken,
    };
    let (tx, _rx) = event_channel();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        c2.cancel();
    });
    let out = run_judge(&setup(a), &t, 1, &tx, &cancel).await;
    assert!(out.cancelled);
    assert_eq!(out.turns.len(), 1);
    assert_eq!(out.turns[0].response.text, "{\"winner\"");
    assert!(out.turns[0].verdict.is_none());
}
