//! The stream smoother behind `/smooth`: decouples how fast text appears on
//! screen from how jittery the network delivers it.
//!
//! Owns one pure, deterministic state machine, [`StreamSmoother`]. The clock is
//! injected — every method that depends on time takes `now` — so there are no
//! timers, threads or globals here, and tests drive it with a simulated clock.
//! The UI loop pushes network text in with [`StreamSmoother::push`], draws what
//! [`StreamSmoother::take`] returns each frame, and sleeps until
//! [`StreamSmoother::next_wake`] (which is `None` when nothing is buffered, so an
//! idle UI does not tick).
//!
//! # Control law
//!
//! * **Input rate** `r_in` (chars/s) is an EWMA over arrival intervals: a push
//!   of `n` chars `dt` after the previous one is the sample `n / dt`, blended in
//!   with weight `w = max(1 − e^(−dt/τ), dt / (observed + prior))`. Weighting by
//!   the interval (not per push) makes the estimate independent of how the
//!   network chunks the text — many pushes at the same instant add `n/τ` each,
//!   exactly like one bigger push. The second term is a warm-up: until about `τ`
//!   of stream has been observed the estimate is the plain average rate so far,
//!   with [`SmootherConfig::initial_rate`] counted as `rate_prior` seconds of
//!   history so one early burst cannot fake a huge rate. Gaps longer than
//!   `stall_gap` are pauses, not rate samples: the estimate is kept across them.
//! * **Display rate** is feed-forward plus a proportional controller on the
//!   buffer, measured in seconds at the input rate:
//!   `r = r_in · (1 + k · (buffer/r_in − target))` = `r_in + k · (buffer − r_in·target)`.
//!   With an exact `r_in` the buffer settles at `target` (½ s); `k = 1/s` means
//!   errors decay with a 1 s time constant, slow enough that a burst is spread
//!   over the following second instead of being printed at once.
//! * **Clamps**: `r ≥ min_rate` (never stalls while text is buffered),
//!   `r ≤ min(max_speedup · r_in, max_rate)` (a burst is never dumped), and
//!   `r ≥ buffer / max_lag` (whatever the estimate says, display never lags the
//!   network by more than `max_lag`; this floor wins over the ceiling).
//! * **Stall**: with no input the buffer drains at a slowing rate (`r` falls
//!   towards `r_in · (1 − k·target)` = ½ `r_in` as the buffer empties) and output
//!   stops when it is empty. Credit cannot be banked while the buffer is empty,
//!   so resumed input continues at the controlled rate rather than in a lump.
//! * **First text**: the very first push releases its first grapheme on the next
//!   `take` (the credit is primed), and the rest follows at the controlled rate.
//!   The smoother never waits for the buffer to fill: below target it merely
//!   prints a little slower than the input (at least ½ `r_in`), so the buffer
//!   builds up over the first second while text is already flowing.
//! * **Finish**: the remaining buffer drains linearly so that it is all out by
//!   `finish + end_flush` (at the latest; the normal rate is used if faster).
//!
//! The rate is held constant between events (push, take, finish) and evaluated
//! after each, so [`StreamSmoother::next_wake`] is exact. Release happens in
//! whole grapheme clusters (never a split UTF-8 char) with fractional progress
//! carried between calls. A cluster that the network splits across two pushes
//! (say an emoji ZWJ sequence) may be released in two parts; the concatenated
//! output is still exactly the input.

use std::time::{Duration, Instant};

use unicode_segmentation::UnicodeSegmentation;

/// Tuning for [`StreamSmoother`]. Rates are in chars (Unicode scalar values) per
/// second. [`Default`] holds the values described in the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct SmootherConfig {
    /// How much text (in time at the input rate) the smoother keeps buffered.
    pub target_buffer: Duration,
    /// After [`StreamSmoother::finish`], everything is out within this long.
    pub end_flush: Duration,
    /// The rate assumed before any interval has been measured.
    pub initial_rate: f64,
    /// How many seconds of history `initial_rate` counts for during warm-up.
    pub rate_prior: f64,
    /// Time constant (seconds) of the input-rate EWMA.
    pub rate_time_constant: f64,
    /// Arrival gaps longer than this are pauses, not rate samples.
    pub stall_gap: Duration,
    /// Proportional gain `k` (1/s) on the buffer error in seconds.
    pub gain: f64,
    /// The display rate never drops below this while text is buffered.
    pub min_rate: f64,
    /// The display rate never exceeds this absolute ceiling (unless `max_lag` needs it).
    pub max_rate: f64,
    /// The display rate never exceeds this multiple of the input rate (unless `max_lag` needs it).
    pub max_speedup: f64,
    /// Buffered text is always printed within about this long.
    pub max_lag: Duration,
}

impl Default for SmootherConfig {
    fn default() -> Self {
        Self {
            target_buffer: Duration::from_millis(500),
            end_flush: Duration::from_millis(150),
            initial_rate: 200.0,
            rate_prior: 0.25,
            rate_time_constant: 2.0,
            stall_gap: Duration::from_secs(2),
            gain: 1.0,
            min_rate: 20.0,
            max_rate: 10_000.0,
            max_speedup: 3.0,
            max_lag: Duration::from_secs(3),
        }
    }
}

impl SmootherConfig {
    /// Replace non-finite or out-of-range numbers by the defaults (or a safe
    /// bound) so that no configuration can make the smoother stall or panic.
    fn sanitized(self) -> Self {
        let d = Self::default();
        let pos = |x: f64, default: f64| if x.is_finite() && x > 0.0 { x } else { default };
        let min_rate = pos(self.min_rate, d.min_rate);
        let max_rate = pos(self.max_rate, d.max_rate).max(min_rate);
        Self {
            target_buffer: self.target_buffer.min(Duration::from_secs(60)),
            end_flush: self.end_flush.min(Duration::from_secs(60)),
            initial_rate: pos(self.initial_rate, d.initial_rate).clamp(min_rate, max_rate),
            rate_prior: if self.rate_prior.is_finite() && self.rate_prior >= 0.0 {
                self.rate_prior
            } else {
                d.rate_prior
            },
            rate_time_constant: pos(self.rate_time_constant, d.rate_time_constant),
            stall_gap: self.stall_gap,
            gain: if self.gain.is_finite() && self.gain >= 0.0 {
                self.gain
            } else {
                d.gain
            },
            min_rate,
            max_rate,
            max_speedup: pos(self.max_speedup, d.max_speedup).max(1.0),
            max_lag: if self.max_lag.is_zero() {
                d.max_lag
            } else {
                self.max_lag.min(Duration::from_secs(3600))
            },
        }
    }
}

/// Tolerance (in chars) for float rounding when comparing credit with a grapheme.
const CREDIT_EPSILON: f64 = 1e-6;
/// Compact the buffer once this many bytes at its front have been released.
const COMPACT_AT: usize = 4096;
/// Upper bound for `next_wake` so the arithmetic can never overflow.
const MAX_WAIT: Duration = Duration::from_secs(3600);

/// Buffers streamed text and releases it at a smooth, adaptive rate. See the
/// module documentation for the control law.
#[derive(Debug, Clone)]
pub struct StreamSmoother {
    cfg: SmootherConfig,
    /// Pending text is `buf[head..]`.
    buf: String,
    head: usize,
    /// Chars in `buf[head..]`.
    buf_chars: usize,
    /// Release progress in chars not yet spent (carried between calls).
    credit: f64,
    /// Display rate (chars/s) held since `last`.
    rate: f64,
    /// Time of the last event (push, take, finish).
    last: Instant,
    /// Input-rate estimate (chars/s).
    rate_est: f64,
    /// Seconds of input covered by rate samples (for the warm-up weight).
    observed: f64,
    last_push: Option<Instant>,
    /// `Some(deadline)` once the stream has finished.
    deadline: Option<Instant>,
}

impl StreamSmoother {
    pub fn new(cfg: SmootherConfig, now: Instant) -> Self {
        let cfg = cfg.sanitized();
        Self {
            rate_est: cfg.initial_rate,
            cfg,
            buf: String::new(),
            head: 0,
            buf_chars: 0,
            credit: 0.0,
            rate: 0.0,
            last: now,
            observed: 0.0,
            last_push: None,
            deadline: None,
        }
    }

    /// Text arrived from the network.
    pub fn push(&mut self, text: &str, now: Instant) {
        if text.is_empty() {
            return;
        }
        self.advance(now);
        let n = text.chars().count();
        match self.last_push {
            None => {
                // The first text of the stream shows at once: prime the credit
                // with its first grapheme. (Time since `new` is the time to
                // first token, not a rate sample.)
                self.credit = first_grapheme_chars(text) as f64;
            }
            Some(prev) => self.sample_rate(n as f64, now.saturating_duration_since(prev)),
        }
        self.last_push = Some(now);
        self.buf.push_str(text);
        self.buf_chars += n;
        self.rate = self.compute_rate(now);
    }

    /// The stream ended: drain what is left within `end_flush`.
    pub fn finish(&mut self, now: Instant) {
        self.advance(now);
        if self.deadline.is_none() {
            self.deadline = Some(now.checked_add(self.cfg.end_flush).unwrap_or(now));
        }
        self.rate = self.compute_rate(now);
    }

    /// The text to show now (may be empty).
    pub fn take(&mut self, now: Instant) -> String {
        self.advance(now);
        let pending = &self.buf[self.head..];
        let release_all = self.deadline.is_some_and(|d| now >= d);
        let mut bytes = 0;
        let mut chars = 0;
        let mut credit = self.credit;
        for g in pending.graphemes(true) {
            let c = g.chars().count();
            if !release_all {
                if credit + CREDIT_EPSILON < c as f64 {
                    break;
                }
                credit -= c as f64;
            }
            bytes += g.len();
            chars += c;
        }
        let out = pending[..bytes].to_owned();
        self.head += bytes;
        self.buf_chars = self.buf_chars.saturating_sub(chars);
        self.credit = credit.max(0.0);
        self.after_release();
        self.rate = self.compute_rate(now);
        out
    }

    /// Everything still buffered, at once (on cancel, or when smoothing is
    /// switched off). Does not mark the stream finished.
    pub fn flush_all(&mut self) -> String {
        let out = self.buf[self.head..].to_owned();
        self.head = self.buf.len();
        self.buf_chars = 0;
        self.after_release();
        self.rate = 0.0;
        out
    }

    /// When [`take`](Self::take) would next release something: `Some(now)` if it
    /// would already, `None` when nothing is buffered (the UI can sleep until the
    /// next push). A UI should still not draw more often than its frame rate.
    pub fn next_wake(&self, now: Instant) -> Option<Instant> {
        let pending = &self.buf[self.head..];
        let need = first_grapheme_chars(pending) as f64;
        if need == 0.0 {
            return None;
        }
        if let Some(deadline) = self.deadline
            && now >= deadline
        {
            return Some(now);
        }
        let credit = self.credit_at(now);
        if credit + CREDIT_EPSILON >= need {
            return Some(now);
        }
        let wait = if self.rate > 0.0 {
            let secs = (need - credit) / self.rate;
            if secs.is_finite() && secs < MAX_WAIT.as_secs_f64() {
                // Round up to whole nanoseconds so `take` at this instant releases.
                Duration::from_nanos((secs * 1e9).ceil() as u64 + 1)
            } else {
                MAX_WAIT
            }
        } else {
            MAX_WAIT
        };
        let at = now.checked_add(wait).unwrap_or(now);
        Some(match self.deadline {
            Some(d) => at.min(d),
            None => at,
        })
    }

    /// Chars (Unicode scalar values) waiting to be shown.
    pub fn buffered_chars(&self) -> usize {
        self.buf_chars
    }

    /// Finished and fully drained.
    pub fn is_done(&self) -> bool {
        self.deadline.is_some() && self.buf_chars == 0
    }

    /// The current input-rate estimate, chars/s.
    pub fn input_rate(&self) -> f64 {
        self.rate_est
    }

    /// The display rate currently in force, chars/s (0 when nothing is buffered).
    pub fn display_rate(&self) -> f64 {
        self.rate
    }

    /// Credit that would be available at `now` at the held rate.
    fn credit_at(&self, now: Instant) -> f64 {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        (self.credit + self.rate * dt).min(self.buf_chars as f64)
    }

    /// Accrue credit at the held rate up to `now`.
    fn advance(&mut self, now: Instant) {
        if now > self.last {
            self.credit = self.credit_at(now);
            self.last = now;
        }
    }

    /// Blend the interval sample `n / dt` into the input-rate estimate.
    fn sample_rate(&mut self, n: f64, dt: Duration) {
        if dt > self.cfg.stall_gap {
            return; // a pause, not a rate sample: keep the estimate across it
        }
        let dt = dt.as_secs_f64();
        self.observed += dt;
        let tau = self.cfg.rate_time_constant;
        let history = self.observed + self.cfg.rate_prior;
        // w = max(1 − e^(−dt/τ), dt/history), and w/dt without dividing by a tiny dt.
        let (w, w_over_dt) = if dt < 1e-9 {
            (
                0.0,
                (1.0 / tau).max(if history > 0.0 { 1.0 / history } else { 1.0 / tau }),
            )
        } else {
            let ewma = -(-dt / tau).exp_m1();
            let warm = if history > 0.0 { dt / history } else { 1.0 };
            let w = ewma.max(warm).min(1.0);
            (w, w / dt)
        };
        let est = self.rate_est * (1.0 - w) + n * w_over_dt;
        if est.is_finite() {
            self.rate_est = est.clamp(self.cfg.min_rate, self.cfg.max_rate);
        }
    }

    /// The display rate for the current buffer (held until the next event).
    fn compute_rate(&self, now: Instant) -> f64 {
        let b = self.buf_chars as f64;
        if b == 0.0 {
            return 0.0;
        }
        let c = &self.cfg;
        let r_in = self.rate_est;
        let target = r_in * c.target_buffer.as_secs_f64();
        let ceiling = (r_in * c.max_speedup).min(c.max_rate).max(c.min_rate);
        let mut r = (r_in + c.gain * (b - target)).clamp(c.min_rate, ceiling);
        r = r.max(b / c.max_lag.as_secs_f64());
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(now).as_secs_f64();
            // Drain linearly to the deadline; at the deadline `take` releases all.
            if left > 0.0 {
                r = r.max((b - self.credit).max(0.0) / left);
            }
        }
        if r.is_finite() { r } else { c.max_rate }
    }

    /// Housekeeping after text left the buffer.
    fn after_release(&mut self) {
        if self.buf_chars == 0 {
            // Nothing to spend credit on: do not bank it for the next push.
            self.buf.clear();
            self.head = 0;
            self.credit = 0.0;
        } else if self.head >= COMPACT_AT && self.head * 2 >= self.buf.len() {
            self.buf.drain(..self.head);
            self.head = 0;
        }
    }
}

/// Chars in the first grapheme cluster of `s` (0 for an empty string).
fn first_grapheme_chars(s: &str) -> usize {
    s.graphemes(true).next().map_or(0, |g| g.chars().count())
}

#[cfg(test)]
mod tests {
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
}
