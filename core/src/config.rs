//! The client's options: one serde struct that every binding passes through unchanged.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::redact::{redacted_option, RedactedAssignments, RedactedUrl, RedactedValues, UrlParts};
use crate::sandbox::SandboxConfig;
use crate::script::ScriptEntry;
use crate::settings::{ModelSettings, Reasoning, ToolChoice};
pub use crate::style::Style;

/// How many calls of one reply run at once unless `max_concurrent_tools` says otherwise.
pub const DEFAULT_MAX_CONCURRENT_TOOLS: u32 = 8;
/// How many times an answer that does not match `output_schema` is sent back, by default.
pub const DEFAULT_OUTPUT_RETRIES: u32 = 2;

/// Which calls of one model reply run side by side (`tool_concurrency`). Every call is gated in
/// the model's order first; this only decides when an allowed call may start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolConcurrency {
    /// Calls of tools whose hints say read-only, and subagent calls, run side by side; any
    /// other call starts when the calls before it have finished, and the calls after it wait
    /// for it (a write never races a read).
    #[default]
    ReadOnly,
    /// Every call runs side by side with the others (the host vouches that its tools may).
    All,
    /// One call after another, each when the one before it has finished.
    #[serde(rename = "none")]
    Sequential,
}

/// How failed model requests are retried: on 429, 5xx and broken connections, only when no byte
/// of the response body arrived.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first wait; it doubles with every retry (with ±20% jitter).
    pub initial_backoff_ms: u64,
    /// The longest wait between attempts (a Retry-After header may ask for more, up to
    /// `max_retry_after_ms`).
    pub max_backoff_ms: u64,
    /// The longest Retry-After the engine honours.
    pub max_retry_after_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff_ms: 250,
            max_backoff_ms: 8_000,
            max_retry_after_ms: 60_000,
        }
    }
}

/// A model tried when the one before it fails (option `fallback`, tried in order): after its
/// retries, with an overload (529), a rate limit (429), another server error (5xx), a failed
/// connection or a timeout, and only while no byte of the answer had arrived. See
/// `docs/fallback.md`.
///
/// An entry of the main model's style without a `base_url` talks to the main model's server
/// with its `api_key` and `headers` (unless it gives its own): a second model of the same
/// provider. Any other entry gets only what it gives: its `base_url` (else the style's usual
/// environment variable or public endpoint), its `api_key`, the variable `api_key_env` names,
/// else the style's usual variable; the main model's headers are not sent to another server.
///
/// A plain string is the short form of `{"model": NAME}`: another model on the client's server.
#[derive(Clone, Default, PartialEq, Serialize)]
pub struct FallbackModel {
    /// The wire style; `None` = the main model's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub style: Option<Style>,
    /// The base URL, spelled as the main model's `base_url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The model name (required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The API key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The environment variable holding the API key (read at client creation; an unset one is
    /// a configuration error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Extra HTTP headers sent to this model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
}

/// What an entry given as an object reads into (a string is only the model's name).
#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FallbackEntry {
    style: Option<Style>,
    base_url: Option<String>,
    model: Option<String>,
    api_key: Option<String>,
    api_key_env: Option<String>,
    headers: Option<BTreeMap<String, String>>,
}

impl<'de> Deserialize<'de> for FallbackModel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = FallbackModel;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a model name or a model config object")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<FallbackModel, E> {
                Ok(FallbackModel {
                    model: Some(name.to_string()),
                    ..FallbackModel::default()
                })
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<FallbackModel, A::Error> {
                let e =
                    FallbackEntry::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(FallbackModel {
                    style: e.style,
                    base_url: e.base_url,
                    model: e.model,
                    api_key: e.api_key,
                    api_key_env: e.api_key_env,
                    headers: e.headers,
                })
            }
        }
        d.deserialize_any(Entry)
    }
}

impl fmt::Debug for FallbackModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let FallbackModel {
            style,
            base_url,
            model,
            api_key,
            api_key_env,
            headers,
        } = self;
        f.debug_struct("FallbackModel")
            .field("style", style)
            .field(
                "base_url",
                &base_url
                    .as_deref()
                    .map(|url| RedactedUrl(url, UrlParts::KeepPath)),
            )
            .field("model", model)
            .field("api_key", &redacted_option(api_key))
            // The variable's name, not its value.
            .field("api_key_env", api_key_env)
            .field("headers", &headers.as_ref().map(RedactedValues))
            .finish()
    }
}

/// The limits of `js_execution` (config `code_execution`; `{}` takes every default). Its
/// presence turns the builtin on. An unknown key is a configuration error.
///
/// ```
/// use contenox::CodeExecutionConfig;
/// let limits: CodeExecutionConfig = serde_json::from_str(r#"{"timeout_ms": 2000}"#).unwrap();
/// assert_eq!(limits.timeout_ms, 2000);
/// assert_eq!(limits.memory_mb, 64);
/// assert!(serde_json::from_str::<CodeExecutionConfig>(r#"{"timeout": 1}"#).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodeExecutionConfig {
    /// Wall time of one run, inner tool calls included, in milliseconds (default 10 000).
    pub timeout_ms: u64,
    /// Memory the JavaScript heap may take, in MiB (default 64).
    pub memory_mb: u64,
    /// Native stack the interpreter may use, in KiB (default 512): deep recursion stops there.
    pub max_stack_kb: u64,
    /// Bytes of output (console and the value together) the model gets (default 32 768); the
    /// rest is cut, and the cut said.
    pub max_output_bytes: u64,
    /// Inner tool calls one run may make (default 100); one more rejects in the code.
    pub max_tool_calls: u64,
}

impl CodeExecutionConfig {
    /// The default of `timeout_ms`.
    pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
    /// The default of `memory_mb`.
    pub const DEFAULT_MEMORY_MB: u64 = 64;
    /// The default of `max_stack_kb`.
    pub const DEFAULT_MAX_STACK_KB: u64 = 512;
    /// The default of `max_output_bytes`.
    pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 32 * 1024;
    /// The default of `max_tool_calls`.
    pub const DEFAULT_MAX_TOOL_CALLS: u64 = 100;

    /// Each limit within what the engine can keep; otherwise the key (`code_execution.KEY`),
    /// why, and the value given.
    pub(crate) fn problem(&self) -> Option<(String, String, u64)> {
        let ranges: [(&str, u64, u64, u64); 5] = [
            ("timeout_ms", self.timeout_ms, 1, 3_600_000),
            ("memory_mb", self.memory_mb, 1, 4096),
            ("max_stack_kb", self.max_stack_kb, 64, 65_536),
            (
                "max_output_bytes",
                self.max_output_bytes,
                1,
                64 * 1024 * 1024,
            ),
            ("max_tool_calls", self.max_tool_calls, 0, 100_000),
        ];
        ranges
            .into_iter()
            .find(|(_, value, min, max)| value < min || value > max)
            .map(|(key, value, min, max)| {
                (
                    format!("code_execution.{key}"),
                    format!("must be between {min} and {max}"),
                    value,
                )
            })
    }
}

impl Default for CodeExecutionConfig {
    fn default() -> Self {
        CodeExecutionConfig {
            timeout_ms: Self::DEFAULT_TIMEOUT_MS,
            memory_mb: Self::DEFAULT_MEMORY_MB,
            max_stack_kb: Self::DEFAULT_MAX_STACK_KB,
            max_output_bytes: Self::DEFAULT_MAX_OUTPUT_BYTES,
            max_tool_calls: Self::DEFAULT_MAX_TOOL_CALLS,
        }
    }
}

/// Compaction of a long conversation (option `compaction`; see [`crate::compact`]): before
/// each model request, when the context is measured over `threshold_tokens`, the older part of
/// the conversation is replaced by one summary the same model writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionConfig {
    /// Compact when the context (all input tokens of the next request, cached or not) would be
    /// over this many tokens.
    pub threshold_tokens: u64,
    /// How many of the most recent messages stay as they are (more when needed, so that a tool
    /// call and its result are never separated). Default 4.
    #[serde(default = "CompactionConfig::default_keep_recent")]
    pub keep_recent: usize,
    /// Extra instructions for the summary (what to keep, what to drop), appended to the
    /// engine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

impl CompactionConfig {
    /// The default of `keep_recent`.
    pub const DEFAULT_KEEP_RECENT: usize = 4;

    fn default_keep_recent() -> usize {
        Self::DEFAULT_KEEP_RECENT
    }

    /// Compaction over `threshold_tokens`, keeping the default number of recent messages.
    pub fn new(threshold_tokens: u64) -> Self {
        CompactionConfig {
            threshold_tokens,
            keep_recent: Self::DEFAULT_KEEP_RECENT,
            instructions: None,
        }
    }
}
/// The default `request_timeout_ms`: 10 minutes, as the official openai and anthropic SDKs.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 600_000;
/// The default `idle_timeout_ms`: 10 minutes, the official SDKs' read timeout.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 600_000;

/// Every option of a client. The same names in every binding (spelled per language).
///
/// ```
/// let config: contenox::Config = serde_json::from_value(serde_json::json!({
///     "style": "anthropic",
///     "model": "claude-sonnet-4-5",
///     "builtins": ["read", "edit"],
///     "allow": ["*", "!edit"],
///     "max_turns": 8
/// })).unwrap();
/// assert_eq!(config.max_turns, 8);
/// ```
///
/// Its `Debug` print redacts secrets: `api_key` and header values print as `<redacted>`, and the
/// `base_url`'s user info and query too.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The wire style.
    pub style: Style,
    /// Base URL as the style's official SDK takes it: openai `…/v1`, anthropic and ollama the
    /// host root. Default: the style's public endpoint, or its environment variable.
    pub base_url: Option<String>,
    /// The model name (required for every style but `scripted`).
    pub model: Option<String>,
    /// The API key. Default: the style's usual environment variable.
    pub api_key: Option<String>,
    /// Extra HTTP headers sent with every model request.
    pub headers: BTreeMap<String, String>,
    /// The system prompt.
    pub system: Option<String>,
    /// The root directory file tools are confined to. Default: the current directory.
    pub root: Option<PathBuf>,
    /// Which builtins to offer; `None` = the defaults.
    pub builtins: Option<Vec<String>>,
    /// The allowlist; `None` = `["*"]`.
    pub allow: Option<Vec<String>>,
    /// Model responses per turn before the turn ends with `max_turns`.
    pub max_turns: u32,
    /// The `max_tokens` of each model request.
    pub max_tokens: u32,
    /// How failed requests are retried.
    pub retry: RetryPolicy,
    /// The responses of the `scripted` style.
    pub script: Option<Vec<ScriptEntry>>,
    /// Opt-in background shells (bash `run_in_background`, `bash_output`, `kill_shell`).
    pub background: bool,
    /// Opt-in `notebook_edit`.
    pub notebook_edit: bool,
    /// Opt-in `js_execution` with these limits (`{}` = the defaults); see [`crate::code`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code_execution: Option<CodeExecutionConfig>,
    /// Environment variables the host marks secret: never passed to processes tools start (the
    /// style's API key variable is always withheld).
    pub secret_env: Vec<String>,
    /// Connect timeout for model requests, in milliseconds.
    pub connect_timeout_ms: u64,
    /// The approval policy (hitl-policy-v1), checked before `before_tool` on every call: a
    /// document (a JSON object), its JSON text (a string starting with `{`), or the path of a
    /// file holding it (any other string; relative to the current directory). Validated whole
    /// at client creation. `None` = no policy. See [`crate::policy`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<serde_json::Value>,
    /// Lifecycle hooks from a hooks file in the shape Claude Code, codex and goose share
    /// (`{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", ...}]}]}}`):
    /// a settings object holding `hooks`, the `hooks` object itself, its JSON text, or the path
    /// of a file holding either. Checked whole at client creation; the commands run in the
    /// root, in the same sandbox as bash. See [`crate::hooks`] and `docs/hooks.md`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooks_file: Option<serde_json::Value>,
    /// How long each of the host's lifecycle hooks (`on_prompt` ... `on_notification`) may take
    /// before its point's fallback applies, in ms. `None` = 60 s (or the builder's
    /// [`crate::ClientBuilder::hook_timeout`]). A hooks file's commands have their own `timeout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_timeout_ms: Option<u64>,
    /// Tool calls per turn; one more ends the turn with outcome `budget`. `None` = no ceiling
    /// (a policy's `compute.maxToolCalls` may still set one: the smaller wins).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u64>,
    /// Tokens (input + output, summed over the turn's responses) per turn; reaching it ends the
    /// turn with outcome `budget`. Not `max_tokens`, which is each request's output limit.
    /// `None` = no ceiling (a policy's `compute.maxTokens` may set one: the smaller wins).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_turn_tokens: Option<u64>,
    /// Compaction of a long conversation; `None` = off (`client.compact()` still works on
    /// demand).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionConfig>,
    /// How long a model request (and `list_models`) may wait for the server to start its answer
    /// (the response headers), in milliseconds, from the moment it is sent. Default 600 000
    /// (10 minutes, the official openai and anthropic SDKs' timeout). A request that hits it is
    /// retried like a broken connection.
    pub request_timeout_ms: u64,
    /// The longest silence allowed inside a model answer, in milliseconds: between two SSE
    /// events or NDJSON lines, or two chunks of a non-streamed body. Keep-alive comments (and
    /// anthropic's `ping` events) do not count as progress. Default 600 000 (the official SDKs'
    /// read timeout). Retried when nothing but keep-alives had arrived; otherwise the turn ends
    /// with outcome `error`.
    pub idle_timeout_ms: u64,
    /// What bash and background shells get besides the allowlisted environment (`PATH`, `HOME`,
    /// `USER`, `LOGNAME`, `SHELL`, `LANG`, `LANGUAGE`, `LC_*`, `TERM`, `TZ`, `SSL_CERT_FILE`,
    /// `SSL_CERT_DIR`, and `TMPDIR` set to the client's scratch directory): `NAME` passes the
    /// host's variable, `PREFIX*` every host variable with that prefix, `NAME=value` sets one.
    /// Names in `secret_env` are withheld all the same.
    pub shell_env: Vec<String>,
    /// How bash and background shells are confined (Landlock, seccomp, network).
    pub sandbox: SandboxConfig,
    /// Let `web_fetch` fetch internal addresses: loopback, private networks, link-local (the
    /// cloud metadata address among them) and the other ranges no public page lives on
    /// (`web_fetch` refuses them by default). For hosts whose model should read a local
    /// service.
    pub web_fetch_allow_private: bool,
    /// Which calls of one reply run side by side (they are gated one after another in the
    /// model's order either way, and their results keep that order). Default `read_only`.
    pub tool_concurrency: ToolConcurrency,
    /// At most this many calls of one reply run at once (default 8; at least 1).
    pub max_concurrent_tools: u32,
    /// Start a call while the model is still streaming its reply, as soon as the stream says
    /// the call's arguments are complete (anthropic `content_block_stop`; openai when the next
    /// call begins). Default on; off = every call waits for the whole reply.
    pub stream_tools: bool,

    // The model settings (see [`ModelSettings`], which documents each; a run may replace
    // them with its own, `RunOptions::settings`).
    /// Sampling temperature ([`ModelSettings::temperature`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling ([`ModelSettings::top_p`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Top-k sampling, anthropic and ollama ([`ModelSettings::top_k`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Stop sequences ([`ModelSettings::stop`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
    /// A sampling seed, openai and ollama ([`ModelSettings::seed`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// `"auto"`, `"required"`, `"none"` or `{"name": TOOL}` ([`ModelSettings::tool_choice`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Several calls in one answer ([`ModelSettings::parallel_tool_calls`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// `{"effort": ...}` or `{"budget_tokens": N}` ([`ModelSettings::reasoning`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Merged into the request body last ([`ModelSettings::extra_body`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
    /// Anthropic prompt caching: `cache_control` breakpoints on the last tool, the system
    /// prompt and the newest messages, so that each request reads the one before it from the
    /// cache. `None` = on (anthropic style); `Some(false)` turns it off. The other styles have
    /// no breakpoints (openai-style servers cache on their own): giving it there is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache: Option<bool>,
    /// Whether the model takes images. `None` = yes (every style has a wire form for them);
    /// `Some(false)` for a model that takes none: a prompt with images is refused before
    /// anything is sent, and a tool result holding images (`read` of an image file, a host
    /// tool's image parts) becomes an error result saying so, never a silent drop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
    /// Models tried in order when the model fails after its retries with an overload, a rate
    /// limit, a server error, a failed connection or a timeout ([`FallbackModel`]). Empty = none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<FallbackModel>,
    /// A JSON Schema the turn's final answer must match ([`crate::OutputSchema`]): each style
    /// asks for it natively, the answer is validated and parsed into
    /// [`crate::TurnResult::output`], and an invalid one is sent back to the model with the
    /// errors (`output_retries` times). Checked at client creation. `None` = a text answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
    /// How many times an answer that does not match `output_schema` is sent back for another
    /// try before the turn ends with outcome `output_invalid`. Default 2.
    pub output_retries: u32,
    /// OpenTelemetry traces of the turns ([`crate::telemetry`]): `true`, or the endpoint,
    /// headers, `include_contents` and service name. `None` = off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::telemetry::TelemetryOption>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            style: Style::Openai,
            base_url: None,
            model: None,
            api_key: None,
            headers: BTreeMap::new(),
            system: None,
            root: None,
            builtins: None,
            allow: None,
            max_turns: 50,
            max_tokens: 4096,
            retry: RetryPolicy::default(),
            script: None,
            background: false,
            notebook_edit: false,
            code_execution: None,
            secret_env: Vec::new(),
            connect_timeout_ms: 10_000,
            policy: None,
            hooks_file: None,
            hook_timeout_ms: None,
            max_tool_calls: None,
            max_turn_tokens: None,
            compaction: None,
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            idle_timeout_ms: DEFAULT_IDLE_TIMEOUT_MS,
            shell_env: Vec::new(),
            sandbox: SandboxConfig::default(),
            web_fetch_allow_private: false,
            tool_concurrency: ToolConcurrency::ReadOnly,
            max_concurrent_tools: DEFAULT_MAX_CONCURRENT_TOOLS,
            stream_tools: true,
            temperature: None,
            top_p: None,
            top_k: None,
            stop: None,
            seed: None,
            tool_choice: None,
            parallel_tool_calls: None,
            reasoning: None,
            extra_body: None,
            prompt_cache: None,
            images: None,
            fallback: Vec::new(),
            output_schema: None,
            output_retries: DEFAULT_OUTPUT_RETRIES,
            telemetry: None,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every field by name, no `..`: a new field does not compile here until its author
        // decides whether it is secret.
        let Config {
            style,
            base_url,
            model,
            api_key,
            headers,
            system,
            root,
            builtins,
            allow,
            max_turns,
            max_tokens,
            retry,
            script,
            background,
            notebook_edit,
            code_execution,
            secret_env,
            connect_timeout_ms,
            policy,
            hooks_file,
            hook_timeout_ms,
            max_tool_calls,
            max_turn_tokens,
            request_timeout_ms,
            idle_timeout_ms,
            shell_env,
            sandbox,
            web_fetch_allow_private,
            tool_concurrency,
            max_concurrent_tools,
            stream_tools,
            compaction,
            temperature,
            top_p,
            top_k,
            stop,
            seed,
            tool_choice,
            parallel_tool_calls,
            reasoning,
            extra_body,
            prompt_cache,
            images,
            fallback,
            output_schema,
            output_retries,
            telemetry,
        } = self;
        f.debug_struct("Config")
            .field("style", style)
            .field(
                "base_url",
                &base_url
                    .as_deref()
                    .map(|url| RedactedUrl(url, UrlParts::KeepPath)),
            )
            .field("model", model)
            .field("api_key", &redacted_option(api_key))
            .field("headers", &RedactedValues(headers))
            .field("system", system)
            .field("root", root)
            .field("builtins", builtins)
            .field("allow", allow)
            .field("max_turns", max_turns)
            .field("max_tokens", max_tokens)
            .field("retry", retry)
            .field("script", script)
            .field("background", background)
            .field("notebook_edit", notebook_edit)
            .field("code_execution", code_execution)
            // Names of variables, not their values.
            .field("secret_env", secret_env)
            .field("connect_timeout_ms", connect_timeout_ms)
            // A policy holds rules, not secrets.
            .field("policy", policy)
            // Commands, not secrets (a hook reads its secrets from where it runs).
            .field("hooks_file", hooks_file)
            .field("hook_timeout_ms", hook_timeout_ms)
            .field("max_tool_calls", max_tool_calls)
            .field("max_turn_tokens", max_turn_tokens)
            .field("request_timeout_ms", request_timeout_ms)
            .field("idle_timeout_ms", idle_timeout_ms)
            // `NAME=value` entries may carry a secret value.
            .field("shell_env", &RedactedAssignments(shell_env))
            .field("sandbox", sandbox)
            .field("web_fetch_allow_private", web_fetch_allow_private)
            .field("tool_concurrency", tool_concurrency)
            .field("max_concurrent_tools", max_concurrent_tools)
            .field("stream_tools", stream_tools)
            // Compaction's instructions are the host's prompt text, not secrets.
            .field("compaction", compaction)
            .field("temperature", temperature)
            .field("top_p", top_p)
            .field("top_k", top_k)
            .field("stop", stop)
            .field("seed", seed)
            .field("tool_choice", tool_choice)
            .field("parallel_tool_calls", parallel_tool_calls)
            .field("reasoning", reasoning)
            // A provider's fields may carry a token: their names only.
            .field(
                "extra_body",
                &extra_body.as_ref().map(|m| m.keys().collect::<Vec<_>>()),
            )
            .field("prompt_cache", prompt_cache)
            .field("images", images)
            // Each entry's Debug redacts its key and header values.
            .field("fallback", fallback)
            // A schema describes the answer's shape, not secrets.
            .field("output_schema", output_schema)
            .field("output_retries", output_retries)
            // Its Debug redacts header values and the endpoint's user info and query.
            .field("telemetry", telemetry)
            .finish()
    }
}

impl Config {
    /// The base URL in use, without a trailing slash.
    pub fn resolved_base_url(&self) -> String {
        let from_env = || {
            self.style
                .base_url_env()
                .and_then(|k| std::env::var(k).ok())
                .filter(|v| !v.is_empty())
        };
        let url = self
            .base_url
            .clone()
            .or_else(from_env)
            .unwrap_or_else(|| self.style.default_base_url().to_string());
        let url = if self.style == Style::Ollama && !url.contains("://") {
            format!("http://{url}")
        } else {
            url
        };
        url.trim_end_matches('/').to_string()
    }

    /// The model settings among the options.
    pub fn model_settings(&self) -> ModelSettings {
        ModelSettings {
            temperature: self.temperature,
            top_p: self.top_p,
            top_k: self.top_k,
            stop: self.stop.clone(),
            seed: self.seed,
            tool_choice: self.tool_choice.clone(),
            parallel_tool_calls: self.parallel_tool_calls,
            reasoning: self.reasoning,
            extra_body: self.extra_body.clone(),
        }
    }

    /// Set the model settings among the options (every one, given or not).
    pub fn set_model_settings(&mut self, settings: ModelSettings) {
        let ModelSettings {
            temperature,
            top_p,
            top_k,
            stop,
            seed,
            tool_choice,
            parallel_tool_calls,
            reasoning,
            extra_body,
        } = settings;
        self.temperature = temperature;
        self.top_p = top_p;
        self.top_k = top_k;
        self.stop = stop;
        self.seed = seed;
        self.tool_choice = tool_choice;
        self.parallel_tool_calls = parallel_tool_calls;
        self.reasoning = reasoning;
        self.extra_body = extra_body;
    }

    /// Whether the model takes images (the `images` option, on unless `false`).
    pub fn takes_images(&self) -> bool {
        self.images != Some(false)
    }

    /// Whether requests carry anthropic `cache_control` breakpoints.
    pub fn prompt_cache_on(&self) -> bool {
        self.style == Style::Anthropic && self.prompt_cache != Some(false)
    }

    /// The name of the model requests go to (`scripted` for the scripted style without one).
    pub fn model_name(&self) -> &str {
        match (&self.model, self.style) {
            (Some(m), _) => m,
            (None, Style::Scripted) => "scripted",
            (None, _) => "",
        }
    }

    /// The config of fallback model `i`: this config with the entry's style, endpoint, model,
    /// key and headers (see [`FallbackModel`] for what it inherits), without fallbacks of its
    /// own. `None` when there is no entry `i`. A key named by `api_key_env` is read here.
    pub fn fallback_config(&self, i: usize) -> Option<Config> {
        let entry = self.fallback.get(i)?;
        let style = entry.style.unwrap_or(self.style);
        let same_server = style == self.style && entry.base_url.is_none();
        let mut config = self.clone();
        config.fallback = Vec::new();
        config.script = None;
        config.style = style;
        config.model = entry.model.clone();
        config.base_url = if same_server {
            self.base_url.clone()
        } else {
            entry.base_url.clone()
        };
        let from_env = entry
            .api_key_env
            .as_deref()
            .and_then(|k| std::env::var(k).ok())
            .filter(|v| !v.is_empty());
        config.api_key = match (&entry.api_key, from_env) {
            (Some(key), _) => Some(key.clone()),
            (None, Some(key)) => Some(key),
            (None, None) if same_server && entry.api_key_env.is_none() => self.api_key.clone(),
            (None, None) => None,
        };
        config.headers = match &entry.headers {
            Some(h) => h.clone(),
            None if same_server => self.headers.clone(),
            None => BTreeMap::new(),
        };
        if style != Style::Anthropic || self.style != Style::Anthropic {
            config.prompt_cache = None;
        }
        Some(config)
    }

    /// The API key in use, if any.
    pub fn resolved_api_key(&self) -> Option<String> {
        self.api_key.clone().or_else(|| {
            self.style
                .api_key_env()
                .and_then(|k| std::env::var(k).ok())
                .filter(|v| !v.is_empty())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_prints_redact_secrets_and_keep_names() {
        let config: Config = serde_json::from_value(serde_json::json!({
            "style": "anthropic",
            "base_url": "https://user:MARKER-pw@models.example:8443/v1?key=MARKER-query",
            "model": "claude-sonnet-4-5",
            "api_key": "sk-MARKER-key",
            "headers": {"Authorization": "Bearer MARKER-auth", "X-Team": "MARKER-team"},
            "secret_env": ["AWS_SECRET_ACCESS_KEY"],
        }))
        .unwrap();
        for print in [format!("{config:?}"), format!("{config:#?}")] {
            assert!(!print.contains("MARKER"), "{print}");
            for name in [
                "api_key",
                "\"Authorization\": <redacted>",
                "\"X-Team\"",
                "https://<redacted>@models.example:8443/v1?<redacted>",
                "claude-sonnet-4-5",
                "AWS_SECRET_ACCESS_KEY",
                "web_fetch_allow_private",
            ] {
                assert!(print.contains(name), "{name} missing from {print}");
            }
        }
        assert!(format!("{config:?}").contains("api_key: Some(<redacted>)"));
        // Unset secrets print as unset.
        let print = format!("{:?}", Config::default());
        assert!(
            print.contains("api_key: None") && print.contains("headers: {}"),
            "{print}"
        );
    }

    #[test]
    fn a_fallback_inherits_the_main_server_only_when_it_is_the_same_one() {
        let config: Config = serde_json::from_value(serde_json::json!({
            "style": "anthropic",
            "base_url": "http://127.0.0.1:9/",
            "model": "big",
            "api_key": "MAIN-KEY",
            "headers": {"x-main": "MAIN-HEADER"},
            "prompt_cache": false,
            "fallback": [
                {"model": "small"},
                {"model": "small-own-key", "api_key": "OWN-KEY"},
                {"style": "openai", "model": "gpt", "base_url": "http://127.0.0.1:8/v1"},
                {"style": "openai", "model": "gpt", "api_key_env": "PATH"},
                {"model": "elsewhere", "base_url": "http://127.0.0.1:7", "headers": {"x-own": "v"}}
            ]
        }))
        .unwrap();
        let same = config.fallback_config(0).unwrap();
        assert_eq!(
            (same.style, same.model_name(), same.base_url.as_deref()),
            (Style::Anthropic, "small", Some("http://127.0.0.1:9/"))
        );
        assert_eq!(same.api_key.as_deref(), Some("MAIN-KEY"));
        assert_eq!(same.headers, config.headers);
        assert_eq!(same.prompt_cache, Some(false));
        assert!(same.fallback.is_empty());
        let own = config.fallback_config(1).unwrap();
        assert_eq!(own.api_key.as_deref(), Some("OWN-KEY"));
        let other = config.fallback_config(2).unwrap();
        assert_eq!(other.style, Style::Openai);
        assert_eq!(other.base_url.as_deref(), Some("http://127.0.0.1:8/v1"));
        // Another server gets none of the main model's key, headers or anthropic-only option.
        assert_eq!(other.api_key, None);
        assert!(other.headers.is_empty());
        assert_eq!(other.prompt_cache, None);
        let from_env = config.fallback_config(3).unwrap();
        assert_eq!(from_env.api_key, std::env::var("PATH").ok());
        assert_eq!(from_env.base_url, None);
        let elsewhere = config.fallback_config(4).unwrap();
        assert_eq!(elsewhere.api_key, None);
        assert_eq!(elsewhere.headers.len(), 1);
        assert!(config.fallback_config(5).is_none());
        // A string is a model on the client's server.
        let short: Config = serde_json::from_value(serde_json::json!({
            "style": "openai", "model": "a", "fallback": ["b"]
        }))
        .unwrap();
        assert_eq!(short.fallback[0].model.as_deref(), Some("b"));
        assert_eq!(short.fallback_config(0).unwrap().model_name(), "b");
    }

    #[test]
    fn fallback_entries_print_without_their_secrets() {
        let config: Config = serde_json::from_value(serde_json::json!({
            "model": "m",
            "fallback": [{"model": "f", "api_key": "sk-MARKER", "api_key_env": "FALLBACK_KEY",
                          "base_url": "https://u:MARKER@x.example/v1",
                          "headers": {"authorization": "MARKER"}}]
        }))
        .unwrap();
        let print = format!("{config:?}");
        assert!(!print.contains("MARKER"), "{print}");
        assert!(
            print.contains("FALLBACK_KEY") && print.contains("authorization"),
            "{print}"
        );
    }
}
