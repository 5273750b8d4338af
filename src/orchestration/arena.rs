//! The arena orchestrator: two or more models talk in turns, then a judge rules.
//!
//! Each participant keeps its OWN conversation: its turns are `assistant`,
//! everyone else's are `user` (prefixed with the speaker's name when there are
//! more than two; consecutive ones merged), after the opening prompt — so
//! every model sees a valid alternating history. Turns rotate through the
//! seats up to `max_turns`. [`ArenaControl`] pauses between turns, resumes,
//! and stops (cancelling the stream that runs). After the exchange the judge,
//! if there is one, rules on the whole transcript ([`super::judge`]). Every
//! turn is an ordinary recorded [`Turn`] tagged with its participant.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::chat::run_turn;
use super::judge::{self, JudgeSetup, Transcript, Verdict};
use super::{EventSink, OrchestratorEvent, TurnContext, TurnOutcome, TurnRef, emit};
use crate::conversation::{Message, Params, Role, Turn, TurnMode};
use crate::protocols::ProtocolAdapter;

/// One participant: who it is and how to reach its model.
#[derive(Clone)]
pub struct Seat {
    pub name: String,
    pub endpoint: String,
    pub model: String,
    pub system: Option<String>,
    pub params: Params,
    pub adapter: Arc<dyn ProtocolAdapter>,
}

impl std::fmt::Debug for Seat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seat")
            .field("name", &self.name)
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// What was said, by whom (a seat index).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Utterance {
    pub speaker: usize,
    pub text: String,
    /// Stopped mid-answer.
    #[serde(default)]
    pub cut_off: bool,
}

/// Everything an arena run needs.
#[derive(Clone, Debug)]
pub struct ArenaSetup {
    pub arena: String,
    pub seats: Vec<Seat>,
    /// The first user message, seen by every participant.
    pub opening: String,
    /// Turns to run now (each participant speaking once is one turn each).
    pub max_turns: u32,
    pub first_turn_id: u32,
    pub judge: Option<JudgeSetup>,
    /// Said before this run (a continued arena); the rotation carries on.
    pub spoken: Vec<Utterance>,
}

/// How the exchange ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "how")]
pub enum ArenaEnd {
    /// All turns ran.
    Completed,
    /// The user stopped it.
    Stopped,
    /// A participant's request failed.
    Failed { participant: String, error: String },
}

/// Progress of an arena, for front ends.
#[derive(Debug, Clone, PartialEq)]
pub enum ArenaEvent {
    /// A pause took effect: no turn starts until resumed.
    Paused {
        turns_done: u32,
    },
    Resumed,
    /// The exchange is over; the judge, if any, comes next.
    Ended {
        end: ArenaEnd,
        turns_done: u32,
    },
    /// The judge has ruled.
    Verdict(Box<Verdict>),
    /// Nothing more will come from this run (the last event).
    Finished,
}

/// What an arena run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ArenaOutcome {
    /// Every turn, the judge's included, in order.
    pub turns: Vec<Turn>,
    /// The whole exchange (earlier runs included).
    pub spoken: Vec<Utterance>,
    pub end: ArenaEnd,
    pub verdict: Option<Verdict>,
}

/// Pause, resume and stop a running arena from the front end.
#[derive(Clone, Debug)]
pub struct ArenaControl {
    paused: Arc<watch::Sender<bool>>,
    stop_turns: CancellationToken,
    stop_judge: CancellationToken,
}

impl Default for ArenaControl {
    fn default() -> Self {
        Self::new()
    }
}

impl ArenaControl {
    pub fn new() -> Self {
        ArenaControl {
            paused: Arc::new(watch::Sender::new(false)),
            stop_turns: CancellationToken::new(),
            stop_judge: CancellationToken::new(),
        }
    }

    /// Pause before the next turn (the one streaming finishes).
    pub fn pause(&self) {
        self.paused.send_replace(true);
    }

    pub fn resume(&self) {
        self.paused.send_replace(false);
    }

    pub fn is_paused(&self) -> bool {
        *self.paused.borrow()
    }

    /// Stop the exchange now, cancelling the stream that runs; the judge still
    /// rules. Once the exchange is over, stop the judge.
    pub fn stop(&self) {
        if self.stop_turns.is_cancelled() {
            self.stop_judge.cancel();
        } else {
            self.stop_turns.cancel();
        }
    }

    /// Stop everything, the judge included.
    pub fn abort(&self) {
        self.stop_turns.cancel();
        self.stop_judge.cancel();
    }

    pub fn is_stopped(&self) -> bool {
        self.stop_turns.is_cancelled()
    }

    /// Wait while paused; `false` when stopped meanwhile.
    async fn wait_resumed(&self) -> bool {
        let mut rx = self.paused.subscribe();
        loop {
            if !*rx.borrow_and_update() {
                return true;
            }
            tokio::select! {
                _ = self.stop_turns.cancelled() => return false,
                r = rx.changed() => if r.is_err() { return false },
            }
        }
    }
}

/// The framing added to each participant's system prompt.
fn framing(names: &[String], me: usize) -> String {
    let others: Vec<&str> = names
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != me)
        .map(|(_, n)| n.as_str())
        .collect();
    if others.len() == 1 {
        format!(
            "You are {}, in a conversation with {}. The first message sets the topic; after it, the user's messages are {}'s words. Reply to {} in your own voice, without writing their lines.",
            names[me], others[0], others[0], others[0]
        )
    } else {
        format!(
            "You are {}, in a conversation with {}. The first message sets the topic; after it, the user's messages hold the others' words, each starting with the speaker's name. Reply in your own voice, without writing anyone else's lines.",
            names[me],
            others.join(", ")
        )
    }
}

/// Participant `me`'s own conversation: system prompt, the opening, then
/// everyone's words with `me`'s as `assistant` and the rest as `user`.
pub fn perspective(
    names: &[String],
    system: Option<&str>,
    me: usize,
    opening: &str,
    spoken: &[Utterance],
) -> Vec<Message> {
    let frame = framing(names, me);
    let system = match system {
        Some(s) => format!("{}\n\n{frame}", s.trim()),
        None => frame,
    };
    let mut out = vec![Message::system(system), Message::user(opening)];
    for u in spoken {
        let text = if u.text.trim().is_empty() {
            "(no answer)"
        } else {
            u.text.trim()
        };
        let (role, content) = if u.speaker == me {
            (Role::Assistant, text.to_string())
        } else if names.len() > 2 {
            (Role::User, format!("{}: {text}", names[u.speaker]))
        } else {
            (Role::User, text.to_string())
        };
        match out.last_mut() {
            Some(last) if last.role == role => {
                last.content.push_str("\n\n");
                last.content.push_str(&content);
            }
            _ => out.push(Message::new(role, content)),
        }
    }
    out
}

/// Run the arena: turns in rotation until `max_turns`, a stop or a failure;
/// then the judge. Reports through `sink`; returns everything that happened.
pub async fn run_arena(setup: ArenaSetup, sink: &EventSink, control: ArenaControl) -> ArenaOutcome {
    let names: Vec<String> = setup.seats.iter().map(|s| s.name.clone()).collect();
    let n = setup.seats.len().max(1);
    let mut spoken = setup.spoken.clone();
    let mut turns = Vec::new();
    let mut turn_id = setup.first_turn_id;
    let mut end = ArenaEnd::Completed;
    let mut done = 0;
    while done < setup.max_turns {
        if control.is_paused() {
            emit(sink, OrchestratorEvent::Arena(ArenaEvent::Paused { turns_done: done })).await;
            if !control.wait_resumed().await {
                end = ArenaEnd::Stopped;
                break;
            }
            emit(sink, OrchestratorEvent::Arena(ArenaEvent::Resumed)).await;
        }
        if control.is_stopped() {
            end = ArenaEnd::Stopped;
            break;
        }
        let me = spoken.len() % n;
        let seat = &setup.seats[me];
        let ctx = TurnContext {
            turn: TurnRef {
                turn_id,
                lane: me as u8,
            },
            endpoint: seat.endpoint.clone(),
            model: seat.model.clone(),
            participant: Some(seat.name.clone()),
            mode: TurnMode::Arena,
            adapter: seat.adapter.clone(),
            messages: perspective(&names, seat.system.as_deref(), me, &setup.opening, &spoken),
            params: seat.params.clone(),
            tools: Vec::new(),
        };
        let outcome = run_turn(ctx, sink, control.stop_turns.child_token()).await;
        turn_id += 1;
        done += 1;
        match outcome {
            TurnOutcome::Completed(t) => {
                spoken.push(Utterance {
                    speaker: me,
                    text: t.response.text.clone(),
                    cut_off: false,
                });
                turns.push(t);
            }
            TurnOutcome::Cancelled(t) => {
                if !t.response.text.trim().is_empty() {
                    spoken.push(Utterance {
                        speaker: me,
                        text: t.response.text.clone(),
                        cut_off: true,
                    });
                }
                turns.push(t);
                end = ArenaEnd::Stopped;
                break;
            }
            TurnOutcome::Failed { turn, error } => {
                turns.push(turn);
                end = ArenaEnd::Failed {
                    participant: seat.name.clone(),
                    error: error.to_string(),
                };
                break;
            }
        }
    }
    // A stop that came while the last turn was finishing still counts.
    if end == ArenaEnd::Completed && control.is_stopped() && done < setup.max_turns {
        end = ArenaEnd::Stopped;
    }
    emit(
        sink,
        OrchestratorEvent::Arena(ArenaEvent::Ended {
            end: end.clone(),
            turns_done: done,
        }),
    )
    .await;
    let everyone_spoke = (0..n).all(|i| spoken.iter().any(|u| u.speaker == i));
    let mut verdict = None;
    if let Some(j) = &setup.judge
        && everyone_spoke
        && !control.stop_judge.is_cancelled()
    {
        let t = Transcript {
            opening: &setup.opening,
            names: &names,
            utterances: &spoken,
        };
        let out = judge::run_judge(j, &t, turn_id, sink, &control.stop_judge).await;
        turns.extend(out.turns);
        if !out.cancelled {
            emit(
                sink,
                OrchestratorEvent::Arena(ArenaEvent::Verdict(Box::new(out.verdict.clone()))),
            )
            .await;
            verdict = Some(out.verdict);
        }
    }
    emit(sink, OrchestratorEvent::Arena(ArenaEvent::Finished)).await;
    ArenaOutcome {
        turns,
        spoken,
        end,
        verdict,
    }
}

/// A judge asked after the fact (`/judge`): rules on `spoken`, then reports
/// the verdict (unless stopped) and `Finished`, like the end of an arena run.
pub async fn judge_later(
    judge: JudgeSetup,
    opening: String,
    names: Vec<String>,
    spoken: Vec<Utterance>,
    first_turn_id: u32,
    sink: &EventSink,
    cancel: CancellationToken,
) -> judge::JudgeOutcome {
    let t = Transcript {
        opening: &opening,
        names: &names,
        utterances: &spoken,
    };
    let out = judge::run_judge(&judge, &t, first_turn_id, sink, &cancel).await;
    if !out.cancelled {
        emit(
            sink,
            OrchestratorEvent::Arena(ArenaEvent::Verdict(Box::new(out.verdict.clone()))),
        )
        .await;
    }
    emit(sink, OrchestratorEvent::Arena(ArenaEvent::Finished)).await;
    out
}

#[cfg(test)]
#[path = "arena_tests.rs"]
mod tests;
