//! `pai sessions …` on the real binary: one-shot runs against an in-process
//! server land in the history database; list, show, search and export read it.

use polyglot::testkit::{MockResponse, MockServer, openai_text_events};

use crate::support::*;

/// A sandbox whose config points at `server`, after one one-shot run per prompt.
async fn sandbox_with_runs(server: &MockServer, prompts: &[&str]) -> Sandbox {
    let s = Sandbox::new();
    s.config(&format!(
        "[defaults]\nendpoint = \"mock\"\nsystem = \"Be brief.\"\n[endpoints.mock]\nbase_url = \"{}\"\nmodel = \"m1\"\n",
        server.base_url()
    ));
    for p in prompts {
        let mut cmd = s.pai();
        cmd.arg(p);
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stderr(&out), "", "a one-shot run with history is quiet");
    }
    s
}

fn answers() -> Vec<MockResponse> {
    [
        vec!["TCP slow start ", "doubles the congestion window."],
        vec!["Le café ", "est une boisson."],
        vec!["Bananas are ", "yellow."],
    ]
    .iter()
    .map(|tokens| MockResponse::sse(&openai_text_events(tokens, Some((9, 5)))))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shot_runs_are_listed_searched_shown_and_exported() {
    let server = MockServer::start(answers()).await.unwrap();
    let s = sandbox_with_runs(
        &server,
        &["Explain slow start", "Qu'est-ce que le café ?", "Colour of bananas?"],
    )
    .await;
    assert!(s.path().join("xdg-data/polyglot/history.db").is_file());

    // list: newest first, aligned columns, one line per session.
    let o = s.run(&["sessions", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<String> = out.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("TURNS") && lines[0].ends_with("TITLE"),
        "{out}"
    );
    assert!(
        lines[1].ends_with("Colour of bananas?") && lines[3].ends_with("Explain slow start"),
        "{out}"
    );
    // Titles start in the TITLE column (counted in characters: `·` is one).
    let col = lines[0].chars().count() - "TITLE".len();
    for l in &lines[1..] {
        let c: Vec<char> = l.chars().collect();
        assert!(c[col - 1] == ' ' && c[col] != ' ', "{out}");
    }
    assert!(lines[1].contains("mock · m1"), "{out}");

    // search: the word from an answer, with a highlighted snippet.
    let o = s.run(&["sessions", "search", "congestion"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.contains("#1 · ") && out.contains("Explain slow start"), "{out}");
    assert!(out.contains("doubles the **congestion** window"), "{out}");
    // Diacritics, prefixes and stray syntax.
    assert!(stdout(&s.run(&["sessions", "search", "cafe"])).contains("**café**"));
    assert!(
        stdout(&s.run(&["sessions", "search", "banan*"]))
            .to_lowercase()
            .contains("**bananas**")
    );
    let o = s.run(&["sessions", "search", "\"slow", "AND", "(start"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = s.run(&["sessions", "search", "kiwi"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no prompt or answer matches `kiwi`"),
        "{}",
        stderr(&o)
    );
    let o = s.run(&["sessions", "search", "(", ")"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nothing to search for"), "{}", stderr(&o));

    // show: by a prefix of the id, the transcript.
    // (Runs within one second sort by their random part: take the id from the list.)
    let id = lines[3].split_whitespace().next().unwrap().to_string();
    let o = s.run(&["sessions", "show", &id[..id.len() - 2]]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with(&format!("Session {id} — Explain slow start\n")),
        "{out}"
    );
    assert!(out.contains("  system  Be brief.\n"), "{out}");
    assert!(out.contains("── #1 You · "), "{out}");
    assert!(out.contains("\nExplain slow start\n"), "{out}");
    assert!(out.contains("── #1 m1 @ mock · completed"), "{out}");
    assert!(
        out.contains("\nTCP slow start doubles the congestion window.\n"),
        "{out}"
    );
    // The random part of the id works too.
    let random = id.rsplit('-').next().unwrap();
    assert!(s.run(&["sessions", "show", random]).status.success());

    // export: readable Markdown to stdout, or a file.
    let o = s.run(&["sessions", "export", &id, "--format", "md"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = stdout(&o);
    assert!(md.starts_with("# pai — Explain slow start\n"), "{md}");
    assert!(md.contains("## You\n\nExplain slow start\n"), "{md}");
    assert!(
        md.contains("## m1 (mock)\n\nTCP slow start doubles the congestion window."),
        "{md}"
    );
    let file = s.path().join("out/export.html");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let o = s.run(&["sessions", "export", &id, "-f", "html", "-o", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("wrote "), "{}", stderr(&o));
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(html.contains("congestion window") && html.contains("<html"), "{html}");
    let o = s.run(&["sessions", "export", &id, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["session"], id.as_str());
    assert_eq!(
        v["turns"][0]["response"]["text"],
        "TCP slow start doubles the congestion window."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_ids_and_missing_history_are_clear_errors() {
    let s = Sandbox::new();
    let o = s.run(&["sessions", "list"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no history yet"), "{}", stderr(&o));

    let server = MockServer::start(answers()).await.unwrap();
    let s = sandbox_with_runs(&server, &["one", "two"]).await;
    let ids: Vec<String> = s
        .sessions()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    // A typo in the random part: the close matches are listed.
    let mut typo = ids[0].clone();
    typo.pop();
    typo.push('!');
    let o = s.run(&["sessions", "show", &typo]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("pai: no session matches `{typo}` — did you mean")),
        "{err}"
    );
    assert!(err.contains(&ids[0]), "{err}");
    // Both sessions share the date: a prefix that fits both is ambiguous.
    let o = s.run(&["sessions", "export", &ids[0][..4], "-f", "md"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("matches 2 sessions") && stderr(&o).contains("type more of the id"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_history_database_never_stops_pai_and_can_be_recovered() {
    let server = MockServer::start(answers()).await.unwrap();
    let s = sandbox_with_runs(&server, &["Explain slow start"]).await;
    let db = s.path().join("xdg-data/polyglot/history.db");
    std::fs::write(&db, b"garbage".repeat(1000)).unwrap();
    // A one-shot run still answers and records its folder; history is off, said once.
    let mut cmd = s.pai();
    cmd.arg("Colour of bananas?");
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("is damaged") && err.contains("pai sessions recover"),
        "{err}"
    );
    assert_eq!(s.sessions().len(), 2);
    let o = s.run(&["sessions", "list"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is damaged"), "{}", stderr(&o));

    // recover keeps the old file; import rebuilds history from the folders.
    let o = s.run(&["sessions", "recover"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("moved the damaged database to"), "{}", stdout(&o));
    let kept: Vec<_> = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("history.db.damaged-"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let o = s.run(&["sessions", "import"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("imported 2 session(s), 2 turn(s)"),
        "{}",
        stdout(&o)
    );
    // (The second run got the server's second answer.)
    let out = stdout(&s.run(&["sessions", "search", "boisson"]));
    assert!(out.contains("Colour of bananas?"), "{out}");
    // Importing again changes nothing.
    s.run(&["sessions", "import"]);
    assert_eq!(stdout(&s.run(&["sessions", "list"])).lines().count(), 3);
}
