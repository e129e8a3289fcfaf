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
    /// Serve the Agent Client Protocol (v1) on stdin/stdout: the agent inside an editor
    /// (Zed, JetBrains, Neovim clients, acpx). Only protocol messages on stdout; logs on stderr.
    Acp(Box<AcpArgs>),
    /// MCP servers' sign-ins (the OAuth tokens `contenox run --mcp` keeps).
    #[command(subcommand)]
    Mcp(McpCommand),
}

/// `contenox mcp ...`
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Forget the OAuth tokens of a server (its URL, as in the --mcp file) or of all servers;
    /// the next run signs in again.
    Logout {
        /// The server's URL.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        url: Option<String>,
        /// Every server's tokens.
        #[arg(long)]
        all: bool,
    },
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
    /// The model, the approval policy, the builtins.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Registered hooks to use, an allowlist: names, `*` for all, `!name` to leave one out
    /// (default: none; with --chain, all).
    #[arg(long, value_name = "LIST")]
    pub hooks: Option<String>,
    /// MCP servers from an `mcpServers` JSON file.
    #[arg(long, value_name = "FILE")]
    pub mcp: Option<PathBuf>,
    /// Continue the conversation saved in FILE (when it exists) and save it there afterwards.
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
    /// Run this task chain (JSON) instead of a plain turn.
    #[arg(long, value_name = "FILE")]
    pub chain: Option<PathBuf>,
    /// The chain's input (with --chain).
    #[arg(long, value_name = "TEXT", requires = "chain")]
    pub input: Option<String>,
}

/// What a client is built from, beyond its root: the same flags for `run` and `acp`.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The approval policy.
    #[command(flatten)]
    pub gate: GateArgs,
    /// Builtins to offer, comma-separated ("none" for none; default: the ten defaults).
    #[arg(long, value_name = "LIST")]
    pub builtins: Option<String>,
    /// A system prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Model responses per turn, that is per prompt (default 50).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Lifecycle hooks from a hooks file in the shape Claude Code, codex and goose share (a
    /// settings file such as .claude/settings.json, or a hooks.json): its command hooks run in
    /// the working directory, in the bash sandbox (a PreToolUse hook exiting 2 blocks the call).
    #[arg(long, value_name = "FILE")]
    pub hooks_file: Option<PathBuf>,
}

/// Where the model is: the same flags (and variables) for `run` and `acp`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// The model server's wire style: openai, openai-responses, anthropic or ollama. API keys come from
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
}

/// The approval policy of `run` and `acp`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// The approval policy: a preset (`default`, `strict`, `dev`) or a hitl-policy-v1 JSON
    /// file. Its `deny` refuses a call, its `approve` asks (in the terminal, or the editor).
    #[arg(long, value_name = "PRESET|FILE", default_value = "default")]
    pub policy: String,
    /// DANGEROUS: approve every call the policy would ask about, without asking (writes,
    /// edits, shell commands). What the policy denies stays denied.
    #[arg(long)]
    pub auto: bool,
}

/// `contenox acp ...`
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// The model, the approval policy, the builtins.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Registered hooks to use in every session, an allowlist: names, `*` for all, `!name` to
    /// leave one out (default: none).
    #[arg(long, value_name = "LIST")]
    pub hooks: Option<String>,
    /// Where sessions are kept (one transcript per session, for session/load and
    /// session/resume); default $XDG_DATA_HOME/contenox, else ~/.local/share/contenox.
    #[arg(long, env = "CONTENOX_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The model's context window in tokens: with it, each model response sends a
    /// `usage_update` (tokens in context / this size).
    #[arg(long, env = "CONTENOX_CONTEXT_WINDOW", value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// Read and write files through the editor (`fs/read_text_file`, `fs/write_text_file`:
    /// its unsaved buffers) and run bash in its terminals (`terminal/*`) when the editor
    /// offers them. The root confinement and the gate apply first. Off by default.
    #[arg(long)]
    pub editor_tools: bool,
}
