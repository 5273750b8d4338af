//! The default orchestrator: one streamed request per user message.
//!
//! Streams the adapter's events to the sink as they arrive, measures the
//! request, and returns a [`TurnOutcome`] whose record keeps whatever arrived,
//! whether the turn completed, was cancelled or failed.

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{EventSink, OrchestratorEvent, TurnContext, TurnOutcome};
use crate::conversation::{Turn, TurnRequest, TurnResponse, TurnStatus};
use crate::protocols::{ChatRequest, ProtocolError, StreamEvent};
use crate::stats::{StatsTracker, estimate_tokens};
use crate::util::time::Utc;

/// Run one request and report it.
pub async fn run_turn(ctx: TurnContext, sink: &EventSink, cancel: CancellationToken) -> TurnOutcome {
    let started_at = Utc::now().rfc3339();
    let _ = sink.send(OrchestratorEvent::TurnStarted {
        turn: ctx.turn,
        endpoint: ctx.endpoint.clone(),
        model: ctx.model.clone(),
        participant: ctx.participant.clone(),
    });
    let input_estimate = ctx.messages.iter().map(|m| estimate_tokens(&m.content) + 4).sum();
    let mut stats = StatsTracker::start(input_estimate);
    let request = ChatRequest {
        model: ctx.model.clone(),
        messages: ctx.messages.clone(),
        tools: ctx.tools.clone(),
        params: ctx.params.clone(),
    };
    let mut response = TurnResponse::default();
    let mut stream = ctx.adapter.stream(request, cancel.clone());
    let mut error: Option<ProtocolError> = None;
    let mut finished = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(ev) => {
                match &ev {
                    StreamEvent::Text(t) => {
                        stats.on_output(t.len());
                        response.text.push_str(t);
                    }
                    StreamEvent::Reasoning(r) => {
                        stats.on_output(r.len());
                        response.reasoning.push_str(r);
                    }
                    StreamEvent::ToolCallStart { .. } => stats.on_output(0),
                    StreamEvent::ToolCallDelta { arguments, .. } => stats.on_output(arguments.len()),
                    StreamEvent::ToolCall(tc) => response.tool_calls.push(tc.clone()),
                    StreamEvent::Usage(u) => stats.on_usage(*u),
                    StreamEvent::Finished(reason) => {
                        finished = true;
                        stats.on_finish(reason);
                    }
                    StreamEvent::Retrying { .. } => stats.on_retry(),
                }
                let _ = sink.send(OrchestratorEvent::Stream { turn: ctx.turn, event: ev });
            }
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    drop(stream);
    // A cancel that raced with the end of the stream counts only if the
    // answer had not finished.
    let cancelled = match &error {
        Some(e) => e.is_cancelled(),
        None => cancel.is_cancelled() && !finished,
    };
    let status = if cancelled {
        TurnStatus::Cancelled
    } else if error.is_some() {
        TurnStatus::Failed
    } else {
        TurnStatus::Completed
    };
    if status == TurnStatus::Cancelled {
        stats.on_finish("cancelled");
    }
    let request_stats = stats.finish();
    response.finish_reason = request_stats.finish_reason.clone();
    response.error = match (&error, status) {
        (Some(e), TurnStatus::Failed) => Some(e.to_string()),
        _ => None,
    };
    let turn = Turn {
        turn_id: ctx.turn.turn_id,
        started_at,
        endpoint: ctx.endpoint,
        model: ctx.model,
        participant_name: ctx.participant,
        mode: ctx.mode,
        status,
        request: TurnRequest {
            messages: ctx.messages,
            params: ctx.params,
        },
        response,
        stats: request_stats,
    };
    let outcome = match (status, error) {
        (TurnStatus::Completed, _) => TurnOutcome::Completed(turn),
        (TurnStatus::Cancelled, _) => TurnOutcome::Cancelled(turn),
        (TurnStatus::Failed, Some(error)) => TurnOutcome::Failed { turn, error },
        (TurnStatus::Failed, None) => TurnOutcome::Completed(turn),
    };
    let _ = sink.send(OrchestratorEvent::TurnFinished {
        turn: ctx.turn,
        outcome: Box::new(outcome.clone()),
    });
    outcome
}
