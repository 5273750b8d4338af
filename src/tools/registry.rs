//! The tool registry: every available tool by name, in a stable order (the
//! model always sees the same list), with its approval policy. MCP tools whose
//! names collide are qualified as `server.tool`; names sent to model APIs use
//! `server__tool` (dots are not allowed there) and both forms resolve.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{PolicedTool, Policy, Tool, ToolError, ToolSource};
use crate::protocols::ToolSpec;
use crate::util::suggest::closest;

struct Entry {
    tool: Arc<dyn Tool>,
    policy: Policy,
    /// The tool's own name (before qualification).
    base: String,
}

/// A row for `/tools` and `pai tools`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub source: ToolSource,
    pub policy: Policy,
}

#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Entry>,
}

/// The name a model API accepts for `name`.
pub fn wire_name(name: &str) -> String {
    name.replace('.', "__")
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Add a built-in or custom tool under its own name (replacing one of the same name).
    pub fn insert(&mut self, tool: Arc<dyn Tool>, policy: Policy) {
        let name = tool.spec().name.clone();
        self.tools.insert(
            name.clone(),
            Entry {
                tool,
                policy,
                base: name,
            },
        );
    }

    /// Add an MCP server's tools; names that collide become `server.tool`.
    pub fn insert_server(&mut self, server: &str, tools: Vec<PolicedTool>) {
        self.remove_server(server);
        for (tool, policy) in tools {
            let base = tool.spec().name.clone();
            let name = if let Some(existing) = self.tools.get(&base) {
                // Qualify a colliding MCP tool already there, too.
                if let ToolSource::Mcp { server: other } = existing.tool.source()
                    && let Some(e) = self.tools.remove(&base)
                {
                    self.tools.insert(format!("{other}.{base}"), e);
                }
                format!("{server}.{base}")
            } else {
                base.clone()
            };
            self.tools.insert(name, Entry { tool, policy, base });
        }
    }

    pub fn remove_server(&mut self, server: &str) {
        self.tools.retain(|_, e| {
            e.tool.source()
                != ToolSource::Mcp {
                    server: server.to_string(),
                }
        });
    }

    /// The tools for a request, in stable order; `only_server` keeps one MCP server's.
    pub fn specs(&self, only_server: Option<&str>) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|(_, e)| e.policy != Policy::Deny)
            .filter(|(_, e)| match only_server {
                Some(s) => e.tool.source() == ToolSource::Mcp { server: s.to_string() },
                None => true,
            })
            .map(|(name, e)| {
                let mut spec = e.tool.spec().clone();
                spec.name = wire_name(name);
                spec
            })
            .collect()
    }

    /// Find a tool by its registry or wire name: (registry name, tool, policy).
    pub fn resolve(&self, name: &str) -> Result<(String, Arc<dyn Tool>, Policy), ToolError> {
        let dotted = name.replace("__", ".");
        for n in [name, dotted.as_str()] {
            if let Some(e) = self.tools.get(n) {
                return Ok((n.to_string(), e.tool.clone(), e.policy));
            }
        }
        // A bare name that was qualified because of a collision is ambiguous.
        let qualified: Vec<&String> = self
            .tools
            .iter()
            .filter(|(_, e)| e.base == name)
            .map(|(k, _)| k)
            .collect();
        if qualified.len() == 1 {
            let e = &self.tools[qualified[0]];
            return Ok((qualified[0].clone(), e.tool.clone(), e.policy));
        }
        Err(ToolError::NotFound {
            name: name.to_string(),
            suggestion: closest(name, self.tools.keys().map(String::as_str)).map(str::to_string),
        })
    }

    pub fn set_policy(&mut self, name: &str, policy: Policy) -> bool {
        match self.tools.get_mut(name) {
            Some(e) => {
                e.policy = policy;
                true
            }
            None => false,
        }
    }

    pub fn list(&self) -> Vec<ToolInfo> {
        self.tools
            .iter()
            .map(|(name, e)| ToolInfo {
                name: name.clone(),
                description: e.tool.spec().description.clone(),
                source: e.tool.source(),
                policy: e.policy,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{ToolContext, ToolFuture};

    struct Fake {
        spec: ToolSpec,
        source: ToolSource,
    }

    impl Tool for Fake {
        fn spec(&self) -> &ToolSpec {
            &self.spec
        }
        fn source(&self) -> ToolSource {
            self.source.clone()
        }
        fn call(&self, _args: serde_json::Value, _ctx: ToolContext) -> ToolFuture {
            Box::pin(async { Ok("ok".into()) })
        }
    }

    fn fake(name: &str, source: ToolSource) -> Arc<dyn Tool> {
        Arc::new(Fake {
            spec: ToolSpec {
                name: name.into(),
                description: format!("{name} tool"),
                parameters: serde_json::json!({"type":"object","properties":{}}),
            },
            source,
        })
    }

    fn mcp(s: &str) -> ToolSource {
        ToolSource::Mcp { server: s.into() }
    }

    #[test]
    fn order_is_stable_and_denied_tools_are_not_offered() {
        let mut r = ToolRegistry::new();
        r.insert(fake("write_file", ToolSource::Builtin), Policy::Ask);
        r.insert(fake("read_file", ToolSource::Builtin), Policy::Auto);
        r.insert(fake("run_shell", ToolSource::Builtin), Policy::Deny);
        let names: Vec<String> = r.specs(None).into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["read_file", "write_file"]);
        assert_eq!(r.list().len(), 3);
    }

    #[test]
    fn colliding_mcp_tools_are_qualified_and_resolve_by_either_name() {
        let mut r = ToolRegistry::new();
        r.insert(fake("echo", ToolSource::Builtin), Policy::Auto);
        r.insert_server(
            "a",
            vec![
                (fake("echo", mcp("a")), Policy::Ask),
                (fake("sum", mcp("a")), Policy::Ask),
            ],
        );
        r.insert_server("b", vec![(fake("sum", mcp("b")), Policy::Auto)]);
        let names: Vec<String> = r.list().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["a.echo", "a.sum", "b.sum", "echo"]);
        let wire: Vec<String> = r.specs(None).into_iter().map(|s| s.name).collect();
        assert_eq!(wire, ["a__echo", "a__sum", "b__sum", "echo"]);
        assert_eq!(r.resolve("a__sum").unwrap().0, "a.sum");
        assert_eq!(r.resolve("b.sum").unwrap().2, Policy::Auto);
        assert_eq!(r.resolve("echo").unwrap().1.source(), ToolSource::Builtin);
        assert!(
            matches!(r.resolve("sum"), Err(ToolError::NotFound { .. })),
            "ambiguous bare name"
        );
        assert!(matches!(r.resolve("ech"), Err(ToolError::NotFound { suggestion: Some(s), .. }) if s == "echo"));
        // @server keeps one server's tools.
        let only: Vec<String> = r.specs(Some("a")).into_iter().map(|s| s.name).collect();
        assert_eq!(only, ["a__echo", "a__sum"]);
        r.remove_server("a");
        assert_eq!(
            r.resolve("sum").unwrap().0,
            "b.sum",
            "a unique qualified tool resolves by its bare name"
        );
    }
}
