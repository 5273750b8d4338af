//! Stream-ingest benchmark (not a test): how fast the one-shot path consumes a
//! local SSE stream, next to just reading the same bytes, in the same run.
//!
//! `cargo bench --bench stream_ingest [-- TOKENS]` (default 200000 tokens).
//! Reports wall tokens/s, CPU µs per token (thread CPU time of the client
//! thread; the server runs on another thread), the ratio to raw reading, and
//! the real `pai` binary's peak RSS at 1× and 10× the answer length.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use polyglot::config::{EndpointConfig, Secrets};
use polyglot::conversation::Params;
use polyglot::headless::{self, Io, OneShot};
use polyglot::protocols::build_adapter;
use polyglot::records::Templates;
use tokio_util::sync::CancellationToken;

/// One llama.cpp-shaped SSE event for token `i`. With `vary`, each chunk gets
/// its own id (as servers with per-chunk ids or padding do), so no two chunks
/// share their bytes around the content and every chunk is fully parsed.
fn event(i: usize, vary: bool, out: &mut Vec<u8>) {
    const WORDS: [&str; 13] = [
        "The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".", "\\n", " Ünï", " 漢字",
    ];
    write!(
        out,
        "data: {{\"choices\":[{{\"finish_reason\":null,\"index\":0,\"delta\":{{\"content\":\"{}\"}}}}],\"created\":1795288438,\"id\":\"chatcmpl-pthDKBNeDXFFPgIRMKt{:016}\",\"model\":\"smollm2\",\"system_fingerprint\":\"b0-unknown\",\"object\":\"chat.completion.chunk\"}}\n\n",
        WORDS[i % WORDS.len()],
        if vary { i } else { 0 }
    )
    .unwrap();
}

fn tail(n: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: {\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}]}\n\n");
    write!(
        out,
        "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":10,\"completion_tokens\":{n}}}}}\n\ndata: [DONE]\n\n"
    )
    .unwrap();
}

/// Total body size for `n` tokens (the same with or without `vary`).
fn body_len(n: usize) -> usize {
    let mut v = Vec::new();
    let mut size = |i: usize| {
        v.clear();
        event(i, false, &mut v);
        v.len()
    };
    let per_cycle: usize = (0..13).map(&mut size).sum();
    let rest: usize = (0..n % 13).map(&mut size).sum();
    let mut t = Vec::new();
    tail(n, &mut t);
    per_cycle * (n / 13) + rest + t.len()
}

/// Serve an `n`-token SSE body to every connection, generated on the fly on the
/// server's own thread (its CPU is not counted), written in ~64 KiB pieces.
fn serve(n: usize, vary: bool) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let server = std::thread::Builder::new().name("sse-server".into());
    server.spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let conn = std::thread::Builder::new().name("sse-conn".into());
            let _ = conn.spawn(move || {
                let mut req = Vec::new();
                let mut buf = [0u8; 4096];
                // Read headers and the (small) body.
                loop {
                    let r = s.read(&mut buf).unwrap_or(0);
                    if r == 0 {
                        return;
                    }
                    req.extend_from_slice(&buf[..r]);
                    if let Some(h) = req.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&req[..h]).to_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if req.len() >= h + 4 + len {
                            break;
                        }
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body_len(n)
                );
                let _ = s.write_all(head.as_bytes());
                let mut chunk = Vec::with_capacity(70 * 1024);
                for i in 0..n {
                    event(i, vary, &mut chunk);
                    if chunk.len() >= 64 * 1024 {
                        if s.write_all(&chunk).is_err() {
                            return;
                        }
                        chunk.clear();
                    }
                }
                tail(n, &mut chunk);
                let _ = s.write_all(&chunk);
            });
        }
    })
    .unwrap();
    port
}

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
