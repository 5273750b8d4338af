//! `pai sessions …`: list, show, search and export recorded sessions from the
//! history database; import session folders into it; recover from a damaged
//! file.
//!
//! Reads open their own connection (WAL: a running pai may keep writing). A
//! damaged database is reported and then read as far as it can be. Text from
//! the database (model output included) is made terminal-safe before printing.

use std::io::Write;
use std::path::{Path, PathBuf};

use unicode_width::UnicodeWidthChar;

use crate::cli::{ExportArg, SessionsAction};
use crate::config::Config;
use crate::conversation::{Role, Turn};
use crate::records::export::{ExportFormat, render_export};
use crate::records::write_atomic;
use crate::store::{
    self, HIT_END, HIT_START, SessionDetail, SessionMeta, Store, StoreError, StoredTurn, TurnState, WriteOp, fts_query,
};
use crate::util::sanitize::terminal_safe;

/// Exit codes: found / not found or failed / bad usage.
const OK: i32 = 0;
const FAILED: i32 = 1;
const USAGE: i32 = 2;

/// Where output goes; `color` allows ANSI highlighting (a terminal, no NO_COLOR).
pub struct Io<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
    pub color: bool,
}

/// Run one `pai sessions` action; returns the exit code.
pub fn run(config: &Config, db: Option<&Path>, action: SessionsAction, io: &mut Io<'_>) -> i32 {
    let result = match action {
        SessionsAction::Import { dir } => import(config, db, dir, io),
        SessionsAction::Recover => recover(config, db, io),
        read => match open_for_reading(config, db, io) {
            Ok(Some(store)) => match read {
                SessionsAction::List { limit } => list(&store, limit, io),
                SessionsAction::Show { id } => show(&store, &id, io),
                SessionsAction::Search { query, limit } => search(&store, &query.join(" "), limit, io),
                SessionsAction::Export { id, format, output } => export(&store, &id, format, output, io),
                SessionsAction::Import { .. } | SessionsAction::Recover => Ok(OK),
            },
            Ok(None) => Ok(FAILED),
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(io.err, "pai: {e}");
            FAILED
        }
    }
}

fn configured_path(config: &Config, db: Option<&Path>) -> Result<PathBuf, StoreError> {
    match db {
        Some(p) => Ok(p.to_path_buf()),
        None => store::location(config),
    }
}

/// The store to read; `None` (after saying why) when there is no history yet.
pub(crate) fn open_for_reading(
    config: &Config,
    db: Option<&Path>,
    io: &mut Io<'_>,
) -> Result<Option<Store>, StoreError> {
    let path = configured_path(config, db)?;
    if !path.exists() {
        let _ = writeln!(
            io.err,
            "pai: no history yet ({} does not exist) — sessions are recorded as you use pai; \
             `pai sessions import` adds the session folders recorded before",
            path.display()
        );
        return Ok(None);
    }
    let opened = if db.is_some() {
        Store::open_read_only(&path)
    } else {
        match Store::open(&path) {
            Err(e) if e.is_corrupt() => {
                let _ = writeln!(io.err, "pai: warning: {e}");
                let _ = writeln!(io.err, "pai: reading what is left of it, read-only");
                Store::open_read_only(&path)
            }
            other => other,
        }
    };
    let store = opened?;
    if let Some(w) = store.warning() {
        let _ = writeln!(io.err, "pai: warning: {} — {w}", path.display());
    }
    Ok(Some(store))
}

/// Terminal-safe, on one line.
pub(crate) fn one_line(s: &str) -> String {
    terminal_safe(s).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` cut to `width` display columns (with `…` when cut).
pub(crate) fn fit(s: &str, width: usize) -> String {
    let total: usize = s.chars().map(|c| c.width().unwrap_or(0)).sum();
    if total <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `s` padded with spaces to `width` display columns.
pub(crate) fn pad(s: &str, width: usize) -> String {
    let w: usize = s.chars().map(|c| c.width().unwrap_or(0)).sum();
    format!("{s}{}", " ".repeat(width.saturating_sub(w)))
}

/// `2026-11-21T18:46:05.123Z` → `2026-11-21 18:46`.
pub(crate) fn when(rfc3339: &str) -> String {
    match (rfc3339.get(..10), rfc3339.get(11..16)) {
        (Some(d), Some(t)) if rfc3339.as_bytes().get(10) == Some(&b'T') => format!("{d} {t}"),
        _ => one_line(rfc3339),
    }
}

fn list(store: &Store, limit: usize, io: &mut Io<'_>) -> Result<i32, StoreError> {
    let sessions = store.list_sessions(limit)?;
    if sessions.is_empty() {
        let _ = writeln!(
            io.err,
            "pai: no sessions in {} yet — `pai sessions import` adds session folders recorded before",
            store.path().display()
        );
        return Ok(OK);
    }
    let id_w = sessions.iter().map(|s| s.id.chars().count()).max().unwrap_or(2).max(2);
    let rows: Vec<(String, String)> = sessions
        .iter()
        .map(|s| {
            (
                fit(&one_line(&format!("{} · {}", s.endpoint, s.model)), 32),
                fit(&one_line(&s.title), 60),
            )
        })
        .collect();
    let model_w = rows.iter().map(|(m, _)| m.chars().count()).max().unwrap_or(5).max(5);
    let _ = writeln!(
        io.out,
        "{}  {:<16}  {:>5}  {}  TITLE",
        pad("ID", id_w),
        "LAST ACTIVE",
        "TURNS",
        pad("MODEL", model_w)
    );
    for (s, (model, title)) in sessions.iter().zip(rows) {
        let _ = writeln!(
            io.out,
            "{}  {:<16}  {:>5}  {}  {title}",
            pad(&one_line(&s.id), id_w),
            when(&s.updated_at),
            s.turn_count,
            pad(&model, model_w)
        );
    }
    Ok(OK)
}

fn load(store: &Store, id: &str) -> Result<SessionDetail, StoreError> {
    let full = store.resolve_session(id)?;
    store.session(&full)?.ok_or(StoreError::NotFound {
        id: id.to_string(),
        close: Vec::new(),
    })
}

fn show(store: &Store, id: &str, io: &mut Io<'_>) -> Result<i32, StoreError> {
    let d = load(store, id)?;
    let s = &d.summary;
    let mut out = String::new();
    out.push_str(&format!("Session {} — {}\n", one_line(&s.id), one_line(&s.title)));
    out.push_str(&format!(
        "  started {} · {} turn(s) · last answer by {} · {} · mode {}\n",
        when(&s.started_at),
        s.turn_count,
        one_line(&s.endpoint),
        one_line(&s.model),
        s.mode.as_str()
    ));
    if let Some(f) = &s.folder {
        out.push_str(&format!("  folder  {}\n", one_line(&f.display().to_string())));
    }
    if let Some(sys) = &d.system {
        out.push_str(&format!("  system  {}\n", one_line(sys)));
    }
    for t in &d.turns {
        out.push('\n');
        transcript_turn(&mut out, t);
    }
    let _ = io.out.write_all(out.as_bytes());
    Ok(OK)
}

fn transcript_turn(out: &mut String, st: &StoredTurn) {
    let t = &st.turn;
    for m in t.request.messages.iter().filter(|m| m.role != Role::System) {
        let who = match (m.role, &m.name) {
            (Role::Tool, _) => format!("tool result ({})", one_line(m.tool_call_id.as_deref().unwrap_or("?"))),
            (_, Some(n)) => one_line(n),
            (Role::User, None) => "You".into(),
            (Role::System | Role::Assistant, None) => m.role.as_str().into(),
        };
        out.push_str(&format!("── #{} {who} · {}\n", t.turn_id, when(&t.started_at)));
        out.push_str(terminal_safe(m.content.trim_end()).as_ref());
        out.push_str("\n\n");
    }
    out.push_str(&format!("── #{} {} · {}\n", t.turn_id, speaker(t), answer_facts(st)));
    if !t.response.reasoning.trim().is_empty() {
        for line in terminal_safe(t.response.reasoning.trim()).lines() {
            out.push_str(&format!("  │ {line}\n"));
        }
    }
    if !t.response.text.is_empty() {
        out.push_str(terminal_safe(t.response.text.trim_end()).as_ref());
        out.push('\n');
    }
    for c in &st.tool_calls {
        out.push_str(&format!(
            "→ tool call {} {} [{}]\n",
            one_line(&c.call.name),
            one_line(&c.call.arguments),
            c.status.as_str()
        ));
    }
    let note = match st.state {
        TurnState::Completed => None,
        TurnState::Streaming => Some(store::INTERRUPTED.to_string()),
        TurnState::Cancelled => Some("cancelled".into()),
        TurnState::Failed => Some(format!(
            "failed: {}",
            one_line(t.response.error.as_deref().unwrap_or("error"))
        )),
    };
    if let Some(n) = note {
        out.push_str(&format!("({n})\n"));
    }
}

fn speaker(t: &Turn) -> String {
    match &t.participant_name {
        Some(p) => format!("{} ({} @ {})", one_line(p), one_line(&t.model), one_line(&t.endpoint)),
        None => format!("{} @ {}", one_line(&t.model), one_line(&t.endpoint)),
    }
}

fn answer_facts(st: &StoredTurn) -> String {
    let s = &st.turn.stats;
    let mut facts = vec![st.state.as_str().to_string()];
    if s.duration_ms > 0 {
        facts.push(if s.duration_ms >= 1000 {
            format!("{:.1} s", s.duration_ms as f64 / 1000.0)
        } else {
            format!("{} ms", s.duration_ms)
        });
    }
    if s.output_tokens > 0 {
        facts.push(format!("{} tokens", s.output_tokens));
    }
    if let Some(r) = s.tokens_per_sec {
        facts.push(format!("{r:.1} tok/s"));
    }
    facts.join(" · ")
}

fn search(store: &Store, query: &str, limit: usize, io: &mut Io<'_>) -> Result<i32, StoreError> {
    if fts_query(query).is_none() {
        let _ = writeln!(
            io.err,
            "pai: nothing to search for in `{}` — give a word, \"a phrase\" or a prefix*",
            one_line(query)
        );
        return Ok(USAGE);
    }
    let hits = store.search(query, limit)?;
    if hits.is_empty() {
        let _ = writeln!(io.err, "pai: no prompt or answer matches `{}`", one_line(query));
        return Ok(FAILED);
    }
    let (open, close) = if io.color {
        ("\x1b[1;33m", "\x1b[0m")
    } else {
        ("**", "**")
    };
    let mut out = String::new();
    for h in &hits {
        out.push_str(&format!(
            "{} #{} · {} · {} · {} · {}\n",
            one_line(&h.session_id),
            h.turn_id,
            when(&h.started_at),
            one_line(&h.endpoint),
            one_line(&h.model),
            fit(&one_line(&h.session_title), 50)
        ));
        let snippet = one_line(&h.snippet).replace(HIT_START, open).replace(HIT_END, close);
        out.push_str(&format!("    {snippet}\n"));
    }
    let _ = io.out.write_all(out.as_bytes());
    Ok(OK)
}

fn export(
    store: &Store,
    id: &str,
    format: ExportArg,
    output: Option<PathBuf>,
    io: &mut Io<'_>,
) -> Result<i32, StoreError> {
    let d = load(store, id)?;
    let format = match format {
        ExportArg::Md => ExportFormat::Markdown,
        ExportArg::Html => ExportFormat::Html,
        ExportArg::Json => ExportFormat::Json,
    };
    let title = match format {
        ExportFormat::Json => d.summary.id.clone(),
        ExportFormat::Markdown | ExportFormat::Html if d.summary.title.trim().is_empty() => d.summary.id.clone(),
        ExportFormat::Markdown | ExportFormat::Html => d.summary.title.clone(),
    };
    let body = match render_export(format, &d.export_turns(), &title) {
        Ok(b) => b,
        Err(e) => {
            let _ = writeln!(io.err, "pai: cannot export session {}: {e}", d.summary.id);
            return Ok(FAILED);
        }
    };
    match output {
        Some(path) => {
            if let Err(e) = write_atomic(&path, body.as_bytes(), true) {
                let _ = writeln!(io.err, "pai: cannot write {}: {e}", path.display());
                return Ok(FAILED);
            }
            let _ = writeln!(
                io.err,
                "wrote {} ({} turn(s) of session {})",
                path.display(),
                d.turns.len(),
                d.summary.id
            );
        }
        None => {
            let _ = io.out.write_all(body.as_bytes());
        }
    }
    Ok(OK)
}

/// The turns of one session folder, in order; unreadable files are reported.
fn folder_turns(dir: &Path, io: &mut Io<'_>) -> Vec<Turn> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().ends_with("-turn.json"))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut turns = Vec::new();
    for f in files {
        match std::fs::read(&f)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<Turn>(&b).map_err(|e| e.to_string()))
        {
            Ok(t) => turns.push(t),
            Err(e) => {
                let _ = writeln!(io.err, "pai: skipping {}: {e}", f.display());
            }
        }
    }
    turns
}

fn import(config: &Config, db: Option<&Path>, dir: Option<PathBuf>, io: &mut Io<'_>) -> Result<i32, StoreError> {
    let root = dir.unwrap_or_else(|| config.defaults.sessions_dir.clone());
    let mut folders: Vec<PathBuf> = match std::fs::read_dir(&root) {
        Ok(d) => d
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect(),
        Err(e) => {
            let _ = writeln!(
                io.err,
                "pai: cannot read {}: {e} — give the folder that holds the session folders",
                root.display()
            );
            return Ok(USAGE);
        }
    };
    folders.sort();
    let mut store = Store::open(&configured_path(config, db)?)?;
    let (mut sessions, mut turns) = (0, 0);
    for folder in folders {
        let found = folder_turns(&folder, io);
        let Some(first) = found.first() else { continue };
        let id = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let system = first
            .request
            .messages
            .first()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.clone());
        let mut ops = vec![WriteOp::Session(SessionMeta {
            id: id.clone(),
            started_at: first.started_at.clone(),
            title: None,
            endpoint: first.endpoint.clone(),
            model: first.model.clone(),
            system,
            folder: Some(std::path::absolute(&folder).unwrap_or(folder.clone())),
            mode: first.mode,
        })];
        let n = found.len();
        ops.extend(found.into_iter().map(|t| WriteOp::Turn {
            session: id.clone(),
            turn: Box::new(t),
            phase: store::Phase::Final,
        }));
        let failed: Vec<StoreError> = store.apply(&ops)?.into_iter().filter_map(Result::err).collect();
        for e in &failed {
            let _ = writeln!(io.err, "pai: {}: {e}", folder.display());
        }
        if failed.is_empty() {
            sessions += 1;
            turns += n;
        }
    }
    let _ = writeln!(
        io.out,
        "imported {sessions} session(s), {turns} turn(s) from {} into {}",
        root.display(),
        store.path().display()
    );
    Ok(OK)
}

fn recover(config: &Config, db: Option<&Path>, io: &mut Io<'_>) -> Result<i32, StoreError> {
    let path = configured_path(config, db)?;
    let full = store::StoreOptions {
        check: store::IntegrityCheck::Always,
        ..Default::default()
    };
    match Store::open_with(&path, &full) {
        Ok(_) => {
            let _ = writeln!(io.out, "history database {} is healthy; nothing to do", path.display());
            Ok(OK)
        }
        Err(e) if e.is_corrupt() => {
            let (_, moved) = Store::start_fresh(&path)?;
            let kept = moved.map(|m| m.display().to_string()).unwrap_or_default();
            let _ = writeln!(
                io.out,
                "moved the damaged database to {kept} and started a new one at {}.\n\
                 `pai sessions import` rebuilds history from the session folders; \
                 `pai sessions --db {kept} list` reads what is left of the old one.",
                path.display()
            );
            Ok(OK)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_and_pad_by_display_width() {
        assert_eq!(fit("hello", 10), "hello");
        assert_eq!(fit("hello world", 6), "hello…");
        assert_eq!(fit("漢字漢字", 5), "漢字…");
        assert_eq!(pad("漢", 4), "漢  ");
        assert_eq!(when("2026-11-21T18:46:05.123Z"), "2026-11-21 18:46");
        assert_eq!(when("yesterday"), "yesterday");
        assert_eq!(one_line("a\n b\x1b[31m"), "a b␛[31m");
    }
}
