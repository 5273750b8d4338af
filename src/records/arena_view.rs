//! What the HTML templates see of arena, judge and compare turns: a stable
//! colour class per participant, a judge turn's ruling and the verdict laid
//! out as tables, with scores already formatted.
//!
//! Owns only presentation data derived from a [`Turn`]; the numbers and names
//! come from the turn record unchanged. Escaping is the templates' business
//! (autoescape is always on), so nothing here builds HTML.

use serde::Serialize;

use crate::conversation::{Turn, TurnMode};
use crate::verdict::{Ruling, Verdict};

/// Seats with their own colour; later seats share a neutral one.
pub const COLOURED_SEATS: u8 = 6;

/// The CSS class of a turn's speaker: `seat-0` … `seat-5` for the first six
/// arena seats or compare lanes, `seat-x` after them, `judge` for the judge.
pub fn seat_class(turn: &Turn) -> Option<String> {
    match (turn.mode, turn.lane) {
        (TurnMode::Judge, _) => Some("judge".into()),
        (TurnMode::Arena | TurnMode::Compare, Some(l)) => Some(class_of(usize::from(l))),
        (TurnMode::Arena | TurnMode::Compare, None) | (TurnMode::Chat | TurnMode::Agent, _) => None,
    }
}

fn class_of(seat: usize) -> String {
    if seat < usize::from(COLOURED_SEATS) {
        format!("seat-{seat}")
    } else {
        "seat-x".into()
    }
}

/// A score as people write it: `8`, `7.5`.
pub fn fmt_score(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if (r - r.round()).abs() < 1e-9 {
        format!("{}", r.round() as i64)
    } else {
        format!("{r:.1}")
    }
}

/// One participant's row of a score table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreRow {
    pub name: String,
    /// Colour class of the participant's seat.
    pub seat: String,
    /// One cell per criterion (`–` when the judge gave none).
    pub cells: Vec<String>,
    /// The mean over the criteria scored.
    pub mean: String,
}

/// One ruling (one order), ready to show.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RulingView {
    /// `A = Ada, B = Bob`: who had which neutral label.
    pub order: String,
    /// `Bob`, `a tie`, or `no ruling`.
    pub outcome: String,
    pub reasons: String,
    pub error: Option<String>,
    pub criteria: Vec<String>,
    pub rows: Vec<ScoreRow>,
}

/// The verdict block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerdictView {
    /// `winner`, `tie`, `disagreement` or `none`: what kind of result it is.
    pub kind: &'static str,
    pub winner: Option<String>,
    /// `Winner: Bob`, `Tie`, `No clear winner`, `No verdict`.
    pub headline: String,
    /// Why: `both orders agree`, `the orders disagree (…)`, …
    pub detail: String,
    /// The one-line summary also printed on the terminal.
    pub summary: String,
    /// `endpoint · model` of the judge.
    pub judge: String,
    pub criteria: Vec<String>,
    /// Mean scores over the readable rulings, participants in seat order.
    pub rows: Vec<ScoreRow>,
    /// Each order's ruling: who won it and why.
    pub rulings: Vec<RulingView>,
}

fn labels(order: &[String]) -> String {
    order
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{} = {n}", (b'A' + (i % 26) as u8) as char))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Criteria in the order first met, over every participant's scores.
fn criteria_of<'a>(tables: impl Iterator<Item = &'a std::collections::BTreeMap<String, f64>>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in tables {
        for c in t.keys() {
            if !out.contains(c) {
                out.push(c.clone());
            }
        }
    }
    out
}

fn rows(
    names: &[String],
    scores: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>,
    criteria: &[String],
) -> Vec<ScoreRow> {
    names
        .iter()
        .enumerate()
        .filter_map(|(seat, name)| {
            let per = scores.get(name)?;
            let cells = criteria
                .iter()
                .map(|c| per.get(c).map_or_else(|| "–".to_string(), |v| fmt_score(*v)))
                .collect();
            let mean = if per.is_empty() {
                "–".to_string()
            } else {
                fmt_score(per.values().sum::<f64>() / per.len() as f64)
            };
            Some(ScoreRow {
                name: name.clone(),
                seat: class_of(seat),
                cells,
                mean,
            })
        })
        .collect()
}

/// A ruling for display; `seats` lists the participants in seat order.
pub fn ruling_view(r: &Ruling, seats: &[String]) -> RulingView {
    let criteria = criteria_of(r.scores.values());
    RulingView {
        order: labels(&r.order),
        outcome: match (&r.error, &r.winner, r.tie) {
            (Some(_), _, _) => "no ruling".into(),
            (None, Some(w), _) => w.clone(),
            (None, None, true) => "a tie".into(),
            (None, None, false) => "no winner named".into(),
        },
        reasons: r.reasons.clone(),
        error: r.error.clone(),
        rows: rows(seats, &r.scores, &criteria),
        criteria,
    }
}

/// Participants in seat order: the first ruling lists them as seated.
fn seats_of(v: &Verdict) -> Vec<String> {
    let mut seats: Vec<String> = v.rulings.first().map(|r| r.order.clone()).unwrap_or_default();
    for name in v.scores.keys() {
        if !seats.contains(name) {
            seats.push(name.clone());
        }
    }
    seats
}

/// The summary without its headline: the parenthesis of `winner: X (…)` and
/// `a tie (…)`, the part after the colon otherwise.
fn detail(kind: &str, summary: &str) -> String {
    let paren = summary
        .find('(')
        .zip(summary.rfind(')'))
        .filter(|(a, b)| a < b)
        .map(|(a, b)| &summary[a + 1..b]);
    match (kind, paren) {
        ("winner" | "tie", Some(p)) => p.to_string(),
        _ => summary.split_once(": ").map_or(summary, |(_, rest)| rest).to_string(),
    }
}

/// The verdict for display.
pub fn verdict_view(v: &Verdict) -> VerdictView {
    let seats = seats_of(v);
    let criteria = criteria_of(v.scores.values());
    let readable = v.rulings.iter().any(|r| r.error.is_none());
    let kind = match (readable, v.agree, &v.winner, v.tie) {
        (false, _, _, _) => "none",
        (true, Some(false), _, _) => "disagreement",
        (true, _, Some(_), _) => "winner",
        (true, _, None, true) => "tie",
        (true, _, None, false) => "none",
    };
    let summary = v.summary();
    VerdictView {
        kind,
        headline: match (kind, &v.winner) {
            ("winner", Some(w)) => format!("Winner: {w}"),
            ("tie", _) => "Tie".into(),
            ("disagreement", _) => "No clear winner".into(),
            _ => "No verdict".into(),
        },
        detail: detail(kind, &summary),
        winner: v.winner.clone(),
        summary,
        judge: v.judge.clone(),
        rows: rows(&seats, &v.scores, &criteria),
        criteria,
        rulings: v.rulings.iter().map(|r| ruling_view(r, &seats)).collect(),
    }
}

/// Remember an arena turn's speaker in `seats` (by seat), for later rulings.
pub fn note_seat(seats: &mut Vec<String>, turn: &Turn) {
    if let (TurnMode::Arena, Some(lane), Some(name)) = (turn.mode, turn.lane, &turn.participant_name) {
        let seat = usize::from(lane);
        if seats.len() <= seat {
            seats.resize(seat + 1, String::new());
        }
        seats[seat] = name.clone();
    }
}

/// A judge turn's ruling. `seats` names the arena's participants by seat as
/// far as the session showed them; anyone else follows in the ruling's order.
pub fn turn_ruling(turn: &Turn, seats: &[String]) -> Option<RulingView> {
    let r = turn.ruling.as_deref()?;
    let mut all: Vec<String> = match &turn.verdict {
        Some(v) => seats_of(v),
        None => seats.to_vec(),
    };
    for name in &r.order {
        if !all.contains(name) {
            all.push(name.clone());
        }
    }
    Some(ruling_view(r, &all))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::verdict::combine;

    fn ruling(order: &[&str], winner: Option<&str>, scores: &[(&str, &[(&str, f64)])]) -> Ruling {
        Ruling {
            order: order.iter().map(|s| s.to_string()).collect(),
            winner: winner.map(str::to_string),
            tie: winner.is_none(),
            scores: scores
                .iter()
                .map(|(p, per)| (p.to_string(), per.iter().map(|(c, v)| (c.to_string(), *v)).collect()))
                .collect::<BTreeMap<_, _>>(),
            reasons: format!("because {}", winner.unwrap_or("even")),
            error: None,
        }
    }

    #[test]
    fn scores_are_written_as_people_write_them() {
        assert_eq!(fmt_score(8.0), "8");
        assert_eq!(fmt_score(7.5), "7.5");
        assert_eq!(fmt_score(6.66), "6.7");
        assert_eq!(fmt_score(9.96), "10");
    }

    #[test]
    fn an_agreeing_verdict_has_seat_ordered_rows_and_reasons_per_order() {
        let v = combine(
            "judge-ep · jm".into(),
            vec![
                ruling(
                    &["Zed", "Amy"],
                    Some("Amy"),
                    &[
                        ("Zed", &[("logic", 4.0), ("style", 5.0)]),
                        ("Amy", &[("logic", 8.0), ("style", 7.0)]),
                    ],
                ),
                ruling(
                    &["Amy", "Zed"],
                    Some("Amy"),
                    &[
                        ("Amy", &[("logic", 9.0), ("style", 7.0)]),
                        ("Zed", &[("logic", 5.0), ("style", 5.0)]),
                    ],
                ),
            ],
        );
        let view = verdict_view(&v);
        assert_eq!(view.kind, "winner");
        assert_eq!(view.summary, "winner: Amy (both orders agree)");
        assert_eq!(
            (view.headline.as_str(), view.detail.as_str()),
            ("Winner: Amy", "both orders agree")
        );
        assert_eq!(view.criteria, ["logic", "style"]);
        // Seat order (Zed sat first), not alphabetical.
        let names: Vec<&str> = view.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["Zed", "Amy"]);
        assert_eq!(view.rows[0].seat, "seat-0");
        assert_eq!(view.rows[1].cells, ["8.5", "7"]);
        assert_eq!(view.rows[1].mean, "7.8");
        assert_eq!(view.rulings[1].order, "A = Amy, B = Zed");
        assert_eq!(view.rulings[1].outcome, "Amy");
        assert_eq!(view.rulings[1].reasons, "because Amy");
        // Per-ruling rows follow the seats too.
        assert_eq!(view.rulings[1].rows[0].name, "Zed");
    }

    #[test]
    fn disagreement_tie_and_unreadable_verdicts_say_so() {
        let split = combine(
            "j".into(),
            vec![
                ruling(&["A1", "B1"], Some("A1"), &[]),
                ruling(&["B1", "A1"], Some("B1"), &[]),
            ],
        );
        let view = verdict_view(&split);
        assert_eq!((view.kind, view.headline.as_str()), ("disagreement", "No clear winner"));
        assert_eq!(view.detail, "the orders disagree (A1 first → A1; B1 first → B1)");
        let tie = combine(
            "j".into(),
            vec![ruling(&["A1", "B1"], None, &[]), ruling(&["B1", "A1"], None, &[])],
        );
        let view = verdict_view(&tie);
        assert_eq!((view.kind, view.headline.as_str()), ("tie", "Tie"));
        assert_eq!(view.detail, "both orders agree");
        let mut bad = ruling(&["A1", "B1"], None, &[]);
        bad.tie = false;
        bad.error = Some("not JSON".into());
        let none = combine("j".into(), vec![bad.clone(), bad]);
        let view = verdict_view(&none);
        assert_eq!(view.kind, "none");
        assert_eq!(view.detail, "the judge's answers could not be read");
        assert_eq!(view.rulings[0].outcome, "no ruling");
        assert_eq!(view.rulings[0].error.as_deref(), Some("not JSON"));
    }

    #[test]
    fn seat_classes_are_stable_per_lane() {
        let mut t = crate::records::tests::turn(1, "q", "a");
        assert_eq!(seat_class(&t), None);
        t.mode = TurnMode::Arena;
        t.lane = Some(1);
        assert_eq!(seat_class(&t).as_deref(), Some("seat-1"));
        t.lane = Some(7);
        assert_eq!(seat_class(&t).as_deref(), Some("seat-x"));
        t.mode = TurnMode::Compare;
        t.lane = Some(0);
        assert_eq!(seat_class(&t).as_deref(), Some("seat-0"));
        t.mode = TurnMode::Judge;
        assert_eq!(seat_class(&t).as_deref(), Some("judge"));
    }
}
