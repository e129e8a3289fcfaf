//! The client: configuration, tools, gate and conversation, and the entry points of a turn.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use crate::builtin::{builtins_for, BackgroundShells, OptIns, WebSearchProvider};
use crate::client_state::{ClientState, Parts};
use crate::compact::{CompactFailed, CompactNotice, Compactor, OnCompact};
use crate::config::{CompactionConfig, Config, RetryPolicy, Style};
use crate::config_check::check_client;
use crate::durable::RunRecord;
use crate::error::{ConfigError, Error, Result};
use crate::event::{CompactTrigger, TurnResult};
use crate::gate::{Hooks, WaitFor};
use crate::image_file::check_prompt_paths;
use crate::model::{backend_for, list_models, Model, ModelInfo};
use crate::output::OutputSchema;
use crate::policy::{check_backend, Policy};
use crate::prompt::Prompt;
use crate::run::{Run, RunOptions};
use crate::script::ScriptEntry;
use crate::settings::{ModelSettings, TurnSettings};
use crate::spelling::Spelling;
use crate::telemetry::{ExportStats, SpanContext, SpanSink, Telemetry};
use crate::tool::{Allowlist, EventSink, HostTools, Tool, ToolHost, ToolSource, ToolSpec, Toolkit};
use crate::transcript::Transcript;
use crate::turn::{run_turn, TurnSetup};

/// An agent client: one conversation, its tools, its gate and its model.
///
/// Cheap to clone (clones share everything). Turns on one client run one at a time, in the order
/// they were started; use several clients for concurrent conversations.
///
/// # Examples
///
/// A host tool, a gate that denies it once, and a conversation carried over two turns (the
/// scripted model replays fixed responses: no network, the same engine):
///
/// ```
/// use std::sync::Arc;
/// use contenox::{
///     async_trait, tool_fn, Client, Decision, HostError, Hooks, Outcome, ScriptEntry,
///     ToolCallEvent, ToolOutput, ToolSpec,
/// };
/// use serde_json::json;
///
/// struct DenyDelete;
/// #[async_trait]
/// impl Hooks for DenyDelete {
///     async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
///         Ok(if call.arguments["what"] == "everything" {
///             Decision::deny("not that")
///         } else {
///             Decision::Allow
///         })
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let delete = tool_fn(
///     ToolSpec::new("delete", "Delete a thing.", json!({"type": "object"})),
///     |args, _ctx| async move { Ok(ToolOutput::text(format!("deleted {}", args["what"]))) },
/// );
/// let client = Client::builder()
///     .script(vec![
///         ScriptEntry::tool_call("c1", "delete", json!({"what": "everything"})),
///         ScriptEntry::text("I may not."),
///         ScriptEntry::text("Still here."),
///     ])
///     .builtins(Vec::<String>::new())
///     .tool(Arc::new(delete))
///     .hooks(Arc::new(DenyDelete))
///     .build()
///     .unwrap();
///
/// let first = client.run("Delete everything").await.unwrap();
/// assert_eq!(first.outcome, Outcome::Done);
/// assert_eq!(first.final_text, "I may not.");
/// let second = client.run("Are you there?").await.unwrap();
/// assert_eq!(second.final_text, "Still here.");
/// // user, assistant (call), tool (denied), assistant, user, assistant
/// assert_eq!(client.transcript().messages.len(), 6);
/// # });
/// ```
#[derive(Clone)]
pub struct Client {
    state: Arc<ClientState>,
}

impl Client {
    /// The shared state (for the engine's own modules).
    pub(crate) fn state(&self) -> &Arc<ClientState> {
        &self.state
    }

    /// Start building a client.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Build a client from a whole config (what bindings do).
    pub fn from_config(config: Config) -> Result<Client> {
        ClientBuilder::from_config(config).build()
    }

    /// Run one turn to its end. Resolves with outcome `done`, `cancelled`, `max_turns`, `budget`
    /// or `error` (the transcript kept in every case); `Err` only when the client was closed.
    pub async fn run(&self, prompt: impl Into<Prompt>) -> Result<TurnResult> {
        self.run_with(prompt, RunOptions::default()).await
    }

    /// [`Client::run`] with per-run options (a narrower allowlist, an outside cancel token).
    pub async fn run_with(
        &self,
        prompt: impl Into<Prompt>,
        options: RunOptions,
    ) -> Result<TurnResult> {
        self.check_open()?;
        let prompt = prompt.into();
        prompt.check()?;
        self.check_prompt_images(&prompt)?;
        let settings = self.run_settings(&options)?;
        let output = self.run_output(&options)?;
        let (cancel, _link) = self.turn_token(&options);
        let record = run_record(&options);
        let trace_parent = trace_parent(&options);
        Ok(run_turn(
            self.state.clone(),
            prompt,
            TurnSetup {
                allow: options.allow,
                max_turns: options.max_turns,
                settings,
                output,
                output_retries: options.output_retries,
                record,
                trace_parent,
                ..TurnSetup::default()
            },
            cancel,
            EventSink::discard(),
        )
        .await)
    }

    /// A prompt's images: refused when the model takes none (`images: false`); those given by
    /// path read beneath the root now, so a bad one is the caller's error before anything is
    /// sent.
    pub(crate) fn check_prompt_images(&self, prompt: &Prompt) -> Result<()> {
        if prompt.images() > 0 && !self.state.config().takes_images() {
            return Err(Error::Config(ConfigError {
                option: "prompt".into(),
                value: None,
                reason: "holds images, but this client's model takes none (its `images` option \
                         is false)"
                    .into(),
            }));
        }
        check_prompt_paths(prompt, self.state.root())
    }

    /// Start a turn and return its [`Run`] handle: events as they happen, `cancel()`, and the
    /// result. Needs a tokio runtime (the turn is spawned on it).
    pub fn stream(&self, prompt: impl Into<Prompt>) -> Result<Run> {
        self.stream_with(prompt, RunOptions::default())
    }

    /// [`Client::stream`] with per-run options.
    pub fn stream_with(&self, prompt: impl Into<Prompt>, options: RunOptions) -> Result<Run> {
        self.check_open()?;
        let prompt = prompt.into();
        prompt.check()?;
        self.check_prompt_images(&prompt)?;
        let settings = self.run_settings(&options)?;
        let output = self.run_output(&options)?;
        let (cancel, link) = self.turn_token(&options);
        let trace_parent = trace_parent(&options);
        let (tx, rx) = unbounded_channel();
        let record = run_record(&options);
        let turn = run_turn(
            self.state.clone(),
            prompt,
            TurnSetup {
                allow: options.allow,
                max_turns: options.max_turns,
                settings,
                output,
                output_retries: options.output_retries,
                record,
                trace_parent,
                ..TurnSetup::default()
            },
            cancel.clone(),
            EventSink::new(tx),
        );
        let turn = async move {
            let _link = link;
            turn.await
        };
        Ok(Run::spawn(turn, rx, cancel))
    }

    /// Add a tool (or replace the one of the same name). A tool registered while a turn runs is
    /// offered from that turn's next model request.
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<()> {
        self.state.register(tool)
    }

    /// Add a tool source (an [`McpSource`](crate::McpSource)'s or a
    /// [`RemoteSource`](crate::RemoteSource)'s [`source()`](crate::McpSource::source), or a
    /// [`ToolSource`] of your own): its tools are registered now and kept in step with it, and
    /// its work before a turn runs at the start of each of this client's turns. The client holds
    /// the source weakly: dropping every handle of it ends that work. `Err`, with nothing
    /// registered, when the source refuses the client (it is closed, or a name is taken).
    pub fn add_source(&self, source: Arc<dyn ToolSource>) -> Result<()> {
        let host = ToolHost::new(self.state.clone() as Arc<dyn HostTools>);
        source.clone().attach(&host)?;
        self.state.sources().add(Arc::downgrade(&source));
        Ok(())
    }

    /// Remove a tool; true when it was there.
    pub fn unregister(&self, name: &str) -> bool {
        self.state.unregister(name)
    }

    /// The specs of every registered tool (before allowlists).
    pub fn tools(&self) -> Vec<ToolSpec> {
        self.state.tools()
    }

    /// The conversation so far. During a turn: as of its last complete step.
    pub fn transcript(&self) -> Transcript {
        self.state.transcript()
    }

    /// Replace the conversation (for example with one saved earlier). Fails while a turn runs
    /// or when the transcript is not valid.
    pub fn set_transcript(&self, transcript: Transcript) -> Result<()> {
        self.state.set_transcript(transcript)
    }

    /// Compact the conversation now (see [`crate::compact`]): the older part replaced by the
    /// model's summary (or by the host compactor's transcript), keeping the most recent
    /// `compaction.keep_recent` messages (4 when the option is not set). Waits for a running
    /// turn to end. `Ok(None)` when there is nothing older to summarise; `Err` when the
    /// summary request (or the compactor) failed, the conversation then unchanged. The
    /// `compact` event of a manual compaction reaches no stream (there is no turn): the
    /// returned notice and `on_compact` carry it.
    pub async fn compact(&self) -> Result<Option<CompactNotice>> {
        self.check_open()?;
        let state = &self.state;
        let shutdown = state.shutdown_token().clone();
        let _idle = tokio::select! {
            _ = shutdown.cancelled() => return Err(Error::Closed),
            guard = state.lock_turn() => guard,
        };
        let settings = state
            .config()
            .compaction
            .clone()
            .unwrap_or_else(|| CompactionConfig::new(u64::MAX));
        let tools = state.toolkit().offered(&|n| state.allow().allows(n));
        let sink = EventSink::discard();
        let cancel = shutdown.child_token();
        let compaction = state.compaction(&settings, &tools, &sink, &cancel);
        let pre = compaction.measure();
        match compaction.run(CompactTrigger::Manual, pre).await {
            Ok(notice) => Ok(notice),
            // Only a close cancels a manual compaction.
            Err(CompactFailed::Cancelled) => Err(Error::Closed),
            Err(CompactFailed::Failed(why)) => Err(Error::Compaction(why)),
        }
    }

    /// The approval policy in force (the one given at creation, or the last `set_policy`).
    pub fn policy(&self) -> Option<Arc<Policy>> {
        self.state.policy()
    }

    /// Replace the approval policy (`None` removes it); it applies from the next tool call,
    /// also within a running turn. Refused, with the old policy kept, when its
    /// `compute.modelAllowlist` / `backendAllowlist` exclude this client's model or style.
    /// `client.config().policy` keeps showing the policy given at creation.
    pub fn set_policy(&self, policy: Option<Policy>) -> Result<()> {
        if let Some(p) = &policy {
            check_backend(p, self.state.config())?;
        }
        self.state.set_policy(policy);
        Ok(())
    }

    /// [`Client::set_policy`] from the `policy` option's forms (what bindings pass): a
    /// document, its JSON text or a file path; JSON `null` removes the policy. A policy that
    /// does not validate is refused and the old one stays.
    pub fn set_policy_source(&self, source: &serde_json::Value) -> Result<()> {
        if source.is_null() {
            return self.set_policy(None);
        }
        self.set_policy(Some(Policy::from_source(source)?))
    }

    /// The models the configured server offers.
    pub async fn list_models(&self) -> Result<Vec<ModelInfo>> {
        list_models(self.state.config()).await
    }

    /// The config the client was built with.
    pub fn config(&self) -> &Config {
        self.state.config()
    }

    /// Cancel every running turn, kill every background shell, and refuse new turns.
    /// Idempotent.
    pub fn close(&self) {
        self.state.close();
    }

    /// The background shells, when config `background` is on.
    pub fn background_shells(&self) -> Option<&BackgroundShells> {
        self.state.shells()
    }

    /// What happened to the spans exported so far (sent, dropped with the queue full, lost to
    /// a collector that was down); `None` when telemetry is off. Zeros when the host takes
    /// the spans ([`ClientBuilder::span_sink`]).
    pub fn telemetry_stats(&self) -> Option<ExportStats> {
        self.state.telemetry().map(|t| t.stats())
    }

    /// Whether [`Client::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.state.is_closed()
    }

    /// A run's settings over the client's, checked against the client's style as the
    /// client's are at creation; `None` when the run gives none.
    pub(crate) fn run_settings(&self, options: &RunOptions) -> Result<Option<TurnSettings>> {
        let Some(over) = &options.settings else {
            return Ok(None);
        };
        let config = self.state.config();
        let settings = config.model_settings().overlay(over);
        settings
            .check(config.style, config.max_tokens, "settings.")
            .map_err(|e| Error::Config(e.spelled(self.state.spelling())))?;
        Ok(Some(TurnSettings::new(settings)))
    }

    /// A run's `output_schema`, compiled: a bad one is the caller's configuration error before
    /// the turn starts. `None` when the run gives none (the client's, if any, holds).
    pub(crate) fn run_output(&self, options: &RunOptions) -> Result<Option<Arc<OutputSchema>>> {
        let Some(schema) = &options.output_schema else {
            return Ok(None);
        };
        let compiled = OutputSchema::new(schema).map_err(|why| {
            Error::Config(ConfigError::new("output_schema", why).spelled(self.state.spelling()))
        })?;
        Ok(Some(Arc::new(compiled)))
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    /// The token of a new turn (a child of the client's shutdown token), linked to the
    /// caller's outside token when `options` has one. The link is a task that lasts until
    /// the outside token is cancelled, the turn's token is, or the returned [`TurnLink`] is
    /// dropped: the turn's future holds it, so a long-lived outside token that is never
    /// cancelled does not keep one task per finished turn.
    pub(crate) fn turn_token(&self, options: &RunOptions) -> (CancellationToken, TurnLink) {
        let token = self.state.shutdown_token().child_token();
        let mut link = TurnLink(None);
        if let Some(outer) = &options.cancel {
            let (outer, inner) = (outer.clone(), token.clone());
            if outer.is_cancelled() {
                inner.cancel();
            } else {
                let ended = CancellationToken::new();
                link.0 = Some(ended.clone().drop_guard());
                tokio::spawn(async move {
                    // A turn that has ended is out of the outside token's reach, even when both
                    // fire before this task runs: a host that cancels its token as soon as the
                    // turn's result arrives (the Python binding's `run` does) must not kill the
                    // background shells the turn started. So `ended` is looked at first.
                    tokio::select! {
                        biased;
                        _ = ended.cancelled() => {}
                        _ = inner.cancelled() => {}
                        _ = outer.cancelled() => {
                            if !ended.is_cancelled() {
                                inner.cancel();
                            }
                        }
                    }
                });
            }
        }
        (token, link)
    }
}

/// Held by a turn's future: dropping it (the turn ended, or its future was dropped) ends the
/// link from the caller's cancel token to the turn (see [`Client::turn_token`]).
pub(crate) struct TurnLink(Option<tokio_util::sync::DropGuard>);

/// What a run's options leave in a suspended turn's checkpoint (all but the cancel token).
pub(crate) fn run_record(options: &RunOptions) -> RunRecord {
    RunRecord {
        allow: options.allow.as_ref().map(|a| a.patterns().to_vec()),
        max_turns: options.max_turns,
        settings: options.settings.clone(),
        output_schema: options.output_schema.clone(),
        output_retries: options.output_retries,
    }
}

/// A run's `traceparent`, read (a bad one is no parent: the turn starts a new trace).
pub(crate) fn trace_parent(options: &RunOptions) -> Option<SpanContext> {
    options
        .traceparent
        .as_deref()
        .and_then(SpanContext::from_traceparent)
}

/// Builds a [`Client`]. Every option also exists in [`Config`].
#[derive(Default)]
pub struct ClientBuilder {
    config: Config,
    tools: Vec<Arc<dyn Tool>>,
    hooks: Option<Arc<dyn Hooks>>,
    wait_for: Option<Arc<dyn WaitFor>>,
    opt_ins: OptIns,
    spelling: Spelling,
    policy: Option<Policy>,
    compactor: Option<Arc<dyn Compactor>>,
    hook_timeout: Option<std::time::Duration>,
    span_sink: Option<Arc<dyn SpanSink>>,
    host_tracer: Option<Arc<dyn SpanSink>>,
}

impl ClientBuilder {
    /// Hand the turns' finished spans to `sink` instead of exporting them (a binding replays
    /// them into its host's tracer provider). Turns telemetry on unless the config's
    /// `telemetry` is `false`; its `include_contents` still applies.
    pub fn span_sink(mut self, sink: Arc<dyn SpanSink>) -> Self {
        self.span_sink = Some(sink);
        self
    }

    /// The host has its own tracer provider (a binding found Python's `opentelemetry` SDK or
    /// Node's global `@opentelemetry/api` provider set): while the config's `telemetry` is on,
    /// the turns' spans go to `sink`, which replays them into that provider, instead of the
    /// OTLP exporter (none is started); with telemetry off, nothing changes. Unlike
    /// [`ClientBuilder::span_sink`], it never turns telemetry on by itself.
    pub fn host_tracer(mut self, sink: Arc<dyn SpanSink>) -> Self {
        self.host_tracer = Some(sink);
        self
    }

    /// Name options in configuration errors the way the host spells them (bindings: JavaScript
    /// passes [`Spelling::Camel`]). Default: the engine's snake_case.
    pub fn spelling(mut self, spelling: Spelling) -> Self {
        self.spelling = spelling;
        self
    }

    /// Start from a whole config.
    pub fn from_config(config: Config) -> Self {
        ClientBuilder {
            config,
            ..Default::default()
        }
    }

    /// The wire style.
    pub fn style(mut self, style: Style) -> Self {
        self.config.style = style;
        self
    }
    /// The base URL (openai `…/v1`; anthropic and ollama the host root).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.config.base_url = Some(url.into());
        self
    }
    /// The model name.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.config.model = Some(model.into());
        self
    }
    /// The API key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.config.api_key = Some(key.into());
        self
    }
    /// An extra header for every model request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.headers.insert(name.into(), value.into());
        self
    }
    /// The system prompt.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.config.system = Some(system.into());
        self
    }
    /// The root directory of the file tools.
    pub fn root(mut self, root: impl Into<PathBuf>) -> Self {
        self.config.root = Some(root.into());
        self
    }
    /// Which builtins to offer.
    pub fn builtins<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config.builtins = Some(names.into_iter().map(Into::into).collect());
        self
    }
    /// The allowlist.
    pub fn allow<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config.allow = Some(patterns.into_iter().map(Into::into).collect());
        self
    }
    /// Model responses per turn.
    pub fn max_turns(mut self, n: u32) -> Self {
        self.config.max_turns = n;
        self
    }
    /// `max_tokens` of each request.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.config.max_tokens = n;
        self
    }
    /// The retry policy.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.config.retry = policy;
        self
    }
    /// Use the scripted style with these responses.
    pub fn script(mut self, entries: Vec<ScriptEntry>) -> Self {
        self.config.style = Style::Scripted;
        self.config.script = Some(entries);
        self
    }
    /// A host tool.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }
    /// How long each lifecycle hook of [`Hooks`] (`on_prompt` ... `on_notification`) may take
    /// before its point's fallback applies (default 60 s). Command hooks of a hooks file have
    /// their own `timeout`.
    pub fn hook_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.hook_timeout = Some(timeout);
        self
    }

    /// Lifecycle hooks from a hooks file (see [`crate::hooks`]); also settable as config
    /// `hooks_file`.
    pub fn hooks_file(mut self, source: serde_json::Value) -> Self {
        self.config.hooks_file = Some(source);
        self
    }

    /// The gate's hooks.
    pub fn hooks(mut self, hooks: Arc<dyn Hooks>) -> Self {
        self.hooks = Some(hooks);
        self
    }
    /// What answers asks.
    pub fn wait_for(mut self, wait_for: Arc<dyn WaitFor>) -> Self {
        self.wait_for = Some(wait_for);
        self
    }
    /// Turn on background shells with these, which the host owns and may give to several
    /// clients: `close` kills the shells this client's turns started and leaves the others to
    /// the host's `close_all` (dropping the client kills none of them; the last handle's drop
    /// kills what is left).
    pub fn background_shells(mut self, shells: BackgroundShells) -> Self {
        self.config.background = true;
        self.opt_ins.shells = Some(shells);
        self
    }
    /// The approval policy (see [`crate::policy`]); also settable as config `policy`.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.config.policy = Some(policy.document().clone());
        self.policy = Some(policy);
        self
    }
    /// Tool calls per turn before the turn ends with outcome `budget`.
    pub fn max_tool_calls(mut self, n: u64) -> Self {
        self.config.max_tool_calls = Some(n);
        self
    }
    /// Which calls of one reply run side by side ([`crate::ToolConcurrency`]; default read-only ones).
    pub fn tool_concurrency(mut self, mode: crate::ToolConcurrency) -> Self {
        self.config.tool_concurrency = mode;
        self
    }
    /// At most `n` calls of one reply run at once (default 8).
    pub fn max_concurrent_tools(mut self, n: u32) -> Self {
        self.config.max_concurrent_tools = n;
        self
    }
    /// Start calls while the model still streams its reply (default on).
    pub fn stream_tools(mut self, on: bool) -> Self {
        self.config.stream_tools = on;
        self
    }
    /// Tokens (input + output) per turn before the turn ends with outcome `budget`.
    pub fn max_turn_tokens(mut self, n: u64) -> Self {
        self.config.max_turn_tokens = Some(n);
        self
    }
    /// Compact the conversation when it grows over `config.threshold_tokens` (see
    /// [`crate::compact`]).
    pub fn compaction(mut self, config: CompactionConfig) -> Self {
        self.config.compaction = Some(config);
        self
    }
    /// The host's part in compaction: told after each one, and optionally compacting in its
    /// own way.
    pub fn compactor(mut self, compactor: Arc<dyn Compactor>) -> Self {
        self.compactor = Some(compactor);
        self
    }
    /// Be told after each compaction (what the `compact` event says). Replaces a
    /// [`ClientBuilder::compactor`].
    pub fn on_compact(self, f: impl Fn(&CompactNotice) + Send + Sync + 'static) -> Self {
        self.compactor(Arc::new(OnCompact(f)))
    }
    /// A JSON Schema every turn's final answer must match (`output_schema`; see
    /// [`crate::output`]): the result's `output` is the validated answer. Checked by
    /// [`ClientBuilder::build`].
    pub fn output_schema(mut self, schema: serde_json::Value) -> Self {
        self.config.output_schema = Some(schema);
        self
    }

    /// How many times an answer that does not match `output_schema` is sent back (default 2).
    pub fn output_retries(mut self, n: u32) -> Self {
        self.config.output_retries = n;
        self
    }

    /// The model settings (temperature, seed, tool_choice, reasoning, ...; see
    /// [`crate::settings`]), replacing any set before.
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.config.set_model_settings(settings);
        self
    }
    /// Whether the model takes images (the default); `false` refuses a prompt with images and
    /// turns a tool result's images into an error result.
    pub fn images(mut self, takes: bool) -> Self {
        self.config.images = Some(takes);
        self
    }
    /// Anthropic prompt caching on (the default) or off.
    pub fn prompt_cache(mut self, on: bool) -> Self {
        self.config.prompt_cache = Some(on);
        self
    }
    /// Turn on the `websearch` builtin with the host's provider.
    pub fn websearch(mut self, provider: Arc<dyn WebSearchProvider>) -> Self {
        self.opt_ins.websearch = Some(provider);
        self
    }

    /// Check the whole config and build the client. Needs no runtime. Every option is checked
    /// here (a bad `base_url` fails now, not at the first request); errors name the option as
    /// [`ClientBuilder::spelling`] spells it.
    pub fn build(self) -> Result<Client> {
        // A dead hook command's or MCP server's stdin must not kill a Swift or C host.
        crate::sandbox::ignore_sigpipe_if_default();
        let config = self.config;
        let spelling = self.spelling;
        check_client(&config, spelling)?;
        let option = |option: &'static str| move |e: Error| e.for_option(option).spelled(spelling);
        let root = match &config.root {
            Some(r) => r.clone(),
            None => std::env::current_dir()?,
        };
        let shown = || serde_json::Value::String(root.display().to_string()).to_string();
        let root = std::fs::canonicalize(&root).map_err(|e| {
            Error::Config(
                ConfigError::new("root", format!("cannot be opened: {e}"))
                    .with_value(shown())
                    .spelled(spelling),
            )
        })?;
        if !root.is_dir() {
            return Err(Error::Config(
                ConfigError::new("root", "is not a directory")
                    .with_value(shown())
                    .spelled(spelling),
            ));
        }
        let allow = match &config.allow {
            Some(patterns) => Allowlist::new(patterns).map_err(option("allow"))?,
            None => Allowlist::all(),
        };
        let policy = match (self.policy, &config.policy) {
            (Some(p), _) => Some(p),
            (None, Some(source)) => Some(Policy::from_source(source)?),
            (None, None) => None,
        };
        if let Some(p) = &policy {
            check_backend(p, &config)?;
        }
        let hooks_file = match &config.hooks_file {
            Some(source) => Some(
                crate::hooks::HooksFile::from_source(source)
                    .map_err(|e| Error::Config(e.spelled(spelling)))?,
            ),
            None => None,
        };
        let backend = backend_for(&config).map_err(option(""))?;
        let mut fallbacks = Vec::with_capacity(config.fallback.len());
        for i in 0..config.fallback.len() {
            let Some(entry) = config.fallback_config(i) else {
                continue;
            };
            let at = format!("fallback[{i}]");
            fallbacks.push(Model {
                name: entry.model_name().to_string(),
                backend: backend_for(&entry).map_err(|e| e.for_option(&at).spelled(spelling))?,
            });
        }
        let output = match &config.output_schema {
            Some(schema) => Some(Arc::new(OutputSchema::new(schema).map_err(|why| {
                Error::Config(ConfigError::new("output_schema", why).spelled(spelling))
            })?)),
            None => None,
        };
        let toolkit = Toolkit::default();
        let mut opt_ins = self.opt_ins;
        let owns_shells = opt_ins.shells.is_none();
        opt_ins.shells = match (config.background, opt_ins.shells) {
            (false, _) => None,
            (true, shells) => Some(shells.unwrap_or_default()),
        };
        for (tool, spec) in builtins_for(&config, &opt_ins).map_err(option("builtins"))? {
            toolkit.register_checked(tool, spec);
        }
        for tool in self.tools {
            toolkit.register(tool)?;
        }
        let mut secret_env = config.secret_env.clone();
        for style in [Style::Openai, Style::Anthropic, Style::Ollama] {
            if let Some(k) = style.api_key_env() {
                secret_env.push(k.to_string());
            }
        }
        // The variables fallback keys are read from are as secret as the styles' own.
        secret_env.extend(config.fallback.iter().filter_map(|f| f.api_key_env.clone()));
        let telemetry =
            Telemetry::from_option(config.telemetry.as_ref(), self.span_sink, self.host_tracer)
                .map_err(|why| {
                    Error::Config(ConfigError::new("telemetry", why).spelled(spelling))
                })?;
        let hook_timeout = self
            .hook_timeout
            .or(config.hook_timeout_ms.map(std::time::Duration::from_millis))
            .unwrap_or(crate::hooks::DEFAULT_LIFECYCLE_TIMEOUT);
        Ok(Client {
            state: Arc::new(ClientState::new(Parts {
                config,
                backend,
                fallbacks,
                toolkit,
                allow,
                hooks: self.hooks,
                hooks_file,
                hook_timeout,
                wait_for: self.wait_for,
                root,
                secret_env,
                shells: opt_ins.shells,
                owns_shells,
                policy,
                compactor: self.compactor,
                spelling,
                output,
                telemetry,
            })),
        })
    }
}
