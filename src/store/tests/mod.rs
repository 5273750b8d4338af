//! Store tests: round trips, idempotent upserts, restore, the writer thread.
//! Search, migrations and damaged or locked files have their own modules.

mod robustness;
mod search;

use super::*;
use crate::conversation::{Message, Params, Role, ToolCall, TurnRequest, TurnResponse, TurnStatus};
use crate::stats::RequestStats;

pub fn turn(id: u32, messages: Vec<Message>, answer: &str) -> Turn {
    Turn {
        turn_id: id,
        started_at: format!("2026-11-21T18:{:02}:00.000Z", id % 60),
        endpoint: "local".into(),
        model: "smollm2".into(),
        participant_name: None,
        lane: None,
        mode: TurnMode::Chat,
        status: TurnStatus::Completed,
        request: TurnRequest {
            messages,
            params: Params {
                temperature: Some(0.5),
                max_tokens: Some(64),
                ..Params::default()
            },
        },
        response: TurnResponse {
            text: answer.into(),
            reasoning: String::new(),
            tool_calls: Vec::new(),
            finish_reason: Some("stop".into()),
            error: None,
        },
        stats: RequestStats {
            ttft_ms: Some(12),
            duration_ms: 340,
            input_tokens: 20,
            output_tokens: 7,
            usage_reported: true,
            tokens_per_sec: Some(21.5),
            finish_reason: Some("stop".into()),
            retries: 1,
        },
        tool_runs: Vec::new(),
        ruling: None,
        verdict: None,
        pick: None,
    }
}

use crate::conversation::TurnMode;

/// Write a chat of `prompts` into `session` the way a front end does: each
/// request is the whole conversation so far. Returns the turns written.
pub fn chat(store: &mut Store, session: &str, system: Option<&str>, prompts: &[(&str, &str)]) -> Vec<Turn> {
    let mut convo: Vec<Message> = system.map(Message::system).into_iter().collect();
    let mut out = Vec::new();
    for (i, (q, a)) in prompts.iter().enumerate() {
        convo.push(Message::user(*q));
        let t = turn(i as u32 + 1, convo.clone(), a);
        store.upsert_turn(session, &t).unwrap();
        convo.push(t.assistant_message());
        out.push(t);
    }
    out
}

fn count(store: &Store, table: &str) -> i64 {
    store
        .conn
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

/// The full-text index matches the turns exactly (FTS5's own check).
pub fn fts_consistent(store: &Store) {
    store
        .conn
        .execute(
            "INSERT INTO turns_fts(turns_fts, rank) VALUES ('integrity-check', 1)",
            [],
        )
        .unwrap();
}

fn meta(id: &str) -> SessionMeta {
    SessionMeta {
        id: id.into(),
        started_at: "2026-11-21T18:00:00.000Z".into(),
        title: None,
        endpoint: "local".into(),
        model: "smollm2".into(),
        system: Some("be brief".into()),
        folder: Some("/s/20261121-180000-abc123".into()),
        mode: TurnMode::Chat,
    }
}

#[test]
fn a_session_round_trips_and_restores_the_exact_conversation() {
    let mut s = Store::in_memory().unwrap();
    s.upsert_session(&meta("20261121-180000-abc123")).unwrap();
    let mut turns = chat(
        &mut s,
        "20261121-180000-abc123",
        Some("be brief"),
        &[
            ("What is TCP?", "A transport protocol."),
            ("And UDP?", "Datagrams, no handshake."),
        ],
    );
    // A third turn that carries reasoning and a participant name.
    let mut convo = turns[1].request.messages.clone();
    convo.push(turns[1].assistant_message());
    convo.push(Message::user("Which is faster?"));
    let mut t3 = turn(3, convo, "UDP, usually.");
    t3.response.reasoning = "fewer round trips".into();
    t3.participant_name = Some("Alice".into());
    s.upsert_turn("20261121-180000-abc123", &t3).unwrap();
    turns.push(t3.clone());

    let list = s.list_sessions(10).unwrap();
    assert_eq!(list.len(), 1);
    let sum = &list[0];
    assert_eq!((sum.turn_count, sum.title.as_str()), (3, "What is TCP?"));
    assert_eq!(
        sum.folder.as_deref(),
        Some(std::path::Path::new("/s/20261121-180000-abc123"))
    );

    let d = s.session("20261121-180000-abc123").unwrap().unwrap();
    assert_eq!(d.system.as_deref(), Some("be brief"));
    assert_eq!(d.turns.len(), 3);
    for (stored, orig) in d.turns.iter().zip(&turns) {
        assert_eq!(stored.state, TurnState::Completed);
        // Everything but the request comes back as written; the request holds
        // what the turn added (like the TUI's export turns).
        let mut want = orig.clone();
        let start = write::new_inputs_start(&want.request.messages);
        want.request.messages.drain(..start);
        assert_eq!(stored.turn, want);
    }
    assert_eq!(d.turns[0].turn.request.messages[0].role, Role::System);

    let r = s.restore("20261121-180000-abc123").unwrap().unwrap();
    let mut want = t3.request.messages.clone();
    want.push(t3.assistant_message());
    assert_eq!(want.remove(0), Message::system("be brief"));
    assert_eq!(r.messages, want);
    assert_eq!(r.system.as_deref(), Some("be brief"));
    assert_eq!((r.endpoint.as_str(), r.model.as_str()), ("local", "smollm2"));
    assert_eq!(r.participant.as_deref(), Some("Alice"));
    assert_eq!(r.params.max_tokens, Some(64));
    assert_eq!((r.next_turn_id, r.pending_prompt.as_deref()), (4, None));
    assert!(s.restore("nope").unwrap().is_none());
    assert!(s.session("nope").unwrap().is_none());
}

#[test]
fn messages_are_stored_once_not_once_per_request() {
    let mut s = Store::in_memory().unwrap();
    let prompts: Vec<(String, String)> = (0..50).map(|i| (format!("q{i}"), format!("a{i}"))).collect();
    let p: Vec<(&str, &str)> = prompts.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    chat(&mut s, "s1", Some("sys"), &p);
    // system + 50 prompts + 50 answers, not 50 × the conversation.
    assert_eq!(count(&s, "messages"), 101);
    // A writer that starts cold (a resumed session) finds the stored path.
    s.paths = PathCache::default();
    let r = s.restore("s1").unwrap().unwrap();
    let mut convo = vec![Message::system("sys")];
    convo.extend(r.messages.clone());
    convo.push(Message::user("q50"));
    s.upsert_turn("s1", &turn(51, convo, "a50")).unwrap();
    assert_eq!(count(&s, "messages"), 103);
    assert_eq!(s.restore("s1").unwrap().unwrap().messages.len(), 102);
}

#[test]
fn a_streaming_turn_written_many_times_is_one_turn_in_its_final_state() {
    let mut s = Store::in_memory().unwrap();
    let convo = vec![Message::system("sys"), Message::user("count to five")];
    let mut t = turn(1, convo, "");
    for text in ["one", "one two", "one two three"] {
        t.response.text = text.into();
        s.checkpoint_turn("s", &t).unwrap();
        let d = s.session("s").unwrap().unwrap();
        assert_eq!(d.turns.len(), 1);
        assert_eq!(d.turns[0].state, TurnState::Streaming);
        assert_eq!(d.turns[0].turn.response.text, text);
    }
    // Cut off while streaming, it reads back as cancelled and says so in exports.
    let d = s.session("s").unwrap().unwrap();
    assert_eq!(d.turns[0].turn.status, TurnStatus::Cancelled);
    assert_eq!(d.export_turns()[0].response.error.as_deref(), Some(INTERRUPTED));

    t.response.text = "one two three four five".into();
    s.upsert_turn("s", &t).unwrap();
    s.upsert_turn("s", &t).unwrap();
    let d = s.session("s").unwrap().unwrap();
    assert_eq!(d.turns.len(), 1);
    assert_eq!(d.turns[0].state, TurnState::Completed);
    assert_eq!(d.turns[0].turn.response.text, "one two three four five");
    assert_eq!(d.summary.turn_count, 1);
    assert_eq!(count(&s, "messages"), 3, "system, prompt, answer");
    fts_consistent(&s);
    assert_eq!(s.search("five", 5).unwrap().len(), 1);
    // The same again from a cold writer: still one of each.
    s.paths = PathCache::default();
    s.upsert_turn("s", &t).unwrap();
    assert_eq!((count(&s, "messages"), count(&s, "turns")), (3, 1));
}

#[test]
fn restore_leaves_out_an_unanswered_prompt_and_offers_it_again() {
    let mut s = Store::in_memory().unwrap();
    let turns = chat(&mut s, "s", None, &[("hello", "hi!")]);
    let mut convo = turns[0].request.messages.clone();
    convo.push(turns[0].assistant_message());
    convo.push(Message::user("tell me more"));
    let mut failed = turn(2, convo, "");
    failed.status = TurnStatus::Failed;
    failed.response.error = Some("cannot connect".into());
    s.upsert_turn("s", &failed).unwrap();
    let r = s.restore("s").unwrap().unwrap();
    assert_eq!(r.messages, vec![Message::user("hello"), turns[0].assistant_message()]);
    assert_eq!(r.pending_prompt.as_deref(), Some("tell me more"));
    assert_eq!((r.next_turn_id, r.system.as_deref()), (3, None));
    // The TUI then sends the conversation without the failed prompt.
    let mut convo = r.messages.clone();
    convo.push(Message::user("new question"));
    s.upsert_turn("s", &turn(3, convo, "answer")).unwrap();
    let r = s.restore("s").unwrap().unwrap();
    assert_eq!(r.messages.len(), 4);
    assert_eq!(r.pending_prompt, None);
    assert_eq!(r.messages[2], Message::user("new question"));
}

#[test]
fn a_new_system_prompt_and_arena_lanes_branch_the_tree_correctly() {
    let mut s = Store::in_memory().unwrap();
    let turns = chat(&mut s, "s", Some("old system"), &[("q1", "a1")]);
    // /system changes the first message: the next request is a new path.
    let mut convo = vec![Message::system("new system"), Message::user("q1")];
    convo.push(turns[0].assistant_message());
    convo.push(Message::user("q2"));
    s.upsert_turn("s", &turn(2, convo.clone(), "a2")).unwrap();
    let r = s.restore("s").unwrap().unwrap();
    assert_eq!(r.system.as_deref(), Some("new system"));
    assert_eq!(r.messages.len(), 4);
    // Two lanes answer the same request: the request is stored once.
    let before = count(&s, "messages");
    convo.push(Message::assistant("a2"));
    convo.push(Message::user("q3"));
    let mut left = turn(3, convo.clone(), "left answer");
    left.participant_name = Some("A".into());
    left.mode = TurnMode::Arena;
    let mut right = turn(4, convo.clone(), "right answer");
    right.participant_name = Some("B".into());
    right.mode = TurnMode::Arena;
    s.upsert_turn("s", &left).unwrap();
    s.upsert_turn("s", &right).unwrap();
    assert_eq!(count(&s, "messages") - before, 1 + 2, "q3 once, two answers");
    let d = s.session("s").unwrap().unwrap();
    assert_eq!(d.turns[3].turn.request.messages, vec![Message::user("q3")]);
    assert_eq!(
        s.restore("s").unwrap().unwrap().messages.last().unwrap().content,
        "right answer"
    );
}

#[test]
fn restore_continues_from_the_chosen_compare_answer_never_a_judge() {
    use crate::conversation::PickMark;
    let mut s = Store::in_memory().unwrap();
    let turns = chat(&mut s, "s", None, &[("hello", "hi!")]);
    let mut convo = turns[0].request.messages.clone();
    convo.push(turns[0].assistant_message());
    convo.push(Message::user("Name a prime."));
    let lane = |id: u32, l: u8, answer: &str, pick: Option<PickMark>| {
        let mut t = turn(id, convo.clone(), answer);
        t.mode = TurnMode::Compare;
        t.lane = Some(l);
        t.model = format!("m{l}");
        t.pick = pick;
        t
    };
    // Not picked yet: neither answer continues, and nothing is pending.
    s.upsert_turn("s", &lane(2, 0, "7", None)).unwrap();
    s.upsert_turn("s", &lane(3, 1, "9", None)).unwrap();
    let r = s.restore("s").unwrap().unwrap();
    assert_eq!(r.messages.last().unwrap().content, "hi!");
    assert_eq!((r.pending_prompt.as_deref(), r.next_turn_id), (None, 4));
    // The left one is chosen: it continues, though the right one came later.
    s.upsert_turn("s", &lane(2, 0, "7", Some(PickMark::Chosen))).unwrap();
    s.upsert_turn("s", &lane(3, 1, "9", Some(PickMark::Rejected))).unwrap();
    let r = s.restore("s").unwrap().unwrap();
    assert_eq!(r.messages.last().unwrap().content, "7");
    assert_eq!(
        (r.model.as_str(), r.mode, r.pending_prompt.as_deref()),
        ("m0", TurnMode::Compare, None)
    );
    // A tie: the left one, as in the TUI.
    s.upsert_turn("s", &lane(2, 0, "7", Some(PickMark::Tie))).unwrap();
    s.upsert_turn("s", &lane(3, 1, "9", Some(PickMark::Tie))).unwrap();
    assert_eq!(s.restore("s").unwrap().unwrap().messages.last().unwrap().content, "7");
    // A judge's answer never continues a conversation.
    let mut judge = turn(4, vec![Message::user("the transcript")], "{\"winner\":\"A\"}");
    judge.mode = TurnMode::Judge;
    s.upsert_turn("s", &judge).unwrap();
    let r = s.restore("s").unwrap().unwrap();
    assert_eq!(r.messages.last().unwrap().content, "7");
    assert_eq!((r.pending_prompt, r.next_turn_id), (None, 5));
}

#[test]
fn lanes_rulings_verdicts_and_picks_survive_the_history() {
    use crate::conversation::PickMark;
    use crate::verdict::{Ruling, combine};
    let mut s = Store::in_memory().unwrap();
    let ruling = |order: [&str; 2]| Ruling {
        order: order.iter().map(|n| n.to_string()).collect(),
        winner: Some("Bob".into()),
        tie: false,
        scores: [("Ada", 4.0), ("Bob", 8.0)]
            .iter()
            .map(|(n, v)| (n.to_string(), [("logic".to_string(), *v)].into_iter().collect()))
            .collect(),
        reasons: "Bob argued better.".into(),
        error: None,
    };
    let mut arena = turn(1, vec![Message::user("Tabs or spaces?")], "Tabs.");
    arena.mode = TurnMode::Arena;
    arena.lane = Some(1);
    arena.participant_name = Some("Ada".into());
    let mut judge = turn(2, vec![Message::user("the transcript")], "{\"winner\":\"B\"}");
    judge.mode = TurnMode::Judge;
    judge.ruling = Some(Box::new(ruling(["Ada", "Bob"])));
    judge.verdict = Some(Box::new(combine(
        "judge · local".into(),
        vec![ruling(["Ada", "Bob"]), ruling(["Bob", "Ada"])],
    )));
    let mut picked = turn(3, vec![Message::user("Name a prime.")], "7");
    picked.mode = TurnMode::Compare;
    picked.lane = Some(0);
    picked.pick = Some(PickMark::Chosen);
    for t in [&arena, &judge, &picked] {
        s.upsert_turn("s", t).unwrap();
    }
    let d = s.session("s").unwrap().unwrap();
    let back: Vec<&Turn> = d.turns.iter().map(|t| &t.turn).collect();
    assert_eq!((back[0].lane, back[0].ruling.is_none()), (Some(1), true));
    assert_eq!(back[1].ruling, judge.ruling);
    assert_eq!(back[1].verdict, judge.verdict);
    assert_eq!(back[1].lane, None);
    assert_eq!((back[2].lane, back[2].pick), (Some(0), Some(PickMark::Chosen)));
    // A plain turn keeps `extra` NULL.
    let nulls: i64 = s
        .conn
        .query_row("SELECT count(*) FROM turns WHERE extra IS NULL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(nulls, 1);
}

#[test]
fn tool_calls_get_their_results_and_statuses() {
    let mut s = Store::in_memory().unwrap();
    let convo = vec![Message::user("weather in Paris?")];
    let mut t1 = turn(1, convo.clone(), "");
    t1.mode = TurnMode::Agent;
    t1.response.tool_calls = vec![
        ToolCall {
            id: "call_1".into(),
            name: "weather".into(),
            arguments: r#"{"city":"Paris"}"#.into(),
        },
        ToolCall {
            id: "call_2".into(),
            name: "time".into(),
            arguments: "{}".into(),
        },
    ];
    s.upsert_turn("s", &t1).unwrap();
    s.set_tool_call("s", "call_2", ToolCallStatus::Denied, None).unwrap();
    let mut convo2 = convo.clone();
    convo2.push(t1.assistant_message());
    convo2.push(Message::tool_result("call_1", "18°C, clear"));
    s.upsert_turn("s", &turn(2, convo2, "It is 18°C and clear.")).unwrap();
    let d = s.session("s").unwrap().unwrap();
    let calls = &d.turns[0].tool_calls;
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].status, calls[0].result.as_deref()),
        (ToolCallStatus::Done, Some("18°C, clear"))
    );
    assert_eq!(
        (calls[1].status, calls[1].result.as_deref()),
        (ToolCallStatus::Denied, None)
    );
    assert_eq!(d.turns[0].turn.response.tool_calls, t1.response.tool_calls);
    assert_eq!(
        d.turns[1].turn.request.messages[0].tool_call_id.as_deref(),
        Some("call_1")
    );
    let e = s
        .set_tool_call("s", "call_9", ToolCallStatus::Done, Some("x"))
        .unwrap_err();
    assert!(e.to_string().contains("no tool call `call_9`"), "{e}");
    // A turn whose answer is only tool calls counts as answered for resume.
    assert_eq!(s.restore("s").unwrap().unwrap().messages.len(), 4);
}

#[test]
fn votes_round_trip_with_what_preference_data_needs() {
    let mut s = Store::in_memory().unwrap();
    chat(&mut s, "s", None, &[("q", "a")]);
    let side = |m: &str, a: &str, t: u32| VoteSide {
        endpoint: "local".into(),
        model: m.into(),
        name: Some(format!("model-{t}")),
        turn_id: Some(t),
        answer: a.into(),
    };
    let mut v = Vote {
        created_at: "2026-11-21T19:00:00.000Z".into(),
        session_id: Some("s".into()),
        mode: TurnMode::Arena,
        voter: "user".into(),
        prompt: vec![Message::system("sys"), Message::user("Write a haiku")],
        left: side("m1", "haiku one", 2),
        right: side("m2", "haiku two", 3),
        choice: VoteChoice::Right,
        note: Some("better rhythm".into()),
    };
    let id1 = s.insert_vote(&v).unwrap();
    v.choice = VoteChoice::BothBad;
    v.session_id = None;
    let id2 = s.insert_vote(&v).unwrap();
    assert!(id2 > id1);
    let all = s.votes(None).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].vote.prompt, v.prompt);
    let (chosen, rejected) = all[0].vote.chosen_rejected().unwrap();
    assert_eq!((chosen.model.as_str(), rejected.answer.as_str()), ("m2", "haiku one"));
    assert!(all[1].vote.chosen_rejected().is_none());
    assert_eq!(s.votes(Some("s")).unwrap().len(), 1);
}

#[test]
fn ids_resolve_by_prefix_and_random_part_with_clear_errors() {
    let mut s = Store::in_memory().unwrap();
    for id in [
        "20261121-180000-abc123",
        "20261121-190000-abd456",
        "20261122-080000-f00d00",
    ] {
        chat(&mut s, id, None, &[("q", "a")]);
    }
    assert_eq!(s.resolve_session("20261122").unwrap(), "20261122-080000-f00d00");
    assert_eq!(s.resolve_session("abc").unwrap(), "20261121-180000-abc123");
    assert_eq!(
        s.resolve_session("20261121-190000-abd456").unwrap(),
        "20261121-190000-abd456"
    );
    match s.resolve_session("20261121") {
        Err(StoreError::Ambiguous { matches, .. }) => assert_eq!(matches.len(), 2),
        other => panic!("{other:?}"),
    }
    let e = s.resolve_session("20261123").unwrap_err().to_string();
    assert!(e.starts_with("no session matches `20261123` — did you mean"), "{e}");
    assert!(e.contains("20261122-080000-f00d00"), "{e}");
    let e = s.resolve_session("zzzz").unwrap_err().to_string();
    assert!(e.contains("pai sessions list"), "{e}");
}

#[test]
fn the_writer_thread_coalesces_checkpoints_and_flushes_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let reports = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let r = reports.clone();
    let w = StoreWriter::spawn(path.clone(), move |rep| r.lock().unwrap().push(format!("{rep:?}")));
    w.session(meta("sess"));
    let mut t = turn(1, vec![Message::user("stream please")], "");
    for i in 0..20 {
        t.response.text.push_str(&format!("w{i} "));
        w.checkpoint("sess", t.clone());
    }
    assert!(w.flush());
    t.response.text.push_str("done");
    w.turn("sess", t.clone());
    w.turn("sess", turn(2, vec![Message::user("second")], "two"));
    drop(w);
    let s = Store::open(&path).unwrap();
    let d = s.session("sess").unwrap().unwrap();
    assert_eq!(d.turns.len(), 2);
    assert_eq!(d.turns[0].state, TurnState::Completed);
    assert!(d.turns[0].turn.response.text.ends_with("w19 done"));
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert!(reports[0].starts_with("Opened"), "{reports:?}");
}

#[test]
fn a_writer_without_a_store_reports_once_and_drops_writes_quietly() {
    let reports = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let r = reports.clone();
    let w = StoreWriter::with_opener(|| Err(StoreError::NoLocation), move |rep| r.lock().unwrap().push(rep));
    w.turn("s", turn(1, vec![Message::user("x")], "y"));
    assert!(w.flush());
    drop(w);
    let reports = reports.lock().unwrap();
    assert!(matches!(
        reports.as_slice(),
        [StoreReport::Unavailable(StoreError::NoLocation)]
    ));
}

/// A front end doing everything it may do, at random: new prompts, failures
/// (the prompt leaves the context), checkpoints, a new system prompt, rewrites
/// of the last turn, a writer restarting cold. After every step the store
/// gives back exactly the conversation the front end holds.
#[test]
fn restore_always_matches_the_front_ends_conversation() {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut s = Store::in_memory().unwrap();
    let mut system = Some("sys 0".to_string());
    let mut convo: Vec<Message> = Vec::new();
    let mut last: Option<Turn> = None;
    let mut sent: Vec<Vec<Message>> = Vec::new();
    let mut answered_system = None;
    for step in 0..400u32 {
        match next(10) {
            0 => system = (next(3) > 0).then(|| format!("sys {step}")),
            1 => s.paths = PathCache::default(),
            2 if last.is_some() => {
                let t = last.clone().unwrap();
                s.upsert_turn("s", &t).unwrap();
            }
            _ => {
                let mut req: Vec<Message> = system.iter().map(Message::system).collect();
                req.extend(convo.iter().cloned());
                req.push(Message::user(format!("q{step} {}", "x".repeat(next(50) as usize))));
                let id = sent.len() as u32 + 1;
                let answered = next(5) > 0;
                let mut t = turn(id, req.clone(), "");
                for piece in 0..next(4) {
                    t.response.text.push_str(&format!("p{piece} "));
                    s.checkpoint_turn("s", &t).unwrap();
                }
                if answered {
                    t.response.text.push_str(&format!("a{step}"));
                    if next(4) == 0 {
                        t.response.reasoning = format!("r{step}");
                    }
                } else {
                    t.response.text.clear();
                    t.status = TurnStatus::Failed;
                }
                s.upsert_turn("s", &t).unwrap();
                if answered {
                    convo.push(req.last().unwrap().clone());
                    convo.push(t.assistant_message());
                    answered_system = system.clone();
                }
                sent.push(req);
                last = Some(t);
            }
        }
        if let Some(r) = s.restore("s").unwrap() {
            assert_eq!(r.messages, convo, "step {step}");
            if !convo.is_empty() {
                assert_eq!(r.system, answered_system, "step {step}");
            }
        }
    }
    let d = s.session("s").unwrap().unwrap();
    assert_eq!(d.turns.len(), sent.len());
    for (t, req) in d.turns.iter().zip(&sent) {
        let start = write::new_inputs_start(req);
        assert_eq!(t.turn.request.messages, req[start..], "turn {}", t.turn.turn_id);
    }
    fts_consistent(&s);
}
