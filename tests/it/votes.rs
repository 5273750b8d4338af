//! `pai votes …` and `pai leaderboard` on the real binary, reading a history
//! database filled through the store's own API.

use std::path::PathBuf;

use polyglot::conversation::{Message, TurnMode};
use polyglot::store::{Store, Vote, VoteChoice, VoteSide};
use serde_json::Value;

use crate::support::*;

fn side(model: &str, answer: &str) -> VoteSide {
    VoteSide {
        endpoint: "local".into(),
        model: model.into(),
        name: None,
        turn_id: Some(1),
        answer: answer.into(),
    }
}

/// A vote by `voter` on `left` vs `right` (models), answers named after them.
fn vote(voter: &str, left: &str, right: &str, choice: VoteChoice, question: &str) -> Vote {
    Vote {
        created_at: "2026-03-04T05:06:07Z".into(),
        session_id: None,
        mode: if voter == "user" {
            TurnMode::Compare
        } else {
            TurnMode::Judge
        },
        voter: voter.into(),
        prompt: vec![Message::system("Be brief."), Message::user(question)],
        left: side(left, &format!("{left} answers {question}")),
        right: side(right, &format!("{right} answers {question}")),
        choice,
        note: None,
    }
}

/// `n` votes of the same kind, with numbered questions.
fn many(n: usize, voter: &str, left: &str, right: &str, choice: VoteChoice) -> Vec<Vote> {
    (0..n)
        .map(|i| vote(voter, left, right, choice, &format!("q{i}")))
        .collect()
}

/// A sandbox with a history database holding `votes` (in order).
fn history(votes: &[Vote]) -> (Sandbox, PathBuf) {
    let s = Sandbox::new();
    let db = s.path().join("history.db");
    let mut store = Store::open(&db).unwrap();
    for v in votes {
        store.insert_vote(v).unwrap();
    }
    drop(store);
    (s, db)
}

fn run(s: &Sandbox, args: &[&str], db: &std::path::Path) -> std::process::Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--db", db.to_str().unwrap()]);
    s.run(&all)
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn export_writes_preference_pairs_trl_can_load() {
    let (s, db) = history(&[
        vote("user", "alpha", "beta", VoteChoice::Left, "Capital of France?"),
        vote("user", "beta", "gamma", VoteChoice::Right, "2+2?"),
        vote("judge:qwen · local", "alpha", "gamma", VoteChoice::Left, "Haiku please"),
        vote("user", "alpha", "beta", VoteChoice::Tie, "Hello"),
        vote("user", "alpha", "gamma", VoteChoice::BothBad, "Riddle"),
    ]);
    let o = run(&s, &["votes", "export", "--format", "dpo-jsonl"], &db);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = json_lines(&stdout(&o));
    assert_eq!(rows.len(), 3, "{}", stdout(&o));
    // TRL's conversational preference format: lists of {role, content}.
    assert_eq!(
        rows[0]["prompt"],
        serde_json::json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Capital of France?"}
        ])
    );
    assert_eq!(
        rows[0]["chosen"],
        serde_json::json!([{"role": "assistant", "content": "alpha answers Capital of France?"}])
    );
    assert_eq!(
        rows[0]["rejected"],
        serde_json::json!([{"role": "assistant", "content": "beta answers Capital of France?"}])
    );
    assert_eq!(rows[0]["chosen_model"], "alpha");
    assert_eq!(rows[0]["rejected_endpoint"], "local");
    assert_eq!(rows[0]["voter"], "user");
    assert_eq!(rows[0]["created_at"], "2026-03-04T05:06:07Z");
    assert!(rows[0]["session_id"].is_null());
    // A right pick: the right answer is the chosen one.
    assert_eq!(rows[1]["chosen"][0]["content"], "gamma answers 2+2?");
    assert_eq!(rows[1]["rejected_model"], "beta");
    assert_eq!(rows[2]["voter"], "judge:qwen · local");
    // Same columns on every line (one Arrow schema).
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert!(rows.iter().all(|r| keys(r) == keys(&rows[0])));
    // The skipped votes are counted on stderr, in one line.
    let err = stderr(&o);
    assert_eq!(
        err,
        "exported 3 preference pair(s); skipped 1 tie(s) and 1 both-bad vote(s) (no winner)\n"
    );

    // Only the judges' votes; to a file.
    let file = s.path().join("out/judged.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let o = run(
        &s,
        &["votes", "export", "--voter", "judge", "-o", file.to_str().unwrap()],
        &db,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert!(
        stderr(&o).starts_with("exported 1 preference pair(s) to "),
        "{}",
        stderr(&o)
    );
    let rows = json_lines(&std::fs::read_to_string(&file).unwrap());
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["chosen_model"], "alpha");
    assert_eq!(rows[0]["rejected_model"], "gamma");
    assert_eq!(
        files_in(file.parent().unwrap()),
        vec!["judged.jsonl"],
        "no temp file left"
    );

    // A folder that is not there: one clear line.
    let o = run(&s, &["votes", "export", "-o", "missing/dir/x.jsonl"], &db);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("pai: cannot write missing/dir/x.jsonl: "), "{err}");
}

#[test]
fn list_shows_votes_newest_first() {
    let mut votes = vec![vote("user", "alpha", "beta", VoteChoice::Left, "first question")];
    votes.push(vote(
        "judge:qwen · local",
        "beta",
        "gamma",
        VoteChoice::BothBad,
        "second\nquestion",
    ));
    votes.push(vote("user", "gamma", "alpha", VoteChoice::Tie, "third question"));
    let (s, db) = history(&votes);
    let o = run(&s, &["votes", "list"], &db);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines[0].starts_with("WHEN") && lines[0].ends_with("PROMPT"), "{out}");
    assert!(lines[1].contains("user") && lines[1].contains("gamma · local"), "{out}");
    assert!(
        lines[1].contains("tie") && lines[1].ends_with("third question"),
        "{out}"
    );
    assert!(
        lines[2].contains("judge:qwen · local") && lines[2].contains("both bad"),
        "{out}"
    );
    assert!(lines[2].ends_with("second question"), "{out}");
    assert!(
        lines[3].starts_with("2026-03-04 05:06") && lines[3].contains("left"),
        "{out}"
    );
    // Columns line up: the prompt starts in the PROMPT column.
    let col = lines[0].chars().count() - "PROMPT".len();
    for l in &lines[1..] {
        let c: Vec<char> = l.chars().collect();
        assert!(c[col - 1] == ' ' && c[col] != ' ', "{out}");
    }
    let o = run(&s, &["votes", "list", "-n", "1", "--voter", "user"], &db);
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(out.contains("third question") && out.ends_with("(1 of 2 votes, newest first; -n 0 shows all)\n"));
}

/// alpha > beta > gamma, with ties, both-bad and a self-vote.
fn field() -> Vec<Vote> {
    let mut v = Vec::new();
    v.extend(many(6, "user", "alpha", "beta", VoteChoice::Left));
    v.extend(many(2, "user", "alpha", "beta", VoteChoice::Right));
    v.extend(many(5, "user", "beta", "gamma", VoteChoice::Left));
    v.extend(many(1, "user", "gamma", "beta", VoteChoice::Left));
    v.extend(many(4, "judge:qwen · local", "gamma", "alpha", VoteChoice::Right));
    v.extend(many(2, "user", "alpha", "gamma", VoteChoice::Tie));
    v.extend(many(1, "user", "beta", "gamma", VoteChoice::BothBad));
    v.extend(many(1, "user", "alpha", "alpha", VoteChoice::Left));
    v
}

#[test]
fn leaderboard_ranks_models_with_counts_and_intervals() {
    let (s, db) = history(&field());
    let o = run(&s, &["leaderboard"], &db);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["RANK", "MODEL", "RATING", "95%", "CI", "MATCHES", "W-T-L"],
        "{out}"
    );
    // RANK, then the model as three words (`alpha · local`), then RATING, CI, MATCHES, W-T-L.
    let cells = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    // alpha: 6+4 wins, 2 ties, 2 losses; beta: 2+5 W, 1 T, 6+1 L; gamma: 1 W, 3 T, 9 L.
    assert_eq!(cells(lines[1])[..2], ["1", "alpha"], "{out}");
    assert_eq!(cells(lines[1])[6..], ["14", "10-2-2"], "{out}");
    assert_eq!(cells(lines[2])[1], "beta", "{out}");
    assert_eq!(cells(lines[2])[6..], ["15", "7-1-7"], "{out}");
    assert_eq!(cells(lines[3])[1], "gamma", "{out}");
    assert_eq!(cells(lines[3])[6..], ["13", "1-3-9"], "{out}");
    let ci = &cells(lines[1])[5];
    assert!(ci.starts_with('+') && ci.contains("/-"), "{out}");
    // Numbers right-aligned: the ratings end in one column.
    let end = lines[0].find("RATING").unwrap() + "RATING".len();
    assert!(
        lines[1..4].iter().all(|l| l.as_bytes()[end - 1].is_ascii_digit()),
        "{out}"
    );
    assert!(
        out.contains("21 vote(s) by anyone, 2 tie(s) and 1 both-bad counted as half a win each way."),
        "{out}"
    );
    assert!(out.contains("Left out: 1 vote(s) between a model and itself."), "{out}");
    assert!(!out.contains("GROUP"), "{out}");

    // --json: the same, machine-readable.
    let o = run(&s, &["leaderboard", "--json"], &db);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["voter"], "all");
    assert_eq!(v["votes"], 21);
    assert_eq!((v["ties"].as_u64(), v["both_bad"].as_u64()), (Some(2), Some(1)));
    assert_eq!(v["self_votes_left_out"], 1);
    assert_eq!(v["groups"], 1);
    assert_eq!(v["method"]["resamples"], 200);
    let models = v["models"].as_array().unwrap();
    let ids: Vec<&str> = models.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["alpha · local", "beta · local", "gamma · local"]);
    let m = &models[0];
    assert_eq!(
        (m["rank"].as_u64(), m["model"].as_str(), m["endpoint"].as_str()),
        (Some(1), Some("alpha"), Some("local"))
    );
    assert_eq!(
        (
            m["matches"].as_u64(),
            m["wins"].as_u64(),
            m["ties"].as_u64(),
            m["losses"].as_u64()
        ),
        (Some(14), Some(10), Some(2), Some(2))
    );
    let r = |m: &Value, k: &str| m[k].as_f64().unwrap();
    assert!(
        r(m, "ci_low") <= r(m, "rating") && r(m, "rating") <= r(m, "ci_high"),
        "{m}"
    );
    let mean = models.iter().map(|m| r(m, "rating")).sum::<f64>() / 3.0;
    assert!((mean - 1000.0).abs() < 0.2, "{mean}");
    // The same votes, the same intervals.
    assert_eq!(stdout(&run(&s, &["leaderboard", "--json"], &db)), stdout(&o));

    // Only the judge's votes: alpha over gamma.
    let o = run(&s, &["leaderboard", "--voter", "judge", "--json"], &db);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["votes"], 4);
    let ids: Vec<&str> = v["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["alpha · local", "gamma · local"]);
}

#[test]
fn models_that_never_met_are_grouped() {
    let mut votes = many(3, "user", "alpha", "beta", VoteChoice::Left);
    votes.extend(many(3, "user", "delta", "gamma", VoteChoice::Right));
    let (s, db) = history(&votes);
    let o = run(&s, &["leaderboard"], &db);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().next().unwrap().ends_with("GROUP"), "{out}");
    assert!(out.contains("fall into 2 groups that never met"), "{out}");
    for l in out.lines().skip(1).take(4) {
        let cells: Vec<&str> = l.split_whitespace().collect();
        let want = if ["alpha", "beta"].contains(&cells[1]) {
            "1"
        } else {
            "2"
        };
        assert_eq!(cells.last(), Some(&want), "{out}");
    }
}

#[test]
fn no_votes_say_how_to_make_some() {
    // No database at all.
    let s = Sandbox::new();
    let missing = s.path().join("nothing.db");
    let o = run(&s, &["leaderboard"], &missing);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("no votes yet") && err.contains("/compare A B"), "{err}");

    // A history without votes.
    let (s, db) = history(&[]);
    let o = run(&s, &["leaderboard"], &db);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no votes in") && err.contains("/compare A B") && err.contains("judge"),
        "{err}"
    );
    let o = run(&s, &["leaderboard", "--json"], &db);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["models"], serde_json::json!([]));
    assert_eq!(v["votes"], 0);
    for args in [&["votes", "list"][..], &["votes", "export"][..]] {
        let o = run(&s, args, &db);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), "");
        assert!(stderr(&o).contains("no votes in"), "{}", stderr(&o));
    }

    // Votes, but none by the voters asked for.
    let (s, db) = history(&[vote("user", "alpha", "beta", VoteChoice::Left, "q")]);
    let o = run(&s, &["leaderboard", "--voter", "judge"], &db);
    assert!(o.status.success());
    assert!(
        stderr(&o).contains("none of the 1 vote(s)") && stderr(&o).contains("--voter all"),
        "{}",
        stderr(&o)
    );

    // Bad arguments are usage errors.
    let o = run(&s, &["votes", "export", "--format", "csv"], &db);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("dpo-jsonl"), "{}", stderr(&o));
    let o = run(&s, &["leaderboard", "--voter", "bob"], &db);
    assert_eq!(o.status.code(), Some(2));
}
