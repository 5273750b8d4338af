//! TUI behaviour and snapshots: each mode and overlay, narrow terminals,
//! mid-stream, cancelled and failed turns, markdown and code.

use std::time::Duration;

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

use super::app::Effect;
use super::mode::{Activity, Transition, UiMode};
use super::testing::{frame, play, test_app};
use crate::conversation::{Role, TurnStatus};
use crate::protocols::{ProtocolError, StreamEvent};
use crate::stats::Usage;
use crate::testkit::{Scripted, ScriptedAdapter};

const ANSWER_MD: &str = "## Plan\n\nHere is **bold**, *italic* and `code`:\n\n1. first\n2. second\n   - nested\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n> a quote\n";

fn key(c: KeyCode) -> Event {
    Event::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn ctrl(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn type_text(app: &mut super::app::App, s: &str) {
    for c in s.chars() {
        app.on_terminal(key(KeyCode::Char(c)));
    }
}

fn script_md() -> Vec<Scripted> {
    let mut v: Vec<Scripted> = ANSWER_MD
        .split_inclusive(' ')
        .map(|p| Scripted::Event(StreamEvent::Text(p.to_string())))
        .collect();
    v.push(Scripted::Event(StreamEvent::Finished("stop".into())));
    v.push(Scripted::Event(StreamEvent::Usage(Usage {
        input_tokens: 12,
        output_tokens: 40,
    })));
    v
}

#[tokio::test(start_paused = true)]
async fn welcome_screen() {
    let mut app = test_app();
    insta::assert_snapshot!(frame(&mut app, 80, 16).backend());
}

#[tokio::test(start_paused = true)]
async fn completed_answer_with_markdown_and_code() {
    let mut app = test_app();
    play(&mut app, "Show me markdown", script_md(), None).await;
    assert_eq!(app.modes.activity(), Activity::Idle);
    assert_eq!(app.conversation.messages.len(), 2);
    assert_eq!(app.conversation.messages[1].content, ANSWER_MD);
    let effects = app.take_effects();
    assert!(
        effects.iter().any(
            |e| matches!(e, Effect::Record(t) if t.status == TurnStatus::Completed && t.response.text == ANSWER_MD)
        )
    );
    insta::assert_snapshot!(frame(&mut app, 80, 30).backend());
}

#[tokio::test(start_paused = true)]
async fn mid_stream_shows_partial_text_and_streaming_status() {
    let mut app = test_app();
    let script = vec![
        Scripted::Pause(Duration::from_millis(300)),
        Scripted::Event(StreamEvent::Text("The answer begins".into())),
        Scripted::Event(StreamEvent::Text(" and then\n\n```py\nprint(".into())),
        Scripted::Pause(Duration::from_secs(60)),
        Scripted::Event(StreamEvent::Text("'never')\n```".into())),
    ];
    let _rest = play(&mut app, "stream please", script, Some(4)).await;
    assert_eq!(app.modes.activity(), Activity::Streaming);
    insta::assert_snapshot!(frame(&mut app, 80, 16).backend());
}

#[tokio::test(start_paused = true)]
async fn esc_cancels_at_once_and_keeps_the_partial_answer() {
    let mut app = test_app();
    let script = vec![
        Scripted::Event(StreamEvent::Text("Partial ans".into())),
        Scripted::Pause(Duration::from_secs(60)),
        Scripted::Event(StreamEvent::Text("wer never shown".into())),
    ];
    let ep = app.endpoint.clone();
    app.set_adapter(&ep, ScriptedAdapter::new(vec![script]));
    app.submit("long one".into());
    let Some(Effect::StartTurn(ctx, cancel)) = app.take_effects().into_iter().next() else {
        panic!("no turn")
    };
    let (tx, mut rx) = crate::orchestration::event_channel();
    let task = tokio::spawn(async move { crate::orchestration::chat::run_turn(*ctx, &tx, cancel).await });
    for _ in 0..2 {
        let ev = rx.recv().await.unwrap();
        app.on_orchestrator(ev);
    }
    app.on_terminal(key(KeyCode::Esc));
    // On screen at once, before the orchestrator reports back.
    let shown = format!("{:?}", frame(&mut app, 80, 12).backend());
    assert!(shown.contains("cancelled"), "{shown}");
    while let Some(ev) = rx.recv().await {
        app.on_orchestrator(ev);
    }
    task.await.unwrap();
    assert_eq!(app.modes.activity(), Activity::Idle);
    let effects = app.take_effects();
    let rec = effects.iter().find_map(|e| match e {
        Effect::Record(t) => Some(t),
        _ => None,
    });
    let rec = rec.expect("the cancelled turn is recorded");
    assert_eq!(rec.status, TurnStatus::Cancelled);
    assert_eq!(rec.response.text, "Partial ans");
    assert_eq!(
        app.conversation.messages.last().map(|m| m.content.as_str()),
        Some("Partial ans")
    );
    insta::assert_snapshot!(frame(&mut app, 80, 12).backend());
}

#[tokio::test(start_paused = true)]
async fn failure_before_any_output_marks_the_prompt_and_keeps_it_out_of_the_context() {
    let mut app = test_app();
    let script = vec![Scripted::Error(ProtocolError::Connect {
        url: "http://127.0.0.1:9/v1/chat/completions".into(),
        detail: "Connection refused (os error 111)".into(),
    })];
    play(&mut app, "hello?", script, None).await;
    assert_eq!(app.modes.activity(), Activity::Error);
    assert!(
        app.conversation.messages.is_empty(),
        "a failed prompt leaves the context"
    );
    insta::assert_snapshot!(frame(&mut app, 80, 12).backend());
    // /retry sends it again.
    let ep = app.endpoint.clone();
    app.set_adapter(
        &ep,
        ScriptedAdapter::new(vec![ScriptedAdapter::text_script(&["back!"])]),
    );
    app.submit("/retry".into());
    assert!(app.take_effects().iter().any(
        |e| matches!(e, Effect::StartTurn(ctx, _) if ctx.messages.last().map(|m| m.content.as_str()) == Some("hello?"))
    ));
}

#[tokio::test(start_paused = true)]
async fn narrow_terminal_keeps_mode_and_status_visible() {
    let mut app = test_app();
    play(&mut app, "Show me markdown", script_md(), None).await;
    insta::assert_snapshot!(frame(&mut app, 60, 24).backend());
}

#[tokio::test(start_paused = true)]
async fn reasoning_is_folded_until_toggled() {
    let mut app = test_app();
    let script = vec![
        Scripted::Event(StreamEvent::Reasoning(
            "Let me think about primes. Two is prime.".into(),
        )),
        Scripted::Event(StreamEvent::Text("2, 3, 5".into())),
        Scripted::Event(StreamEvent::Finished("stop".into())),
    ];
    play(&mut app, "three primes", script, None).await;
    let folded = format!("{:?}", frame(&mut app, 70, 12).backend());
    assert!(
        folded.contains("reasoning, 8 words") && !folded.contains("Two is prime"),
        "{folded}"
    );
    app.on_terminal(ctrl('t'));
    insta::assert_snapshot!(frame(&mut app, 70, 12).backend());
}

#[tokio::test(start_paused = true)]
async fn help_overlay() {
    let mut app = test_app();
    app.on_terminal(key(KeyCode::F(1)));
    insta::assert_snapshot!(frame(&mut app, 100, 40).backend());
    app.on_terminal(key(KeyCode::Esc));
    assert_eq!(app.modes.overlay(), None);
}

#[tokio::test(start_paused = true)]
async fn endpoint_picker_overlay_filters_and_switches() {
    let mut app = test_app();
    type_text(&mut app, "/endpoint");
    app.on_terminal(key(KeyCode::Enter));
    insta::assert_snapshot!(frame(&mut app, 80, 20).backend());
    type_text(&mut app, "oth");
    app.on_terminal(key(KeyCode::Enter));
    assert_eq!(app.endpoint, "other");
    assert_eq!(app.modes.overlay(), None);
}

#[tokio::test(start_paused = true)]
async fn each_mode_shows_in_the_toolbar() {
    for mode in [UiMode::Chat, UiMode::Agent, UiMode::Arena, UiMode::Compare] {
        let mut app = test_app();
        app.modes.apply(Transition::SwitchMode(mode)).unwrap();
        let t = frame(&mut app, 80, 8);
        insta::assert_snapshot!(format!("mode_{}", mode.label().to_lowercase()), t.backend());
    }
}

#[tokio::test(start_paused = true)]
async fn tab_completes_commands_and_arguments() {
    let mut app = test_app();
    type_text(&mut app, "/smo");
    app.on_terminal(key(KeyCode::Tab));
    assert_eq!(app.input.text(), "/smooth ");
    type_text(&mut app, "o");
    app.on_terminal(key(KeyCode::Tab));
    assert_eq!(app.input.completions, vec!["off", "on"]);
    type_text(&mut app, "f");
    app.on_terminal(key(KeyCode::Tab));
    assert_eq!(app.input.text(), "/smooth off");
}

#[tokio::test(start_paused = true)]
async fn ctrl_c_twice_quits_when_idle_and_once_cancels_when_busy() {
    let mut app = test_app();
    type_text(&mut app, "draft");
    app.on_terminal(ctrl('c'));
    assert!(!app.should_quit);
    assert!(app.input.is_empty(), "the first Ctrl-C clears the input");
    app.on_terminal(ctrl('c'));
    assert!(app.should_quit);

    let mut app = test_app();
    let ep = app.endpoint.clone();
    app.set_adapter(
        &ep,
        ScriptedAdapter::new(vec![vec![Scripted::Pause(Duration::from_secs(60))]]),
    );
    app.submit("q".into());
    app.on_terminal(ctrl('c'));
    assert!(!app.should_quit, "Ctrl-C while busy cancels, it does not quit");
    let mut app = test_app();
    app.on_terminal(ctrl('d'));
    assert!(app.should_quit);
}

#[tokio::test(start_paused = true)]
async fn scrolling_up_holds_the_view_while_output_arrives() {
    let mut app = test_app();
    for i in 0..4 {
        play(
            &mut app,
            &format!("question {i}"),
            ScriptedAdapter::text_script(&["line one\n\nline two\n\nline three"]),
            None,
        )
        .await;
    }
    // A long answer streams in while the user reads further up.
    let mut script: Vec<Scripted> = (0..40)
        .map(|i| Scripted::Event(StreamEvent::Text(format!("streamed line {i}\n\n"))))
        .collect();
    script.push(Scripted::Event(StreamEvent::Finished("stop".into())));
    let rest = play(&mut app, "long answer", script, Some(6)).await;
    frame(&mut app, 60, 12);
    app.on_terminal(key(KeyCode::PageUp));
    assert!(!app.transcript.is_following());
    let rows = |app: &mut super::app::App| -> Vec<String> {
        let t = frame(app, 60, 12);
        let b = t.backend().buffer().clone();
        (0..5)
            .map(|y| (0..59).map(|x| b[(x, y)].symbol().to_string()).collect())
            .collect()
    };
    let before = rows(&mut app);
    for ev in rest {
        app.on_orchestrator(ev);
    }
    let after = rows(&mut app);
    assert_eq!(before, after, "the view moved while scrolled up");
    assert!(format!("{:?}", frame(&mut app, 60, 12).backend()).contains("new output below"));
    app.on_terminal(Event::Key(KeyEvent::new(KeyCode::End, KeyModifiers::CONTROL)));
    assert!(app.transcript.is_following());
}

#[tokio::test(start_paused = true)]
async fn escape_sequences_in_model_output_never_reach_the_screen_buffer() {
    let mut app = test_app();
    let evil = "safe \x1b[2J\x1b]52;c;cm0gLXJm\x07 text \u{9b}31m";
    play(&mut app, "x", ScriptedAdapter::text_script(&[evil]), None).await;
    let t = frame(&mut app, 80, 10);
    for cell in t.backend().buffer().content() {
        assert!(
            !cell.symbol().chars().any(crate::util::sanitize::is_unsafe_control),
            "raw control char in {:?}",
            cell.symbol()
        );
    }
}

#[tokio::test(start_paused = true)]
async fn prompts_submitted_while_busy_are_not_lost() {
    let mut app = test_app();
    let ep = app.endpoint.clone();
    app.set_adapter(
        &ep,
        ScriptedAdapter::new(vec![vec![Scripted::Pause(Duration::from_secs(60))]]),
    );
    app.submit("first".into());
    app.take_effects();
    type_text(&mut app, "second");
    app.on_terminal(key(KeyCode::Enter));
    assert_eq!(app.input.text(), "second", "the prompt goes back into the box");
    assert!(
        app.flash
            .as_ref()
            .is_some_and(|(m, _, _)| m.contains("still streaming"))
    );
    assert_eq!(
        app.conversation
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .count(),
        1
    );
}

mod agent {
    use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

    use super::super::testing::{FakeWeather, frame, play_agent, test_app, with_tools};
    use crate::conversation::{Approval, Role, ToolCall};
    use crate::protocols::StreamEvent;
    use crate::testkit::{Scripted, ScriptedAdapter};
    use crate::tools::Policy;
    use crate::tui::mode::{Activity, UiMode};

    fn key(c: char) -> Event {
        Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
    }

    fn call(id: &str, args: &str) -> Vec<Scripted> {
        vec![
            Scripted::Event(StreamEvent::Text("Let me check.".into())),
            Scripted::Event(StreamEvent::ToolCall(ToolCall {
                id: id.into(),
                name: "weather".into(),
                arguments: args.into(),
            })),
            Scripted::Event(StreamEvent::Finished("tool_calls".into())),
        ]
    }

    #[tokio::test(start_paused = true)]
    async fn approval_overlay_then_tool_block_then_answer() {
        let dir = tempfile::tempdir().unwrap();
        let mut app = test_app();
        let tool = FakeWeather::new();
        with_tools(&mut app, dir.path(), vec![(tool.clone(), Policy::Ask)]);
        app.submit("/agent on".into());
        assert_eq!(app.modes.mode(), UiMode::Agent);
        let mut shots = Vec::new();
        play_agent(
            &mut app,
            "weather in Paris?",
            vec![
                call("c1", r#"{"city":"Paris"}"#),
                ScriptedAdapter::text_script(&["It is **21C** in Paris."]),
            ],
            vec![vec![key('y')]],
            &mut shots,
        )
        .await;
        assert_eq!(shots.len(), 1);
        insta::assert_snapshot!("agent_approval_overlay", shots[0]);
        assert_eq!(app.modes.activity(), Activity::Idle);
        assert_eq!(*tool.calls.lock().unwrap(), vec![serde_json::json!({"city": "Paris"})]);
        // The conversation holds exactly what the agent sent: call, result, answer.
        let roles: Vec<Role> = app.conversation.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
        assert_eq!(app.conversation.messages[2].content, "21C in Paris");
        // Both requests are recorded; the first carries the approved tool run.
        assert_eq!(app.turns.len(), 2);
        assert_eq!(app.turns[0].tool_runs[0].approval, Approval::Approved);
        insta::assert_snapshot!("agent_transcript", frame(&mut app, 80, 22).backend());
    }

    #[tokio::test(start_paused = true)]
    async fn an_edit_is_a_logged_correction_and_a_rejection_reason_reaches_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let mut app = test_app();
        let tool = FakeWeather::new();
        with_tools(&mut app, dir.path(), vec![(tool.clone(), Policy::Ask)]);
        app.submit("/agent on".into());
        // First call: edit the arguments. Second: reject with a reason.
        let mut edit: Vec<Event> = vec![key('e')];
        // Select all and replace the JSON in the editor.
        edit.push(Event::Key(KeyEvent::new(KeyCode::Char('a'), KeyModifiers::CONTROL)));
        edit.push(Event::Key(KeyEvent::new(KeyCode::Char('k'), KeyModifiers::CONTROL)));
        for _ in 0..5 {
            edit.push(Event::Key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)));
            edit.push(Event::Key(KeyEvent::new(KeyCode::Char('k'), KeyModifiers::CONTROL)));
        }
        edit.extend(r#"{"city":"Lyon"}"#.chars().map(key));
        edit.push(Event::Key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL)));
        let mut reject = vec![key('r')];
        reject.extend("not Berlin".chars().map(key));
        reject.push(Event::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        let mut shots = Vec::new();
        play_agent(
            &mut app,
            "weather?",
            vec![
                call("c1", r#"{"city":"Pariss"}"#),
                call("c2", r#"{"city":"Berlin"}"#),
                ScriptedAdapter::text_script(&["Done."]),
            ],
            vec![edit, reject],
            &mut shots,
        )
        .await;
        assert_eq!(
            *tool.calls.lock().unwrap(),
            vec![serde_json::json!({"city": "Lyon"})],
            "only the corrected call ran"
        );
        let r1 = &app.turns[0].tool_runs[0];
        assert_eq!(r1.approval, Approval::Edited);
        assert_eq!(r1.original_arguments, Some(serde_json::json!({"city": "Pariss"})));
        let r2 = &app.turns[1].tool_runs[0];
        assert_eq!(
            (r2.approval, r2.reason.as_deref()),
            (Approval::Rejected, Some("not Berlin"))
        );
        let tool_msgs: Vec<&str> = app
            .conversation
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(
            tool_msgs,
            ["21C in Lyon", "error: the user denied `weather`: not Berlin"]
        );
        let screen = format!("{:?}", frame(&mut app, 90, 30).backend());
        assert!(
            screen.contains("corrected by you") && screen.contains("rejected"),
            "{screen}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn tools_and_mcp_commands_list_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let mut app = test_app();
        with_tools(&mut app, dir.path(), vec![(FakeWeather::new(), Policy::Auto)]);
        app.submit("/tools".into());
        app.submit("/mcp".into());
        let screen = format!("{:?}", frame(&mut app, 100, 20).backend());
        assert!(
            screen.contains("weather") && screen.contains("auto") && screen.contains("built-in"),
            "{screen}"
        );
        assert!(screen.contains("no MCP servers are configured"), "{screen}");
        app.submit("/mcp restart nope".into());
        assert!(
            app.flash
                .as_ref()
                .is_some_and(|(m, _, _)| m.contains("no MCP server `nope`"))
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_launch_notice_shows_in_the_waiting_answer_and_clears_on_output() {
    let script = || {
        vec![
            Scripted::Event(StreamEvent::Notice(
                "starting `local` (pai-local-llm) — waiting for it, 5s".into(),
            )),
            Scripted::Pause(Duration::from_secs(60)),
            Scripted::Event(StreamEvent::Text("Hi there".into())),
            Scripted::Pause(Duration::from_secs(60)),
            Scripted::Event(StreamEvent::Text("!".into())),
        ]
    };
    // TurnStarted, the first checkpoint, then the notice: still waiting.
    let mut app = test_app();
    play(&mut app, "Say hi", script(), Some(3)).await;
    assert_eq!(app.modes.activity(), Activity::Waiting);
    let t = frame(&mut app, 80, 12);
    assert!(format!("{:?}", t.backend()).contains("starting `local` (pai-local-llm)"));
    insta::assert_snapshot!(t.backend());
    // The first token replaces it.
    let mut app = test_app();
    play(&mut app, "Say hi", script(), Some(4)).await;
    assert_eq!(app.modes.activity(), Activity::Streaming);
    let screen = format!("{:?}", frame(&mut app, 80, 12).backend());
    assert!(
        screen.contains("Hi there") && !screen.contains("pai-local-llm"),
        "{screen}"
    );
}
