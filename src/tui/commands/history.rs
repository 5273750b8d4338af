//! History commands: /history (recent sessions), /search QUERY. `/resume ID`
//! shares its name with the arena's `/resume` (see `arena.rs`).

use super::{CommandError, SlashCommand};
use crate::tui::app::{App, HistoryRequest};

pub struct History;
impl SlashCommand for History {
    fn name(&self) -> &'static str {
        "history"
    }
    fn about(&self) -> &'static str {
        "recent sessions from the history; Enter resumes the one chosen"
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        if !args.is_empty() {
            return Err(CommandError::Usage(format!(
                "unexpected `{args}` — /search QUERY searches"
            )));
        }
        app.history(HistoryRequest::Recent).map_err(CommandError::Failed)
    }
}

pub struct Search;
impl SlashCommand for Search {
    fn name(&self) -> &'static str {
        "search"
    }
    fn args(&self) -> &'static str {
        "QUERY"
    }
    fn about(&self) -> &'static str {
        "full-text search over every recorded prompt and answer; Enter opens the hit"
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        if args.trim().is_empty() {
            return Err(CommandError::Usage("what to look for, e.g. /search sqlite wal".into()));
        }
        app.history(HistoryRequest::Search(args.trim().to_string()))
            .map_err(CommandError::Failed)
    }
}
