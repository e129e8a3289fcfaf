//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// contenox: register HTTP services as tools, and run an agent turn or a task chain in the
/// terminal.
#[derive(Debug, Parser)]
#[command(name = "contenox", version, about, long_about = None)]
pub struct Cli {
    /// The hook registry (an SQLite file, created with its folder, readable by its owner only).
    #[arg(
        long,
        global = true,
        value_name = "PATH",
        env = "CONTENOX_DB",
        default_value = ".contenox/local.db"
    )]
    pub db: PathBuf,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Register, inspect, change and remove remote hooks (HTTP services as tools).
    #[command(subcommand)]
    Hook(HookCommand),
    /// Run one agent turn (or a task chain with --chain) in the current directory.
    Run(Box<RunArgs>),
}

/// `contenox hook ...`
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Register a hook: probe it and store it (also when it cannot be reached now).
    Add {
        /// The hook's name (letters, digits, '_' and '-').
        name: String,
        #[command(flatten)]
        fields: HookFields,
    },
    /// The hook's settings (header and injected values hidden) and the tools it offers now.
    Show {
        /// The hook's name.
        name: String,
    },
    /// Every registered hook: NAME, URL, TIMEOUT, PROTOCOL.
    List,
    /// Change what is given; --header replaces the whole header set, --inject the whole
    /// inject map.
    Update {
        /// The hook's name.
        name: String,
        #[command(flatten)]
        fields: HookFields,
        /// Remove every header.
        #[arg(long, conflicts_with = "headers")]
        clear_headers: bool,
        /// Remove every injected parameter.
        #[arg(long, conflicts_with = "inject")]
        clear_inject: bool,
        /// Read the OpenAPI document from <url>/openapi.json again (forget --spec).
        #[arg(long, conflicts_with = "spec")]
        clear_spec: bool,
    },
    /// Remove a hook.
    Remove {
        /// The hook's name.
        name: String,
    },
}

/// The settings of a hook.
#[derive(Debug, Args)]
pub struct HookFields {
    /// The service's base URL (http or https); calls go there.
    #[arg(long)]
    pub url: Option<String>,
    /// A header sent with every request, "Name: value" (repeatable; never shown again).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// A parameter merged into every call and hidden from the model, key=value (repeatable;
    /// never shown again).
    #[arg(long = "inject", value_name = "KEY=VALUE")]
    pub inject: Vec<String>,
    /// The limit of each request in milliseconds (default 10000).
    #[arg(long, value_name = "MS")]
    pub timeout: Option<String>,
    /// openapi (default), openai, openai-object, ollama, langserve-openai or langserve.
    #[arg(long)]
    pub protocol: Option<String>,
    /// Where the OpenAPI document is, when not at <url>/openapi.json: a URL or a file.
    #[arg(long, value_name = "URL|FILE")]
    pub spec: Option<String>,
}

/// `contenox run ...`
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The prompt (with --chain: the chain's input, as --input).
    pub prompt: Option<String>,
    /// Builtins to offer, comma-separated ("none" for none; default: the ten defaults).
    #[arg(long, value_name = "LIST")]
    pub builtins: Option<String>,
    /// Registered hooks to use, an allowlist: names, `*` for all, `!name` to leave one out
    /// (default: none; with --chain, all).
    #[arg(long, value_name = "LIST")]
    pub hooks: Option<String>,
    /// MCP servers from an `mcpServers` JSON file.
    #[arg(long, value_name = "FILE")]
    pub mcp: Option<PathBuf>,
    /// The model server's wire style: openai, anthropic or ollama. API keys come from
    /// OPENAI_API_KEY, ANTHROPIC_API_KEY or OLLAMA_API_KEY only.
    #[arg(long, env = "CONTENOX_STYLE", value_name = "STYLE")]
    pub style: Option<String>,
    /// The model server's base URL (default: the style's, or OPENAI_BASE_URL,
    /// ANTHROPIC_BASE_URL, OLLAMA_HOST).
    #[arg(long, env = "CONTENOX_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,
    /// The model.
    #[arg(long, env = "CONTENOX_MODEL")]
    pub model: Option<String>,
    /// Run offline on a scripted model: a JSON list of responses (`{"text": ...}`,
    /// `{"tool_calls": [{"id", "name", "arguments"}]}`).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["style", "base_url", "model"])]
    pub script: Option<PathBuf>,
    /// Continue the conversation saved in FILE (when it exists) and save it there afterwards.
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
    /// DANGEROUS: approve every tool call without asking (writes, edits, shell commands).
    #[arg(long)]
    pub auto: bool,
    /// Run this task chain (JSON) instead of a plain turn.
    #[arg(long, value_name = "FILE")]
    pub chain: Option<PathBuf>,
    /// The chain's input (with --chain).
    #[arg(long, value_name = "TEXT", requires = "chain")]
    pub input: Option<String>,
    /// A system prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Model responses per turn (default 50).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
}
