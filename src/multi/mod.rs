//! The headless front ends for more than one model at a time: `pai arena`
//! ([`arena`]) and `pai compare` ([`compare`]), and what they share — one
//! adapter per endpoint, the session folder all their turns go into, the
//! prompt from stdin, the short stats line and the JSON of a turn.
//!
//! Like [`crate::headless`], this owns stdout and stderr outside the TUI and
//! nothing else: orchestration stays in [`crate::orchestration`], files in
//! [`crate::records`].

pub mod arena;
pub mod arena_print;
pub mod compare;

use std::collections::HashMap;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::config::{Config, EndpointConfig, Secrets};
use crate::conversation::Turn;
use crate::protocols::{ProtocolAdapter, build_adapter};
use crate::records::Templates;
use crate::records::writer::{RecordWriter, SessionStart};
use crate::stats::RequestStats;
use crate::store::{SessionMeta, StoreReport, StoreWriter, Vote};

/// The prompt piped into stdin: `None` on a terminal or when stdin is empty.
pub fn piped_stdin() -> Result<Option<String>, String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(None);
    }
    let mut s = String::new();
    stdin
        .lock()
        .read_to_string(&mut s)
        .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
    Ok(Some(s).filter(|s| !s.trim().is_empty()))
}

/// The words of a PROMPT argument, `None` when there are none.
pub fn joined(words: &[String]) -> Option<String> {
    Some(words.join(" ")).filter(|s| !s.trim().is_empty())
}

/// One adapter per endpoint, shared by every seat or lane on it (so a
/// managed endpoint is launched once, not once per participant).
pub struct Adapters<'a> {
    secrets: &'a Secrets,
    built: HashMap<String, Arc<dyn ProtocolAdapter>>,
}

impl<'a> Adapters<'a> {
    pub fn new(secrets: &'a Secrets) -> Self {
        Adapters {
            secrets,
            built: HashMap::new(),
        }
    }

    pub fn get(&mut self, ep: &EndpointConfig) -> Result<Arc<dyn ProtocolAdapter>, String> {
        if let Some(a) = self.built.get(&ep.name) {
            return Ok(a.clone());
        }
        let a = build_adapter(ep, self.secrets).map_err(|e| format!("endpoint `{}`: {e}", ep.name))?;
        self.built.insert(ep.name.clone(), a.clone());
        Ok(a)
    }
}

#[derive(Default)]
struct RecordLog {
    dir: Option<PathBuf>,
    errors: Vec<String>,
}

/// Every turn of one run into ONE session folder and one history session,
/// written off the async task by the records and history writers: a
/// checkpoint as each turn goes out and while it streams, the turn when it
/// finishes, and votes from an agreeing verdict.
pub struct Recording {
    writer: Option<RecordWriter>,
    history: Option<StoreWriter>,
    /// The session's name (its folder's, and its id in the history).
    name: String,
    started_at: String,
    sessions_dir: Option<PathBuf>,
    described: Mutex<bool>,
    log: Arc<Mutex<RecordLog>>,
}

fn note(log: &Mutex<RecordLog>, e: String) {
    if let Ok(mut l) = log.lock()
        && !l.errors.contains(&e)
    {
        l.errors.push(e);
    }
}

impl Recording {
    /// The recording of a `pai arena` / `pai compare` run: the session folder
    /// and the history database, or nothing with `--no-log`.
    pub fn for_run(config: &Config, templates: Arc<Templates>, no_log: bool) -> Self {
        let sessions = (!no_log).then(|| config.defaults.sessions_dir.clone());
        Self::start(
            sessions.as_deref(),
            templates,
            crate::app::history_location(config, no_log),
        )
    }

    /// `None` for `--no-log`: nothing is written. `history_db`: the history
    /// database to record into as well.
    pub fn start(sessions_dir: Option<&Path>, templates: Arc<Templates>, history_db: Option<PathBuf>) -> Self {
        let log = Arc::new(Mutex::new(RecordLog::default()));
        let (name, started_at) = crate::records::new_session_name();
        let writer = sessions_dir.map(|dir| {
            let log = log.clone();
            let start = SessionStart::New {
                name: name.clone(),
                started_at: started_at.clone(),
            };
            RecordWriter::spawn(dir, templates, start, move |r| match r {
                Ok(path) => {
                    if let Ok(mut l) = log.lock() {
                        l.dir = path.parent().map(Path::to_path_buf);
                    }
                }
                Err(e) => note(&log, e),
            })
        });
        let history = history_db.map(|db| {
            let log = log.clone();
            StoreWriter::spawn(db, move |r| match r {
                StoreReport::Opened { warning: None, .. } => {}
                StoreReport::Opened { path, warning: Some(w) } => {
                    note(&log, format!("warning: history database {}: {w}", path.display()))
                }
                StoreReport::Unavailable(e) => note(&log, format!("history is off: {e}")),
                StoreReport::Failed { what, error } => note(&log, format!("history: cannot record {what}: {error}")),
            })
        });
        Recording {
            writer,
            history,
            name,
            started_at,
            sessions_dir: sessions_dir.map(Path::to_path_buf),
            described: Mutex::new(false),
            log,
        }
    }

    /// The session's id.
    pub fn session(&self) -> &str {
        &self.name
    }

    fn describe(&self, h: &StoreWriter, turn: &Turn) {
        let Ok(mut d) = self.described.lock() else { return };
        if *d {
            return;
        }
        *d = true;
        h.session(SessionMeta {
            id: self.name.clone(),
            started_at: self.started_at.clone(),
            title: None,
            endpoint: turn.endpoint.clone(),
            model: turn.model.clone(),
            system: None,
            folder: self.sessions_dir.as_ref().map(|d| d.join(&self.name)),
            mode: turn.mode,
        });
    }

    /// A finished turn.
    pub fn record(&self, turn: &Turn) {
        if let Some(h) = &self.history {
            self.describe(h, turn);
            h.turn(&self.name, turn.clone());
        }
        if let Some(w) = &self.writer {
            w.record(turn.clone());
        }
    }

    /// A turn as it stands while streaming (crash safety).
    pub fn checkpoint(&self, turn: &Turn) {
        if let Some(h) = &self.history {
            self.describe(h, turn);
            h.checkpoint(&self.name, turn.clone());
        }
        if let Some(w) = &self.writer {
            w.record(turn.clone());
        }
    }

    pub fn vote(&self, v: Vote) {
        if let Some(h) = &self.history {
            h.vote(v);
        }
    }

    /// Wait for everything queued; the session folder (if a turn was written)
    /// and the distinct errors met.
    pub fn finish(mut self) -> (Option<PathBuf>, Vec<String>) {
        drop(self.writer.take());
        drop(self.history.take());
        match self.log.lock() {
            Ok(mut l) => (l.dir.take(), std::mem::take(&mut l.errors)),
            Err(_) => (None, vec!["the records writer stopped unexpectedly".into()]),
        }
    }
}

/// `first token 312 ms · 18.4 tok/s · 24 tokens · 1.6 s` (`(est.)` when the
/// server reported no usage; `· hit max tokens` when the answer was cut there).
pub fn stats_brief(s: &RequestStats) -> String {
    let mut parts = Vec::with_capacity(4);
    parts.push(match s.ttft_ms {
        Some(ms) => format!("first token {ms} ms"),
        None => "no first token".into(),
    });
    if let Some(tps) = s.tokens_per_sec {
        parts.push(format!("{tps:.1} tok/s"));
    }
    let est = if s.usage_reported { "" } else { " (est.)" };
    parts.push(format!("{} tokens{est}", s.output_tokens));
    parts.push(format!("{:.1} s", s.duration_ms as f64 / 1000.0));
    if s.finish_reason.as_deref() == Some("length") {
        parts.push("hit max tokens".into());
    }
    parts.join(" · ")
}

/// A turn in `--json` output: who, what they said, how it ended, its stats.
pub fn turn_json(t: &Turn) -> Value {
    json!({
        "turn_id": t.turn_id,
        "participant": t.participant_name,
        "endpoint": t.endpoint,
        "model": t.model,
        "text": t.response.text,
        "status": t.status,
        "error": t.response.error,
        "finish_reason": t.response.finish_reason,
        "stats": t.stats,
    })
}

/// A current-thread runtime (the requests are I/O bound).
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(ttft: Option<u64>, tps: Option<f64>, reported: bool) -> RequestStats {
        RequestStats {
            ttft_ms: ttft,
            duration_ms: 1620,
            input_tokens: 10,
            output_tokens: 24,
            usage_reported: reported,
            tokens_per_sec: tps,
            finish_reason: Some("stop".into()),
            retries: 0,
        }
    }

    #[test]
    fn the_stats_line_says_first_token_speed_tokens_and_time() {
        assert_eq!(
            stats_brief(&stats(Some(312), Some(18.44), true)),
            "first token 312 ms · 18.4 tok/s · 24 tokens · 1.6 s"
        );
        let mut cut = stats(None, None, false);
        cut.finish_reason = Some("length".into());
        assert_eq!(
            stats_brief(&cut),
            "no first token · 24 tokens (est.) · 1.6 s · hit max tokens"
        );
    }

    #[test]
    fn prompt_words_join_and_blank_is_none() {
        assert_eq!(joined(&["a".into(), "b".into()]).as_deref(), Some("a b"));
        assert_eq!(joined(&[]), None);
        assert_eq!(joined(&[" ".into()]), None);
    }

    #[test]
    fn recording_puts_every_turn_in_one_folder_and_no_log_writes_nothing() {
        let root = tempfile::tempdir().unwrap();
        let rec = Recording::start(Some(root.path()), Arc::new(Templates::builtin()), None);
        for id in 1..=3 {
            rec.record(&crate::records::test_turn(id, "q", "a"));
        }
        let (dir, errors) = rec.finish();
        assert!(errors.is_empty(), "{errors:?}");
        let dir = dir.unwrap();
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
        assert!(dir.join("0003-turn.json").is_file());

        let rec = Recording::start(None, Arc::new(Templates::builtin()), None);
        rec.record(&crate::records::test_turn(1, "q", "a"));
        assert_eq!(rec.finish(), (None, vec![]));
    }

    #[test]
    fn a_record_error_is_reported_once() {
        let root = tempfile::tempdir().unwrap();
        let blocker = root.path().join("file");
        std::fs::write(&blocker, "x").unwrap();
        let rec = Recording::start(Some(&blocker), Arc::new(Templates::builtin()), None);
        rec.record(&crate::records::test_turn(1, "q", "a"));
        rec.record(&crate::records::test_turn(2, "q", "a"));
        let (dir, errors) = rec.finish();
        assert_eq!(dir, None);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("sessions_dir"), "{errors:?}");
    }
}
