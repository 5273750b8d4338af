//! Exports of a conversation: Markdown, HTML (the modern template) and JSON.
//! Shared by `/export` in the TUI and the session commands.

use crate::conversation::{Role, Turn, TurnMode, TurnStatus};

use super::arena_view::{RulingView, ScoreRow, VerdictView, note_seat, turn_ruling, verdict_view};
use super::html::{HtmlBook, Shown, Templates, inputs};

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

/// A readable Markdown transcript: each prompt once (an arena answer is not
/// repeated as the next speaker's input, nor a compare prompt per answer),
/// judge turns with their ruling, the verdict as a table, compare picks.
pub fn to_markdown(turns: &[Turn], title: &str) -> String {
    let mut s = format!("# pai — {title}\n\n");
    if let Some(first) = turns.first() {
        s.push_str(&format!("_{} turn(s), started {}_\n\n", turns.len(), first.started_at));
    }
    let mut prev: Option<Shown> = None;
    let mut seats: Vec<String> = Vec::new();
    for t in turns {
        note_seat(&mut seats, t);
        let shown = Shown::of(t);
        let inputs_shown = prev.as_ref().is_some_and(|p| p.shows_inputs_of(&shown));
        prev = Some(shown);
        if t.mode == TurnMode::Judge {
            s.push_str("_The judge read the transcript above._\n\n");
        } else if !inputs_shown {
            for m in inputs(t) {
                let who = match (m.role, &m.name) {
                    (_, Some(n)) => n.clone(),
                    (Role::User, None) => "You".into(),
                    (Role::Tool, None) => format!("Tool result ({})", m.tool_call_id.as_deref().unwrap_or("?")),
                    (Role::System | Role::Assistant, None) => m.role.as_str().into(),
                };
                s.push_str(&format!("## {who}\n\n{}\n\n", m.content.trim_end()));
            }
        }
        let who = match &t.participant_name {
            Some(name) => format!("{name} ({} · {})", t.model, t.endpoint),
            None => format!("{} ({})", t.model, t.endpoint),
        };
        let lane = match (t.mode, t.lane) {
            (TurnMode::Compare, Some(l)) => format!(" — answer {}", u16::from(l) + 1),
            _ => String::new(),
        };
        s.push_str(&format!("## {who}{lane}\n\n"));
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
        if let Some(p) = t.pick {
            s.push_str(&format!("_{}_\n\n", p.label()));
        }
        if let Some(r) = turn_ruling(t, &seats) {
            ruling_markdown(&mut s, &r);
        }
        if let Some(v) = &t.verdict {
            verdict_markdown(&mut s, &verdict_view(v));
        }
        s.push_str("---\n\n");
    }
    s
}

fn ruling_markdown(s: &mut String, r: &RulingView) {
    match &r.error {
        Some(e) => s.push_str(&format!(
            "**No ruling** (participants as {}): {}\n\n",
            r.order,
            e.trim()
        )),
        None => {
            s.push_str(&format!("**Ruling** (participants as {}): {}", r.order, r.outcome));
            if !r.reasons.trim().is_empty() {
                s.push_str(&format!(" — {}", r.reasons.trim()));
            }
            s.push_str("\n\n");
            score_table(s, &r.criteria, &r.rows);
        }
    }
}

fn verdict_markdown(s: &mut String, v: &VerdictView) {
    s.push_str(&format!(
        "## Verdict — {}\n\n{} (judge: {})\n\n",
        v.headline, v.detail, v.judge
    ));
    score_table(s, &v.criteria, &v.rows);
}

/// Scores as a Markdown table (nothing when there are none).
fn score_table(s: &mut String, criteria: &[String], rows: &[ScoreRow]) {
    if rows.is_empty() {
        return;
    }
    let cell = |x: &str| x.replace('|', "\\|").replace('\n', " ");
    s.push_str("| participant |");
    for c in criteria {
        s.push_str(&format!(" {} |", cell(c)));
    }
    s.push_str(" mean |\n|---|");
    s.push_str(&"---|".repeat(criteria.len() + 1));
    s.push('\n');
    for r in rows {
        s.push_str(&format!("| {} |", cell(&r.name)));
        for v in &r.cells {
            s.push_str(&format!(" {} |", cell(v)));
        }
        s.push_str(&format!(" {} |\n", r.mean));
    }
    s.push('\n');
}
