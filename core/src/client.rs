//! The client: configuration, tools, gate and conversation, and the entry points of a turn.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use crate::builtin::{builtins_for, BackgroundShells, OptIns, WebSearchProvider};
use crate::compact::{
    CompactFailed, CompactNotice, Compaction, Compactor, ContextMeasure, OnCompact,
};
use crate::config::{CompactionConfig, Config, RetryPolicy, Style};
use crate::error::{Error, Result};
use crate::event::{CompactTrigger, TurnResult};
use crate::gate::{Hooks, WaitFor};
use crate::model::{backend_for, list_models, Backend, ModelInfo, ScriptEntry};
use crate::policy::{check_backend, Policy};
use crate::tool::{Allowlist, EventSink, Tool, ToolSpec, Toolkit};
use crate::transcript::{Message, Transcript};
use crate::turn::{run_turn, Run, RunOptions, TurnSetup};

/// An agent client: one conversation, its tools, its gate and its model.
///
/// Cheap to clone (clones share everything). Turns on one client run one at a time, in the order
/// they were started; use several clients for concurrent conversations.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub config: Config,
    pub backend: Arc<dyn Backend>,
    pub toolkit: Toolkit,
    pub allow: Allowlist,
    pub hooks: Option<Arc<dyn Hooks>>,
    pub wait_for: Option<Arc<dyn WaitFor>>,
    pub conversation: Mutex<Transcript>,
    pub turn_lock: tokio::sync::Mutex<()>,
    pub root: Arc<PathBuf>,
    pub secret_env: Arc<Vec<String>>,
    pub next_id: AtomicU64,
    pub shutdown: CancellationToken,
    /// The opt-in background shells (config `background`).
    pub shells: Option<BackgroundShells>,
    /// The approval policy in force; replaced whole by `set_policy`, read once per call.
    pub policy: RwLock<Option<Arc<Policy>>>,
    /// The host's part in compaction (its notice, its own compaction).
    pub compactor: Option<Arc<dyn Compactor>>,
    /// What the model server last reported about the conversation's size.
    pub context: Mutex<ContextMeasure>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // A dropped client leaves no background process behind.
        if let Some(shells) = &self.shells {
            shells.close_all();
        }
    }
}

impl Inner {
    /// The policy in force now.
    pub fn policy(&self) -> Option<Arc<Policy>> {
        self.policy.read().expect("policy lock").clone()
    }

    /// The compaction of the conversation, with these tools and this sink and token.
    pub fn compaction<'a>(
        &'a self,
        settings: &'a CompactionConfig,
        tools: &'a [Arc<ToolSpec>],
        sink: &'a EventSink,
        cancel: &'a CancellationToken,
    ) -> Compaction<'a> {
        Compaction {
            backend: &*self.backend,
            retry: &self.config.retry,
            settings,
            compactor: self.compactor.as_ref(),
            conversation: &self.conversation,
            context: &self.context,
            system: self.config.system.as_deref(),
            tools,
            sink,
            cancel,
        }
    }

    /// Replace the conversation (the caller holds the turn lock or checked the transcript).
    pub fn replace_conversation(&self, transcript: Transcript) {
        *self.conversation.lock().expect("conversation lock") = transcript;
        self.context.lock().expect("context lock").reset();
    }

    pub fn append(&self, messages: impl IntoIterator<Item = Message>) {
        self.conversation
            .lock()
            .expect("conversation lock")
            .messages
            .extend(messages);
    }
}

impl Client {
    /// Start building a client.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Build a client from a whole config (what bindings do).
    pub fn from_config(config: Config) -> Result<Client> {
        ClientBuilder::from_config(config).build()
    }

    /// Run one turn to its end. Resolves with outcome `done`, `cancelled`, `max_turns` or `error`
    /// (the transcript kept in every case); `Err` only when the client was closed.
    pub async fn run(&self, prompt: impl Into<String>) -> Result<TurnResult> {
        self.run_with(prompt, RunOptions::default()).await
    }

    /// [`Client::run`] with per-run options (a narrower allowlist, an outside cancel token).
    pub async fn run_with(
        &self,
        prompt: impl Into<String>,
        options: RunOptions,
    ) -> Result<TurnResult> {
        self.check_open()?;
        let cancel = self.turn_token(&options);
        Ok(run_turn(
            self.inner.clone(),
            prompt.into(),
            TurnSetup {
                allow: options.allow,
                max_turns: options.max_turns,
                ..TurnSetup::default()
            },
            cancel,
            EventSink::discard(),
        )
        .await)
    }

    /// Start a turn and return its [`Run`] handle: events as they happen, `cancel()`, and the
    /// result. Needs a tokio runtime (the turn is spawned on it).
    pub fn stream(&self, prompt: impl Into<String>) -> Result<Run> {
        self.stream_with(prompt, RunOptions::default())
    }

    /// [`Client::stream`] with per-run options.
    pub fn stream_with(&self, prompt: impl Into<String>, options: RunOptions) -> Result<Run> {
        self.check_open()?;
        let cancel = self.turn_token(&options);
        let (tx, rx) = unbounded_channel();
        let handle = tokio::spawn(run_turn(
            self.inner.clone(),
            prompt.into(),
            TurnSetup {
                allow: options.allow,
                max_turns: options.max_turns,
                ..TurnSetup::default()
            },
            cancel.clone(),
            EventSink::new(tx),
        ));
        Ok(Run::new(rx, cancel, handle))
    }

    /// Add a tool (or replace the one of the same name). A tool registered while a turn runs is
    /// offered from that turn's next model request.
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<()> {
        self.inner.toolkit.register(tool)
    }

    /// Remove a tool; true when it was there.
    pub fn unregister(&self, name: &str) -> bool {
        self.inner.toolkit.unregister(name)
    }

    /// The specs of every registered tool (before allowlists).
    pub fn tools(&self) -> Vec<ToolSpec> {
        self.inner.toolkit.specs()
    }

    /// The conversation so far. During a turn: as of its last complete step.
    pub fn transcript(&self) -> Transcript {
        self.inner
            .conversation
            .lock()
            .expect("conversation lock")
            .clone()
    }

    /// Replace the conversation (for example with one saved earlier). Fails while a turn runs
    /// or when the transcript is not valid.
    pub fn set_transcript(&self, transcript: Transcript) -> Result<()> {
        transcript.validate()?;
        let _idle =
            self.inner.turn_lock.try_lock().map_err(|_| {
                Error::Config("cannot replace the transcript while a turn runs".into())
            })?;
        let max = transcript.max_generated_id();
        self.inner
            .next_id
            .fetch_max(max, std::sync::atomic::Ordering::Relaxed);
        self.inner.replace_conversation(transcript);
        Ok(())
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
        let shutdown = self.inner.shutdown.clone();
        let _idle = tokio::select! {
            _ = shutdown.cancelled() => return Err(Error::Config("the client is closed".into())),
            guard = self.inner.turn_lock.lock() => guard,
        };
        let settings = self
            .inner
            .config
            .compaction
            .clone()
            .unwrap_or_else(|| CompactionConfig::new(u64::MAX));
        let tools = self.inner.toolkit.offered(&|n| self.inner.allow.allows(n));
        let sink = EventSink::discard();
        let cancel = shutdown.child_token();
        let compaction = self.inner.compaction(&settings, &tools, &sink, &cancel);
        let pre = compaction.measure();
        match compaction.run(CompactTrigger::Manual, pre).await {
            Ok(notice) => Ok(notice),
            Err(CompactFailed::Cancelled) => Err(Error::Cancelled),
            Err(CompactFailed::Failed(why)) => Err(Error::Compaction(why)),
        }
    }

    /// The approval policy in force (the one given at creation, or the last `set_policy`).
    pub fn policy(&self) -> Option<Arc<Policy>> {
        self.inner.policy()
    }

    /// Replace the approval policy (`None` removes it); it applies from the next tool call,
    /// also within a running turn. Refused, with the old policy kept, when its
    /// `compute.modelAllowlist` / `backendAllowlist` exclude this client's model or style.
    /// `client.config().policy` keeps showing the policy given at creation.
    pub fn set_policy(&self, policy: Option<Policy>) -> Result<()> {
        if let Some(p) = &policy {
            check_backend(p, &self.inner.config)?;
        }
        *self.inner.policy.write().expect("policy lock") = policy.map(Arc::new);
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
        list_models(&self.inner.config).await
    }

    /// The config the client was built with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Cancel every running turn, kill every background shell, and refuse new turns.
    /// Idempotent.
    pub fn close(&self) {
        self.inner.shutdown.cancel();
        if let Some(shells) = &self.inner.shells {
            shells.close_all();
        }
    }

    /// The background shells, when config `background` is on.
    pub fn background_shells(&self) -> Option<&BackgroundShells> {
        self.inner.shells.as_ref()
    }

    /// Whether [`Client::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.shutdown.is_cancelled()
    }

    fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            Err(Error::Config("the client is closed".into()))
        } else {
            Ok(())
        }
    }

    fn turn_token(&self, options: &RunOptions) -> CancellationToken {
        let token = self.inner.shutdown.child_token();
        if let Some(outer) = &options.cancel {
            let (outer, inner) = (outer.clone(), token.clone());
            if outer.is_cancelled() {
                inner.cancel();
            } else {
                tokio::spawn(async move {
                    tokio::select! {
                        _ = outer.cancelled() => inner.cancel(),
                        _ = inner.cancelled() => {}
                    }
                });
            }
        }
        token
    }
}

/// Builds a [`Client`]. Every option also exists in [`Config`].
#[derive(Default)]
pub struct ClientBuilder {
    config: Config,
    tools: Vec<Arc<dyn Tool>>,
    hooks: Option<Arc<dyn Hooks>>,
    wait_for: Option<Arc<dyn WaitFor>>,
    opt_ins: OptIns,
    policy: Option<Policy>,
    compactor: Option<Arc<dyn Compactor>>,
}

impl ClientBuilder {
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
    /// Turn on background shells with these (the host keeps a handle, e.g. to `close_all`).
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
    /// Turn on the `websearch` builtin with the host's provider.
    pub fn websearch(mut self, provider: Arc<dyn WebSearchProvider>) -> Self {
        self.opt_ins.websearch = Some(provider);
        self
    }

    /// Check the config and build the client. Needs no runtime.
    pub fn build(self) -> Result<Client> {
        let config = self.config;
        config.check()?;
        let root = match &config.root {
            Some(r) => r.clone(),
            None => std::env::current_dir()?,
        };
        let root = std::fs::canonicalize(&root)
            .map_err(|e| Error::Config(format!("root directory {}: {e}", root.display())))?;
        if !root.is_dir() {
            return Err(Error::Config(format!(
                "root {} is not a directory",
                root.display()
            )));
        }
        let allow = match &config.allow {
            Some(patterns) => Allowlist::new(patterns)?,
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
        let backend = backend_for(&config)?;
        let toolkit = Toolkit::default();
        let mut opt_ins = self.opt_ins;
        opt_ins.shells = match (config.background, opt_ins.shells) {
            (false, _) => None,
            (true, shells) => Some(shells.unwrap_or_default()),
        };
        for (tool, spec) in builtins_for(&config, &opt_ins)? {
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
        Ok(Client {
            inner: Arc::new(Inner {
                backend,
                toolkit,
                allow,
                hooks: self.hooks,
                wait_for: self.wait_for,
                conversation: Mutex::new(Transcript::default()),
                turn_lock: tokio::sync::Mutex::new(()),
                root: Arc::new(root),
                secret_env: Arc::new(secret_env),
                next_id: AtomicU64::new(0),
                shutdown: CancellationToken::new(),
                shells: opt_ins.shells,
                policy: RwLock::new(policy.map(Arc::new)),
                compactor: self.compactor,
                context: Mutex::new(ContextMeasure::default()),
                config,
            }),
        })
    }
}
