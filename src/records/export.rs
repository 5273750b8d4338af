//! Exports of a conversation: Markdown, HTML (the modern template) and JSON.
//! Shared by `/export` in the TUI and the session commands.

use crate::conversation::{Role, Turn, TurnStatus};

use super::html::{HtmlBook, Templates};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Markdown,
    Html,
    Json,
}

impl ExportFormat {
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "md" | "markdown" => Some(ExportFormat::Markdown),
            "html" | "htm" => Some(ExportFormat::Html),
            "json" => Some(ExportFormat::Json),
            _ => None,
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Markdown => "md",
            ExportFormat::Html => "html",
            ExportFormat::Json => "json",
        }
    }
}

/// Render `turns` in `format`; `title` names the session.
pub fn render_export(format: ExportFormat, turns: &[Turn], title: &str) -> Result<String, String> {
    match format {
        ExportFormat::Markdown => Ok(to_markdown(turns, title)),
        ExportFormat::Json => serde_json::to_string_pretty(&serde_json::json!({ "session": title, "turns": turns }))
            .map_err(|e| format!("cannot encode JSON: {e}")),
        ExportFormat::Html => {
            let templates = Templates::builtin();
            let mut book = HtmlBook::new();
            for (i, t) in turns.iter().enumerate() {
                book.upsert(&templates, i, t)?;
            }
            let started = turns.first().map(|t| t.started_at.as_str()).unwrap_or("");
            let pages = book.pages(&templates, &format!("pai — {title}"), title, started)?;
            pages
                .into_iter()
                .next()
                .map(|(_, html)| html)
                .ok_or_else(|| "no page rendered".into())
        }
    }
}

/// A readable Markdown transcript.
pub fn to_markdown(turns: &[Turn], title: &str) -> String {
    let mut s = format!("# pai — {title}\n\n");
    if let Some(first) = turns.first() {
        s.push_str(&format!("_{} turn(s), started {}_\n\n", turns.len(), first.started_at));
    }
    for t in turns {
        let msgs = &t.request.messages;
        let start = msgs
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .map_or(0, |i| i + 1);
        for m in msgs[start..].iter().filter(|m| m.role != Role::System) {
            let who = match (m.role, &m.name) {
                (_, Some(n)) => n.clone(),
                (Role::User, None) => "You".into(),
                (Role::Tool, None) => format!("Tool result ({})", m.tool_call_id.as_deref().unwrap_or("?")),
                (Role::System | Role::Assistant, None) => m.role.as_str().into(),
            };
            s.push_str(&format!("## {who}\n\n{}\n\n", m.content.trim_end()));
        }
        let who = t.participant_name.clone().unwrap_or_else(|| t.model.clone());
        s.push_str(&format!("## {who} ({})\n\n", t.endpoint));
        if !t.response.reasoning.is_empty() {
            s.push_str("<details><summary>Reasoning</summary>\n\n");
            s.push_str(t.response.reasoning.trim());
            s.push_str("\n\n</details>\n\n");
        }
        s.push_str(t.response.text.trim_end());
        s.push_str("\n\n");
        for c in &t.response.tool_calls {
            s.push_str(&format!("Tool call `{}`:\n\n```json\n{}\n```\n\n", c.name, c.arguments));
        }
        match t.status {
            TurnStatus::Completed => {}
            TurnStatus::Cancelled => s.push_str("_(cancelled)_\n\n"),
            TurnStatus::Failed => s.push_str(&format!(
                "_(failed: {})_\n\n",
                t.response.error.as_deref().unwrap_or("error")
            )),
        }
        s.push_str("---\n\n");
    }
    s
}
