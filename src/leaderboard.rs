//! The ranking math behind `pai leaderboard`: Bradley–Terry strengths from
//! pairwise games, on an Elo-like scale, with bootstrap intervals. Pure
//! functions over player indices; the command (`votes_cmd`) maps models to
//! indices and votes to [`Game`]s, and does the printing.
//!
//! **Model.** Player `i` has a strength `πᵢ > 0` and beats `j` with
//! probability `πᵢ / (πᵢ + πⱼ)`. A draw counts as half a win for each side
//! (the usual convention; it keeps the likelihood a Bradley–Terry one).
//!
//! **Fit.** Maximum likelihood by the MM (minorise–maximise) iteration of
//! Zermelo and Hunter (2004): `πᵢ ← Wᵢ / Σⱼ nᵢⱼ / (πᵢ + πⱼ)`, where `Wᵢ` is
//! `i`'s score (wins plus half its draws) and `nᵢⱼ` the games between `i` and
//! `j`. Each update can only raise the likelihood; players are updated in
//! turn (Gauss–Seidel), until no centred log-strength moves by more than
//! [`TOLERANCE`].
//!
//! **Regularisation.** Plain maximum likelihood has no finite answer for a
//! player that never lost (its strength runs to infinity) or never won, and
//! none at all across groups of players that never met. So every player is
//! also credited with `prior_games` virtual *drawn* games against a reference
//! player of fixed strength 1 (rating 1000 before centring): a weak pull
//! toward the middle that a handful of real games outweighs. It keeps every
//! rating finite, makes the answer unique, and puts each group of players
//! that never met the others around the middle of the scale — their ratings
//! are comparable within a group only ([`Standing::group`] says which).
//!
//! **Scale.** `rating = 400·log10(π)`, shifted so that the mean rating is
//! 1000: a 400-point gap means 10:1 odds, as in Elo.
//!
//! **Uncertainty.** A nonparametric bootstrap: `resamples` times, draw as
//! many games as there are, with replacement, refit, and take the 2.5th and
//! 97.5th percentiles of each player's (centred) rating. The generator is a
//! SplitMix64 seeded per resample from a fixed seed, so the same games give
//! the same intervals every time.

/// How one game ended, for its `first` player.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Win,
    Draw,
    Loss,
}

/// One game between two players (indices below the player count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Game {
    pub first: usize,
    pub second: usize,
    pub outcome: Outcome,
}

impl Game {
    pub fn new(first: usize, second: usize, outcome: Outcome) -> Self {
        Game { first, second, outcome }
    }

    /// A game that says something: two different, known players.
    fn counts(&self, players: usize) -> bool {
        self.first != self.second && self.first < players && self.second < players
    }
}

/// Iteration stops when no centred log-strength moves more than this
/// (natural-log units: 1e-10 is far below a thousandth of a rating point).
pub const TOLERANCE: f64 = 1e-10;
/// The most MM sweeps one fit makes.
pub const MAX_SWEEPS: usize = 10_000;
/// The rating of the average player.
pub const MEAN_RATING: f64 = 1000.0;

/// Rating points per natural-log unit of strength: `400 / ln 10`.
const ELO_PER_LN: f64 = 400.0 / std::f64::consts::LN_10;

/// How to rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Virtual drawn games each player has against the reference player.
    /// Must be positive for finite ratings in every case; see the module notes.
    pub prior_games: f64,
    /// Bootstrap resamples for the intervals (0: no intervals — they equal the rating).
    pub resamples: usize,
    pub seed: u64,
}

impl Default for Settings {
    /// One virtual draw per player, 200 resamples, a fixed seed.
    fn default() -> Self {
        Settings {
            prior_games: 1.0,
            resamples: 200,
            seed: 0x5EED_B0A2_D000_0001,
        }
    }
}

/// One player's line of the leaderboard.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub player: usize,
    pub rating: f64,
    /// The 95% bootstrap interval.
    pub low: f64,
    pub high: f64,
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    /// Players that are linked by games (directly or through others) share a
    /// group; groups are numbered from 1 in the order of their best player.
    pub group: usize,
}

impl Standing {
    pub fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }
}

/// Scores between every pair: `points[i·n + j]` is what `i` scored against
/// `j` (1 a win, ½ a draw).
struct Tally {
    players: usize,
    points: Vec<f64>,
}

impl Tally {
    fn new(players: usize) -> Self {
        Tally {
            players,
            points: vec![0.0; players * players],
        }
    }

    fn add(&mut self, g: &Game) {
        let n = self.players;
        let (a, b) = (g.first, g.second);
        match g.outcome {
            Outcome::Win => self.points[a * n + b] += 1.0,
            Outcome::Loss => self.points[b * n + a] += 1.0,
            Outcome::Draw => {
                self.points[a * n + b] += 0.5;
                self.points[b * n + a] += 0.5;
            }
        }
    }

    fn of<'a>(players: usize, games: impl IntoIterator<Item = &'a Game>) -> Self {
        let mut t = Tally::new(players);
        for g in games {
            if g.counts(players) {
                t.add(g);
            }
        }
        t
    }
}

/// Maximum-a-posteriori log-strengths (natural log, reference player at 0).
fn fit(t: &Tally, prior_games: f64) -> Vec<f64> {
    let n = t.players;
    let prior = if prior_games.is_finite() {
        prior_games.max(0.0)
    } else {
        0.0
    };
    let mut score = vec![prior / 2.0; n];
    let mut met: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for i in 0..n {
        for j in 0..n {
            if i == j {
                continue;
            }
            score[i] += t.points[i * n + j];
            let games = t.points[i * n + j] + t.points[j * n + i];
            if games > 0.0 {
                met[i].push((j, games));
            }
        }
    }
    let mut p = vec![1.0_f64; n];
    let mut before = vec![0.0_f64; n];
    for _ in 0..MAX_SWEEPS {
        before.copy_from_slice(&p);
        for i in 0..n {
            let mut denom = prior / (p[i] + 1.0);
            for &(j, games) in &met[i] {
                denom += games / (p[i] + p[j]);
            }
            // A player with no games and no prior keeps its strength; one that
            // never scored (possible only without a prior) tends to zero.
            if denom > 0.0 {
                p[i] = (score[i] / denom).max(f64::MIN_POSITIVE);
            }
        }
        let moved: Vec<f64> = p.iter().zip(&before).map(|(a, b)| a.ln() - b.ln()).collect();
        let mean = moved.iter().sum::<f64>() / n.max(1) as f64;
        if moved.iter().all(|m| (m - mean).abs() < TOLERANCE) {
            break;
        }
    }
    p.iter().map(|x| x.ln()).collect()
}

/// Log-strengths → ratings with mean [`MEAN_RATING`].
fn to_ratings(log_strengths: &[f64]) -> Vec<f64> {
    let n = log_strengths.len().max(1) as f64;
    let mean = log_strengths.iter().sum::<f64>() / n;
    log_strengths
        .iter()
        .map(|l| MEAN_RATING + ELO_PER_LN * (l - mean))
        .collect()
}

/// Bradley–Terry ratings (mean 1000) of `players` players from `games`.
/// Games of a player against itself, or naming an unknown player, are ignored.
pub fn ratings(players: usize, games: &[Game], prior_games: f64) -> Vec<f64> {
    to_ratings(&fit(&Tally::of(players, games), prior_games))
}

/// Connected groups: `group[i]` is the same for players linked by games.
/// Numbers are arbitrary but dense from 0.
pub fn groups(players: usize, games: &[Game]) -> Vec<usize> {
    let mut parent: Vec<usize> = (0..players).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for g in games.iter().filter(|g| g.counts(players)) {
        let (a, b) = (root(&mut parent, g.first), root(&mut parent, g.second));
        if a != b {
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut label = vec![usize::MAX; players];
    let mut next = 0;
    (0..players)
        .map(|i| {
            let r = root(&mut parent, i);
            if label[r] == usize::MAX {
                label[r] = next;
                next += 1;
            }
            label[r]
        })
        .collect()
}

/// SplitMix64 (Steele, Lea and Flood): tiny, fast, and good enough to draw
/// bootstrap samples.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (multiply-shift; the bias is below 2⁻³² for any
    /// realistic `n`).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// The `q` quantile of sorted values, interpolating between neighbours.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        len => {
            let at = q.clamp(0.0, 1.0) * (len - 1) as f64;
            let lo = at.floor() as usize;
            let hi = (lo + 1).min(len - 1);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo as f64)
        }
    }
}

/// Ratings of `resamples` bootstrap resamples: `out[i]` holds player `i`'s,
/// sorted. Resample `k` draws from its own generator (seeded from `seed` and
/// `k`), so the result does not depend on how the work is split.
fn bootstrap(players: usize, games: &[Game], settings: &Settings) -> Vec<Vec<f64>> {
    let mut out: Vec<Vec<f64>> = vec![Vec::with_capacity(settings.resamples); players];
    if games.is_empty() {
        return out;
    }
    let mut tally = Tally::new(players);
    for k in 0..settings.resamples {
        let mut rng = SplitMix64(settings.seed ^ (k as u64).wrapping_mul(0xA24B_AED4_963E_E407));
        tally.points.iter_mut().for_each(|p| *p = 0.0);
        for _ in 0..games.len() {
            tally.add(&games[rng.below(games.len())]);
        }
        for (i, r) in to_ratings(&fit(&tally, settings.prior_games)).into_iter().enumerate() {
            out[i].push(r);
        }
    }
    for v in &mut out {
        v.sort_by(f64::total_cmp);
    }
    out
}

/// The leaderboard: every player that played at least one counted game, best
/// first (equal ratings by index), with ratings, 95% intervals, records and
/// groups. Players that never played are left out.
pub fn rank(players: usize, games: &[Game], settings: &Settings) -> Vec<Standing> {
    let counted: Vec<Game> = games.iter().copied().filter(|g| g.counts(players)).collect();
    let mut record = vec![(0u32, 0u32, 0u32); players];
    for g in &counted {
        let (a, b) = (g.first, g.second);
        match g.outcome {
            Outcome::Win => {
                record[a].0 += 1;
                record[b].2 += 1;
            }
            Outcome::Draw => {
                record[a].1 += 1;
                record[b].1 += 1;
            }
            Outcome::Loss => {
                record[a].2 += 1;
                record[b].0 += 1;
            }
        }
    }
    let played: Vec<usize> = (0..players)
        .filter(|&i| record[i].0 + record[i].1 + record[i].2 > 0)
        .collect();
    // Fit only the players that played (so the mean is theirs), re-indexed.
    let mut index = vec![usize::MAX; players];
    for (k, &i) in played.iter().enumerate() {
        index[i] = k;
    }
    let local: Vec<Game> = counted
        .iter()
        .map(|g| Game::new(index[g.first], index[g.second], g.outcome))
        .collect();
    let m = played.len();
    let point = ratings(m, &local, settings.prior_games);
    let spread = bootstrap(m, &local, settings);
    let group = groups(m, &local);
    let mut table: Vec<Standing> = (0..m)
        .map(|k| {
            let (wins, draws, losses) = record[played[k]];
            let (low, high) = if spread[k].is_empty() {
                (point[k], point[k])
            } else {
                (quantile(&spread[k], 0.025), quantile(&spread[k], 0.975))
            };
            Standing {
                player: played[k],
                rating: point[k],
                low,
                high,
                wins,
                draws,
                losses,
                group: group[k],
            }
        })
        .collect();
    table.sort_by(|a, b| b.rating.total_cmp(&a.rating).then(a.player.cmp(&b.player)));
    // Number groups 1, 2, … in the order of their best player.
    let mut renumber = vec![0usize; m];
    let mut next = 0;
    for s in &mut table {
        if renumber[s.group] == 0 {
            next += 1;
            renumber[s.group] = next;
        }
        s.group = renumber[s.group];
    }
    table
}

#[cfg(test)]
#[path = "leaderboard_tests.rs"]
mod tests;
