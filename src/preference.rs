//! Preference data: a user's pick between compare answers, or a judge's
//! verdict on an arena, turned into pairwise [`Vote`]s for the history (and
//! from there DPO pairs and the leaderboard). N answers give N−1 votes for a
//! winner (it against each other answer) and every pair for a tie or
//! "both bad".

use crate::conversation::{Message, Turn, TurnMode};
use crate::store::{Vote, VoteChoice, VoteSide};
use crate::util::time::Utc;
use crate::verdict::Verdict;

/// How the user judged compare answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preference {
    /// The answer at this position won.
    Winner(usize),
    Tie,
    BothBad,
}

fn side(t: &Turn, name: Option<String>, answer: String) -> VoteSide {
    VoteSide {
        endpoint: t.endpoint.clone(),
        model: t.model.clone(),
        name,
        turn_id: Some(t.turn_id),
        answer,
    }
}

/// Index pairs (left < right) with the choice, for `n` contenders.
fn pairs(n: usize, p: Preference) -> Vec<(usize, usize, VoteChoice)> {
    let mut out = Vec::new();
    match p {
        Preference::Winner(w) => {
            for o in (0..n).filter(|&o| o != w) {
                let (l, r, c) = if w < o {
                    (w, o, VoteChoice::Left)
                } else {
                    (o, w, VoteChoice::Right)
                };
                out.push((l, r, c));
            }
        }
        Preference::Tie | Preference::BothBad => {
            let c = if p == Preference::Tie {
                VoteChoice::Tie
            } else {
                VoteChoice::BothBad
            };
            for l in 0..n {
                for r in l + 1..n {
                    out.push((l, r, c));
                }
            }
        }
    }
    out
}

/// Votes for a pick among compare answers (`turns`, left to right).
pub fn compare_votes(session: &str, turns: &[Turn], p: Preference) -> Vec<Vote> {
    let Some(first) = turns.first() else { return Vec::new() };
    let now = Utc::now().rfc3339();
    pairs(turns.len(), p)
        .into_iter()
        .map(|(l, r, choice)| Vote {
            created_at: now.clone(),
            session_id: Some(session.to_string()),
            mode: TurnMode::Compare,
            voter: "user".into(),
            prompt: first.request.messages.clone(),
            left: side(&turns[l], None, turns[l].response.text.clone()),
            right: side(&turns[r], None, turns[r].response.text.clone()),
            choice,
            note: None,
        })
        .collect()
}

/// Votes for a judge's verdict on an arena, when both orders agree. Each
/// side's answer is all that participant said; `turns` are the arena turns
/// (one per participant at least), `names` the participants by seat.
pub fn verdict_votes(session: &str, opening: &str, names: &[String], turns: &[Turn], v: &Verdict) -> Vec<Vote> {
    if v.agree != Some(true) {
        return Vec::new();
    }
    let p = match (&v.winner, v.tie) {
        (Some(w), _) => match names.iter().position(|n| n == w) {
            Some(i) => Preference::Winner(i),
            None => return Vec::new(),
        },
        (None, true) => Preference::Tie,
        (None, false) => return Vec::new(),
    };
    // Each participant's last turn (for endpoint, model, turn id) and words.
    let mut sides = Vec::with_capacity(names.len());
    for n in names {
        let theirs: Vec<&Turn> = turns
            .iter()
            .filter(|t| t.mode == TurnMode::Arena && t.participant_name.as_deref() == Some(n.as_str()))
            .collect();
        let Some(last) = theirs.last() else { return Vec::new() };
        let said: Vec<&str> = theirs.iter().map(|t| t.response.text.trim()).collect();
        sides.push(side(last, Some(n.clone()), said.join("\n\n")));
    }
    let now = Utc::now().rfc3339();
    pairs(names.len(), p)
        .into_iter()
        .map(|(l, r, choice)| Vote {
            created_at: now.clone(),
            session_id: Some(session.to_string()),
            mode: TurnMode::Arena,
            voter: format!("judge:{}", v.judge),
            prompt: vec![Message::user(opening)],
            left: sides[l].clone(),
            right: sides[r].clone(),
            choice,
            note: Some(format!("arena verdict, both orders agree: {}", v.summary())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_winner_beats_each_other_answer_and_ties_cover_every_pair() {
        assert_eq!(pairs(2, Preference::Winner(1)), [(0, 1, VoteChoice::Right)]);
        assert_eq!(
            pairs(3, Preference::Winner(1)),
            [(0, 1, VoteChoice::Right), (1, 2, VoteChoice::Left)]
        );
        assert_eq!(
            pairs(3, Preference::Tie),
            [
                (0, 1, VoteChoice::Tie),
                (0, 2, VoteChoice::Tie),
                (1, 2, VoteChoice::Tie)
            ]
        );
        assert_eq!(pairs(2, Preference::BothBad), [(0, 1, VoteChoice::BothBad)]);
    }
}
