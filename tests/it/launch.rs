//! Managed local endpoints: `launch` starts a server on first use, waits for
//! it, stops it on exit; a running server is reused untouched; failures and
//! slow starts say what happened. And the shipped `pai-local-llm` launcher
//! serving the REAL SmolLM2.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_openai_server.py");

fn answers(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

fn fake_config(port: u16, extra_args: &str, extra_keys: &str) -> String {
    format!(
        "[defaults]\nendpoint = \"fake\"\n[endpoints.fake]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"fake-model\"\nlaunch = [\"python3\", \"{FAKE}\", \"--port\", \"{port}\"{extra_args}]\n{extra_keys}"
    )
}

fn log(s: &Sandbox) -> String {
    std::fs::read_to_string(s.path().join("xdg-data/polyglot/launch-fake.log")).unwrap_or_default()
}

#[test]
fn a_launch_endpoint_is_started_on_first_use_and_stopped_on_exit() {
    let port = free_port();
    let s = Sandbox::new();
    s.config(&fake_config(port, ", \"--delay\", \"1\"", ""));
    let o = s.run(&["--no-log", "hi"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "hello from the launched server\n",
        "progress must not reach stdout"
    );
    assert!(log(&s).contains("fake server: listening"), "{}", log(&s));
    // Stopped on exit (give the kernel a moment to close the socket).
    let end = Instant::now() + Duration::from_secs(5);
    while answers(port) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!answers(port), "the launched server outlived pai");
}

#[test]
fn a_server_that_already_answers_is_used_and_left_alone() {
    let port = free_port();
    let mut running = Command::new("python3")
        .args([FAKE, "--port", &port.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while !answers(port) {
        assert!(Instant::now() < end, "the fake server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let s = Sandbox::new();
    s.config(&fake_config(port, "", ""));
    let o = s.run(&["--no-log", "hi"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o), "hello from the launched server\n");
    assert!(log(&s).is_empty(), "pai launched a second server: {}", log(&s));
    assert!(answers(port), "pai stopped a server it did not start");
    let _ = running.kill();
    let _ = running.wait();
}

#[test]
fn a_failing_launch_command_is_one_clear_line() {
    let port = free_port();
    let s = Sandbox::new();
    s.config(&fake_config(port, ", \"--fail\"", ""));
    let o = s.run(&["--no-log", "hi"]);
    assert_eq!(o.status.code(), Some(1), "stdout: {}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("exited") && err.contains("cannot load the model"), "{err}");
    assert!(err.contains("launch-fake.log"), "the log is named: {err}");
}

#[test]
fn a_slow_launch_times_out_with_a_hint_and_is_stopped() {
    let port = free_port();
    let s = Sandbox::new();
    s.config(&fake_config(port, ", \"--delay\", \"60\"", "launch_timeout_s = 1.5\n"));
    let started = Instant::now();
    let o = s.run(&["--no-log", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("launch_timeout_s"), "{}", stderr(&o));
    assert!(started.elapsed() < Duration::from_secs(30));
    // The slow child was killed: nothing is left holding the port.
    std::thread::sleep(Duration::from_millis(300));
    let out = Command::new("pgrep")
        .args(["-f", &format!("--port {port}")])
        .output()
        .unwrap();
    assert!(
        out.stdout.is_empty(),
        "the slow server still runs: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The shipped launcher with the real model (installed by lab/setup-local-llm.sh
/// into the shared cache, so this starts in seconds).
#[test]
fn the_builtin_local_llm_launcher_answers_offline() {
    if lab_llm_port("the_builtin_local_llm_launcher_answers_offline").is_none() {
        return;
    }
    let port = free_port();
    let s = Sandbox::new();
    // The shipped polyglot.toml as it is, on a free port instead of 8080.
    let shipped = include_str!("../../polyglot.toml");
    assert!(shipped.contains("launch = [\"pai-local-llm\", \"--port\", \"8080\"]"));
    s.config(
        &shipped
            .replace("8080", &port.to_string())
            .replace("max_tokens = 1024", "max_tokens = 16"),
    );
    let mut cmd = s.pai();
    // The sandbox moves HOME; point the launcher at the real shared install.
    let cache = std::env::var_os("COUNTERPARTS_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/pai-lab"));
    cmd.env("COUNTERPARTS_HOME", &cache);
    let o = cmd.args(["Say hi"]).output().unwrap();
    assert!(
        o.status.success(),
        "stderr: {}\nlog: {}",
        stderr(&o),
        std::fs::read_to_string(s.path().join("xdg-data/polyglot/launch-local.log")).unwrap_or_default()
    );
    assert!(!stdout(&o).trim().is_empty());
    let t: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.sessions()[0].join("0001-turn.json")).unwrap()).unwrap();
    assert_eq!(t["status"], "completed");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!answers(port), "the built-in server outlived pai");
}
