//! HTML transcripts rendered with minijinja (autoescape always on).
//!
//! Each format is a page template plus a turn template. A turn's fragment is
//! rendered once and cached, so refreshing the page after a turn costs one
//! fragment render plus one file write, however long the session is.

use std::path::{Path, PathBuf};

use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, context};
use serde::Serialize;

use crate::conversation::{Message, Role, Turn};

/// One HTML output: `conversation.html` or `gptwink_format.html`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HtmlFormat {
    Modern,
    Legacy,
}

impl HtmlFormat {
    pub const ALL: [HtmlFormat; 2] = [HtmlFormat::Modern, HtmlFormat::Legacy];

    pub fn file_name(self) -> &'static str {
        match self {
            HtmlFormat::Modern => "conversation.html",
            HtmlFormat::Legacy => "gptwink_format.html",
        }
    }

    fn page(self) -> &'static str {
        match self {
            HtmlFormat::Modern => "conversation.html.j2",
            HtmlFormat::Legacy => "gptwink_format.html.j2",
        }
    }

    fn turn(self) -> &'static str {
        match self {
            HtmlFormat::Modern => "conversation.turn.html.j2",
            HtmlFormat::Legacy => "gptwink_format.turn.html.j2",
        }
    }
}

/// Template names and their built-in sources.
const BUILTIN: &[(&str, &str)] = &[
    (
        "conversation.html.j2",
        include_str!("../../templates/conversation.html.j2"),
    ),
    (
        "conversation.turn.html.j2",
        include_str!("../../templates/conversation.turn.html.j2"),
    ),
    (
        "gptwink_format.html.j2",
        include_str!("../../templates/gptwink_format.html.j2"),
    ),
    (
        "gptwink_format.turn.html.j2",
        include_str!("../../templates/gptwink_format.turn.html.j2"),
    ),
];

/// Loaded templates (built-in, or overridden file by file from a folder).
pub struct Templates {
    env: Environment<'static>,
}

/// What a turn template sees besides the turn itself.
#[derive(Serialize)]
struct TurnView<'a> {
    turn: &'a Turn,
    /// Messages new in this request: the user's prompt, tool results, …
    inputs: Vec<&'a Message>,
    speaker: String,
}

fn inputs(turn: &Turn) -> Vec<&Message> {
    let msgs = &turn.request.messages;
    let start = msgs
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1);
    msgs[start..].iter().filter(|m| m.role != Role::System).collect()
}

impl Templates {
    /// Built-in templates, with any same-named file in `dir` taking precedence.
    pub fn load(dir: Option<&Path>) -> Result<Self, String> {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::Html);
        for (name, builtin) in BUILTIN {
            let src = match dir.map(|d| d.join(name)).filter(|p| p.is_file()) {
                Some(p) => {
                    std::fs::read_to_string(&p).map_err(|e| format!("cannot read template {}: {e}", p.display()))?
                }
                None => (*builtin).to_string(),
            };
            env.add_template_owned(*name, src)
                .map_err(|e| format!("template {name}: {e}"))?;
        }
        Ok(Templates { env })
    }

    pub fn builtin() -> Self {
        match Self::load(None) {
            Ok(t) => t,
            Err(e) => unreachable!("built-in templates are checked by tests: {e}"),
        }
    }

    pub fn render_turn(&self, format: HtmlFormat, turn: &Turn) -> Result<String, String> {
        let speaker = match &turn.participant_name {
            Some(p) => format!("{p} ({})", turn.model),
            None => turn.model.clone(),
        };
        let view = TurnView {
            turn,
            inputs: inputs(turn),
            speaker,
        };
        self.env
            .get_template(format.turn())
            .and_then(|t| t.render(context! { t => Serde(&view) }))
            .map_err(|e| format!("rendering {}: {e:#}", format.turn()))
    }

    pub fn render_page(
        &self,
        format: HtmlFormat,
        title: &str,
        session_id: &str,
        started_at: &str,
        fragments: &[String],
    ) -> Result<String, String> {
        let body = minijinja::Value::from_safe_string(fragments.concat());
        self.env
            .get_template(format.page())
            .and_then(|t| {
                t.render(context! {
                    title => title,
                    session_id => session_id,
                    started_at => started_at,
                    turn_count => fragments.len(),
                    turns_html => body,
                    generator => concat!("pai ", env!("CARGO_PKG_VERSION")),
                })
            })
            .map_err(|e| format!("rendering {}: {e:#}", format.page()))
    }
}

/// Cached fragments for one session's HTML files.
pub struct HtmlBook {
    fragments: [Vec<String>; 2],
}

impl HtmlBook {
    pub fn new() -> Self {
        HtmlBook {
            fragments: [Vec::new(), Vec::new()],
        }
    }

    /// Add (or replace, for a turn rewritten with the same id) a turn's fragments.
    pub fn upsert(&mut self, templates: &Templates, position: usize, turn: &Turn) -> Result<(), String> {
        for (i, f) in HtmlFormat::ALL.iter().enumerate() {
            let frag = templates.render_turn(*f, turn)?;
            let list = &mut self.fragments[i];
            if position < list.len() {
                list[position] = frag;
            } else {
                list.push(frag);
            }
        }
        Ok(())
    }

    pub fn pages(
        &self,
        templates: &Templates,
        title: &str,
        session_id: &str,
        started_at: &str,
    ) -> Result<Vec<(PathBuf, String)>, String> {
        HtmlFormat::ALL
            .iter()
            .enumerate()
            .map(|(i, f)| {
                Ok((
                    PathBuf::from(f.file_name()),
                    templates.render_page(*f, title, session_id, started_at, &self.fragments[i])?,
                ))
            })
            .collect()
    }
}

impl Default for HtmlBook {
    fn default() -> Self {
        Self::new()
    }
}
