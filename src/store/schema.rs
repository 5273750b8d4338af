//! The schema and its ordered migrations. `PRAGMA user_version` holds the
//! version; each migration runs in its own transaction together with the
//! version bump, so a crash leaves the database at one version or the next.
//!
//! Rules: a migration, once released, never changes; new needs get a new
//! migration appended to [`MIGRATIONS`].
//!
//! Layout (version 4):
//! - `sessions`: one row per session; `id` is the session folder's name.
//! - `messages`: the conversation as sent, stored once as a tree (`parent_id`):
//!   each request is the path from a root to the turn's `context_id`, and each
//!   turn's answer is a child node (`answer_id`). A new turn adds only the
//!   messages that are new, so a write costs the same at turn 5 and turn 5,000.
//! - `turns`: one row per turn (`UNIQUE(session_id, turn_id)`): status
//!   (`streaming` while a checkpoint, then final), the user's prompt text, the
//!   answer, reasoning, errors, parameters and stats; for arena and compare
//!   turns the `lane`, and in `extra` (JSON) a judge's `ruling`, the
//!   `verdict` and a compare `pick` (version 4).
//! - `turns_fts`: FTS5 over `turns(prompt, answer)`, external content, kept in
//!   sync by triggers; `unicode61 remove_diacritics 2` makes "cafe" find "Café".
//! - `tool_calls`: the calls a turn's answer requested, their results and status.
//! - `votes`: arena/compare verdicts: the prompt (messages JSON), both sides
//!   (endpoint, model, participant name, answer) and the choice, enough to
//!   export DPO pairs (`chosen`/`rejected`) and to compute a leaderboard.
//! - `meta`: housekeeping (`last_check`: when the last integrity check passed).

use rusqlite::Connection;

/// One step from `version - 1` to `version`.
pub struct Migration {
    pub version: u32,
    pub what: &'static str,
    pub sql: &'static str,
}

/// Every migration, in order. The last one's version is the current schema.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "sessions, turns and the message tree",
        sql: V1,
    },
    Migration {
        version: 2,
        what: "full-text search over prompts and answers",
        sql: V2,
    },
    Migration {
        version: 3,
        what: "tool calls, votes and housekeeping notes",
        sql: V3,
    },
    Migration {
        version: 4,
        what: "arena and compare lanes, rulings, verdicts and picks on turns",
        sql: V4,
    },
];

/// The schema version this build writes.
pub const CURRENT_VERSION: u32 = 4;

const V1: &str = "
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY NOT NULL,
    started_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    title       TEXT NOT NULL DEFAULT '',
    endpoint    TEXT NOT NULL DEFAULT '',
    model       TEXT NOT NULL DEFAULT '',
    system      TEXT,
    folder      TEXT,
    mode        TEXT NOT NULL DEFAULT 'chat',
    turn_count  INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX sessions_by_update ON sessions(updated_at);

CREATE TABLE messages (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    parent_id    INTEGER REFERENCES messages(id) ON DELETE CASCADE,
    role         TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      TEXT NOT NULL,
    name         TEXT,
    reasoning    TEXT,
    tool_calls   TEXT,
    tool_call_id TEXT,
    fingerprint  INTEGER NOT NULL
) STRICT;
CREATE INDEX messages_by_session ON messages(session_id);
CREATE INDEX messages_by_parent ON messages(parent_id);

CREATE TABLE turns (
    id             INTEGER PRIMARY KEY,
    session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id        INTEGER NOT NULL,
    started_at     TEXT NOT NULL,
    endpoint       TEXT NOT NULL,
    model          TEXT NOT NULL,
    participant    TEXT,
    mode           TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('streaming', 'completed', 'cancelled', 'failed')),
    prompt         TEXT NOT NULL DEFAULT '',
    answer         TEXT NOT NULL DEFAULT '',
    reasoning      TEXT NOT NULL DEFAULT '',
    finish_reason  TEXT,
    error          TEXT,
    temperature    REAL,
    max_tokens     INTEGER,
    context_id     INTEGER REFERENCES messages(id),
    answer_id      INTEGER REFERENCES messages(id),
    ttft_ms        INTEGER,
    duration_ms    INTEGER NOT NULL DEFAULT 0,
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    usage_reported INTEGER NOT NULL DEFAULT 0,
    tokens_per_sec REAL,
    retries        INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session_id, turn_id)
) STRICT;
CREATE INDEX turns_by_context ON turns(context_id);
CREATE INDEX turns_by_answer ON turns(answer_id);
";

const V2: &str = "
CREATE VIRTUAL TABLE turns_fts USING fts5(
    prompt, answer,
    content = 'turns', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '2 3'
);
CREATE TRIGGER turns_fts_insert AFTER INSERT ON turns BEGIN
    INSERT INTO turns_fts(rowid, prompt, answer) VALUES (new.id, new.prompt, new.answer);
END;
CREATE TRIGGER turns_fts_delete AFTER DELETE ON turns BEGIN
    INSERT INTO turns_fts(turns_fts, rowid, prompt, answer) VALUES ('delete', old.id, old.prompt, old.answer);
END;
CREATE TRIGGER turns_fts_update AFTER UPDATE OF prompt, answer ON turns
WHEN old.prompt IS NOT new.prompt OR old.answer IS NOT new.answer BEGIN
    INSERT INTO turns_fts(turns_fts, rowid, prompt, answer) VALUES ('delete', old.id, old.prompt, old.answer);
    INSERT INTO turns_fts(rowid, prompt, answer) VALUES (new.id, new.prompt, new.answer);
END;
INSERT INTO turns_fts(turns_fts) VALUES ('rebuild');
";

const V3: &str = "
CREATE TABLE tool_calls (
    id        INTEGER PRIMARY KEY,
    turn      INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    call_id   TEXT NOT NULL,
    name      TEXT NOT NULL,
    arguments TEXT NOT NULL,
    result    TEXT,
    status    TEXT NOT NULL DEFAULT 'requested'
              CHECK (status IN ('requested', 'running', 'done', 'failed', 'denied')),
    UNIQUE (turn, call_id)
) STRICT;
CREATE INDEX tool_calls_by_call ON tool_calls(call_id);

-- Calls already recorded in answers, with the results later requests carried.
INSERT INTO tool_calls (turn, seq, call_id, name, arguments)
SELECT t.id, j.key, coalesce(json_extract(j.value, '$.id'), ''),
       coalesce(json_extract(j.value, '$.name'), ''), coalesce(json_extract(j.value, '$.arguments'), '')
FROM turns t JOIN messages m ON m.id = t.answer_id, json_each(m.tool_calls) j
WHERE m.tool_calls IS NOT NULL;
UPDATE tool_calls SET result = m.content, status = 'done'
FROM turns t, messages m
WHERE t.id = tool_calls.turn AND m.session_id = t.session_id AND m.role = 'tool'
  AND m.tool_call_id = tool_calls.call_id;

CREATE TABLE votes (
    id             INTEGER PRIMARY KEY,
    created_at     TEXT NOT NULL,
    session_id     TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    mode           TEXT NOT NULL CHECK (mode IN ('chat', 'agent', 'arena', 'compare', 'judge')),
    voter          TEXT NOT NULL,
    prompt         TEXT NOT NULL,
    left_endpoint  TEXT NOT NULL,
    left_model     TEXT NOT NULL,
    left_name      TEXT,
    left_turn_id   INTEGER,
    left_answer    TEXT NOT NULL,
    right_endpoint TEXT NOT NULL,
    right_model    TEXT NOT NULL,
    right_name     TEXT,
    right_turn_id  INTEGER,
    right_answer   TEXT NOT NULL,
    choice         TEXT NOT NULL CHECK (choice IN ('left', 'right', 'tie', 'both_bad')),
    note           TEXT
) STRICT;
CREATE INDEX votes_by_session ON votes(session_id);
CREATE INDEX votes_by_models ON votes(left_model, right_model);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) STRICT;
";

const V4: &str = "
ALTER TABLE turns ADD COLUMN lane INTEGER;
ALTER TABLE turns ADD COLUMN extra TEXT;
";

/// The database's schema version.
pub fn version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))
        .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
}

/// Apply every migration newer than the database, each in its own
/// transaction. Returns the versions applied.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<Vec<u32>> {
    let mut applied = Vec::new();
    // Up to date: take no write lock (readers must not wait for a busy writer).
    if version(conn)? >= CURRENT_VERSION {
        return Ok(applied);
    }
    for m in MIGRATIONS {
        // Read inside the write transaction: another process may have migrated
        // while this one waited for the lock.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        if version(&tx)? >= m.version {
            continue;
        }
        tx.execute_batch(m.sql)?;
        tx.pragma_update(None, "user_version", i64::from(m.version))?;
        tx.commit()?;
        applied.push(m.version);
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_ordered_and_end_at_the_current_version() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1, "{}", m.what);
        }
        assert_eq!(MIGRATIONS.last().map(|m| m.version), Some(CURRENT_VERSION));
    }

    #[test]
    fn a_new_database_migrates_once() {
        let mut c = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut c).unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(version(&c).unwrap(), CURRENT_VERSION);
        assert!(migrate(&mut c).unwrap().is_empty());
    }
}
