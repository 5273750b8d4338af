//! `pai votes …`: list the votes in the history database, and export the ones
//! with a winner as preference pairs for DPO training. Also owns what
//! `pai leaderboard` shares with them: opening the history, picking votes by
//! voter, and saying how to make votes when there are none.
//!
//! The export format is TRL's *conversational preference* format: `prompt`,
//! `chosen` and `rejected` are lists of `{role, content}` messages, so
//! `datasets.load_dataset("json", …)` gives rows `DPOTrainer` takes as they
//! are (TRL applies the chat template to `prompt + chosen`, which needs lists).
//! Extra columns (models, endpoints, voter, time, session) ride along; TRL
//! ignores them.

use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use unicode_width::UnicodeWidthStr;

use crate::cli::{VoterArg, VotesAction, VotesFormat};
use crate::config::Config;
use crate::conversation::{Message, Role};
use crate::sessions_cmd::{Io, fit, one_line, open_for_reading, pad, when};
use crate::store::{self, StoredVote, Vote, VoteChoice};

const OK: i32 = 0;
const FAILED: i32 = 1;

/// How votes come about, for the messages shown when there are none.
pub(crate) const HOW_TO_VOTE: &str = "pick the better answer after `/compare A B` in the TUI, \
     or run an arena that has a judge (`/arena NAME`)";

/// The votes read for a command.
pub(crate) struct Loaded {
    pub path: PathBuf,
    /// All votes in the database.
    pub total: usize,
    /// Those by the voters asked for, oldest first.
    pub votes: Vec<StoredVote>,
}

impl Loaded {
    /// Say why there is nothing to show (no votes at all, or none by these voters).
    pub fn say_none(&self, voter: VoterArg, io: &mut Io<'_>) {
        let _ = if self.total == 0 {
            writeln!(io.err, "pai: no votes in {} yet — {HOW_TO_VOTE}", self.path.display())
        } else {
            writeln!(
                io.err,
                "pai: none of the {} vote(s) in {} are {} — `--voter all` takes them all",
                self.total,
                self.path.display(),
                voters(voter)
            )
        };
    }
}

/// `by you`, `by judges`, `by anyone`.
pub(crate) fn voters(voter: VoterArg) -> &'static str {
    match voter {
        VoterArg::User => "by you",
        VoterArg::Judge => "by judges",
        VoterArg::All => "by anyone",
    }
}

/// Whether a vote's `voter` (`user`, `judge:…`) is one of `wanted`.
pub(crate) fn is_by(wanted: VoterArg, voter: &str) -> bool {
    match wanted {
        VoterArg::User => voter == "user",
        VoterArg::Judge => voter.starts_with("judge"),
        VoterArg::All => true,
    }
}

/// Read the votes by `voter`; `Err(exit code)` after saying why they cannot be read.
pub(crate) fn load(config: &Config, db: Option<&Path>, voter: VoterArg, io: &mut Io<'_>) -> Result<Loaded, i32> {
    let path = match db {
        Some(p) => p.to_path_buf(),
        None => store::location(config).map_err(|e| {
            let _ = writeln!(io.err, "pai: {e}");
            FAILED
        })?,
    };
    if !path.exists() {
        let _ = writeln!(
            io.err,
            "pai: no votes yet ({} does not exist) — {HOW_TO_VOTE}",
            path.display()
        );
        return Err(FAILED);
    }
    let fail = |e: store::StoreError, io: &mut Io<'_>| {
        let _ = writeln!(io.err, "pai: {e}");
        FAILED
    };
    let store = match open_for_reading(config, db, io) {
        Ok(Some(s)) => s,
        Ok(None) => return Err(FAILED),
        Err(e) => return Err(fail(e, io)),
    };
    let all = store.votes(None).map_err(|e| fail(e, io))?;
    let total = all.len();
    let votes = all.into_iter().filter(|v| is_by(voter, &v.vote.voter)).collect();
    Ok(Loaded { path, total, votes })
}

/// Run one `pai votes` action; returns the exit code.
pub fn run(config: &Config, db: Option<&Path>, action: VotesAction, io: &mut Io<'_>) -> i32 {
    let voter = match action {
        VotesAction::Export { voter, .. } | VotesAction::List { voter, .. } => voter,
    };
    let loaded = match load(config, db, voter, io) {
        Ok(l) => l,
        Err(code) => return code,
    };
    if loaded.votes.is_empty() {
        loaded.say_none(voter, io);
        return OK;
    }
    match action {
        VotesAction::Export { format, output, .. } => export(&loaded.votes, format, output.as_deref(), io),
        VotesAction::List { limit, .. } => list(&loaded.votes, limit, io),
    }
}

/// One message as TRL reads it.
#[derive(Serialize)]
struct ChatMessage<'a> {
    role: &'static str,
    content: &'a str,
}

impl<'a> ChatMessage<'a> {
    fn of(m: &'a Message) -> Self {
        ChatMessage {
            role: m.role.as_str(),
            content: &m.content,
        }
    }

    fn answer(text: &'a str) -> [Self; 1] {
        [ChatMessage {
            role: Role::Assistant.as_str(),
            content: text,
        }]
    }
}

/// One line of `dpo-jsonl`.
#[derive(Serialize)]
struct DpoPair<'a> {
    prompt: Vec<ChatMessage<'a>>,
    chosen: [ChatMessage<'a>; 1],
    rejected: [ChatMessage<'a>; 1],
    chosen_model: &'a str,
    rejected_model: &'a str,
    chosen_endpoint: &'a str,
    rejected_endpoint: &'a str,
    voter: &'a str,
    created_at: &'a str,
    session_id: Option<&'a str>,
}

/// Why a vote makes no pair.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Skipped {
    ties: usize,
    both_bad: usize,
    /// The prompt is empty or ends with neither a user nor an assistant
    /// message: a chat template cannot prompt an answer from it.
    no_prompt: usize,
}

impl Skipped {
    fn count(&mut self, why: NoPair) {
        match why {
            NoPair::Tie => self.ties += 1,
            NoPair::BothBad => self.both_bad += 1,
            NoPair::NoPrompt => self.no_prompt += 1,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum NoPair {
    Tie,
    BothBad,
    NoPrompt,
}

/// The pair for `v`, or why there is none.
fn pair(v: &Vote) -> Result<DpoPair<'_>, NoPair> {
    let Some((chosen, rejected)) = v.chosen_rejected() else {
        return Err(match v.choice {
            VoteChoice::BothBad => NoPair::BothBad,
            VoteChoice::Tie | VoteChoice::Left | VoteChoice::Right => NoPair::Tie,
        });
    };
    if !matches!(v.prompt.last().map(|m| m.role), Some(Role::User | Role::Assistant)) {
        return Err(NoPair::NoPrompt);
    }
    Ok(DpoPair {
        prompt: v.prompt.iter().map(ChatMessage::of).collect(),
        chosen: ChatMessage::answer(&chosen.answer),
        rejected: ChatMessage::answer(&rejected.answer),
        chosen_model: &chosen.model,
        rejected_model: &rejected.model,
        chosen_endpoint: &chosen.endpoint,
        rejected_endpoint: &rejected.endpoint,
        voter: &v.voter,
        created_at: &v.created_at,
        session_id: v.session_id.as_deref(),
    })
}

/// Write the pairs of `votes`, one a line; returns how many were written and skipped.
fn write_pairs(out: &mut dyn Write, votes: &[StoredVote]) -> std::io::Result<(usize, Skipped)> {
    let mut written = 0;
    let mut skipped = Skipped::default();
    for v in votes {
        match pair(&v.vote) {
            Ok(p) => {
                serde_json::to_writer(&mut *out, &p)?;
                out.write_all(b"\n")?;
                written += 1;
            }
            Err(why) => skipped.count(why),
        }
    }
    Ok((written, skipped))
}

/// Write to `path` through a temporary file beside it: a reader never sees half.
fn write_file(path: &Path, votes: &[StoredVote]) -> std::io::Result<(usize, Skipped)> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".part")
        .tempfile_in(dir)?;
    let counts = {
        let mut w = BufWriter::new(tmp.as_file_mut());
        let counts = write_pairs(&mut w, votes)?;
        w.flush()?;
        counts
    };
    tmp.as_file().sync_data()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(counts)
}

fn export(votes: &[StoredVote], format: VotesFormat, output: Option<&Path>, io: &mut Io<'_>) -> i32 {
    let VotesFormat::DpoJsonl = format;
    let result = match output {
        Some(path) => write_file(path, votes),
        None => {
            let mut w = BufWriter::new(&mut *io.out);
            write_pairs(&mut w, votes).and_then(|counts| w.flush().map(|()| counts))
        }
    };
    let (written, skipped) = match result {
        Ok(counts) => counts,
        // The reader went away (`| head`): nothing more to say.
        Err(e) if e.kind() == ErrorKind::BrokenPipe && output.is_none() => return OK,
        Err(e) => {
            let _ = match output {
                Some(p) => writeln!(
                    io.err,
                    "pai: cannot write {}: {e} — check that its folder exists and is writable",
                    p.display()
                ),
                None => writeln!(io.err, "pai: cannot write the export: {e}"),
            };
            return FAILED;
        }
    };
    let to = output.map(|p| format!(" to {}", p.display())).unwrap_or_default();
    let no_prompt = match skipped.no_prompt {
        0 => String::new(),
        n => format!(", and {n} whose prompt ends with no user message"),
    };
    let _ = writeln!(
        io.err,
        "exported {written} preference pair(s){to}; skipped {} tie(s) and {} both-bad vote(s) (no winner){no_prompt}",
        skipped.ties, skipped.both_bad
    );
    OK
}

/// `model · endpoint`, how models are named on the leaderboard and in lists.
pub(crate) fn model_id(model: &str, endpoint: &str) -> String {
    format!("{model} · {endpoint}")
}

fn choice_label(c: VoteChoice) -> &'static str {
    match c {
        VoteChoice::Left => "left",
        VoteChoice::Right => "right",
        VoteChoice::Tie => "tie",
        VoteChoice::BothBad => "both bad",
    }
}

/// The question asked: the last user message (else the last message).
fn question(prompt: &[Message]) -> &str {
    prompt
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .or(prompt.last())
        .map_or("", |m| m.content.as_str())
}

fn list(votes: &[StoredVote], limit: usize, io: &mut Io<'_>) -> i32 {
    let shown = if limit == 0 {
        votes.len()
    } else {
        limit.min(votes.len())
    };
    let rows: Vec<[String; 6]> = votes
        .iter()
        .rev()
        .take(shown)
        .map(|v| {
            let v = &v.vote;
            [
                when(&v.created_at),
                fit(&one_line(&v.voter), 24),
                fit(&one_line(&model_id(&v.left.model, &v.left.endpoint)), 30),
                fit(&one_line(&model_id(&v.right.model, &v.right.endpoint)), 30),
                choice_label(v.choice).to_string(),
                fit(&one_line(question(&v.prompt)), 50),
            ]
        })
        .collect();
    let header = ["WHEN", "VOTER", "LEFT", "RIGHT", "CHOICE", "PROMPT"];
    let width = |col: usize| {
        rows.iter()
            .map(|r| r[col].width())
            .chain([header[col].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..5).map(width).collect();
    let mut out = String::new();
    for row in std::iter::once(header.map(String::from)).chain(rows) {
        for (col, cell) in row.iter().enumerate().take(5) {
            out.push_str(&pad(cell, widths[col]));
            out.push_str("  ");
        }
        out.push_str(&row[5]);
        out.push('\n');
    }
    if shown < votes.len() {
        out.push_str(&format!(
            "({shown} of {} votes, newest first; -n 0 shows all)\n",
            votes.len()
        ));
    }
    let _ = io.out.write_all(out.as_bytes());
    OK
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::TurnMode;
    use crate::store::VoteSide;

    fn side(model: &str, answer: &str) -> VoteSide {
        VoteSide {
            endpoint: "ep".into(),
            model: model.into(),
            name: None,
            turn_id: Some(1),
            answer: answer.into(),
        }
    }

    fn vote(choice: VoteChoice, prompt: Vec<Message>) -> StoredVote {
        StoredVote {
            id: 1,
            vote: Vote {
                created_at: "2026-01-02T03:04:05Z".into(),
                session_id: None,
                mode: TurnMode::Compare,
                voter: "user".into(),
                prompt,
                left: side("a", "A says"),
                right: side("b", "B says"),
                choice,
                note: None,
            },
        }
    }

    #[test]
    fn pairs_are_trl_conversational_preference_rows() {
        let prompt = vec![Message::system("Be brief."), Message::user("Hi?").with_name("me")];
        let votes = [
            vote(VoteChoice::Right, prompt.clone()),
            vote(VoteChoice::Tie, prompt.clone()),
            vote(VoteChoice::BothBad, prompt.clone()),
            vote(VoteChoice::Left, Vec::new()),
            vote(VoteChoice::Left, vec![Message::system("only a system prompt")]),
        ];
        let mut out = Vec::new();
        let (n, skipped) = write_pairs(&mut out, &votes).unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            skipped,
            Skipped {
                ties: 1,
                both_bad: 1,
                no_prompt: 2
            }
        );
        let text = String::from_utf8(out).unwrap();
        let row: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(
            row["prompt"],
            serde_json::json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}])
        );
        assert_eq!(
            row["chosen"],
            serde_json::json!([{"role": "assistant", "content": "B says"}])
        );
        assert_eq!(
            row["rejected"],
            serde_json::json!([{"role": "assistant", "content": "A says"}])
        );
        assert_eq!(
            (row["chosen_model"].as_str(), row["rejected_model"].as_str()),
            (Some("b"), Some("a"))
        );
        assert!(row["session_id"].is_null());
    }

    #[test]
    fn voters_are_told_apart() {
        assert!(is_by(VoterArg::User, "user"));
        assert!(!is_by(VoterArg::User, "judge:qwen · local"));
        assert!(is_by(VoterArg::Judge, "judge:qwen · local"));
        assert!(!is_by(VoterArg::Judge, "user"));
        assert!(is_by(VoterArg::All, "anyone"));
        assert_eq!(
            question(&[Message::user("q1"), Message::assistant("a"), Message::user("q2")]),
            "q2"
        );
        assert_eq!(question(&[]), "");
    }
}
