//! Command-line definitions (clap): flags, subcommands, help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "pai",
    version,
    about = "pai — Polyglot AI: a terminal workbench for many LLMs at once",
    long_about = "Chat with any model in a fast terminal UI, or script it: `pai PROMPT` (or the prompt on stdin) streams the answer to stdout.\nEvery session is recorded as per-turn JSON and HTML under sessions_dir.",
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  pai \"Say hi\"\n  echo 'Explain TCP in one line' | pai -e local --json\n  pai arena debate --headless \"Tabs or spaces?\"\n  pai compare -e local -e openai/gpt-4o-mini \"Name three primes\"\n  pai endpoints\n  pai config check"
)]
pub struct Cli {
    #[command(flatten)]
    pub common: CommonArgs,

    /// Print one JSON object (text, reasoning, finish_reason, endpoint, model, stats) instead of streaming text.
    #[arg(long)]
    pub json: bool,

    /// The prompt. Without one, the prompt is read from stdin (or, on a terminal, the TUI opens).
    #[arg(value_name = "PROMPT", trailing_var_arg = true)]
    pub prompt: Vec<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options shared by one-shot mode and the TUI.
#[derive(Debug, Clone, Default, Args)]
pub struct CommonArgs {
    /// Endpoint name from polyglot.toml (default: [defaults] endpoint).
    #[arg(short = 'e', long, value_name = "NAME")]
    pub endpoint: Option<String>,
    /// Model id (default: the endpoint's model).
    #[arg(short = 'm', long, value_name = "MODEL")]
    pub model: Option<String>,
    /// System prompt (default: [defaults] system).
    #[arg(short = 's', long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Sampling temperature, 0.0–2.0.
    #[arg(long, value_name = "X", value_parser = parse_temperature)]
    pub temperature: Option<f32>,
    /// Maximum tokens in the answer.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,
    /// Configuration file (default: $PAI_CONFIG, ./polyglot.toml, $XDG_CONFIG_HOME/polyglot/polyglot.toml).
    #[arg(long, value_name = "PATH", global = true)]
    pub config: Option<PathBuf>,
    /// Do not write session records.
    #[arg(long, global = true)]
    pub no_log: bool,
    /// Agent mode: the model may call tools (built-in, custom, MCP) in a loop.
    #[arg(long)]
    pub agent: bool,
    /// With --agent: approve every tool call without asking (otherwise tools with policy `ask` are refused).
    #[arg(long, requires = "agent")]
    pub yes: bool,
}

fn parse_temperature(s: &str) -> Result<f32, String> {
    let v: f32 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if (0.0..=2.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is out of range; use 0.0 to 2.0"))
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Two or more models talk in turns, then the judge rules ([arenas.NAME] in polyglot.toml).
    #[command(
        after_help = "The opening prompt is PROMPT, else stdin when piped, else the arena's `opening`.\nCtrl-C stops the exchange (the judge still rules); a second Ctrl-C aborts.\nExit codes: 0 completed, 1 a request failed, 2 bad usage or configuration, 130 stopped."
    )]
    Arena(ArenaArgs),
    /// The same prompt to two or more endpoints at once; the answers side by side.
    #[command(
        after_help = "Example: pai compare -e local -e claude/claude-sonnet-4-5 \"Explain CRDTs in two sentences\"\nThe prompt is PROMPT, else stdin when piped.\nExit codes: 0 all answered, 1 a request failed, 2 bad usage or configuration, 130 cancelled."
    )]
    Compare(CompareArgs),
    /// Check the configuration and show where it came from.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// List the configured endpoints.
    Endpoints,
    /// List the models an endpoint offers.
    Models {
        /// Endpoint name (default: [defaults] endpoint).
        endpoint: Option<String>,
    },
    /// List the tools an agent can use (built-in, custom, MCP) with their approval policy.
    Tools,
    /// Start the configured MCP servers and show their status and tools.
    Mcp,
    /// Browse, search, export and repair the history of recorded sessions.
    Sessions {
        /// Use this history database instead of history_db (list, show, search and export open it read-only).
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        #[command(subcommand)]
        action: SessionsAction,
    },
    /// Continue a recorded session: the TUI opens on it, or with a PROMPT (or
    /// the prompt on stdin) one more turn is asked on the command line.
    Resume {
        /// Session id (or a unique part of it; `pai sessions list` shows them).
        id: String,
        /// Ask this next instead of opening the TUI.
        #[arg(value_name = "PROMPT", trailing_var_arg = true)]
        prompt: Vec<String>,
        /// Print one JSON object instead of streaming text (with a PROMPT).
        #[arg(long)]
        json: bool,
        /// Use this history database instead of history_db.
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// Do not write session records.
        #[arg(long)]
        no_log: bool,
    },
    /// Votes from compare picks and arena judges: list them, export preference pairs.
    Votes {
        /// Use this history database instead of history_db (opened read-only).
        #[arg(long, value_name = "PATH", global = true)]
        db: Option<PathBuf>,
        #[command(subcommand)]
        action: VotesAction,
    },
    /// Rank models from the votes: Bradley–Terry on an Elo-like scale, with 95% intervals.
    Leaderboard {
        /// Use this history database instead of history_db (opened read-only).
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// Whose votes count: yours (compare picks), judges' (arenas) or all.
        #[arg(long, value_enum, default_value = "all")]
        voter: VoterArg,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// `pai arena NAME [PROMPT]`.
#[derive(Debug, Clone, Args)]
pub struct ArenaArgs {
    /// The arena: a [arenas.NAME] table in polyglot.toml.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The opening prompt (default: stdin when piped, else the arena's `opening`).
    #[arg(value_name = "PROMPT")]
    pub prompt: Vec<String>,
    /// Turns to run, overriding the arena's max_turns (each participant speaking once is one turn).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub turns: Option<u32>,
    /// Run to the end and print, also on a terminal (the default with --json, or when stdin or stdout is not a terminal).
    #[arg(long)]
    pub headless: bool,
    /// Print one JSON object at the end (turns, verdict, session folder) instead of streaming text.
    #[arg(long)]
    pub json: bool,
    /// Cap on each participant's answer (default: [defaults] max_tokens).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,
}

/// `pai compare -e A -e B [PROMPT]`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// An endpoint to ask, as NAME or NAME/MODEL (split at the first `/`); give two or more.
    #[arg(short = 'e', long = "endpoint", value_name = "ENDPOINT[/MODEL]", required = true)]
    pub endpoints: Vec<String>,
    /// Model for every endpoint given without /MODEL (default: each endpoint's model).
    #[arg(short = 'm', long, value_name = "MODEL")]
    pub model: Option<String>,
    /// System prompt (default: [defaults] system).
    #[arg(short = 's', long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Sampling temperature, 0.0–2.0.
    #[arg(long, value_name = "X", value_parser = parse_temperature)]
    pub temperature: Option<f32>,
    /// Maximum tokens in each answer.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,
    /// Print the answers when all are done, also on a terminal (the default with --json, or when stdin or stdout is not a terminal).
    #[arg(long)]
    pub headless: bool,
    /// Print one JSON object with every answer instead of text.
    #[arg(long)]
    pub json: bool,
    /// The prompt (default: stdin when piped).
    #[arg(value_name = "PROMPT")]
    pub prompt: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// List sessions, most recently active first.
    List {
        /// How many to show.
        #[arg(short = 'n', long, default_value_t = 20, value_name = "N")]
        limit: usize,
    },
    /// Print a session's transcript.
    Show {
        /// Session id, or a unique prefix of it (or of its random last part).
        id: String,
    },
    /// Search prompts and answers: words, "a phrase", prefix*, a OR b, -word.
    Search {
        /// What to look for.
        #[arg(required = true, num_args = 1.., value_name = "QUERY")]
        query: Vec<String>,
        /// How many hits to show.
        #[arg(short = 'n', long, default_value_t = 20, value_name = "N")]
        limit: usize,
    },
    /// Write a session as Markdown, HTML or JSON (to stdout, or a file).
    Export {
        /// Session id, or a unique prefix of it.
        id: String,
        #[arg(short, long, value_enum, default_value = "md")]
        format: ExportArg,
        /// Write to this file instead of stdout.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Add session folders to the history (sessions from before it, or after a recover).
    Import {
        /// Folder holding session folders (default: sessions_dir).
        dir: Option<PathBuf>,
    },
    /// Move a damaged history database aside (kept) and start a fresh one.
    Recover,
}

#[derive(Debug, Subcommand)]
pub enum VotesAction {
    /// Write the votes that have a winner as preference pairs, one JSON object a line.
    Export {
        /// dpo-jsonl: TRL's conversational preference format (prompt, chosen, rejected) plus models.
        #[arg(short, long, value_enum, default_value = "dpo-jsonl")]
        format: VotesFormat,
        /// Write to this file instead of stdout.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Whose votes to export: yours (compare picks), judges' (arenas) or all.
        #[arg(long, value_enum, default_value = "all")]
        voter: VoterArg,
    },
    /// List votes, newest first: when, who, the two models, the choice, the prompt.
    List {
        /// How many to show (0: all).
        #[arg(short = 'n', long, default_value_t = 20, value_name = "N")]
        limit: usize,
        /// Whose votes to list: yours, judges' or all.
        #[arg(long, value_enum, default_value = "all")]
        voter: VoterArg,
    },
}

/// Vote export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VotesFormat {
    DpoJsonl,
}

/// Whose votes count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VoterArg {
    /// Your picks (voter `user`).
    User,
    /// Arena judges (voter `judge:…`).
    Judge,
    All,
}

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportArg {
    #[value(alias = "markdown")]
    Md,
    Html,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Validate the configuration; exit non-zero with file:line:column on errors.
    Check,
}
