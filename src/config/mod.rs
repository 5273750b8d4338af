//! `polyglot.toml` → a validated [`Config`]: discovery, parsing, validation.
//!
//! Owns every rule about what a configuration may say. Errors name file, line,
//! column and a fix; the program never runs half-configured. Secrets are never
//! read from the file: only the NAMES of environment variables that hold them.

mod arena;
mod endpoints;
mod env;
mod error;
mod raw;
mod tools;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use arena::{ArenaConfig, DEFAULT_CRITERIA, DEFAULT_MAX_TURNS, JudgeConfig, ParticipantConfig};
pub use env::{Secrets, parse_dotenv};
use error::ErrorContext;
pub use error::{ConfigError, line_col};
use raw::{RawConfig, RawEndpoint};
use toml::Spanned;
pub use tools::{CustomToolConfig, McpServerConfig, McpTransport, Policy, ToolsConfig};

use crate::protocols::PROTOCOL_NAMES;
use crate::protocols::prompt_template::PromptTemplate;
use crate::util::suggest::closest;

/// The documented example config, also the built-in default.
pub const DEFAULT_CONFIG: &str = include_str!("../../polyglot.toml");
const BUILTIN_NAME: &str = "<built-in polyglot.toml>";

/// Where the configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    File(PathBuf),
    BuiltIn,
}

impl std::fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigSource::File(p) => write!(f, "{}", p.display()),
            ConfigSource::BuiltIn => f.write_str("built-in defaults"),
        }
    }
}

/// `[defaults]`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Defaults {
    pub endpoint: String,
    /// Overrides the endpoint's own model when set.
    pub model: Option<String>,
    pub system: Option<String>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub smooth: bool,
    pub sessions_dir: PathBuf,
    /// Overrides the built-in HTML templates when set.
    pub templates_dir: Option<PathBuf>,
    /// Most model requests one agent turn may make.
    pub max_steps: u32,
    /// The history database; `None` = `$XDG_DATA_HOME/polyglot/history.db`
    /// (see `store::location`).
    pub history_db: Option<PathBuf>,
}

/// `[endpoints.NAME]`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointConfig {
    pub name: String,
    pub protocol: String,
    /// Without a trailing slash.
    pub base_url: String,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    /// Header values may contain `${VAR}`, expanded from the environment at use.
    pub headers: Vec<(String, String)>,
    pub connect_timeout: Duration,
    pub first_token_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_retries: u32,
    /// `openai-completions` only: a preset name or a minijinja template (checked at load).
    pub prompt_template: Option<String>,
    /// Extra stop sequences sent with every request.
    pub stop: Vec<String>,
    /// Start a local server on first use when nothing answers.
    pub launch: Option<LaunchConfig>,
}

/// A local model server pai starts on first use and stops on exit.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchConfig {
    /// Program and arguments; `pai-local-llm` is pai's built-in SmolLM2 launcher.
    pub command: Vec<String>,
    /// Where it runs: the config file's folder.
    pub cwd: PathBuf,
    /// Answers 2xx once the server is ready (default `{base_url}/models`).
    pub health_url: String,
    /// Longest wait for it (a first run may install things).
    pub timeout: Duration,
}

impl EndpointConfig {
    pub const DEFAULT_CONNECT: Duration = Duration::from_secs(10);
    pub const DEFAULT_FIRST_TOKEN: Duration = Duration::from_secs(120);
    pub const DEFAULT_IDLE: Duration = Duration::from_secs(60);
    pub const DEFAULT_RETRIES: u32 = 3;

    /// A plain OpenAI-compatible endpoint with default timeouts (tests, examples).
    pub fn openai(name: &str, base_url: &str) -> Self {
        EndpointConfig {
            name: name.into(),
            protocol: "openai".into(),
            base_url: base_url.trim_end_matches('/').into(),
            model: None,
            api_key_env: None,
            headers: Vec::new(),
            connect_timeout: Self::DEFAULT_CONNECT,
            first_token_timeout: Self::DEFAULT_FIRST_TOKEN,
            idle_timeout: Self::DEFAULT_IDLE,
            max_retries: Self::DEFAULT_RETRIES,
            prompt_template: None,
            stop: Vec::new(),
            launch: None,
        }
    }

    /// The same endpoint speaking another protocol (tests, examples).
    pub fn with_protocol(mut self, protocol: &str) -> Self {
        self.protocol = protocol.into();
        self
    }
}

/// The whole validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub source: ConfigSource,
    pub defaults: Defaults,
    pub endpoints: BTreeMap<String, EndpointConfig>,
    pub tools: ToolsConfig,
    pub mcp: BTreeMap<String, McpServerConfig>,
    pub arenas: BTreeMap<String, ArenaConfig>,
}

impl Config {
    pub fn endpoint(&self, name: &str) -> Option<&EndpointConfig> {
        self.endpoints.get(name)
    }

    /// The endpoint named, or an error listing the ones that exist.
    pub fn require_endpoint(&self, name: &str) -> Result<&EndpointConfig, String> {
        self.endpoints.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.endpoints.keys().map(String::as_str).collect();
            let hint = closest(name, names.iter().copied())
                .map(|s| format!(" — did you mean `{s}`?"))
                .unwrap_or_default();
            format!(
                "unknown endpoint `{name}`{hint} Configured endpoints: {} (in {})",
                names.join(", "),
                self.source
            )
        })
    }

    /// The model to use on `endpoint` when none is given explicitly.
    pub fn default_model_for(&self, endpoint: &EndpointConfig) -> String {
        if endpoint.name == self.defaults.endpoint
            && let Some(m) = &self.defaults.model
        {
            return m.clone();
        }
        endpoint.model.clone().unwrap_or_else(|| "default".into())
    }
}

/// Inputs to config discovery, gathered once from the process (or given by tests).
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// `--config PATH`
    pub cli: Option<PathBuf>,
    /// `$PAI_CONFIG`
    pub env: Option<PathBuf>,
    pub cwd: PathBuf,
    /// `$XDG_CONFIG_HOME/polyglot` (or the platform equivalent)
    pub user_config_dir: Option<PathBuf>,
    /// `$XDG_DATA_HOME/polyglot`: base for relative paths of the built-in config.
    pub user_data_dir: Option<PathBuf>,
}

impl Discovery {
    pub fn from_process(cli: Option<PathBuf>) -> Self {
        let dirs = directories::ProjectDirs::from("", "", "polyglot");
        Discovery {
            cli,
            env: std::env::var_os("PAI_CONFIG")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            user_config_dir: dirs.as_ref().map(|d| d.config_dir().to_path_buf()),
            user_data_dir: dirs.as_ref().map(|d| d.data_dir().to_path_buf()),
        }
    }

    /// The file to read, by precedence; `None` means built-in defaults.
    pub fn locate(&self) -> Result<Option<PathBuf>, ConfigError> {
        for (path, origin) in [(&self.cli, "--config"), (&self.env, "$PAI_CONFIG")] {
            if let Some(p) = path {
                let p = self.cwd.join(p);
                if !p.is_file() {
                    return Err(ConfigError::Unreadable {
                        path: p,
                        origin: origin.into(),
                        reason: "no such file".into(),
                    });
                }
                return Ok(Some(p));
            }
        }
        let local = self.cwd.join("polyglot.toml");
        if local.is_file() {
            return Ok(Some(local));
        }
        Ok(self
            .user_config_dir
            .as_ref()
            .map(|d| d.join("polyglot.toml"))
            .filter(|p| p.is_file()))
    }

    /// Find, read and validate the configuration.
    pub fn load(&self) -> Result<Config, ConfigError> {
        match self.locate()? {
            Some(path) => {
                let src = std::fs::read_to_string(&path).map_err(|e| ConfigError::Unreadable {
                    path: path.clone(),
                    origin: "the config search".into(),
                    reason: e.to_string(),
                })?;
                let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
                parse(&src, ConfigSource::File(path), &base)
            }
            None => {
                let base = self.user_data_dir.clone().unwrap_or_else(|| self.cwd.clone());
                parse(DEFAULT_CONFIG, ConfigSource::BuiltIn, &base)
            }
        }
    }
}

/// Parse and validate config text. Relative paths resolve against `base_dir`.
pub fn parse(src: &str, source: ConfigSource, base_dir: &Path) -> Result<Config, ConfigError> {
    let file = match &source {
        ConfigSource::File(p) => p.clone(),
        ConfigSource::BuiltIn => PathBuf::from(BUILTIN_NAME),
    };
    let cx = ErrorContext { file: &file, src };
    let raw: RawConfig = toml::from_str(src).map_err(|e| cx.toml_error(&e))?;

    let mut endpoints = BTreeMap::new();
    if raw.endpoints.is_empty() {
        // A file without endpoints keeps the built-in ones.
        if !matches!(source, ConfigSource::BuiltIn) {
            let builtin = parse(DEFAULT_CONFIG, ConfigSource::BuiltIn, base_dir)?;
            endpoints = builtin.endpoints;
        }
    }
    for (name, ep) in &raw.endpoints {
        let e = endpoints::endpoint(&cx, name, ep, base_dir)?;
        endpoints.insert(name.clone(), e);
    }
    if endpoints.is_empty() {
        return Err(cx.at(
            0..0,
            "no endpoints are defined",
            Some("add an [endpoints.NAME] table with protocol and base_url".into()),
        ));
    }

    let d = raw.defaults;
    let endpoint_name = match &d.endpoint {
        Some(s) => {
            if !endpoints.contains_key(s.get_ref()) {
                let names: Vec<&str> = endpoints.keys().map(String::as_str).collect();
                let hint = match closest(s.get_ref(), names.iter().copied()) {
                    Some(c) => format!("did you mean `{c}`? Defined: {}", names.join(", ")),
                    None => format!("define [endpoints.{}] or use one of: {}", s.get_ref(), names.join(", ")),
                };
                return Err(cx.at(
                    s.span(),
                    format!("default endpoint `{}` is not defined", s.get_ref()),
                    Some(hint),
                ));
            }
            s.get_ref().clone()
        }
        None if endpoints.contains_key("local") => "local".into(),
        None => endpoints.keys().next().cloned().unwrap_or_default(),
    };
    let temperature = match &d.temperature {
        Some(t) => {
            let v = *t.get_ref();
            if !(0.0..=2.0).contains(&v) {
                return Err(cx.at(
                    t.span(),
                    format!("temperature {v} is out of range"),
                    Some("use a value from 0.0 to 2.0".into()),
                ));
            }
            Some(v as f32)
        }
        None => None,
    };
    let max_tokens = match &d.max_tokens {
        Some(m) => Some(positive_u32(&cx, m, "max_tokens")?),
        None => None,
    };
    let max_steps = match &d.max_steps {
        Some(m) => positive_u32(&cx, m, "max_steps")?,
        None => 12,
    };
    let (tools, mcp) = tools::resolve(&cx, &raw.tools, &raw.mcp)?;
    let arenas = arena::resolve(&cx, &raw.arenas, &endpoints)?;
    let resolve = |p: &str| {
        let p = expand_home(p);
        if p.is_absolute() { p } else { base_dir.join(p) }
    };
    let history_db = match &d.history_db {
        Some(p) => {
            let raw = p.get_ref().trim();
            if raw.is_empty() || raw.ends_with('/') || raw.ends_with(std::path::MAIN_SEPARATOR) {
                return Err(cx.at(
                    p.span(),
                    format!("history_db `{raw}` is not a file path"),
                    Some("name the database file, e.g. \"history.db\" or \"~/pai/history.db\"".into()),
                ));
            }
            Some(resolve(raw))
        }
        None => None,
    };
    Ok(Config {
        source,
        defaults: Defaults {
            endpoint: endpoint_name,
            model: d.model.filter(|m| !m.trim().is_empty()),
            system: d.system.filter(|s| !s.trim().is_empty()),
            temperature,
            max_tokens,
            smooth: d.smooth.unwrap_or(true),
            sessions_dir: resolve(d.sessions_dir.as_deref().unwrap_or("sessions")),
            templates_dir: d.templates_dir.as_deref().map(resolve),
            max_steps,
            history_db,
        },
        endpoints,
        tools,
        mcp,
        arenas,
    })
}

pub(crate) fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

fn positive_u32(cx: &ErrorContext, v: &Spanned<i64>, key: &str) -> Result<u32, ConfigError> {
    let n = *v.get_ref();
    u32::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
        cx.at(
            v.span(),
            format!("{key} = {n} is invalid"),
            Some("use a positive whole number".into()),
        )
    })
}

fn seconds(cx: &ErrorContext, v: &Option<Spanned<f64>>, key: &str, default: Duration) -> Result<Duration, ConfigError> {
    let Some(v) = v else { return Ok(default) };
    let s = *v.get_ref();
    if !(s > 0.0 && s <= 86_400.0) {
        return Err(cx.at(
            v.span(),
            format!("{key} = {s} is invalid"),
            Some("use a number of seconds greater than 0 (for example 30)".into()),
        ));
    }
    Ok(Duration::from_secs_f64(s))
}

#[cfg(test)]
mod tests;
