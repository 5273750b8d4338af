//! The TOML file as written: serde structs that reject unknown keys and keep
//! spans on values that need validating, so errors can point at them.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    #[serde(default)]
    pub defaults: RawDefaults,
    #[serde(default)]
    pub endpoints: BTreeMap<String, Spanned<RawEndpoint>>,
    #[serde(default)]
    pub tools: RawTools,
    #[serde(default)]
    pub mcp: BTreeMap<String, Spanned<RawMcp>>,
    #[serde(default)]
    pub arenas: BTreeMap<String, Spanned<RawArena>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawArena {
    pub participants: Spanned<Vec<Spanned<RawParticipant>>>,
    pub judge: Option<Spanned<RawJudge>>,
    pub max_turns: Option<Spanned<i64>>,
    pub opening: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawParticipant {
    pub name: Option<Spanned<String>>,
    pub endpoint: Spanned<String>,
    pub model: Option<String>,
    pub system: Option<String>,
    pub temperature: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawJudge {
    pub endpoint: Spanned<String>,
    pub model: Option<String>,
    pub prompt: Option<String>,
    pub criteria: Option<Spanned<Vec<String>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTools {
    pub builtin: Option<bool>,
    pub workspace: Option<String>,
    pub shell_timeout_s: Option<Spanned<f64>>,
    pub output_limit_kb: Option<Spanned<i64>>,
    #[serde(default)]
    pub policy: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub custom: BTreeMap<String, Spanned<RawCustomTool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCustomTool {
    pub description: String,
    pub command: Spanned<Vec<String>>,
    pub parameters: Option<Spanned<toml::Value>>,
    pub timeout_s: Option<Spanned<f64>>,
    pub policy: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcp {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub url: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub enabled: Option<bool>,
    pub startup_timeout_s: Option<Spanned<f64>>,
    pub call_timeout_s: Option<Spanned<f64>>,
    pub policy: Option<Spanned<String>>,
    #[serde(default)]
    pub tools: BTreeMap<String, Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDefaults {
    pub endpoint: Option<Spanned<String>>,
    pub model: Option<String>,
    pub system: Option<String>,
    pub temperature: Option<Spanned<f64>>,
    pub max_tokens: Option<Spanned<i64>>,
    pub smooth: Option<bool>,
    pub sessions_dir: Option<String>,
    pub templates_dir: Option<String>,
    pub max_steps: Option<Spanned<i64>>,
    pub history_db: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEndpoint {
    pub protocol: Option<Spanned<String>>,
    pub base_url: Spanned<String>,
    pub model: Option<String>,
    pub api_key_env: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, Spanned<String>>,
    pub connect_timeout_s: Option<Spanned<f64>>,
    pub first_token_timeout_s: Option<Spanned<f64>>,
    pub idle_timeout_s: Option<Spanned<f64>>,
    pub max_retries: Option<Spanned<i64>>,
    pub prompt_template: Option<Spanned<String>>,
    pub stop: Option<Vec<Spanned<String>>>,
    pub launch: Option<Spanned<Vec<String>>>,
    pub launch_health_url: Option<Spanned<String>>,
    pub launch_timeout_s: Option<Spanned<f64>>,
}

/// Every key each table accepts, for "did you mean" hints.
pub const TOP_KEYS: &[&str] = &["defaults", "endpoints", "tools", "mcp", "arenas"];
pub const ARENA_KEYS: &[&str] = &["participants", "judge", "max_turns", "opening"];
pub const PARTICIPANT_KEYS: &[&str] = &["name", "endpoint", "model", "system", "temperature"];
pub const JUDGE_KEYS: &[&str] = &["endpoint", "model", "prompt", "criteria"];
pub const DEFAULTS_KEYS: &[&str] = &[
    "endpoint",
    "model",
    "system",
    "temperature",
    "max_tokens",
    "smooth",
    "sessions_dir",
    "templates_dir",
    "max_steps",
    "history_db",
];
pub const TOOLS_KEYS: &[&str] = &[
    "builtin",
    "workspace",
    "shell_timeout_s",
    "output_limit_kb",
    "policy",
    "custom",
];
pub const CUSTOM_TOOL_KEYS: &[&str] = &["description", "command", "parameters", "timeout_s", "policy"];
pub const MCP_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "url",
    "headers",
    "enabled",
    "startup_timeout_s",
    "call_timeout_s",
    "policy",
    "tools",
];
pub const ENDPOINT_KEYS: &[&str] = &[
    "protocol",
    "base_url",
    "model",
    "api_key_env",
    "headers",
    "connect_timeout_s",
    "first_token_timeout_s",
    "idle_timeout_s",
    "max_retries",
    "prompt_template",
    "launch",
    "launch_health_url",
    "launch_timeout_s",
    "stop",
];
