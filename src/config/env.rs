//! Where secrets come from: the process environment, then `.env` in the working
//! directory. Values are never written anywhere; only variable NAMES are configured.

use std::collections::HashMap;
use std::path::Path;

/// Looks up API keys by environment-variable name.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    dotenv: HashMap<String, String>,
    /// Overrides for tests (checked before the process environment).
    overrides: HashMap<String, String>,
    /// When false, the process environment is ignored (tests).
    use_process_env: bool,
}

impl Secrets {
    /// Process environment plus `dir/.env` when present.
    pub fn load(dir: &Path) -> Self {
        let dotenv = std::fs::read_to_string(dir.join(".env"))
            .map(|s| parse_dotenv(&s))
            .unwrap_or_default();
        Secrets {
            dotenv,
            overrides: HashMap::new(),
            use_process_env: true,
        }
    }

    /// Only the given pairs (for tests).
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Secrets {
            dotenv: HashMap::new(),
            overrides: pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            use_process_env: false,
        }
    }

    pub fn get(&self, name: &str) -> Option<String> {
        if let Some(v) = self.overrides.get(name) {
            return Some(v.clone());
        }
        if self.use_process_env
            && let Ok(v) = std::env::var(name)
            && !v.is_empty()
        {
            return Some(v);
        }
        self.dotenv.get(name).filter(|v| !v.is_empty()).cloned()
    }
}

/// Parse `.env` text: `KEY=value`, optional `export `, `#` comments, single or
/// double quotes (double quotes understand `\n`, `\"` and `\\`).
pub fn parse_dotenv(src: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for line in src.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let key = k.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let v = v.trim();
        let value = if let Some(inner) = v.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
            let mut s = String::with_capacity(inner.len());
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    match chars.next() {
                        Some('n') => s.push('\n'),
                        Some('t') => s.push('\t'),
                        Some(o) => s.push(o),
                        None => s.push('\\'),
                    }
                } else {
                    s.push(c);
                }
            }
            s
        } else if let Some(inner) = v.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
            inner.to_string()
        } else {
            // Unquoted: strip a trailing ` # comment`.
            v.split(" #").next().unwrap_or("").trim().to_string()
        };
        out.insert(key.to_string(), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotenv_forms() {
        let m = parse_dotenv("# comment\nA=1\nexport B = two # trailing\nC=\"x\\ny\"\nD='lit\\n'\nbad line\n=nokey\n");
        assert_eq!(m["A"], "1");
        assert_eq!(m["B"], "two");
        assert_eq!(m["C"], "x\ny");
        assert_eq!(m["D"], "lit\\n");
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn dotenv_file_is_read_from_dir() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(".env"), "PAI_TEST_ONLY_KEY_XYZ=sekret\n").unwrap();
        let s = Secrets::load(d.path());
        assert_eq!(s.get("PAI_TEST_ONLY_KEY_XYZ").as_deref(), Some("sekret"));
        assert_eq!(s.get("PAI_TEST_ONLY_MISSING"), None);
    }
}
