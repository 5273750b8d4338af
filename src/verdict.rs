//! Judges' rulings and verdicts: plain data kept in turn records, shown on
//! screen and turned into votes. A verdict combines the rulings made with the
//! participants in different orders and says whether they agree.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One ruling, with the participants in one order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ruling {
    /// Participant names in the order presented (labelled A, B, …).
    pub order: Vec<String>,
    /// The winner's name; `None` with `tie` or `error`.
    pub winner: Option<String>,
    #[serde(default)]
    pub tie: bool,
    /// Participant → criterion → score (0–10).
    #[serde(default)]
    pub scores: BTreeMap<String, BTreeMap<String, f64>>,
    #[serde(default)]
    pub reasons: String,
    /// Why this ruling could not be read (failed request, no verdict in the text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The verdict after both orders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// `model · endpoint` of the judge.
    pub judge: String,
    /// The winner when the rulings agree on one (or only one ruling could be read).
    pub winner: Option<String>,
    pub tie: bool,
    /// Whether both orders gave the same result; `None` when a ruling failed.
    pub agree: Option<bool>,
    /// Mean over the readable rulings: participant → criterion → score.
    pub scores: BTreeMap<String, BTreeMap<String, f64>>,
    pub rulings: Vec<Ruling>,
}

impl Verdict {
    /// One line for the screen and the terminal.
    pub fn summary(&self) -> String {
        let ok: Vec<&Ruling> = self.rulings.iter().filter(|r| r.error.is_none()).collect();
        let pick = |r: &Ruling| r.winner.clone().unwrap_or_else(|| "a tie".into());
        match (self.agree, ok.len()) {
            (_, 0) => "no verdict: the judge's answers could not be read".into(),
            (Some(true), _) => match &self.winner {
                Some(w) => format!("winner: {w} (both orders agree)"),
                None => "a tie (both orders agree)".into(),
            },
            (Some(false), _) => format!(
                "no clear winner: the orders disagree ({} first → {}; {} first → {})",
                ok[0].order[0],
                pick(ok[0]),
                ok[1].order[0],
                pick(ok[1])
            ),
            (None, _) => match &self.winner {
                Some(w) => format!("winner: {w} (one order only — the other ruling failed)"),
                None => "a tie (one order only — the other ruling failed)".into(),
            },
        }
    }
}

/// Combine the rulings into the verdict.
pub fn combine(judge: String, rulings: Vec<Ruling>) -> Verdict {
    let ok: Vec<&Ruling> = rulings.iter().filter(|r| r.error.is_none()).collect();
    let mut sums: BTreeMap<String, BTreeMap<String, (f64, u32)>> = BTreeMap::new();
    for r in &ok {
        for (p, per) in &r.scores {
            for (c, v) in per {
                let e = sums.entry(p.clone()).or_default().entry(c.clone()).or_insert((0.0, 0));
                e.0 += v;
                e.1 += 1;
            }
        }
    }
    let scores = sums
        .into_iter()
        .map(|(p, per)| (p, per.into_iter().map(|(c, (s, n))| (c, s / f64::from(n))).collect()))
        .collect();
    let same = |a: &Ruling, b: &Ruling| a.tie == b.tie && a.winner == b.winner;
    let (winner, tie, agree) = match ok.as_slice() {
        [] => (None, false, None),
        [one] if rulings.len() > 1 => (one.winner.clone(), one.tie, None),
        [one] => (one.winner.clone(), one.tie, Some(true)),
        [first, rest @ ..] => {
            if rest.iter().all(|r| same(first, r)) {
                (first.winner.clone(), first.tie, Some(true))
            } else {
                (None, false, Some(false))
            }
        }
    };
    Verdict {
        judge,
        winner,
        tie,
        agree,
        scores,
        rulings,
    }
}
