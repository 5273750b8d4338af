//! Stream-ingest benchmark (not a test): how fast the one-shot path consumes a
//! local SSE stream, next to just reading the same bytes, in the same run.
//!
//! `cargo bench --bench stream_ingest [-- TOKENS]` (default 200000 tokens).
//! Reports wall tokens/s, CPU µs per token (thread CPU time of the client
//! thread; the server runs on another thread), the ratio to raw reading, and
//! the real `pai` binary's peak RSS at 1× and 10× the answer length.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use polyglot::config::{EndpointConfig, Secrets};
use polyglot::conversation::Params;
use polyglot::headless::{self, Io, OneShot};
use polyglot::protocols::build_adapter;
use polyglot::records::Templates;
use polyglot::testkit::sse_bench::{body_len, event, serve, tail};
use tokio_util::sync::CancellationToken;

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[derive(Clone, Copy)]
struct Sample {
    wall: Duration,
    cpu: Duration,
}

fn median(mut v: Vec<Sample>) -> Sample {
    v.sort_by_key(|s| s.cpu);
    v[v.len() / 2]
}

fn measure<F: FnMut()>(runs: usize, mut f: F) -> Sample {
    f(); // warm-up
    median(
        (0..runs)
            .map(|_| {
                let (w, c) = (Instant::now(), thread_cpu());
                f();
                Sample {
                    wall: w.elapsed(),
                    cpu: thread_cpu() - c,
                }
            })
            .collect(),
    )
}

/// Peak RSS (KiB, VmHWM read from /proc while it runs) and wall time of the
/// real binary streaming the answer to /dev/null. (wait4's ru_maxrss would count
/// the forked copy of this benchmark process before exec.)
fn binary_run(port: u16, dir: &std::path::Path) -> (u64, Duration) {
    let cfg = dir.join("bench.toml");
    std::fs::write(
        &cfg,
        format!("[endpoints.bench]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\n"),
    )
    .unwrap();
    let start = Instant::now();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pai"))
        .args(["--config", cfg.to_str().unwrap(), "-e", "bench", "--no-log", "go"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status_path = format!("/proc/{}/status", child.id());
    let mut hwm = 0u64;
    loop {
        if let Ok(s) = std::fs::read_to_string(&status_path)
            && let Some(kb) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        {
            hwm = hwm.max(kb);
        }
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "pai failed");
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    (hwm, start.elapsed())
}

/// The same-run figures for one stream shape.
struct Figures {
    raw: Sample,
    decode: Sample,
    oneshot: Sample,
}

fn figures(rt: &tokio::runtime::Runtime, n: usize, vary: bool) -> Figures {
    let body_bytes = body_len(n);
    let port = serve(n, vary);
    let url = format!("http://127.0.0.1:{port}/v1");
    polyglot::protocols::transport::ensure_crypto();
    let client = reqwest::Client::new();
    let raw = measure(5, || {
        rt.block_on(async {
            let resp = client
                .post(format!("{url}/chat/completions"))
                .body("{}")
                .send()
                .await
                .unwrap();
            let mut s = resp.bytes_stream();
            let mut total = 0usize;
            while let Some(c) = s.next().await {
                total += c.unwrap().len();
            }
            assert_eq!(total, body_bytes);
        })
    });

    // The decoder alone, on the same bytes in memory (no network, no events out).
    let mut mem = Vec::with_capacity(body_bytes);
    for i in 0..n {
        event(i, vary, &mut mem);
    }
    tail(n, &mut mem);
    let decode = measure(5, || {
        use polyglot::protocols::transport::WireDecoder;
        let mut d = polyglot::protocols::openai::ChatDecoder::new(false);
        let mut q = std::collections::VecDeque::new();
        let mut chars = 0usize;
        for c in mem.chunks(64 * 1024) {
            d.feed(c, &mut q).unwrap();
            for e in q.drain(..) {
                if let polyglot::protocols::StreamEvent::Text(t) = e {
                    chars += t.len();
                }
            }
        }
        d.finish(&mut q).unwrap();
        assert!(chars > n);
    });
    drop(mem);

    let cfg = EndpointConfig::openai("bench", &url);
    let templates = Arc::new(Templates::builtin());
    let oneshot = measure(5, || {
        let adapter = build_adapter(&cfg, &Secrets::default()).unwrap();
        let job = OneShot {
            endpoint: "bench".into(),
            model: "m".into(),
            system: None,
            params: Params::default(),
            prompt: "go".into(),
            json: false,
            sessions_dir: None,
            templates: templates.clone(),
            agent: None,
            history_db: None,
            resume: None,
        };
        let mut out = std::io::sink();
        let mut err = std::io::sink();
        let mut io = Io {
            out: &mut out,
            err: &mut err,
            err_is_tty: false,
        };
        let code = rt.block_on(headless::run(job, adapter, &mut io, CancellationToken::new()));
        assert_eq!(code, 0);
    });
    Figures { raw, decode, oneshot }
}

fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(200_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "stream ingest: {n} tokens, {:.1} MB of SSE from a loopback server, median of 5 runs",
        body_len(n) as f64 / 1e6
    );
    println!(
        "{:<44} {:>9} {:>13} {:>13} {:>8}",
        "path", "wall ms", "tokens/s", "CPU µs/token", "CPU ×"
    );
    for (vary, title) in [
        (false, "chunks alike but for their text (llama.cpp)"),
        (true, "every chunk different (per-chunk ids)"),
    ] {
        println!("-- {title}");
        let f = figures(&rt, n, vary);
        let row = |name: &str, s: Sample| {
            println!(
                "{:<44} {:>9.1} {:>13.0} {:>13.3} {:>8.2}",
                name,
                s.wall.as_secs_f64() * 1e3,
                n as f64 / s.wall.as_secs_f64(),
                s.cpu.as_secs_f64() * 1e6 / n as f64,
                s.cpu.as_secs_f64() / f.raw.cpu.as_secs_f64()
            )
        };
        row("raw read (reqwest, bytes only) = baseline", f.raw);
        row("decode only (in memory, no I/O)", f.decode);
        row("one-shot path (adapter → stdout)", f.oneshot);
    }

    let tmp = tempfile::tempdir().unwrap();
    let (rss1, wall1) = binary_run(serve(n, true), tmp.path());
    let (rss10, wall10) = binary_run(serve(n * 10, true), tmp.path());
    println!(
        "pai binary (varying chunks, stdout → /dev/null), peak RSS: {:.1} MiB at {n} tokens ({:.0} tok/s), {:.1} MiB at {} tokens ({:.0} tok/s)",
        rss1 as f64 / 1024.0,
        n as f64 / wall1.as_secs_f64(),
        rss10 as f64 / 1024.0,
        n * 10,
        (n * 10) as f64 / wall10.as_secs_f64()
    );
    let text_growth = 9 * n * 5; // ~5 bytes of text per token
    println!(
        "  RSS growth for 10× the answer: {:.1} MiB; the extra answer text itself is {:.1} MiB (kept in memory for the turn record)",
        (rss10 as f64 - rss1 as f64) / 1024.0,
        text_growth as f64 / 1048576.0
    );
}
