//! Migrations from older schemas, damaged and locked files, readers during writes.

use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::*;
use crate::store::check::unix_now;

/// Version 1 exactly as released: written out here, not taken from the
/// migration list, so a change to a released migration shows up.
const V1_SCHEMA: &str = "
CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL, started_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '', endpoint TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '',
    system TEXT, folder TEXT, mode TEXT NOT NULL DEFAULT 'chat', turn_count INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX sessions_by_update ON sessions(updated_at);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    parent_id INTEGER REFERENCES messages(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content TEXT NOT NULL, name TEXT, reasoning TEXT, tool_calls TEXT, tool_call_id TEXT,
    fingerprint INTEGER NOT NULL
) STRICT;
CREATE INDEX messages_by_session ON messages(session_id);
CREATE INDEX messages_by_parent ON messages(parent_id);
CREATE TABLE turns (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id INTEGER NOT NULL, started_at TEXT NOT NULL, endpoint TEXT NOT NULL, model TEXT NOT NULL,
    participant TEXT, mode TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('streaming', 'completed', 'cancelled', 'failed')),
    prompt TEXT NOT NULL DEFAULT '', answer TEXT NOT NULL DEFAULT '', reasoning TEXT NOT NULL DEFAULT '',
    finish_reason TEXT, error TEXT, temperature REAL, max_tokens INTEGER,
    context_id INTEGER REFERENCES messages(id), answer_id INTEGER REFERENCES messages(id),
    ttft_ms INTEGER, duration_ms INTEGER NOT NULL DEFAULT 0, input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0, usage_reported INTEGER NOT NULL DEFAULT 0,
    tokens_per_sec REAL, retries INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session_id, turn_id)
) STRICT;
CREATE INDEX turns_by_context ON turns(context_id);
CREATE INDEX turns_by_answer ON turns(answer_id);
PRAGMA user_version = 1;
";

/// A version-1 database with one agent session: a tool call, its result, an answer.
fn v1_database(path: &std::path::Path) {
    let c = Connection::open(path).unwrap();
    c.execute_batch(V1_SCHEMA).unwrap();
    let m = |id: i64, parent: Option<i64>, role: &str, content: &str, calls: Option<&str>, call_id: Option<&str>| {
        c.execute(
            "INSERT INTO messages (id, session_id, parent_id, role, content, tool_calls, tool_call_id, fingerprint)
             VALUES (?1, 'old-session', ?2, ?3, ?4, ?5, ?6, 0)",
            rusqlite::params![id, parent, role, content, calls, call_id],
        )
        .unwrap();
    };
    c.execute(
        "INSERT INTO sessions (id, started_at, updated_at, title, endpoint, model, mode, turn_count)
         VALUES ('old-session', '2025-01-01T00:00:00.000Z', '2025-01-01T00:01:00.000Z', 'Weather', 'local', 'm',
                 'agent', 2)",
        [],
    )
    .unwrap();
    m(1, None, "user", "Weather in Zürich?", None, None);
    m(
        2,
        Some(1),
        "assistant",
        "",
        Some(r#"[{"id":"c1","name":"weather","arguments":"{\"city\":\"Zürich\"}"}]"#),
        None,
    );
    m(3, Some(2), "tool", "sunny, 21 degrees", None, Some("c1"));
    m(4, Some(3), "assistant", "Sunny and mild in Zürich.", None, None);
    for (turn_id, ctx, ans, prompt, answer) in [
        (1, 1, 2, "Weather in Zürich?", ""),
        (2, 3, 4, "", "Sunny and mild in Zürich."),
    ] {
        c.execute(
            "INSERT INTO turns (session_id, turn_id, started_at, endpoint, model, mode, status, prompt, answer,
                context_id, answer_id)
             VALUES ('old-session', ?1, '2025-01-01T00:00:00.000Z', 'local', 'm', 'agent', 'completed', ?2, ?3, ?4, ?5)",
            rusqlite::params![turn_id, prompt, answer, ctx, ans],
        )
        .unwrap();
    }
}

#[test]
fn a_version_1_database_is_migrated_with_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    v1_database(&path);
    let mut s = Store::open(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), schema::CURRENT_VERSION);
    // Old turns are searchable (the index was built from them).
    let hits = s.search("zurich", 10).unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(s.search("mild", 10).unwrap()[0].turn_id, 2);
    // Tool calls were lifted out of the answers, with their results.
    let d = s.session("old-session").unwrap().unwrap();
    assert_eq!(d.summary.mode, TurnMode::Agent);
    let calls = &d.turns[0].tool_calls;
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].call.name.as_str(), calls[0].status, calls[0].result.as_deref()),
        ("weather", ToolCallStatus::Done, Some("sunny, 21 degrees"))
    );
    let r = s.restore("old-session").unwrap().unwrap();
    assert_eq!(r.messages.len(), 4);
    assert_eq!(r.messages[3].content, "Sunny and mild in Zürich.");
    // And it takes new writes.
    s.upsert_turn("old-session", &turn(3, vec![Message::user("thanks")], "you're welcome"))
        .unwrap();
    assert_eq!(s.session("old-session").unwrap().unwrap().turns.len(), 3);
    fts_consistent(&s);
    drop(s);
    // Reopening finds nothing to do.
    assert_eq!(
        Store::open(&path).unwrap().schema_version().unwrap(),
        schema::CURRENT_VERSION
    );
}

#[test]
fn a_database_from_a_newer_pai_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99;")
        .unwrap();
    let e = Store::open(&path).err().unwrap();
    assert!(matches!(e, StoreError::TooNew { found: 99, .. }), "{e:?}");
    assert!(e.to_string().contains("upgrade pai"), "{e}");
}

#[test]
fn garbage_in_the_file_is_a_clear_error_and_a_fresh_start_keeps_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    std::fs::write(&path, b"this is not sqlite, just some words\n".repeat(200)).unwrap();
    let e = Store::open(&path).err().unwrap();
    assert!(e.is_corrupt(), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("pai sessions recover") && msg.contains("--db"), "{msg}");
    assert!(Store::open_read_only(&path).err().unwrap().is_corrupt());

    let (mut s, moved) = Store::start_fresh(&path).unwrap();
    let moved = moved.unwrap();
    assert!(
        moved
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("history.db.damaged-")
    );
    assert!(std::fs::read(&moved).unwrap().starts_with(b"this is not sqlite"));
    chat(&mut s, "s", None, &[("q", "a")]);
    assert_eq!(s.list_sessions(5).unwrap().len(), 1);
}

#[test]
fn damaged_pages_are_found_at_open_and_the_file_can_still_be_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    {
        let mut s = Store::open(&path).unwrap();
        let long = "word ".repeat(2000);
        for i in 0..30 {
            chat(&mut s, &format!("s{i}"), None, &[("question", &long)]);
        }
    } // closing the last connection folds the WAL into the file
    let mut bytes = std::fs::read(&path).unwrap();
    let page = 4096;
    assert!(bytes.len() > 20 * page);
    for b in &mut bytes[10 * page..12 * page] {
        *b = 0x5a;
    }
    std::fs::write(&path, &bytes).unwrap();
    let e = Store::open(&path).err().unwrap();
    assert!(e.is_corrupt(), "{e:?}");
    let ro = Store::open_read_only(&path).unwrap();
    assert!(ro.warning().is_some());
    assert!(ro.is_read_only());
    // Without the check at open, the damage is met on reading, and reported alike.
    let never = StoreOptions {
        check: IntegrityCheck::Never,
        ..Default::default()
    };
    let s = Store::open_with(&path, &never).unwrap();
    let errors: Vec<StoreError> = (0..30)
        .filter_map(|i| s.session(&format!("s{i}")).err())
        .chain(s.search("word", 50).err())
        .collect();
    assert!(!errors.is_empty());
    assert!(errors.iter().all(StoreError::is_corrupt), "{errors:?}");
}

#[test]
fn a_database_locked_by_another_program_fails_fast_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    drop(Store::open(&path).unwrap());
    let opts = StoreOptions {
        busy_timeout: Duration::from_millis(200),
        check: IntegrityCheck::WhenDue,
        ..Default::default()
    };
    // Another program holding the file exclusively: even reading must wait.
    let other = Connection::open(&path).unwrap();
    other
        .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; INSERT INTO sessions (id, started_at, updated_at) VALUES ('x', 'a', 'a');")
        .unwrap();
    let t = Instant::now();
    let e = Store::open_with(&path, &opts).err().unwrap();
    assert!(t.elapsed() < Duration::from_secs(3));
    assert!(e.is_locked(), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("is locked by another program") && msg.contains("0.2 s"),
        "{msg}"
    );
    drop(other);
    assert!(Store::open_with(&path, &opts).is_ok());
}

#[test]
fn a_busy_writer_elsewhere_lets_reads_through_and_makes_writes_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let opts = StoreOptions {
        busy_timeout: Duration::from_millis(200),
        check: IntegrityCheck::WhenDue,
        ..Default::default()
    };
    let mut s = Store::open_with(&path, &opts).unwrap();
    chat(&mut s, "s", None, &[("q", "a")]);
    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE; DELETE FROM votes;").unwrap();
    // Readers are not blocked by a writer (WAL).
    let reader = Store::open_with(&path, &opts).unwrap();
    assert_eq!(reader.list_sessions(5).unwrap().len(), 1);
    let e = s.upsert_turn("s", &turn(2, vec![Message::user("x")], "y")).unwrap_err();
    assert!(e.is_locked(), "{e:?}");
    other.execute_batch("COMMIT").unwrap();
    s.upsert_turn("s", &turn(2, vec![Message::user("x")], "y")).unwrap();
}

#[test]
fn a_reader_sees_consistent_data_while_the_writer_thread_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    drop(Store::open(&path).unwrap());
    let writer = StoreWriter::spawn(path.clone(), |_| {});
    let reader = Store::open(&path).unwrap();
    let total = 1500u32;
    let mut convo = vec![Message::system("sys")];
    let mut reads = 0;
    let mut last_seen = 0;
    for i in 1..=total {
        convo.push(Message::user(format!("question {i}")));
        let t = turn(i, convo.clone(), &format!("answer {i}"));
        convo.push(t.assistant_message());
        writer.turn("long", t);
        if i % 50 == 0 {
            // Every snapshot is whole: the count, the turns and the last
            // turn's conversation agree, and nothing goes backwards.
            if let Some(d) = reader.session("long").unwrap() {
                let n = d.turns.len() as u32;
                assert_eq!(d.summary.turn_count, n);
                assert!(n >= last_seen);
                last_seen = n;
                assert_eq!(d.turns.last().map_or(0, |t| t.turn.turn_id), n);
                // A restore (another snapshot, maybe later) is whole too.
                if let Some(r) = reader.restore("long").unwrap() {
                    let k = r.messages.len() as u32 / 2;
                    assert!(k >= n);
                    assert_eq!(r.messages.len() as u32, 2 * k);
                    assert_eq!(r.messages.last().unwrap().content, format!("answer {k}"));
                    assert_eq!(r.next_turn_id, k + 1);
                }
                reads += 1;
            }
        }
    }
    drop(writer);
    assert!(reads > 10);
    assert_eq!(reader.session("long").unwrap().unwrap().turns.len() as u32, total);
}

#[test]
fn a_large_file_is_checked_once_a_week_not_at_every_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let opts = StoreOptions {
        small_file: 1 << 20,
        ..Default::default()
    };
    {
        let s = Store::open(&path).unwrap();
        s.conn
            .execute_batch(
                "CREATE TABLE filler (b BLOB); INSERT INTO filler VALUES (zeroblob(2000000)); DELETE FROM meta;",
            )
            .unwrap();
    }
    let s = Store::open_with(&path, &opts).unwrap();
    assert!(s.check_due(), "large and never checked");
    assert!(!s.run_check(&|| true).unwrap(), "stopped before the first table");
    assert!(s.check_due());
    assert!(s.run_check(&|| false).unwrap());
    assert!(!s.check_due(), "checked just now");
    let eight_days_ago = unix_now() - 8 * 24 * 3600;
    s.conn
        .execute(
            "UPDATE meta SET value = ?1 WHERE key = 'last_check'",
            [eight_days_ago.to_string()],
        )
        .unwrap();
    assert!(s.check_due());
    drop(s);
    // The writer checks in the background (and would drop it at exit).
    let o = opts.clone();
    let w = StoreWriter::with_opener(move || Store::open_with(&path, &o), |_| {});
    w.turn("s", turn(1, vec![Message::user("q")], "a"));
    assert!(w.flush());
    drop(w);
    let s = Store::open_with(&dir.path().join("history.db"), &opts).unwrap();
    assert_eq!(s.list_sessions(5).unwrap().len(), 1);
    assert!(!s.check_due(), "the writer's check passed and was noted");
}
