//! Orchestrators turn user intent into turns: they drive adapters (and later
//! tools) and emit [`OrchestratorEvent`]s that any front end can consume.
//!
//! Owns the turn lifecycle and its outcome. It never draws, prints or writes
//! files: front ends render events, records persist outcomes.

pub mod agent;
pub mod arena;
pub mod chat;
pub mod compare;
pub mod judge;

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::conversation::{Approval, Message, Params, ToolRun, Turn, TurnMode};
use crate::protocols::{ProtocolAdapter, ProtocolError, StreamEvent};

/// Identifies a turn and the lane it streams in (compare panes, arena seats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TurnRef {
    pub turn_id: u32,
    pub lane: u8,
}

/// What orchestrators report while they work.
#[derive(Debug, Clone, PartialEq)]
pub enum OrchestratorEvent {
    TurnStarted {
        turn: TurnRef,
        endpoint: String,
        model: String,
        participant: Option<String>,
    },
    Stream {
        turn: TurnRef,
        event: StreamEvent,
    },
    TurnFinished {
        turn: TurnRef,
        outcome: Box<TurnOutcome>,
    },
    /// A tool call needs the user's decision (answered through the approver).
    ApprovalNeeded {
        turn: TurnRef,
        request: agent::ApprovalRequest,
    },
    ToolStarted {
        turn: TurnRef,
        call_id: String,
        tool: String,
        arguments: serde_json::Value,
        approval: Approval,
    },
    /// Live output of a running tool (e.g. shell lines).
    ToolOutput {
        turn: TurnRef,
        call_id: String,
        chunk: String,
    },
    ToolFinished {
        turn: TurnRef,
        run: Box<ToolRun>,
    },
    /// The turn so far, for crash-safe records: sent when the request goes
    /// out and then about once a second while it streams. Marked as
    /// interrupted; the `TurnFinished` record replaces it.
    Checkpoint {
        turn: TurnRef,
        partial: Box<Turn>,
    },
    /// Arena progress: pauses, the end of the exchange, the verdict.
    Arena(arena::ArenaEvent),
    /// An agent run is over (after its last step's `TurnFinished`).
    AgentFinished {
        turn: TurnRef,
        end: agent::AgentEnd,
    },
}

impl OrchestratorEvent {
    /// The turn an event belongs to (arena progress belongs to the run).
    pub fn turn(&self) -> Option<TurnRef> {
        match self {
            OrchestratorEvent::TurnStarted { turn, .. }
            | OrchestratorEvent::Stream { turn, .. }
            | OrchestratorEvent::TurnFinished { turn, .. }
            | OrchestratorEvent::Checkpoint { turn, .. }
            | OrchestratorEvent::ApprovalNeeded { turn, .. }
            | OrchestratorEvent::ToolStarted { turn, .. }
            | OrchestratorEvent::ToolOutput { turn, .. }
            | OrchestratorEvent::ToolFinished { turn, .. }
            | OrchestratorEvent::AgentFinished { turn, .. } => Some(*turn),
            OrchestratorEvent::Arena(_) => None,
        }
    }
}

/// Where orchestrators send events. Bounded: a fast stream waits for its front
/// end instead of piling up in memory, and the front end renders in batches.
pub type EventSink = mpsc::Sender<OrchestratorEvent>;
pub type EventSource = mpsc::Receiver<OrchestratorEvent>;

/// Events in flight between an orchestrator and its front end.
pub const EVENT_BUFFER: usize = 256;

/// Send an event; a front end that has gone away is not an error for the turn.
pub async fn emit(sink: &EventSink, event: OrchestratorEvent) {
    let _ = sink.send(event).await;
}

/// A connected sink and source.
pub fn event_channel() -> (EventSink, EventSource) {
    mpsc::channel(EVENT_BUFFER)
}

/// How a turn ended; every variant carries the full record, partial text included.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnOutcome {
    Completed(Turn),
    Cancelled(Turn),
    Failed { turn: Turn, error: ProtocolError },
}

impl TurnOutcome {
    pub fn turn(&self) -> &Turn {
        match self {
            TurnOutcome::Completed(t) | TurnOutcome::Cancelled(t) | TurnOutcome::Failed { turn: t, .. } => t,
        }
    }

    pub fn into_turn(self) -> Turn {
        match self {
            TurnOutcome::Completed(t) | TurnOutcome::Cancelled(t) | TurnOutcome::Failed { turn: t, .. } => t,
        }
    }

    pub fn turn_mut(&mut self) -> &mut Turn {
        match self {
            TurnOutcome::Completed(t) | TurnOutcome::Cancelled(t) | TurnOutcome::Failed { turn: t, .. } => t,
        }
    }

    pub fn error(&self) -> Option<&ProtocolError> {
        match self {
            TurnOutcome::Failed { error, .. } => Some(error),
            TurnOutcome::Completed(_) | TurnOutcome::Cancelled(_) => None,
        }
    }
}

/// Everything one model request needs.
#[derive(Clone)]
pub struct TurnContext {
    pub turn: TurnRef,
    pub endpoint: String,
    pub model: String,
    pub participant: Option<String>,
    pub mode: TurnMode,
    pub adapter: Arc<dyn ProtocolAdapter>,
    /// Full request messages, system prompt first.
    pub messages: Vec<Message>,
    pub params: Params,
    pub tools: Vec<crate::protocols::ToolSpec>,
}

impl std::fmt::Debug for TurnContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnContext")
            .field("turn", &self.turn)
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("participant", &self.participant)
            .field("mode", &self.mode)
            .field("adapter", &self.adapter.protocol())
            .field("messages", &self.messages.len())
            .finish_non_exhaustive()
    }
}
