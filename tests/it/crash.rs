//! Crash safety and resume, with the real binary: `kill -9` while an answer
//! streams (one-shot and TUI) leaves the session folder and the history
//! database valid, with the partial turn kept; `pai resume ID PROMPT` and
//! `pai resume ID` (TUI) continue a recorded conversation in the same session.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use polyglot::testkit::{MockResponse, MockServer, openai_text_events};

use crate::support::*;
use crate::tmux::Tmux;
use crate::tui_e2e::{pai_cmd, slow_events, tmux_or_skip};

const T: Duration = Duration::from_secs(60);

fn config(s: &Sandbox, server: &MockServer) {
    s.config(&format!(
        "[defaults]\nendpoint = \"mock\"\nsmooth = false\n[endpoints.mock]\nbase_url = \"{}\"\nmodel = \"m1\"\n",
        server.base_url()
    ));
}

fn turn(dir: &std::path::Path, n: u32) -> serde_json::Value {
    let p = dir.join(format!("{n:04}-turn.json"));
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The folder and the database after a kill: valid, with the partial turn.
fn assert_partial_turn_kept(s: &Sandbox) {
    let sessions = s.sessions();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let dir = &sessions[0];
    let t = turn(dir, 1);
    assert_eq!(t["status"], "cancelled", "{t}");
    assert!(
        t["response"]["error"].as_str().unwrap().starts_with("interrupted"),
        "{t}"
    );
    let text = t["response"]["text"].as_str().unwrap();
    assert!(text.starts_with("n1 n2 "), "the words that arrived: {text:?}");
    let html = std::fs::read_to_string(dir.join("conversation.html")).unwrap();
    assert!(html.contains("n1 n2") && html.trim_end().ends_with("</html>"), "{html}");
    assert!(
        std::fs::read_to_string(dir.join("gptwink_format.html"))
            .unwrap()
            .contains("n1 n2")
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".json") && !n.ends_with(".html"))
        .collect();
    assert!(leftovers.is_empty(), "half-written files: {leftovers:?}");
    // The history: the turn is there, marked, and the database is sound.
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let o = s.run(&["sessions", "show", &id]);
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = stdout(&o);
    assert!(shown.contains("n1 n2"), "{shown}");
    assert!(shown.contains("interrupted"), "{shown}");
    let o = s.run(&["sessions", "list"]);
    assert!(o.status.success() && stderr(&o).is_empty(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_one_shot_stream_keeps_the_partial_turn() {
    let server = MockServer::start(vec![slow_events()]).await.unwrap();
    let s = Sandbox::new();
    config(&s, &server);
    let mut cmd = s.pai();
    cmd.arg("Count slowly").stdout(Stdio::piped());
    let got = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let mut out = child.stdout.take().unwrap();
        let mut seen = String::new();
        let mut buf = [0u8; 256];
        // At least two seconds of streaming: a checkpoint after the first.
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(2600) {
            let n = out.read(&mut buf).unwrap();
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        seen
    })
    .await
    .unwrap();
    assert!(got.starts_with("n1 n2 "), "{got}");
    assert_partial_turn_kept(&s);
}

/// The pid of the `pai` running in `dir` (the TUI under tmux).
fn pai_pid_in(dir: &std::path::Path) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.find_map(|e| {
        let e = e.ok()?;
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let exe = std::fs::read_link(e.path().join("exe")).ok()?;
        let cwd = std::fs::read_link(e.path().join("cwd")).ok()?;
        (exe.file_name()? == "pai" && cwd == dir).then_some(pid)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_tui_stream_keeps_the_partial_turn() {
    if !tmux_or_skip("kill_9_during_a_tui_stream_keeps_the_partial_turn") {
        return;
    }
    let server = MockServer::start(vec![slow_events()]).await.unwrap();
    let s = Sandbox::new();
    config(&s, &server);
    let cmd = pai_cmd(&s);
    let dir = s.path().canonicalize().unwrap();
    tokio::task::spawn_blocking(move || {
        let t = Tmux::start(&cmd, 100, 30).expect("tmux session");
        t.wait_for("the welcome screen", T, |s| s.contains("pai — Polyglot AI"));
        t.type_text("Count slowly");
        t.key("Enter");
        t.wait_for("a few words", T, |s| s.contains("n40 "));
        let pid = pai_pid_in(&dir).expect("the pai process");
        assert!(
            std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .unwrap()
                .success()
        );
        // Raw mode is left on by the kill: the shell's line may wrap anywhere.
        t.wait_for_in("pai to be gone", T, true, |s| {
            s.replace('\n', "").contains("PAI-EXIT=137")
        });
    })
    .await
    .unwrap();
    assert_partial_turn_kept(&s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_continues_a_recorded_session_on_the_command_line_and_in_the_tui() {
    let answers = vec![
        MockResponse::sse(&openai_text_events(
            &["WAL lets readers ", "and a writer work at once."],
            Some((9, 7)),
        )),
        MockResponse::sse(&openai_text_events(
            &["Yes, ", "checkpoints fold it back."],
            Some((20, 5)),
        )),
        MockResponse::sse(&openai_text_events(&["Third ", "answer."], Some((30, 2)))),
    ];
    let server = MockServer::start(answers).await.unwrap();
    let s = Sandbox::new();
    s.config(&format!(
        "[defaults]\nendpoint = \"mock\"\nsmooth = false\nsystem = \"Be brief.\"\n[endpoints.mock]\nbase_url = \"{}\"\nmodel = \"m1\"\n[endpoints.other]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m2\"\n",
        server.base_url()
    ));
    let o = s.run(&["What is WAL?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = s.sessions()[0].clone();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    // One more turn from the command line, by a unique part of the id.
    let short = id.rsplit('-').next().unwrap().to_string();
    let o = s.run(&["resume", &short, "Does it grow forever?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "Yes, checkpoints fold it back.");
    assert_eq!(s.sessions().len(), 1, "the same session folder");
    let t2 = turn(&dir, 2);
    let msgs = t2["request"]["messages"].as_array().unwrap();
    let texts: Vec<&str> = msgs.iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(
        texts,
        [
            "Be brief.",
            "What is WAL?",
            "WAL lets readers and a writer work at once.",
            "Does it grow forever?"
        ]
    );
    let html = std::fs::read_to_string(dir.join("conversation.html")).unwrap();
    assert!(
        html.contains("What is WAL?") && html.contains("Does it grow forever?"),
        "both turns in the HTML"
    );
    let o = s.run(&["sessions", "show", &id]);
    assert!(stdout(&o).contains("Does it grow forever?"), "{}", stdout(&o));
    let o = s.run(&["resume", "nope-not-a-session", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("nope-not-a-session"), "{}", stderr(&o));

    if !tmux_or_skip("resume_continues_a_recorded_session_on_the_command_line_and_in_the_tui") {
        return;
    }
    let cmd = pai_cmd(&s).replace(BIN, &format!("{BIN} resume {id}"));
    tokio::task::spawn_blocking(move || {
        let t = Tmux::start(&cmd, 100, 30).expect("tmux session");
        let screen = t.wait_for("the resumed conversation", T, |s| s.contains("Resumed session"));
        assert!(
            screen.contains("What is WAL?") && screen.contains("checkpoints fold it back"),
            "{screen}"
        );
        assert!(screen.contains("mock · m1"), "{screen}");
        t.type_text("And then?");
        t.key("Enter");
        t.wait_for("the third answer", T, |s| {
            s.contains("Third answer.") && s.contains("Idle")
        });
        t.key("C-d");
        t.wait_for_in("pai to exit", T, true, |s| s.contains("PAI-EXIT=0"));
    })
    .await
    .unwrap();
    let t3 = turn(&dir, 3);
    assert_eq!(t3["request"]["messages"].as_array().unwrap().len(), 6);
    assert_eq!(s.sessions().len(), 1);
}
