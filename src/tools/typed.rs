//! Tools defined by a typed argument struct: the JSON Schema the model sees is
//! derived from the struct (schemars), and arguments are parsed into it with
//! errors that name the offending field.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Tool, ToolContext, ToolError, ToolFuture, ToolSource};
use crate::protocols::ToolSpec;

/// A tool with typed arguments. Wrap it in [`Typed`] to register it.
pub trait TypedTool: Send + Sync + 'static {
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    fn run(self: Arc<Self>, args: Self::Args, ctx: ToolContext) -> ToolFuture;
}

/// Adapts a [`TypedTool`] to [`Tool`].
pub struct Typed<T: TypedTool> {
    inner: Arc<T>,
    spec: ToolSpec,
}

impl<T: TypedTool> Typed<T> {
    pub fn new(tool: T) -> Self {
        Typed {
            inner: Arc::new(tool),
            spec: ToolSpec {
                name: T::NAME.to_string(),
                description: T::DESCRIPTION.to_string(),
                parameters: schema_of::<T::Args>(),
            },
        }
    }
}

impl<T: TypedTool> Tool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn source(&self) -> ToolSource {
        ToolSource::Builtin
    }

    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        match parse_args::<T::Args>(T::NAME, args) {
            Ok(a) => self.inner.clone().run(a, ctx),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }
}

/// Parse arguments, naming the field that is wrong.
pub fn parse_args<A: DeserializeOwned>(tool: &str, args: Value) -> Result<A, ToolError> {
    // Models sometimes send `null` or nothing for "no arguments".
    let args = if args.is_null() {
        Value::Object(Default::default())
    } else {
        args
    };
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // serde names missing/unknown fields in the message, not the path.
        let (field, reason) = match (path.as_str(), field_in(&inner)) {
            (".", Some(f)) => (f, inner),
            (".", None) => ("(arguments)".to_string(), inner),
            (p, _) => (p.to_string(), inner),
        };
        ToolError::invalid(tool, field, reason)
    })
}

fn field_in(msg: &str) -> Option<String> {
    ["missing field `", "unknown field `"]
        .iter()
        .find_map(|p| msg.split_once(p))
        .and_then(|(_, rest)| rest.split('`').next())
        .map(str::to_string)
}

/// The JSON Schema of `A`, trimmed to what model APIs accept: an object
/// schema without `$schema`/`title`, optional fields as plain types.
pub fn schema_of<A: JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(A)).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
        o.entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    simplify(&mut v);
    v
}

/// `"type": ["string", "null"]` → `"type": "string"`; drop integer `format`s.
fn simplify(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if let Some(Value::Array(types)) = o.get("type") {
                let non_null: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
                if non_null.len() == 1 {
                    o.insert("type".into(), non_null[0].clone());
                }
            }
            if matches!(o.get("format").and_then(Value::as_str), Some(f) if f.starts_with("uint") || f.starts_with("int"))
            {
                o.remove("format");
            }
            for (_, child) in o.iter_mut() {
                simplify(child);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(simplify),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        /// The file to read.
        path: String,
        /// First line (1-based).
        start: Option<u32>,
    }

    #[test]
    fn schema_is_an_object_with_documented_fields() {
        let s = schema_of::<Args>();
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"]["path"]["type"], "string");
        assert_eq!(s["properties"]["path"]["description"], "The file to read.");
        assert_eq!(s["properties"]["start"]["type"], "integer");
        assert!(s["properties"]["start"].get("format").is_none());
        assert_eq!(s["required"], serde_json::json!(["path"]));
        assert!(s.get("$schema").is_none());
    }

    #[test]
    fn argument_errors_name_the_field() {
        let e = parse_args::<Args>("read_file", serde_json::json!({"start": 1}))
            .err()
            .unwrap();
        assert_eq!(e, ToolError::invalid("read_file", "path", "missing field `path`"));
        let e = parse_args::<Args>("read_file", serde_json::json!({"path": "a", "start": "x"}))
            .err()
            .unwrap();
        assert!(
            matches!(&e, ToolError::InvalidArguments { field, .. } if field == "start"),
            "{e}"
        );
        let e = parse_args::<Args>("read_file", serde_json::json!({"path": "a", "bogus": 1}))
            .err()
            .unwrap();
        assert!(
            matches!(&e, ToolError::InvalidArguments { field, .. } if field == "bogus"),
            "{e}"
        );
        assert!(
            e.to_string().starts_with("invalid arguments for `read_file`: bogus:"),
            "{e}"
        );
    }
}
