//! Getting text out: /copy and /export.

use std::path::PathBuf;

use super::{CommandError, SlashCommand};
use crate::records::export::{ExportFormat, render_export};
use crate::tui::app::{App, Effect};

pub struct Copy;
impl SlashCommand for Copy {
    fn name(&self) -> &'static str {
        "copy"
    }
    fn args(&self) -> &'static str {
        "[code|all]"
    }
    fn about(&self) -> &'static str {
        "copy the last answer (code: its last code block; all: the transcript)"
    }
    fn complete(&self, _app: &App, _partial: &str) -> Vec<String> {
        vec!["code".into(), "all".into()]
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        let text = match args {
            "" => app
                .last_answer()
                .ok_or_else(|| CommandError::Failed("no answer to copy yet".into()))?,
            "code" => {
                let answer = app
                    .last_answer()
                    .ok_or_else(|| CommandError::Failed("no answer to copy yet".into()))?;
                last_code_block(&answer)
                    .ok_or_else(|| CommandError::Failed("the last answer has no code block".into()))?
            }
            "all" => app.transcript.plain_text(),
            other => return Err(CommandError::Usage(format!("unknown target `{other}`"))),
        };
        app.push_effect(Effect::Copy(text));
        Ok(())
    }
}

/// The body of the last fenced code block in a Markdown text.
pub fn last_code_block(md: &str) -> Option<String> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, String)> = None; // (fence, body)
    for line in md.lines() {
        let t = line.trim_start();
        match &mut current {
            None => {
                if let Some(fence) = ["```", "~~~"].iter().find(|f| t.starts_with(**f)) {
                    let n = t.chars().take_while(|c| fence.starts_with(*c)).count();
                    current = Some((fence.chars().next().unwrap_or('`').to_string().repeat(n), String::new()));
                }
            }
            Some((fence, body)) => {
                if t.starts_with(fence.as_str())
                    && t.trim_start_matches(fence.chars().next().unwrap_or('`'))
                        .trim()
                        .is_empty()
                {
                    blocks.push(std::mem::take(body));
                    current = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    if let Some((_, body)) = current {
        blocks.push(body); // unclosed fence: take what there is
    }
    blocks.pop().filter(|b| !b.trim().is_empty())
}

pub struct Export;
impl SlashCommand for Export {
    fn name(&self) -> &'static str {
        "export"
    }
    fn args(&self) -> &'static str {
        "md|html|json [PATH]"
    }
    fn about(&self) -> &'static str {
        "write the conversation to a file (default ./pai-<session>.<ext>)"
    }
    fn complete(&self, _app: &App, _partial: &str) -> Vec<String> {
        vec!["md".into(), "html".into(), "json".into()]
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        let (fmt, path) = args
            .split_once(char::is_whitespace)
            .map_or((args, ""), |(a, b)| (a, b.trim()));
        let format = ExportFormat::parse(fmt).ok_or_else(|| {
            CommandError::Usage(if fmt.is_empty() {
                "give a format".into()
            } else {
                format!("unknown format `{fmt}`")
            })
        })?;
        if app.turns.is_empty() {
            return Err(CommandError::Failed("nothing to export yet".into()));
        }
        let name = app
            .session_dir
            .as_ref()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "session".into());
        let path = if path.is_empty() {
            PathBuf::from(format!("pai-{name}.{}", format.extension()))
        } else {
            PathBuf::from(path)
        };
        let contents = render_export(format, &app.turns, &name).map_err(CommandError::Failed)?;
        app.push_effect(Effect::WriteFile {
            path,
            contents: contents.into_bytes(),
        });
        Ok(())
    }
}
