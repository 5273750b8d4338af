//! What goes into the store and what comes out: sessions, stored turns, search
//! hits, what a resume needs, votes. Plain data; the SQL lives in `write`,
//! `read` and `search`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::conversation::{Message, Params, ToolCall, Turn, TurnMode, TurnStatus};

/// How far a stored turn got: `Streaming` while only checkpoints were
/// written (if it stays so, pai stopped mid-answer), then its final status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnState {
    Streaming,
    Completed,
    Cancelled,
    Failed,
}

impl TurnState {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnState::Streaming => "streaming",
            TurnState::Completed => "completed",
            TurnState::Cancelled => "cancelled",
            TurnState::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "streaming" => Some(TurnState::Streaming),
            "completed" => Some(TurnState::Completed),
            "cancelled" => Some(TurnState::Cancelled),
            "failed" => Some(TurnState::Failed),
            _ => None,
        }
    }

    /// The state of a finished turn.
    pub fn from_status(s: TurnStatus) -> Self {
        match s {
            TurnStatus::Completed => TurnState::Completed,
            TurnStatus::Cancelled => TurnState::Cancelled,
            TurnStatus::Failed => TurnState::Failed,
        }
    }

    /// The nearest final status: a turn left streaming was cut off, which is
    /// what a cancel is (whatever arrived is kept).
    pub fn status(self) -> TurnStatus {
        match self {
            TurnState::Completed => TurnStatus::Completed,
            TurnState::Streaming | TurnState::Cancelled => TurnStatus::Cancelled,
            TurnState::Failed => TurnStatus::Failed,
        }
    }
}

/// Whether a turn write is a checkpoint of a turn still streaming, or the turn
/// as it ended (then its `status` is stored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Streaming,
    Final,
}

/// A session as its front end knows it when it starts (or changes).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionMeta {
    /// The session folder's name, e.g. `20261121-184605-a1b2c3`.
    pub id: String,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// `None` keeps the stored title (or the one taken from the first prompt).
    pub title: Option<String>,
    pub endpoint: String,
    pub model: String,
    pub system: Option<String>,
    /// The session folder, when records are written.
    pub folder: Option<PathBuf>,
    pub mode: TurnMode,
}

/// One line of `list_sessions`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    pub id: String,
    pub started_at: String,
    /// When its last turn started.
    pub updated_at: String,
    pub title: String,
    /// Endpoint and model of the latest turn.
    pub endpoint: String,
    pub model: String,
    pub mode: TurnMode,
    pub folder: Option<PathBuf>,
    pub turn_count: u32,
}

/// A tool call with what became of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredToolCall {
    pub call: ToolCall,
    pub status: ToolCallStatus,
    pub result: Option<String>,
}

/// Where a tool call is at (the agent loop moves it along).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallStatus {
    Requested,
    Running,
    Done,
    Failed,
    Denied,
}

impl ToolCallStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolCallStatus::Requested => "requested",
            ToolCallStatus::Running => "running",
            ToolCallStatus::Done => "done",
            ToolCallStatus::Failed => "failed",
            ToolCallStatus::Denied => "denied",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "requested" => Some(ToolCallStatus::Requested),
            "running" => Some(ToolCallStatus::Running),
            "done" => Some(ToolCallStatus::Done),
            "failed" => Some(ToolCallStatus::Failed),
            "denied" => Some(ToolCallStatus::Denied),
            _ => None,
        }
    }
}

/// A turn read back. `turn.request.messages` holds only what this turn added
/// (the messages after the previous answer), like the TUI's export turns;
/// [`crate::store::Store::restore`] gives the whole conversation. A turn left
/// `Streaming` reads back with status `Cancelled`.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTurn {
    pub turn: Turn,
    pub state: TurnState,
    pub tool_calls: Vec<StoredToolCall>,
}

/// A session with its turns, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionDetail {
    pub summary: SessionSummary,
    pub system: Option<String>,
    pub turns: Vec<StoredTurn>,
}

impl SessionDetail {
    /// Turns ready for `records::export::render_export`; a turn cut off while
    /// streaming says so in its error.
    pub fn export_turns(&self) -> Vec<Turn> {
        self.turns
            .iter()
            .map(|t| {
                let mut turn = t.turn.clone();
                if t.state == TurnState::Streaming && turn.response.error.is_none() {
                    turn.response.error = Some(INTERRUPTED.into());
                }
                turn
            })
            .collect()
    }
}

/// The note for a turn that never got its final write.
pub const INTERRUPTED: &str = "interrupted: pai stopped while this answer was streaming";

/// Start and end of a highlighted match in [`SearchHit::snippet`]: characters
/// from Unicode's private use area, which chat text does not contain.
pub const HIT_START: char = '\u{E000}';
pub const HIT_END: char = '\u{E001}';

/// One search result, best first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    pub session_id: String,
    pub turn_id: u32,
    pub started_at: String,
    pub endpoint: String,
    pub model: String,
    pub session_title: String,
    /// bm25 rank: lower is better.
    pub rank: f64,
    /// Text around the matches, which are between [`HIT_START`] and [`HIT_END`].
    pub snippet: String,
}

impl SearchHit {
    /// The snippet with the match markers replaced by `open` / `close`.
    pub fn highlighted(&self, open: &str, close: &str) -> String {
        self.snippet.replace(HIT_START, open).replace(HIT_END, close)
    }
}

/// What resuming a session needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    pub session_id: String,
    pub title: String,
    pub folder: Option<PathBuf>,
    /// Endpoint, model and participant of the last answer.
    pub endpoint: String,
    pub model: String,
    pub participant: Option<String>,
    pub mode: TurnMode,
    pub params: Params,
    pub system: Option<String>,
    /// The conversation to continue from (without the system prompt), ending
    /// with the last answer. A prompt that got no answer is not in it (the TUI
    /// leaves those out of the context too): see `pending_prompt`.
    pub messages: Vec<Message>,
    /// A prompt after the last answer that got none (failed or cut off before
    /// any output): offer it again.
    pub pending_prompt: Option<String>,
    /// The id for the next turn (one more than the highest recorded).
    pub next_turn_id: u32,
}

/// A verdict between two answers to one prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VoteChoice {
    Left,
    Right,
    Tie,
    BothBad,
}

impl VoteChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            VoteChoice::Left => "left",
            VoteChoice::Right => "right",
            VoteChoice::Tie => "tie",
            VoteChoice::BothBad => "both_bad",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "left" => Some(VoteChoice::Left),
            "right" => Some(VoteChoice::Right),
            "tie" => Some(VoteChoice::Tie),
            "both_bad" => Some(VoteChoice::BothBad),
            _ => None,
        }
    }
}

/// One of the two answers voted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoteSide {
    pub endpoint: String,
    pub model: String,
    /// The participant's display name (arena aliases), if any.
    pub name: Option<String>,
    /// The turn that produced the answer, in `Vote::session_id`.
    pub turn_id: Option<u32>,
    pub answer: String,
}

/// A vote to store. `prompt` is what both sides were sent (the DPO prompt).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vote {
    /// RFC 3339 UTC.
    pub created_at: String,
    pub session_id: Option<String>,
    pub mode: TurnMode,
    /// Who decided: `user`, or a judge such as `judge:local/qwen`.
    pub voter: String,
    pub prompt: Vec<Message>,
    pub left: VoteSide,
    pub right: VoteSide,
    pub choice: VoteChoice,
    pub note: Option<String>,
}

impl Vote {
    /// `(chosen, rejected)` for preference data; `None` for ties and both-bad.
    pub fn chosen_rejected(&self) -> Option<(&VoteSide, &VoteSide)> {
        match self.choice {
            VoteChoice::Left => Some((&self.left, &self.right)),
            VoteChoice::Right => Some((&self.right, &self.left)),
            VoteChoice::Tie | VoteChoice::BothBad => None,
        }
    }
}

/// A stored vote with its id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredVote {
    pub id: i64,
    #[serde(flatten)]
    pub vote: Vote,
}

/// What a turn row keeps in its `extra` column (JSON): a judge turn's ruling,
/// the verdict, a compare answer's pick. `NULL` when there is none of them.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct TurnExtra {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ruling: Option<Box<crate::verdict::Ruling>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Box<crate::verdict::Verdict>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pick: Option<crate::conversation::PickMark>,
}

/// The `extra` column of `turn`.
pub(crate) fn turn_extra(turn: &Turn) -> Option<String> {
    if turn.ruling.is_none() && turn.verdict.is_none() && turn.pick.is_none() {
        return None;
    }
    let extra = TurnExtra {
        ruling: turn.ruling.clone(),
        verdict: turn.verdict.clone(),
        pick: turn.pick,
    };
    serde_json::to_string(&extra).ok()
}
