//! One-shot front end: stdout text, JSON, exit codes, records, untrusted output.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::protocols::{ProtocolError, StreamEvent};
use crate::stats::Usage;
use crate::testkit::{Scripted, ScriptedAdapter};

fn job(dir: Option<PathBuf>, json: bool) -> OneShot {
    OneShot {
        endpoint: "ep".into(),
        model: "m".into(),
        system: Some("sys".into()),
        params: Params::default(),
        prompt: "the prompt".into(),
        json,
        sessions_dir: dir,
        templates: Arc::new(Templates::builtin()),
        agent: None,
        history_db: None,
        resume: None,
    }
}

async fn run_with(job: OneShot, script: Vec<Scripted>, cancel: CancellationToken) -> (i32, String, String) {
    let adapter = ScriptedAdapter::new(vec![script]);
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = {
        let mut io = Io {
            out: &mut out,
            err: &mut err,
            err_is_tty: false,
        };
        run(job, adapter, &mut io, cancel).await
    };
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

fn session_turn(root: &std::path::Path) -> serde_json::Value {
    let dir = std::fs::read_dir(root).unwrap().next().unwrap().unwrap().path();
    serde_json::from_slice(&std::fs::read(dir.join("0001-turn.json")).unwrap()).unwrap()
}

#[tokio::test]
async fn plain_text_goes_to_stdout_with_a_final_newline_and_is_recorded() {
    let root = tempfile::tempdir().unwrap();
    let (code, out, err) = run_with(
        job(Some(root.path().into()), false),
        ScriptedAdapter::text_script(&["Hello", ", ", "world"]),
        CancellationToken::new(),
    )
    .await;
    assert_eq!((code, out.as_str(), err.as_str()), (0, "Hello, world\n", ""));
    let t = session_turn(root.path());
    assert_eq!(t["response"]["text"], "Hello, world");
    assert_eq!(t["request"]["messages"][0]["content"], "sys");
    assert_eq!(t["request"]["messages"][1]["content"], "the prompt");
}

#[tokio::test]
async fn json_mode_prints_one_object_with_stats() {
    let root = tempfile::tempdir().unwrap();
    let mut script = ScriptedAdapter::text_script(&["4"]);
    script.insert(0, Scripted::Event(StreamEvent::Reasoning("2+2".into())));
    script.push(Scripted::Event(StreamEvent::Usage(Usage {
        input_tokens: 5,
        output_tokens: 1,
    })));
    let (code, out, _) = run_with(job(Some(root.path().into()), true), script, CancellationToken::new()).await;
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["text"], "4");
    assert_eq!(v["reasoning"], "2+2");
    assert_eq!(v["finish_reason"], "stop");
    assert_eq!((v["endpoint"].as_str(), v["model"].as_str()), (Some("ep"), Some("m")));
    for k in [
        "ttft_ms",
        "duration_ms",
        "input_tokens",
        "output_tokens",
        "tokens_per_sec",
    ] {
        assert!(v["stats"].get(k).is_some(), "stats.{k}");
    }
    assert_eq!(v["stats"]["output_tokens"], 1);
    assert!(
        v["session_dir"]
            .as_str()
            .unwrap()
            .starts_with(root.path().to_str().unwrap())
    );
}

#[tokio::test]
async fn failure_mid_stream_keeps_partial_text_prints_one_line_and_exits_non_zero() {
    let root = tempfile::tempdir().unwrap();
    let (code, out, err) = run_with(
        job(Some(root.path().into()), false),
        vec![
            Scripted::Event(StreamEvent::Text("partial".into())),
            Scripted::Error(ProtocolError::Network {
                detail: "connection reset".into(),
            }),
        ],
        CancellationToken::new(),
    )
    .await;
    assert_eq!(code, EXIT_FAILED);
    assert_eq!(out, "partial\n");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("pai: endpoint `ep`: connection lost mid-answer (connection reset)"),
        "{err}"
    );
    let t = session_turn(root.path());
    assert_eq!(t["status"], "failed");
    assert_eq!(t["response"]["text"], "partial");
    assert!(t["response"]["error"].as_str().unwrap().contains("connection reset"));
}

#[tokio::test(start_paused = true)]
async fn cancel_keeps_the_partial_answer_and_exits_130() {
    let root = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        c.cancel();
    });
    let (code, out, err) = run_with(
        job(Some(root.path().into()), false),
        vec![
            Scripted::Event(StreamEvent::Text("so far".into())),
            Scripted::Pause(Duration::from_secs(30)),
            Scripted::Event(StreamEvent::Text("never".into())),
        ],
        cancel,
    )
    .await;
    assert_eq!(code, EXIT_CANCELLED);
    assert_eq!(out, "so far\n");
    assert!(
        err.starts_with("pai: cancelled; the partial answer is kept in"),
        "{err}"
    );
    let t = session_turn(root.path());
    assert_eq!(t["status"], "cancelled");
    assert_eq!(t["response"]["text"], "so far");
    assert_eq!(t["response"]["finish_reason"], "cancelled");
}

#[tokio::test]
async fn no_log_writes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let (code, _, _) = run_with(
        job(None, false),
        ScriptedAdapter::text_script(&["x"]),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(code, 0);
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn escape_sequences_from_the_model_never_reach_stdout_raw() {
    let (code, out, _) = run_with(
        job(None, false),
        ScriptedAdapter::text_script(&["safe\x1b]52;c;cm0gLXJmIH4=\x07", "\x1b[2J\rdone\u{9b}0m"]),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(code, 0);
    assert!(
        !out.contains('\x1b') && !out.contains('\x07') && !out.contains('\r') && !out.contains('\u{9b}'),
        "{out:?}"
    );
    assert!(out.contains("safe␛]52;c;") && out.contains("done"), "{out:?}");
}

/// A writer that fails like a closed pipe after the first write.
struct ClosedPipe(usize);

impl Write for ClosedPipe {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += 1;
        if self.0 > 1 {
            Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        } else {
            Ok(b.len())
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_closed_stdout_cancels_the_request_quietly() {
    let adapter = ScriptedAdapter::new(vec![vec![
        Scripted::Event(StreamEvent::Text("one".into())),
        Scripted::Pause(Duration::from_millis(10)),
        Scripted::Event(StreamEvent::Text("two".into())),
        Scripted::Pause(Duration::from_secs(3600)),
        Scripted::Event(StreamEvent::Text("three".into())),
    ]]);
    let mut out = ClosedPipe(0);
    let mut err = Vec::new();
    let mut io = Io {
        out: &mut out,
        err: &mut err,
        err_is_tty: false,
    };
    let code = run(job(None, false), adapter, &mut io, CancellationToken::new()).await;
    assert_eq!(code, EXIT_OK);
    assert!(err.is_empty(), "{}", String::from_utf8_lossy(&err));
}

#[tokio::test]
async fn the_turn_goes_into_the_history_database_next_to_the_folder() {
    let root = tempfile::tempdir().unwrap();
    let db = root.path().join("data/history.db");
    let mut j = job(Some(root.path().join("sessions")), true);
    j.history_db = Some(db.clone());
    let (code, out, err) = run_with(
        j,
        ScriptedAdapter::text_script(&["Paris is ", "the capital."]),
        CancellationToken::new(),
    )
    .await;
    assert_eq!((code, err.as_str()), (0, ""));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let id = v["session_id"].as_str().unwrap().to_string();
    assert!(v["session_dir"].as_str().unwrap().ends_with(&id));
    let store = crate::store::Store::open(&db).unwrap();
    let hits = store.search("capital", 5).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session_id, id);
    let d = store.session(&id).unwrap().unwrap();
    assert_eq!(d.system.as_deref(), Some("sys"));
    assert_eq!(d.summary.title, "the prompt");
    assert_eq!(
        d.summary.folder.as_deref().and_then(|f| f.to_str()),
        v["session_dir"].as_str()
    );
    let r = store.restore(&id).unwrap().unwrap();
    assert_eq!(r.messages.len(), 2);
}

#[tokio::test]
async fn a_damaged_history_database_is_a_warning_not_a_failure() {
    let root = tempfile::tempdir().unwrap();
    let db = root.path().join("history.db");
    std::fs::write(&db, vec![b'x'; 8192]).unwrap();
    let mut j = job(Some(root.path().join("sessions")), false);
    j.history_db = Some(db.clone());
    let (code, out, err) = run_with(j, ScriptedAdapter::text_script(&["fine"]), CancellationToken::new()).await;
    assert_eq!((code, out.as_str()), (0, "fine\n"));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("pai: history is off: history database") && err.contains("is damaged"),
        "{err}"
    );
    assert!(err.contains("pai sessions recover"), "{err}");
    // The session folder is still written.
    session_turn(&root.path().join("sessions"));
}
