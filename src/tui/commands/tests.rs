//! The registry, dispatch errors, each command's effect, and completion.

use super::output::last_code_block;
use super::*;
use crate::tui::app::Effect;
use crate::tui::mode::{Overlay, PickerKind};
use crate::tui::testing::test_app;

fn flash(app: &App) -> String {
    app.flash.as_ref().map(|(m, _, _)| m.clone()).unwrap_or_default()
}

fn run(app: &mut App, line: &str) {
    let r = app.commands.clone();
    r.dispatch(app, line);
}

#[test]
fn every_command_is_registered_once_with_help_text() {
    let r = Registry::builtin();
    let names: Vec<&str> = r.all().map(SlashCommand::name).collect();
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "duplicate names: {names:?}");
    for want in [
        "help",
        "quit",
        "clear",
        "endpoint",
        "model",
        "models",
        "system",
        "temp",
        "max-tokens",
        "smooth",
        "stats",
        "retry",
        "copy",
        "export",
    ] {
        let c = r.find(want).unwrap_or_else(|| panic!("/{want} missing"));
        assert!(!c.about().is_empty());
        assert!(c.usage().starts_with(&format!("/{want}")));
    }
}

#[test]
fn unknown_commands_suggest_the_closest_and_bad_arguments_show_usage() {
    let mut app = test_app();
    run(&mut app, "/modle x");
    assert_eq!(flash(&app), "unknown command /modle — did you mean /model?");
    run(&mut app, "/zzzzzzzz");
    assert_eq!(flash(&app), "unknown command /zzzzzzzz — /help lists the commands");
    run(&mut app, "/temp hot");
    assert_eq!(flash(&app), "usage: /temp [X|default] — `hot` is not a number");
    run(&mut app, "/temp 2.5");
    assert_eq!(flash(&app), "usage: /temp [X|default] — 2.5 is out of range 0.0–2.0");
    run(&mut app, "/max-tokens 0");
    assert!(
        flash(&app).starts_with("usage: /max-tokens [N|default]"),
        "{}",
        flash(&app)
    );
    run(&mut app, "/smooth maybe");
    assert!(flash(&app).starts_with("usage: /smooth [on|off]"), "{}", flash(&app));
    run(&mut app, "/export pdf");
    assert!(
        flash(&app).starts_with("usage: /export md|html|json [PATH] — unknown format `pdf`"),
        "{}",
        flash(&app)
    );
}

#[test]
fn settings_commands_change_the_next_request() {
    let mut app = test_app();
    run(&mut app, "/temp 0.3");
    assert_eq!(app.params.temperature, Some(0.3));
    run(&mut app, "/temp default");
    assert_eq!(app.params.temperature, None);
    run(&mut app, "/max-tokens 77");
    assert_eq!(app.params.max_tokens, Some(77));
    run(&mut app, "/system Answer in French.");
    assert_eq!(app.conversation.system.as_deref(), Some("Answer in French."));
    run(&mut app, "/system off");
    assert_eq!(app.conversation.system, None);
    let before = app.smooth;
    run(&mut app, "/smooth");
    assert_eq!(app.smooth, !before);
    run(&mut app, "/smooth on");
    assert!(app.smooth);
    run(&mut app, "/endpoint other");
    assert_eq!((app.endpoint.as_str(), app.model.as_str()), ("other", "other-model"));
    run(&mut app, "/model big-one");
    assert_eq!(app.model, "big-one");
    run(&mut app, "/endpoint nope");
    assert!(flash(&app).contains("unknown endpoint `nope`"), "{}", flash(&app));
}

#[test]
fn commands_without_arguments_open_pickers_or_ask_the_server() {
    let mut app = test_app();
    run(&mut app, "/endpoint");
    assert_eq!(app.modes.overlay(), Some(&Overlay::Picker(PickerKind::Endpoint)));
    let p = app.overlay_state.picker.as_ref().unwrap();
    assert_eq!(p.items, vec!["local".to_string(), "other".to_string()]);
    let _ = app.modes.apply(crate::tui::mode::Transition::Close);
    run(&mut app, "/models");
    assert!(
        app.take_effects()
            .iter()
            .any(|e| matches!(e, Effect::ListModels { endpoint, show: true } if endpoint == "local"))
    );
    run(&mut app, "/help");
    assert_eq!(app.modes.overlay(), Some(&Overlay::Help));
}

#[test]
fn clear_copy_and_export_need_content_and_produce_effects() {
    let mut app = test_app();
    run(&mut app, "/copy");
    assert_eq!(flash(&app), "no answer to copy yet");
    run(&mut app, "/export md");
    assert_eq!(flash(&app), "nothing to export yet");
    app.conversation.session_tokens = 99;
    run(&mut app, "/clear");
    assert_eq!(app.conversation.session_tokens, 0);
    assert!(app.take_effects().iter().any(|e| matches!(
        e,
        Effect::StartSession(crate::records::writer::SessionStart::New { .. })
    )));
}

#[test]
fn completion_covers_names_and_arguments() {
    let app = test_app();
    let r = Registry::builtin();
    assert_eq!(r.complete(&app, "/mo"), vec!["/model", "/models"]);
    assert_eq!(r.complete(&app, "/endpoint o"), vec!["/endpoint other"]);
    assert_eq!(
        r.complete(&app, "/endpoint "),
        vec!["/endpoint local", "/endpoint other"]
    );
    assert_eq!(r.complete(&app, "/smooth o"), vec!["/smooth on", "/smooth off"]);
    assert_eq!(r.complete(&app, "/export h"), vec!["/export html"]);
    assert!(r.complete(&app, "hello").is_empty());
}

#[test]
fn last_code_block_finds_the_final_fence_even_unclosed() {
    let md = "text\n```rust\nfn a() {}\n```\nmore\n~~~\nsecond\n~~~\n";
    assert_eq!(last_code_block(md).as_deref(), Some("second\n"));
    assert_eq!(last_code_block("```py\nprint(1)\n").as_deref(), Some("print(1)\n"));
    assert_eq!(last_code_block("no code"), None);
    assert_eq!(
        last_code_block("````\n```\ninner\n```\n````\n").as_deref(),
        Some("```\ninner\n```\n")
    );
}
