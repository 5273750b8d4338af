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
    NewSession,
}

/// Handle to the writer thread.
pub struct RecordWriter {
    tx: Option<Sender<Cmd>>,
    thread: Option<JoinHandle<()>>,
}

impl RecordWriter {
    /// Start the writer; `report` receives the path of each written turn or an error line.
    pub fn spawn<F>(sessions_dir: &Path, templates: Arc<Templates>, report: F) -> Self
    where
        F: Fn(Result<PathBuf, String>) + Send + 'static,
    {
        let (tx, rx) = channel::<Cmd>();
        let dir = sessions_dir.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("pai-records".into())
            .spawn(move || {
                let mut rec = SessionRecorder::new(&dir, templates.clone());
                while let Ok(cmd) = rx.recv() {
                    match cmd {
                        Cmd::Turn(t) => report(rec.record(&t).map_err(|e| e.to_string())),
                        Cmd::NewSession => rec = SessionRecorder::new(&dir, templates.clone()),
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

    pub fn new_session(&self) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Cmd::NewSession);
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
