//! `[tools]`, `[tools.custom.NAME]` and `[mcp.NAME]`, validated: approval
//! policies, custom command-line tools, MCP servers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use super::error::{ConfigError, ErrorContext};
use super::raw::{RawCustomTool, RawMcp, RawTools};
use crate::util::suggest::closest;

/// What happens when the model calls a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Run without asking.
    Auto,
    /// Ask the user first (approve, edit, reject).
    Ask,
    /// Never run; the model is told it was denied.
    Deny,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Auto => "auto",
            Policy::Ask => "ask",
            Policy::Deny => "deny",
        }
    }
}

/// A custom tool backed by a command line.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomToolConfig {
    pub name: String,
    pub description: String,
    /// Program and arguments; `{param}` placeholders are filled from the call's arguments.
    pub command: Vec<String>,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
    pub timeout: Duration,
    pub policy: Policy,
}

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        /// Passed to the child on top of a minimal environment (never the user's keys).
        env: Vec<(String, String)>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct McpServerConfig {
    pub name: String,
    pub transport: McpTransport,
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub call_timeout: Duration,
    /// Approval for this server's tools unless overridden per tool.
    pub policy: Policy,
    pub tool_policy: BTreeMap<String, Policy>,
}

/// `[tools]` resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsConfig {
    pub builtin: bool,
    /// Root for file tools; `None` = the working directory.
    pub workspace: Option<PathBuf>,
    pub shell_timeout: Duration,
    pub output_limit: usize,
    /// Per-tool approval (`name` or `server.tool`), over the defaults.
    pub policy: BTreeMap<String, Policy>,
    pub custom: BTreeMap<String, CustomToolConfig>,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            builtin: true,
            workspace: None,
            shell_timeout: Duration::from_secs(120),
            output_limit: 64 * 1024,
            policy: BTreeMap::new(),
            custom: BTreeMap::new(),
        }
    }
}

fn policy(cx: &ErrorContext, v: &Spanned<String>) -> Result<Policy, ConfigError> {
    match v.get_ref().as_str() {
        "auto" => Ok(Policy::Auto),
        "ask" => Ok(Policy::Ask),
        "deny" => Ok(Policy::Deny),
        other => {
            let hint =
                closest(other, ["auto", "ask", "deny"]).map_or(String::new(), |c| format!("did you mean `{c}`? "));
            Err(cx.at(
                v.span(),
                format!("unknown policy `{other}`"),
                Some(format!("{hint}use auto, ask or deny")),
            ))
        }
    }
}

fn secs(cx: &ErrorContext, v: &Option<Spanned<f64>>, key: &str, default: Duration) -> Result<Duration, ConfigError> {
    let Some(v) = v else { return Ok(default) };
    let s = *v.get_ref();
    if !(s > 0.0 && s <= 86_400.0) {
        return Err(cx.at(
            v.span(),
            format!("{key} = {s} is invalid"),
            Some("use a number of seconds greater than 0".into()),
        ));
    }
    Ok(Duration::from_secs_f64(s))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 48 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn toml_to_json(v: &toml::Value) -> serde_json::Value {
    match v {
        toml::Value::String(s) => serde_json::Value::String(s.clone()),
        toml::Value::Integer(i) => serde_json::Value::from(*i),
        toml::Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, serde_json::Value::Number)
        }
        toml::Value::Boolean(b) => serde_json::Value::Bool(*b),
        toml::Value::Datetime(d) => serde_json::Value::String(d.to_string()),
        toml::Value::Array(a) => serde_json::Value::Array(a.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => {
            serde_json::Value::Object(t.iter().map(|(k, v)| (k.clone(), toml_to_json(v))).collect())
        }
    }
}

fn custom_tool(cx: &ErrorContext, name: &str, t: &Spanned<RawCustomTool>) -> Result<CustomToolConfig, ConfigError> {
    let span = t.span();
    let t = t.get_ref();
    if !valid_name(name) {
        return Err(cx.at(
            span,
            format!("tool name `{name}` is invalid"),
            Some("use letters, digits, '_' or '-'".into()),
        ));
    }
    let command = t.command.get_ref().clone();
    if command.is_empty() || command[0].trim().is_empty() {
        return Err(cx.at(
            t.command.span(),
            "command is empty",
            Some("write the program and its arguments, e.g. [\"rg\", \"-n\", \"{pattern}\"]".into()),
        ));
    }
    let parameters = match &t.parameters {
        Some(p) => {
            let v = toml_to_json(p.get_ref());
            if v.get("type").and_then(|t| t.as_str()) != Some("object") {
                return Err(cx.at(
                    p.span(),
                    "parameters must be a JSON Schema object",
                    Some("write parameters = { type = \"object\", properties = { … } }".into()),
                ));
            }
            v
        }
        None => serde_json::json!({"type": "object", "properties": {}}),
    };
    // Every {placeholder} must be a declared parameter.
    let props = parameters.get("properties").and_then(|p| p.as_object());
    for arg in &command {
        let mut rest = arg.as_str();
        while let Some(i) = rest.find('{') {
            let Some(j) = rest[i..].find('}') else { break };
            let key = &rest[i + 1..i + j];
            if !key.is_empty()
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !props.is_some_and(|p| p.contains_key(key))
            {
                return Err(cx.at(
                    t.command.span(),
                    format!("placeholder {{{key}}} is not a declared parameter of tool `{name}`"),
                    Some(format!("add `{key}` to parameters.properties")),
                ));
            }
            rest = &rest[i + j + 1..];
        }
    }
    Ok(CustomToolConfig {
        name: name.to_string(),
        description: t.description.clone(),
        command,
        parameters,
        timeout: secs(cx, &t.timeout_s, "timeout_s", Duration::from_secs(60))?,
        policy: match &t.policy {
            Some(p) => policy(cx, p)?,
            None => Policy::Ask,
        },
    })
}

fn mcp_server(cx: &ErrorContext, name: &str, m: &Spanned<RawMcp>) -> Result<McpServerConfig, ConfigError> {
    let span = m.span();
    let m = m.get_ref();
    if !valid_name(name) {
        return Err(cx.at(
            span,
            format!("MCP server name `{name}` is invalid"),
            Some("use letters, digits, '_' or '-' (it prefixes tool names)".into()),
        ));
    }
    let transport = match (&m.command, &m.url) {
        (Some(c), None) => {
            if c.trim().is_empty() {
                return Err(cx.at(span, format!("[mcp.{name}] command is empty"), None));
            }
            McpTransport::Stdio {
                command: c.clone(),
                args: m.args.clone(),
                env: m.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            }
        }
        (None, Some(u)) => {
            match reqwest::Url::parse(u.get_ref()) {
                Ok(url) if matches!(url.scheme(), "http" | "https") => {}
                _ => {
                    return Err(cx.at(
                        u.span(),
                        format!("url `{}` is not an http(s) URL", u.get_ref()),
                        Some("e.g. \"http://127.0.0.1:3001/mcp\"".into()),
                    ));
                }
            }
            McpTransport::Http {
                url: u.get_ref().clone(),
                headers: m.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            }
        }
        (Some(_), Some(u)) => {
            return Err(cx.at(
                u.span(),
                format!("[mcp.{name}] has both command and url"),
                Some("keep command (stdio) or url (streamable HTTP)".into()),
            ));
        }
        (None, None) => {
            return Err(cx.at(
                span,
                format!("[mcp.{name}] needs command (stdio) or url (streamable HTTP)"),
                None,
            ));
        }
    };
    let mut tool_policy = BTreeMap::new();
    for (tool, p) in &m.tools {
        tool_policy.insert(tool.clone(), policy(cx, p)?);
    }
    Ok(McpServerConfig {
        name: name.to_string(),
        transport,
        enabled: m.enabled.unwrap_or(true),
        startup_timeout: secs(cx, &m.startup_timeout_s, "startup_timeout_s", Duration::from_secs(30))?,
        call_timeout: secs(cx, &m.call_timeout_s, "call_timeout_s", Duration::from_secs(120))?,
        policy: match &m.policy {
            Some(p) => policy(cx, p)?,
            None => Policy::Ask,
        },
        tool_policy,
    })
}

/// Validate `[tools]` and `[mcp.*]`.
pub(super) fn resolve(
    cx: &ErrorContext,
    raw: &RawTools,
    mcp: &BTreeMap<String, Spanned<RawMcp>>,
) -> Result<(ToolsConfig, BTreeMap<String, McpServerConfig>), ConfigError> {
    let mut tools = ToolsConfig::default();
    if let Some(b) = raw.builtin {
        tools.builtin = b;
    }
    tools.workspace = raw.workspace.as_deref().map(super::expand_home);
    tools.shell_timeout = secs(cx, &raw.shell_timeout_s, "shell_timeout_s", tools.shell_timeout)?;
    if let Some(kb) = &raw.output_limit_kb {
        let n = *kb.get_ref();
        if !(1..=65_536).contains(&n) {
            return Err(cx.at(
                kb.span(),
                format!("output_limit_kb = {n} is invalid"),
                Some("use 1 to 65536".into()),
            ));
        }
        tools.output_limit = n as usize * 1024;
    }
    for (name, p) in &raw.policy {
        tools.policy.insert(name.clone(), policy(cx, p)?);
    }
    for (name, t) in &raw.custom {
        tools.custom.insert(name.clone(), custom_tool(cx, name, t)?);
    }
    let mut servers = BTreeMap::new();
    for (name, m) in mcp {
        servers.insert(name.clone(), mcp_server(cx, name, m)?);
    }
    Ok((tools, servers))
}
