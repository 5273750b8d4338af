//! The ranking math on small cases whose answers are known.

use super::*;

fn games(first: usize, second: usize, wins: usize, draws: usize, losses: usize) -> Vec<Game> {
    let mut v = Vec::new();
    v.extend((0..wins).map(|_| Game::new(first, second, Outcome::Win)));
    v.extend((0..draws).map(|_| Game::new(first, second, Outcome::Draw)));
    v.extend((0..losses).map(|_| Game::new(first, second, Outcome::Loss)));
    v
}

/// Rating gap for strength ratio `r`.
fn gap(r: f64) -> f64 {
    400.0 * r.log10()
}

fn no_bootstrap(prior_games: f64) -> Settings {
    Settings {
        prior_games,
        resamples: 0,
        ..Settings::default()
    }
}

#[test]
fn three_wins_to_one_is_a_strength_ratio_of_three() {
    // Without a prior the maximum-likelihood ratio is exactly 3:1.
    let r = ratings(2, &games(0, 1, 3, 0, 1), 1e-12);
    assert!((r[0] - r[1] - gap(3.0)).abs() < 1e-3, "{r:?}");
    assert!(((r[0] + r[1]) / 2.0 - 1000.0).abs() < 1e-9, "{r:?}");
    // The default prior pulls toward the middle a little, no more.
    let r = ratings(2, &games(0, 1, 3, 0, 1), Settings::default().prior_games);
    let d = r[0] - r[1];
    assert!(d > 0.5 * gap(3.0) && d < gap(3.0), "{d}");
    // With many games the prior hardly matters.
    let r = ratings(2, &games(0, 1, 300, 0, 100), Settings::default().prior_games);
    assert!((r[0] - r[1] - gap(3.0)).abs() < 2.0, "{r:?}");
}

#[test]
fn draws_count_half_a_win_each_way() {
    // 2 wins, 2 draws, 0 losses = 3 points to 1: the same as 3–1.
    let a = ratings(2, &games(0, 1, 2, 2, 0), 1e-12);
    let b = ratings(2, &games(0, 1, 3, 0, 1), 1e-12);
    assert!((a[0] - b[0]).abs() < 1e-3, "{a:?} {b:?}");
}

#[test]
fn sides_and_labels_do_not_matter() {
    let forward = games(0, 1, 5, 1, 2);
    // The same games written from the other side.
    let flipped: Vec<Game> = forward
        .iter()
        .map(|g| {
            let outcome = match g.outcome {
                Outcome::Win => Outcome::Loss,
                Outcome::Draw => Outcome::Draw,
                Outcome::Loss => Outcome::Win,
            };
            Game::new(g.second, g.first, outcome)
        })
        .collect();
    assert_eq!(ratings(2, &forward, 1.0), ratings(2, &flipped, 1.0));
    // Relabelled players get the same ratings.
    let relabelled: Vec<Game> = forward
        .iter()
        .map(|g| Game::new(1 - g.first, 1 - g.second, g.outcome))
        .collect();
    let (a, b) = (ratings(2, &forward, 1.0), ratings(2, &relabelled, 1.0));
    assert!((a[0] - b[1]).abs() < 1e-6 && (a[1] - b[0]).abs() < 1e-6, "{a:?} {b:?}");
    // An even record is an even rating, on the mean.
    let even = ratings(2, &games(0, 1, 4, 0, 4), 1.0);
    assert!(
        (even[0] - 1000.0).abs() < 1e-6 && (even[1] - 1000.0).abs() < 1e-6,
        "{even:?}"
    );
}

#[test]
fn all_draws_give_equal_ratings() {
    let mut g = games(0, 1, 0, 5, 0);
    g.extend(games(1, 2, 0, 3, 0));
    g.extend(games(0, 2, 0, 1, 0));
    for r in ratings(3, &g, 1.0) {
        assert!((r - 1000.0).abs() < 1e-6, "{r}");
    }
}

#[test]
fn a_transitive_order_is_recovered() {
    let mut g = games(0, 1, 7, 0, 3); // A beats B
    g.extend(games(1, 2, 7, 0, 3)); // B beats C
    g.extend(games(2, 0, 2, 0, 8)); // C loses to A
    let r = ratings(3, &g, 1.0);
    assert!(r[0] > r[1] && r[1] > r[2], "{r:?}");
    let table = rank(3, &g, &no_bootstrap(1.0));
    let order: Vec<usize> = table.iter().map(|s| s.player).collect();
    assert_eq!(order, vec![0, 1, 2]);
    assert_eq!(
        (table[0].wins, table[0].draws, table[0].losses),
        (15, 0, 5),
        "A: 7 over B, 8 over C"
    );
    assert_eq!((table[2].wins, table[2].losses), (5, 15));
    assert!(table.iter().all(|s| s.group == 1));
}

#[test]
fn an_undefeated_or_winless_player_stays_finite() {
    let r = ratings(2, &games(0, 1, 10, 0, 0), Settings::default().prior_games);
    assert!(r.iter().all(|x| x.is_finite()), "{r:?}");
    assert!(r[0] > r[1] && r[0] - r[1] < 1000.0, "{r:?}");
    // More wins, more confidence: the gap grows but stays finite.
    let more = ratings(2, &games(0, 1, 100, 0, 0), Settings::default().prior_games);
    assert!(
        more[0] - more[1] > r[0] - r[1] && (more[0] - more[1]).is_finite(),
        "{more:?}"
    );
    // And in a larger field.
    let mut g = games(0, 1, 4, 0, 0);
    g.extend(games(0, 2, 3, 0, 0));
    g.extend(games(1, 2, 2, 1, 1));
    let table = rank(3, &g, &Settings::default());
    for s in &table {
        assert!(s.rating.is_finite() && s.low.is_finite() && s.high.is_finite(), "{s:?}");
    }
    assert_eq!(table[0].player, 0);
}

#[test]
fn groups_that_never_met_are_told_apart_and_stay_finite() {
    let mut g = games(0, 1, 3, 0, 1);
    g.extend(games(2, 3, 1, 0, 3));
    assert_eq!(groups(4, &g), vec![0, 0, 1, 1]);
    let table = rank(4, &g, &Settings::default());
    assert!(table.iter().all(|s| s.rating.is_finite()));
    let group_of = |p: usize| table.iter().find(|s| s.player == p).map(|s| s.group);
    assert_eq!(group_of(0), group_of(1));
    assert_eq!(group_of(2), group_of(3));
    assert_ne!(group_of(0), group_of(2));
    // Groups are numbered from 1, best player first.
    assert_eq!(table[0].group, 1);
    // Mirror-image groups get mirror-image ratings around the mean.
    let r = ratings(4, &g, 1.0);
    assert!((r[0] - r[3]).abs() < 1e-6 && (r[1] - r[2]).abs() < 1e-6, "{r:?}");
}

#[test]
fn self_games_unknown_players_and_absent_players_are_ignored() {
    let mut g = games(0, 1, 3, 0, 1);
    g.push(Game::new(1, 1, Outcome::Win));
    g.push(Game::new(0, 7, Outcome::Win));
    let table = rank(3, &g, &no_bootstrap(1.0));
    // Player 2 never played: not on the board.
    assert_eq!(table.len(), 2);
    assert_eq!(table[0].games() + table[1].games(), 8);
    assert!(((table[0].rating + table[1].rating) / 2.0 - 1000.0).abs() < 1e-9);
    assert!(rank(3, &[], &Settings::default()).is_empty());
}

#[test]
fn intervals_hold_the_rating_and_shrink_with_more_games() {
    let width = |n: usize| {
        let table = rank(2, &games(0, 1, 3 * n, 0, n), &Settings::default());
        let best = &table[0];
        assert!(best.low <= best.rating && best.rating <= best.high, "{best:?}");
        best.high - best.low
    };
    let (few, some, many) = (width(2), width(20), width(200));
    assert!(few > some && some > many, "{few} {some} {many}");
    assert!(many > 0.0);
}

#[test]
fn the_bootstrap_is_deterministic() {
    let mut g = games(0, 1, 6, 2, 3);
    g.extend(games(1, 2, 4, 1, 4));
    g.extend(games(0, 2, 5, 0, 2));
    let s = Settings::default();
    assert_eq!(rank(3, &g, &s), rank(3, &g, &s));
    let other = rank(3, &g, &Settings { seed: 7, ..s });
    assert_ne!(rank(3, &g, &s), other, "another seed, other resamples");
    // Point ratings do not depend on the seed.
    let a = rank(3, &g, &s);
    for x in &a {
        let y = other.iter().find(|o| o.player == x.player).map(|o| o.rating);
        assert_eq!(Some(x.rating), y);
    }
}

#[test]
fn quantiles_interpolate() {
    let v: Vec<f64> = (0..=100).map(f64::from).collect();
    assert_eq!(quantile(&v, 0.025), 2.5);
    assert_eq!(quantile(&v, 0.975), 97.5);
    assert_eq!(quantile(&[4.0], 0.5), 4.0);
    assert!(quantile(&[], 0.5).is_nan());
}

#[test]
fn the_generator_is_uniform_enough() {
    let mut rng = SplitMix64(1);
    let mut counts = [0usize; 10];
    for _ in 0..100_000 {
        counts[rng.below(10)] += 1;
    }
    assert!(counts.iter().all(|&c| (9_500..10_500).contains(&c)), "{counts:?}");
}
