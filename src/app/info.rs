//! The informational subcommands: `pai config check`, `pai endpoints`,
//! `pai tools`, `pai mcp` and `pai models`.

use std::io::{IsTerminal, Write};

use tokio_util::sync::CancellationToken;

use super::{EXIT_USAGE, data_dir, runtime, start_mcp};
use crate::config::{Config, Secrets};
use crate::protocols::build_adapter;
use crate::tools::ToolEnv;
use crate::tools::mcp::{McpHub, McpStatus};

pub(super) fn config_check(config: &Config, secrets: &Secrets) -> i32 {
    println!("config OK: {}", config.source);
    println!("  default endpoint: {}", config.defaults.endpoint);
    println!("  sessions folder:  {}", config.defaults.sessions_dir.display());
    match crate::store::location(config) {
        Ok(p) => println!("  history:          {}", p.display()),
        Err(e) => println!("  history:          off — {e}"),
    }
    for ep in config.endpoints.values() {
        if let Some(var) = &ep.api_key_env
            && secrets.get(var).is_none()
        {
            println!("  note: endpoint `{}` needs {var}, which is not set", ep.name);
        }
    }
    0
}

pub(super) fn endpoints(config: &Config, secrets: &Secrets) -> i32 {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{:<2}{:<16} {:<18} {:<36} {:<24} KEY",
        "", "NAME", "PROTOCOL", "BASE URL", "MODEL"
    );
    for ep in config.endpoints.values() {
        let mark = if ep.name == config.defaults.endpoint { "*" } else { "" };
        let key = match &ep.api_key_env {
            Some(v) if secrets.get(v).is_some() => format!("{v} (set)"),
            Some(v) => format!("{v} (NOT SET)"),
            None => "-".into(),
        };
        let model = config.default_model_for(ep);
        let _ = writeln!(
            out,
            "{mark:<2}{:<16} {:<18} {:<36} {:<24} {key}",
            ep.name, ep.protocol, ep.base_url, model
        );
    }
    0
}

/// `pai tools` and `pai mcp`.
pub(super) fn tools_cmd(config: &Config, secrets: &Secrets, cwd: &std::path::Path, mcp_only: bool) -> i32 {
    let env = match ToolEnv::from_config(config, secrets, cwd) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("pai: {e}");
            return EXIT_USAGE;
        }
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(c) => return c,
    };
    let hub = McpHub::new(&config.mcp, secrets, data_dir());
    let code = rt.block_on(async {
        let mcp = start_mcp(&hub, std::io::stderr().is_terminal()).await;
        let mut out = std::io::stdout().lock();
        if mcp_only {
            if hub.is_empty() {
                let _ = writeln!(
                    out,
                    "no MCP servers are configured — add [mcp.NAME] with command (stdio) or url (streamable HTTP) to {}",
                    config.source
                );
                return 0;
            }
            for (name, status) in hub.statuses() {
                let _ = writeln!(out, "{name}  {}", status.label());
                if let Some((_, tools)) = mcp.iter().find(|(n, _)| *n == name) {
                    for (t, policy) in tools {
                        let desc: String = t.spec().description.lines().next().unwrap_or("").chars().take(70).collect();
                        let _ = writeln!(out, "  {:<32} {:<4}  {desc}", t.spec().name, policy.as_str());
                    }
                }
            }
            let failed = hub.statuses().iter().any(|(_, s)| matches!(s, McpStatus::Failed(_)));
            return i32::from(failed);
        }
        let list = env.registry(&mcp).list();
        let w = list.iter().map(|t| t.name.chars().count()).max().unwrap_or(8);
        let _ = writeln!(out, "{:<w$}  {:<6}  {:<14}  DESCRIPTION", "TOOL", "POLICY", "SOURCE");
        for t in list {
            let desc: String = t.description.lines().next().unwrap_or("").chars().take(70).collect();
            let _ = writeln!(out, "{:<w$}  {:<6}  {:<14}  {desc}", t.name, t.policy.as_str(), t.source.label());
        }
        let _ = writeln!(out, "\nworkspace: {}", env.workspace.root().display());
        0
    });
    rt.block_on(async {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(3), hub.stop_all()).await;
    });
    code
}

pub(super) fn models(config: &Config, secrets: &Secrets, name: Option<&str>) -> i32 {
    let name = name.unwrap_or(&config.defaults.endpoint);
    let ep = match config.require_endpoint(name) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("pai: {e}");
            return EXIT_USAGE;
        }
    };
    let adapter = match build_adapter(ep, secrets) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pai: endpoint `{name}`: {e}");
            return 1;
        }
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(c) => return c,
    };
    match rt.block_on(adapter.list_models(CancellationToken::new())) {
        Ok(ids) => {
            for id in ids {
                println!("{id}");
            }
            0
        }
        Err(e) => {
            eprintln!("pai: endpoint `{name}`: {e}");
            1
        }
    }
}
