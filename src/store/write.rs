//! Writes: sessions, turns (idempotent upserts), tool calls, votes.
//!
//! A turn's request is stored as a path in the session's message tree. The
//! writer remembers, per session, the path of the last turn it wrote
//! ([`PathCache`]); the next request normally extends it (previous answer, then
//! the new prompt), which is checked on the first message and the boundary
//! message, so a turn costs the same whatever the session's length. Anything
//! else (a changed system prompt, a prompt dropped after a failure, an arena
//! lane, a writer started on an old session) falls back to comparing the whole
//! request with the session's latest path, once.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use crate::conversation::{Message, Role, Turn};

use super::model::{Phase, SessionMeta, ToolCallStatus, TurnState, Vote, turn_extra};

/// One write, as the writer thread queues them.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOp {
    Session(SessionMeta),
    Turn {
        session: String,
        turn: Box<Turn>,
        phase: Phase,
    },
    ToolCall {
        session: String,
        call_id: String,
        status: ToolCallStatus,
        result: Option<String>,
    },
    Vote(Box<Vote>),
}

impl WriteOp {
    /// What the write is about, for error reports.
    pub fn describe(&self) -> String {
        match self {
            WriteOp::Session(m) => format!("session {}", m.id),
            WriteOp::Turn { session, turn, .. } => format!("turn {} of session {session}", turn.turn_id),
            WriteOp::ToolCall { call_id, .. } => format!("tool call {call_id}"),
            WriteOp::Vote(_) => "vote".into(),
        }
    }
}

/// A message node: `(id, fingerprint)`.
type Node = (i64, u64);

/// The ends of the message path of the last turn written in a session: its
/// request (`context_len` messages, from `first` to `context_last`) and its
/// answer. Constant size, so remembering it costs the same at any length.
#[derive(Debug, Clone)]
pub struct CachedPath {
    turn_id: u32,
    context_len: usize,
    first: Node,
    context_last: Option<Node>,
    answer: Node,
}

/// Where a request's messages are in the tree: how many, the first and the last.
struct Context {
    len: usize,
    first: Option<Node>,
    last: Option<Node>,
}

/// Cached paths of the sessions written recently.
#[derive(Debug, Default)]
pub struct PathCache {
    map: HashMap<String, CachedPath>,
}

impl PathCache {
    const MAX: usize = 16;

    pub fn get(&self, session: &str) -> Option<&CachedPath> {
        self.map.get(session)
    }

    pub fn put(&mut self, session: &str, path: CachedPath) {
        if self.map.len() >= Self::MAX && !self.map.contains_key(session) {
            self.map.clear();
        }
        self.map.insert(session.to_string(), path);
    }
}

/// A stable 64-bit fingerprint of everything a message carries (FNV-1a; the
/// value is stored, so it must not change between builds).
pub fn fingerprint(m: &Message) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(PRIME);
        }
    };
    eat(m.role.as_str().as_bytes());
    eat(m.content.as_bytes());
    eat(m.name.as_deref().unwrap_or("\u{0}none").as_bytes());
    eat(m.reasoning.as_deref().unwrap_or("\u{0}none").as_bytes());
    eat(m.tool_call_id.as_deref().unwrap_or("\u{0}none").as_bytes());
    for c in &m.tool_calls {
        eat(c.id.as_bytes());
        eat(c.name.as_bytes());
        eat(c.arguments.as_bytes());
    }
    h
}

fn json_err(e: serde_json::Error) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(e))
}

/// A session title from a prompt: its first line, at most 70 characters.
pub fn title_from(prompt: &str) -> String {
    let p = prompt.trim();
    let line = p.lines().next().unwrap_or(p).trim();
    let short: String = line.chars().take(70).collect();
    if short.len() < p.len() {
        format!("{short}…")
    } else {
        short
    }
}

/// Index of the first message this request adds: the one after its last
/// assistant message (0 when there is none).
pub fn new_inputs_start(msgs: &[Message]) -> usize {
    msgs.iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1)
}

/// The user's words in the messages a turn adds.
fn prompt_text(msgs: &[Message]) -> String {
    let users: Vec<&str> = msgs[new_inputs_start(msgs)..]
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect();
    users.join("\n\n")
}

pub fn upsert_session(c: &Connection, m: &SessionMeta) -> rusqlite::Result<()> {
    c.prepare_cached(
        "INSERT INTO sessions (id, started_at, updated_at, title, endpoint, model, system, folder, mode)
         VALUES (?1, ?2, ?2, coalesce(?3, ''), ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (id) DO UPDATE SET
            started_at = min(sessions.started_at, excluded.started_at),
            title = CASE WHEN ?3 IS NULL THEN sessions.title ELSE excluded.title END,
            endpoint = excluded.endpoint, model = excluded.model, system = excluded.system,
            folder = coalesce(excluded.folder, sessions.folder), mode = excluded.mode",
    )?
    .execute(params![
        m.id,
        m.started_at,
        m.title,
        m.endpoint,
        m.model,
        m.system,
        m.folder.as_ref().map(|p| p.to_string_lossy().into_owned()),
        m.mode.as_str(),
    ])?;
    Ok(())
}

fn insert_message(c: &Connection, session: &str, parent: Option<i64>, m: &Message, fp: u64) -> rusqlite::Result<i64> {
    let calls = if m.tool_calls.is_empty() {
        None
    } else {
        Some(serde_json::to_string(&m.tool_calls).map_err(json_err)?)
    };
    c.prepare_cached(
        "INSERT INTO messages (session_id, parent_id, role, content, name, reasoning, tool_calls, tool_call_id, fingerprint)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        session,
        parent,
        m.role.as_str(),
        m.content,
        m.name,
        m.reasoning,
        calls,
        m.tool_call_id,
        fp as i64
    ])?;
    Ok(c.last_insert_rowid())
}

fn update_message(c: &Connection, id: i64, m: &Message, fp: u64) -> rusqlite::Result<()> {
    let calls = if m.tool_calls.is_empty() {
        None
    } else {
        Some(serde_json::to_string(&m.tool_calls).map_err(json_err)?)
    };
    c.prepare_cached(
        "UPDATE messages SET content = ?2, name = ?3, reasoning = ?4, tool_calls = ?5, fingerprint = ?6 WHERE id = ?1",
    )?
    .execute(params![id, m.content, m.name, m.reasoning, calls, fp as i64])?;
    Ok(())
}

/// The path from the root to `leaf`: `(id, fingerprint)` per node.
pub fn path_to(c: &Connection, leaf: i64) -> rusqlite::Result<Vec<Node>> {
    let mut st = c.prepare_cached(
        "WITH RECURSIVE p(id, parent_id, fp, depth) AS (
            SELECT id, parent_id, fingerprint, 0 FROM messages WHERE id = ?1
            UNION ALL
            SELECT m.id, m.parent_id, m.fingerprint, p.depth + 1 FROM messages m JOIN p ON m.id = p.parent_id
         ) SELECT id, fp FROM p ORDER BY depth DESC",
    )?;
    let rows = st.query_map([leaf], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)? as u64)))?;
    rows.collect()
}

struct Existing {
    id: i64,
    context_id: Option<i64>,
    answer_id: Option<i64>,
}

/// Place the request's messages in the tree: reuse the longest stored
/// prefix, append the rest. Returns where they are and the index of the first
/// message appended.
fn context_path(
    c: &Connection,
    cache: Option<&CachedPath>,
    session: &str,
    turn: &Turn,
    existing: Option<&Existing>,
) -> rusqlite::Result<(Context, usize)> {
    let req = &turn.request.messages;
    let fp_at = |i: usize| req.get(i).map(fingerprint);
    if let Some(p) = cache {
        // The same turn again (a checkpoint, then the final write): same request.
        if let Some(ex) = existing
            && p.turn_id == turn.turn_id
            && req.len() == p.context_len
            && ex.context_id == p.context_last.map(|n| n.0)
            && (req.is_empty() || (fp_at(0) == Some(p.first.1) && fp_at(req.len() - 1) == p.context_last.map(|n| n.1)))
        {
            let ctx = Context {
                len: req.len(),
                first: p.context_last.map(|_| p.first),
                last: p.context_last,
            };
            return Ok((ctx, req.len()));
        }
        // The usual next turn: the last request and its answer, then new messages.
        let path_len = p.context_len + 1;
        if existing.is_none()
            && req.len() >= path_len
            && fp_at(0) == Some(p.first.1)
            && fp_at(path_len - 1) == Some(p.answer.1)
        {
            let ctx = Context {
                len: path_len,
                first: Some(p.first),
                last: Some(p.answer),
            };
            return append(c, session, req, ctx);
        }
    }
    // Compare the whole request with this turn's stored path, or the session's latest.
    let leaf = match existing {
        Some(ex) => ex.answer_id.or(ex.context_id),
        None => c
            .prepare_cached(
                "SELECT coalesce(answer_id, context_id) FROM turns WHERE session_id = ?1
                 ORDER BY turn_id DESC LIMIT 1",
            )?
            .query_row([session], |r| r.get::<_, Option<i64>>(0))
            .optional()?
            .flatten(),
    };
    let path = match leaf {
        Some(l) => path_to(c, l)?,
        None => Vec::new(),
    };
    let k = path
        .iter()
        .zip(req)
        .take_while(|((_, fp), m)| *fp == fingerprint(m))
        .count();
    let ctx = Context {
        len: k,
        first: path.first().copied().filter(|_| k > 0),
        last: k.checked_sub(1).and_then(|i| path.get(i).copied()),
    };
    append(c, session, req, ctx)
}

/// Append `req[ctx.len..]` below `ctx.last`.
fn append(c: &Connection, session: &str, req: &[Message], mut ctx: Context) -> rusqlite::Result<(Context, usize)> {
    let from = ctx.len;
    for m in req.iter().skip(from) {
        let fp = fingerprint(m);
        let node = (insert_message(c, session, ctx.last.map(|n| n.0), m, fp)?, fp);
        ctx.first.get_or_insert(node);
        ctx.last = Some(node);
        ctx.len += 1;
    }
    Ok((ctx, from))
}

/// Write (or rewrite) a turn. Creates the session row if needed. Returns the
/// path to cache for the session.
pub fn upsert_turn(
    c: &Connection,
    cache: Option<&CachedPath>,
    session: &str,
    turn: &Turn,
    phase: Phase,
) -> rusqlite::Result<CachedPath> {
    let req = &turn.request.messages;
    let prompt = prompt_text(req);
    let system = req
        .first()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str());
    c.prepare_cached(
        "INSERT INTO sessions (id, started_at, updated_at, title, endpoint, model, system, mode)
         VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (id) DO NOTHING",
    )?
    .execute(params![
        session,
        turn.started_at,
        title_from(&prompt),
        turn.endpoint,
        turn.model,
        system,
        turn.mode.as_str()
    ])?;
    let existing = c
        .prepare_cached("SELECT id, context_id, answer_id FROM turns WHERE session_id = ?1 AND turn_id = ?2")?
        .query_row(params![session, turn.turn_id], |r| {
            Ok(Existing {
                id: r.get(0)?,
                context_id: r.get(1)?,
                answer_id: r.get(2)?,
            })
        })
        .optional()?;

    let (ctx, appended) = context_path(c, cache, session, turn, existing.as_ref())?;
    let context_id = ctx.last.map(|n| n.0);

    // The answer: a child of the request's last message, updated in place
    // while the turn streams.
    let answer = turn.assistant_message();
    let answer_fp = fingerprint(&answer);
    let reusable = existing
        .as_ref()
        .filter(|ex| ex.context_id == context_id)
        .and_then(|ex| ex.answer_id);
    let answer_id = match reusable {
        Some(id) => {
            update_message(c, id, &answer, answer_fp)?;
            id
        }
        None => insert_message(c, session, context_id, &answer, answer_fp)?,
    };

    let state = match phase {
        Phase::Streaming => TurnState::Streaming,
        Phase::Final => TurnState::from_status(turn.status),
    };
    let r = &turn.response;
    let s = &turn.stats;
    let values = params![
        session,
        turn.turn_id,
        turn.started_at,
        turn.endpoint,
        turn.model,
        turn.participant_name,
        turn.mode.as_str(),
        state.as_str(),
        prompt,
        r.text,
        r.reasoning,
        r.finish_reason,
        r.error,
        turn.request.params.temperature.map(f64::from),
        turn.request.params.max_tokens,
        context_id,
        answer_id,
        s.ttft_ms.map(|v| v as i64),
        s.duration_ms as i64,
        s.input_tokens as i64,
        s.output_tokens as i64,
        s.usage_reported,
        s.tokens_per_sec,
        s.retries,
        turn.lane,
        turn_extra(turn),
    ];
    let turn_row = match existing.as_ref() {
        Some(ex) => {
            c.prepare_cached(
                "UPDATE turns SET started_at = ?3, endpoint = ?4, model = ?5, participant = ?6, mode = ?7,
                    status = ?8, prompt = ?9, answer = ?10, reasoning = ?11, finish_reason = ?12, error = ?13,
                    temperature = ?14, max_tokens = ?15, context_id = ?16, answer_id = ?17, ttft_ms = ?18,
                    duration_ms = ?19, input_tokens = ?20, output_tokens = ?21, usage_reported = ?22,
                    tokens_per_sec = ?23, retries = ?24, lane = ?25, extra = ?26
                 WHERE session_id = ?1 AND turn_id = ?2",
            )?
            .execute(values)?;
            ex.id
        }
        None => {
            c.prepare_cached(
                "INSERT INTO turns (session_id, turn_id, started_at, endpoint, model, participant, mode, status,
                    prompt, answer, reasoning, finish_reason, error, temperature, max_tokens, context_id, answer_id,
                    ttft_ms, duration_ms, input_tokens, output_tokens, usage_reported, tokens_per_sec, retries,
                    lane, extra)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
                    ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
            )?
            .execute(values)?;
            let id = c.last_insert_rowid();
            c.prepare_cached(
                "UPDATE sessions SET updated_at = max(updated_at, ?2), endpoint = ?3, model = ?4,
                    turn_count = turn_count + 1, title = CASE WHEN title = '' THEN ?5 ELSE title END
                 WHERE id = ?1",
            )?
            .execute(params![
                session,
                turn.started_at,
                turn.endpoint,
                turn.model,
                title_from(&prompt)
            ])?;
            id
        }
    };

    write_tool_calls(c, session, turn_row, turn, existing.is_some(), &req[appended..])?;

    let answer = (answer_id, answer_fp);
    Ok(CachedPath {
        turn_id: turn.turn_id,
        context_len: ctx.len,
        first: ctx.first.unwrap_or(answer),
        context_last: ctx.last,
        answer,
    })
}

/// The calls the answer requested, and the results the request's new tool
/// messages carry for earlier calls.
fn write_tool_calls(
    c: &Connection,
    session: &str,
    turn_row: i64,
    turn: &Turn,
    rewrite: bool,
    new_messages: &[Message],
) -> rusqlite::Result<()> {
    let calls = &turn.response.tool_calls;
    if rewrite {
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        c.prepare_cached(
            "DELETE FROM tool_calls WHERE turn = ?1 AND call_id NOT IN (SELECT value FROM json_each(?2))",
        )?
        .execute(params![turn_row, serde_json::to_string(&ids).map_err(json_err)?])?;
    }
    for (seq, call) in calls.iter().enumerate() {
        c.prepare_cached(
            "INSERT INTO tool_calls (turn, seq, call_id, name, arguments) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (turn, call_id) DO UPDATE SET seq = excluded.seq, name = excluded.name,
                arguments = excluded.arguments",
        )?
        .execute(params![turn_row, seq as i64, call.id, call.name, call.arguments])?;
    }
    for m in new_messages.iter().filter(|m| m.role == Role::Tool) {
        if let Some(id) = &m.tool_call_id {
            c.prepare_cached(
                "UPDATE tool_calls SET result = ?3,
                    status = CASE WHEN status IN ('requested', 'running') THEN 'done' ELSE status END
                 WHERE call_id = ?2 AND turn IN (SELECT id FROM turns WHERE session_id = ?1)",
            )?
            .execute(params![session, id, m.content])?;
        }
    }
    Ok(())
}

/// Set a tool call's status (and result, when given). Returns the rows changed.
pub fn set_tool_call(
    c: &Connection,
    session: &str,
    call_id: &str,
    status: ToolCallStatus,
    result: Option<&str>,
) -> rusqlite::Result<usize> {
    c.prepare_cached(
        "UPDATE tool_calls SET status = ?3, result = coalesce(?4, result)
         WHERE call_id = ?2 AND turn IN (SELECT id FROM turns WHERE session_id = ?1)",
    )?
    .execute(params![session, call_id, status.as_str(), result])
}

pub fn insert_vote(c: &Connection, v: &Vote) -> rusqlite::Result<i64> {
    let prompt = serde_json::to_string(&v.prompt).map_err(json_err)?;
    c.prepare_cached(
        "INSERT INTO votes (created_at, session_id, mode, voter, prompt,
            left_endpoint, left_model, left_name, left_turn_id, left_answer,
            right_endpoint, right_model, right_name, right_turn_id, right_answer, choice, note)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?
    .execute(params![
        v.created_at,
        v.session_id,
        v.mode.as_str(),
        v.voter,
        prompt,
        v.left.endpoint,
        v.left.model,
        v.left.name,
        v.left.turn_id,
        v.left.answer,
        v.right.endpoint,
        v.right.model,
        v.right.name,
        v.right.turn_id,
        v.right.answer,
        v.choice.as_str(),
        v.note,
    ])?;
    Ok(c.last_insert_rowid())
}
