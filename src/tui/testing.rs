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
