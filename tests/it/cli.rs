//! The real binary's command line: config errors, subcommands, one-shot against
//! an in-process server, secrets kept out of records.

use std::io::Write;
use std::process::Stdio;

use polyglot::testkit::{MockResponse, MockServer, openai_text_events};

use crate::support::*;

#[test]
fn help_and_version() {
    let s = Sandbox::new();
    let o = s.run(&["--help"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for flag in [
        "--endpoint",
        "--model",
        "--system",
        "--temperature",
        "--max-tokens",
        "--json",
        "--no-log",
        "--config",
    ] {
        assert!(out.contains(flag), "--help lacks {flag}");
    }
    assert!(stdout(&s.run(&["--version"])).starts_with("pai "));
}

#[test]
fn config_error_names_file_line_column_and_fix() {
    let s = Sandbox::new();
    s.config("[defaults]\nendpoint = \"local\"\nmax_tokns = 5\n");
    let o = s.run(&["config", "check"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("polyglot.toml:3:1: unknown key `max_tokns` in [defaults]"),
        "{err}"
    );
    assert!(err.contains("did you mean `max_tokens`"), "{err}");
    // The one-shot path refuses to start half-configured too.
    let o = s.run(&["hello"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn config_check_and_endpoints_show_the_effective_setup() {
    let s = Sandbox::new();
    s.config(&format!(
        "{}\n[endpoints.cloud]\nbase_url = \"https://api.example.com/v1\"\napi_key_env = \"PAI_TEST_KEY\"\n",
        endpoint_config("lab", 1, "")
    ));
    let o = s.run(&["config", "check"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("config OK") && out.contains("polyglot.toml"), "{out}");
    assert!(out.contains("`cloud` needs PAI_TEST_KEY"), "{out}");
    let out = stdout(&s.run(&["endpoints"]));
    assert!(
        out.contains("* lab") && out.contains("cloud") && out.contains("PAI_TEST_KEY (NOT SET)"),
        "{out}"
    );
    // Built-in defaults when there is no file at all.
    let bare = Sandbox::new();
    let out = stdout(&bare.run(&["config", "check"]));
    assert!(out.contains("built-in defaults"), "{out}");
}

#[test]
fn unknown_endpoint_and_missing_prompt_are_clear_errors() {
    let s = Sandbox::new();
    s.config(&endpoint_config("lab", 1, ""));
    let o = s.run(&["-e", "lba", "hi"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown endpoint `lba` — did you mean `lab`?"),
        "{}",
        stderr(&o)
    );
    let o = s
        .pai()
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
        .wait_with_output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("prompt is empty"), "{}", stderr(&o));
}

#[test]
fn refused_connection_is_one_line_and_non_zero() {
    let s = Sandbox::new();
    s.config(&endpoint_config("dead", free_port(), "max_retries = 0\n"));
    let o = s.run(&["Say hi"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("pai: endpoint `dead`: cannot connect to") && err.contains("is the server running"),
        "{err}"
    );
    // The attempt is recorded with its error.
    let sess = s.sessions();
    assert_eq!(sess.len(), 1);
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(sess[0].join("0001-turn.json")).unwrap()).unwrap();
    assert_eq!(t["status"], "failed");
    assert_eq!(
        t["request"]["messages"].as_array().unwrap().last().unwrap()["content"],
        "Say hi"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_prompt_streams_and_records_without_leaking_the_key() {
    let server = MockServer::start(vec![MockResponse::sse(&openai_text_events(
        &["Hi", " there", "!"],
        Some((9, 3)),
    ))])
    .await
    .unwrap();
    let s = Sandbox::new();
    s.config(&format!(
        "[defaults]\nendpoint = \"mock\"\n[endpoints.mock]\nbase_url = \"{}\"\nmodel = \"m1\"\napi_key_env = \"MOCK_API_KEY\"\nheaders = {{ X-Org = \"${{MOCK_ORG}}\" }}\n",
        server.base_url()
    ));
    std::fs::write(s.path().join(".env"), "MOCK_ORG=org-secret-42\n").unwrap();
    let mut cmd = s.pai();
    cmd.env("MOCK_API_KEY", "sk-very-secret-0001")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(b"Greet me\n").unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hi there!\n");
    let req = &server.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer sk-very-secret-0001"));
    assert_eq!(req.header("x-org"), Some("org-secret-42"));
    assert_eq!(
        req.json()["messages"].as_array().unwrap().last().unwrap()["content"],
        "Greet me\n"
    );

    let sess = s.sessions();
    assert_eq!(sess.len(), 1);
    assert_eq!(
        files_in(&sess[0]),
        vec!["0001-turn.json", "conversation.html", "gptwink_format.html"]
    );
    for f in files_in(&sess[0]) {
        let body = std::fs::read_to_string(sess[0].join(&f)).unwrap();
        assert!(
            !body.contains("sk-very-secret-0001") && !body.contains("org-secret-42"),
            "secret in {f}"
        );
    }
}

#[test]
fn completions_are_generated() {
    let s = Sandbox::new();
    let o = s.run(&["completions", "bash"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("_pai"));
}
