//! Copying text out of the full-screen TUI (`/copy`), the three ways at once:
//!
//! 1. **OSC 52** (`ESC ] 52 ; c ; <base64> BEL`), which asks the terminal itself
//!    to set the clipboard — the only way that works over SSH. Inside tmux it is
//!    wrapped in tmux passthrough (tmux ≥ 3.3 needs `set -g allow-passthrough on`),
//!    inside GNU screen in screen's DCS passthrough. The bytes are *returned* in
//!    [`CopyReport::osc52`], never written here: the caller writes them through
//!    its own terminal handle at a safe moment (between frames, then flushes), so
//!    they cannot interleave with a frame being drawn. Payloads above
//!    [`ClipboardEnv::osc52_max_payload`] (100 KB) are skipped: many terminals
//!    drop them silently.
//! 2. **A native clipboard tool** found on `PATH`, tried in order: `wl-copy`
//!    (Wayland), `xclip` / `xsel` (X11), `pbcopy` (macOS), `clip.exe` (WSL). The
//!    text goes to its stdin; the whole attempt is bounded by
//!    [`ClipboardEnv::tool_timeout`] (1 s), after which a hung tool is killed and
//!    reaped (no zombies) and reported.
//! 3. **A fallback file** that is always written, atomically (temp file + rename,
//!    owner-only permissions), so the text can always be recovered.
//!
//! [`copy`] blocks for at most about `tool_timeout` (usually a few milliseconds);
//! an async caller should run it with `tokio::task::spawn_blocking`.
//! Everything the function reads from the environment comes in a
//! [`ClipboardEnv`], so tests never touch the real environment.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Everything [`copy`] needs from the outside world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClipboardEnv {
    /// Value of `TMUX` (set inside tmux).
    pub tmux: Option<String>,
    /// Value of `TERM`.
    pub term: Option<String>,
    /// Value of `WAYLAND_DISPLAY`.
    pub wayland_display: Option<String>,
    /// Value of `DISPLAY`.
    pub display: Option<String>,
    /// The `PATH` to look for clipboard tools in (`None`: no tools).
    pub search_path: Option<OsString>,
    /// Running on macOS (try `pbcopy`).
    pub macos: bool,
    /// Running under WSL (try `clip.exe`).
    pub wsl: bool,
    /// Where the text is always saved.
    pub fallback_path: PathBuf,
    /// Emit OSC 52 at all (false when the output is not a terminal).
    pub emit_osc52: bool,
    /// Largest base64 payload sent by OSC 52, in bytes.
    pub osc52_max_payload: usize,
    /// Time budget for the native tools, all attempts together.
    pub tool_timeout: Duration,
}

/// Default [`ClipboardEnv::osc52_max_payload`]: larger payloads are often dropped.
pub const OSC52_MAX_PAYLOAD: usize = 100_000;
/// Default [`ClipboardEnv::tool_timeout`].
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(1);

impl ClipboardEnv {
    /// An environment with no terminal multiplexer, no graphical session and no
    /// tools: only OSC 52 and the fallback file. Tests start from this.
    pub fn new(fallback_path: PathBuf) -> Self {
        Self {
            tmux: None,
            term: None,
            wayland_display: None,
            display: None,
            search_path: None,
            macos: false,
            wsl: false,
            fallback_path,
            emit_osc52: true,
            osc52_max_payload: OSC52_MAX_PAYLOAD,
            tool_timeout: TOOL_TIMEOUT,
        }
    }

    /// The real environment of this process (e.g. with
    /// `<data dir>/clipboard.txt` as the fallback path).
    pub fn from_process(fallback_path: PathBuf) -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .map(|v| v.to_string_lossy().into_owned())
                .filter(|v| !v.is_empty())
        };
        let wsl = var("WSL_DISTRO_NAME").is_some()
            || var("WSL_INTEROP").is_some()
            || std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .is_ok_and(|s| s.to_ascii_lowercase().contains("microsoft"));
        Self {
            tmux: var("TMUX"),
            term: var("TERM"),
            wayland_display: var("WAYLAND_DISPLAY"),
            display: var("DISPLAY"),
            search_path: std::env::var_os("PATH"),
            macos: cfg!(target_os = "macos"),
            wsl,
            ..Self::new(fallback_path)
        }
    }

    /// The terminal multiplexer between us and the terminal, if any.
    pub fn multiplexer(&self) -> Multiplexer {
        if is_set(&self.tmux) {
            Multiplexer::Tmux
        } else if self.term.as_deref().is_some_and(|t| t.starts_with("screen")) {
            Multiplexer::Screen
        } else {
            Multiplexer::None
        }
    }
}

fn is_set(v: &Option<String>) -> bool {
    v.as_deref().is_some_and(|s| !s.is_empty())
}

/// How an escape sequence has to be wrapped to reach the real terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Multiplexer {
    None,
    Tmux,
    Screen,
}

/// A native tool that could not copy, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    pub tool: String,
    pub reason: String,
}

/// What happened with the native clipboard tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NativeOutcome {
    /// `tool` took the text (after the tools in `failed`, if any, did not).
    Copied { tool: String, failed: Vec<ToolFailure> },
    /// Tools were found but none took the text.
    Failed(Vec<ToolFailure>),
    /// No tool to try; the reason says why.
    Unavailable(String),
}

/// What [`copy`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyReport {
    /// Chars (Unicode scalar values) copied.
    pub chars: usize,
    /// Bytes for the caller to write to the terminal between frames (then flush).
    pub osc52: Option<Vec<u8>>,
    /// Why no OSC 52 sequence was produced although it was wanted.
    pub osc52_skipped: Option<String>,
    pub native: NativeOutcome,
    /// The fallback file (always attempted).
    pub fallback_path: PathBuf,
    /// Why the fallback file could not be written, if it could not.
    pub fallback_error: Option<String>,
}

impl CopyReport {
    /// True when the text reached some clipboard (terminal or native).
    pub fn reached_clipboard(&self) -> bool {
        self.osc52.is_some() || matches!(self.native, NativeOutcome::Copied { .. })
    }

    /// One line for the status bar, e.g. `copied 1,234 chars (terminal
    /// clipboard via OSC 52 + xclip; also saved to /path/clipboard.txt)`.
    pub fn summary(&self) -> String {
        let count = format!(
            "{} {}",
            group_thousands(self.chars),
            if self.chars == 1 { "char" } else { "chars" }
        );
        let mut via = Vec::new();
        if self.osc52.is_some() {
            via.push("terminal clipboard via OSC 52".to_owned());
        }
        let mut notes = Vec::new();
        if let Some(why) = &self.osc52_skipped {
            notes.push(why.clone());
        }
        match &self.native {
            NativeOutcome::Copied { tool, .. } => via.push(tool.clone()),
            NativeOutcome::Failed(failures) => {
                notes.extend(failures.iter().map(|f| format!("{} failed: {}", f.tool, f.reason)));
            }
            NativeOutcome::Unavailable(why) => {
                if self.osc52.is_none() {
                    notes.push(why.clone());
                }
            }
        }
        let path = self.fallback_path.display();
        match (&self.fallback_error, via.is_empty()) {
            (None, false) => {
                notes.push(format!("also saved to {path}"));
                format!("copied {count} ({}; {})", via.join(" + "), notes.join("; "))
            }
            (None, true) => {
                let mut line = format!("saved {count} to {path} (no clipboard");
                for n in &notes {
                    let _ = write!(line, "; {n}");
                }
                line.push(')');
                line
            }
            (Some(e), false) => {
                notes.push(format!("could not save to {path}: {e}"));
                format!("copied {count} ({}; {})", via.join(" + "), notes.join("; "))
            }
            (Some(e), true) => {
                notes.push(format!("could not save to {path}: {e}"));
                format!("could not copy {count}: {}", notes.join("; "))
            }
        }
    }
}

/// Copy `text` every way available in `env`: OSC 52 bytes (returned, for the
/// caller to write), a native tool, and always the fallback file. Never panics;
/// blocks for at most about `env.tool_timeout`.
pub fn copy(text: &str, env: &ClipboardEnv) -> CopyReport {
    let chars = text.chars().count();

    let (osc52, osc52_skipped) = if env.emit_osc52 {
        let payload = base64_encode(text.as_bytes());
        if payload.len() > env.osc52_max_payload {
            let kb = payload.len().div_ceil(1000);
            (
                None,
                Some(format!("OSC 52 skipped: {kb} KB is too large for most terminals")),
            )
        } else {
            (Some(osc52_sequence(&payload, env.multiplexer())), None)
        }
    } else {
        (None, None)
    };

    let native = copy_native(text, env);

    let fallback_error = write_fallback(&env.fallback_path, text).err().map(|e| e.to_string());

    CopyReport {
        chars,
        osc52,
        osc52_skipped,
        native,
        fallback_path: env.fallback_path.clone(),
        fallback_error,
    }
}

// ---------------------------------------------------------------- OSC 52

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;
/// GNU screen drops string sequences longer than 768 bytes (since 4.2.1); each
/// piece is wrapped in `ESC P … ESC \`, 4 bytes of overhead.
const SCREEN_CHUNK: usize = 768 - 4;

/// The OSC 52 "set clipboard" sequence for an already base64-encoded payload,
/// wrapped for the multiplexer if there is one.
pub fn osc52_sequence(payload_b64: &str, mux: Multiplexer) -> Vec<u8> {
    let mut seq = Vec::with_capacity(payload_b64.len() + 8);
    seq.extend_from_slice(&[ESC, b']']);
    seq.extend_from_slice(b"52;c;");
    seq.extend_from_slice(payload_b64.as_bytes());
    seq.push(BEL);
    match mux {
        Multiplexer::None => seq,
        Multiplexer::Tmux => {
            // ESC P tmux; <sequence with every ESC doubled> ESC \
            let mut out = Vec::with_capacity(seq.len() + 12);
            out.extend_from_slice(&[ESC, b'P']);
            out.extend_from_slice(b"tmux;");
            for &b in &seq {
                if b == ESC {
                    out.push(ESC);
                }
                out.push(b);
            }
            out.extend_from_slice(&[ESC, b'\\']);
            out
        }
        Multiplexer::Screen => {
            // Each piece in its own DCS; the terminal sees them joined.
            let mut out = Vec::with_capacity(seq.len() + 4 * (seq.len() / SCREEN_CHUNK + 1));
            for piece in seq.chunks(SCREEN_CHUNK) {
                out.extend_from_slice(&[ESC, b'P']);
                out.extend_from_slice(piece);
                out.extend_from_slice(&[ESC, b'\\']);
            }
            out
        }
    }
}

/// Standard base64 (RFC 4648 alphabet, with `=` padding).
pub fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let sym = |v: u32| char::from(ALPHABET[(v & 63) as usize]);
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    let mut chunks = bytes.chunks_exact(3);
    for c in &mut chunks {
        let v = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        out.extend([sym(v >> 18), sym(v >> 12), sym(v >> 6), sym(v)]);
    }
    match *chunks.remainder() {
        [a] => {
            let v = u32::from(a) << 16;
            out.extend([sym(v >> 18), sym(v >> 12), '=', '=']);
        }
        [a, b] => {
            let v = (u32::from(a) << 16) | (u32::from(b) << 8);
            out.extend([sym(v >> 18), sym(v >> 12), sym(v >> 6), '=']);
        }
        _ => {}
    }
    out
}

// ---------------------------------------------------------------- native tools

/// How a tool wants its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Utf8,
    /// `clip.exe` misreads UTF-8 as the console code page; it recognises
    /// UTF-16LE input and stores it as Unicode text.
    Utf16Le,
}

struct Candidate {
    program: &'static str,
    args: &'static [&'static str],
    encoding: Encoding,
}

/// The tools that make sense in `env`, in the order they are tried.
fn candidates(env: &ClipboardEnv) -> Vec<Candidate> {
    let mut c = Vec::new();
    if is_set(&env.wayland_display) {
        c.push(Candidate {
            program: "wl-copy",
            args: &[],
            encoding: Encoding::Utf8,
        });
    }
    if is_set(&env.display) {
        c.push(Candidate {
            program: "xclip",
            args: &["-selection", "clipboard"],
            encoding: Encoding::Utf8,
        });
        c.push(Candidate {
            program: "xsel",
            args: &["--clipboard", "--input"],
            encoding: Encoding::Utf8,
        });
    }
    if env.macos {
        c.push(Candidate {
            program: "pbcopy",
            args: &[],
            encoding: Encoding::Utf8,
        });
    }
    if env.wsl {
        c.push(Candidate {
            program: "clip.exe",
            args: &[],
            encoding: Encoding::Utf16Le,
        });
    }
    c
}

/// `name` in one of the directories of `search_path`, if it is an executable file.
pub fn find_in_path(name: &str, search_path: Option<&OsString>) -> Option<PathBuf> {
    let search_path = search_path?;
    std::env::split_paths(search_path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

fn copy_native(text: &str, env: &ClipboardEnv) -> NativeOutcome {
    let wanted = candidates(env);
    if wanted.is_empty() {
        return NativeOutcome::Unavailable("no clipboard tool: not in a graphical session".into());
    }
    let found: Vec<(&Candidate, PathBuf)> = wanted
        .iter()
        .filter_map(|c| find_in_path(c.program, env.search_path.as_ref()).map(|p| (c, p)))
        .collect();
    if found.is_empty() {
        let names: Vec<&str> = wanted.iter().map(|c| c.program).collect();
        return NativeOutcome::Unavailable(format!("no clipboard tool on PATH: looked for {}", names.join(", ")));
    }
    let now = Instant::now();
    let deadline = now
        .checked_add(env.tool_timeout.min(Duration::from_secs(3600)))
        .unwrap_or(now);
    let mut failed = Vec::new();
    for (c, path) in found {
        let input = match c.encoding {
            Encoding::Utf8 => text.as_bytes().to_vec(),
            Encoding::Utf16Le => text.encode_utf16().flat_map(u16::to_le_bytes).collect(),
        };
        match run_tool(&path, c.args, input, env, deadline) {
            Ok(()) => {
                return NativeOutcome::Copied {
                    tool: c.program.to_owned(),
                    failed,
                };
            }
            Err(reason) => failed.push(ToolFailure {
                tool: c.program.to_owned(),
                reason,
            }),
        }
    }
    NativeOutcome::Failed(failed)
}

/// Run one tool with `input` on stdin, waiting until `deadline` at most.
fn run_tool(
    program: &Path,
    args: &[&str],
    input: Vec<u8>,
    env: &ClipboardEnv,
    deadline: Instant,
) -> Result<(), String> {
    let started = Instant::now();
    if started >= deadline {
        return Err("not tried: the time budget was used up".into());
    }
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::piped())
        // Not piped: xclip, xsel and wl-copy leave a background process holding
        // whatever they inherit, so reading to EOF would hang.
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(d) = env.display.as_deref().filter(|d| !d.is_empty()) {
        cmd.env("DISPLAY", d);
    }
    if let Some(w) = env.wayland_display.as_deref().filter(|w| !w.is_empty()) {
        cmd.env("WAYLAND_DISPLAY", w);
    }
    let mut child = spawn_retrying(&mut cmd, deadline).map_err(|e| format!("could not start: {e}"))?;

    let Some(mut stdin) = child.stdin.take() else {
        reap(&mut child);
        return Err("could not open its input".into());
    };
    // Write on a thread: a tool that does not read would block us otherwise.
    let writer = std::thread::Builder::new()
        .name("clipboard-stdin".into())
        .spawn(move || stdin.write_all(&input));
    let writer = match writer {
        Ok(w) => w,
        Err(e) => {
            reap(&mut child);
            return Err(format!("could not start a writer thread: {e}"));
        }
    };

    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                reap(&mut child);
                let waited = Instant::now().saturating_duration_since(started);
                return Err(format!("no answer after {:.1} s, abandoned", waited.as_secs_f64()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                reap(&mut child);
                return Err(format!("could not wait for it: {e}"));
            }
        }
    };
    if !status.success() {
        return Err(status.to_string());
    }
    // The tool exited; its stdin is closed unless a background child kept it.
    while !writer.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    if !writer.is_finished() {
        return Err("did not read all of its input".into()); // thread left to finish on its own
    }
    match writer.join() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("did not read all of its input ({e})")),
        Err(_) => Err("the input writer failed".into()),
    }
}

/// Spawn, retrying briefly on "text file busy" (a freshly written script can be
/// momentarily held open by a concurrent fork elsewhere in the process).
fn spawn_retrying(cmd: &mut Command, deadline: Instant) -> std::io::Result<Child> {
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(ETXTBSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// "Text file busy" (the same number on Linux and macOS).
const ETXTBSY: i32 = 26;

/// Kill and reap a child so it leaves no zombie behind.
fn reap(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

// ---------------------------------------------------------------- fallback file

fn write_fallback(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    crate::records::write_atomic(path, text.as_bytes(), false)
}

/// `1234567` → `1,234,567`.
fn group_thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
#[path = "clipboard_tests.rs"]
mod tests;
