//! `pai compare -e A -e B PROMPT`, headless: the same prompt to every
//! endpoint at once; when all are done, each answer under a header with its
//! time to first token and speed (or one JSON object with `--json`); all
//! answers in one session folder. Exit codes: 0 all answered, 1 a request
//! failed, 130 cancelled with Ctrl-C (partial answers kept).
//!
//! Owns the compare command's output and exit code; the concurrent requests
//! are [`crate::orchestration::compare`]'s, the side-by-side TUI view is not here.

use std::io::IsTerminal;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Adapters, Recording, joined, piped_stdin, runtime, stats_brief};
use crate::cli::CompareArgs;
use crate::config::{Config, Secrets};
use crate::conversation::{Message, Params, Turn, TurnMode, TurnStatus};
use crate::headless::{EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, Io};
use crate::orchestration::compare::run_compare;
use crate::orchestration::{OrchestratorEvent, TurnContext, TurnOutcome, TurnRef, event_channel};
use crate::protocols::StreamEvent;
use crate::records::Templates;
use crate::util::sanitize::terminal_safe;

/// One answer to get: an endpoint and the model to ask there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    pub endpoint: String,
    pub model: String,
}

impl Lane {
    /// `endpoint/model`, as `-e` takes it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.endpoint, self.model)
    }
}

/// What `pai compare` was asked to run, resolved from config and flags.
#[derive(Debug, Clone)]
pub struct ComparePlan {
    pub lanes: Vec<Lane>,
    /// PROMPT, else piped stdin; `None` when there is neither.
    pub prompt: Option<String>,
    pub system: Option<String>,
    pub params: Params,
    pub json: bool,
}

/// `-e NAME` or `-e NAME/MODEL` (split at the first `/`); without a model,
/// `-m`, else the endpoint's default.
pub fn parse_lane(config: &Config, spec: &str, model: Option<&str>) -> Result<Lane, String> {
    let (name, own) = match spec.split_once('/') {
        Some((n, m)) if m.trim().is_empty() => {
            return Err(format!(
                "`-e {spec}` names no model after `/` — write -e {n}/MODEL, or -e {n} for its default model"
            ));
        }
        Some((n, m)) => (n, Some(m.trim())),
        None => (spec, None),
    };
    let ep = config.require_endpoint(name.trim())?;
    Ok(Lane {
        endpoint: ep.name.clone(),
        model: own
            .or(model)
            .map(str::to_string)
            .unwrap_or_else(|| config.default_model_for(ep)),
    })
}

/// Resolve the command line (reading a piped prompt).
pub fn plan(config: &Config, args: &CompareArgs) -> Result<ComparePlan, String> {
    if args.endpoints.len() < 2 {
        return Err(
            "compare needs at least two endpoints: pai compare -e A -e B PROMPT (one endpoint twice works too: -e local/model-a -e local/model-b)"
                .into(),
        );
    }
    let lanes = args
        .endpoints
        .iter()
        .map(|e| parse_lane(config, e, args.model.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    if lanes.len() > usize::from(u8::MAX) {
        return Err(format!("compare takes at most {} endpoints", u8::MAX));
    }
    let prompt = match joined(&args.prompt) {
        Some(p) => Some(p),
        None => piped_stdin()?,
    };
    Ok(ComparePlan {
        lanes,
        prompt,
        system: args
            .system
            .clone()
            .or_else(|| config.defaults.system.clone())
            .filter(|s| !s.trim().is_empty()),
        params: Params {
            temperature: args.temperature.or(config.defaults.temperature),
            max_tokens: args.max_tokens.or(config.defaults.max_tokens),
            tool_choice: None,
            response_schema: None,
        },
        json: args.json,
    })
}

/// The error for a compare with no prompt.
pub const NO_PROMPT: &str =
    "no prompt given — run pai compare -e A -e B \"your prompt\", or pipe one in: echo 'hi' | pai compare -e A -e B";

/// One request per lane (turns 1…n), the same messages for all.
pub fn contexts(
    config: &Config,
    adapters: &mut Adapters,
    plan: &ComparePlan,
    prompt: &str,
) -> Result<Vec<TurnContext>, String> {
    let mut messages = Vec::with_capacity(2);
    if let Some(s) = &plan.system {
        messages.push(Message::system(s.clone()));
    }
    messages.push(Message::user(prompt));
    plan.lanes
        .iter()
        .enumerate()
        .map(|(i, lane)| {
            let ep = config.require_endpoint(&lane.endpoint)?;
            Ok(TurnContext {
                turn: TurnRef {
                    turn_id: i as u32 + 1,
                    lane: i as u8,
                },
                endpoint: lane.endpoint.clone(),
                model: lane.model.clone(),
                participant: None,
                mode: TurnMode::Compare,
                adapter: adapters.get(ep)?,
                messages: messages.clone(),
                params: plan.params.clone(),
                tools: Vec::new(),
            })
        })
        .collect()
}

/// Run the comparison headless (blocking); returns the exit code.
pub fn run(config: &Config, secrets: &Secrets, templates: Arc<Templates>, no_log: bool, plan: ComparePlan) -> i32 {
    let Some(prompt) = plan.prompt.clone() else {
        eprintln!("pai: {NO_PROMPT}");
        return crate::app::EXIT_USAGE;
    };
    let mut adapters = Adapters::new(secrets);
    let contexts = match contexts(config, &mut adapters, &plan, &prompt) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pai: {e}");
            return EXIT_FAILED;
        }
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pai: {e}");
            return EXIT_FAILED;
        }
    };
    rt.block_on(async {
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                c.cancel();
                // A second Ctrl-C leaves at once.
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(EXIT_CANCELLED);
                }
            }
        });
        let recording = Recording::for_run(config, templates, no_log);
        let mut out = std::io::stdout().lock();
        let mut err = std::io::stderr();
        let mut io = Io {
            out: &mut out,
            err: &mut err,
            err_is_tty: std::io::stderr().is_terminal(),
        };
        headless(contexts, plan.json, recording, &mut io, cancel).await
    })
}

/// `── [2] local/smollm2 ── first token 312 ms · 18.4 tok/s · 24 tokens · 1.6 s`
/// (`failed` / `cancelled` first when it did not complete).
pub fn answer_header(lane: usize, t: &Turn) -> String {
    let status = match t.status {
        TurnStatus::Completed => "",
        TurnStatus::Cancelled => "cancelled · ",
        TurnStatus::Failed => "failed · ",
    };
    format!(
        "── [{}] {}/{} ── {status}{}",
        lane + 1,
        terminal_safe(&t.endpoint),
        terminal_safe(&t.model),
        stats_brief(&t.stats)
    )
}

/// All answers as text, in lane order, a blank line between them.
pub fn answers_text(outcomes: &[TurnOutcome]) -> String {
    let mut s = String::new();
    for (i, o) in outcomes.iter().enumerate() {
        let t = o.turn();
        if i > 0 {
            s.push('\n');
        }
        s.push_str(&answer_header(i, t));
        s.push('\n');
        let text = terminal_safe(t.response.text.trim_end());
        if text.is_empty() && t.status == TurnStatus::Completed {
            s.push_str("(no answer)\n");
        } else if !text.is_empty() {
            s.push_str(&text);
            s.push('\n');
        }
    }
    s
}

/// The `--json` object.
pub fn outcomes_json(outcomes: &[TurnOutcome], session_dir: Option<&std::path::Path>) -> Value {
    let first = outcomes.first().map(TurnOutcome::turn);
    let system = first.and_then(|t| {
        t.request
            .messages
            .iter()
            .find(|m| m.role == crate::conversation::Role::System)
    });
    let prompt = first.and_then(|t| t.request.messages.last());
    json!({
        "prompt": prompt.map(|m| &m.content),
        "system": system.map(|m| &m.content),
        "answers": outcomes.iter().enumerate().map(|(i, o)| {
            let t = o.turn();
            json!({
                "lane": i + 1,
                "endpoint": t.endpoint,
                "model": t.model,
                "text": t.response.text,
                "reasoning": t.response.reasoning,
                "status": t.status,
                "error": t.response.error,
                "finish_reason": t.response.finish_reason,
                "stats": t.stats,
            })
        }).collect::<Vec<_>>(),
        "session_dir": session_dir,
    })
}

/// Ask every lane at once, record each answer as it finishes, print them all
/// at the end; returns the exit code.
pub async fn headless(
    contexts: Vec<TurnContext>,
    json: bool,
    recording: Recording,
    io: &mut Io<'_>,
    cancel: CancellationToken,
) -> i32 {
    let labels: Vec<String> = contexts
        .iter()
        .map(|c| Lane {
            endpoint: c.endpoint.clone(),
            model: c.model.clone(),
        })
        .map(|l| l.label())
        .collect();
    let (tx, mut rx) = event_channel();
    let producer = {
        let cancel = cancel.clone();
        async move {
            let out = run_compare(contexts, &tx, cancel).await;
            drop(tx);
            out
        }
    };
    let tty = io.err_is_tty;
    let mut progress = String::new();
    let consumer = async {
        while let Some(ev) = rx.recv().await {
            match &ev {
                OrchestratorEvent::Checkpoint { partial, .. } => recording.checkpoint(partial),
                OrchestratorEvent::TurnFinished { turn, outcome } => {
                    recording.record(outcome.turn());
                    if tty {
                        let t = outcome.turn();
                        let how = match t.status {
                            TurnStatus::Completed => "answered",
                            TurnStatus::Cancelled => "cancelled",
                            TurnStatus::Failed => "failed",
                        };
                        let label = labels.get(usize::from(turn.lane)).map_or("?", String::as_str);
                        progress.push_str(&format!(
                            "pai: [{}] {} {how} ({:.1} s)\n",
                            turn.lane + 1,
                            terminal_safe(label),
                            t.stats.duration_ms as f64 / 1000.0
                        ));
                    }
                }
                OrchestratorEvent::Stream {
                    turn,
                    event: StreamEvent::Notice(n),
                } if tty => progress.push_str(&format!("pai: [{}] {}\n", turn.lane + 1, terminal_safe(n))),
                _ => {}
            }
            if !progress.is_empty() {
                let _ = io.err.write_all(progress.as_bytes());
                let _ = io.err.flush();
                progress.clear();
            }
        }
    };
    let (outcomes, ()) = tokio::join!(producer, consumer);
    let (session_dir, record_errors) = recording.finish();
    let printed = if json {
        writeln!(io.out, "{}", outcomes_json(&outcomes, session_dir.as_deref()))
    } else {
        io.out.write_all(answers_text(&outcomes).as_bytes())
    };
    let broken = printed.and_then(|()| io.out.flush()).is_err();
    let mut failed = false;
    for (i, o) in outcomes.iter().enumerate() {
        if let Some(e) = o.error() {
            failed = true;
            let label = labels.get(i).map_or("?", String::as_str);
            let _ = writeln!(io.err, "pai: [{}] {}: {e}", i + 1, terminal_safe(label));
        }
    }
    for e in &record_errors {
        let _ = writeln!(io.err, "pai: {e}");
    }
    if cancel.is_cancelled() {
        let kept = session_dir
            .as_ref()
            .map(|d| format!("; the partial answers are kept in {}", d.display()))
            .unwrap_or_default();
        let _ = writeln!(io.err, "pai: cancelled{kept}");
        EXIT_CANCELLED
    } else if failed || (!record_errors.is_empty() && !broken) {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
