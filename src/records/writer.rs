//! The one records writer: a thread that owns the session folder and writes
//! finished turns in order, so the UI task never waits on the disk. Dropping
//! the handle flushes everything queued before it returns.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;

use crate::conversation::Turn;

use super::{SessionRecorder, Templates};

enum Cmd {
    Turn(Box<Turn>),
    Session(SessionStart),
}

/// Which session the next turns belong to.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionStart {
    /// A new folder with this name (see [`super::new_session_name`]).
    New { name: String, started_at: String },
    /// Carry on the session recorded in this folder (a resumed conversation).
    Reopen(PathBuf),
}

/// Handle to the writer thread.
pub struct RecordWriter {
    tx: Option<Sender<Cmd>>,
    thread: Option<JoinHandle<()>>,
}

impl RecordWriter {
    /// Start the writer on session `start`; `report` receives the path of
    /// each written turn or an error line.
    pub fn spawn<F>(sessions_dir: &Path, templates: Arc<Templates>, start: SessionStart, report: F) -> Self
    where
        F: Fn(Result<PathBuf, String>) + Send + 'static,
    {
        let (tx, rx) = channel::<Cmd>();
        let dir = sessions_dir.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("pai-records".into())
            .spawn(move || {
                let open = |start: SessionStart| match start {
                    SessionStart::New { name, started_at } => {
                        Ok(SessionRecorder::named(&dir, &name, &started_at, templates.clone()))
                    }
                    SessionStart::Reopen(folder) => {
                        SessionRecorder::reopen(&folder, templates.clone()).map_err(|e| e.to_string())
                    }
                };
                let mut rec = open(start);
                while let Ok(cmd) = rx.recv() {
                    match cmd {
                        Cmd::Turn(t) => match rec.as_mut() {
                            Ok(r) => report(r.record(&t).map_err(|e| e.to_string())),
                            Err(e) => report(Err(e.clone())),
                        },
                        Cmd::Session(s) => rec = open(s),
                    }
                }
            })
            .ok();
        RecordWriter { tx: Some(tx), thread }
    }

    pub fn record(&self, turn: Turn) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Cmd::Turn(Box::new(turn)));
        }
    }

    /// The next turns belong to this session.
    pub fn session(&self, start: SessionStart) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Cmd::Session(start));
        }
    }
}

impl Drop for RecordWriter {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
