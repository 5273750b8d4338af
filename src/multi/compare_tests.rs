//! `pai compare` headless: lanes from `-e`, answers printed together with
//! their speed, JSON, exit codes, one session folder.

use std::time::Duration;

use super::*;
use crate::protocols::ProtocolError;
use crate::stats::RequestStats;
use crate::testkit::{Scripted, ScriptedAdapter};

fn config() -> Config {
    let src = "[defaults]\nendpoint = \"local\"\nsystem = \"Be brief.\"\nmax_tokens = 64\n\
               [endpoints.local]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"smollm2\"\n\
               [endpoints.mock]\nprotocol = \"ollama\"\nbase_url = \"http://127.0.0.1:9\"\nmodel = \"llama3.2\"\n";
    crate::config::parse(src, crate::config::ConfigSource::BuiltIn, std::path::Path::new("/data")).unwrap()
}

fn args(endpoints: &[&str], model: Option<&str>) -> CompareArgs {
    CompareArgs {
        endpoints: endpoints.iter().map(|s| s.to_string()).collect(),
        model: model.map(str::to_string),
        system: None,
        temperature: Some(0.3),
        max_tokens: None,
        headless: true,
        json: false,
        prompt: vec!["Name".into(), "a prime.".into()],
    }
}

#[test]
fn lanes_split_at_the_first_slash_and_fall_back_to_m_then_the_endpoint() {
    let cfg = config();
    let lane = |spec: &str, m: Option<&str>| parse_lane(&cfg, spec, m);
    assert_eq!(
        lane("local/org/model:7b", None).unwrap(),
        Lane {
            endpoint: "local".into(),
            model: "org/model:7b".into()
        }
    );
    assert_eq!(lane("mock", None).unwrap().model, "llama3.2");
    assert_eq!(lane("mock", Some("qwen")).unwrap().model, "qwen");
    assert_eq!(
        lane("mock/phi", Some("qwen")).unwrap().model,
        "phi",
        "its own model wins"
    );
    let e = lane("lcoal", None).unwrap_err();
    assert!(e.contains("unknown endpoint `lcoal` — did you mean `local`?"), "{e}");
    let e = lane("local/", None).unwrap_err();
    assert!(e.contains("names no model"), "{e}");
}

#[test]
fn the_plan_takes_flags_over_defaults_and_needs_two_endpoints() {
    let cfg = config();
    let p = plan(&cfg, &args(&["local", "mock/phi"], None)).unwrap();
    assert_eq!(p.lanes.len(), 2);
    assert_eq!(p.prompt.as_deref(), Some("Name a prime."));
    assert_eq!(p.system.as_deref(), Some("Be brief."));
    assert_eq!((p.params.temperature, p.params.max_tokens), (Some(0.3), Some(64)));
    let e = plan(&cfg, &args(&["local"], None)).unwrap_err();
    assert!(e.contains("at least two endpoints"), "{e}");
}

#[test]
fn contexts_share_one_prompt_and_one_adapter_per_endpoint() {
    let cfg = config();
    let p = plan(&cfg, &args(&["local/a", "mock", "local/b"], None)).unwrap();
    let secrets = Secrets::default();
    let mut adapters = Adapters::new(&secrets);
    let c = contexts(&cfg, &mut adapters, &p, "Name a prime.").unwrap();
    let ids: Vec<(u32, u8)> = c.iter().map(|c| (c.turn.turn_id, c.turn.lane)).collect();
    assert_eq!(ids, [(1, 0), (2, 1), (3, 2)]);
    assert!(c.iter().all(|c| c.mode == TurnMode::Compare));
    assert_eq!(c[0].messages, c[1].messages);
    assert_eq!(c[0].messages[0].content, "Be brief.");
    assert_eq!(c[0].messages[1].content, "Name a prime.");
    assert!(Arc::ptr_eq(&c[0].adapter, &c[2].adapter));
    assert!(!Arc::ptr_eq(&c[0].adapter, &c[1].adapter));
}

fn stats() -> RequestStats {
    RequestStats {
        ttft_ms: Some(40),
        duration_ms: 2500,
        input_tokens: 9,
        output_tokens: 12,
        usage_reported: true,
        tokens_per_sec: Some(4.8),
        finish_reason: Some("stop".into()),
        retries: 0,
    }
}

#[test]
fn answers_print_under_headers_with_speed_and_status() {
    let mut a = crate::records::test_turn(1, "q", "Two.\n");
    a.endpoint = "local".into();
    a.stats = stats();
    let mut b = a.clone();
    b.endpoint = "mock".into();
    b.model = "llama3.2".into();
    b.response.text = "Th\x1b[1mree".into();
    b.status = TurnStatus::Failed;
    let mut c = a.clone();
    c.response.text.clear();
    let out = answers_text(&[
        TurnOutcome::Completed(a),
        TurnOutcome::Failed {
            turn: b,
            error: ProtocolError::Network { detail: "x".into() },
        },
        TurnOutcome::Completed(c),
    ]);
    assert_eq!(
        out,
        "── [1] local/smollm2 ── first token 40 ms · 4.8 tok/s · 12 tokens · 2.5 s\nTwo.\n\n\
         ── [2] mock/llama3.2 ── failed · first token 40 ms · 4.8 tok/s · 12 tokens · 2.5 s\nTh␛[1mree\n\n\
         ── [3] local/smollm2 ── first token 40 ms · 4.8 tok/s · 12 tokens · 2.5 s\n(no answer)\n"
    );
}

struct Ran {
    code: i32,
    out: String,
    err: String,
    root: tempfile::TempDir,
}

fn ctx(lane: u8, endpoint: &str, adapter: Arc<ScriptedAdapter>) -> TurnContext {
    TurnContext {
        turn: TurnRef {
            turn_id: u32::from(lane) + 1,
            lane,
        },
        endpoint: endpoint.into(),
        model: format!("m{lane}"),
        participant: None,
        mode: TurnMode::Compare,
        adapter,
        messages: vec![Message::user("Same question")],
        params: Params::default(),
        tools: vec![],
    }
}

async fn run_with(contexts: Vec<TurnContext>, json: bool, cancel: CancellationToken) -> Ran {
    let root = tempfile::tempdir().unwrap();
    let recording = Recording::start(Some(root.path()), Arc::new(Templates::builtin()), None);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = {
        let mut io = Io {
            out: &mut out,
            err: &mut err,
            err_is_tty: false,
        };
        headless(contexts, json, recording, &mut io, cancel).await
    };
    Ran {
        code,
        out: String::from_utf8(out).unwrap(),
        err: String::from_utf8(err).unwrap(),
        root,
    }
}

fn session_files(root: &tempfile::TempDir) -> Vec<String> {
    let dirs: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "one session folder: {dirs:?}");
    let mut f: Vec<String> = std::fs::read_dir(&dirs[0])
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    f.sort();
    f
}

#[tokio::test]
async fn both_answers_are_printed_in_lane_order_and_recorded_together() {
    let a = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["Seven", "."])]);
    let b = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["Eleven."])]);
    let r = run_with(
        vec![ctx(0, "left", a), ctx(1, "right", b)],
        false,
        CancellationToken::new(),
    )
    .await;
    assert_eq!((r.code, r.err.as_str()), (0, ""));
    let lines: Vec<&str> = r.out.lines().collect();
    assert!(lines[0].starts_with("── [1] left/m0 ── first token "), "{}", r.out);
    assert_eq!(lines[1], "Seven.");
    assert_eq!(lines[2], "");
    assert!(lines[3].starts_with("── [2] right/m1 ── "), "{}", r.out);
    assert_eq!(lines[4], "Eleven.");
    assert_eq!(
        session_files(&r.root),
        [
            "0001-turn.json",
            "0002-turn.json",
            "conversation.html",
            "gptwink_format.html"
        ]
    );
}

#[tokio::test]
async fn json_lists_every_answer_and_a_failure_exits_1_naming_the_lane() {
    let a = ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["Seven."])]);
    let b = ScriptedAdapter::new(vec![vec![Scripted::Error(ProtocolError::Connect {
        url: "http://right".into(),
        detail: "refused".into(),
    })]]);
    let r = run_with(
        vec![ctx(0, "left", a), ctx(1, "right", b)],
        true,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.code, EXIT_FAILED);
    assert_eq!(r.err.lines().count(), 1, "{}", r.err);
    assert!(r.err.starts_with("pai: [2] right/m1: "), "{}", r.err);
    let v: serde_json::Value = serde_json::from_str(r.out.trim()).unwrap();
    assert_eq!(v["prompt"], "Same question");
    let answers = v["answers"].as_array().unwrap();
    assert_eq!(answers.len(), 2);
    assert_eq!(
        (answers[0]["lane"].as_u64(), answers[0]["text"].as_str()),
        (Some(1), Some("Seven."))
    );
    assert_eq!(answers[0]["status"], "completed");
    assert!(answers[0]["stats"]["ttft_ms"].is_u64());
    assert_eq!(answers[1]["status"], "failed");
    assert!(answers[1]["error"].as_str().unwrap().contains("refused"));
    assert!(v["session_dir"].is_string());
}

#[tokio::test(start_paused = true)]
async fn a_cancel_keeps_and_prints_the_partial_answers_and_exits_130() {
    let slow = |w: &str| {
        vec![
            Scripted::Event(StreamEvent::Text(w.into())),
            Scripted::Pause(Duration::from_secs(60)),
            Scripted::Event(StreamEvent::Text(" never".into())),
        ]
    };
    let a = ScriptedAdapter::new(vec![slow("L")]);
    let b = ScriptedAdapter::new(vec![slow("R")]);
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        c.cancel();
    });
    let r = run_with(vec![ctx(0, "left", a), ctx(1, "right", b)], false, cancel).await;
    assert_eq!(r.code, EXIT_CANCELLED);
    assert!(
        r.out.contains("── [1] left/m0 ── cancelled · ") && r.out.contains("\nL\n"),
        "{}",
        r.out
    );
    assert!(r.out.contains("\nR\n"), "{}", r.out);
    assert!(
        r.err.starts_with("pai: cancelled; the partial answers are kept in "),
        "{}",
        r.err
    );
    assert_eq!(session_files(&r.root).len(), 4);
}
