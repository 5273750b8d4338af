//! Session records on disk: `<sessions_dir>/<YYYYmmdd-HHMMSS>-<id>/` holding one
//! `NNNN-turn.json` per turn plus `conversation.html` and `gptwink_format.html`,
//! refreshed after every turn. Every file is written atomically.
//!
//! Owns file layout and rendering. It receives finished [`Turn`]s (which never
//! contain secrets) and must not be called from the UI task directly.

pub mod arena_view;
mod atomic;
pub mod export;
pub mod html;
pub mod writer;

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use atomic::write_atomic;
pub use html::{HtmlFormat, Templates};

use crate::conversation::{Role, Turn};
use crate::util::time::Utc;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot write session record {}: {source} — check that the sessions folder is writable (sessions_dir in polyglot.toml)", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("cannot render the HTML transcript: {0}")]
    Template(String),
}

/// A short random id for folder names.
pub fn short_id() -> String {
    let r = RandomState::new().hash_one(std::time::SystemTime::now());
    format!("{:06x}", r & 0xff_ffff)
}

/// Writes one session's folder. The folder appears with the first turn.
pub struct SessionRecorder {
    dir: PathBuf,
    id: String,
    started_at: String,
    templates: Arc<Templates>,
    book: html::HtmlBook,
    positions: HashMap<u32, usize>,
    title: Option<String>,
    created: bool,
}

/// A new session's name (`YYYYmmdd-HHMMSS-xxxxxx`, its folder's and its id in
/// the history) and start time (RFC 3339 UTC).
pub fn new_session_name() -> (String, String) {
    let now = Utc::now();
    (format!("{}-{}", now.stamp(), short_id()), now.rfc3339())
}

impl SessionRecorder {
    pub fn new(sessions_dir: &Path, templates: Arc<Templates>) -> Self {
        let (name, started_at) = new_session_name();
        Self::named(sessions_dir, &name, &started_at, templates)
    }

    /// A new session with a name chosen by the caller.
    pub fn named(sessions_dir: &Path, name: &str, started_at: &str, templates: Arc<Templates>) -> Self {
        SessionRecorder {
            dir: sessions_dir.join(name),
            id: name.rsplit('-').next().unwrap_or(name).to_string(),
            started_at: started_at.to_string(),
            templates,
            book: html::HtmlBook::new(),
            positions: HashMap::new(),
            title: None,
            created: false,
        }
    }

    /// Continue the session recorded in `dir` (a resumed conversation): its
    /// turns are read back, so both HTML transcripts keep them.
    pub fn reopen(dir: &Path, templates: Arc<Templates>) -> Result<Self, RecordError> {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|source| RecordError::Io {
                path: dir.to_path_buf(),
                source,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with("-turn.json"))
            })
            .collect();
        files.sort();
        let mut turns = Vec::new();
        for f in &files {
            let bytes = std::fs::read(f).map_err(|source| RecordError::Io {
                path: f.clone(),
                source,
            })?;
            // A damaged record is left as it is; the rest of the session goes on.
            if let Ok(t) = serde_json::from_slice::<Turn>(&bytes) {
                turns.push(t);
            }
        }
        let started_at = turns
            .first()
            .map(|t| t.started_at.clone())
            .unwrap_or_else(|| Utc::now().rfc3339());
        let root = dir.parent().unwrap_or(dir);
        let mut rec = Self::named(root, &name, &started_at, templates);
        rec.created = true;
        for t in &turns {
            rec.note_title(t);
            let next = rec.positions.len();
            let pos = *rec.positions.entry(t.turn_id).or_insert(next);
            rec.book.upsert(&rec.templates, pos, t).map_err(RecordError::Template)?;
        }
        Ok(rec)
    }

    fn note_title(&mut self, turn: &Turn) {
        if self.title.is_some() {
            return;
        }
        let first = turn
            .request
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.trim());
        self.title = Some(match first {
            Some(p) if !p.is_empty() => {
                let line = p.lines().next().unwrap_or(p);
                let short: String = line.chars().take(70).collect();
                let more = if short.len() < p.len() { "…" } else { "" };
                format!("pai — {short}{more}")
            }
            _ => format!("pai session {}", self.id),
        });
    }

    /// The session folder (it exists once a turn was recorded).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session's id in the history database: its folder's name.
    pub fn session_id(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.id.clone())
    }

    /// When the session started (RFC 3339 UTC).
    pub fn started_at(&self) -> &str {
        &self.started_at
    }

    fn io(&self, path: &Path) -> impl FnOnce(std::io::Error) -> RecordError {
        let path = path.to_path_buf();
        move |source| RecordError::Io { path, source }
    }

    /// Write (or rewrite) a turn and refresh both HTML files.
    pub fn record(&mut self, turn: &Turn) -> Result<PathBuf, RecordError> {
        if !self.created {
            std::fs::create_dir_all(&self.dir).map_err(self.io(&self.dir))?;
            self.created = true;
        }
        self.note_title(turn);
        let path = self.dir.join(format!("{:04}-turn.json", turn.turn_id));
        let json = serde_json::to_vec_pretty(turn).map_err(|e| RecordError::Io {
            path: path.clone(),
            source: e.into(),
        })?;
        write_atomic(&path, &json, true).map_err(self.io(&path))?;

        let next = self.positions.len();
        let pos = *self.positions.entry(turn.turn_id).or_insert(next);
        self.book
            .upsert(&self.templates, pos, turn)
            .map_err(RecordError::Template)?;
        let title = self.title.clone().unwrap_or_default();
        for (name, page) in self
            .book
            .pages(&self.templates, &title, &self.id, &self.started_at)
            .map_err(RecordError::Template)?
        {
            let p = self.dir.join(name);
            write_atomic(&p, page.as_bytes(), false).map_err(self.io(&p))?;
        }
        Ok(path)
    }
}

#[cfg(test)]
mod arena_tests;
#[cfg(test)]
mod tests;
/// A plain chat turn for tests elsewhere in the crate.
#[cfg(test)]
pub(crate) use tests::turn as test_turn;
