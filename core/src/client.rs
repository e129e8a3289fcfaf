//! The client: configuration, tools, gate and conversation, and the entry points of a turn.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use crate::builtin::{builtins_for, BackgroundShells, OptIns, WebSearchProvider};
use crate::config::{Config, RetryPolicy, Style};
use crate::error::{Error, Result};
use crate::event::TurnResult;
use crate::gate::{Hooks, WaitFor};
use crate::model::{backend_for, list_models, Backend, ModelInfo, ScriptEntry};
use crate::tool::{Allowlist, BeforeTurnList, EventSink, Tool, ToolSpec, Toolkit};
use crate::transcript::{Message, Transcript};
use crate::turn::{run_turn, Run, RunOptions};

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
    /// Sources polled before each turn (remote hooks that were unreachable).
    pub before_turn: BeforeTurnList,
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
    /// A call id unique over the conversation, for calls that came without one.
    pub fn next_call_id(&self) -> String {
        let n = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        format!("call_cx{n}")
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
            options.allow,
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
            options.allow,
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
        *self.inner.conversation.lock().expect("conversation lock") = transcript;
        Ok(())
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

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            Err(Error::Config("the client is closed".into()))
        } else {
            Ok(())
        }
    }

    pub(crate) fn turn_token(&self, options: &RunOptions) -> CancellationToken {
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
                before_turn: BeforeTurnList::default(),
                config,
            }),
        })
    }
}
