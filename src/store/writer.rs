//! The one store writer: a thread that owns the write connection and applies
//! queued writes, so no UI task ever waits on SQLite. Sending never blocks.
//!
//! Everything queued while a batch is written goes into the next batch, in one
//! transaction; a turn written several times in a batch (checkpoints while it
//! streams, then its final state) is written once, in its latest state. A
//! batch that meets a lock is kept and tried again with the next one. Dropping
//! the handle writes everything queued before it returns.
//!
//! Opening checks a small file at once; a large one gets its weekly full check
//! here, after opening, so neither start-up nor the first write waits for it,
//! and an unfinished check is dropped when the handle is (pai exits).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::conversation::Turn;

use super::{Phase, SessionMeta, Store, StoreError, ToolCallStatus, Vote, WriteOp};

/// What the writer tells its owner.
#[derive(Debug)]
pub enum StoreReport {
    /// History is on (with something worth telling the user, if any).
    Opened { path: PathBuf, warning: Option<String> },
    /// The store cannot be used: nothing more is written this run.
    Unavailable(StoreError),
    /// One write failed (the session folder still has the record).
    Failed { what: String, error: StoreError },
}

enum Cmd {
    Op(WriteOp),
    Flush(Sender<()>),
}

/// The largest batch written in one transaction.
const MAX_BATCH: usize = 512;
/// Tries per write when the database is locked by someone else.
const LOCKED_TRIES: u32 = 3;

/// Handle to the writer thread.
pub struct StoreWriter {
    tx: Option<Sender<Cmd>>,
    thread: Option<JoinHandle<()>>,
    check: Arc<Mutex<CheckState>>,
}

/// The background integrity check, shared with the handle so dropping it can
/// stop the check (and only the check: writes always finish).
#[derive(Default)]
struct CheckState {
    closing: bool,
    running: Option<rusqlite::InterruptHandle>,
}

impl StoreWriter {
    /// Open the store at `path` on the writer thread (start-up never waits
    /// for it) and write what is queued. `report` hears how it goes.
    pub fn spawn<F>(path: PathBuf, report: F) -> Self
    where
        F: Fn(StoreReport) + Send + 'static,
    {
        Self::with_opener(move || Store::open(&path), report)
    }

    /// Like [`StoreWriter::spawn`], with any way of opening (tests, benchmarks).
    pub fn with_opener<O, F>(open: O, report: F) -> Self
    where
        O: FnOnce() -> Result<Store, StoreError> + Send + 'static,
        F: Fn(StoreReport) + Send + 'static,
    {
        let (tx, rx) = channel::<Cmd>();
        let check = Arc::new(Mutex::new(CheckState::default()));
        let shared = check.clone();
        let thread = std::thread::Builder::new()
            .name("pai-store".into())
            .spawn(move || run(open, rx, &report, &shared))
            .ok();
        StoreWriter {
            tx: Some(tx),
            thread,
            check,
        }
    }

    fn send(&self, op: WriteOp) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Cmd::Op(op));
        }
    }

    /// Create or update a session's row.
    pub fn session(&self, meta: SessionMeta) {
        self.send(WriteOp::Session(meta));
    }

    /// A finished turn (idempotent per session and `turn_id`).
    pub fn turn(&self, session: &str, turn: Turn) {
        self.send(WriteOp::Turn {
            session: session.to_string(),
            turn: Box::new(turn),
            phase: Phase::Final,
        });
    }

    /// A turn still streaming: whatever arrived so far, stored as `streaming`.
    pub fn checkpoint(&self, session: &str, turn: Turn) {
        self.send(WriteOp::Turn {
            session: session.to_string(),
            turn: Box::new(turn),
            phase: Phase::Streaming,
        });
    }

    /// A tool call's new status (and result).
    pub fn tool_call(&self, session: &str, call_id: &str, status: ToolCallStatus, result: Option<String>) {
        self.send(WriteOp::ToolCall {
            session: session.to_string(),
            call_id: call_id.to_string(),
            status,
            result,
        });
    }

    pub fn vote(&self, vote: Vote) {
        self.send(WriteOp::Vote(Box::new(vote)));
    }

    /// Wait until everything queued so far is written (or failed). Blocks:
    /// not for a UI task. False when the writer is gone.
    pub fn flush(&self) -> bool {
        let (ack_tx, ack_rx) = channel();
        match &self.tx {
            Some(tx) if tx.send(Cmd::Flush(ack_tx)).is_ok() => ack_rx.recv().is_ok(),
            _ => false,
        }
    }
}

impl Drop for StoreWriter {
    fn drop(&mut self) {
        self.tx.take();
        if let Ok(mut c) = self.check.lock() {
            c.closing = true;
            if let Some(h) = c.running.take() {
                h.interrupt();
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The weekly full check, if due and pai is not leaving. False when the file
/// is damaged (reported): stop writing.
fn background_check(store: &Store, state: &Mutex<CheckState>, report: &dyn Fn(StoreReport)) -> bool {
    if !store.check_due() {
        return true;
    }
    match state.lock() {
        Ok(mut c) if !c.closing => c.running = Some(store.interrupt_handle()),
        _ => return true,
    }
    let leaving = || state.lock().map_or(true, |c| c.closing);
    let result = store.run_check(&leaving);
    if let Ok(mut c) = state.lock() {
        c.running = None;
    }
    match result {
        Err(e) if e.is_corrupt() => {
            report(StoreReport::Unavailable(e));
            false
        }
        // Done, or stopped because pai is leaving.
        Ok(_) | Err(_) => true,
    }
}

fn run<O>(open: O, rx: Receiver<Cmd>, report: &dyn Fn(StoreReport), check: &Mutex<CheckState>)
where
    O: FnOnce() -> Result<Store, StoreError>,
{
    let mut store = match open() {
        Ok(s) => {
            report(StoreReport::Opened {
                path: s.path().to_path_buf(),
                warning: s.warning().map(str::to_string),
            });
            s
        }
        Err(e) => {
            report(StoreReport::Unavailable(e));
            return drain(&rx);
        }
    };
    if !background_check(&store, check, report) {
        return drain(&rx);
    }
    // Writes that met a lock, with the tries they had.
    let mut pending: Vec<WriteOp> = Vec::new();
    let mut pending_tries: Vec<u32> = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut acks = Vec::new();
        let mut batch = std::mem::take(&mut pending);
        let mut tries = std::mem::take(&mut pending_tries);
        let mut next = Some(first);
        while let Some(cmd) = next {
            match cmd {
                Cmd::Op(op) => {
                    batch.push(op);
                    tries.push(0);
                }
                Cmd::Flush(ack) => acks.push(ack),
            }
            next = if batch.len() < MAX_BATCH {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        coalesce(&mut batch, &mut tries);
        let outcome = if batch.is_empty() {
            Ok(Vec::new())
        } else {
            store.apply(&batch)
        };
        let mut gone = false;
        match outcome {
            Ok(results) => {
                for (op, r) in batch.iter().zip(results) {
                    match r {
                        Ok(()) => {}
                        Err(error) if error.is_corrupt() => {
                            report(StoreReport::Unavailable(error));
                            gone = true;
                            break;
                        }
                        Err(error) => report(StoreReport::Failed {
                            what: op.describe(),
                            error,
                        }),
                    }
                }
            }
            Err(StoreError::Locked { path, waited }) => {
                for (op, t) in batch.into_iter().zip(tries) {
                    if t + 1 < LOCKED_TRIES {
                        pending.push(op);
                        pending_tries.push(t + 1);
                    } else {
                        report(StoreReport::Failed {
                            what: op.describe(),
                            error: StoreError::Locked {
                                path: path.clone(),
                                waited: waited * LOCKED_TRIES,
                            },
                        });
                    }
                }
            }
            Err(e) if e.is_corrupt() => {
                report(StoreReport::Unavailable(e));
                gone = true;
            }
            Err(e) => {
                let what = format!("{} queued writes", batch.len());
                report(StoreReport::Failed { what, error: e });
            }
        }
        for a in acks {
            let _ = a.send(());
        }
        if gone {
            return drain(&rx);
        }
    }
    for op in pending {
        report(StoreReport::Failed {
            what: op.describe(),
            error: StoreError::Locked {
                path: store.path().to_path_buf(),
                waited: std::time::Duration::ZERO,
            },
        });
    }
}

/// With no store: answer flushes, drop writes.
fn drain(rx: &Receiver<Cmd>) {
    while let Ok(cmd) = rx.recv() {
        match cmd {
            Cmd::Flush(ack) => {
                let _ = ack.send(());
            }
            Cmd::Op(_) => {}
        }
    }
}

/// Keep only the latest write of each turn in the batch.
fn coalesce(batch: &mut Vec<WriteOp>, tries: &mut Vec<u32>) {
    let mut seen: HashSet<(String, u32)> = HashSet::new();
    let mut keep = vec![true; batch.len()];
    for (i, op) in batch.iter().enumerate().rev() {
        if let WriteOp::Turn { session, turn, .. } = op
            && !seen.insert((session.clone(), turn.turn_id))
        {
            keep[i] = false;
        }
    }
    let mut k = keep.iter();
    batch.retain(|_| k.next().copied().unwrap_or(true));
    let mut k = keep.iter();
    tries.retain(|_| k.next().copied().unwrap_or(true));
}
