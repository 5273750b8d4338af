//! `[arenas.NAME]`, validated: the participants (each with its own endpoint,
//! model, system prompt and display name), the optional judge, the turn limit
//! and the opening prompt.

use std::collections::BTreeMap;

use toml::Spanned;

use super::EndpointConfig;
use super::error::{ConfigError, ErrorContext};
use super::raw::{RawArena, RawJudge, RawParticipant};
use crate::util::suggest::closest;

/// Criteria the judge scores when the config names none.
pub const DEFAULT_CRITERIA: &[&str] = &["reasoning", "accuracy", "persuasiveness"];
/// Turns an arena runs when the config does not say.
pub const DEFAULT_MAX_TURNS: u32 = 6;

/// One arena, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ArenaConfig {
    pub name: String,
    pub participants: Vec<ParticipantConfig>,
    pub judge: Option<JudgeConfig>,
    /// Turns in all (each participant speaking once is one turn each).
    pub max_turns: u32,
    /// The first user message; without it the user types one.
    pub opening: Option<String>,
}

/// One model in an arena.
#[derive(Debug, Clone, PartialEq)]
pub struct ParticipantConfig {
    /// Display name, unique in the arena.
    pub name: String,
    pub endpoint: String,
    /// Resolved: the participant's own, else the endpoint's.
    pub model: String,
    pub system: Option<String>,
    pub temperature: Option<f32>,
}

/// The model that rules on an arena.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeConfig {
    pub endpoint: String,
    pub model: String,
    /// Replaces the built-in judging instructions.
    pub prompt: Option<String>,
    pub criteria: Vec<String>,
}

pub(super) fn resolve(
    cx: &ErrorContext,
    raw: &BTreeMap<String, Spanned<RawArena>>,
    endpoints: &BTreeMap<String, EndpointConfig>,
) -> Result<BTreeMap<String, ArenaConfig>, ConfigError> {
    let mut out = BTreeMap::new();
    for (name, a) in raw {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
            return Err(cx.at(
                a.span(),
                format!("arena name `{name}` is not valid"),
                Some("use letters, digits, `-`, `_` or `.`".into()),
            ));
        }
        out.insert(name.clone(), arena(cx, name, a, endpoints)?);
    }
    Ok(out)
}

fn arena(
    cx: &ErrorContext,
    name: &str,
    a: &Spanned<RawArena>,
    endpoints: &BTreeMap<String, EndpointConfig>,
) -> Result<ArenaConfig, ConfigError> {
    let raw = a.get_ref();
    let list = raw.participants.get_ref();
    if list.len() < 2 {
        return Err(cx.at(
            raw.participants.span(),
            format!("arena `{name}` needs at least two participants, it has {}", list.len()),
            Some(format!(
                "add [[arenas.{name}.participants]] tables with endpoint = \"…\""
            )),
        ));
    }
    let mut participants: Vec<ParticipantConfig> = Vec::with_capacity(list.len());
    for (i, p) in list.iter().enumerate() {
        let pc = participant(cx, i, p.get_ref(), endpoints)?;
        if participants.iter().any(|q| q.name.eq_ignore_ascii_case(&pc.name)) {
            return Err(cx.at(
                p.span(),
                format!("two participants of arena `{name}` are called `{}`", pc.name),
                Some("give each a different `name`".into()),
            ));
        }
        participants.push(pc);
    }
    let max_turns = match &raw.max_turns {
        Some(m) => {
            let n = *m.get_ref();
            u32::try_from(n)
                .ok()
                .filter(|n| (1..=1000).contains(n))
                .ok_or_else(|| {
                    cx.at(
                        m.span(),
                        format!("max_turns = {n} is invalid"),
                        Some("use a whole number from 1 to 1000".into()),
                    )
                })?
        }
        None => DEFAULT_MAX_TURNS,
    };
    let judge = match &raw.judge {
        Some(j) => Some(judge(cx, j, endpoints)?),
        None => None,
    };
    Ok(ArenaConfig {
        name: name.to_string(),
        participants,
        judge,
        max_turns,
        opening: raw.opening.clone().filter(|o| !o.trim().is_empty()),
    })
}

fn known_endpoint<'a>(
    cx: &ErrorContext,
    e: &Spanned<String>,
    endpoints: &'a BTreeMap<String, EndpointConfig>,
) -> Result<&'a EndpointConfig, ConfigError> {
    endpoints.get(e.get_ref()).ok_or_else(|| {
        let names: Vec<&str> = endpoints.keys().map(String::as_str).collect();
        let hint = match closest(e.get_ref(), names.iter().copied()) {
            Some(c) => format!("did you mean `{c}`? Defined: {}", names.join(", ")),
            None => format!("define [endpoints.{}] or use one of: {}", e.get_ref(), names.join(", ")),
        };
        cx.at(
            e.span(),
            format!("endpoint `{}` is not defined", e.get_ref()),
            Some(hint),
        )
    })
}

fn model_for(
    cx: &ErrorContext,
    e: &Spanned<String>,
    ep: &EndpointConfig,
    own: &Option<String>,
) -> Result<String, ConfigError> {
    own.clone()
        .filter(|m| !m.trim().is_empty())
        .or_else(|| ep.model.clone())
        .ok_or_else(|| {
            cx.at(
                e.span(),
                format!("endpoint `{}` has no default model", ep.name),
                Some("add model = \"…\" here or to the endpoint".into()),
            )
        })
}

fn participant(
    cx: &ErrorContext,
    index: usize,
    p: &RawParticipant,
    endpoints: &BTreeMap<String, EndpointConfig>,
) -> Result<ParticipantConfig, ConfigError> {
    let ep = known_endpoint(cx, &p.endpoint, endpoints)?;
    let model = model_for(cx, &p.endpoint, ep, &p.model)?;
    let name = match &p.name {
        Some(n) => {
            let v = n.get_ref().trim();
            if v.is_empty() || v.chars().count() > 40 || v.chars().any(char::is_control) {
                return Err(cx.at(
                    n.span(),
                    "a participant name must be 1 to 40 printable characters",
                    None,
                ));
            }
            v.to_string()
        }
        None => format!("{} #{}", model, index + 1),
    };
    let temperature = match &p.temperature {
        Some(t) => {
            let v = *t.get_ref();
            if !(0.0..=2.0).contains(&v) {
                return Err(cx.at(
                    t.span(),
                    format!("temperature {v} is out of range"),
                    Some("use a value from 0.0 to 2.0".into()),
                ));
            }
            Some(v as f32)
        }
        None => None,
    };
    Ok(ParticipantConfig {
        name,
        endpoint: ep.name.clone(),
        model,
        system: p.system.clone().filter(|s| !s.trim().is_empty()),
        temperature,
    })
}

fn judge(
    cx: &ErrorContext,
    j: &Spanned<RawJudge>,
    endpoints: &BTreeMap<String, EndpointConfig>,
) -> Result<JudgeConfig, ConfigError> {
    let raw = j.get_ref();
    let ep = known_endpoint(cx, &raw.endpoint, endpoints)?;
    let model = model_for(cx, &raw.endpoint, ep, &raw.model)?;
    let criteria = match &raw.criteria {
        Some(c) => {
            let list: Vec<String> = c.get_ref().iter().map(|s| s.trim().to_string()).collect();
            if list.is_empty() || list.iter().any(|s| s.is_empty()) {
                return Err(cx.at(
                    c.span(),
                    "criteria must be a list of non-empty names",
                    Some(format!("e.g. criteria = [{}]", quoted(DEFAULT_CRITERIA))),
                ));
            }
            list
        }
        None => DEFAULT_CRITERIA.iter().map(|s| s.to_string()).collect(),
    };
    Ok(JudgeConfig {
        endpoint: ep.name.clone(),
        model,
        prompt: raw.prompt.clone().filter(|p| !p.trim().is_empty()),
        criteria,
    })
}

fn quoted(list: &[&str]) -> String {
    list.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ")
}
