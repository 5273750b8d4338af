//! Helpers: run the real binary in an isolated environment; reach the lab LLM.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_pai");

/// A scratch home: config, data and sessions stay inside it.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Sandbox {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write `polyglot.toml` in the sandbox (the working directory of `pai`).
    pub fn config(&self, toml: &str) -> PathBuf {
        let p = self.path().join("polyglot.toml");
        std::fs::write(&p, toml).unwrap();
        p
    }

    /// `pai` with a clean environment rooted in the sandbox.
    pub fn pai(&self) -> Command {
        let mut c = Command::new(BIN);
        c.current_dir(self.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path())
            .env("XDG_CONFIG_HOME", self.path().join("xdg-config"))
            .env("XDG_DATA_HOME", self.path().join("xdg-data"))
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.pai().args(args).output().unwrap()
    }

    /// Session folders under `sessions/`.
    pub fn sessions(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.path().join("sessions"))
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

pub fn lab_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("lab")
}

fn healthy(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(300))
    else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.0\r\n\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    matches!(s.read(&mut buf), Ok(n) if n > 12 && buf[..n].starts_with(b"HTTP/1.1 200"))
}

pub fn wait_healthy(port: u16, timeout: Duration) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if healthy(port) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// Port of the shared lab LLM (started by `.ci/run` or by hand), if it answers.
/// Missing counterparts are skipped loudly, and fail when `PAI_REQUIRE_LAB=1` (CI).
pub fn lab_llm_port(test: &str) -> Option<u16> {
    lab_port(
        test,
        "PAI_LAB_LLM_PORT",
        18081,
        "lab LLM",
        "lab/setup-local-llm.sh then lab/run-local-llm.sh",
    )
}

/// Port of the shared aimock server (scripted OpenAI / Anthropic / Ollama
/// replies from `lab/aimock-fixtures.json`), if it answers. Skips like the LLM.
pub fn lab_aimock_port(test: &str) -> Option<u16> {
    lab_port(
        test,
        "PAI_LAB_AIMOCK_PORT",
        18110,
        "aimock",
        "lab/setup-aimock.sh then lab/run-aimock.sh",
    )
}

fn lab_port(test: &str, env: &str, default: u16, what: &str, how: &str) -> Option<u16> {
    let port: u16 = std::env::var(env).ok().and_then(|p| p.parse().ok()).unwrap_or(default);
    if healthy(port) {
        return Some(port);
    }
    let msg = format!("SKIPPED {test}: no {what} on 127.0.0.1:{port}. Run {how} (or .ci/run).");
    if std::env::var("PAI_REQUIRE_LAB").as_deref() == Ok("1") {
        panic!("{msg} (PAI_REQUIRE_LAB=1 forbids skipping)");
    }
    // Straight to the stderr handle: `eprintln!` output of passing tests is
    // captured by the harness, and a skip must never pass silently.
    let _ = writeln!(std::io::stderr(), "{msg}");
    None
}

/// True when the lab LLM is installed (so a private instance can be started).
pub fn lab_llm_installed() -> bool {
    let home = std::env::var_os("COUNTERPARTS_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/pai-lab")));
    home.is_some_and(|h| {
        h.join("venv-xllamacpp/bin/python").exists() && h.join("models/SmolLM2-135M-Instruct.Q4_1.gguf").exists()
    })
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A private lab LLM on its own port, killed on drop.
pub struct PrivateLlm {
    pub port: u16,
    pub child: Child,
}

impl PrivateLlm {
    pub fn start() -> Option<Self> {
        let port = free_port();
        let child = Command::new(lab_dir().join("run-local-llm.sh"))
            .env("LLM_PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut me = PrivateLlm { port, child };
        if wait_healthy(port, Duration::from_secs(120)) {
            Some(me)
        } else {
            me.kill();
            None
        }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PrivateLlm {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn endpoint_config(name: &str, port: u16, extra: &str) -> String {
    format!(
        "[defaults]\nendpoint = \"{name}\"\n\n[endpoints.{name}]\nprotocol = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"smollm2\"\nfirst_token_timeout_s = 300\nidle_timeout_s = 120\n{extra}"
    )
}

/// A private aimock with its own fixtures, killed on drop (for tests whose
/// fixtures would lose to the shared instance's catch-all).
pub struct PrivateAimock {
    pub port: u16,
    child: Child,
    _fixtures: tempfile::NamedTempFile,
}

impl PrivateAimock {
    /// `None` (after a loud skip, or a panic under PAI_REQUIRE_LAB=1) when aimock is not installed.
    pub fn start(test: &str, fixtures: &serde_json::Value) -> Option<Self> {
        let home = std::env::var_os("COUNTERPARTS_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/pai-lab")))?;
        if !home.join("npm-aimock/node_modules/.bin/llmock").exists() {
            let msg = format!("SKIPPED {test}: aimock is not installed — run lab/setup-aimock.sh (or .ci/run)");
            if std::env::var("PAI_REQUIRE_LAB").as_deref() == Ok("1") {
                panic!("{msg} (PAI_REQUIRE_LAB=1 forbids skipping)");
            }
            let _ = writeln!(std::io::stderr(), "{msg}");
            return None;
        }
        let mut file = tempfile::Builder::new().suffix(".json").tempfile().ok()?;
        file.write_all(fixtures.to_string().as_bytes()).ok()?;
        let port = free_port();
        let child = Command::new(lab_dir().join("run-aimock.sh"))
            .env("AIMOCK_PORT", port.to_string())
            .env("AIMOCK_FIXTURES", file.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let me = PrivateAimock {
            port,
            child,
            _fixtures: file,
        };
        let end = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(me)
    }
}

impl Drop for PrivateAimock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
