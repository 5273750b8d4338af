//! The integrity check: when it runs (small files at every open, large ones
//! once a week, see [`IntegrityCheck`]) and how (`PRAGMA quick_check` table by
//! table, so it can be stopped between tables).

use std::time::Duration;

use super::{Result, Store, StoreError};

/// When opening runs the full integrity check (`PRAGMA quick_check`). The
/// cheap checks (the file is a database, its schema reads) always run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntegrityCheck {
    Always,
    /// While the file is small ([`StoreOptions::small_file`](super::StoreOptions::small_file)), else once
    /// every [`CHECK_EVERY`] (the time of the last good check is kept in the file).
    WhenDue,
    /// Only while the file is small (the writer thread runs the weekly check
    /// of a large file after opening: [`Store::check_due`]).
    IfSmall,
    Never,
}

/// Files smaller than this are checked at every open (under 50 ms here).
pub const SMALL_FILE: u64 = 64 << 20;
/// How often a larger file is checked.
pub const CHECK_EVERY: Duration = Duration::from_secs(7 * 24 * 3600);

pub(super) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Store {
    /// `None` when the check passes, else what it found (first lines).
    pub(super) fn quick_check(&self) -> Result<Option<String>> {
        self.quick_check_until(&|| false).map(|c| c.flatten())
    }

    /// `PRAGMA quick_check` on every b-tree, table by table (so `stop` is
    /// asked in between). Virtual tables are skipped: for the full-text index
    /// that check compares it with the turns (derived data, and 80% of the
    /// time); its own tables are checked. `None` when stopped, else what was found.
    fn quick_check_until(&self, stop: &dyn Fn() -> bool) -> Result<Option<Option<String>>> {
        let err = |e| self.err(e);
        let tables: Vec<String> = self
            .conn
            .prepare(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'
                 ORDER BY rootpage",
            )
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
            .map_err(err)?;
        let mut found: Vec<String> = Vec::new();
        for t in tables {
            if stop() {
                return Ok(None);
            }
            let sql = format!("PRAGMA quick_check(\"{}\")", t.replace('"', "\"\""));
            let mut st = self.conn.prepare(&sql).map_err(err)?;
            let rows: Vec<String> = st.query_map([], |r| r.get(0)).and_then(|r| r.collect()).map_err(err)?;
            found.extend(rows.into_iter().filter(|r| r != "ok").take(5));
        }
        Ok(Some(
            (!found.is_empty()).then(|| format!("integrity check: {}", found.join("; "))),
        ))
    }

    /// Whether the full check should run now under `check`.
    pub(super) fn check_wanted(&self, check: IntegrityCheck) -> Result<bool> {
        match check {
            IntegrityCheck::Always => return Ok(true),
            IntegrityCheck::Never => return Ok(false),
            IntegrityCheck::WhenDue | IntegrityCheck::IfSmall => {}
        }
        let size: i64 = self
            .conn
            .query_row(
                "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))?;
        if (size as u64) < self.small_file {
            return Ok(true);
        }
        if check == IntegrityCheck::IfSmall {
            return Ok(false);
        }
        // No `meta` table yet (an old schema) counts as never checked.
        let last: Option<i64> = self
            .conn
            .query_row(
                "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'last_check'",
                [],
                |r| r.get(0),
            )
            .ok();
        Ok(last.is_none_or(|t| unix_now().saturating_sub(t) >= CHECK_EVERY.as_secs() as i64))
    }

    /// Remember a good check. Best effort: if another writer holds the lock,
    /// the next open simply checks again.
    pub(super) fn note_check(&self) {
        let _ = self.conn.execute(
            "INSERT INTO meta (key, value) VALUES ('last_check', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [unix_now().to_string()],
        );
    }

    /// True when the weekly full check is due (a large file not checked for
    /// [`CHECK_EVERY`]).
    pub fn check_due(&self) -> bool {
        !self.read_only && self.check_wanted(IntegrityCheck::WhenDue).unwrap_or(false)
    }

    /// Run the full check now: `Ok(true)` when it passed, `Ok(false)` when
    /// `stop` said so between tables, `Corrupt` when it found damage, an
    /// `Sqlite` error (SQLITE_INTERRUPT) when [`Store::interrupt_handle`] stopped it.
    pub fn run_check(&self, stop: &dyn Fn() -> bool) -> Result<bool> {
        match self.quick_check_until(stop)? {
            None => Ok(false),
            Some(Some(detail)) => Err(StoreError::Corrupt {
                path: self.path.clone(),
                detail,
            }),
            Some(None) => {
                self.note_check();
                Ok(true)
            }
        }
    }

    /// A handle that stops the statement running on this connection (from
    /// another thread): the writer thread uses it to drop an unfinished check.
    pub fn interrupt_handle(&self) -> rusqlite::InterruptHandle {
        self.conn.get_interrupt_handle()
    }
}
