//! MCP servers through rmcp: start them (stdio children with a minimal
//! environment, or streamable HTTP), list their tools, call them, report their
//! status, restart them. rmcp types stay inside this module.
//!
//! Nothing here blocks: every start and call has a timeout, a dead or hung
//! server becomes a status and an error message, never a frozen UI.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::AsyncBufReadExt;

use super::{PolicedTool, ServerTools, Tool, ToolContext, ToolError, ToolFuture, ToolSource};
use crate::config::{McpServerConfig, McpTransport, Secrets};
use crate::protocols::ToolSpec;

/// Variables a stdio server inherits; everything else (API keys included) stays out.
const INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "TZ",
];
/// Lines of a server's stderr kept for error messages.
const STDERR_LINES: usize = 20;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpStatus {
    Disabled,
    Starting,
    Ready { tools: usize, server: Option<String> },
    Failed(String),
    Stopped,
}

impl McpStatus {
    pub fn label(&self) -> String {
        match self {
            McpStatus::Disabled => "disabled".into(),
            McpStatus::Starting => "starting…".into(),
            McpStatus::Ready { tools, server } => match server {
                Some(s) => format!("ready ({tools} tools, {s})"),
                None => format!("ready ({tools} tools)"),
            },
            McpStatus::Failed(e) => format!("failed: {e}"),
            McpStatus::Stopped => "stopped".into(),
        }
    }
}

type Client = RunningService<RoleClient, ClientConfig>;

struct Live {
    client: Arc<Client>,
    tools: Vec<rmcp::model::Tool>,
}

/// One configured server.
pub struct McpServer {
    cfg: McpServerConfig,
    secrets: Secrets,
    /// The environment stdio children may inherit from (filtered to INHERITED_ENV).
    base_env: Arc<Vec<(String, String)>>,
    log_dir: Option<PathBuf>,
    status: Mutex<McpStatus>,
    live: tokio::sync::Mutex<Option<Live>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl McpServer {
    pub fn name(&self) -> &str {
        &self.cfg.name
    }

    pub fn config(&self) -> &McpServerConfig {
        &self.cfg
    }

    pub fn status(&self) -> McpStatus {
        lock(&self.status).clone()
    }

    fn set_status(&self, s: McpStatus) {
        *lock(&self.status) = s;
    }

    fn last_stderr(&self) -> Option<String> {
        lock(&self.stderr).back().cloned()
    }

    /// Connect (or reconnect) within the startup timeout.
    pub async fn start(self: &Arc<Self>) -> McpStatus {
        self.stop().await;
        self.set_status(McpStatus::Starting);
        let r = tokio::time::timeout(self.cfg.startup_timeout, self.connect()).await;
        let status = match r {
            Ok(Ok(live)) => {
                let server = live
                    .client
                    .peer_info()
                    .and_then(|i| i.server_info.as_ref().map(|s| format!("{} {}", s.name, s.version)));
                let status = McpStatus::Ready {
                    tools: live.tools.len(),
                    server,
                };
                *self.live.lock().await = Some(live);
                status
            }
            Ok(Err(e)) => McpStatus::Failed(self.with_stderr(e)),
            Err(_) => McpStatus::Failed(self.with_stderr(format!(
                "no answer within {}s — the server may be hung or slow to start; raise startup_timeout_s",
                self.cfg.startup_timeout.as_secs_f64()
            ))),
        };
        self.set_status(status.clone());
        status
    }

    fn with_stderr(&self, e: String) -> String {
        match self.last_stderr() {
            Some(line) => format!("{e} (stderr: {line})"),
            None => e,
        }
    }

    async fn connect(&self) -> Result<Live, String> {
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("pai", env!("CARGO_PKG_VERSION")),
        );
        let client = match &self.cfg.transport {
            McpTransport::Stdio { command, args, env } => {
                let cmd = tokio::process::Command::new(command).configure(|c| {
                    c.args(args).env_clear().kill_on_drop(true);
                    for (k, v) in self.base_env.iter() {
                        if INHERITED_ENV.contains(&k.as_str()) {
                            c.env(k, v);
                        }
                    }
                    for (k, v) in env {
                        c.env(k, v);
                    }
                });
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                if let Some(err) = stderr {
                    self.capture_stderr(err);
                }
                info.serve(transport)
                    .await
                    .map_err(|e| format!("handshake failed: {e}"))?
            }
            McpTransport::Http { url, headers } => {
                crate::protocols::transport::ensure_crypto();
                let mut custom = HashMap::new();
                for (k, v) in headers {
                    let v = crate::protocols::transport::expand_vars(v, &self.secrets)?;
                    let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|_| format!("bad header name `{k}`"))?;
                    let value = reqwest::header::HeaderValue::from_str(&v)
                        .map_err(|_| format!("bad value for header `{k}`"))?;
                    custom.insert(name, value);
                }
                let cfg = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    url.as_str(),
                )
                .custom_headers(custom);
                let transport = StreamableHttpClientTransport::from_config(cfg);
                info.serve(transport)
                    .await
                    .map_err(|e| format!("cannot connect to {url}: {e}"))?
            }
        };
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| format!("cannot list tools: {e}"))?;
        Ok(Live {
            client: Arc::new(client),
            tools,
        })
    }

    fn capture_stderr(&self, err: tokio::process::ChildStderr) {
        let buf = self.stderr.clone();
        let log = self
            .log_dir
            .as_ref()
            .map(|d| d.join(format!("mcp-{}.log", self.cfg.name)));
        tokio::spawn(async move {
            let mut file = match &log {
                Some(p) => {
                    if let Some(d) = p.parent() {
                        let _ = tokio::fs::create_dir_all(d).await;
                    }
                    tokio::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(p)
                        .await
                        .ok()
                }
                None => None,
            };
            let mut lines = tokio::io::BufReader::new(err).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(f) = file.as_mut() {
                    use tokio::io::AsyncWriteExt;
                    let _ = f.write_all(format!("{line}\n").as_bytes()).await;
                }
                let mut b = lock(&buf);
                if b.len() == STDERR_LINES {
                    b.pop_front();
                }
                b.push_back(crate::util::sanitize::terminal_safe(&line).into_owned());
            }
        });
    }

    /// Disconnect (a stdio child is killed).
    pub async fn stop(&self) {
        let live = self.live.lock().await.take();
        if let Some(live) = live {
            if let Ok(client) = Arc::try_unwrap(live.client) {
                let _ = tokio::time::timeout(Duration::from_secs(3), client.cancel()).await;
            }
            self.set_status(McpStatus::Stopped);
        }
    }

    /// This server's tools as [`Tool`]s with their approval policy.
    pub async fn tools(self: &Arc<Self>) -> Vec<PolicedTool> {
        let live = self.live.lock().await;
        let Some(live) = live.as_ref() else { return Vec::new() };
        live.tools
            .iter()
            .map(|t| {
                let name = t.name.to_string();
                let policy = self.cfg.tool_policy.get(&name).copied().unwrap_or(self.cfg.policy);
                let tool: Arc<dyn Tool> = Arc::new(McpTool {
                    server: self.clone(),
                    spec: ToolSpec {
                        name: name.clone(),
                        description: t.description.as_deref().unwrap_or("").to_string(),
                        parameters: serde_json::Value::Object((*t.input_schema).clone()),
                    },
                });
                (tool, policy)
            })
            .collect()
    }

    async fn call(&self, tool: &str, args: serde_json::Value) -> Result<String, ToolError> {
        let client = {
            let live = self.live.lock().await;
            match live.as_ref() {
                Some(l) => l.client.clone(),
                None => {
                    return Err(ToolError::failed(
                        tool,
                        format!(
                            "MCP server `{}` is not running ({}) — /mcp restart {} to start it",
                            self.cfg.name,
                            self.status().label(),
                            self.cfg.name
                        ),
                    ));
                }
            }
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        match args {
            serde_json::Value::Object(map) => params = params.with_arguments(map),
            serde_json::Value::Null => {}
            other => {
                return Err(ToolError::invalid(
                    tool,
                    "(arguments)",
                    format!("must be a JSON object, not {other}"),
                ));
            }
        }
        let result = client.call_tool(params).await.map_err(|e| {
            let msg = e.to_string();
            if client.is_closed() || msg.to_lowercase().contains("closed") || msg.to_lowercase().contains("broken pipe")
            {
                let why = self.with_stderr(format!("the server stopped: {msg}"));
                self.set_status(McpStatus::Failed(why.clone()));
                ToolError::failed(tool, format!("{why} — /mcp restart {}", self.cfg.name))
            } else {
                ToolError::failed(tool, msg)
            }
        })?;
        let mut text: Vec<String> = result
            .content
            .iter()
            .filter_map(|c| c.as_text())
            .map(|t| t.text.to_string())
            .collect();
        if text.is_empty()
            && let Some(v) = &result.structured_content
        {
            text.push(v.to_string());
        }
        let out = crate::util::sanitize::terminal_safe(&text.join("\n")).into_owned();
        if result.is_error == Some(true) {
            return Err(ToolError::failed(
                tool,
                if out.is_empty() {
                    "the server reported an error".into()
                } else {
                    out
                },
            ));
        }
        Ok(out)
    }
}

/// A tool offered by an MCP server.
struct McpTool {
    server: Arc<McpServer>,
    spec: ToolSpec,
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn source(&self) -> ToolSource {
        ToolSource::Mcp {
            server: self.server.cfg.name.clone(),
        }
    }

    fn call(&self, args: serde_json::Value, ctx: ToolContext) -> ToolFuture {
        let server = self.server.clone();
        let name = self.spec.name.clone();
        let timeout = server.cfg.call_timeout.min(ctx.timeout);
        Box::pin(async move {
            // Dropping the call (timeout or cancel) cancels the request on the server.
            tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
                r = tokio::time::timeout(timeout, server.call(&name, args)) => r.unwrap_or(Err(ToolError::TimedOut { tool: name.clone(), after: timeout })),
            }
        })
    }
}

/// Every configured server.
pub struct McpHub {
    servers: BTreeMap<String, Arc<McpServer>>,
}

impl McpHub {
    pub fn new(configs: &BTreeMap<String, McpServerConfig>, secrets: &Secrets, log_dir: Option<PathBuf>) -> Self {
        Self::with_env(configs, secrets, log_dir, std::env::vars().collect())
    }

    /// Like `new`, with the environment children inherit from given explicitly (tests).
    pub fn with_env(
        configs: &BTreeMap<String, McpServerConfig>,
        secrets: &Secrets,
        log_dir: Option<PathBuf>,
        base_env: Vec<(String, String)>,
    ) -> Self {
        let base_env = Arc::new(base_env);
        let servers = configs
            .iter()
            .map(|(name, cfg)| {
                let status = if cfg.enabled {
                    McpStatus::Stopped
                } else {
                    McpStatus::Disabled
                };
                (
                    name.clone(),
                    Arc::new(McpServer {
                        cfg: cfg.clone(),
                        secrets: secrets.clone(),
                        base_env: base_env.clone(),
                        log_dir: log_dir.clone(),
                        status: Mutex::new(status),
                        live: tokio::sync::Mutex::new(None),
                        stderr: Arc::new(Mutex::new(VecDeque::new())),
                    }),
                )
            })
            .collect();
        McpHub { servers }
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Arc<McpServer>> {
        self.servers.get(name)
    }

    pub fn names(&self) -> Vec<String> {
        self.servers.keys().cloned().collect()
    }

    /// Start every enabled server concurrently.
    pub async fn start_enabled(&self) -> Vec<(String, McpStatus)> {
        let starts = self.servers.values().filter(|s| s.cfg.enabled).map(|s| {
            let s = s.clone();
            async move { (s.cfg.name.clone(), s.start().await) }
        });
        futures::future::join_all(starts).await
    }

    pub fn statuses(&self) -> Vec<(String, McpStatus)> {
        self.servers.iter().map(|(n, s)| (n.clone(), s.status())).collect()
    }

    /// Tools of every running server, grouped by server.
    pub async fn tools(&self) -> ServerTools {
        let mut out = Vec::new();
        for (name, s) in &self.servers {
            let t = s.tools().await;
            if !t.is_empty() {
                out.push((name.clone(), t));
            }
        }
        out
    }

    pub async fn stop_all(&self) {
        futures::future::join_all(self.servers.values().map(|s| s.stop())).await;
    }
}
