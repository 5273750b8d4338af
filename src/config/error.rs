//! Configuration errors that name the file, line and column and say how to fix it.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::util::suggest::closest;

use super::raw::{
    ARENA_KEYS, CUSTOM_TOOL_KEYS, DEFAULTS_KEYS, ENDPOINT_KEYS, JUDGE_KEYS, MCP_KEYS, PARTICIPANT_KEYS, TOOLS_KEYS,
    TOP_KEYS,
};

/// A problem with the configuration; `Display` is one actionable line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("{}:{line}:{column}: {message}{}", file.display(), hint.as_deref().map(|h| format!(" — {h}")).unwrap_or_default())]
    Invalid {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
        hint: Option<String>,
    },
    #[error("cannot read config file {}: {reason} — check the path given by {origin}", path.display())]
    Unreadable {
        path: PathBuf,
        origin: String,
        reason: String,
    },
}

/// 1-based line and column of a byte offset.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(offset, |nl| offset - nl - 1);
    (line, before[before.len() - col..].chars().count() + 1)
}

/// The `[table]` header in force at a byte offset, e.g. `endpoints.local`.
fn table_at(src: &str, offset: usize) -> Option<String> {
    src[..offset.min(src.len())]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string())
}

/// Builds errors for one file.
pub(crate) struct ErrorContext<'a> {
    pub file: &'a Path,
    pub src: &'a str,
}

impl ErrorContext<'_> {
    pub fn at(&self, span: Range<usize>, message: impl Into<String>, hint: Option<String>) -> ConfigError {
        let (line, column) = line_col(self.src, span.start);
        ConfigError::Invalid {
            file: self.file.to_path_buf(),
            line,
            column,
            message: message.into(),
            hint,
        }
    }

    /// Translate a TOML/serde error into our wording.
    pub fn toml_error(&self, e: &toml::de::Error) -> ConfigError {
        let span = e.span().unwrap_or(0..0);
        let msg = e.message().trim().to_string();
        if let Some(key) = msg.strip_prefix("unknown field `").and_then(|r| r.split('`').next()) {
            let table = table_at(self.src, span.start);
            let (where_, keys): (String, &[&str]) = match table.as_deref() {
                None => ("at the top level".into(), TOP_KEYS),
                Some("defaults") => ("in [defaults]".into(), DEFAULTS_KEYS),
                Some(t) if t.starts_with("endpoints.") => (format!("in [{t}]"), ENDPOINT_KEYS),
                Some("tools") => ("in [tools]".into(), TOOLS_KEYS),
                Some(t) if t.starts_with("tools.custom.") => (format!("in [{t}]"), CUSTOM_TOOL_KEYS),
                Some(t) if t.starts_with("mcp.") => (format!("in [{t}]"), MCP_KEYS),
                Some(t) if t.starts_with("arenas.") && t.ends_with(".participants") => {
                    (format!("in [[{t}]]"), PARTICIPANT_KEYS)
                }
                Some(t) if t.starts_with("arenas.") && t.ends_with(".judge") => (format!("in [{t}]"), JUDGE_KEYS),
                Some(t) if t.starts_with("arenas.") => (format!("in [{t}]"), ARENA_KEYS),
                Some(t) => (format!("in [{t}]"), &[][..]),
            };
            let hint = match closest(key, keys.iter().copied()) {
                Some(s) => format!("did you mean `{s}`? Valid keys: {}", keys.join(", ")),
                None if keys.is_empty() => "remove it".into(),
                None => format!("remove it; valid keys: {}", keys.join(", ")),
            };
            return self.at(span, format!("unknown key `{key}` {where_}"), Some(hint));
        }
        if let Some(field) = msg.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
            return self.at(
                span,
                format!("missing required key `{field}`"),
                Some(format!("add `{field} = ...` to this table")),
            );
        }
        let first = msg.lines().next().unwrap_or("invalid TOML").to_string();
        self.at(
            span,
            first,
            Some("see polyglot.toml in the pai repository for a documented example".into()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_is_one_based_and_counts_chars() {
        let s = "a = 1\nbé = 2\n";
        assert_eq!(line_col(s, 0), (1, 1));
        assert_eq!(line_col(s, 6), (2, 1));
        assert_eq!(line_col(s, s.find('=').unwrap()), (1, 3));
        let second_eq = s.rfind('=').unwrap();
        assert_eq!(line_col(s, second_eq), (2, 4));
    }

    #[test]
    fn table_lookup_finds_the_enclosing_header() {
        let s = "[defaults]\nx=1\n[endpoints.local]\ny=2\n";
        assert_eq!(table_at(s, s.find('y').unwrap()).as_deref(), Some("endpoints.local"));
        assert_eq!(table_at(s, s.find('x').unwrap()).as_deref(), Some("defaults"));
        assert_eq!(table_at(s, 0), None);
    }
}
