//! The agent orchestrator: stream the model; run the tool calls it made —
//! approvals asked one at a time, the approved calls run concurrently — send
//! the results (errors included, so the model can correct itself) back; repeat
//! until the model answers without tool calls, `max_steps` is reached, or the
//! user cancels. Each model request is one recorded turn, carrying the tool
//! runs (arguments, approval, correction, result) it caused.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::chat::stream_turn;
use super::{EventSink, OrchestratorEvent, TurnContext, TurnOutcome, TurnRef, emit};
use crate::conversation::{Approval, Message, ToolCall, ToolRun, Turn, TurnMode};
use crate::tools::approval::SessionApprovals;
use crate::tools::{Decision, Policy, Tool, ToolContext, ToolError, ToolRegistry, Workspace, run_call};

/// A question to the user about one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub id: u64,
    pub call_id: String,
    /// Registry name.
    pub tool: String,
    pub description: String,
    pub arguments: serde_json::Value,
}

/// Who decides on `ask` tools.
pub trait Approver: Send + Sync {
    fn decide(&self, turn: TurnRef, request: ApprovalRequest) -> BoxFuture<'static, Decision>;
}

/// Approves everything (`--yes`).
pub struct AutoApprove;

impl Approver for AutoApprove {
    fn decide(&self, _turn: TurnRef, _request: ApprovalRequest) -> BoxFuture<'static, Decision> {
        Box::pin(async { Decision::Approve })
    }
}

/// Nobody to ask (headless without `--yes`): `ask` tools are not run.
pub struct NoApprover;

impl Approver for NoApprover {
    fn decide(&self, _turn: TurnRef, request: ApprovalRequest) -> BoxFuture<'static, Decision> {
        Box::pin(async move {
            Decision::Deny(format!(
                "`{}` needs the user's approval and nobody can be asked here; the user can allow it with --yes or set its policy to auto",
                request.tool
            ))
        })
    }
}

/// Why an agent run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentEnd {
    /// The model answered without tool calls.
    Answered,
    /// `max_steps` requests were made.
    MaxSteps(u32),
    Cancelled,
    Failed(String),
}

/// Everything the agent needs besides the turn.
#[derive(Clone)]
pub struct AgentSetup {
    pub registry: Arc<ToolRegistry>,
    pub workspace: Arc<Workspace>,
    pub approver: Arc<dyn Approver>,
    pub approvals: Arc<Mutex<SessionApprovals>>,
    pub max_steps: u32,
    /// Longest any tool call may run.
    pub tool_timeout: std::time::Duration,
    pub output_limit: usize,
    /// `@server` in the prompt: offer only that MCP server's tools.
    pub only_server: Option<String>,
}

/// What an agent run produced.
#[derive(Debug, Clone)]
pub struct AgentOutcome {
    pub steps: Vec<Turn>,
    /// Messages to append to the conversation after the user's prompt.
    pub new_messages: Vec<Message>,
    pub end: AgentEnd,
}

/// Tool calls written as text (`<tool_call>{…}</tool_call>`) by local models
/// whose server does not parse them: the text without them, and the calls.
pub fn text_tool_calls(text: &str) -> Option<(String, Vec<ToolCall>)> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut calls = Vec::new();
    let mut clean = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(OPEN) {
        clean.push_str(&rest[..i]);
        let after = &rest[i + OPEN.len()..];
        let (body, next) = match after.find(CLOSE) {
            Some(j) => (&after[..j], &after[j + CLOSE.len()..]),
            None => (after, ""),
        };
        let v: serde_json::Value = serde_json::from_str(body.trim()).ok()?;
        let name = v.get("name").and_then(|n| n.as_str())?.to_string();
        let args = v
            .get("arguments")
            .or_else(|| v.get("parameters"))
            .cloned()
            .unwrap_or(serde_json::json!({}));
        let arguments = match args {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        calls.push(ToolCall {
            id: format!("text_call_{}", calls.len()),
            name,
            arguments,
        });
        rest = next;
    }
    clean.push_str(rest);
    (!calls.is_empty()).then(|| (clean.trim().to_string(), calls))
}

enum Plan {
    /// Not run: this is the result.
    Done(ToolRun),
    Run {
        call_id: String,
        name: String,
        tool: Arc<dyn Tool>,
        args: serde_json::Value,
        original: Option<serde_json::Value>,
        approval: Approval,
    },
}

fn not_run(
    call: &ToolCall,
    name: &str,
    args: serde_json::Value,
    approval: Approval,
    err: &ToolError,
    reason: Option<String>,
) -> ToolRun {
    ToolRun {
        call_id: call.id.clone(),
        tool: name.to_string(),
        arguments: args,
        original_arguments: None,
        approval,
        reason,
        result: err.for_model(),
        is_error: true,
        duration_ms: 0,
    }
}

/// Decide on every call (asking one at a time), then run the approved ones concurrently.
async fn run_tools(
    calls: &[ToolCall],
    setup: &AgentSetup,
    turn: TurnRef,
    sink: &EventSink,
    cancel: &CancellationToken,
    next_request: &mut u64,
) -> Vec<ToolRun> {
    let mut plans = Vec::with_capacity(calls.len());
    for call in calls {
        let args: serde_json::Value = match serde_json::from_str(if call.arguments.trim().is_empty() {
            "{}"
        } else {
            &call.arguments
        }) {
            Ok(v) => v,
            Err(e) => {
                let err = ToolError::invalid(
                    &call.name,
                    "(arguments)",
                    format!("not valid JSON ({e}); send a JSON object"),
                );
                plans.push(Plan::Done(not_run(
                    call,
                    &call.name,
                    serde_json::Value::String(call.arguments.clone()),
                    Approval::Auto,
                    &err,
                    None,
                )));
                continue;
            }
        };
        let (name, tool, policy) = match setup.registry.resolve(&call.name) {
            Ok(r) => r,
            Err(err) => {
                plans.push(Plan::Done(not_run(call, &call.name, args, Approval::Auto, &err, None)));
                continue;
            }
        };
        let session_ok = setup.approvals.lock().map(|a| a.allowed(&name)).unwrap_or(false);
        let plan = match policy {
            Policy::Auto => Plan::Run {
                call_id: call.id.clone(),
                name,
                tool,
                args,
                original: None,
                approval: Approval::Auto,
            },
            Policy::Deny => {
                let err = ToolError::Denied {
                    tool: name.clone(),
                    reason: Some("its policy is deny".into()),
                };
                Plan::Done(not_run(
                    call,
                    &name,
                    args,
                    Approval::Denied,
                    &err,
                    Some("policy deny".into()),
                ))
            }
            Policy::Ask if session_ok => Plan::Run {
                call_id: call.id.clone(),
                name,
                tool,
                args,
                original: None,
                approval: Approval::ApprovedForSession,
            },
            Policy::Ask => {
                *next_request += 1;
                let request = ApprovalRequest {
                    id: *next_request,
                    call_id: call.id.clone(),
                    tool: name.clone(),
                    description: tool.spec().description.clone(),
                    arguments: args.clone(),
                };
                emit(
                    sink,
                    OrchestratorEvent::ApprovalNeeded {
                        turn,
                        request: request.clone(),
                    },
                )
                .await;
                let decision = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => Decision::Reject(Some("the user cancelled the turn".into())),
                    d = setup.approver.decide(turn, request) => d,
                };
                match decision {
                    Decision::Approve => Plan::Run {
                        call_id: call.id.clone(),
                        name,
                        tool,
                        args,
                        original: None,
                        approval: Approval::Approved,
                    },
                    Decision::ApproveForSession => {
                        if let Ok(mut a) = setup.approvals.lock() {
                            a.allow(&name);
                        }
                        Plan::Run {
                            call_id: call.id.clone(),
                            name,
                            tool,
                            args,
                            original: None,
                            approval: Approval::ApprovedForSession,
                        }
                    }
                    Decision::Edit(new_args) => Plan::Run {
                        call_id: call.id.clone(),
                        name,
                        tool,
                        args: new_args,
                        original: Some(args),
                        approval: Approval::Edited,
                    },
                    Decision::Reject(reason) => {
                        let err = ToolError::Denied {
                            tool: name.clone(),
                            reason: reason.clone(),
                        };
                        Plan::Done(not_run(call, &name, args, Approval::Rejected, &err, reason))
                    }
                    Decision::Deny(why) => {
                        let err = ToolError::Denied {
                            tool: name.clone(),
                            reason: Some(why.clone()),
                        };
                        Plan::Done(not_run(call, &name, args, Approval::Denied, &err, Some(why)))
                    }
                }
            }
        };
        plans.push(plan);
    }
    let runs = plans.into_iter().map(|plan| async move {
        match plan {
            Plan::Done(run) => {
                emit(
                    sink,
                    OrchestratorEvent::ToolFinished {
                        turn,
                        run: Box::new(run.clone()),
                    },
                )
                .await;
                run
            }
            Plan::Run {
                call_id,
                name,
                tool,
                args,
                original,
                approval,
            } => {
                emit(
                    sink,
                    OrchestratorEvent::ToolStarted {
                        turn,
                        call_id: call_id.clone(),
                        tool: name.clone(),
                        arguments: args.clone(),
                        approval,
                    },
                )
                .await;
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
                let mut ctx = ToolContext::new(setup.workspace.clone());
                ctx.cancel = cancel.child_token();
                ctx.progress = Some(tx);
                ctx.timeout = setup.tool_timeout;
                ctx.output_limit = setup.output_limit;
                let started = Instant::now();
                let forward = {
                    let sink = sink.clone();
                    let call_id = call_id.clone();
                    async move {
                        while let Some(chunk) = rx.recv().await {
                            emit(
                                &sink,
                                OrchestratorEvent::ToolOutput {
                                    turn,
                                    call_id: call_id.clone(),
                                    chunk,
                                },
                            )
                            .await;
                        }
                    }
                };
                let call = run_call(&tool, &name, args.clone(), ctx);
                let (result, ()) = tokio::join!(call, forward);
                let (text, is_error) = match result {
                    Ok(out) => (out, false),
                    Err(e) => (e.for_model(), true),
                };
                let run = ToolRun {
                    call_id,
                    tool: name,
                    arguments: args,
                    original_arguments: original,
                    approval,
                    reason: None,
                    result: text,
                    is_error,
                    duration_ms: started.elapsed().as_millis() as u64,
                };
                emit(
                    sink,
                    OrchestratorEvent::ToolFinished {
                        turn,
                        run: Box::new(run.clone()),
                    },
                )
                .await;
                run
            }
        }
    });
    futures::future::join_all(runs).await
}

/// Run an agent turn from `ctx` (its messages end with the user's prompt).
pub async fn run_agent(
    ctx: TurnContext,
    setup: AgentSetup,
    sink: &EventSink,
    cancel: CancellationToken,
) -> AgentOutcome {
    let tools = setup.registry.specs(setup.only_server.as_deref());
    let mut messages = ctx.messages.clone();
    let base = messages.len();
    let mut steps: Vec<Turn> = Vec::new();
    let mut next_request = u64::from(ctx.turn.turn_id) << 16;
    let mut last = ctx.turn;
    let max = setup.max_steps.max(1);
    let end = 'run: {
        for step in 0..max {
            let turn = TurnRef {
                turn_id: ctx.turn.turn_id + step,
                lane: ctx.turn.lane,
            };
            last = turn;
            let step_ctx = TurnContext {
                turn,
                messages: messages.clone(),
                tools: tools.clone(),
                mode: TurnMode::Agent,
                ..ctx.clone()
            };
            let mut outcome = stream_turn(step_ctx, sink, cancel.clone()).await;
            if let TurnOutcome::Completed(t) = &mut outcome
                && t.response.tool_calls.is_empty()
                && !tools.is_empty()
                && let Some((clean, calls)) = text_tool_calls(&t.response.text)
            {
                t.response.text = clean;
                t.response.tool_calls = calls;
                t.response.finish_reason = Some("tool_calls".into());
            }
            let finish = |outcome: TurnOutcome, steps: &mut Vec<Turn>| {
                steps.push(outcome.turn().clone());
                OrchestratorEvent::TurnFinished {
                    turn,
                    outcome: Box::new(outcome),
                }
            };
            match outcome {
                TurnOutcome::Completed(mut t) => {
                    messages.push(t.assistant_message());
                    if t.response.tool_calls.is_empty() {
                        emit(sink, finish(TurnOutcome::Completed(t), &mut steps)).await;
                        break 'run AgentEnd::Answered;
                    }
                    let last_step = step + 1 == max;
                    let runs = if last_step {
                        // Keep the history valid: every call gets a result.
                        let mut runs = Vec::new();
                        for c in &t.response.tool_calls {
                            let err = ToolError::failed(
                                &c.name,
                                format!("not run: the agent reached max_steps ({max}); the user can ask to continue"),
                            );
                            let run = not_run(
                                c,
                                &c.name,
                                serde_json::from_str(&c.arguments).unwrap_or_default(),
                                Approval::Auto,
                                &err,
                                Some("max_steps".into()),
                            );
                            emit(
                                sink,
                                OrchestratorEvent::ToolFinished {
                                    turn,
                                    run: Box::new(run.clone()),
                                },
                            )
                            .await;
                            runs.push(run);
                        }
                        runs
                    } else {
                        run_tools(&t.response.tool_calls, &setup, turn, sink, &cancel, &mut next_request).await
                    };
                    for r in &runs {
                        messages.push(Message::tool_result(r.call_id.clone(), r.result.clone()));
                    }
                    t.tool_runs = runs;
                    let cancelled = cancel.is_cancelled();
                    let outcome = if cancelled {
                        TurnOutcome::Cancelled(t)
                    } else {
                        TurnOutcome::Completed(t)
                    };
                    emit(sink, finish(outcome, &mut steps)).await;
                    if cancelled {
                        break 'run AgentEnd::Cancelled;
                    }
                    if last_step {
                        break 'run AgentEnd::MaxSteps(max);
                    }
                }
                TurnOutcome::Cancelled(t) => {
                    if !t.response.text.is_empty() {
                        messages.push(t.assistant_message());
                    }
                    emit(sink, finish(TurnOutcome::Cancelled(t), &mut steps)).await;
                    break 'run AgentEnd::Cancelled;
                }
                TurnOutcome::Failed { turn: t, error } => {
                    if !t.response.text.is_empty() {
                        messages.push(t.assistant_message());
                    }
                    let msg = error.to_string();
                    emit(sink, finish(TurnOutcome::Failed { turn: t, error }, &mut steps)).await;
                    break 'run AgentEnd::Failed(msg);
                }
            }
        }
        AgentEnd::MaxSteps(max)
    };
    emit(
        sink,
        OrchestratorEvent::AgentFinished {
            turn: last,
            end: end.clone(),
        },
    )
    .await;
    AgentOutcome {
        steps,
        new_messages: messages[base..].to_vec(),
        end,
    }
}

#[cfg(test)]
mod tests;
