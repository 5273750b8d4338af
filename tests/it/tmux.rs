//! A private tmux server for driving the real TUI: send keys, poll the pane
//! until text appears (never fixed sleeps), read pane state after exit.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static N: AtomicUsize = AtomicUsize::new(0);

pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// `None` when tmux is not installed (the caller reports the skip).
    pub fn start(cmd: &str, width: u16, height: u16) -> Option<Self> {
        let socket = format!("pai-e2e-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst));
        let t = Tmux { socket };
        let ok = t
            .cmd(&[
                "new-session",
                "-d",
                "-s",
                "e2e",
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
                cmd,
            ])
            .status()
            .ok()?
            .success();
        if !ok {
            return None;
        }
        // Keep the pane after the program exits, to inspect how it left the terminal.
        t.run(&["set-option", "-t", "e2e", "remain-on-exit", "on"]);
        t.run(&["set-option", "-s", "escape-time", "0"]);
        Some(t)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-L").arg(&self.socket).args(args);
        c
    }

    fn run(&self, args: &[&str]) -> String {
        self.cmd(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    pub fn capture(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "e2e"])
    }

    /// The pane with its scrollback (lines that scrolled off the top).
    pub fn capture_all(&self) -> String {
        self.run(&["capture-pane", "-p", "-S", "-500", "-t", "e2e"])
    }

    /// Type text literally, then optional named keys (Enter, Escape, …).
    pub fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "e2e", "-l", text]);
    }

    pub fn key(&self, key: &str) {
        self.run(&["send-keys", "-t", "e2e", key]);
    }

    /// Poll the pane until `pred` holds; panics with the last screen after `timeout`.
    pub fn wait_for(&self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        self.wait_for_in(what, timeout, false, pred)
    }

    /// Like `wait_for`, over the scrollback too.
    pub fn wait_for_in(&self, what: &str, timeout: Duration, history: bool, pred: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + timeout;
        loop {
            let screen = if history { self.capture_all() } else { self.capture() };
            if pred(&screen) {
                return screen;
            }
            if Instant::now() > end {
                panic!("timed out waiting for {what}; screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A tmux format value of the pane (e.g. `pane_dead`, `alternate_on`).
    pub fn pane(&self, format: &str) -> String {
        self.run(&["display-message", "-p", "-t", "e2e", &format!("#{{{format}}}")])
            .trim()
            .to_string()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).status();
    }
}

pub fn available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}
