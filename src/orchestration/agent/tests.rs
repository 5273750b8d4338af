//! The agent loop against a scripted adapter and fake tools: results back to
//! the model, errors the model can fix, max_steps, rejection with a reason,
//! a correction, concurrency, text-form tool calls, cancellation.

use std::sync::Mutex as StdMutex;
use std::time::Duration;

use super::*;
use crate::conversation::{Params, Role};
use crate::protocols::{ProtocolError, StreamEvent, ToolSpec};
use crate::testkit::{Scripted, ScriptedAdapter};
use crate::tools::{ToolFuture, ToolSource};

/// A tool that records its arguments and answers from a closure.
struct Recorder {
    spec: ToolSpec,
    calls: Arc<StdMutex<Vec<serde_json::Value>>>,
    delay: Duration,
}

impl Tool for Recorder {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn source(&self) -> ToolSource {
        ToolSource::Builtin
    }
    fn call(&self, args: serde_json::Value, _ctx: ToolContext) -> ToolFuture {
        self.calls.lock().unwrap().push(args.clone());
        let delay = self.delay;
        let name = self.spec.name.clone();
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            match args.get("city").and_then(|c| c.as_str()) {
                Some("Atlantis") => Err(ToolError::failed(&name, "no such city")),
                Some(c) => Ok(format!("21C in {c}")),
                None => Err(ToolError::invalid(&name, "city", "missing")),
            }
        })
    }
}

fn weather(calls: &Arc<StdMutex<Vec<serde_json::Value>>>, name: &str, delay: Duration) -> Arc<dyn Tool> {
    Arc::new(Recorder {
        spec: ToolSpec {
            name: name.into(),
            description: "Weather for a city".into(),
            parameters: serde_json::json!({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}),
        },
        calls: calls.clone(),
        delay,
    })
}

fn call(id: &str, name: &str, args: &str) -> Scripted {
    Scripted::Event(StreamEvent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }))
}

fn finish(reason: &str) -> Scripted {
    Scripted::Event(StreamEvent::Finished(reason.into()))
}

/// Answers approval requests from a script and records them.
struct ScriptedApprover {
    decisions: StdMutex<Vec<Decision>>,
    asked: StdMutex<Vec<ApprovalRequest>>,
}

impl Approver for ScriptedApprover {
    fn decide(&self, _turn: TurnRef, request: ApprovalRequest) -> BoxFuture<'static, Decision> {
        self.asked.lock().unwrap().push(request);
        let d = self.decisions.lock().unwrap().remove(0);
        Box::pin(async move { d })
    }
}

struct Harness {
    adapter: Arc<ScriptedAdapter>,
    registry: ToolRegistry,
    approver: Arc<dyn Approver>,
    max_steps: u32,
}

impl Harness {
    fn new(scripts: Vec<Vec<Scripted>>) -> Self {
        Harness {
            adapter: ScriptedAdapter::new(scripts),
            registry: ToolRegistry::new(),
            approver: Arc::new(AutoApprove),
            max_steps: 6,
        }
    }

    async fn run(&self, cancel: CancellationToken) -> (AgentOutcome, Vec<OrchestratorEvent>) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = TurnContext {
            turn: TurnRef { turn_id: 10, lane: 0 },
            endpoint: "ep".into(),
            model: "m".into(),
            participant: None,
            mode: TurnMode::Agent,
            adapter: self.adapter.clone(),
            messages: vec![Message::system("s"), Message::user("weather in Paris?")],
            params: Params::default(),
            tools: vec![],
        };
        let setup = AgentSetup {
            registry: Arc::new(clone_registry(&self.registry)),
            workspace: Arc::new(Workspace::new(dir.path()).unwrap()),
            approver: self.approver.clone(),
            approvals: Arc::new(Mutex::new(SessionApprovals::default())),
            max_steps: self.max_steps,
            tool_timeout: Duration::from_secs(30),
            output_limit: 10_000,
            only_server: None,
        };
        let (tx, mut rx) = crate::orchestration::event_channel();
        let collect = async {
            let mut v = Vec::new();
            while let Some(e) = rx.recv().await {
                v.push(e);
            }
            v
        };
        let produce = async move { run_agent(ctx, setup, &tx, cancel).await };
        tokio::join!(produce, collect)
    }
}

fn clone_registry(r: &ToolRegistry) -> ToolRegistry {
    // Rebuild from the listed tools (the registry is not Clone on purpose).
    let mut out = ToolRegistry::new();
    for info in r.list() {
        if let Ok((_, tool, policy)) = r.resolve(&info.name) {
            out.insert(tool, policy);
        }
    }
    out
}

fn tool_messages(o: &AgentOutcome) -> Vec<(String, String)> {
    o.new_messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.clone().unwrap_or_default(), m.content.clone()))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn tool_results_go_back_and_the_loop_ends_with_the_answer() {
    let calls = Arc::new(StdMutex::new(Vec::new()));
    let mut h = Harness::new(vec![
        vec![call("c1", "weather", r#"{"city":"Paris"}"#), finish("tool_calls")],
        ScriptedAdapter::text_script(&["It is 21C in Paris."]),
    ]);
    h.registry
        .insert(weather(&calls, "weather", Duration::ZERO), Policy::Auto);
    let (out, events) = h.run(CancellationToken::new()).await;
    assert_eq!(out.end, AgentEnd::Answered);
    assert_eq!(out.steps.len(), 2);
    assert_eq!((out.steps[0].turn_id, out.steps[1].turn_id), (10, 11));
    assert_eq!(out.steps[0].tool_runs.len(), 1);
    let run = &out.steps[0].tool_runs[0];
    assert_eq!(
        (run.tool.as_str(), run.result.as_str(), run.approval, run.is_error),
        ("weather", "21C in Paris", Approval::Auto, false)
    );
    assert_eq!(
        tool_messages(&out),
        vec![("c1".to_string(), "21C in Paris".to_string())]
    );
    // The second request carried the call and its result, and offered the tool.
    let reqs = h.adapter.requests();
    assert_eq!(reqs[1].messages.last().unwrap().role, Role::Tool);
    assert_eq!(reqs[1].messages[2].tool_calls[0].id, "c1");
    assert_eq!(reqs[0].tools[0].name, "weather");
    assert!(matches!(
        events.last(),
        Some(OrchestratorEvent::AgentFinished {
            end: AgentEnd::Answered,
            ..
        })
    ));
    assert_eq!(out.new_messages.last().unwrap().content, "It is 21C in Paris.");
}

#[tokio::test(start_paused = true)]
async fn errors_go_back_to_the_model_so_it_can_correct_itself() {
    let calls = Arc::new(StdMutex::new(Vec::new()));
    let mut h = Harness::new(vec![
        vec![
            call("a", "weathr", r#"{"city":"Paris"}"#),
            call("b", "weather", r#"{"town":"Paris"}"#),
            call("c", "weather", "{not json"),
            call("d", "weather", r#"{"city":"Atlantis"}"#),
            finish("tool_calls"),
        ],
        vec![call("e", "weather", r#"{"city":"Paris"}"#), finish("tool_calls")],
        ScriptedAdapter::text_script(&["done"]),
    ]);
    h.registry
        .insert(weather(&calls, "weather", Duration::ZERO), Policy::Auto);
    let (out, _) = h.run(CancellationToken::new()).await;
    assert_eq!(out.end, AgentEnd::Answered);
    let results = tool_messages(&out);
    assert!(
        results[0]
            .1
            .contains("there is no tool named `weathr` — did you mean `weather`?"),
        "{results:?}"
    );
    assert!(results[1].1.contains("city"), "{results:?}");
    assert!(results[2].1.contains("not valid JSON"), "{results:?}");
    assert!(results[3].1.contains("no such city"), "{results:?}");
    assert_eq!(results[4].1, "21C in Paris");
    assert!(out.steps[0].tool_runs.iter().take(4).all(|r| r.is_error));
}

#[tokio::test(start_paused = true)]
async fn max_steps_stops_the_loop_and_answers_every_call() {
    let calls = Arc::new(StdMutex::new(Vec::new()));
    let mut h = Harness::new(vec![vec![
        call("x", "weather", r#"{"city":"Paris"}"#),
        finish("tool_calls"),
    ]]);
    h.registry
        .insert(weather(&calls, "weather", Duration::ZERO), Policy::Auto);
    h.max_steps = 3;
    let (out, _) = h.run(CancellationToken::new()).await;
    assert_eq!(out.end, AgentEnd::MaxSteps(3));
    assert_eq!(out.steps.len(), 3);
    assert_eq!(calls.lock().unwrap().len(), 2, "the last step's call is not run");
    let last = out.new_messages.last().unwrap();
    assert_eq!(last.role, Role::Tool);
    assert!(last.content.contains("max_steps"), "{}", last.content);
}

#[tokio::test(start_paused = true)]
async fn a_rejection_reason_reaches_the_model_and_a_correction_is_logged() {
    let calls = Arc::new(StdMutex::new(Vec::new()));
    let approver = Arc::new(ScriptedApprover {
        decisions: StdMutex::new(vec![
            Decision::Reject(Some("use Lyon instead".into())),
            Decision::Edit(serde_json::json!({"city": "Lyon"})),
        ]),
        asked: StdMutex::new(vec![]),
    });
    let mut h = Harness::new(vec![
        vec![call("r1", "weather", r#"{"city":"Paris"}"#), finish("tool_calls")],
        vec![call("r2", "weather", r#"{"city":"Pariss"}"#), finish("tool_calls")],
        ScriptedAdapter::text_script(&["Lyon it is."]),
    ]);
    h.registry
        .insert(weather(&calls, "weather", Duration::ZERO), Policy::Ask);
    h.approver = approver.clone();
    let (out, events) = h.run(CancellationToken::new()).await;
    let results = tool_messages(&out);
    assert_eq!(results[0].1, "error: the user denied `weather`: use Lyon instead");
    assert_eq!(results[1].1, "21C in Lyon");
    let r1 = &out.steps[0].tool_runs[0];
    assert_eq!(
        (r1.approval, r1.reason.as_deref()),
        (Approval::Rejected, Some("use Lyon instead"))
    );
    let r2 = &out.steps[1].tool_runs[0];
    assert_eq!(r2.approval, Approval::Edited);
    assert_eq!(r2.arguments, serde_json::json!({"city": "Lyon"}));
    assert_eq!(r2.original_arguments, Some(serde_json::json!({"city": "Pariss"})));
    assert_eq!(
        *calls.lock().unwrap(),
        vec![serde_json::json!({"city": "Lyon"})],
        "only the corrected call ran"
    );
    let asked = approver.asked.lock().unwrap();
    assert_eq!(asked[0].arguments, serde_json::json!({"city": "Paris"}));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, OrchestratorEvent::ApprovalNeeded { .. }))
            .count(),
        2
    );
}

#[tokio::test(start_paused = true)]
async fn approval_for_the_session_is_asked_once_and_deny_and_headless_refuse() {
    let calls = Arc::new(StdMutex::new(Vec::new()));
    let approver = Arc::new(ScriptedApprover {
        decisions: StdMutex::new(vec![Decision::ApproveForSession]),
        asked: StdMutex::new(vec![]),
    });
    let mut h = Harness::new(vec![
        vec![call("1", "weather", r#"{"city":"A"}"#), finish("tool_calls")],
        vec![
            call("2", "weather", r#"{"city":"B"}"#),
            call("3", "blocked", r#"{"city":"C"}"#),
            finish("tool_calls"),
        ],
        ScriptedAdapter::text_script(&["ok"]),
    ]);
    h.registry
        .insert(weather(&calls, "weather", Duration::ZERO), Policy::Ask);
    h.registry
        .insert(weather(&calls, "blocked", Duration::ZERO), Policy::Deny);
    h.approver = approver.clone();
    let (out, _) = h.run(CancellationToken::new()).await;
    assert_eq!(approver.asked.lock().unwrap().len(), 1);
    assert_eq!(out.steps[1].tool_runs[0].approval, Approval::ApprovedForSession);
    assert_eq!(out.steps[1].tool_runs[1].approval, Approval::Denied);
    // A denied tool is not even offered to the model.
    assert!(h.adapter.requests()[0].tools.iter().all(|t| t.name != "blocked"));

    let mut h = Harness::new(vec![
        vec![call("1", "weather", r#"{"city":"A"}"#), finish("tool_calls")],
        ScriptedAdapter::text_script(&["ok"]),
    ]);
    h.registry
        .insert(weather(&calls, "weather", Duration::ZERO), Policy::Ask);
    h.approver = Arc::new(NoApprover);
    let (out, _) = h.run(CancellationToken::new()).await;
    let r = &out.steps[0].tool_runs[0];
    assert_eq!(r.approval, Approval::Denied);
    assert!(r.result.contains("--yes"), "{}", r.result);
}

#[tokio::test(start_paused = true)]
async fn independent_calls_run_concurrently() {
    let calls = Arc::new(StdMutex::new(Vec::new()));
    let mut h = Harness::new(vec![
        vec![
            call("1", "slow", r#"{"city":"A"}"#),
            call("2", "slow", r#"{"city":"B"}"#),
            call("3", "slow", r#"{"city":"C"}"#),
            finish("tool_calls"),
        ],
        ScriptedAdapter::text_script(&["ok"]),
    ]);
    h.registry
        .insert(weather(&calls, "slow", Duration::from_secs(10)), Policy::Auto);
    let start = tokio::time::Instant::now();
    let (out, _) = h.run(CancellationToken::new()).await;
    // Paused clock: three 10 s calls in sequence would take 30 s.
    assert_eq!(start.elapsed(), Duration::from_secs(10));
    let results: Vec<String> = tool_messages(&out).into_iter().map(|r| r.1).collect();
    assert_eq!(
        results,
        ["21C in A", "21C in B", "21C in C"],
        "results keep the call order"
    );
}

#[tokio::test(start_paused = true)]
async fn text_form_tool_calls_from_local_models_are_understood() {
    let calls = Arc::new(StdMutex::new(Vec::new()));
    let mut h = Harness::new(vec![
        ScriptedAdapter::text_script(&[
            "Let me check.\n<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
        ]),
        ScriptedAdapter::text_script(&["Cold in Oslo."]),
    ]);
    h.registry
        .insert(weather(&calls, "weather", Duration::ZERO), Policy::Auto);
    let (out, _) = h.run(CancellationToken::new()).await;
    assert_eq!(out.end, AgentEnd::Answered);
    assert_eq!(*calls.lock().unwrap(), vec![serde_json::json!({"city": "Oslo"})]);
    assert_eq!(out.steps[0].response.text, "Let me check.");
    assert_eq!(out.new_messages[0].tool_calls[0].name, "weather");
    assert_eq!(text_tool_calls("no calls here"), None);
    assert_eq!(text_tool_calls("<tool_call>{broken").map(|c| c.1.len()), None);
}

#[tokio::test(start_paused = true)]
async fn cancelling_during_a_tool_ends_the_run_with_a_valid_history() {
    let calls = Arc::new(StdMutex::new(Vec::new()));
    let mut h = Harness::new(vec![
        vec![call("1", "slow", r#"{"city":"A"}"#), finish("tool_calls")],
        ScriptedAdapter::text_script(&["never"]),
    ]);
    h.registry
        .insert(weather(&calls, "slow", Duration::from_secs(60)), Policy::Auto);
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        c.cancel();
    });
    let (out, _) = h.run(cancel).await;
    assert_eq!(out.end, AgentEnd::Cancelled);
    assert_eq!(h.adapter.requests().len(), 1, "no request after the cancel");
    let results = tool_messages(&out);
    assert_eq!(results.len(), 1, "the cut call still has a result");
    assert!(results[0].1.contains("cancelled"), "{results:?}");
}

#[tokio::test(start_paused = true)]
async fn a_failed_request_ends_the_run() {
    let h = Harness::new(vec![vec![Scripted::Error(ProtocolError::Http {
        status: 500,
        url: "u".into(),
        detail: "x".into(),
    })]]);
    let (out, _) = h.run(CancellationToken::new()).await;
    assert!(
        matches!(out.end, AgentEnd::Failed(ref m) if m.contains("HTTP 500")),
        "{:?}",
        out.end
    );
}
