//! Reads: the session list, one session with its turns, what a resume needs,
//! id lookup by prefix, votes.

use std::collections::HashMap;
use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::conversation::{Message, Params, Role, ToolCall, Turn, TurnMode, TurnRequest, TurnResponse};
use crate::stats::RequestStats;
use crate::util::suggest::edit_distance;

use super::model::{
    Restored, SessionDetail, SessionSummary, StoredToolCall, StoredTurn, StoredVote, ToolCallStatus, TurnExtra,
    TurnState, Vote, VoteChoice, VoteSide,
};

/// Reads fail with SQLite errors or with data this build cannot interpret.
#[derive(Debug)]
pub enum ReadError {
    Sqlite(rusqlite::Error),
    BadData(String),
}

impl From<rusqlite::Error> for ReadError {
    fn from(e: rusqlite::Error) -> Self {
        ReadError::Sqlite(e)
    }
}

type Result<T> = std::result::Result<T, ReadError>;

fn bad(what: &str, value: &str) -> ReadError {
    ReadError::BadData(format!("unknown {what} `{value}`"))
}

pub fn parse_mode(s: &str) -> Result<TurnMode> {
    match s {
        "chat" => Ok(TurnMode::Chat),
        "agent" => Ok(TurnMode::Agent),
        "arena" => Ok(TurnMode::Arena),
        "compare" => Ok(TurnMode::Compare),
        "judge" => Ok(TurnMode::Judge),
        other => Err(bad("mode", other)),
    }
}

fn parse_role(s: &str) -> Result<Role> {
    match s {
        "system" => Ok(Role::System),
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        "tool" => Ok(Role::Tool),
        other => Err(bad("role", other)),
    }
}

const SUMMARY_COLUMNS: &str = "id, started_at, updated_at, title, endpoint, model, mode, folder, turn_count";

fn summary(r: &Row) -> rusqlite::Result<(SessionSummary, String)> {
    Ok((
        SessionSummary {
            id: r.get(0)?,
            started_at: r.get(1)?,
            updated_at: r.get(2)?,
            title: r.get(3)?,
            endpoint: r.get(4)?,
            model: r.get(5)?,
            mode: TurnMode::Chat,
            folder: r.get::<_, Option<String>>(7)?.map(PathBuf::from),
            turn_count: r.get(8)?,
        },
        r.get(6)?,
    ))
}

fn with_mode((mut s, mode): (SessionSummary, String)) -> Result<SessionSummary> {
    s.mode = parse_mode(&mode)?;
    Ok(s)
}

/// The most recently active sessions first.
pub fn list_sessions(c: &Connection, limit: usize) -> Result<Vec<SessionSummary>> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {SUMMARY_COLUMNS} FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ?1"
    ))?;
    let rows = st.query_map([limit as i64], summary)?;
    rows.map(|r| with_mode(r?)).collect()
}

/// How an id typed by a user resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    Found(String),
    /// Several sessions match (most recent first).
    Ambiguous(Vec<String>),
    /// None matches; the closest ids, if any look like typos.
    Missing(Vec<String>),
}

/// The full id of the session `input` names: the id itself, a unique prefix,
/// or a unique prefix of its random part (after the last `-`).
pub fn resolve_session(c: &Connection, input: &str) -> Result<Resolution> {
    let ids: Vec<String> = c
        .prepare_cached("SELECT id FROM sessions ORDER BY updated_at DESC, id DESC")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let input = input.trim();
    if ids.iter().any(|i| i == input) {
        return Ok(Resolution::Found(input.to_string()));
    }
    let mut matches: Vec<String> = ids.iter().filter(|i| i.starts_with(input)).cloned().collect();
    if matches.is_empty() {
        matches = ids
            .iter()
            .filter(|i| i.rsplit('-').next().is_some_and(|tail| tail.starts_with(input)))
            .cloned()
            .collect();
    }
    Ok(match matches.len() {
        1 => Resolution::Found(matches.swap_remove(0)),
        0 => {
            let n = input.chars().count();
            let limit = (n / 4).max(2);
            let mut close: Vec<(usize, &String)> = ids
                .iter()
                .map(|id| {
                    let head: String = id.chars().take(n).collect();
                    (edit_distance(input, &head), id)
                })
                .filter(|(d, _)| *d <= limit)
                .collect();
            close.sort_by_key(|(d, _)| *d);
            Resolution::Missing(close.into_iter().take(3).map(|(_, id)| id.clone()).collect())
        }
        _ => Resolution::Ambiguous(matches),
    })
}

struct MsgRow {
    parent: Option<i64>,
    message: Message,
}

fn message_from(r: &Row, first: usize) -> Result<Message> {
    let role: String = r.get(first)?;
    let calls: Option<String> = r.get(first + 4)?;
    Ok(Message {
        role: parse_role(&role)?,
        content: r.get(first + 1)?,
        name: r.get(first + 2)?,
        reasoning: r.get(first + 3)?,
        tool_calls: match calls {
            Some(j) => serde_json::from_str(&j).map_err(|e| ReadError::BadData(format!("tool calls: {e}")))?,
            None => Vec::new(),
        },
        tool_call_id: r.get(first + 5)?,
    })
}

const TURN_COLUMNS: &str = "turn_id, started_at, endpoint, model, participant, mode, status, answer, reasoning,
    finish_reason, error, temperature, max_tokens, context_id, ttft_ms, duration_ms, input_tokens, output_tokens,
    usage_reported, tokens_per_sec, retries, id, lane, extra";

/// A turn row without its request messages; returns (turn, state, context_id, row id).
fn turn_from(r: &Row) -> Result<(Turn, TurnState, Option<i64>, i64)> {
    let mode: String = r.get(5)?;
    let status: String = r.get(6)?;
    let state = TurnState::parse(&status).ok_or_else(|| bad("turn status", &status))?;
    let finish_reason: Option<String> = r.get(9)?;
    let extra: TurnExtra = match r.get::<_, Option<String>>(23)? {
        // Only shown, never needed to continue: unreadable, the turn reads without it.
        Some(json) => serde_json::from_str(&json).unwrap_or_default(),
        None => TurnExtra::default(),
    };
    let turn = Turn {
        turn_id: r.get(0)?,
        started_at: r.get(1)?,
        endpoint: r.get(2)?,
        model: r.get(3)?,
        participant_name: r.get(4)?,
        mode: parse_mode(&mode)?,
        status: state.status(),
        request: TurnRequest {
            messages: Vec::new(),
            params: Params {
                temperature: r.get::<_, Option<f64>>(11)?.map(|t| t as f32),
                max_tokens: r.get(12)?,
                ..Params::default()
            },
        },
        response: TurnResponse {
            text: r.get(7)?,
            reasoning: r.get(8)?,
            tool_calls: Vec::new(),
            finish_reason: finish_reason.clone(),
            error: r.get(10)?,
        },
        stats: RequestStats {
            ttft_ms: r.get::<_, Option<i64>>(14)?.map(|v| v as u64),
            duration_ms: r.get::<_, i64>(15)? as u64,
            input_tokens: r.get::<_, i64>(16)? as u64,
            output_tokens: r.get::<_, i64>(17)? as u64,
            usage_reported: r.get(18)?,
            tokens_per_sec: r.get(19)?,
            finish_reason,
            retries: r.get(20)?,
        },
        // Kept in the session folder's records, not in the history.
        tool_runs: Vec::new(),
        ruling: extra.ruling,
        verdict: extra.verdict,
        pick: extra.pick,
        lane: r.get(22)?,
    };
    Ok((turn, state, r.get(13)?, r.get(21)?))
}

/// One session with its turns (each with only the messages it added).
pub fn session(c: &Connection, id: &str) -> Result<Option<SessionDetail>> {
    let head = c
        .prepare_cached(&format!("SELECT {SUMMARY_COLUMNS}, system FROM sessions WHERE id = ?1"))?
        .query_row([id], |r| Ok((summary(r)?, r.get::<_, Option<String>>(9)?)))
        .optional()?;
    let Some((head, system)) = head else {
        return Ok(None);
    };
    let summary = with_mode(head)?;

    let mut messages: HashMap<i64, MsgRow> = HashMap::new();
    {
        let mut st = c.prepare_cached(
            "SELECT id, parent_id, role, content, name, reasoning, tool_calls, tool_call_id
             FROM messages WHERE session_id = ?1",
        )?;
        let mut rows = st.query([id])?;
        while let Some(r) = rows.next()? {
            messages.insert(
                r.get(0)?,
                MsgRow {
                    parent: r.get(1)?,
                    message: message_from(r, 2)?,
                },
            );
        }
    }
    let mut calls: HashMap<i64, Vec<StoredToolCall>> = HashMap::new();
    {
        let mut st = c.prepare_cached(
            "SELECT c.turn, c.call_id, c.name, c.arguments, c.status, c.result FROM tool_calls c
             JOIN turns t ON t.id = c.turn WHERE t.session_id = ?1 ORDER BY c.turn, c.seq",
        )?;
        let mut rows = st.query([id])?;
        while let Some(r) = rows.next()? {
            let status: String = r.get(4)?;
            calls.entry(r.get(0)?).or_default().push(StoredToolCall {
                call: ToolCall {
                    id: r.get(1)?,
                    name: r.get(2)?,
                    arguments: r.get(3)?,
                },
                status: ToolCallStatus::parse(&status).ok_or_else(|| bad("tool call status", &status))?,
                result: r.get(5)?,
            });
        }
    }
    let mut turns = Vec::new();
    let mut st = c.prepare_cached(&format!(
        "SELECT {TURN_COLUMNS} FROM turns WHERE session_id = ?1 ORDER BY turn_id"
    ))?;
    let mut rows = st.query([id])?;
    while let Some(r) = rows.next()? {
        let (mut turn, state, context, row_id) = turn_from(r)?;
        // What this turn added: back from its last request message to the
        // previous answer.
        let mut added = Vec::new();
        let mut at = context;
        while let Some(m) = at.and_then(|i| messages.get(&i)) {
            if m.message.role == Role::Assistant {
                break;
            }
            added.push(m.message.clone());
            at = m.parent;
        }
        added.reverse();
        turn.request.messages = added;
        let tool_calls = calls.remove(&row_id).unwrap_or_default();
        turn.response.tool_calls = tool_calls.iter().map(|c| c.call.clone()).collect();
        turns.push(StoredTurn {
            turn,
            state,
            tool_calls,
        });
    }
    Ok(Some(SessionDetail { summary, system, turns }))
}

/// The messages from the root to `leaf`, in order.
fn conversation_to(c: &Connection, leaf: i64) -> Result<Vec<Message>> {
    let mut st = c.prepare_cached(
        "WITH RECURSIVE p(id, parent_id, depth) AS (
            SELECT id, parent_id, 0 FROM messages WHERE id = ?1
            UNION ALL
            SELECT m.id, m.parent_id, p.depth + 1 FROM messages m JOIN p ON m.id = p.parent_id
         ) SELECT m.role, m.content, m.name, m.reasoning, m.tool_calls, m.tool_call_id
           FROM p JOIN messages m ON m.id = p.id ORDER BY p.depth DESC",
    )?;
    let mut rows = st.query([leaf])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(message_from(r, 0)?);
    }
    Ok(out)
}

/// What resuming session `id` needs; `None` when there is no such session.
pub fn restore(c: &Connection, id: &str) -> Result<Option<Restored>> {
    let head = c
        .prepare_cached("SELECT title, folder, endpoint, model, mode, system FROM sessions WHERE id = ?1")?
        .query_row([id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, Option<String>>(5)?,
            ))
        })
        .optional()?;
    let Some((title, folder, endpoint, model, mode, system)) = head else {
        return Ok(None);
    };
    // The latest turn matching `filter`, with its prompt and answer node.
    let last = |filter: &str| -> Result<Option<(Turn, i64)>> {
        let mut st = c.prepare_cached(&format!(
            "SELECT {TURN_COLUMNS}, t.prompt, t.answer_id FROM turns t WHERE session_id = ?1 {filter}
             ORDER BY turn_id DESC LIMIT 1"
        ))?;
        let mut rows = st.query([id])?;
        match rows.next()? {
            Some(r) => {
                let (mut turn, ..) = turn_from(r)?;
                // The prompt rides in the (otherwise empty) request.
                turn.request.messages = vec![Message::user(r.get::<_, String>(24)?)];
                let answer: Option<i64> = r.get(25)?;
                Ok(answer.map(|a| (turn, a)))
            }
            None => Ok(None),
        }
    };
    // The conversation goes on from the latest answer that continued it, as
    // the TUI does: never a judge's, and of compare answers only the chosen
    // one (the left one after a tie; none after "both bad" or no pick).
    let answered = last(
        "AND (t.answer <> '' OR EXISTS (SELECT 1 FROM tool_calls c WHERE c.turn = t.id))
         AND t.mode <> 'judge'
         AND (t.mode <> 'compare' OR json_extract(t.extra, '$.pick') = 'chosen'
              OR (json_extract(t.extra, '$.pick') = 'tie' AND t.lane = 0))",
    )?;
    let latest = last("")?;
    let next_turn_id = latest.as_ref().map_or(1, |(t, _)| t.turn_id.saturating_add(1));
    // A prompt the user typed that never got an answer is offered again.
    let asked = last("AND t.mode IN ('chat', 'agent', 'compare')")?;
    let pending_prompt = match (&asked, &answered) {
        (Some((l, _)), a)
            if a.as_ref().is_none_or(|(a, _)| a.turn_id < l.turn_id) && l.response.text.trim().is_empty() =>
        {
            l.request
                .messages
                .first()
                .map(|m| m.content.clone())
                .filter(|p| !p.trim().is_empty())
        }
        _ => None,
    };
    let (mut messages, from) = match &answered {
        Some((t, leaf)) => (conversation_to(c, *leaf)?, Some(t)),
        None => (Vec::new(), latest.as_ref().map(|(t, _)| t)),
    };
    let system = if messages.first().is_some_and(|m| m.role == Role::System) {
        Some(messages.remove(0).content)
    } else if answered.is_some() {
        None
    } else {
        system
    };
    Ok(Some(Restored {
        session_id: id.to_string(),
        title,
        folder: folder.map(PathBuf::from),
        endpoint: from.map_or(endpoint, |t| t.endpoint.clone()),
        model: from.map_or(model, |t| t.model.clone()),
        participant: from.and_then(|t| t.participant_name.clone()),
        mode: match from {
            Some(t) => t.mode,
            None => parse_mode(&mode)?,
        },
        params: from.map(|t| t.request.params.clone()).unwrap_or_default(),
        system,
        messages,
        pending_prompt,
        next_turn_id,
    }))
}

/// Votes, oldest first; only those of `session` when given.
pub fn votes(c: &Connection, session: Option<&str>) -> Result<Vec<StoredVote>> {
    let mut st = c.prepare_cached(
        "SELECT id, created_at, session_id, mode, voter, prompt,
            left_endpoint, left_model, left_name, left_turn_id, left_answer,
            right_endpoint, right_model, right_name, right_turn_id, right_answer, choice, note
         FROM votes WHERE ?1 IS NULL OR session_id = ?1 ORDER BY id",
    )?;
    let mut rows = st.query(params![session])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let mode: String = r.get(3)?;
        let prompt: String = r.get(5)?;
        let choice: String = r.get(16)?;
        let side = |at: usize| -> rusqlite::Result<VoteSide> {
            Ok(VoteSide {
                endpoint: r.get(at)?,
                model: r.get(at + 1)?,
                name: r.get(at + 2)?,
                turn_id: r.get(at + 3)?,
                answer: r.get(at + 4)?,
            })
        };
        out.push(StoredVote {
            id: r.get(0)?,
            vote: Vote {
                created_at: r.get(1)?,
                session_id: r.get(2)?,
                mode: parse_mode(&mode)?,
                voter: r.get(4)?,
                prompt: serde_json::from_str(&prompt).map_err(|e| ReadError::BadData(format!("vote prompt: {e}")))?,
                left: side(6)?,
                right: side(11)?,
                choice: VoteChoice::parse(&choice).ok_or_else(|| bad("vote choice", &choice))?,
                note: r.get(17)?,
            },
        });
    }
    Ok(out)
}
