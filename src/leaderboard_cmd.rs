//! `pai leaderboard`: the models in the votes, ranked. Turns votes into games
//! between `model · endpoint` players (the math is in [`crate::leaderboard`])
//! and prints an aligned table or one JSON object.
//!
//! What counts: every vote by the chosen voters between two different models.
//! A left or right pick is a win; a tie is half a win each way; so is
//! both-bad (see [`outcome`]). A vote between a model and itself says nothing
//! about ranking and is left out (and counted in the notes).

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;
use unicode_width::UnicodeWidthStr;

use crate::cli::VoterArg;
use crate::config::Config;
use crate::leaderboard::{self, Game, Outcome, Settings, Standing};
use crate::sessions_cmd::{Io, one_line, pad};
use crate::store::{StoredVote, VoteChoice};
use crate::votes_cmd::{self, model_id};

const OK: i32 = 0;

/// A vote's outcome for its left side.
///
/// Both-bad counts as a tie. The ratings are relative: they say which model's
/// answers are preferred to which, not how good an answer is. "Both bad" says
/// neither answer was preferred to the other — the same thing a tie says about
/// the pair — and leaving it out would throw away the evidence that the two
/// were on a par (Chatbot Arena counts its "tie (bothbad)" as a tie too).
pub fn outcome(choice: VoteChoice) -> Outcome {
    match choice {
        VoteChoice::Left => Outcome::Win,
        VoteChoice::Right => Outcome::Loss,
        VoteChoice::Tie | VoteChoice::BothBad => Outcome::Draw,
    }
}

/// A player: model and endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Player {
    model: String,
    endpoint: String,
}

/// The votes as games, and the leaderboard they make.
struct Board {
    players: Vec<Player>,
    standings: Vec<Standing>,
    /// Votes that became games.
    counted: usize,
    ties: usize,
    both_bad: usize,
    /// Votes between a model and itself (left out).
    self_votes: usize,
    groups: usize,
}

impl Board {
    fn of(votes: &[StoredVote], settings: &Settings) -> Self {
        let mut players: Vec<Player> = Vec::new();
        let mut index: HashMap<Player, usize> = HashMap::new();
        let mut id = |model: &str, endpoint: &str| {
            let p = Player {
                model: model.to_string(),
                endpoint: endpoint.to_string(),
            };
            *index.entry(p.clone()).or_insert_with(|| {
                players.push(p);
                players.len() - 1
            })
        };
        let mut games = Vec::with_capacity(votes.len());
        let (mut ties, mut both_bad, mut self_votes) = (0, 0, 0);
        for v in votes {
            let v = &v.vote;
            let (a, b) = (
                id(&v.left.model, &v.left.endpoint),
                id(&v.right.model, &v.right.endpoint),
            );
            if a == b {
                self_votes += 1;
                continue;
            }
            match v.choice {
                VoteChoice::Tie => ties += 1,
                VoteChoice::BothBad => both_bad += 1,
                VoteChoice::Left | VoteChoice::Right => {}
            }
            games.push(Game::new(a, b, outcome(v.choice)));
        }
        let standings = leaderboard::rank(players.len(), &games, settings);
        let groups = standings.iter().map(|s| s.group).max().unwrap_or(0);
        Board {
            players,
            standings,
            counted: games.len(),
            ties,
            both_bad,
            self_votes,
            groups,
        }
    }
}

/// Run `pai leaderboard`; returns the exit code.
pub fn run(config: &Config, db: Option<&Path>, voter: VoterArg, json: bool, io: &mut Io<'_>) -> i32 {
    let loaded = match votes_cmd::load(config, db, voter, io) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let settings = Settings::default();
    let board = Board::of(&loaded.votes, &settings);
    if loaded.votes.is_empty() {
        loaded.say_none(voter, io);
    } else if board.standings.is_empty() {
        let _ = writeln!(
            io.err,
            "pai: the {} vote(s) {} in {} all compare a model with itself — nothing to rank; {}",
            loaded.votes.len(),
            votes_cmd::voters(voter),
            loaded.path.display(),
            votes_cmd::HOW_TO_VOTE
        );
    }
    if json {
        let text = serde_json::to_string_pretty(&report(&board, voter, &settings)).unwrap_or_default();
        let _ = writeln!(io.out, "{text}");
    } else if !board.standings.is_empty() {
        let _ = io.out.write_all(table(&board, voter, &settings).as_bytes());
    }
    OK
}

/// Ratings and intervals as shown: whole points.
fn plus_minus(s: &Standing) -> String {
    let up = (s.high - s.rating).max(0.0).round();
    let down = (s.rating - s.low).max(0.0).round();
    format!("+{up}/-{down}")
}

fn table(board: &Board, voter: VoterArg, settings: &Settings) -> String {
    let grouped = board.groups > 1;
    let rows: Vec<Vec<String>> = board
        .standings
        .iter()
        .enumerate()
        .map(|(rank, s)| {
            let p = &board.players[s.player];
            let mut row = vec![
                (rank + 1).to_string(),
                one_line(&model_id(&p.model, &p.endpoint)),
                format!("{:.0}", s.rating),
                plus_minus(s),
                s.games().to_string(),
                format!("{}-{}-{}", s.wins, s.draws, s.losses),
            ];
            if grouped {
                row.push(s.group.to_string());
            }
            row
        })
        .collect();
    let mut header = vec!["RANK", "MODEL", "RATING", "95% CI", "MATCHES", "W-T-L"];
    if grouped {
        header.push("GROUP");
    }
    let last = header.len() - 1;
    // Text columns are left-aligned, numbers right-aligned.
    let left = |col: usize| col == 1 || col == 3 || col == 5;
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].width())
                .chain([header[c].width()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut l = String::new();
        for (c, cell) in cells.iter().enumerate() {
            if c > 0 {
                l.push_str("  ");
            }
            if left(c) {
                l.push_str(&pad(cell, if c == last { 0 } else { widths[c] }));
            } else {
                l.push_str(&format!("{cell:>w$}", w = widths[c]));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for r in &rows {
        line(r);
    }
    out.push('\n');
    out.push_str(&format!(
        "{} vote(s) {}, {} tie(s) and {} both-bad counted as half a win each way.\n",
        board.counted,
        votes_cmd::voters(voter),
        board.ties,
        board.both_bad
    ));
    out.push_str(&format!(
        "Bradley–Terry ratings, mean 1000 (400 points = 10:1 odds); 95% CI from {} bootstrap resamples.\n",
        settings.resamples
    ));
    if grouped {
        out.push_str(&format!(
            "The models fall into {} groups that never met (GROUP): compare ratings within a group only.\n",
            board.groups
        ));
    }
    if board.self_votes > 0 {
        out.push_str(&format!(
            "Left out: {} vote(s) between a model and itself.\n",
            board.self_votes
        ));
    }
    out
}

/// `--json`.
#[derive(Serialize)]
struct Report<'a> {
    voter: &'static str,
    /// Votes that count (between two different models).
    votes: usize,
    ties: usize,
    both_bad: usize,
    self_votes_left_out: usize,
    groups: usize,
    method: Method,
    models: Vec<ModelLine<'a>>,
}

#[derive(Serialize)]
struct Method {
    model: &'static str,
    ties: &'static str,
    both_bad: &'static str,
    prior: String,
    scale: &'static str,
    interval: String,
    resamples: usize,
    seed: u64,
}

#[derive(Serialize)]
struct ModelLine<'a> {
    rank: usize,
    /// `model · endpoint`.
    id: String,
    model: &'a str,
    endpoint: &'a str,
    rating: f64,
    ci_low: f64,
    ci_high: f64,
    matches: u32,
    wins: u32,
    ties: u32,
    losses: u32,
    group: usize,
}

fn tenth(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn report<'a>(board: &'a Board, voter: VoterArg, settings: &Settings) -> Report<'a> {
    Report {
        voter: match voter {
            VoterArg::User => "user",
            VoterArg::Judge => "judge",
            VoterArg::All => "all",
        },
        votes: board.counted,
        ties: board.ties,
        both_bad: board.both_bad,
        self_votes_left_out: board.self_votes,
        groups: board.groups,
        method: Method {
            model: "bradley-terry (MM iteration)",
            ties: "half a win each way",
            both_bad: "a tie",
            prior: format!(
                "{} virtual drawn game(s) per model against a reference at the centre",
                settings.prior_games
            ),
            scale: "400·log10(strength), mean 1000",
            interval: "95% percentile bootstrap over votes".into(),
            resamples: settings.resamples,
            seed: settings.seed,
        },
        models: board
            .standings
            .iter()
            .enumerate()
            .map(|(rank, s)| {
                let p = &board.players[s.player];
                ModelLine {
                    rank: rank + 1,
                    id: model_id(&p.model, &p.endpoint),
                    model: &p.model,
                    endpoint: &p.endpoint,
                    rating: tenth(s.rating),
                    ci_low: tenth(s.low),
                    ci_high: tenth(s.high),
                    matches: s.games(),
                    wins: s.wins,
                    ties: s.draws,
                    losses: s.losses,
                    group: s.group,
                }
            })
            .collect(),
    }
}
