//! Test helpers for the TUI: an app over a two-endpoint config, scripted
//! turns played through the real chat orchestrator, and TestBackend frames.

use std::path::Path;
use std::sync::Arc;

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::app::{App, AppInit, Effect};
use super::view;
use crate::config::{ConfigSource, Secrets, parse};
use crate::conversation::Params;
use crate::orchestration::{OrchestratorEvent, chat, event_channel};
use crate::testkit::{Scripted, ScriptedAdapter};

pub const CONFIG: &str = r#"
[defaults]
endpoint = "local"
[endpoints.local]
base_url = "http://127.0.0.1:9/v1"
model = "smollm2"
[endpoints.other]
base_url = "http://127.0.0.1:9/v1"
model = "other-model"

[arenas.debate]
max_turns = 4
[[arenas.debate.participants]]
name = "Pro"
endpoint = "local"
system = "Argue for tabs."
[[arenas.debate.participants]]
name = "Con"
endpoint = "other"
system = "Argue for spaces."
[arenas.debate.judge]
endpoint = "local"
criteria = ["logic", "style"]

[arenas.open]
opening = "Is water wet?"
max_turns = 2
[[arenas.open.participants]]
name = "Ann"
endpoint = "local"
[[arenas.open.participants]]
name = "Ben"
endpoint = "other"
"#;

pub fn test_app() -> App {
    let config = parse(CONFIG, ConfigSource::File("/t/polyglot.toml".into()), Path::new("/t")).expect("test config");
    let mut app = App::new(AppInit {
        config: Arc::new(config),
        secrets: Secrets::default(),
        endpoint: "local".into(),
        model: "smollm2".into(),
        system: None,
        params: Params::default(),
        history: vec![],
        highlighter: None,
    });
    app.smooth = false;
    app
}

/// Render the app into a `w`×`h` TestBackend.
pub fn frame(app: &mut App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    t.draw(|f| view::draw(app, f)).expect("draw");
    t
}

/// Submit `prompt` with `script` as the model's answer and play the turn
/// through the real chat orchestrator. Stops feeding the app after `limit`
/// orchestrator events (to look mid-stream), returning the rest undelivered.
pub async fn play(app: &mut App, prompt: &str, script: Vec<Scripted>, limit: Option<usize>) -> Vec<OrchestratorEvent> {
    let ep = app.endpoint.clone();
    app.set_adapter(&ep, ScriptedAdapter::new(vec![script]));
    app.submit(prompt.to_string());
    let mut rest = Vec::new();
    for e in app.take_effects() {
        if let Effect::StartTurn(ctx, cancel) = e {
            let (tx, mut rx) = event_channel();
            let task = tokio::spawn(async move { chat::run_turn(*ctx, &tx, cancel).await });
            let mut n = 0;
            while limit.is_none_or(|l| n < l) {
                let Some(ev) = rx.recv().await else { break };
                app.on_orchestrator(ev);
                n += 1;
            }
            while let Ok(ev) = rx.try_recv() {
                rest.push(ev);
            }
            if limit.is_none() {
                let _ = task.await;
            }
        }
    }
    rest
}

/// A tool for TUI tests: `weather {city}` answers "21C in CITY" and records calls.
pub struct FakeWeather {
    spec: crate::protocols::ToolSpec,
    pub calls: Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

impl FakeWeather {
    pub fn new() -> Arc<Self> {
        Arc::new(FakeWeather {
            spec: crate::protocols::ToolSpec {
                name: "weather".into(),
                description: "Current weather for a city".into(),
                parameters: serde_json::json!({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}),
            },
            calls: Arc::new(std::sync::Mutex::new(Vec::new())),
        })
    }
}

impl crate::tools::Tool for FakeWeather {
    fn spec(&self) -> &crate::protocols::ToolSpec {
        &self.spec
    }
    fn source(&self) -> crate::tools::ToolSource {
        crate::tools::ToolSource::Builtin
    }
    fn call(&self, args: serde_json::Value, ctx: crate::tools::ToolContext) -> crate::tools::ToolFuture {
        self.calls.lock().expect("calls").push(args.clone());
        Box::pin(async move {
            ctx.report("looking it up…");
            let city = args.get("city").and_then(|c| c.as_str()).unwrap_or("?").to_string();
            Ok(format!("21C in {city}"))
        })
    }
}

/// Give the app a tool environment with `tools` in a temporary workspace.
pub fn with_tools(app: &mut App, dir: &Path, tools: Vec<(Arc<dyn crate::tools::Tool>, crate::tools::Policy)>) {
    app.set_tool_env(super::app::ToolEnv {
        workspace: Arc::new(crate::tools::Workspace::new(dir).expect("workspace")),
        base: tools,
        overrides: Default::default(),
        max_steps: 6,
        tool_timeout: std::time::Duration::from_secs(30),
        output_limit: 10_000,
    });
}

/// Play an agent run: `scripts` are the model's answers per request; each
/// time the approval overlay opens, the next list of `keys` is typed into it
/// (and a frame is drawn into `shots` first, for snapshots).
pub async fn play_agent(
    app: &mut App,
    prompt: &str,
    scripts: Vec<Vec<Scripted>>,
    mut keys: Vec<Vec<ratatui::crossterm::event::Event>>,
    shots: &mut Vec<String>,
) {
    let ep = app.endpoint.clone();
    app.set_adapter(&ep, ScriptedAdapter::new(scripts));
    app.submit(prompt.to_string());
    let approvals = super::run::PendingApprovals::default();
    let mut task = None;
    let (tx, mut rx) = event_channel();
    for e in app.take_effects() {
        if let Effect::StartAgent(ctx, cancel, plan) = e {
            let setup = crate::orchestration::agent::AgentSetup {
                registry: plan.registry,
                workspace: plan.workspace,
                approver: Arc::new(approvals.clone()),
                approvals: plan.approvals,
                max_steps: plan.max_steps,
                tool_timeout: plan.tool_timeout,
                output_limit: plan.output_limit,
                only_server: plan.only_server,
            };
            let tx = tx.clone();
            task = Some(tokio::spawn(async move {
                crate::orchestration::agent::run_agent(*ctx, setup, &tx, cancel).await
            }));
        }
    }
    drop(tx);
    while let Some(ev) = rx.recv().await {
        app.on_orchestrator(ev);
        if app.approval.is_some() {
            shots.push(frame(app, 90, 26).backend().to_string());
            let ks = if keys.is_empty() { vec![] } else { keys.remove(0) };
            for k in ks {
                app.on_terminal(k);
            }
        }
        for e in app.take_effects() {
            match e {
                Effect::Approve { id, decision } => approvals.resolve(id, decision),
                Effect::Record(_) | Effect::Checkpoint(_) => {}
                other => panic!("unexpected effect during an agent run: {other:?}"),
            }
        }
    }
    if let Some(t) = task {
        let _ = t.await;
    }
}

/// Carries out the effects that start runs (arena, judge, compare, chat
/// turns) with the real orchestrators, and feeds their events back.
pub struct Driver {
    tx: crate::orchestration::EventSink,
    rx: crate::orchestration::EventSource,
    /// Every turn the app asked to record, in order (rewrites included).
    pub records: Vec<crate::conversation::Turn>,
}

impl Driver {
    pub fn new() -> Self {
        let (tx, rx) = event_channel();
        Driver {
            tx,
            rx,
            records: Vec::new(),
        }
    }

    /// Start what the app asked for.
    pub fn effects(&mut self, app: &mut App) {
        for e in app.take_effects() {
            let tx = self.tx.clone();
            match e {
                Effect::StartArena(setup, control) => {
                    tokio::spawn(async move { crate::orchestration::arena::run_arena(*setup, &tx, control).await });
                }
                Effect::StartJudge(job, cancel) => {
                    tokio::spawn(async move {
                        let j = *job;
                        crate::orchestration::arena::judge_later(
                            j.setup,
                            j.opening,
                            j.names,
                            j.spoken,
                            j.first_turn_id,
                            &tx,
                            cancel,
                        )
                        .await
                    });
                }
                Effect::StartCompare(contexts, cancel) => {
                    tokio::spawn(
                        async move { crate::orchestration::compare::run_compare(contexts, &tx, cancel).await },
                    );
                }
                Effect::StartTurn(ctx, cancel) => {
                    tokio::spawn(async move { chat::run_turn(*ctx, &tx, cancel).await });
                }
                Effect::Record(t) => self.records.push(*t),
                _ => {}
            }
        }
    }

    /// Deliver events until `done(app)` holds (panics after an hour of
    /// paused time without it).
    pub async fn until(&mut self, app: &mut App, done: impl Fn(&App) -> bool) {
        self.effects(app);
        while !done(app) {
            let ev = tokio::time::timeout(std::time::Duration::from_secs(3600), self.rx.recv())
                .await
                .expect("the awaited state never came")
                .expect("event channel open");
            app.on_orchestrator(ev);
            self.effects(app);
        }
    }
}
