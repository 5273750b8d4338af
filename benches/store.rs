//! History store benchmark (not a test).
//!
//! 1. Write cost per turn while the database grows to N turns (default
//!    100,000, realistic sizes: prompts of 20–120 words, answers of 80–600,
//!    reasoning on a third of them, sessions of 1–40 turns whose requests carry
//!    the whole conversation), each turn its own transaction, next to two
//!    baselines from the same run: appending the same new bytes to a file, and
//!    the session folder's atomic turn JSON (fsync'd).
//! 2. The same in ONE long session (5,000 turns): cost at turn 100 vs 5,000.
//! 3. The writer thread: what queuing a turn costs the caller, and how fast
//!    the thread drains a burst.
//! 4. Reads at N turns: search (several kinds of query) next to a linear scan
//!    of the same text, list, show, restore, id lookup, open + integrity check.
//! 5. Size on disk.
//!
//! `cargo bench --bench store [-- TURNS]`

use std::io::Write;
use std::time::{Duration, Instant};

use polyglot::conversation::{Message, Params, Turn, TurnMode, TurnRequest, TurnResponse, TurnStatus};
use polyglot::stats::RequestStats;
use polyglot::store::{SessionMeta, Store, StoreWriter};

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A vocabulary of made-up words, drawn with a Zipf-like skew (a few words
/// everywhere, most rare), plus a few accented words and planted markers.
struct Text {
    words: Vec<String>,
}

impl Text {
    fn new(rng: &mut Rng) -> Self {
        const SYL: &[&str] = &[
            "ka", "lo", "mi", "ten", "ra", "so", "vel", "qui", "dor", "an", "pe", "tu", "ron", "is", "ma", "gel", "fi",
            "ber", "xo", "nu", "ya", "ost", "em", "cal",
        ];
        let mut words: Vec<String> = ["the", "a", "to", "of", "and", "is", "in", "that", "it", "for"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut seen: std::collections::HashSet<String> = words.iter().cloned().collect();
        while words.len() < 6000 {
            let n = 1 + rng.below(3) as usize;
            let w: String = (0..n).map(|_| SYL[rng.below(SYL.len() as u64) as usize]).collect();
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        Text { words }
    }

    fn word(&self, rng: &mut Rng) -> &str {
        let u = rng.unit();
        &self.words[((u * u * u) * self.words.len() as f64) as usize]
    }

    fn sentence(&self, rng: &mut Rng, words: usize, out: &mut String) {
        for i in 0..words {
            if i > 0 {
                out.push(' ');
            }
            match rng.below(2000) {
                0 => out.push_str("café"),
                1 => out.push_str("Zürich"),
                2 => out.push_str("naïve"),
                _ => out.push_str(self.word(rng)),
            }
            if rng.below(12) == 0 {
                out.push_str(". ");
            }
        }
    }

    fn make(&self, rng: &mut Rng, min: usize, max: usize) -> String {
        let mut s = String::new();
        let words = min + rng.below((max - min) as u64) as usize;
        self.sentence(rng, words, &mut s);
        s
    }
}

fn base_turn() -> Turn {
    Turn {
        turn_id: 0,
        started_at: String::new(),
        endpoint: "local".into(),
        model: "smollm2".into(),
        participant_name: None,
        lane: None,
        mode: TurnMode::Chat,
        status: TurnStatus::Completed,
        request: TurnRequest {
            messages: vec![Message::system("You are a helpful, concise assistant.")],
            params: Params {
                temperature: Some(0.7),
                max_tokens: Some(1024),
                ..Params::default()
            },
        },
        response: TurnResponse {
            text: String::new(),
            reasoning: String::new(),
            tool_calls: Vec::new(),
            finish_reason: Some("stop".into()),
            error: None,
        },
        stats: RequestStats {
            ttft_ms: Some(120),
            duration_ms: 2400,
            input_tokens: 300,
            output_tokens: 200,
            usage_reported: true,
            tokens_per_sec: Some(83.3),
            finish_reason: Some("stop".into()),
            retries: 0,
        },
        tool_runs: Vec::new(),
        ruling: None,
        verdict: None,
        pick: None,
    }
}

/// Per-turn durations in µs: mean, p50, p99, max.
fn stats(v: &[f64]) -> (f64, f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let mean = s.iter().sum::<f64>() / s.len().max(1) as f64;
    let at = |q: f64| s[((s.len() as f64 - 1.0) * q) as usize];
    (mean, at(0.5), at(0.99), at(1.0))
}

fn bucket_row(name: &str, store: &[f64], cpu: &[f64], file: &[f64]) {
    let (m, p50, p99, max) = stats(store);
    let (cm, ..) = stats(cpu);
    let (fm, ..) = stats(file);
    println!(
        "{name:<16} {m:>8.1} {p50:>8.1} {p99:>8.0} {max:>8.0} {cm:>9.1} {fm:>10.1} {:>7.0}",
        m / fm
    );
}

/// CPU time of the calling thread (excludes waiting for the disk).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn file_size(p: &std::path::Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100_000);
    let tmp = tempfile::tempdir().unwrap();
    let db_path = tmp.path().join("history.db");
    let mut store = Store::open(&db_path).unwrap();
    if let Ok(x) = std::env::var("EXP") {
        let c = rusqlite::Connection::open(&db_path).unwrap();
        c.execute_batch(&x).unwrap();
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let text = Text::new(&mut rng);
    let mut baseline = std::fs::File::create(tmp.path().join("baseline.txt")).unwrap();

    // ---- 1. growing database --------------------------------------------
    let mut store_us = Vec::with_capacity(n);
    let mut cpu_us = Vec::with_capacity(n);
    let mut file_us = Vec::with_capacity(n);
    let mut raw_bytes = 0u64;
    let mut turn = base_turn();
    let mut session = String::new();
    let mut left_in_session = 0;
    let mut sessions = 0;
    let mut long_session_id = String::new();
    let t_all = Instant::now();
    for i in 0..n {
        if left_in_session == 0 {
            sessions += 1;
            session = format!("20261121-{:06}-{:06x}", sessions, rng.below(1 << 24));
            left_in_session = 1 + rng.below(40);
            if left_in_session == 40 {
                long_session_id = session.clone();
            }
            turn = base_turn();
            store
                .upsert_session(&SessionMeta {
                    id: session.clone(),
                    started_at: format!("2026-11-21T{:02}:{:02}:00.000Z", (i / 60) % 24, i % 60),
                    title: None,
                    endpoint: "local".into(),
                    model: "smollm2".into(),
                    system: Some("You are a helpful, concise assistant.".into()),
                    folder: Some(format!("/home/u/sessions/{session}").into()),
                    mode: TurnMode::Chat,
                })
                .unwrap();
        }
        left_in_session -= 1;
        // The next request: the conversation so far plus a new prompt.
        let prompt = text.make(&mut rng, 20, 120);
        turn.request.messages.push(Message::user(prompt));
        turn.turn_id += 1;
        turn.started_at = format!(
            "2026-11-21T{:02}:{:02}:{:02}.000Z",
            (i / 3600) % 24,
            (i / 60) % 60,
            i % 60
        );
        turn.response.text = text.make(&mut rng, 80, 600);
        turn.response.reasoning = if rng.below(3) == 0 {
            text.make(&mut rng, 100, 300)
        } else {
            String::new()
        };
        if i % 5000 == 0 {
            // A marker for the "rare word" search.
            turn.response.text.push_str(" quetzalcoatl");
        }
        let (t, cpu) = (Instant::now(), thread_cpu());
        store.upsert_turn(&session, &turn).unwrap();
        store_us.push(micros(t.elapsed()));
        cpu_us.push(micros(thread_cpu() - cpu));

        // Baseline: the same new bytes appended to a file.
        let t = Instant::now();
        let last = turn.request.messages.last().map_or("", |m| m.content.as_str());
        baseline.write_all(last.as_bytes()).unwrap();
        baseline.write_all(turn.response.text.as_bytes()).unwrap();
        baseline.write_all(turn.response.reasoning.as_bytes()).unwrap();
        file_us.push(micros(t.elapsed()));
        raw_bytes += (last.len() + turn.response.text.len() + turn.response.reasoning.len()) as u64;

        let answer = turn.assistant_message();
        turn.request.messages.push(answer);
    }
    let total = t_all.elapsed();
    baseline.flush().unwrap();
    println!(
        "store: {n} turns in {sessions} sessions ({:.0} MB of new text), each turn its own transaction; {:.1} s in all",
        raw_bytes as f64 / 1e6,
        total.as_secs_f64()
    );
    println!("-- write cost per turn as the database grows (µs; wall time unless CPU; p99/max are WAL checkpoints)");
    println!(
        "{:<16} {:>8} {:>8} {:>8} {:>8} {:>9} {:>10} {:>7}",
        "turns", "mean", "p50", "p99", "max", "CPU mean", "file mean", "× file"
    );
    let window = 1000.min(n);
    for at in [1000, 10_000, 50_000, 100_000] {
        if at > n {
            continue;
        }
        let r = at - window..at;
        bucket_row(
            &format!("{}–{}", r.start + 1, r.end),
            &store_us[r.clone()],
            &cpu_us[r.clone()],
            &file_us[r],
        );
    }

    // Records baseline: the session folder's turn JSON (atomic, fsync'd).
    let rec_dir = tmp.path().join("records");
    std::fs::create_dir_all(&rec_dir).unwrap();
    let mut rec_us = Vec::new();
    for i in 0..200 {
        let json = serde_json::to_vec_pretty(&turn).unwrap();
        let t = Instant::now();
        polyglot::records::write_atomic(&rec_dir.join(format!("{i:04}-turn.json")), &json, true).unwrap();
        rec_us.push(micros(t.elapsed()));
    }
    let (rm, rp50, ..) = stats(&rec_us);
    println!("baseline: session-folder turn JSON (atomic write + fsync), 200 turns: mean {rm:.0} µs, p50 {rp50:.0} µs");

    // ---- 2. one long session, next to the same turns as separate sessions ----
    let mut per_turn = |db: &str, long: bool| -> Vec<f64> {
        let mut store = Store::open(&tmp.path().join(db)).unwrap();
        let mut t = base_turn();
        let mut out = Vec::new();
        for i in 0..5000u32 {
            if !long {
                t = base_turn();
            }
            t.request.messages.push(Message::user(text.make(&mut rng, 10, 40)));
            t.turn_id += 1;
            t.response.text = text.make(&mut rng, 40, 160);
            let session = if long {
                "one-long-session".to_string()
            } else {
                format!("short-{i}")
            };
            let start = Instant::now();
            store.upsert_turn(&session, &t).unwrap();
            out.push(micros(start.elapsed()));
            t.request.messages.push(t.assistant_message());
        }
        if long {
            let t0 = Instant::now();
            let r = store.restore("one-long-session").unwrap().unwrap();
            println!(
                "   (restore of the long session: {} messages in {:.1} ms)",
                r.messages.len(),
                t0.elapsed().as_secs_f64() * 1e3
            );
        }
        out
    };
    println!("-- session length: 5,000 turns in one session vs 5,000 one-turn sessions (µs, p50 / mean)");
    let long_us = per_turn("long.db", true);
    let short_us = per_turn("short.db", false);
    for (name, v) in [("one session", &long_us), ("one-turn sessions", &short_us)] {
        let (am, a50, ..) = stats(&v[..200]);
        let (bm, b50, ..) = stats(&v[4800..]);
        println!(
            "{name:<22} turns 1–200: {a50:>6.1} / {am:>6.1}   turns 4,801–5,000: {b50:>6.1} / {bm:>6.1}   ({:.2}× p50)",
            b50 / a50
        );
    }

    // ---- 3. the writer thread ---------------------------------------------
    let writer_path = tmp.path().join("writer.db");
    let writer = StoreWriter::spawn(writer_path, |_| {});
    let burst: Vec<Turn> = (1..=5000u32)
        .map(|i| {
            let mut t = base_turn();
            t.turn_id = i;
            t.request.messages.push(Message::user(text.make(&mut rng, 20, 120)));
            t.response.text = text.make(&mut rng, 80, 600);
            t
        })
        .collect();
    writer.flush();
    let start = Instant::now();
    let mut send_ns = Vec::with_capacity(burst.len());
    for (i, t) in burst.into_iter().enumerate() {
        let s = Instant::now();
        writer.turn(&format!("burst-{}", i / 20), t);
        send_ns.push(s.elapsed().as_secs_f64() * 1e9);
    }
    let queued = start.elapsed();
    writer.flush();
    let drained = start.elapsed();
    let (sm, _, sp99, _) = stats(&send_ns);
    println!(
        "-- writer thread: queuing a turn costs the caller {sm:.0} ns (p99 {sp99:.0} ns); 5,000 turns queued in \
         {:.1} ms, all written (batched) after {:.0} ms ({:.0} µs/turn)",
        queued.as_secs_f64() * 1e3,
        drained.as_secs_f64() * 1e3,
        micros(drained) / 5000.0
    );
    drop(writer);

    // ---- 4. reads at N turns ------------------------------------------------
    println!("-- reads at {n} turns (median of 15 runs)");
    let time = |f: &mut dyn FnMut() -> usize| -> (f64, usize) {
        let mut v = Vec::new();
        let mut out = 0;
        for _ in 0..15 {
            let t = Instant::now();
            out = f();
            v.push(t.elapsed().as_secs_f64() * 1e3);
        }
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], out)
    };
    let frequent = text.words[10].clone();
    let medium = text.words[400].clone();
    let rarer = text.words[5000].clone();
    let prefix = format!("{}*", &text.words[300][..2]);
    let queries: Vec<(String, String)> = vec![
        ("rare word (20 turns)".into(), "quetzalcoatl".into()),
        ("frequent word".into(), frequent.clone()),
        ("medium word".into(), medium.clone()),
        ("uncommon word".into(), rarer.clone()),
        ("prefix".into(), prefix),
        ("two words".into(), format!("{medium} {frequent}")),
        ("phrase".into(), format!("\"{} {}\"", text.words[10], text.words[11])),
        ("accents (cafe → café)".into(), "cafe".into()),
        ("a OR b".into(), format!("{rarer} OR quetzalcoatl")),
        ("typed: quotes, ( AND".into(), format!("\"{medium} AND ({rarer}")),
    ];
    println!(
        "{:<26} {:<22} {:>10} {:>10}",
        "search (20 best)", "query", "matches", "ms"
    );
    for (name, q) in &queries {
        let fts = polyglot::store::fts_query(q).unwrap();
        let matches: i64 = rusqlite::Connection::open(&db_path)
            .unwrap()
            .query_row("SELECT count(*) FROM turns_fts WHERE turns_fts MATCH ?1", [&fts], |r| {
                r.get(0)
            })
            .unwrap();
        let (ms, hits) = time(&mut || store.search(q, 20).unwrap().len());
        assert!(hits > 0, "{q}");
        let shown: String = q.chars().take(22).collect();
        println!("{name:<26} {shown:<22} {matches:>10} {ms:>10.2}");
    }
    let corpus = std::fs::read(tmp.path().join("baseline.txt")).unwrap();
    let (scan_ms, found) = time(&mut || memchr::memmem::find_iter(&corpus, b"quetzalcoatl").count());
    println!(
        "baseline: linear scan of the same {:.0} MB of text for the rare word (memmem, in memory): {scan_ms:.1} ms, {found} found",
        corpus.len() as f64 / 1e6
    );
    let (ms, _) = time(&mut || store.list_sessions(20).unwrap().len());
    println!("list 20 most recent sessions: {ms:.2} ms");
    if !long_session_id.is_empty() {
        let (ms, k) = time(&mut || store.session(&long_session_id).unwrap().unwrap().turns.len());
        println!("show a {k}-turn session: {ms:.2} ms");
        let (ms, k) = time(&mut || store.restore(&long_session_id).unwrap().unwrap().messages.len());
        println!("restore it ({k} messages): {ms:.2} ms");
    }
    let (ms, _) = time(&mut || store.resolve_session("20261121-0042").map(|s| s.len()).unwrap_or(0));
    println!("resolve an id prefix among {sessions} sessions: {ms:.2} ms");
    drop(store);
    use polyglot::store::IntegrityCheck;
    for (check, label) in [
        (
            IntegrityCheck::Always,
            "open + full check (quick_check of every table: the weekly check)",
        ),
        (
            IntegrityCheck::IfSmall,
            "open as pai does (a large file's check is left to the writer thread)",
        ),
    ] {
        let opts = polyglot::store::StoreOptions {
            check,
            ..Default::default()
        };
        let (ms, _) = time(&mut || {
            Store::open_with(&db_path, &opts).unwrap();
            0
        });
        println!("{label}: {ms:.1} ms");
    }

    // ---- 5. size ----------------------------------------------------------------
    let db = file_size(&db_path) + file_size(&tmp.path().join("history.db-wal"));
    println!(
        "size: {:.0} MB on disk for {:.0} MB of new text ({:.2}×, {:.1} KB per turn; full-text index included)",
        db as f64 / 1e6,
        raw_bytes as f64 / 1e6,
        db as f64 / raw_bytes as f64,
        db as f64 / n as f64 / 1e3
    );
}
