//! HTML transcripts rendered with minijinja (autoescape always on).
//!
//! Each format is a page template plus a turn template. A turn's fragment is
//! rendered once and cached, so refreshing the page after a turn costs one
//! fragment render plus one file write, however long the session is.

use std::path::{Path, PathBuf};

use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, context};
use serde::Serialize;

use super::arena_view::{RulingView, VerdictView, note_seat, seat_class, turn_ruling, verdict_view};
use crate::conversation::{Message, PickMark, Role, Turn, TurnMode};

/// One HTML output: `conversation.html` or `gptwink_format.html`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HtmlFormat {
    Modern,
    Legacy,
}

impl HtmlFormat {
    pub const ALL: [HtmlFormat; 2] = [HtmlFormat::Modern, HtmlFormat::Legacy];

    pub fn file_name(self) -> &'static str {
        match self {
            HtmlFormat::Modern => "conversation.html",
            HtmlFormat::Legacy => "gptwink_format.html",
        }
    }

    fn page(self) -> &'static str {
        match self {
            HtmlFormat::Modern => "conversation.html.j2",
            HtmlFormat::Legacy => "gptwink_format.html.j2",
        }
    }

    fn turn(self) -> &'static str {
        match self {
            HtmlFormat::Modern => "conversation.turn.html.j2",
            HtmlFormat::Legacy => "gptwink_format.turn.html.j2",
        }
    }
}

/// Template names and their built-in sources.
const BUILTIN: &[(&str, &str)] = &[
    (
        "conversation.html.j2",
        include_str!("../../templates/conversation.html.j2"),
    ),
    (
        "conversation.turn.html.j2",
        include_str!("../../templates/conversation.turn.html.j2"),
    ),
    (
        "gptwink_format.html.j2",
        include_str!("../../templates/gptwink_format.html.j2"),
    ),
    (
        "gptwink_format.turn.html.j2",
        include_str!("../../templates/gptwink_format.turn.html.j2"),
    ),
];

/// Loaded templates (built-in, or overridden file by file from a folder).
pub struct Templates {
    env: Environment<'static>,
}

/// What a turn template sees besides the turn itself.
#[derive(Serialize)]
struct TurnView<'a> {
    turn: &'a Turn,
    /// Messages new in this request: the user's prompt, tool results, … —
    /// empty when the transcript already shows them (the previous arena
    /// answer, the prompt of the compare answer before).
    inputs: Vec<&'a Message>,
    speaker: String,
    /// Colour class of an arena seat or compare lane (`seat-0` …), `judge`.
    seat: Option<String>,
    /// 1-based lane of a compare answer.
    lane: Option<u16>,
    /// A judge turn's ruling.
    ruling: Option<RulingView>,
    /// The last judge turn: the verdict.
    verdict: Option<VerdictView>,
    /// A compare answer's pick, as shown (`✓ chosen`, `= tie`, …).
    pick: Option<&'static str>,
}

/// Where a turn sits in the session, for what its fragment shows.
#[derive(Debug, Clone, Default)]
pub struct TurnPlace {
    /// The transcript already shows this turn's inputs.
    pub inputs_shown: bool,
    /// Arena participants by seat, as far as the session showed them.
    pub seats: Vec<String>,
}

pub(super) fn inputs(turn: &Turn) -> Vec<&Message> {
    let msgs = &turn.request.messages;
    let start = msgs
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1);
    msgs[start..].iter().filter(|m| m.role != Role::System).collect()
}

impl Templates {
    /// Built-in templates, with any same-named file in `dir` taking precedence.
    pub fn load(dir: Option<&Path>) -> Result<Self, String> {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::Html);
        for (name, builtin) in BUILTIN {
            let src = match dir.map(|d| d.join(name)).filter(|p| p.is_file()) {
                Some(p) => {
                    std::fs::read_to_string(&p).map_err(|e| format!("cannot read template {}: {e}", p.display()))?
                }
                None => (*builtin).to_string(),
            };
            env.add_template_owned(*name, src)
                .map_err(|e| format!("template {name}: {e}"))?;
        }
        Ok(Templates { env })
    }

    pub fn builtin() -> Self {
        match Self::load(None) {
            Ok(t) => t,
            Err(e) => unreachable!("built-in templates are checked by tests: {e}"),
        }
    }

    pub fn render_turn(&self, format: HtmlFormat, turn: &Turn, place: &TurnPlace) -> Result<String, String> {
        let speaker = match &turn.participant_name {
            Some(p) => format!("{p} ({} · {})", turn.model, turn.endpoint),
            None => turn.model.clone(),
        };
        let view = TurnView {
            turn,
            inputs: if place.inputs_shown { Vec::new() } else { inputs(turn) },
            speaker,
            seat: seat_class(turn),
            lane: match (turn.mode, turn.lane) {
                (TurnMode::Compare, Some(l)) => Some(u16::from(l) + 1),
                _ => None,
            },
            ruling: turn_ruling(turn, &place.seats),
            verdict: turn.verdict.as_deref().map(verdict_view),
            pick: turn.pick.map(PickMark::label),
        };
        self.env
            .get_template(format.turn())
            .and_then(|t| t.render(context! { t => Serde(&view) }))
            .map_err(|e| format!("rendering {}: {e:#}", format.turn()))
    }

    pub fn render_page(
        &self,
        format: HtmlFormat,
        title: &str,
        session_id: &str,
        started_at: &str,
        fragments: &[String],
    ) -> Result<String, String> {
        let body = minijinja::Value::from_safe_string(fragments.concat());
        self.env
            .get_template(format.page())
            .and_then(|t| {
                t.render(context! {
                    title => title,
                    session_id => session_id,
                    started_at => started_at,
                    turn_count => fragments.len(),
                    turns_html => body,
                    generator => concat!("pai ", env!("CARGO_PKG_VERSION")),
                })
            })
            .map_err(|e| format!("rendering {}: {e:#}", format.page()))
    }
}

/// What the book remembers of each turn to place the next one.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Shown {
    mode: TurnMode,
    lane: Option<u8>,
    /// The request's messages, hashed (compare answers share one prompt).
    request: u64,
    /// The answer, trimmed (an arena answer is the next speaker's input).
    answer: String,
    /// The request's last message, trimmed.
    last_input: String,
}

impl Shown {
    pub(super) fn of(turn: &Turn) -> Self {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for m in &turn.request.messages {
            m.role.hash(&mut h);
            m.content.hash(&mut h);
        }
        Shown {
            mode: turn.mode,
            lane: turn.lane,
            request: h.finish(),
            answer: turn.response.text.trim().to_string(),
            last_input: turn
                .request
                .messages
                .last()
                .map(|m| m.content.trim().to_string())
                .unwrap_or_default(),
        }
    }

    /// Whether `self`, shown just before `next`, already shows `next`'s inputs:
    /// an arena answer that is the next speaker's input (not a new exchange's
    /// opening); compare answers to one prompt, lane after lane (not the same
    /// prompt asked again).
    pub(super) fn shows_inputs_of(&self, next: &Shown) -> bool {
        match next.mode {
            TurnMode::Arena => {
                // As the arena passes it on (see `orchestration::arena::perspective`).
                let said = if self.answer.is_empty() {
                    "(no answer)"
                } else {
                    &self.answer
                };
                self.mode == TurnMode::Arena && next.last_input.ends_with(said)
            }
            TurnMode::Compare => {
                self.mode == TurnMode::Compare
                    && self.request == next.request
                    && matches!((self.lane, next.lane), (Some(a), Some(b)) if b > a)
            }
            TurnMode::Chat | TurnMode::Agent | TurnMode::Judge => false,
        }
    }
}

/// Cached fragments for one session's HTML files.
pub struct HtmlBook {
    fragments: [Vec<String>; 2],
    shown: Vec<Shown>,
    seats: Vec<String>,
}

impl HtmlBook {
    pub fn new() -> Self {
        HtmlBook {
            fragments: [Vec::new(), Vec::new()],
            shown: Vec::new(),
            seats: Vec::new(),
        }
    }

    /// Add (or replace, for a turn rewritten with the same id) a turn's fragments.
    pub fn upsert(&mut self, templates: &Templates, position: usize, turn: &Turn) -> Result<(), String> {
        note_seat(&mut self.seats, turn);
        let shown = Shown::of(turn);
        let place = TurnPlace {
            inputs_shown: position
                .checked_sub(1)
                .and_then(|p| self.shown.get(p))
                .is_some_and(|prev| prev.shows_inputs_of(&shown)),
            seats: self.seats.clone(),
        };
        if position < self.shown.len() {
            self.shown[position] = shown;
        } else {
            self.shown.push(shown);
        }
        for (i, f) in HtmlFormat::ALL.iter().enumerate() {
            let frag = templates.render_turn(*f, turn, &place)?;
            let list = &mut self.fragments[i];
            if position < list.len() {
                list[position] = frag;
            } else {
                list.push(frag);
            }
        }
        Ok(())
    }

    pub fn pages(
        &self,
        templates: &Templates,
        title: &str,
        session_id: &str,
        started_at: &str,
    ) -> Result<Vec<(PathBuf, String)>, String> {
        HtmlFormat::ALL
            .iter()
            .enumerate()
            .map(|(i, f)| {
                Ok((
                    PathBuf::from(f.file_name()),
                    templates.render_page(*f, title, session_id, started_at, &self.fragments[i])?,
                ))
            })
            .collect()
    }
}

impl Default for HtmlBook {
    fn default() -> Self {
        Self::new()
    }
}
