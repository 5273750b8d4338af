//! Store errors: what went wrong, with the database path and what to do about it.
//!
//! SQLite's own codes are mapped once, here: a busy or locked database becomes
//! [`StoreError::Locked`], a damaged file [`StoreError::Corrupt`], so callers
//! (the CLI, the writer thread, the TUI) can show one actionable line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::ErrorCode;

/// A problem with the history database. `Display` is one actionable line.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "history database {} is damaged ({detail}) — history is off until it is fixed; session folders are still written. \
         To start a fresh one and keep the old file: `pai sessions recover`, then `pai sessions import` rebuilds history \
         from the session folders; to read what is left: `pai sessions --db {} list`",
        path.display(),
        path.display()
    )]
    Corrupt { path: PathBuf, detail: String },

    #[error(
        "history database {} is locked by another program (waited {} s) — another pai may be writing to it; \
         try again when it is done",
        path.display(),
        waited.as_secs_f32()
    )]
    Locked { path: PathBuf, waited: Duration },

    #[error(
        "history database {} has schema version {found}, newer than this pai understands ({supported}) — \
         upgrade pai, or set history_db in polyglot.toml to another file",
        path.display()
    )]
    TooNew { path: PathBuf, found: u32, supported: u32 },

    #[error(
        "history database {} has schema version {found} and must be upgraded to {supported}, which a read-only \
         open cannot do — open it without --db (or copy it and run `pai sessions --db COPY list` after \
         one normal open)",
        path.display()
    )]
    NeedsUpgrade { path: PathBuf, found: u32, supported: u32 },

    #[error(
        "cannot open history database {}: {reason} — check that its folder exists and is writable, \
         or set history_db in polyglot.toml",
        path.display()
    )]
    Open { path: PathBuf, reason: String },

    #[error("cannot move the damaged history database {} aside: {reason}", path.display())]
    MoveAside { path: PathBuf, reason: String },

    #[error("history database {} is open read-only; writes are not possible", path.display())]
    ReadOnly { path: PathBuf },

    #[error("history database {}: {source}", path.display())]
    Sqlite { path: PathBuf, source: rusqlite::Error },

    #[error("history database {}: stored data is invalid: {detail}", path.display())]
    BadData { path: PathBuf, detail: String },

    #[error("no session matches `{id}`{}", close_matches(close))]
    NotFound { id: String, close: Vec<String> },

    #[error("`{prefix}` matches {} sessions: {} — type more of the id", matches.len(), matches.join(", "))]
    Ambiguous { prefix: String, matches: Vec<String> },

    #[error(
        "cannot find a data folder for the history database (no home directory?) — set history_db in polyglot.toml"
    )]
    NoLocation,
}

fn close_matches(close: &[String]) -> String {
    if close.is_empty() {
        " — `pai sessions list` shows the recorded sessions".into()
    } else {
        format!(" — did you mean {}?", close.join(", "))
    }
}

impl StoreError {
    /// Map a SQLite error on the database at `path`; `waited` is the busy timeout
    /// in force (reported with lock errors).
    pub(crate) fn from_sqlite(path: &Path, waited: Duration, e: rusqlite::Error) -> Self {
        let code = e.sqlite_error_code();
        match code {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked {
                path: path.to_path_buf(),
                waited,
            },
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: short_reason(&e),
            },
            Some(ErrorCode::ReadOnly) => StoreError::ReadOnly {
                path: path.to_path_buf(),
            },
            _ => StoreError::Sqlite {
                path: path.to_path_buf(),
                source: e,
            },
        }
    }

    /// True for errors that mean the file itself is damaged.
    pub fn is_corrupt(&self) -> bool {
        matches!(self, StoreError::Corrupt { .. })
    }

    /// True when another connection holds the lock.
    pub fn is_locked(&self) -> bool {
        matches!(self, StoreError::Locked { .. })
    }
}

fn short_reason(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(msg)) => msg.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_file_and_the_way_out() {
        let e = StoreError::Corrupt {
            path: "/d/history.db".into(),
            detail: "file is not a database".into(),
        };
        let s = e.to_string();
        assert!(s.contains("/d/history.db") && s.contains("pai sessions recover"), "{s}");
        let e = StoreError::NotFound {
            id: "2026".into(),
            close: vec!["20261121-1".into()],
        };
        assert_eq!(e.to_string(), "no session matches `2026` — did you mean 20261121-1?");
    }
}
