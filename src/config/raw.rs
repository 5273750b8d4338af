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
}

/// Every key each table accepts, for "did you mean" hints.
pub const TOP_KEYS: &[&str] = &["defaults", "endpoints"];
pub const DEFAULTS_KEYS: &[&str] = &[
    "endpoint",
    "model",
    "system",
    "temperature",
    "max_tokens",
    "smooth",
    "sessions_dir",
    "templates_dir",
    "history_db",
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
];
