//! History in the TUI: `/history` (recent sessions), `/search QUERY` (ranked
//! hits with their snippets) and `/resume ID`, all answered by the history
//! database off the UI task; choosing a session in the picker resumes it —
//! conversation, endpoint, model, system prompt, the transcript, and the same
//! session folder and history entry for the turns that follow.

use std::path::Path;

use super::{App, Effect};
use crate::conversation::{Role, TurnStatus};
use crate::orchestration::TurnRef;
use crate::records::writer::SessionStart;
use crate::store::{HIT_END, HIT_START, Restored, SearchHit, SessionDetail, SessionSummary, Store};
use crate::tui::mode::{Overlay, PickerKind, Transition, UiMode};
use crate::tui::transcript::{Answer, AnswerState, EntryKind, NoticeLevel};

/// A question for the history database.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryRequest {
    Recent,
    Search(String),
    /// A session id (or a unique prefix); `focus` is a turn to scroll to.
    Resume {
        id: String,
        focus: Option<u32>,
    },
}

/// The database's answer.
#[derive(Debug)]
pub enum HistoryReply {
    Recent(Vec<SessionSummary>),
    Search {
        query: String,
        hits: Vec<SearchHit>,
    },
    Resume {
        restored: Box<Restored>,
        detail: Box<SessionDetail>,
        focus: Option<u32>,
    },
    Failed(String),
}

/// Most sessions `/history` lists, and hits `/search` shows.
const LIST_LIMIT: usize = 200;

/// Answer `req` from the database at `db` (blocking: call off the UI task).
pub fn answer(db: &Path, req: HistoryRequest) -> HistoryReply {
    let store = match Store::open_read_only(db) {
        Ok(s) => s,
        Err(e) => return HistoryReply::Failed(e.to_string()),
    };
    let r = match req {
        HistoryRequest::Recent => store.list_sessions(LIST_LIMIT).map(HistoryReply::Recent),
        HistoryRequest::Search(query) => store
            .search(&query, LIST_LIMIT)
            .map(|hits| HistoryReply::Search { query, hits }),
        HistoryRequest::Resume { id, focus } => (|| {
            let id = store.resolve_session(&id)?;
            let restored = store.restore(&id)?;
            let detail = store.session(&id)?;
            Ok(match (restored, detail) {
                (Some(r), Some(d)) => HistoryReply::Resume {
                    restored: Box::new(r),
                    detail: Box::new(d),
                    focus,
                },
                _ => HistoryReply::Failed(format!("session {id} is not in the history")),
            })
        })(),
    };
    r.unwrap_or_else(|e| HistoryReply::Failed(e.to_string()))
}

/// The session id at the start of a picker line.
fn id_of(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        flat.chars().take(max).collect::<String>() + "…"
    } else {
        flat
    }
}

impl App {
    /// `/history`, `/search`, `/resume ID`: ask the database.
    pub fn history(&mut self, req: HistoryRequest) -> Result<(), String> {
        if matches!(req, HistoryRequest::Resume { .. }) && self.is_busy() {
            return Err("an answer is still streaming — Esc cancels it first".into());
        }
        if !self.history_on {
            return Err("history is off (--no-log, or the database could not be opened)".into());
        }
        self.push_effect(Effect::History(req));
        Ok(())
    }

    /// The database answered.
    pub fn on_history(&mut self, reply: HistoryReply) {
        match reply {
            HistoryReply::Failed(e) => self.flash(e, NoticeLevel::Error),
            HistoryReply::Recent(list) if list.is_empty() => {
                self.flash("no sessions in the history yet", NoticeLevel::Info)
            }
            HistoryReply::Recent(list) => {
                let items = list
                    .iter()
                    .map(|s| {
                        format!(
                            "{}  {} turns · {} · {}",
                            s.id,
                            s.turn_count,
                            s.model,
                            one_line(&s.title, 70)
                        )
                    })
                    .collect();
                self.open_session_picker(items, Vec::new());
            }
            HistoryReply::Search { query, hits } if hits.is_empty() => {
                self.flash(format!("nothing in the history matches “{query}”"), NoticeLevel::Info)
            }
            HistoryReply::Search { hits, .. } => {
                let items = hits
                    .iter()
                    .map(|h| {
                        let snippet = one_line(&h.highlighted("«", "»"), 90).replace([HIT_START, HIT_END], "");
                        format!("{}  #{} {} · {snippet}", h.session_id, h.turn_id, h.model)
                    })
                    .collect();
                let focus = hits.iter().map(|h| h.turn_id).collect();
                self.open_session_picker(items, focus);
            }
            HistoryReply::Resume {
                restored,
                detail,
                focus,
            } => {
                if let Err(e) = self.resume_session(*restored, &detail, focus) {
                    self.flash(e, NoticeLevel::Error);
                }
            }
        }
    }

    fn open_session_picker(&mut self, items: Vec<String>, focus: Vec<u32>) {
        self.overlay_state.session_focus = focus;
        self.overlay_state.open_picker(PickerKind::Session, items, "");
        let _ = self.modes.apply(Transition::Open(Overlay::Picker(PickerKind::Session)));
    }

    /// A line of the session picker was chosen (its index among all items).
    pub fn session_chosen(&mut self, line: &str, index: Option<usize>) {
        let focus = index.and_then(|i| self.overlay_state.session_focus.get(i).copied());
        let id = id_of(line).to_string();
        if let Err(e) = self.history(HistoryRequest::Resume { id, focus }) {
            self.flash(e, NoticeLevel::Warning);
        }
    }

    /// Continue a recorded session: its conversation, settings and transcript.
    pub fn resume_session(&mut self, r: Restored, detail: &SessionDetail, focus: Option<u32>) -> Result<(), String> {
        if self.is_busy() {
            return Err("an answer is still streaming — Esc cancels it first".into());
        }
        let mut warn = None;
        match self.config.endpoint(&r.endpoint) {
            Some(_) => {
                self.endpoint = r.endpoint.clone();
                self.model = r.model.clone();
            }
            None => {
                warn = Some(format!(
                    "endpoint `{}` is not configured any more — continuing on {} · {}",
                    r.endpoint, self.endpoint, self.model
                ))
            }
        }
        if self.modes.mode() != UiMode::Chat && self.modes.mode() != UiMode::Agent {
            let _ = self.modes.apply(Transition::SwitchMode(UiMode::Chat));
            self.arena = None;
            self.compare = None;
        }
        self.conversation.system = r.system.clone();
        self.conversation.messages = r.messages.clone();
        self.conversation.session_tokens = detail
            .turns
            .iter()
            .map(|t| t.turn.stats.input_tokens + t.turn.stats.output_tokens)
            .sum();
        if r.params.temperature.is_some() {
            self.params.temperature = r.params.temperature;
        }
        if r.params.max_tokens.is_some() {
            self.params.max_tokens = r.params.max_tokens;
        }
        self.next_turn = r.next_turn_id.max(1);
        // The transcript: each recorded turn's prompt and answer.
        self.transcript.clear();
        self.turns.clear();
        let mut focus_entry = None;
        for st in &detail.turns {
            let t = &st.turn;
            for m in &t.request.messages {
                if m.role == Role::User {
                    let i = self.transcript.push(EntryKind::User {
                        text: m.content.clone(),
                        failed: false,
                    });
                    if Some(t.turn_id) == focus && focus_entry.is_none() {
                        focus_entry = Some(i);
                    }
                }
            }
            let label = match &t.participant_name {
                Some(p) => format!("{p} · {} · {}", t.model, t.endpoint),
                None => format!("{} · {}", t.model, t.endpoint),
            };
            let mut a = Answer::new(
                TurnRef {
                    turn_id: t.turn_id,
                    lane: 0,
                },
                label,
            );
            a.text = t.response.text.clone();
            a.reasoning = t.response.reasoning.clone();
            a.tool_calls = t.response.tool_calls.clone();
            a.stats = Some(t.stats.clone());
            a.state = match (t.status, &t.response.error) {
                (TurnStatus::Completed, _) => AnswerState::Done,
                (TurnStatus::Failed, Some(e)) => AnswerState::Failed(e.clone()),
                (TurnStatus::Failed, None) => AnswerState::Failed("failed".into()),
                (TurnStatus::Cancelled, _) => AnswerState::Cancelled,
            };
            let i = self.transcript.push(EntryKind::Assistant(Box::new(a)));
            if Some(t.turn_id) == focus && focus_entry.is_none() {
                focus_entry = Some(i);
            }
            self.turns.push(t.clone());
        }
        let n = detail.turns.len();
        self.notice(
            format!(
                "Resumed session {} — {n} {} · continuing on {} · {}",
                r.session_id,
                if n == 1 { "turn" } else { "turns" },
                self.model,
                self.endpoint
            ),
            NoticeLevel::Info,
        );
        match focus_entry {
            Some(i) => self.transcript.scroll_to_entry(i),
            None => self.transcript.scroll_bottom(),
        }
        if let Some(p) = &r.pending_prompt
            && self.input.is_empty()
        {
            self.input.set_text(p);
            warn.get_or_insert_with(|| "the last prompt got no answer — it is back in the message box".into());
        }
        let folder = r.folder.clone().filter(|f| f.is_dir());
        self.continue_session(&r.session_id, folder.map(SessionStart::Reopen));
        self.last_prompt = None;
        match warn {
            Some(w) => self.flash(w, NoticeLevel::Warning),
            None => self.flash(format!("resumed {}", r.session_id), NoticeLevel::Info),
        }
        Ok(())
    }
}
