//! Tests of `tui::smoother`.

use super::*;

const FRAME: Duration = Duration::from_millis(16);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A tiny seeded PRNG (xorshift64*), enough for randomized chunkings.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One simulated run: `arrivals` are (offset from start, text); the UI takes
/// every frame. Returns the per-frame outputs with their times.
struct Sim {
    s: StreamSmoother,
    t0: Instant,
    now: Instant,
    frames: Vec<(Duration, String)>,
}

impl Sim {
    fn new(cfg: SmootherConfig) -> Self {
        let t0 = Instant::now();
        Self {
            s: StreamSmoother::new(cfg, t0),
            t0,
            now: t0,
            frames: Vec::new(),
        }
    }

    /// Run frames until `until`, pushing `arrivals` (sorted) when due.
    fn run(&mut self, arrivals: &mut std::collections::VecDeque<(Duration, String)>, until: Duration) {
        loop {
            let next_frame = self.now + FRAME;
            while let Some((at, _)) = arrivals.front() {
                if self.t0 + *at <= next_frame {
                    let (at, text) = arrivals.pop_front().unwrap();
                    self.s.push(&text, self.t0 + at);
                } else {
                    break;
                }
            }
            self.now = next_frame;
            let out = self.s.take(self.now);
            self.frames.push((self.now - self.t0, out));
            if self.now - self.t0 >= until {
                break;
            }
        }
    }

    fn output(&self) -> String {
        self.frames.iter().map(|(_, s)| s.as_str()).collect()
    }

    fn chars_between(&self, from: Duration, to: Duration) -> usize {
        self.frames
            .iter()
            .filter(|(t, _)| *t > from && *t <= to)
            .map(|(_, s)| s.chars().count())
            .sum()
    }
}

fn text_of(n: usize, seed: usize) -> String {
    (0..n).map(|i| char::from(b'a' + ((i + seed) % 26) as u8)).collect()
}

#[test]
fn steady_input_converges_to_input_rate_and_target_buffer() {
    let mut sim = Sim::new(SmootherConfig::default());
    // 40 chars every 50 ms = 800 chars/s for 20 s.
    let mut arrivals: std::collections::VecDeque<_> =
        (1..=400u64).map(|i| (ms(i * 50), text_of(40, i as usize))).collect();
    let mut buffers = Vec::new();
    for second in 1..=20u64 {
        sim.run(&mut arrivals, Duration::from_secs(second));
        if second > 10 {
            buffers.push(sim.s.buffered_chars());
        }
    }
    let rate = sim.chars_between(Duration::from_secs(10), Duration::from_secs(20)) as f64 / 10.0;
    assert!((rate - 800.0).abs() < 800.0 * 0.03, "output rate {rate}");
    assert!(
        (sim.s.input_rate() - 800.0).abs() < 800.0 * 0.03,
        "estimate {}",
        sim.s.input_rate()
    );
    // Target is 0.5 s × 800 = 400 chars; samples vary by one 40-char chunk.
    for b in &buffers {
        assert!((*b as f64 - 400.0).abs() <= 60.0, "buffer {b} in {buffers:?}");
    }
    // Smooth: after warm-up every frame shows 800 × 0.016 ≈ 12.8 chars ± a little.
    for (t, s) in &sim.frames {
        if *t > Duration::from_secs(5) {
            let n = s.chars().count();
            assert!((10..=16).contains(&n), "frame at {t:?} has {n} chars");
        }
    }
}

#[test]
fn first_text_appears_on_the_first_frame() {
    let t0 = Instant::now();
    let mut s = StreamSmoother::new(SmootherConfig::default(), t0);
    // A slow first token after 2 s of waiting.
    s.push("Hello", t0 + Duration::from_secs(2));
    assert_eq!(
        s.next_wake(t0 + Duration::from_secs(2)),
        Some(t0 + Duration::from_secs(2))
    );
    let first = s.take(t0 + Duration::from_secs(2));
    assert_eq!(first, "H");
    // The rest of the first chunk follows within a few frames, well before ½ s.
    let mut got = first;
    let mut now = t0 + Duration::from_secs(2);
    for _ in 0..10 {
        now += FRAME;
        got.push_str(&s.take(now));
    }
    assert_eq!(got, "Hello");
}

#[test]
fn bursty_input_is_smoothed_across_frames() {
    let mut sim = Sim::new(SmootherConfig::default());
    // A 400-char burst every second for 20 s (average 400 chars/s).
    let mut arrivals: std::collections::VecDeque<_> = (0..20u64)
        .map(|i| (ms(100 + i * 1000), text_of(400, i as usize)))
        .collect();
    sim.run(&mut arrivals, Duration::from_secs(20));
    let avg_per_frame = 400.0 * FRAME.as_secs_f64(); // 6.4
    let max = sim.frames.iter().map(|(_, s)| s.chars().count()).max().unwrap_or(0);
    assert!(
        max as f64 <= 2.5 * avg_per_frame,
        "max frame {max} vs average {avg_per_frame}"
    );
    // After warm-up the display never stops between bursts.
    for (t, s) in &sim.frames {
        if *t > Duration::from_secs(3) && *t < Duration::from_secs(19) {
            assert!(!s.is_empty(), "empty frame at {t:?}");
        }
    }
    assert!(
        (sim.s.input_rate() - 400.0).abs() < 10.0,
        "estimate {}",
        sim.s.input_rate()
    );
}

#[test]
fn jittery_chunking_gives_smooth_frames() {
    // 600 chars/s on average, delivered in random lumps at random times.
    let mut rng = Rng(0x5eed);
    let mut arrivals = std::collections::VecDeque::new();
    let mut t = 0u64;
    let mut sent = 0usize;
    while t < 20_000 {
        let gap = 1 + rng.below(200);
        t += gap;
        let due = (t as usize * 600) / 1000;
        if due > sent {
            arrivals.push_back((ms(t), text_of(due - sent, sent)));
            sent = due;
        }
    }
    let mut sim = Sim::new(SmootherConfig::default());
    sim.run(&mut arrivals, Duration::from_secs(20));
    let late: Vec<usize> = sim
        .frames
        .iter()
        .filter(|(t, _)| *t > Duration::from_secs(5))
        .map(|(_, s)| s.chars().count())
        .collect();
    let avg = 600.0 * FRAME.as_secs_f64(); // 9.6
    let max = late.iter().copied().max().unwrap_or(0);
    let min = late.iter().copied().min().unwrap_or(0);
    assert!(
        max as f64 <= 2.0 * avg && min >= 3,
        "frames between {min} and {max}, average {avg}"
    );
}

#[test]
fn stalled_input_drains_at_a_slowing_rate_then_sleeps() {
    let mut sim = Sim::new(SmootherConfig::default());
    let mut arrivals: std::collections::VecDeque<_> =
        (1..=100u64).map(|i| (ms(i * 50), text_of(40, i as usize))).collect();
    sim.run(&mut arrivals, ms(5_000));
    let before = sim.s.buffered_chars();
    assert!(before > 200, "buffer {before}");
    sim.run(&mut arrivals, ms(8_000));
    assert_eq!(sim.s.buffered_chars(), 0);
    assert_eq!(sim.s.next_wake(sim.now), None);
    assert!(!sim.s.is_done());
    assert_eq!(sim.s.take(sim.now), "");
    // The drain slowed down: the last 100 ms released less than the first 100 ms.
    let drained: Vec<(Duration, usize)> = sim
        .frames
        .iter()
        .filter(|(t, s)| *t > ms(5_000) && !s.is_empty())
        .map(|(t, s)| (*t, s.chars().count()))
        .collect();
    let end = drained.last().map(|(t, _)| *t).unwrap_or_default();
    let first: usize = drained.iter().filter(|(t, _)| *t <= ms(5_100)).map(|(_, n)| n).sum();
    let last: usize = drained.iter().filter(|(t, _)| *t + ms(100) > end).map(|(_, n)| n).sum();
    assert!(last < first, "first 100 ms {first}, last 100 ms {last}");
    assert_eq!(sim.output().len(), 100 * 40);

    // Input resumes: it continues at once, without a lump.
    let resume = sim.now + ms(10);
    arrivals.extend((0..40u64).map(|i| (resume - sim.t0 + ms(i * 50), text_of(40, i as usize))));
    let start = sim.frames.len();
    sim.run(&mut arrivals, resume - sim.t0 + Duration::from_secs(2));
    let after: Vec<usize> = sim.frames[start..].iter().map(|(_, s)| s.chars().count()).collect();
    assert!(after.iter().take(3).sum::<usize>() > 0, "resumed output {after:?}");
    assert!(after.iter().all(|n| *n <= 20), "resumed output {after:?}");
}

#[test]
fn finish_flushes_promptly() {
    let cfg = SmootherConfig::default();
    let end_flush = cfg.end_flush;
    let mut sim = Sim::new(cfg);
    let mut arrivals: std::collections::VecDeque<_> =
        (1..=60u64).map(|i| (ms(i * 50), text_of(40, i as usize))).collect();
    sim.run(&mut arrivals, ms(3_000));
    assert!(sim.s.buffered_chars() > 200);
    let finished_at = sim.now;
    sim.s.finish(finished_at);
    assert!(!sim.s.is_done());
    sim.run(&mut arrivals, finished_at - sim.t0 + end_flush + FRAME);
    assert_eq!(sim.s.buffered_chars(), 0);
    assert!(sim.s.is_done());
    assert_eq!(sim.s.next_wake(sim.now), None);
    assert_eq!(sim.output().len(), 60 * 40);
    // Not all in one frame either: spread over the flush window.
    let max = sim.frames.iter().map(|(_, s)| s.len()).max().unwrap_or(0);
    assert!(max < 200, "largest frame {max}");
}

#[test]
fn finish_with_zero_end_flush_releases_everything_at_once() {
    let t0 = Instant::now();
    let cfg = SmootherConfig {
        end_flush: Duration::ZERO,
        ..SmootherConfig::default()
    };
    let mut s = StreamSmoother::new(cfg, t0);
    s.push(&text_of(1000, 0), t0);
    s.finish(t0);
    assert_eq!(s.next_wake(t0), Some(t0));
    assert_eq!(s.take(t0).len(), 1000);
    assert!(s.is_done());
}

#[test]
fn flush_all_returns_exactly_the_rest() {
    let t0 = Instant::now();
    let mut s = StreamSmoother::new(SmootherConfig::default(), t0);
    let input = "héllo wörld — 你好，世界 👩‍👩‍👧 🇯🇵 and more text to keep it buffered";
    s.push(input, t0);
    let mut shown = s.take(t0 + ms(16));
    shown.push_str(&s.take(t0 + ms(32)));
    assert!(!shown.is_empty() && shown.len() < input.len());
    let rest = s.flush_all();
    assert_eq!(format!("{shown}{rest}"), input);
    assert_eq!(s.buffered_chars(), 0);
    assert_eq!(s.next_wake(t0 + ms(40)), None);
    assert_eq!(s.flush_all(), "");
    assert!(!s.is_done());
}

#[test]
fn multibyte_text_is_released_in_whole_graphemes() {
    let t0 = Instant::now();
    let mut s = StreamSmoother::new(SmootherConfig::default(), t0);
    let piece = "日本語のテキスト👨‍👩‍👧‍👦🇫🇷e\u{301}😀한국어";
    let input: String = std::iter::repeat_n(piece, 30).collect();
    let boundaries: std::collections::HashSet<usize> = input
        .grapheme_indices(true)
        .map(|(i, _)| i)
        .chain([input.len()])
        .collect();
    // Push whole pieces at 20 Hz; take every frame.
    let mut now = t0;
    let mut out = String::new();
    for i in 0..400u64 {
        now = t0 + FRAME * i as u32;
        if i % 3 == 0 && (i / 3) < 30 {
            s.push(piece, now);
        }
        if i == 95 {
            s.finish(now);
        }
        let got = s.take(now);
        out.push_str(&got);
        assert!(boundaries.contains(&out.len()), "split a grapheme after {out:?}");
    }
    assert_eq!(out, input);
    assert!(s.is_done());
    assert_eq!(s.next_wake(now), None);
}

#[test]
fn output_always_equals_input_over_random_chunkings() {
    let alphabet: Vec<char> = "abc xyz\n日本語é\u{301}😀👩‍👧🇯🇵".chars().collect();
    for seed in 1..=60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let t0 = Instant::now();
        let mut s = StreamSmoother::new(SmootherConfig::default(), t0);
        let mut now = t0;
        let mut input = String::new();
        let mut out = String::new();
        let pushes = 1 + rng.below(80);
        for _ in 0..pushes {
            now += ms(rng.below(300));
            let len = rng.below(60) as usize;
            let chunk: String = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            input.push_str(&chunk);
            s.push(&chunk, now);
            // Sometimes several frames, sometimes none, before the next push.
            for _ in 0..rng.below(4) {
                now += ms(1 + rng.below(40));
                out.push_str(&s.take(now));
            }
            assert_eq!(out.chars().count() + s.buffered_chars(), input.chars().count());
        }
        match rng.below(3) {
            0 => out.push_str(&s.flush_all()),
            _ => {
                s.finish(now);
                // Event-driven: wake only when next_wake says so.
                let mut wakes = 0;
                while let Some(at) = s.next_wake(now) {
                    assert!(at >= now);
                    now = at;
                    out.push_str(&s.take(now));
                    wakes += 1;
                    assert!(wakes < 100_000, "seed {seed}: next_wake does not make progress");
                }
                assert!(s.is_done());
            }
        }
        assert_eq!(out, input, "seed {seed}");
    }
}

#[test]
fn next_wake_is_exact_for_an_event_driven_loop() {
    let t0 = Instant::now();
    let mut s = StreamSmoother::new(SmootherConfig::default(), t0);
    assert_eq!(s.next_wake(t0), None);
    s.push(&text_of(300, 0), t0);
    let mut now = t0;
    let mut out = String::new();
    let mut empty = 0;
    while let Some(at) = s.next_wake(now) {
        now = at;
        let got = s.take(now);
        if got.is_empty() {
            empty += 1;
        }
        out.push_str(&got);
    }
    assert_eq!(out, text_of(300, 0));
    assert_eq!(empty, 0, "a wake released nothing");
    // Without finish, a stalled 300-char buffer still drains within max_lag.
    assert!(now - t0 < Duration::from_secs(3), "took {:?}", now - t0);
}

#[test]
fn same_instant_pushes_count_like_one_push() {
    let t0 = Instant::now();
    let mut a = StreamSmoother::new(SmootherConfig::default(), t0);
    let mut b = StreamSmoother::new(SmootherConfig::default(), t0);
    for i in 0..40u64 {
        let at = t0 + ms(100 * i);
        a.push(&text_of(40, 0), at);
        for _ in 0..4 {
            b.push(&text_of(10, 0), at);
        }
    }
    assert!((a.input_rate() - b.input_rate()).abs() < 0.05 * a.input_rate());
    assert!((a.input_rate() - 400.0).abs() < 40.0, "estimate {}", a.input_rate());
}

#[test]
fn hostile_config_and_clock_do_not_panic() {
    let t0 = Instant::now();
    let cfg = SmootherConfig {
        target_buffer: Duration::MAX,
        end_flush: Duration::MAX,
        initial_rate: f64::NAN,
        rate_prior: -1.0,
        rate_time_constant: 0.0,
        stall_gap: Duration::ZERO,
        gain: f64::INFINITY,
        min_rate: -5.0,
        max_rate: 0.0,
        max_speedup: f64::NAN,
        max_lag: Duration::ZERO,
    };
    let mut s = StreamSmoother::new(cfg, t0 + Duration::from_secs(10));
    s.push("abc", t0); // earlier than `new`
    let mut out = s.take(t0);
    let _ = s.next_wake(t0);
    s.push("日本", t0 + Duration::from_secs(20));
    s.finish(t0 + Duration::from_secs(21));
    let _ = s.next_wake(t0);
    out.push_str(&s.take(t0 + Duration::from_secs(22)));
    out.push_str(&s.flush_all());
    assert_eq!(out, "abc日本");
}
