//! How `pai arena` prints: a header per speaker, the answers as they stream,
//! the judge's rulings and the verdict with scores — all terminal-safe.

use crate::conversation::{TurnMode, TurnStatus};
use crate::headless::Io;
use crate::orchestration::OrchestratorEvent;
use crate::orchestration::arena::ArenaEvent;
use crate::protocols::StreamEvent;
use crate::records::arena_view::ruling_view;
use crate::util::sanitize::terminal_safe;
use crate::verdict::{Ruling, Verdict};

/// `── NAME (model · endpoint) ──`
pub fn header(name: &str, model: &str, endpoint: &str) -> String {
    format!(
        "── {} ({} · {}) ──",
        terminal_safe(name),
        terminal_safe(model),
        terminal_safe(endpoint)
    )
}

/// Text on one line, at most `max` characters.
pub(super) fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = flat.chars().take(max).collect();
    if out.len() < flat.len() {
        out.push('…');
    }
    terminal_safe(&out).into_owned()
}

/// `order 1 (A = Ada, B = Bob): Bob — reasons`
pub fn ruling_line(k: usize, r: &Ruling) -> String {
    let v = ruling_view(r, &r.order);
    let why = match &r.error {
        Some(e) => format!(" — {}", one_line(e, 200)),
        None if r.reasons.trim().is_empty() => String::new(),
        None => format!(" — {}", one_line(&r.reasons, 240)),
    };
    format!(
        "order {k} ({}): {}{why}",
        terminal_safe(&v.order),
        terminal_safe(&v.outcome)
    )
}

/// The verdict's summary line and one line of scores per participant.
pub fn verdict_lines(v: &Verdict) -> String {
    let view = crate::records::arena_view::verdict_view(v);
    let mut s = format!("verdict: {}\n", terminal_safe(&view.summary));
    let w = view.rows.iter().map(|r| r.name.chars().count()).max().unwrap_or(0);
    for r in &view.rows {
        let mut cells: Vec<String> = view
            .criteria
            .iter()
            .zip(&r.cells)
            .map(|(c, v)| format!("{} {v}", terminal_safe(c)))
            .collect();
        cells.push(format!("mean {}", r.mean));
        let pad = w - r.name.chars().count();
        s.push_str(&format!(
            "  {}{}  {}\n",
            terminal_safe(&r.name),
            " ".repeat(pad),
            cells.join(" · ")
        ));
    }
    s
}

pub(super) struct Printer<'a, 'b> {
    pub(super) io: &'a mut Io<'b>,
    pub(super) json: bool,
    pub(super) out: String,
    pub(super) err: String,
    /// stdout is at the start of a line.
    pub(super) col0: bool,
    /// A section was printed (the next one starts after a blank line).
    pub(super) started: bool,
    pub(super) judging: bool,
    pub(super) judge_header: bool,
    pub(super) rulings: usize,
    pub(super) broken: bool,
}

impl Printer<'_, '_> {
    pub(super) fn push(&mut self, s: &str) {
        if !s.is_empty() && !self.json {
            self.out.push_str(s);
            self.col0 = s.ends_with('\n');
        }
    }

    pub(super) fn section(&mut self, title: &str) {
        if !self.col0 {
            self.push("\n");
        }
        if self.started {
            self.push("\n");
        }
        self.started = true;
        self.push(&format!("{title}\n"));
    }

    pub(super) fn event(&mut self, ev: &OrchestratorEvent) {
        match ev {
            OrchestratorEvent::TurnStarted {
                endpoint,
                model,
                participant,
                ..
            } => {
                if !self.judging {
                    self.section(&header(participant.as_deref().unwrap_or(model), model, endpoint));
                } else if !self.judge_header {
                    self.judge_header = true;
                    self.section(&header("judge", model, endpoint));
                    if self.io.err_is_tty {
                        self.err.push_str("pai: the judge is reading the transcript…\n");
                    }
                }
            }
            OrchestratorEvent::Stream { event, .. } => match event {
                StreamEvent::Text(t) if !self.judging => self.push(&terminal_safe(t)),
                StreamEvent::Notice(n) if self.io.err_is_tty => {
                    self.err.push_str(&format!("pai: {}\n", terminal_safe(n)));
                }
                StreamEvent::Retrying { attempt, delay, reason } if self.io.err_is_tty => {
                    self.err.push_str(&format!(
                        "pai: {reason}; retry {attempt} in {:.1}s…\n",
                        delay.as_secs_f64()
                    ));
                }
                _ => {}
            },
            OrchestratorEvent::TurnFinished { outcome, .. } => {
                let t = outcome.turn();
                if t.mode == TurnMode::Judge {
                    if let Some(r) = &t.ruling {
                        self.rulings += 1;
                        let line = ruling_line(self.rulings, r);
                        self.push(&format!("{line}\n"));
                    }
                    return;
                }
                if !self.col0 {
                    self.push("\n");
                }
                match t.status {
                    TurnStatus::Completed if t.response.text.trim().is_empty() => self.push("(no answer)\n"),
                    TurnStatus::Completed if t.response.finish_reason.as_deref() == Some("length") => {
                        self.push("[cut off: max tokens]\n");
                    }
                    TurnStatus::Completed => {}
                    TurnStatus::Cancelled => self.push("[stopped]\n"),
                    TurnStatus::Failed => self.push("[failed]\n"),
                }
            }
            OrchestratorEvent::Arena(ArenaEvent::Ended { .. }) => self.judging = true,
            OrchestratorEvent::Arena(ArenaEvent::Verdict(v)) => {
                let lines = verdict_lines(v);
                self.push(&lines);
            }
            OrchestratorEvent::Arena(ArenaEvent::Paused { .. } | ArenaEvent::Resumed | ArenaEvent::Finished)
            | OrchestratorEvent::ApprovalNeeded { .. }
            | OrchestratorEvent::ToolStarted { .. }
            | OrchestratorEvent::ToolOutput { .. }
            | OrchestratorEvent::ToolFinished { .. }
            | OrchestratorEvent::Checkpoint { .. }
            | OrchestratorEvent::AgentFinished { .. } => {}
        }
    }

    /// One write and one flush for everything rendered so far.
    pub(super) fn flush(&mut self) -> bool {
        if !self.err.is_empty() {
            let _ = self.io.err.write_all(self.err.as_bytes());
            let _ = self.io.err.flush();
            self.err.clear();
        }
        if !self.out.is_empty() && !self.broken {
            let ok = self
                .io
                .out
                .write_all(self.out.as_bytes())
                .and_then(|()| self.io.out.flush())
                .is_ok();
            self.broken = !ok;
        }
        self.out.clear();
        !self.broken
    }
}
