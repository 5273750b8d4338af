//! Custom tools from `[tools.custom.NAME]`: a command line whose `{param}`
//! placeholders are filled from the call's arguments, run WITHOUT a shell (a
//! value is always exactly one argument, so nothing can be injected), in the
//! workspace, with the configured timeout and a secret-free environment.
//!
//! Arguments are checked against the tool's JSON Schema first: required
//! fields, basic types, `enum`, and unknown fields when
//! `additionalProperties` is false. A placeholder whose optional parameter
//! is absent (and has no `default`) removes its whole argument, so
//! `"--max={max}"` simply disappears when `max` is not given.

use std::ffi::OsString;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::process::{ProcessSpec, base_env, child_env, run_process};
use super::{Policy, Tool, ToolContext, ToolError, ToolFuture, ToolSource};
use crate::config::{CustomToolConfig, ToolsConfig};
use crate::protocols::ToolSpec;

/// A tool backed by a command line.
pub struct CustomTool {
    spec: ToolSpec,
    command: Vec<String>,
    timeout: Duration,
    secrets: Vec<String>,
    base_env: Option<Vec<(OsString, OsString)>>,
}

impl CustomTool {
    pub fn new(cfg: &CustomToolConfig) -> Self {
        let description = if cfg.description.trim().is_empty() {
            format!("Runs `{}`.", cfg.command.join(" "))
        } else {
            cfg.description.clone()
        };
        CustomTool {
            spec: ToolSpec {
                name: cfg.name.clone(),
                description,
                parameters: cfg.parameters.clone(),
            },
            command: cfg.command.clone(),
            timeout: cfg.timeout,
            secrets: Vec::new(),
            base_env: None,
        }
    }

    /// Variables holding API keys, removed from the child's environment (on
    /// top of every `*_KEY`, `*_TOKEN`, `*_SECRET`, `*_PASSWORD`, `*API_KEY*`).
    pub fn with_secrets(mut self, secrets: Vec<String>) -> Self {
        self.secrets = secrets;
        self
    }

    /// Start from `env` instead of this process's environment (tests).
    pub fn with_base_env(mut self, env: Vec<(OsString, OsString)>) -> Self {
        self.base_env = Some(env);
        self
    }

    /// The program and its arguments for this call.
    pub fn command_line(&self, args: &Value) -> Result<Vec<String>, ToolError> {
        let name = &self.spec.name;
        let values = check_args(name, &self.spec.parameters, args)?;
        let props = self.spec.parameters.get("properties").and_then(Value::as_object);
        let mut argv = Vec::with_capacity(self.command.len());
        for (i, template) in self.command.iter().enumerate() {
            match fill(name, template, &values, props)? {
                Some(a) => argv.push(a),
                None if i == 0 => {
                    return Err(ToolError::failed(
                        name,
                        "the command's program placeholder has no value",
                    ));
                }
                None => {}
            }
        }
        Ok(argv)
    }
}

impl Tool for CustomTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn source(&self) -> ToolSource {
        ToolSource::Custom
    }

    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        let name = self.spec.name.clone();
        let argv = match self.command_line(&args) {
            Ok(a) => a,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        let env = child_env(base_env(self.base_env.as_deref()), &self.secrets);
        let timeout = self.timeout.min(ctx.timeout);
        Box::pin(async move {
            let mut argv = argv.into_iter();
            let program = argv.next().unwrap_or_default();
            let spec = ProcessSpec {
                program,
                args: argv.collect(),
                cwd: ctx.workspace.root().to_path_buf(),
                env,
                timeout,
            };
            let out = run_process(&name, spec, &ctx).await?;
            Ok(out.render(ctx.output_limit))
        })
    }
}

/// Every custom tool with its policy (`[tools.policy]` over the tool's own).
pub fn custom_tools(cfg: &ToolsConfig, secret_env_names: &[String]) -> Vec<(Arc<dyn Tool>, Policy)> {
    cfg.custom
        .values()
        .map(|c| {
            let tool: Arc<dyn Tool> = Arc::new(CustomTool::new(c).with_secrets(secret_env_names.to_vec()));
            let policy = cfg.policy.get(&c.name).copied().unwrap_or(c.policy);
            (tool, policy)
        })
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn type_ok(v: &Value, ty: &str) -> bool {
    match ty {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

/// Check `args` against the schema's basics; returns the argument object.
fn check_args(tool: &str, schema: &Value, args: &Value) -> Result<Map<String, Value>, ToolError> {
    let values = match args {
        Value::Null => Map::new(),
        Value::Object(m) => m.clone(),
        other => {
            return Err(ToolError::invalid(
                tool,
                "(arguments)",
                format!("expected a JSON object, got {}", kind(other)),
            ));
        }
    };
    let props = schema.get("properties").and_then(Value::as_object);
    for req in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
        if let Some(field) = req.as_str()
            && values.get(field).is_none_or(Value::is_null)
        {
            return Err(ToolError::invalid(tool, field, format!("missing field `{field}`")));
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (field, value) in &values {
        let Some(prop) = props.and_then(|p| p.get(field)) else {
            if closed {
                let known: Vec<&str> = props
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                return Err(ToolError::invalid(
                    tool,
                    field,
                    format!("unknown field `{field}`; the parameters are: {}", known.join(", ")),
                ));
            }
            continue;
        };
        let types: Vec<&str> = match prop.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| type_ok(value, t)) {
            return Err(ToolError::invalid(
                tool,
                field,
                format!("expected {}, got {}", types.join(" or "), kind(value)),
            ));
        }
        if let Some(allowed) = prop.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(ToolError::invalid(
                tool,
                field,
                format!("must be one of {}", list.join(", ")),
            ));
        }
    }
    Ok(values)
}

/// Fill the `{param}` placeholders of one argument; `None` drops the argument
/// (an optional parameter without a value).
fn fill(
    tool: &str,
    template: &str,
    values: &Map<String, Value>,
    props: Option<&Map<String, Value>>,
) -> Result<Option<String>, ToolError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let key_len = after
            .find('}')
            .filter(|&j| j > 0 && after[..j].chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        let Some(j) = key_len.filter(|&j| props.is_some_and(|p| p.contains_key(&after[..j]))) else {
            // Not a placeholder (e.g. `{}` or awk's `{print $1}`): keep it.
            out.push('{');
            rest = after;
            continue;
        };
        let key = &after[..j];
        let default = props.and_then(|p| p.get(key)).and_then(|p| p.get("default"));
        match values.get(key).filter(|v| !v.is_null()).or(default) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(s)) => out.push_str(s),
            Some(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
            Some(Value::Number(n)) => out.push_str(&n.to_string()),
            Some(Value::Array(_) | Value::Object(_)) => {
                return Err(ToolError::invalid(
                    tool,
                    key,
                    "arrays and objects cannot be placed on a command line; pass a string",
                ));
            }
        }
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    if out.contains('\0') {
        return Err(ToolError::invalid(tool, "(arguments)", "a value contains a NUL byte"));
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Workspace;
    use crate::tools::process::env_pairs;
    use serde_json::json;

    fn config(command: &[&str], parameters: Value) -> CustomToolConfig {
        CustomToolConfig {
            name: "echoer".into(),
            description: "Prints its arguments.".into(),
            command: command.iter().map(|s| s.to_string()).collect(),
            parameters,
            timeout: Duration::from_secs(20),
            policy: Policy::Ask,
        }
    }

    fn printer() -> CustomTool {
        CustomTool::new(&config(
            &["printf", "[%s]\\n", "{text}", "--count={count}", "--loud={loud}", "{}"],
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "what to print"},
                    "count": {"type": "integer"},
                    "loud": {"type": "boolean", "default": false},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                    "list": {"type": ["array", "string"]}
                },
                "required": ["text"]
            }),
        ))
    }

    fn ctx() -> (tempfile::TempDir, ToolContext) {
        let d = tempfile::tempdir().unwrap();
        let ws = Arc::new(Workspace::new(d.path()).unwrap());
        (d, ToolContext::new(ws))
    }

    #[tokio::test]
    async fn placeholders_are_filled_one_argument_each_without_a_shell() {
        let (_d, ctx) = ctx();
        let t = printer();
        assert_eq!(t.spec().name, "echoer");
        assert_eq!(t.source(), ToolSource::Custom);
        let out = t
            .call(
                json!({"text": "; rm -rf ~ $(whoami) `id` | cat", "count": 3, "loud": true}),
                ctx.clone(),
            )
            .await
            .unwrap();
        assert!(out.starts_with("exit code: 0"), "{out}");
        assert!(
            out.ends_with("--- stdout ---\n[; rm -rf ~ $(whoami) `id` | cat]\n[--count=3]\n[--loud=true]\n[{}]\n"),
            "{out}"
        );
        // An absent optional parameter drops its argument; a default fills it.
        let argv = t.command_line(&json!({"text": "x"})).unwrap();
        assert_eq!(argv, ["printf", "[%s]\\n", "x", "--loud=false", "{}"]);
    }

    #[tokio::test]
    async fn arguments_are_checked_against_the_schema() {
        let t = printer();
        let field = |args: Value| match t.command_line(&args) {
            Err(ToolError::InvalidArguments { field, reason, .. }) => format!("{field}: {reason}"),
            other => panic!("{other:?}"),
        };
        assert_eq!(field(json!({"count": 1})), "text: missing field `text`");
        assert_eq!(field(json!({"text": null})), "text: missing field `text`");
        assert_eq!(field(json!({"text": 5})), "text: expected string, got a number");
        assert_eq!(
            field(json!({"text": "a", "count": 1.5})),
            "count: expected integer, got a number"
        );
        assert_eq!(
            field(json!({"text": "a", "mode": "c"})),
            "mode: must be one of \"a\", \"b\""
        );
        assert_eq!(field(json!([1])), "(arguments): expected a JSON object, got an array");
        assert!(t.command_line(&json!({"text": "a", "list": ["x"], "extra": 1})).is_ok());
        let obj = CustomTool::new(&config(
            &["echo", "{v}"],
            json!({"type": "object", "properties": {"v": {}}, "additionalProperties": false}),
        ));
        assert_eq!(
            match obj.command_line(&json!({"v": [1, 2]})) {
                Err(e) => e.to_string(),
                Ok(v) => panic!("{v:?}"),
            },
            "invalid arguments for `echoer`: v: arrays and objects cannot be placed on a command line; pass a string"
        );
        let e = obj.command_line(&json!({"w": 1})).unwrap_err().to_string();
        assert!(e.contains("w: unknown field `w`; the parameters are: v"), "{e}");
    }

    #[tokio::test]
    async fn environment_without_secrets_workspace_cwd_and_timeout() {
        let (d, ctx) = ctx();
        let base = env_pairs([
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
            ("OPENAI_API_KEY", "sk-abc"),
            ("MY_CRED", "cred-1"),
            ("VISIBLE", "yes"),
        ]);
        let t = CustomTool::new(&config(&["sh", "-c", "env; pwd"], json!({"type": "object"})))
            .with_secrets(vec!["MY_CRED".into()])
            .with_base_env(base);
        let out = t.call(json!({}), ctx.clone()).await.unwrap();
        assert!(out.contains("VISIBLE=yes"), "{out}");
        assert!(!out.contains("sk-abc") && !out.contains("cred-1"), "{out}");
        assert!(
            out.contains(&d.path().canonicalize().unwrap().display().to_string()),
            "{out}"
        );
        let mut slow_cfg = config(
            &["sleep", "{s}"],
            json!({"type": "object", "properties": {"s": {"type": "number"}}}),
        );
        slow_cfg.timeout = Duration::from_millis(300);
        let r = CustomTool::new(&slow_cfg).call(json!({"s": 30}), ctx.clone()).await;
        assert!(matches!(r, Err(ToolError::TimedOut { .. })), "{r:?}");
        let out = CustomTool::new(&config(&["sh", "-c", "exit 4"], json!({"type": "object"})))
            .call(Value::Null, ctx.clone())
            .await
            .unwrap();
        assert!(out.starts_with("exit code: 4"), "{out}");
        let e = CustomTool::new(&config(&["no-such-program-xyz"], json!({"type": "object"})))
            .call(json!({}), ctx)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("program not found"), "{e}");
    }

    #[test]
    fn custom_tools_take_policies_from_config() {
        let mut cfg = ToolsConfig::default();
        let mut a = config(&["true"], json!({"type": "object"}));
        a.name = "a".into();
        let mut b = a.clone();
        b.name = "b".into();
        b.policy = Policy::Auto;
        cfg.custom.insert("a".into(), a);
        cfg.custom.insert("b".into(), b);
        cfg.policy.insert("a".into(), Policy::Deny);
        let got: Vec<(String, Policy)> = custom_tools(&cfg, &[])
            .into_iter()
            .map(|(t, p)| (t.spec().name.clone(), p))
            .collect();
        assert_eq!(got, [("a".to_string(), Policy::Deny), ("b".to_string(), Policy::Auto)]);
    }
}
