//! The default orchestrator: one streamed request per user message.
//!
//! Streams the adapter's events to the sink as they arrive, measures the
//! request, and returns a [`TurnOutcome`] whose record keeps whatever arrived,
//! whether the turn completed, was cancelled or failed.

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{EventSink, OrchestratorEvent, TurnContext, TurnOutcome, emit};
use crate::conversation::{Turn, TurnMode, TurnRequest, TurnResponse, TurnStatus};
use crate::protocols::{ChatRequest, ProtocolError, StreamEvent};
use crate::stats::{StatsTracker, estimate_tokens};
use crate::util::time::Utc;

/// How often a streaming turn is checkpointed.
pub const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// What a checkpoint says in place of an error: if pai dies, this stays.
pub const INTERRUPTED: &str = "interrupted: pai stopped while this answer was streaming; what arrived by then is kept";

/// The turn as it stands mid-stream.
fn partial_turn(ctx: &TurnContext, started_at: &str, response: &TurnResponse, stats: &StatsTracker) -> Turn {
    let mut response = response.clone();
    response.error = Some(INTERRUPTED.into());
    Turn {
        turn_id: ctx.turn.turn_id,
        started_at: started_at.to_string(),
        endpoint: ctx.endpoint.clone(),
        model: ctx.model.clone(),
        participant_name: ctx.participant.clone(),
        mode: ctx.mode,
        status: TurnStatus::Cancelled,
        request: TurnRequest {
            messages: ctx.messages.clone(),
            params: ctx.params.clone(),
        },
        response,
        stats: stats.finish(),
        tool_runs: Vec::new(),
        ruling: None,
        verdict: None,
        pick: None,
        lane: matches!(ctx.mode, TurnMode::Arena | TurnMode::Compare).then_some(ctx.turn.lane),
    }
}

/// Run one request and report it (`TurnStarted` … `TurnFinished`).
pub async fn run_turn(ctx: TurnContext, sink: &EventSink, cancel: CancellationToken) -> TurnOutcome {
    let turn = ctx.turn;
    let outcome = stream_turn(ctx, sink, cancel).await;
    emit(
        sink,
        OrchestratorEvent::TurnFinished {
            turn,
            outcome: Box::new(outcome.clone()),
        },
    )
    .await;
    outcome
}

/// Run one request, reporting `TurnStarted` and the stream but not the end:
/// the caller (the agent) adds to the record first.
pub async fn stream_turn(ctx: TurnContext, sink: &EventSink, cancel: CancellationToken) -> TurnOutcome {
    let started_at = Utc::now().rfc3339();
    emit(
        sink,
        OrchestratorEvent::TurnStarted {
            turn: ctx.turn,
            endpoint: ctx.endpoint.clone(),
            model: ctx.model.clone(),
            participant: ctx.participant.clone(),
        },
    )
    .await;
    let input_estimate = ctx.messages.iter().map(|m| estimate_tokens(&m.content) + 4).sum();
    let mut stats = StatsTracker::start(input_estimate);
    let request = ChatRequest {
        model: ctx.model.clone(),
        messages: ctx.messages.clone(),
        tools: ctx.tools.clone(),
        params: ctx.params.clone(),
    };
    let mut response = TurnResponse::default();
    let mut last_checkpoint = tokio::time::Instant::now();
    emit(
        sink,
        OrchestratorEvent::Checkpoint {
            turn: ctx.turn,
            partial: Box::new(partial_turn(&ctx, &started_at, &response, &stats)),
        },
    )
    .await;
    let mut stream = ctx.adapter.stream(request, cancel.clone());
    let mut error: Option<ProtocolError> = None;
    let mut finished = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(ev) => {
                match &ev {
                    StreamEvent::Text(t) => {
                        stats.on_output(t);
                        response.text.push_str(t);
                    }
                    StreamEvent::Reasoning(r) => {
                        stats.on_output(r);
                        response.reasoning.push_str(r);
                    }
                    StreamEvent::ToolCallStart { .. } => stats.on_output(""),
                    StreamEvent::ToolCallDelta { arguments, .. } => stats.on_output(arguments),
                    StreamEvent::ToolCall(tc) => response.tool_calls.push(tc.clone()),
                    StreamEvent::Usage(u) => stats.on_usage(*u),
                    StreamEvent::Finished(reason) => {
                        finished = true;
                        stats.on_finish(reason);
                    }
                    StreamEvent::Retrying { .. } => stats.on_retry(),
                    StreamEvent::Notice(_) => {}
                }
                emit(
                    sink,
                    OrchestratorEvent::Stream {
                        turn: ctx.turn,
                        event: ev,
                    },
                )
                .await;
                if last_checkpoint.elapsed() >= CHECKPOINT_EVERY {
                    last_checkpoint = tokio::time::Instant::now();
                    emit(
                        sink,
                        OrchestratorEvent::Checkpoint {
                            turn: ctx.turn,
                            partial: Box::new(partial_turn(&ctx, &started_at, &response, &stats)),
                        },
                    )
                    .await;
                }
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
        lane: matches!(ctx.mode, TurnMode::Arena | TurnMode::Compare).then_some(ctx.turn.lane),
        mode: ctx.mode,
        status,
        request: TurnRequest {
            messages: ctx.messages,
            params: ctx.params,
        },
        response,
        stats: request_stats,
        tool_runs: Vec::new(),
        ruling: None,
        verdict: None,
        pick: None,
    };
    match (status, error) {
        (TurnStatus::Completed, _) => TurnOutcome::Completed(turn),
        (TurnStatus::Cancelled, _) => TurnOutcome::Cancelled(turn),
        (TurnStatus::Failed, Some(error)) => TurnOutcome::Failed { turn, error },
        (TurnStatus::Failed, None) => TurnOutcome::Completed(turn),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::conversation::{Message, Params, ToolCall, TurnMode};
    use crate::orchestration::TurnRef;
    use crate::protocols::ProtocolError;
    use crate::stats::Usage;
    use crate::testkit::{Scripted, ScriptedAdapter};

    fn ctx(adapter: std::sync::Arc<ScriptedAdapter>) -> TurnContext {
        TurnContext {
            turn: TurnRef { turn_id: 3, lane: 0 },
            endpoint: "ep".into(),
            model: "m".into(),
            participant: None,
            mode: TurnMode::Chat,
            adapter,
            messages: vec![Message::system("s"), Message::user("q")],
            params: Params::default(),
            tools: vec![],
        }
    }

    async fn run(
        adapter: std::sync::Arc<ScriptedAdapter>,
        cancel: CancellationToken,
    ) -> (TurnOutcome, Vec<OrchestratorEvent>) {
        let (tx, mut rx) = crate::orchestration::event_channel();
        let collect = async {
            let mut evs = Vec::new();
            while let Some(e) = rx.recv().await {
                evs.push(e);
            }
            evs
        };
        let produce = async move { run_turn(ctx(adapter), &tx, cancel).await };
        tokio::join!(produce, collect)
    }

    #[tokio::test(start_paused = true)]
    async fn completed_turn_records_everything_and_events_bracket_the_stream() {
        let call = ToolCall {
            id: "c".into(),
            name: "t".into(),
            arguments: "{}".into(),
        };
        let a = ScriptedAdapter::new(vec![vec![
            Scripted::Event(StreamEvent::Retrying {
                attempt: 1,
                delay: Duration::from_millis(10),
                reason: "HTTP 500".into(),
            }),
            Scripted::Pause(Duration::from_millis(100)),
            Scripted::Event(StreamEvent::Reasoning("think".into())),
            Scripted::Event(StreamEvent::Text("Hello ".into())),
            Scripted::Pause(Duration::from_millis(100)),
            Scripted::Event(StreamEvent::Text("world".into())),
            Scripted::Event(StreamEvent::ToolCall(call.clone())),
            Scripted::Event(StreamEvent::Finished("stop".into())),
            Scripted::Event(StreamEvent::Usage(Usage {
                input_tokens: 7,
                output_tokens: 3,
            })),
        ]]);
        let (out, evs) = run(a.clone(), CancellationToken::new()).await;
        let TurnOutcome::Completed(t) = out else {
            panic!("{out:?}")
        };
        assert_eq!(t.turn_id, 3);
        assert_eq!(t.status, TurnStatus::Completed);
        assert_eq!(t.response.text, "Hello world");
        assert_eq!(t.response.reasoning, "think");
        assert_eq!(t.response.tool_calls, vec![call]);
        assert_eq!(t.response.finish_reason.as_deref(), Some("stop"));
        assert_eq!(t.stats.ttft_ms, Some(100));
        assert_eq!(t.stats.duration_ms, 200);
        assert_eq!(
            (t.stats.input_tokens, t.stats.output_tokens, t.stats.retries),
            (7, 3, 1)
        );
        assert_eq!(t.request.messages.len(), 2);
        assert!(matches!(evs.first(), Some(OrchestratorEvent::TurnStarted { .. })));
        // The turn is on record before anything arrives (crash safety).
        match &evs[1] {
            OrchestratorEvent::Checkpoint { partial, .. } => {
                assert_eq!(partial.request.messages, vec![Message::system("s"), Message::user("q")]);
                assert_eq!(partial.response.error.as_deref(), Some(INTERRUPTED));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(evs.last(), Some(OrchestratorEvent::TurnFinished { .. })));
        assert_eq!(evs.len(), 3 + 7);
        assert_eq!(a.requests()[0].messages[1].content, "q");
    }

    #[tokio::test(start_paused = true)]
    async fn failure_after_output_keeps_the_partial_answer() {
        let a = ScriptedAdapter::new(vec![vec![
            Scripted::Event(StreamEvent::Text("half an ans".into())),
            Scripted::Error(ProtocolError::Network { detail: "reset".into() }),
        ]]);
        let (out, _) = run(a, CancellationToken::new()).await;
        let TurnOutcome::Failed { turn, error } = out else {
            panic!("{out:?}")
        };
        assert_eq!(turn.status, TurnStatus::Failed);
        assert_eq!(turn.response.text, "half an ans");
        assert_eq!(error, ProtocolError::Network { detail: "reset".into() });
        assert!(turn.response.error.as_deref().unwrap().contains("reset"));
    }

    #[tokio::test(start_paused = true)]
    async fn cancel_mid_stream_is_an_outcome_with_the_partial_answer() {
        let a = ScriptedAdapter::new(vec![vec![
            Scripted::Event(StreamEvent::Text("partial".into())),
            Scripted::Pause(Duration::from_secs(60)),
            Scripted::Event(StreamEvent::Text(" never".into())),
        ]]);
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            c.cancel();
        });
        let (out, _) = run(a, cancel).await;
        let TurnOutcome::Cancelled(t) = out else {
            panic!("{out:?}")
        };
        assert_eq!(t.response.text, "partial");
        assert_eq!(t.status, TurnStatus::Cancelled);
        assert_eq!(t.response.finish_reason.as_deref(), Some("cancelled"));
        assert_eq!(t.response.error, None);
        assert_eq!(t.stats.duration_ms, 1000);
    }
}
