//! The judge: reads an arena's whole transcript and rules — a winner (or a
//! tie), a score per criterion for each participant, and reasons.
//!
//! To cancel position bias the judge is asked twice, with the participants
//! presented in opposite orders under neutral labels (A, B, …), and the
//! verdict says whether the two rulings agree. Each ruling is one recorded
//! turn (`mode: judge`). The answer is asked for as JSON — enforced by a
//! schema where the protocol can (OpenAI `response_format`, Ollama `format`)
//! — and read leniently: the first JSON object in the text that names a
//! winner counts; anything else is a failed ruling, kept with its raw text.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::chat::stream_turn;
use super::{EventSink, OrchestratorEvent, TurnContext, TurnOutcome, TurnRef, emit};
use crate::conversation::{Message, Params, Turn, TurnMode};
use crate::protocols::{ProtocolAdapter, ProtocolError};
pub use crate::verdict::{Ruling, Verdict, combine};

/// The judging instructions used when the arena's judge has no `prompt`.
pub const DEFAULT_PROMPT: &str = "You are an impartial judge of a conversation between several participants. \
Read the whole transcript and decide which participant did best. Judge the substance of what each one said — \
not who spoke first, not who is listed first, not who wrote more.";

/// Who judges and how.
#[derive(Clone)]
pub struct JudgeSetup {
    pub endpoint: String,
    pub model: String,
    pub adapter: Arc<dyn ProtocolAdapter>,
    pub prompt: Option<String>,
    pub criteria: Vec<String>,
    pub params: Params,
}

impl JudgeSetup {
    /// A judge samples deterministically (temperature 0), with room for a
    /// verdict whatever the chat's own answer-length cap.
    pub fn params() -> Params {
        Params {
            temperature: Some(0.0),
            max_tokens: Some(1024),
            ..Params::default()
        }
    }
}

impl std::fmt::Debug for JudgeSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgeSetup")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("criteria", &self.criteria)
            .finish_non_exhaustive()
    }
}

/// What the judge reads: the opening prompt and who said what, in order.
#[derive(Debug, Clone, Copy)]
pub struct Transcript<'a> {
    pub opening: &'a str,
    /// Participant display names, by seat.
    pub names: &'a [String],
    pub utterances: &'a [super::arena::Utterance],
}

/// What a judge run produced: its turns (one per order) and the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeOutcome {
    pub turns: Vec<Turn>,
    pub verdict: Verdict,
    /// The user stopped it.
    pub cancelled: bool,
}

fn label(i: usize) -> String {
    let c = (b'A' + (i % 26) as u8) as char;
    if i < 26 {
        c.to_string()
    } else {
        format!("{c}{}", i / 26)
    }
}

/// The JSON Schema of one ruling for these labels.
pub fn schema(labels: &[String], criteria: &[String]) -> Value {
    let per: serde_json::Map<String, Value> = criteria
        .iter()
        .map(|c| (c.clone(), json!({"type": "integer", "minimum": 0, "maximum": 10})))
        .collect();
    let scores: serde_json::Map<String, Value> = labels
        .iter()
        .map(|l| {
            (
                l.clone(),
                json!({"type": "object", "properties": per, "required": criteria, "additionalProperties": false}),
            )
        })
        .collect();
    let mut winners: Vec<Value> = labels.iter().map(|l| json!(l)).collect();
    winners.push(json!("tie"));
    json!({
        "type": "object",
        "properties": {
            "winner": {"type": "string", "enum": winners},
            "scores": {"type": "object", "properties": scores, "required": labels, "additionalProperties": false},
            "reasons": {"type": "string"}
        },
        "required": ["winner", "scores", "reasons"],
        "additionalProperties": false
    })
}

/// The request for one order: `order` lists seat indexes as presented.
pub fn request(setup: &JudgeSetup, t: &Transcript, order: &[usize]) -> Vec<Message> {
    let labels: Vec<String> = (0..order.len()).map(label).collect();
    let label_of = |seat: usize| labels[order.iter().position(|s| *s == seat).unwrap_or(0)].clone();
    let example_scores: Vec<String> = labels
        .iter()
        .map(|l| {
            let per: Vec<String> = setup.criteria.iter().map(|c| format!("\"{c}\": 0-10")).collect();
            format!("\"{l}\": {{{}}}", per.join(", "))
        })
        .collect();
    let system = format!(
        "{}\n\nScore each participant from 0 to 10 on: {}. Answer with only this JSON object, nothing else:\n\
         {{\"winner\": {} or \"tie\", \"scores\": {{{}}}, \"reasons\": \"two or three sentences\"}}",
        setup.prompt.as_deref().unwrap_or(DEFAULT_PROMPT).trim(),
        setup.criteria.join(", "),
        labels.iter().map(|l| format!("\"{l}\"")).collect::<Vec<_>>().join(", "),
        example_scores.join(", ")
    );
    let mut user = format!(
        "Participants: {}.\n\nOpening prompt:\n{}\n\nTranscript:\n",
        labels.join(", "),
        t.opening.trim()
    );
    for u in t.utterances {
        user.push_str(&format!(
            "\n[{}]: {}{}\n",
            label_of(u.speaker),
            u.text.trim(),
            if u.cut_off { " [cut off]" } else { "" }
        ));
    }
    user.push_str("\nWhich participant did best? Answer with the JSON object only.");
    vec![Message::system(system), Message::user(user)]
}

/// Read a ruling from the judge's answer. `order` maps labels to names.
pub fn parse_ruling(text: &str, order: &[String], criteria: &[String]) -> Ruling {
    let mut r = Ruling {
        order: order.to_vec(),
        winner: None,
        tie: false,
        scores: BTreeMap::new(),
        reasons: String::new(),
        error: None,
    };
    let labels: Vec<String> = (0..order.len()).map(label).collect();
    let Some(obj) = first_verdict_object(text) else {
        r.error = Some(format!(
            "the judge did not answer with a JSON verdict: {}",
            preview(text)
        ));
        return r;
    };
    let by_label = |s: &str| -> Option<usize> {
        let s = s
            .trim()
            .trim_start_matches("Participant")
            .trim_start_matches("participant")
            .trim();
        labels.iter().position(|l| l.eq_ignore_ascii_case(s))
    };
    match obj.get("winner").and_then(Value::as_str).map(str::trim) {
        Some(w) if ["tie", "draw", "none"].iter().any(|t| t.eq_ignore_ascii_case(w)) => r.tie = true,
        Some(w) => match by_label(w) {
            Some(i) => r.winner = Some(order[i].clone()),
            None => {
                r.error = Some(format!(
                    "the judge named `{w}`, who is not a participant ({})",
                    labels.join(", ")
                ));
                return r;
            }
        },
        None => {
            r.error = Some("the judge's verdict names no winner".into());
            return r;
        }
    }
    if let Some(scores) = obj.get("scores").and_then(Value::as_object) {
        for (k, v) in scores {
            let (Some(i), Some(per)) = (by_label(k), v.as_object()) else {
                continue;
            };
            let mut out = BTreeMap::new();
            for c in criteria {
                let n = per
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(c))
                    .and_then(|(_, v)| v.as_f64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok())));
                if let Some(n) = n.filter(|n| n.is_finite()) {
                    out.insert(c.clone(), n.clamp(0.0, 10.0));
                }
            }
            r.scores.insert(order[i].clone(), out);
        }
    }
    r.reasons = match obj.get("reasons").or_else(|| obj.get("reason")) {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "),
        _ => String::new(),
    };
    r
}

/// The first JSON object in `text` that has a string `winner`.
fn first_verdict_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    text.match_indices('{').find_map(|(i, _)| {
        let mut it = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
        match it.next() {
            Some(Ok(Value::Object(o))) if o.get("winner").is_some_and(Value::is_string) => Some(o),
            _ => None,
        }
    })
}

fn preview(text: &str) -> String {
    let t = text.trim();
    if t.is_empty() {
        return "(empty answer)".into();
    }
    let short: String = t.chars().take(120).collect();
    if short.len() < t.len() {
        format!("{short}…")
    } else {
        short
    }
}

/// Ask the judge in both orders (turns from `first_turn_id` on). Each
/// judge turn's record carries its ruling; the last one also the verdict.
pub async fn run_judge(
    setup: &JudgeSetup,
    t: &Transcript<'_>,
    first_turn_id: u32,
    sink: &EventSink,
    cancel: &CancellationToken,
) -> JudgeOutcome {
    let n = t.names.len();
    let forward: Vec<usize> = (0..n).collect();
    let backward: Vec<usize> = (0..n).rev().collect();
    let labels: Vec<String> = (0..n).map(label).collect();
    let mut turns: Vec<Turn> = Vec::new();
    let mut rulings = Vec::new();
    let mut cancelled = false;
    let mut last: Option<(TurnRef, TurnOutcome)> = None;
    let mut turn_id = first_turn_id;
    for (k, order) in [forward, backward].into_iter().enumerate() {
        if cancel.is_cancelled() {
            cancelled = true;
            break;
        }
        if let Some((r, o)) = last.take() {
            turns.push(finish(sink, r, o).await);
        }
        let names: Vec<String> = order.iter().map(|&i| t.names[i].clone()).collect();
        let mut params = setup.params.clone();
        params.response_schema = Some(schema(&labels, &setup.criteria));
        let mut ctx = TurnContext {
            turn: TurnRef { turn_id, lane: 0 },
            endpoint: setup.endpoint.clone(),
            model: setup.model.clone(),
            participant: Some(format!("Judge · order {}", k + 1)),
            mode: TurnMode::Judge,
            adapter: setup.adapter.clone(),
            messages: request(setup, t, &order),
            params,
            tools: Vec::new(),
        };
        turn_id += 1;
        let mut outcome = stream_turn(ctx.clone(), sink, cancel.child_token()).await;
        if let TurnOutcome::Failed {
            error: ProtocolError::Http { status: 400 | 422, .. },
            ..
        } = &outcome
        {
            // A server that does not take JSON schemas: ask again on the prompt alone.
            turns.push(finish(sink, ctx.turn, outcome).await);
            ctx.turn.turn_id = turn_id;
            turn_id += 1;
            ctx.params.response_schema = None;
            outcome = stream_turn(ctx.clone(), sink, cancel.child_token()).await;
        }
        let ruling = match &outcome {
            TurnOutcome::Completed(turn) => parse_ruling(&turn.response.text, &names, &setup.criteria),
            TurnOutcome::Cancelled(_) => {
                cancelled = true;
                failed(names, "stopped".into())
            }
            TurnOutcome::Failed { error, .. } => failed(names, error.to_string()),
        };
        outcome.turn_mut().ruling = Some(Box::new(ruling.clone()));
        rulings.push(ruling);
        last = Some((ctx.turn, outcome));
        if cancelled {
            break;
        }
    }
    let verdict = combine(format!("{} · {}", setup.model, setup.endpoint), rulings);
    if let Some((r, mut o)) = last.take() {
        if !cancelled {
            o.turn_mut().verdict = Some(Box::new(verdict.clone()));
        }
        turns.push(finish(sink, r, o).await);
    }
    JudgeOutcome {
        turns,
        verdict,
        cancelled,
    }
}

async fn finish(sink: &EventSink, turn: TurnRef, outcome: TurnOutcome) -> Turn {
    emit(
        sink,
        OrchestratorEvent::TurnFinished {
            turn,
            outcome: Box::new(outcome.clone()),
        },
    )
    .await;
    outcome.into_turn()
}

fn failed(order: Vec<String>, error: String) -> Ruling {
    Ruling {
        order,
        winner: None,
        tie: false,
        scores: BTreeMap::new(),
        reasons: String::new(),
        error: Some(error),
    }
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
