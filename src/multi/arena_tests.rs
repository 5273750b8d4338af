//! `pai arena` headless: headers, streamed turns, rulings, the verdict,
//! JSON, exit codes, one session folder, untrusted text made safe.

use std::collections::BTreeMap;
use std::time::Duration;

use super::*;
use crate::multi::arena_print::{header, ruling_line, verdict_lines};
use crate::protocols::{ProtocolError, StreamEvent};
use crate::testkit::{Scripted, ScriptedAdapter};
use crate::verdict::Ruling;

fn seat(name: &str, adapter: Arc<ScriptedAdapter>) -> Seat {
    Seat {
        name: name.into(),
        endpoint: format!("ep-{}", name.to_lowercase()),
        model: format!("m-{}", name.to_lowercase()),
        system: None,
        params: Params::default(),
        adapter,
    }
}

/// The judge: Bob wins in both orders (B first, then A with Bob first).
fn judge() -> Arc<ScriptedAdapter> {
    ScriptedAdapter::new(vec![
        ScriptedAdapter::text_script(&[
            r#"{"winner": "B", "scores": {"A": {"logic": 3}, "B": {"logic": 8}}, "reasons": "B was sharper."}"#,
        ]),
        ScriptedAdapter::text_script(&[
            r#"{"winner": "A", "scores": {"A": {"logic": 9}, "B": {"logic": 4}}, "reasons": "A argued better."}"#,
        ]),
    ])
}

fn arena(
    a: Arc<ScriptedAdapter>,
    b: Arc<ScriptedAdapter>,
    turns: u32,
    judge: Option<Arc<ScriptedAdapter>>,
) -> ArenaSetup {
    ArenaSetup {
        arena: "debate".into(),
        seats: vec![seat("Ada", a), seat("Bob", b)],
        opening: "Tabs or spaces?".into(),
        max_turns: turns,
        first_turn_id: 1,
        judge: judge.map(|j| JudgeSetup {
            endpoint: "ep-judge".into(),
            model: "m-judge".into(),
            adapter: j,
            prompt: None,
            criteria: vec!["logic".into()],
            params: Params::default(),
        }),
        spoken: vec![],
    }
}

struct Ran {
    code: i32,
    out: String,
    err: String,
    root: tempfile::TempDir,
}

async fn run_with(setup: ArenaSetup, json: bool, control: ArenaControl) -> Ran {
    let root = tempfile::tempdir().unwrap();
    let recording = Recording::start(Some(root.path()), Arc::new(Templates::builtin()), None);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = {
        let mut io = Io {
            out: &mut out,
            err: &mut err,
            err_is_tty: false,
        };
        headless(setup, json, recording, &mut io, control, Arc::new(RunState::default())).await
    };
    Ran {
        code,
        out: String::from_utf8(out).unwrap(),
        err: String::from_utf8(err).unwrap(),
        root,
    }
}

fn session(root: &tempfile::TempDir) -> std::path::PathBuf {
    let dirs: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "one session folder: {dirs:?}");
    dirs[0].clone()
}

fn turn_file(dir: &std::path::Path, id: u32) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join(format!("{id:04}-turn.json"))).unwrap()).unwrap()
}

fn ruling(order: &[&str], winner: Option<&str>, error: Option<&str>) -> Ruling {
    Ruling {
        order: order.iter().map(|s| s.to_string()).collect(),
        winner: winner.map(str::to_string),
        tie: winner.is_none() && error.is_none(),
        scores: BTreeMap::new(),
        reasons: "Clear\n  and   short.".into(),
        error: error.map(str::to_string),
    }
}

#[test]
fn headers_name_the_participant_model_and_endpoint_safely() {
    assert_eq!(header("Ada", "smollm2", "local"), "── Ada (smollm2 · local) ──");
    assert_eq!(header("A\x1b[31m", "m", "e"), "── A␛[31m (m · e) ──");
}

#[test]
fn ruling_lines_say_who_won_each_order_on_one_line() {
    assert_eq!(
        ruling_line(1, &ruling(&["Ada", "Bob"], Some("Bob"), None)),
        "order 1 (A = Ada, B = Bob): Bob — Clear and short."
    );
    assert_eq!(
        ruling_line(2, &ruling(&["Bob", "Ada"], None, None)),
        "order 2 (A = Bob, B = Ada): a tie — Clear and short."
    );
    assert_eq!(
        ruling_line(
            2,
            &ruling(
                &["Bob", "Ada"],
                None,
                Some("the judge did not answer with a JSON verdict: hm")
            )
        ),
        "order 2 (A = Bob, B = Ada): no ruling — the judge did not answer with a JSON verdict: hm"
    );
    let mut long = ruling(&["Ada", "Bob"], Some("Ada"), None);
    long.reasons = "x".repeat(500);
    assert!(ruling_line(1, &long).ends_with(&format!("{}…", "x".repeat(240))));
}

#[test]
fn verdict_lines_give_the_summary_and_aligned_scores() {
    let mut a = ruling(&["Ada", "Bobby"], Some("Bobby"), None);
    a.scores = [
        (
            "Ada".to_string(),
            [("logic".to_string(), 3.0), ("style".to_string(), 5.0)].into(),
        ),
        (
            "Bobby".to_string(),
            [("logic".to_string(), 8.0), ("style".to_string(), 7.0)].into(),
        ),
    ]
    .into();
    let v = crate::verdict::combine("ep · m".into(), vec![a]);
    assert_eq!(
        verdict_lines(&v),
        "verdict: winner: Bobby (both orders agree)\n  Ada    logic 3 · style 5 · mean 4\n  Bobby  logic 8 · style 7 · mean 7.5\n"
    );
}

#[tokio::test]
async fn turns_stream_under_headers_then_rulings_and_the_verdict() {
    let a = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["Tabs ", "are kind."])]);
    let b = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["Spaces are \x1b[2Jsafe."])]);
    let r = run_with(arena(a, b, 2, Some(judge())), false, ArenaControl::new()).await;
    assert_eq!(r.err, "");
    assert_eq!(
        r.out,
        "── Ada (m-ada · ep-ada) ──\nTabs are kind.\n\n\
         ── Bob (m-bob · ep-bob) ──\nSpaces are ␛[2Jsafe.\n\n\
         ── judge (m-judge · ep-judge) ──\n\
         order 1 (A = Ada, B = Bob): Bob — B was sharper.\n\
         order 2 (A = Bob, B = Ada): Bob — A argued better.\n\
         verdict: winner: Bob (both orders agree)\n  Ada  logic 3.5 · mean 3.5\n  Bob  logic 8.5 · mean 8.5\n"
    );
    assert_eq!(r.code, EXIT_OK);
    // Every turn in one folder: two participants, the judge twice.
    let dir = session(&r.root);
    for (id, who, mode) in [
        (1, "Ada", "arena"),
        (2, "Bob", "arena"),
        (3, "Judge · order 1", "judge"),
    ] {
        let t = turn_file(&dir, id);
        assert_eq!(
            (t["participant_name"].as_str(), t["mode"].as_str()),
            (Some(who), Some(mode))
        );
    }
    let last = turn_file(&dir, 4);
    assert_eq!(last["ruling"]["winner"], "Bob");
    assert_eq!(last["verdict"]["winner"], "Bob");
    assert!(!dir.join("0005-turn.json").exists());
}

#[tokio::test]
async fn json_mode_prints_one_object_with_turns_judge_turns_and_the_verdict() {
    let a = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["A1"])]);
    let b = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["B1"])]);
    let r = run_with(arena(a, b, 3, Some(judge())), true, ArenaControl::new()).await;
    assert_eq!((r.code, r.err.as_str()), (0, ""));
    assert_eq!(r.out.lines().count(), 1, "{}", r.out);
    let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(
        (v["arena"].as_str(), v["opening"].as_str()),
        (Some("debate"), Some("Tabs or spaces?"))
    );
    assert_eq!(v["end"], "completed");
    let turns = v["turns"].as_array().unwrap();
    let who: Vec<&str> = turns.iter().map(|t| t["participant"].as_str().unwrap()).collect();
    assert_eq!(who, ["Ada", "Bob", "Ada"]);
    assert_eq!(turns[1]["text"], "B1");
    assert_eq!(turns[1]["model"], "m-bob");
    assert_eq!(turns[1]["endpoint"], "ep-bob");
    assert_eq!(turns[1]["status"], "completed");
    assert!(turns[1]["stats"]["duration_ms"].is_u64());
    assert_eq!(v["judge_turns"].as_array().unwrap().len(), 2);
    assert_eq!(v["judge_turns"][0]["ruling"]["winner"], "Bob");
    assert_eq!(v["verdict"]["winner"], "Bob");
    assert_eq!(v["verdict"]["summary"], "winner: Bob (both orders agree)");
    assert_eq!(v["verdict"]["scores"]["Ada"]["logic"], 3.5);
    let dir = v["session_dir"].as_str().unwrap();
    assert_eq!(std::path::Path::new(dir), session(&r.root));
}

#[tokio::test]
async fn a_failing_participant_exits_1_with_one_line_naming_it() {
    let a = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["A1"])]);
    let b = ScriptedAdapter::new(vec![vec![
        Scripted::Event(StreamEvent::Text("half".into())),
        Scripted::Error(ProtocolError::Network {
            detail: "reset by peer".into(),
        }),
    ]]);
    let j = judge();
    let r = run_with(arena(a, b, 4, Some(j.clone())), false, ArenaControl::new()).await;
    assert_eq!(r.code, EXIT_FAILED);
    assert!(
        r.out.contains("── Bob (m-bob · ep-bob) ──\nhalf\n[failed]\n"),
        "{}",
        r.out
    );
    assert_eq!(r.err.lines().count(), 1, "{}", r.err);
    assert!(r.err.starts_with("pai: arena `debate`: Bob failed: "), "{}", r.err);
    assert!(
        r.err.contains("reset by peer") && r.err.contains("the exchange is kept in"),
        "{}",
        r.err
    );
    // A failed answer is not part of the exchange: Bob never spoke, so no judging.
    assert!(j.requests().is_empty());
    assert!(!r.out.contains("judge"), "{}", r.out);
    assert!(turn_file(&session(&r.root), 2)["status"] == "failed");
}

#[tokio::test(start_paused = true)]
async fn a_stop_cuts_the_turn_the_judge_still_rules_and_the_exit_is_130() {
    let a = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["A1"])]);
    let b = ScriptedAdapter::new(vec![vec![
        Scripted::Event(StreamEvent::Text("B starts".into())),
        Scripted::Pause(Duration::from_secs(60)),
        Scripted::Event(StreamEvent::Text(" never".into())),
    ]]);
    let control = ArenaControl::new();
    let c = control.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        c.stop();
    });
    let r = run_with(arena(a, b, 6, Some(judge())), false, control).await;
    assert_eq!(r.code, EXIT_CANCELLED);
    assert!(r.out.contains("B starts\n[stopped]\n"), "{}", r.out);
    assert!(r.out.contains("verdict: winner: Bob"), "{}", r.out);
    assert!(
        r.err
            .starts_with("pai: arena stopped after 2 turns; the exchange is kept in "),
        "{}",
        r.err
    );
    assert_eq!(r.err.lines().count(), 1, "{}", r.err);
}

#[tokio::test(start_paused = true)]
async fn a_stop_before_everyone_spoke_says_there_is_no_verdict() {
    let a = ScriptedAdapter::new(vec![vec![
        Scripted::Pause(Duration::from_secs(60)),
        Scripted::Event(StreamEvent::Text("late".into())),
    ]]);
    let b = ScriptedAdapter::new(vec![]);
    let control = ArenaControl::new();
    let c = control.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        c.stop();
    });
    let r = run_with(arena(a, b, 4, Some(judge())), false, control).await;
    assert_eq!(r.code, EXIT_CANCELLED);
    assert!(
        r.out.contains("(no answer)") || r.out.contains("[stopped]"),
        "{}",
        r.out
    );
    assert!(r.err.contains("no verdict — not every participant spoke"), "{}", r.err);
}

#[tokio::test]
async fn a_judge_that_cannot_be_reached_fails_the_run() {
    let a = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["A1"])]);
    let b = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["B1"])]);
    let j = ScriptedAdapter::new(vec![vec![Scripted::Error(ProtocolError::Connect {
        url: "http://judge".into(),
        detail: "refused".into(),
    })]]);
    let r = run_with(arena(a, b, 2, Some(j)), false, ArenaControl::new()).await;
    assert_eq!(r.code, EXIT_FAILED);
    assert!(r.out.contains("order 1 (A = Ada, B = Bob): no ruling — "), "{}", r.out);
    assert!(r.out.contains("verdict: no verdict"), "{}", r.out);
    assert!(r.err.starts_with("pai: judge `ep-judge`: "), "{}", r.err);
}

struct Closed;

impl std::io::Write for Closed {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
}

#[tokio::test(start_paused = true)]
async fn a_closed_stdout_ends_the_arena_quietly() {
    let a = ScriptedAdapter::new(vec![vec![
        Scripted::Event(StreamEvent::Text("A1".into())),
        Scripted::Pause(Duration::from_secs(30)),
        Scripted::Event(StreamEvent::Finished("stop".into())),
    ]]);
    let b = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["B1"])]);
    let j = judge();
    let root = tempfile::tempdir().unwrap();
    let mut err = Vec::new();
    let code = {
        let mut io = Io {
            out: &mut Closed,
            err: &mut err,
            err_is_tty: false,
        };
        let rec = Recording::start(Some(root.path()), Arc::new(Templates::builtin()), None);
        let state = Arc::new(RunState::default());
        headless(
            arena(a, b.clone(), 4, Some(j.clone())),
            false,
            rec,
            &mut io,
            ArenaControl::new(),
            state,
        )
        .await
    };
    assert_eq!((code, err.as_slice()), (EXIT_OK, &b""[..]));
    assert!(
        b.requests().is_empty() && j.requests().is_empty(),
        "nobody reads: no more requests"
    );
}

#[tokio::test]
async fn without_a_judge_the_turns_are_all() {
    let a = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&[""])]);
    let b = ScriptedAdapter::new(vec![vec![
        Scripted::Event(StreamEvent::Text("B1 and".into())),
        Scripted::Event(StreamEvent::Finished("length".into())),
    ]]);
    let r = run_with(arena(a, b, 2, None), false, ArenaControl::new()).await;
    assert_eq!((r.code, r.err.as_str()), (0, ""));
    assert_eq!(
        r.out,
        "── Ada (m-ada · ep-ada) ──\n(no answer)\n\n── Bob (m-bob · ep-bob) ──\nB1 and\n[cut off: max tokens]\n"
    );
}

fn config(arenas: &str) -> Config {
    let src = format!("[endpoints.local]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"smollm2\"\n{arenas}");
    crate::config::parse(
        &src,
        crate::config::ConfigSource::BuiltIn,
        std::path::Path::new("/data"),
    )
    .unwrap()
}

fn two(name: &str) -> String {
    format!(
        "[[arenas.{name}.participants]]\nname = \"Pro\"\nendpoint = \"local\"\n\
         [[arenas.{name}.participants]]\nendpoint = \"local\"\nmodel = \"other\"\ntemperature = 0.2\n"
    )
}

#[test]
fn unknown_arenas_get_a_suggestion_and_the_list() {
    let e = find(&config(""), "debate").unwrap_err();
    assert!(e.contains("no arenas are configured"), "{e}");
    let cfg = config(&format!("{}{}", two("debate"), two("poetry")));
    let e = find(&cfg, "debat").unwrap_err();
    assert!(
        e.starts_with("unknown arena `debat` — did you mean `debate`? Configured arenas: debate, poetry"),
        "{e}"
    );
    assert!(find(&cfg, "debate").is_ok());
    assert!(no_opening("debate").contains("opening = \"…\" in [arenas.debate]"));
}

#[test]
fn the_setup_shares_one_adapter_per_endpoint_and_takes_caps_and_temperatures() {
    let cfg = config(&format!(
        "[defaults]\nendpoint = \"local\"\ntemperature = 0.9\nmax_tokens = 100\n{}[arenas.debate.judge]\nendpoint = \"local\"\n",
        two("debate")
    ));
    let secrets = Secrets::default();
    let mut adapters = Adapters::new(&secrets);
    let mut plan = ArenaPlan {
        arena: cfg.arenas["debate"].clone(),
        opening: None,
        turns: 2,
        max_tokens: Some(32),
        json: false,
    };
    let s = setup(&cfg, &mut adapters, &plan, "Go".into()).unwrap();
    assert_eq!(s.max_turns, 2);
    assert_eq!(s.opening, "Go");
    assert!(Arc::ptr_eq(&s.seats[0].adapter, &s.seats[1].adapter));
    assert_eq!(s.seats[0].params.temperature, Some(0.9), "the default");
    assert_eq!(s.seats[1].params.temperature, Some(0.2), "the participant's own");
    assert_eq!(s.seats[1].model, "other");
    assert_eq!(s.seats[0].params.max_tokens, Some(32), "--max-tokens");
    let j = s.judge.unwrap();
    assert_eq!(
        (j.params.max_tokens, j.params.temperature),
        (Some(1024), Some(0.0)),
        "the judge is not cut to the participants' cap, and samples deterministically (as in the TUI)"
    );
    plan.max_tokens = None;
    let s = setup(&cfg, &mut adapters, &plan, "Go".into()).unwrap();
    assert_eq!(s.seats[0].params.max_tokens, Some(100));
}
