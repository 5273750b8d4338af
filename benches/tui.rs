//! TUI benchmarks (not tests):
//! 1. frame cost with a 100-line vs a 100,000-line transcript, following the
//!    bottom while an answer streams, and scrolled to the middle;
//! 2. CPU per token while a fast local stream flows into the real event loop
//!    (drawing to a crossterm backend that writes to a sink), next to the
//!    headless one-shot path in the same run;
//! 3. idle CPU of the real `pai` binary sitting in tmux.
//!
//! 4. Markdown rendering: a 100 KB message whole, a token at its end, a token
//!    in a growing 500-line code block, a resize, syntax highlighting's first use.
//!
//! `cargo bench --bench tui [-- TOKENS] [frames|stream|idle|markdown]`
//! (default 200000 tokens, all parts).

use std::sync::Arc;
use std::time::{Duration, Instant};

use polyglot::config::{ConfigSource, EndpointConfig, Secrets, parse};
use polyglot::conversation::Params;
use polyglot::headless::{self, Io, OneShot};
use polyglot::orchestration::{chat, event_channel};
use polyglot::protocols::{StreamEvent, build_adapter};
use polyglot::records::Templates;
use polyglot::testkit::sse_bench::serve;
use polyglot::testkit::{Scripted, ScriptedAdapter};
use polyglot::tui::app::{App, AppInit, Effect};
use polyglot::tui::{Channels, LoopOptions, Recorders, event_loop};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio_util::sync::CancellationToken;

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A 120×40 crossterm terminal writing into a sink. The viewport is fixed: a
/// full-screen one asks the OS for the size each frame, and without a TTY
/// crossterm answers that by running `tput`.
fn sink_terminal() -> Terminal<CrosstermBackend<std::io::Sink>> {
    Terminal::with_options(
        CrosstermBackend::new(std::io::sink()),
        ratatui::TerminalOptions {
            viewport: ratatui::Viewport::Fixed(ratatui::layout::Rect::new(0, 0, 120, 40)),
        },
    )
    .unwrap()
}

fn app_for(base_url: &str) -> App {
    let toml = format!("[endpoints.bench]\nbase_url = \"{base_url}\"\nmodel = \"m\"\n");
    let config = parse(
        &toml,
        ConfigSource::File("/bench.toml".into()),
        std::path::Path::new("/"),
    )
    .unwrap();
    let mut app = App::new(AppInit {
        config: Arc::new(config),
        secrets: Secrets::default(),
        endpoint: "bench".into(),
        model: "m".into(),
        system: None,
        params: Params::default(),
        history: vec![],
        highlighter: None,
    });
    app.smooth = false;
    app
}

/// One answer of `lines` rendered lines: paragraphs, a list and a code block.
fn answer(lines: usize, i: usize) -> String {
    let mut s = format!("## Answer {i}\n\n");
    let mut n = 2;
    while n < lines {
        s.push_str("Some prose that fills one line of the transcript, with `code` and **bold** words.\n\n");
        s.push_str("- a list item\n- another item\n\n```rust\nfn demo() -> u32 {\n    42\n}\n```\n\n");
        n += 10;
    }
    s
}

/// Fill the transcript with `answers` finished turns of `lines` lines each.
fn filled(answers: usize, lines: usize, rt: &tokio::runtime::Runtime) -> App {
    let mut app = app_for("http://127.0.0.1:9/v1");
    rt.block_on(async {
        for i in 0..answers {
            let script = ScriptedAdapter::text_script(&[&answer(lines, i)]);
            app.set_adapter("bench", ScriptedAdapter::new(vec![script]));
            app.submit(format!("question {i}"));
            for e in app.take_effects() {
                if let Effect::StartTurn(ctx, cancel) = e {
                    let (tx, mut rx) = event_channel();
                    let task = tokio::spawn(async move { chat::run_turn(*ctx, &tx, cancel).await });
                    while let Some(ev) = rx.recv().await {
                        app.on_orchestrator(ev);
                    }
                    task.await.unwrap();
                }
            }
            app.take_effects();
        }
    });
    app
}

/// Mean µs per frame: following the bottom while tokens arrive, and scrolled to the middle.
fn frame_cost(app: &mut App, rt: &tokio::runtime::Runtime) -> (f64, f64, usize) {
    let mut term = sink_terminal();
    term.draw(|f| polyglot::tui::view::draw(app, f)).unwrap(); // lay out once
    let total = app.transcript.total_lines();
    // A streaming answer at the bottom: one token per frame.
    let frames = 300;
    let follow = rt.block_on(async {
        let script = vec![Scripted::Pause(Duration::from_secs(3600))];
        app.set_adapter("bench", ScriptedAdapter::new(vec![script]));
        app.submit("stream".into());
        let turn = match app.take_effects().into_iter().next() {
            Some(Effect::StartTurn(ctx, _)) => ctx.turn,
            _ => panic!("no turn"),
        };
        let t0 = Instant::now();
        for i in 0..frames {
            app.on_orchestrator(polyglot::orchestration::OrchestratorEvent::Stream {
                turn,
                event: StreamEvent::Text(if i % 12 == 11 {
                    "word\n\n".into()
                } else {
                    "word ".into()
                }),
            });
            term.draw(|f| polyglot::tui::view::draw(app, f)).unwrap();
        }
        t0.elapsed().as_secs_f64() * 1e6 / frames as f64
    });
    app.cancel();
    // Scrolled to the middle, one line per frame.
    app.transcript.scroll_bottom();
    app.transcript.scroll_up(total / 2);
    let t0 = Instant::now();
    for i in 0..frames {
        if i % 2 == 0 {
            app.transcript.scroll_up(1);
        } else {
            app.transcript.scroll_down(1);
        }
        term.draw(|f| polyglot::tui::view::draw(app, f)).unwrap();
    }
    let middle = t0.elapsed().as_secs_f64() * 1e6 / frames as f64;
    (follow, middle, total)
}

/// Stream `n` tokens through the real event loop; returns (wall, thread CPU).
fn tui_stream(n: usize, rt: &tokio::runtime::Runtime, port: u16) -> (Duration, Duration) {
    let mut app = app_for(&format!("http://127.0.0.1:{port}/v1"));
    let mut term = sink_terminal();
    let (w, c) = (Instant::now(), thread_cpu());
    rt.block_on(async {
        app.submit("go".into());
        event_loop(
            &mut app,
            &mut term,
            futures::stream::pending(),
            Channels::new(),
            &Recorders::none(),
            LoopOptions {
                exit_when_idle: true,
                shutdown: Box::pin(std::future::pending()),
            },
        )
        .await
        .unwrap();
    });
    let out = (w.elapsed(), thread_cpu() - c);
    let text = app.last_answer().unwrap_or_default();
    assert!(text.len() > n, "the answer did not arrive: {} bytes", text.len());
    out
}

fn headless_stream(rt: &tokio::runtime::Runtime, port: u16) -> (Duration, Duration) {
    let cfg = EndpointConfig::openai("bench", &format!("http://127.0.0.1:{port}/v1"));
    let adapter = build_adapter(&cfg, &Secrets::default()).unwrap();
    let job = OneShot {
        endpoint: "bench".into(),
        model: "m".into(),
        system: None,
        params: Params::default(),
        prompt: "go".into(),
        json: false,
        sessions_dir: None,
        templates: Arc::new(Templates::builtin()),
        agent: None,
        history_db: None,
        resume: None,
    };
    let (mut out, mut err) = (std::io::sink(), std::io::sink());
    let mut io = Io {
        out: &mut out,
        err: &mut err,
        err_is_tty: false,
    };
    let (w, c) = (Instant::now(), thread_cpu());
    assert_eq!(
        rt.block_on(headless::run(job, adapter, &mut io, CancellationToken::new())),
        0
    );
    (w.elapsed(), thread_cpu() - c)
}

fn median(mut v: Vec<(Duration, Duration)>) -> (Duration, Duration) {
    v.sort_by_key(|s| s.1);
    v[v.len() / 2]
}

/// CPU seconds used by `pid` (utime + stime from /proc).
fn proc_cpu(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn idle_cpu() -> Option<(f64, f64)> {
    let dir = tempfile::tempdir().ok()?;
    let name = format!("pai-idle-{}", std::process::id());
    let cmd = format!("cd {} && {} --no-log", dir.path().display(), env!("CARGO_BIN_EXE_pai"));
    let ok = std::process::Command::new("tmux")
        .args(["new-session", "-d", "-s", &name, "-x", "120", "-y", "40", &cmd])
        .status()
        .ok()?
        .success();
    if !ok {
        return None;
    }
    std::thread::sleep(Duration::from_secs(2));
    let pid: u32 = String::from_utf8(
        std::process::Command::new("tmux")
            .args(["list-panes", "-t", &name, "-F", "#{pane_pid}"])
            .output()
            .ok()?
            .stdout,
    )
    .ok()?
    .trim()
    .parse()
    .ok()?;
    let (c0, t0) = (proc_cpu(pid)?, Instant::now());
    std::thread::sleep(Duration::from_secs(5));
    let (c1, secs) = (proc_cpu(pid)?, t0.elapsed().as_secs_f64());
    let _ = std::process::Command::new("tmux")
        .args(["kill-session", "-t", &name])
        .status();
    Some(((c1 - c0) * 1000.0, (c1 - c0) / secs * 100.0))
}

fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(200_000);
    let parts: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| ["frames", "stream", "idle", "markdown"].contains(&a.as_str()))
        .collect();
    let want = |p: &str| parts.is_empty() || parts.iter().any(|x| x == p);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if want("frames") {
        frames(&rt);
    }
    if want("stream") {
        stream(n, &rt);
    }
    if want("markdown") {
        markdown();
    }
    if want("idle") {
        match idle_cpu() {
            Some((ms, pct)) => println!("\nidle: the pai TUI used {ms:.0} ms of CPU in 5 s ({pct:.2}% of a core)"),
            None => println!("\nidle: skipped (tmux not available)"),
        }
    }
}

fn frames(rt: &tokio::runtime::Runtime) {
    println!("frame cost (120×40, crossterm backend into a sink)");
    println!(
        "{:<28} {:>10} {:>20} {:>20}",
        "transcript", "lines", "following, µs/frame", "mid-scroll, µs/frame"
    );
    let mut rows = Vec::new();
    for (answers, lines, label) in [(1, 100, "100 lines"), (1000, 100, "100,000 lines")] {
        let mut app = filled(answers, lines, rt);
        let (follow, middle, total) = frame_cost(&mut app, rt);
        println!("{label:<28} {total:>10} {follow:>20.1} {middle:>20.1}");
        rows.push((follow, middle));
    }
    println!(
        "  ratio 100k / 100 lines: following {:.2}×, mid-scroll {:.2}×",
        rows[1].0 / rows[0].0,
        rows[1].1 / rows[0].1
    );
}

fn stream(n: usize, rt: &tokio::runtime::Runtime) {
    println!("\nstreaming {n} tokens from a loopback server (median of 3, smoothing off)");
    let port = serve(n, false);
    let tui = median((0..3).map(|_| tui_stream(n, rt, port)).collect());
    let head = median((0..3).map(|_| headless_stream(rt, port)).collect());
    for (name, (wall, cpu)) in [("TUI event loop", tui), ("headless one-shot", head)] {
        println!(
            "{name:<28} {:>12.0} tokens/s {:>10.3} CPU µs/token",
            n as f64 / wall.as_secs_f64(),
            cpu.as_secs_f64() * 1e6 / n as f64
        );
    }
    println!(
        "  TUI / headless CPU per token: {:.2}×",
        tui.1.as_secs_f64() / head.1.as_secs_f64()
    );
}

fn markdown() {
    use polyglot::tui::highlight::Highlighter;
    use polyglot::tui::markdown::{StreamingMarkdown, render};
    use polyglot::tui::theme::Theme;
    let theme = Theme::default();
    let hl = Highlighter::new();
    let t = Instant::now();
    hl.wait_ready();
    println!("\nmarkdown (width 100)");
    println!(
        "  {:<52} {:>10.2} ms",
        "syntax sets loaded (off the UI thread)",
        t.elapsed().as_secs_f64() * 1e3
    );
    for lang in ["rust", "python"] {
        let t = Instant::now();
        let _ = hl.highlight_lines(lang, "fn main() { let x = \"s\"; // c\n}\n", theme.code_theme);
        println!(
            "  {:<52} {:>10.2} ms",
            format!("first {lang} block (grammar compiled)"),
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 100_000 {
        text.push_str(&answer(40, i));
        text.push_str("\n\n");
        i += 1;
    }
    for (label, h) in [
        ("render 100 KB, no highlighting", None),
        ("render 100 KB, highlighted", Some(&hl)),
    ] {
        let t = Instant::now();
        let n = render(&text, 100, &theme, h).len();
        println!(
            "  {:<52} {:>10.2} ms ({n} lines)",
            label,
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    let mut md = StreamingMarkdown::new();
    let _ = md.lines(&text, 100, &theme, Some(&hl));
    let per = |label: &str, d: Duration, n: u32| {
        println!("  {:<52} {:>10.1} µs", label, d.as_secs_f64() * 1e6 / f64::from(n))
    };
    let t = Instant::now();
    let _ = md.lines(&text, 100, &theme, Some(&hl));
    per("same text asked again", t.elapsed(), 1);
    text.push_str("A new paragraph streams in");
    let t = Instant::now();
    for i in 0..300 {
        text.push_str(if i % 7 == 0 { " **word**" } else { " word" });
        let _ = md.lines(&text, 100, &theme, Some(&hl));
    }
    per("a prose token at the end of 100 KB", t.elapsed(), 300);
    text.push_str("\n\n```rust\n");
    let code: String = (0..500)
        .map(|i| format!("    let value_{i} = compute(\"{i}\", {i}) + other; // note\n"))
        .collect();
    let tokens: Vec<&str> = code.split_inclusive(' ').collect();
    let t = Instant::now();
    for tok in &tokens {
        text.push_str(tok);
        let _ = md.lines(&text, 100, &theme, Some(&hl));
    }
    per(
        "a token in a growing 500-line code block (mean)",
        t.elapsed(),
        tokens.len() as u32,
    );
    let t = Instant::now();
    let _ = md.lines(&text, 99, &theme, Some(&hl));
    println!(
        "  {:<52} {:>10.2} ms",
        format!("resize ({} KB)", text.len() / 1024),
        t.elapsed().as_secs_f64() * 1e3
    );
}
