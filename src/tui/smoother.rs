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
#[path = "smoother_tests.rs"]
mod tests;
