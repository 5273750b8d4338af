//! The tool environment of a session, built from the configuration: the
//! workspace, built-in and custom tools (their children never see the
//! configured API keys), policy overrides, limits — and the registry an agent
//! run gets once MCP servers have added theirs.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::{PolicedTool, Policy, ServerTools, ToolRegistry, Workspace, builtin_tools, custom_tools};
use crate::config::{Config, Secrets};

/// Everything tools need, fixed for the session.
#[derive(Clone)]
pub struct ToolEnv {
    pub workspace: Arc<Workspace>,
    /// Built-in and custom tools with their policies.
    pub base: Vec<PolicedTool>,
    /// `[tools.policy]`: per-name overrides (MCP tools too).
    pub overrides: BTreeMap<String, Policy>,
    pub max_steps: u32,
    pub tool_timeout: Duration,
    pub output_limit: usize,
}

impl ToolEnv {
    /// From the config; the workspace is `[tools] workspace` or `cwd`.
    pub fn from_config(config: &Config, _secrets: &Secrets, cwd: &Path) -> Result<Self, String> {
        let root = config
            .tools
            .workspace
            .clone()
            .map(|p| if p.is_absolute() { p } else { cwd.join(p) })
            .unwrap_or_else(|| cwd.to_path_buf());
        let workspace = Workspace::new(&root).map_err(|e| {
            format!(
                "the tool workspace {} cannot be used ({e}) — fix [tools] workspace in polyglot.toml",
                root.display()
            )
        })?;
        // Children of run_shell and custom tools never get these variables.
        let secret_names: Vec<String> = config
            .endpoints
            .values()
            .filter_map(|e| e.api_key_env.clone())
            .collect();
        let mut base = builtin_tools(&config.tools, &secret_names);
        base.extend(custom_tools(&config.tools, &secret_names));
        Ok(ToolEnv {
            workspace: Arc::new(workspace),
            base,
            overrides: config.tools.policy.clone(),
            max_steps: config.defaults.max_steps,
            tool_timeout: config.tools.shell_timeout,
            output_limit: config.tools.output_limit,
        })
    }

    /// The registry: base tools, then each MCP server's, then the overrides.
    pub fn registry(&self, mcp: &ServerTools) -> ToolRegistry {
        let mut r = ToolRegistry::new();
        for (t, p) in &self.base {
            r.insert(t.clone(), *p);
        }
        for (server, tools) in mcp {
            r.insert_server(server, tools.clone());
        }
        for (name, p) in &self.overrides {
            r.set_policy(name, *p);
        }
        r
    }
}
