//! The edge: turns parsed command-line arguments into a run of the right front
//! end or subcommand, and every failure into one clear line and an exit code.

use std::io::{IsTerminal, Read};
use std::sync::Arc;

use clap::CommandFactory;
use tokio_util::sync::CancellationToken;

use crate::cli::{ArenaArgs, Cli, Command, CommonArgs, CompareArgs, ConfigAction};
use crate::config::{Config, Discovery, Secrets};
use crate::conversation::Params;
use crate::headless::{self, OneShot};
use crate::multi::arena::{self as arena_cmd, ArenaPlan};
use crate::multi::compare::{self as compare_cmd, ComparePlan};
use crate::orchestration::agent::{AgentSetup, AutoApprove, NoApprover};
use crate::protocols::build_adapter;
use crate::records::Templates;
use crate::sessions_cmd;
use crate::tools::mcp::{McpHub, McpStatus};
use crate::tools::{ServerTools, ToolEnv};
use crate::{leaderboard_cmd, votes_cmd};

mod info;
use info::{config_check, endpoints, models, tools_cmd};

/// Exit code for bad usage or configuration.
pub const EXIT_USAGE: i32 = 2;

/// Run the program; returns the exit code.
pub fn run(cli: Cli) -> i32 {
    if let Some(Command::Completions { shell }) = &cli.command {
        clap_complete::generate(*shell, &mut Cli::command(), "pai", &mut std::io::stdout());
        return 0;
    }
    let discovery = Discovery::from_process(cli.common.config.clone());
    let config = match discovery.load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pai: config error: {e}");
            return EXIT_USAGE;
        }
    };
    let secrets = Secrets::load(&discovery.cwd);
    match cli.command {
        Some(Command::Config {
            action: ConfigAction::Check,
        }) => config_check(&config, &secrets),
        Some(Command::Endpoints) => endpoints(&config, &secrets),
        Some(Command::Models { endpoint }) => models(&config, &secrets, endpoint.as_deref()),
        Some(Command::Tools) => tools_cmd(&config, &secrets, &discovery.cwd, false),
        Some(Command::Mcp) => tools_cmd(&config, &secrets, &discovery.cwd, true),
        Some(Command::Sessions { db, action }) => {
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let mut out = std::io::stdout().lock();
            let mut err = std::io::stderr();
            let mut io = sessions_cmd::Io {
                out: &mut out,
                err: &mut err,
                color,
            };
            sessions_cmd::run(&config, db.as_deref(), action, &mut io)
        }
        Some(Command::Resume {
            id,
            prompt,
            json,
            db,
            no_log,
        }) => resume(&config, &secrets, &id, prompt, json, db, no_log),
        Some(Command::Votes { db, action }) => with_io(|io| votes_cmd::run(&config, db.as_deref(), action, io)),
        Some(Command::Leaderboard { db, voter, json }) => {
            with_io(|io| leaderboard_cmd::run(&config, db.as_deref(), voter, json, io))
        }
        Some(Command::Completions { .. }) => 0,
        Some(Command::Arena(args)) => arena(&config, &secrets, &cli.common, &args),
        Some(Command::Compare(args)) => compare(&config, &secrets, &cli.common, &args),
        None => prompt_mode(&config, &secrets, &cli.common, cli.prompt, cli.json),
    }
}

/// Run a history subcommand with stdout, stderr and the colour setting.
fn with_io(f: impl FnOnce(&mut sessions_cmd::Io<'_>) -> i32) -> i32 {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr();
    f(&mut sessions_cmd::Io {
        out: &mut out,
        err: &mut err,
        color,
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, i32> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("pai: cannot start the async runtime: {e}");
            1
        })
}

/// Start the MCP servers (if any) and give their tools, reporting progress on stderr.
async fn start_mcp(hub: &McpHub, verbose: bool) -> ServerTools {
    if hub.is_empty() {
        return Vec::new();
    }
    if verbose {
        eprintln!("pai: starting {} MCP server(s)…", hub.names().len());
    }
    for (name, status) in hub.start_enabled().await {
        if verbose || matches!(status, McpStatus::Failed(_)) {
            eprintln!("pai: MCP server {name}: {}", status.label());
        }
    }
    hub.tools().await
}

fn data_dir() -> Option<std::path::PathBuf> {
    directories::ProjectDirs::from("", "", "polyglot").map(|d| d.data_dir().to_path_buf())
}

/// Endpoint, model, system prompt and parameters from flags over config.
fn resolve<'a>(
    config: &'a Config,
    common: &CommonArgs,
) -> Result<(&'a crate::config::EndpointConfig, String, Option<String>, Params), String> {
    let name = common
        .endpoint
        .clone()
        .unwrap_or_else(|| config.defaults.endpoint.clone());
    let ep = config.require_endpoint(&name)?;
    Ok((
        ep,
        common.model.clone().unwrap_or_else(|| config.default_model_for(ep)),
        common.system.clone().or_else(|| config.defaults.system.clone()),
        Params {
            temperature: common.temperature.or(config.defaults.temperature),
            max_tokens: common.max_tokens.or(config.defaults.max_tokens),
            tool_choice: None,
            response_schema: None,
        },
    ))
}

fn load_templates(config: &Config) -> Result<Arc<Templates>, i32> {
    Templates::load(config.defaults.templates_dir.as_deref())
        .map(Arc::new)
        .map_err(|e| {
            eprintln!("pai: {e} — fix the template or remove templates_dir from polyglot.toml");
            EXIT_USAGE
        })
}

/// The history database to record into, unless `--no-log`.
pub(crate) fn history_location(config: &Config, no_log: bool) -> Option<std::path::PathBuf> {
    if no_log {
        return None;
    }
    match crate::store::location(config) {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!("pai: history is off: {e}");
            None
        }
    }
}

/// `pai arena NAME`: headless with `--headless` or `--json`, or when stdin or
/// stdout is not a terminal; else the terminal UI's arena mode.
fn arena(config: &Config, secrets: &Secrets, common: &CommonArgs, args: &ArenaArgs) -> i32 {
    let plan = match arena_cmd::plan(config, args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("pai: {e}");
            return EXIT_USAGE;
        }
    };
    if args.headless || args.json || !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        let templates = match load_templates(config) {
            Ok(t) => t,
            Err(c) => return c,
        };
        arena_cmd::run(config, secrets, templates, common.no_log, plan)
    } else {
        tui_arena(config, secrets, common, plan)
    }
}

/// The arena in the terminal UI (`pai arena NAME` on a terminal): arena mode,
/// started at once with the opening; without one, the user types it.
pub fn tui_arena(config: &Config, secrets: &Secrets, common: &CommonArgs, plan: ArenaPlan) -> i32 {
    let common = CommonArgs {
        max_tokens: plan.max_tokens.or(common.max_tokens),
        ..common.clone()
    };
    let start = crate::tui::TuiStart::Arena {
        name: plan.arena.name.clone(),
        turns: plan.turns,
        opening: plan.opening,
    };
    tui_mode(config, secrets, &common, start, history_location(config, false))
}

/// `pai compare -e A -e B PROMPT`: headless with `--headless` or `--json`, or
/// when stdin or stdout is not a terminal; else the terminal UI's compare view.
fn compare(config: &Config, secrets: &Secrets, common: &CommonArgs, args: &CompareArgs) -> i32 {
    let plan = match compare_cmd::plan(config, args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("pai: {e}");
            return EXIT_USAGE;
        }
    };
    if args.headless || args.json || !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        let templates = match load_templates(config) {
            Ok(t) => t,
            Err(c) => return c,
        };
        compare_cmd::run(config, secrets, templates, common.no_log, plan)
    } else {
        tui_compare(config, secrets, common, plan)
    }
}

/// The compare view in the terminal UI (`pai compare` on a terminal): compare
/// mode on the endpoints given, sending the prompt at once when there is one.
pub fn tui_compare(config: &Config, secrets: &Secrets, common: &CommonArgs, plan: ComparePlan) -> i32 {
    let common = CommonArgs {
        // The plan already fell back to [defaults] system; none (`-s ""`) stays none.
        system: Some(plan.system.clone().unwrap_or_default()),
        temperature: plan.params.temperature.or(common.temperature),
        max_tokens: plan.params.max_tokens.or(common.max_tokens),
        ..common.clone()
    };
    let start = crate::tui::TuiStart::Compare {
        targets: plan.lanes.iter().map(|l| l.label()).collect(),
        prompt: plan.prompt,
    };
    tui_mode(config, secrets, &common, start, history_location(config, false))
}

fn tui_mode(
    config: &Config,
    secrets: &Secrets,
    common: &CommonArgs,
    start: crate::tui::TuiStart,
    history_db: Option<std::path::PathBuf>,
) -> i32 {
    let (ep, model, system, params) = match resolve(config, common) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pai: {e}");
            return EXIT_USAGE;
        }
    };
    let templates = match load_templates(config) {
        Ok(t) => t,
        Err(c) => return c,
    };
    let data_dir = directories::ProjectDirs::from("", "", "polyglot").map(|d| d.data_dir().to_path_buf());
    let opts = crate::tui::TuiOptions {
        endpoint: ep.name.clone(),
        model,
        system,
        params,
        sessions_dir: (!common.no_log).then(|| config.defaults.sessions_dir.clone()),
        record_history: !common.no_log,
        history_db,
        start,
        templates,
        history_file: data_dir.as_ref().map(|d| d.join("prompt_history.jsonl")),
        tool_env: match std::env::current_dir()
            .map_err(|e| e.to_string())
            .and_then(|cwd| ToolEnv::from_config(config, secrets, &cwd))
        {
            Ok(env) => Some(env),
            Err(e) => {
                eprintln!("pai: {e}");
                return EXIT_USAGE;
            }
        },
        mcp: (!config.mcp.is_empty()).then(|| Arc::new(McpHub::new(&config.mcp, secrets, data_dir.clone()))),
    };
    crate::tui::run(Arc::new(config.clone()), secrets.clone(), opts)
}

/// `pai resume ID [PROMPT]`: the TUI on a recorded session, or one more turn.
fn resume(
    config: &Config,
    secrets: &Secrets,
    id: &str,
    prompt: Vec<String>,
    json: bool,
    db: Option<std::path::PathBuf>,
    no_log: bool,
) -> i32 {
    let Some(path) = db.or_else(|| history_location(config, false)) else {
        return EXIT_USAGE;
    };
    let restored = crate::store::Store::open_read_only(&path).and_then(|s| {
        let id = s.resolve_session(id)?;
        s.restore(&id)
    });
    let r = match restored {
        Ok(Some(r)) => r,
        Ok(None) => {
            eprintln!("pai: session {id} is not in the history ({})", path.display());
            return 1;
        }
        Err(e) => {
            eprintln!("pai: {e}");
            return 1;
        }
    };
    let common = CommonArgs {
        endpoint: config.endpoint(&r.endpoint).map(|e| e.name.clone()),
        model: config.endpoint(&r.endpoint).map(|_| r.model.clone()),
        system: r.system.clone(),
        temperature: r.params.temperature,
        max_tokens: r.params.max_tokens,
        no_log,
        ..CommonArgs::default()
    };
    if config.endpoint(&r.endpoint).is_none() {
        eprintln!(
            "pai: endpoint `{}` of this session is not configured any more; continuing on `{}`",
            r.endpoint, config.defaults.endpoint
        );
    }
    if prompt.is_empty() && std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        return tui_mode(
            config,
            secrets,
            &common,
            crate::tui::TuiStart::Resume(r.session_id),
            Some(path),
        );
    }
    let cont = crate::headless::Continue {
        session: r.session_id.clone(),
        folder: r.folder.clone().filter(|f| f.is_dir()),
        history: r.messages.clone(),
        next_turn_id: r.next_turn_id,
    };
    prompt_mode_with(
        config,
        secrets,
        &common,
        prompt,
        json,
        Some(cont),
        Some(path).filter(|_| !no_log),
    )
}

fn prompt_mode(config: &Config, secrets: &Secrets, common: &CommonArgs, prompt: Vec<String>, json: bool) -> i32 {
    let db = history_location(config, common.no_log);
    prompt_mode_with(config, secrets, common, prompt, json, None, db)
}

/// One-shot mode, possibly continuing a recorded session.
fn prompt_mode_with(
    config: &Config,
    secrets: &Secrets,
    common: &CommonArgs,
    prompt: Vec<String>,
    json: bool,
    resume: Option<crate::headless::Continue>,
    history_db: Option<std::path::PathBuf>,
) -> i32 {
    let prompt = if !prompt.is_empty() {
        prompt.join(" ")
    } else if !std::io::stdin().is_terminal() {
        let mut s = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut s) {
            eprintln!("pai: cannot read the prompt from stdin: {e}");
            return EXIT_USAGE;
        }
        s
    } else if std::io::stdout().is_terminal() && resume.is_none() {
        // The TUI reads the history even with --no-log (/history, /search).
        return tui_mode(
            config,
            secrets,
            common,
            crate::tui::TuiStart::Chat,
            history_location(config, false),
        );
    } else {
        eprintln!("pai: no prompt given — run `pai \"your prompt\"`, or pipe one in: echo 'hi' | pai");
        return EXIT_USAGE;
    };
    if prompt.trim().is_empty() {
        eprintln!("pai: the prompt is empty — give some text to send");
        return EXIT_USAGE;
    }
    let (ep, model, system, params) = match resolve(config, common) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pai: {e}");
            return EXIT_USAGE;
        }
    };
    let templates = match load_templates(config) {
        Ok(t) => t,
        Err(c) => return c,
    };
    let adapter = match build_adapter(ep, secrets) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pai: endpoint `{}`: {e}", ep.name);
            return 1;
        }
    };
    let job = OneShot {
        endpoint: ep.name.clone(),
        model,
        system,
        params,
        prompt,
        json,
        sessions_dir: (!common.no_log).then(|| config.defaults.sessions_dir.clone()),
        templates,
        agent: None,
        history_db,
        resume,
    };
    let tool_env = if common.agent {
        match std::env::current_dir()
            .map_err(|e| e.to_string())
            .and_then(|cwd| ToolEnv::from_config(config, secrets, &cwd))
        {
            Ok(env) => Some(env),
            Err(e) => {
                eprintln!("pai: {e}");
                return EXIT_USAGE;
            }
        }
    } else {
        None
    };
    let mut job = job;
    let rt = match runtime() {
        Ok(r) => r,
        Err(c) => return c,
    };
    let hub = McpHub::new(&config.mcp, secrets, data_dir());
    if let Some(env) = &tool_env {
        let mcp = rt.block_on(start_mcp(&hub, std::io::stderr().is_terminal()));
        job.agent = Some(AgentSetup {
            registry: Arc::new(env.registry(&mcp)),
            workspace: env.workspace.clone(),
            approver: if common.yes {
                Arc::new(AutoApprove)
            } else {
                Arc::new(NoApprover)
            },
            approvals: Default::default(),
            max_steps: env.max_steps,
            tool_timeout: env.tool_timeout,
            output_limit: env.output_limit,
            only_server: None,
        });
    }
    let code = run_oneshot(&rt, job, adapter);
    rt.block_on(async {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(3), hub.stop_all()).await;
    });
    code
}

fn run_oneshot(rt: &tokio::runtime::Runtime, job: OneShot, adapter: Arc<dyn crate::protocols::ProtocolAdapter>) -> i32 {
    rt.block_on(async {
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                c.cancel();
                // A second Ctrl-C leaves at once.
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(headless::EXIT_CANCELLED);
                }
            }
        });
        let mut out = std::io::stdout().lock();
        let mut err = std::io::stderr();
        let mut io = headless::Io {
            out: &mut out,
            err: &mut err,
            err_is_tty: std::io::stderr().is_terminal(),
        };
        headless::run(job, adapter, &mut io, cancel).await
    })
}
