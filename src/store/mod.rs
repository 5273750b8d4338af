//! The history database: every session, turn, message, tool call and vote in
//! one SQLite file (`$XDG_DATA_HOME/polyglot/history.db`, or `history_db` in
//! the config), with full-text search over prompts and answers, resume and
//! export.
//!
//! Owns the schema (`schema`), writes (`write`), reads (`read`), search
//! (`search`) and the one writer thread (`writer`). Front ends never write
//! from their own task: they queue writes on a [`StoreWriter`]. Reads (the
//! `pai sessions` commands, a resume) open their own connection; WAL lets them
//! run while the writer writes.
//!
//! Opening checks the file and brings the schema up to date. The full check
//! (`PRAGMA quick_check` on every b-tree) reads the whole file, about 0.8 ms
//! per MB here, so it runs at open while the file is small, and otherwise once
//! a week ([`IntegrityCheck`]): the writer thread runs it after opening, in the
//! background, and drops it unfinished when pai exits. A damaged page met
//! later is reported the same way. A damaged file, a database from a newer pai or one locked by another
//! program is an error that says what to do; the caller carries on without
//! history (session folders are still written).

mod check;
mod error;
pub mod model;
mod read;
pub mod schema;
pub mod search;
mod write;
pub mod writer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

pub use check::{CHECK_EVERY, IntegrityCheck, SMALL_FILE};
pub use error::StoreError;
pub use model::{
    HIT_END, HIT_START, INTERRUPTED, Phase, Restored, SearchHit, SessionDetail, SessionMeta, SessionSummary,
    StoredToolCall, StoredTurn, StoredVote, ToolCallStatus, TurnState, Vote, VoteChoice, VoteSide,
};
pub use read::Resolution;
pub use search::fts_query;
pub use write::{WriteOp, title_from};
pub use writer::{StoreReport, StoreWriter};

use crate::config::Config;
use crate::conversation::Turn;
use read::ReadError;
use write::{CachedPath, PathCache};

/// The file name in the data folder.
pub const FILE_NAME: &str = "history.db";

/// `$XDG_DATA_HOME/polyglot/history.db` (or the platform's data folder).
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "polyglot").map(|d| d.data_dir().join(FILE_NAME))
}

/// Where this configuration keeps its history.
pub fn location(config: &Config) -> Result<PathBuf> {
    match &config.defaults.history_db {
        Some(p) => Ok(p.clone()),
        None => default_path().ok_or(StoreError::NoLocation),
    }
}

/// How to open.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// How long to wait for another connection's lock before giving up.
    pub busy_timeout: Duration,
    pub check: IntegrityCheck,
    /// Files under this size count as small (default [`SMALL_FILE`]).
    pub small_file: u64,
}

impl Default for StoreOptions {
    /// Wait 5 s for a lock; check small files at open (the writer thread
    /// takes care of the weekly check of large ones).
    fn default() -> Self {
        StoreOptions {
            busy_timeout: Duration::from_secs(5),
            check: IntegrityCheck::IfSmall,
            small_file: SMALL_FILE,
        }
    }
}

/// One connection to the history database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    read_only: bool,
    busy: Duration,
    small_file: u64,
    warning: Option<String>,
    paths: PathCache,
}

type Result<T> = std::result::Result<T, StoreError>;

impl Store {
    /// Open (creating it and its folder if needed) and bring the schema up to date.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, &StoreOptions::default())
    }

    pub fn open_with(path: &Path, opts: &StoreOptions) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Self::connect(path, flags)?;
        let mut store = Store::wrap(conn, path, false, opts.busy_timeout)?;
        store.small_file = opts.small_file;
        store.prepare(opts.check)?;
        Ok(store)
    }

    /// Open without writing anything (no migration; damage is a warning, see
    /// [`Store::warning`], so whatever is readable can be read).
    pub fn open_read_only(path: &Path) -> Result<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Self::connect(path, flags)?;
        let mut store = Store::wrap(conn, path, true, StoreOptions::default().busy_timeout)?;
        store.header_ok()?;
        if store.check_wanted(IntegrityCheck::IfSmall)? {
            store.warning = match store.quick_check() {
                Ok(found) => found,
                Err(StoreError::Corrupt { detail, .. }) => Some(detail),
                Err(e) => return Err(e),
            };
        }
        match store.schema_version()? {
            v if v > schema::CURRENT_VERSION => Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found: v,
                supported: schema::CURRENT_VERSION,
            }),
            v if v < schema::CURRENT_VERSION => Err(StoreError::NeedsUpgrade {
                path: path.to_path_buf(),
                found: v,
                supported: schema::CURRENT_VERSION,
            }),
            _ => Ok(store),
        }
    }

    /// A private database in memory (tests, benchmarks).
    pub fn in_memory() -> Result<Self> {
        let path = Path::new(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| StoreError::from_sqlite(path, Duration::ZERO, e))?;
        let mut store = Store::wrap(conn, path, false, Duration::ZERO)?;
        store.prepare(IntegrityCheck::Never)?;
        Ok(store)
    }

    /// Move the file at `path` (with its `-wal` and `-shm` companions) aside
    /// to `<name>.damaged-<time>` and start an empty database in its place.
    /// Returns the new store and where the old file went (`None` if there was none).
    pub fn start_fresh(path: &Path) -> Result<(Self, Option<PathBuf>)> {
        let moved = if path.exists() {
            let stamp = crate::util::time::Utc::now().stamp();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let aside = path.with_file_name(format!("{name}.damaged-{stamp}"));
            for suffix in ["", "-wal", "-shm"] {
                let from = PathBuf::from(format!("{}{suffix}", path.display()));
                let to = PathBuf::from(format!("{}{suffix}", aside.display()));
                if from.exists() {
                    std::fs::rename(&from, &to).map_err(|e| StoreError::MoveAside {
                        path: from.clone(),
                        reason: e.to_string(),
                    })?;
                }
            }
            Some(aside)
        } else {
            None
        };
        Ok((Self::open(path)?, moved))
    }

    fn connect(path: &Path, flags: OpenFlags) -> Result<Connection> {
        Connection::open_with_flags(path, flags).map_err(|e| match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::PermissionDenied) => StoreError::Open {
                path: path.to_path_buf(),
                reason: e.to_string(),
            },
            _ => StoreError::from_sqlite(path, Duration::ZERO, e),
        })
    }

    fn wrap(conn: Connection, path: &Path, read_only: bool, busy: Duration) -> Result<Self> {
        let store = Store {
            conn,
            path: path.to_path_buf(),
            read_only,
            busy,
            small_file: SMALL_FILE,
            warning: None,
            paths: PathCache::default(),
        };
        store.conn.busy_timeout(busy).map_err(|e| store.err(e))?;
        store.conn.set_prepared_statement_cache_capacity(64);
        Ok(store)
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        StoreError::from_sqlite(&self.path, self.busy, e)
    }

    fn read_err(&self, e: ReadError) -> StoreError {
        match e {
            ReadError::Sqlite(e) => self.err(e),
            ReadError::BadData(detail) => StoreError::BadData {
                path: self.path.clone(),
                detail,
            },
        }
    }

    /// Reading the schema is the first touch of the file: garbage fails here.
    fn header_ok(&self) -> Result<()> {
        self.conn
            .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get::<_, i64>(0))
            .map(drop)
            .map_err(|e| self.err(e))
    }

    fn prepare(&mut self, check: IntegrityCheck) -> Result<()> {
        self.header_ok()?;
        let mode: String = self
            .conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .map_err(|e| self.err(e))?;
        if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
            let now: String = self
                .conn
                .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
                .map_err(|e| self.err(e))?;
            if !now.eq_ignore_ascii_case("wal") {
                self.warning = Some(format!(
                    "journal mode is {now}, not WAL: readers may wait for the writer"
                ));
            }
        }
        self.conn
            .execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
            .map_err(|e| self.err(e))?;
        let checked = self.check_wanted(check)?;
        if checked && let Some(detail) = self.quick_check()? {
            return Err(StoreError::Corrupt {
                path: self.path.clone(),
                detail,
            });
        }
        let v = self.schema_version()?;
        if v > schema::CURRENT_VERSION {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found: v,
                supported: schema::CURRENT_VERSION,
            });
        }
        schema::migrate(&mut self.conn).map_err(|e| self.err(e))?;
        if checked {
            self.note_check();
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Something the caller should tell the user (damage found by a read-only
    /// open, a journal mode that is not WAL).
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    pub fn schema_version(&self) -> Result<u32> {
        schema::version(&self.conn).map_err(|e| self.err(e))
    }

    // ----- writes -------------------------------------------------------

    /// Apply queued writes in one transaction; each write succeeds or fails
    /// alone (a savepoint each). The outer error means none was written.
    pub fn apply(&mut self, ops: &[WriteOp]) -> Result<Vec<Result<()>>> {
        let refs: Vec<OpRef<'_>> = ops.iter().map(OpRef::from).collect();
        Ok(self.apply_refs(&refs)?.into_iter().map(|r| r.map(drop)).collect())
    }

    fn apply_refs(&mut self, ops: &[OpRef<'_>]) -> Result<Vec<Result<Option<i64>>>> {
        if self.read_only {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
            });
        }
        let (path, busy) = (self.path.clone(), self.busy);
        let err = |e| StoreError::from_sqlite(&path, busy, e);
        let Store { conn, paths, .. } = self;
        let mut tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let mut fresh: HashMap<String, CachedPath> = HashMap::new();
        let mut results = Vec::with_capacity(ops.len());
        for op in ops {
            let sp = tx.savepoint().map_err(err)?;
            let outcome = match *op {
                OpRef::Session(m) => write::upsert_session(&sp, m).map(|()| (None, None)).map_err(err),
                OpRef::Turn { session, turn, phase } => {
                    let cached = fresh.get(session).or_else(|| paths.get(session));
                    write::upsert_turn(&sp, cached, session, turn, phase)
                        .map(|p| (None, Some((session, p))))
                        .map_err(err)
                }
                OpRef::ToolCall {
                    session,
                    call_id,
                    status,
                    result,
                } => match write::set_tool_call(&sp, session, call_id, status, result) {
                    Ok(0) => Err(StoreError::BadData {
                        path: path.clone(),
                        detail: format!("no tool call `{call_id}` in session {session}"),
                    }),
                    Ok(_) => Ok((None, None)),
                    Err(e) => Err(err(e)),
                },
                OpRef::Vote(v) => write::insert_vote(&sp, v).map(|id| (Some(id), None)).map_err(err),
            };
            match outcome {
                Ok((id, cache)) => {
                    sp.commit().map_err(err)?;
                    if let Some((session, p)) = cache {
                        fresh.insert(session.to_string(), p);
                    }
                    results.push(Ok(id));
                }
                // Dropping the savepoint rolls this write back.
                Err(e) => results.push(Err(e)),
            }
        }
        tx.commit().map_err(err)?;
        for (s, p) in fresh {
            paths.put(&s, p);
        }
        Ok(results)
    }
}

impl Store {
    fn one(&mut self, op: OpRef<'_>) -> Result<Option<i64>> {
        self.apply_refs(&[op])?.pop().unwrap_or(Ok(None))
    }

    /// Create or update a session's row (`title: None` keeps the stored one).
    pub fn upsert_session(&mut self, meta: &SessionMeta) -> Result<()> {
        self.one(OpRef::Session(meta)).map(drop)
    }

    /// Write a finished turn (its `status` is stored). Idempotent: writing the
    /// same `turn_id` again replaces its text, answer and stats; the messages
    /// already stored are reused, never duplicated. Creates the session row
    /// if there is none yet.
    pub fn upsert_turn(&mut self, session: &str, turn: &Turn) -> Result<()> {
        self.one(OpRef::Turn {
            session,
            turn,
            phase: Phase::Final,
        })
        .map(drop)
    }

    /// Write a turn that is still streaming (stored as `streaming`; the final
    /// [`Store::upsert_turn`] replaces it). If pai dies, what arrived is kept.
    pub fn checkpoint_turn(&mut self, session: &str, turn: &Turn) -> Result<()> {
        self.one(OpRef::Turn {
            session,
            turn,
            phase: Phase::Streaming,
        })
        .map(drop)
    }

    /// Move a tool call along (and store its result, when given).
    pub fn set_tool_call(
        &mut self,
        session: &str,
        call_id: &str,
        status: ToolCallStatus,
        result: Option<&str>,
    ) -> Result<()> {
        self.one(OpRef::ToolCall {
            session,
            call_id,
            status,
            result,
        })
        .map(drop)
    }

    /// Store a vote; returns its id.
    pub fn insert_vote(&mut self, vote: &Vote) -> Result<i64> {
        self.one(OpRef::Vote(vote)).map(|id| id.unwrap_or_default())
    }

    // ----- reads --------------------------------------------------------

    /// Run reads on one snapshot (a read transaction): a writer committing
    /// meanwhile is either wholly visible or not at all.
    fn snapshot<T>(&self, f: impl FnOnce(&Connection) -> std::result::Result<T, ReadError>) -> Result<T> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        let out = f(&tx).map_err(|e| self.read_err(e));
        drop(tx);
        out
    }

    /// The `limit` most recently active sessions, most recent first.
    pub fn list_sessions(&self, limit: usize) -> Result<Vec<SessionSummary>> {
        self.snapshot(|c| read::list_sessions(c, limit))
    }

    /// A session and its turns; `None` when there is no such id.
    pub fn session(&self, id: &str) -> Result<Option<SessionDetail>> {
        self.snapshot(|c| read::session(c, id))
    }

    /// How `input` (an id, a unique prefix of one, or of its random part) resolves.
    pub fn lookup_session(&self, input: &str) -> Result<Resolution> {
        self.snapshot(|c| read::resolve_session(c, input))
    }

    /// The full id `input` names, or an error listing the candidates.
    pub fn resolve_session(&self, input: &str) -> Result<String> {
        match self.lookup_session(input)? {
            Resolution::Found(id) => Ok(id),
            Resolution::Ambiguous(mut matches) => {
                matches.truncate(5);
                Err(StoreError::Ambiguous {
                    prefix: input.to_string(),
                    matches,
                })
            }
            Resolution::Missing(close) => Err(StoreError::NotFound {
                id: input.to_string(),
                close,
            }),
        }
    }

    /// Turns whose prompt or answer match what a user typed (see
    /// [`search`] for the syntax), best first. Nothing to look for → no hits.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        match fts_query(query) {
            Some(q) => self.snapshot(|c| Ok(search::search(c, &q, limit)?)),
            None => Ok(Vec::new()),
        }
    }

    /// What resuming a session needs; `None` when there is no such id.
    pub fn restore(&self, id: &str) -> Result<Option<Restored>> {
        self.snapshot(|c| read::restore(c, id))
    }

    /// Votes, oldest first (only `session`'s when given).
    pub fn votes(&self, session: Option<&str>) -> Result<Vec<StoredVote>> {
        self.snapshot(|c| read::votes(c, session))
    }
}

/// A write without owning its data (no clone of a long conversation).
#[derive(Clone, Copy)]
enum OpRef<'a> {
    Session(&'a SessionMeta),
    Turn {
        session: &'a str,
        turn: &'a Turn,
        phase: Phase,
    },
    ToolCall {
        session: &'a str,
        call_id: &'a str,
        status: ToolCallStatus,
        result: Option<&'a str>,
    },
    Vote(&'a Vote),
}

impl<'a> From<&'a WriteOp> for OpRef<'a> {
    fn from(op: &'a WriteOp) -> Self {
        match op {
            WriteOp::Session(m) => OpRef::Session(m),
            WriteOp::Turn { session, turn, phase } => OpRef::Turn {
                session,
                turn,
                phase: *phase,
            },
            WriteOp::ToolCall {
                session,
                call_id,
                status,
                result,
            } => OpRef::ToolCall {
                session,
                call_id,
                status: *status,
                result: result.as_deref(),
            },
            WriteOp::Vote(v) => OpRef::Vote(v),
        }
    }
}

#[cfg(test)]
mod tests;
