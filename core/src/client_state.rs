//! What every clone of a [`Client`](crate::Client) shares: its config, model, tools, gate and
//! conversation. Turns ([`crate::turn`]) hold it directly, so they do not need the public
//! client type; tool sources see it only as a [`ToolHost`](crate::ToolHost).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use tokio_util::sync::CancellationToken;

use crate::builtin::BackgroundShells;
use crate::compact::{Compaction, Compactor, ContextMeasure};
use crate::config::CompactionConfig;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::event::{StopReason, Usage};
use crate::gate::{Hooks, WaitFor};
use crate::hooks::{FileHooks, HooksFile, Lifecycle};
use crate::model::{complete_with_retry, Backend, Model, ModelRequest};
use crate::output::OutputSchema;
use crate::policy::Policy;
use crate::sandbox::Sandbox;
use crate::scope::{SampleRequest, Sampled};
use crate::settings::TurnSettings;
use crate::spelling::Spelling;
use crate::telemetry::Telemetry;
use crate::tool::{Allowlist, EventSink, HostTools, SourceList, Tool, ToolSpec, Toolkit};
use crate::transcript::{Message, Transcript};

/// The state of one client. Fields are private: the methods below are what turns, MCP sources
/// and the client itself use.
pub(crate) struct ClientState {
    config: Config,
    /// The config's model (slot 0), then its `fallback` models in order.
    models: Vec<Model>,
    /// The slot of the model the running turn sends its requests to: 0 when a turn starts;
    /// a fallback moves it on for the rest of that turn.
    model_at: AtomicUsize,
    toolkit: Toolkit,
    allow: Allowlist,
    hooks: Option<Arc<dyn Hooks>>,
    /// The lifecycle hooks: the hooks file's and the host's.
    lifecycle: Lifecycle,
    wait_for: Option<Arc<dyn WaitFor>>,
    conversation: Mutex<Transcript>,
    /// Held by the running turn: turns of one client run one at a time.
    turn_lock: tokio::sync::Mutex<()>,
    root: Arc<PathBuf>,
    secret_env: Arc<Vec<String>>,
    /// The last call id the engine made (`call_cxN`).
    next_id: AtomicU64,
    /// The checkpoints resumed on this client (turn id, suspension number).
    resumed: Mutex<std::collections::HashSet<(String, u32)>>,
    /// The parent of every turn's cancel token; cancelled by `close`.
    shutdown: CancellationToken,
    /// The opt-in background shells (config `background`).
    shells: Option<BackgroundShells>,
    /// Whether the client made its shells (config `background: true`) rather than being given
    /// host-owned ones, which other clients may share: only its own does it kill whole.
    owns_shells: bool,
    /// The approval policy in force; replaced whole by `set_policy`, read once per call.
    policy: RwLock<Option<Arc<Policy>>>,
    /// The tool sources added to the client (held weakly), polled before each turn.
    sources: SourceList,
    /// The host's part in compaction (its notice, its own compaction).
    compactor: Option<Arc<dyn Compactor>>,
    /// What the model server last reported about the conversation's size.
    context: Mutex<ContextMeasure>,
    /// The model settings of the config, as each request of a turn takes them.
    settings: TurnSettings,
    /// How the host spells option names (for a run's settings' errors).
    spelling: Spelling,
    /// The config's `output_schema`, compiled.
    output: Option<Arc<OutputSchema>>,
    /// Where the turns' spans go (the `telemetry` option, or a host's span sink).
    telemetry: Option<Arc<Telemetry>>,
}

/// What [`ClientState::new`] is built from (the builder's checked parts).
pub(crate) struct Parts {
    pub config: Config,
    pub backend: Arc<dyn Backend>,
    /// The `fallback` models, in order.
    pub fallbacks: Vec<Model>,
    pub toolkit: Toolkit,
    pub allow: Allowlist,
    pub hooks: Option<Arc<dyn Hooks>>,
    /// Config `hooks_file`, read.
    pub hooks_file: Option<HooksFile>,
    /// How long a host lifecycle hook may take.
    pub hook_timeout: std::time::Duration,
    pub wait_for: Option<Arc<dyn WaitFor>>,
    pub root: PathBuf,
    pub secret_env: Vec<String>,
    pub shells: Option<BackgroundShells>,
    pub owns_shells: bool,
    pub policy: Option<Policy>,
    pub compactor: Option<Arc<dyn Compactor>>,
    pub spelling: Spelling,
    /// The config's `output_schema`, compiled.
    pub output: Option<Arc<OutputSchema>>,
    /// Where the turns' spans go, when telemetry is on.
    pub telemetry: Option<Arc<Telemetry>>,
}

impl Drop for ClientState {
    fn drop(&mut self) {
        // A dropped client leaves none of its own background processes behind. Host-owned
        // shells (which other clients may share) stay for the host's `close_all`; the
        // shutdown token is not cancelled here, since sources registered into this client
        // watch it to stop with an explicit `close`.
        if self.owns_shells {
            if let Some(shells) = &self.shells {
                shells.close_all();
            }
        }
    }
}

impl ClientState {
    pub fn new(parts: Parts) -> Self {
        let root = Arc::new(parts.root);
        let secret_env = Arc::new(parts.secret_env);
        let lifecycle = Lifecycle {
            file: parts.hooks_file.filter(|f| !f.is_empty()).map(|f| {
                Arc::new(FileHooks::new(
                    f,
                    root.clone(),
                    Sandbox::new(parts.config.sandbox.clone(), parts.config.shell_env.clone()),
                    secret_env.clone(),
                ))
            }),
            host: parts.hooks.clone(),
            timeout: parts.hook_timeout,
        };
        ClientState {
            lifecycle,
            models: std::iter::once(Model {
                name: parts.config.model_name().to_string(),
                backend: parts.backend,
            })
            .chain(parts.fallbacks)
            .collect(),
            model_at: AtomicUsize::new(0),
            toolkit: parts.toolkit,
            allow: parts.allow,
            hooks: parts.hooks,
            wait_for: parts.wait_for,
            conversation: Mutex::new(Transcript::default()),
            turn_lock: tokio::sync::Mutex::new(()),
            root,
            secret_env,
            next_id: AtomicU64::new(0),
            resumed: Mutex::default(),
            shutdown: CancellationToken::new(),
            shells: parts.shells,
            owns_shells: parts.owns_shells,
            policy: RwLock::new(parts.policy.map(Arc::new)),
            sources: SourceList::default(),
            compactor: parts.compactor,
            context: Mutex::new(ContextMeasure::default()),
            settings: TurnSettings::new(parts.config.model_settings()),
            spelling: parts.spelling,
            output: parts.output,
            telemetry: parts.telemetry,
            config: parts.config,
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The model settings of the config.
    pub fn settings(&self) -> &TurnSettings {
        &self.settings
    }

    /// The config's `output_schema`, compiled.
    pub fn output(&self) -> Option<&Arc<OutputSchema>> {
        self.output.as_ref()
    }

    /// Where the turns' spans go, when telemetry is on.
    pub fn telemetry(&self) -> Option<&Arc<Telemetry>> {
        self.telemetry.as_ref()
    }

    /// How the host spells option names.
    pub fn spelling(&self) -> Spelling {
        self.spelling
    }

    /// The config's own model (compaction's summaries use it).
    pub fn backend(&self) -> &dyn Backend {
        &*self.models[0].backend
    }

    /// The config's model, then its fallbacks.
    pub fn models(&self) -> &[Model] {
        &self.models
    }

    /// The slot of the model the running turn is on (see [`ClientState::models`]).
    pub fn model_at(&self) -> usize {
        self.model_at.load(Ordering::Relaxed)
    }

    /// The running turn moved to the model in `slot`, for the rest of the turn.
    pub fn set_model_at(&self, slot: usize) {
        self.model_at.store(slot, Ordering::Relaxed);
    }

    pub fn toolkit(&self) -> &Toolkit {
        &self.toolkit
    }

    pub fn allow(&self) -> &Allowlist {
        &self.allow
    }

    pub fn hooks(&self) -> Option<&Arc<dyn Hooks>> {
        self.hooks.as_ref()
    }

    /// The lifecycle hooks (the hooks file's, the host's).
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }

    pub fn wait_for(&self) -> Option<&Arc<dyn WaitFor>> {
        self.wait_for.as_ref()
    }

    pub fn root(&self) -> &Arc<PathBuf> {
        &self.root
    }

    pub fn secret_env(&self) -> &Arc<Vec<String>> {
        &self.secret_env
    }

    /// The tool sources added to the client (each polled before every turn).
    pub fn sources(&self) -> &SourceList {
        &self.sources
    }

    pub fn shells(&self) -> Option<&BackgroundShells> {
        self.shells.as_ref()
    }

    /// The policy in force now.
    pub fn policy(&self) -> Option<Arc<Policy>> {
        self.policy.read().clone()
    }

    /// Replace the policy (already checked); the next call sees it.
    pub fn set_policy(&self, policy: Option<Policy>) {
        *self.policy.write() = policy.map(Arc::new);
    }

    /// A call id no call of this conversation has: `call_cxN`.
    pub fn next_call_id(&self) -> String {
        format!(
            "call_cx{}",
            self.next_id.fetch_add(1, Ordering::Relaxed) + 1
        )
    }

    /// Call ids generated from now on stay clear of `n` (`call_cxN`) and below: a resumed
    /// turn's reply holds ids this client did not make.
    pub fn reserve_call_ids(&self, n: u64) {
        self.next_id.fetch_max(n, Ordering::Relaxed);
    }

    /// Claim the checkpoint `turn_id` / `seq` for a resume on this client: `false` when it was
    /// already resumed here (an answer is applied once).
    pub fn claim_checkpoint(&self, turn_id: &str, seq: u32) -> bool {
        self.resumed.lock().insert((turn_id.to_string(), seq))
    }

    /// Give back a claim whose resume never started (cancelled while queued).
    pub fn release_checkpoint(&self, turn_id: &str, seq: u32) {
        self.resumed.lock().remove(&(turn_id.to_string(), seq));
    }

    /// Wait until no other turn runs; the guard holds the client's turn slot.
    /// A new turn starts on the config's own model.
    pub async fn lock_turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        let guard = self.turn_lock.lock().await;
        self.model_at.store(0, Ordering::Relaxed);
        guard
    }

    /// Append to the conversation.
    pub fn append(&self, messages: impl IntoIterator<Item = Message>) {
        self.lock_conversation().messages.extend(messages);
    }

    /// Read the conversation without copying it.
    pub fn with_messages<R>(&self, f: impl FnOnce(&[Message]) -> R) -> R {
        f(&self.lock_conversation().messages)
    }

    /// A copy of the conversation.
    pub fn transcript(&self) -> Transcript {
        self.lock_conversation().clone()
    }

    /// Replace the conversation; refused while a turn runs.
    pub fn set_transcript(&self, transcript: Transcript) -> Result<()> {
        transcript.validate()?;
        if !self.config().takes_images() {
            // Sending them would be refused by the provider, dropping them would change the
            // conversation in silence: the host decides (strip them, or use a client that
            // takes images).
            let images: usize = transcript.messages.iter().map(|m| m.images().count()).sum();
            if images > 0 {
                return Err(Error::Transcript(format!(
                    "it holds {images} image(s), but this client's model takes none (its \
                     `images` option is false): remove them or restore it into a client \
                     whose model takes images"
                )));
            }
        }
        let _idle = self
            .turn_lock
            .try_lock()
            .map_err(|_| Error::Busy("cannot replace the transcript"))?;
        self.next_id
            .fetch_max(transcript.max_generated_id(), Ordering::Relaxed);
        self.replace_conversation(transcript);
        Ok(())
    }

    /// Replace the conversation; the caller holds the turn slot or checked that no turn runs.
    /// What the server reported about the old one's size no longer applies.
    pub fn replace_conversation(&self, transcript: Transcript) {
        *self.lock_conversation() = transcript;
        self.context.lock().reset();
    }

    /// Note what the server reported for a request that carried the first `sent` messages.
    pub fn record_context(&self, sent: usize, usage: Usage) {
        self.context.lock().record(sent, usage);
    }

    /// One request to the config's own model, without tools and outside the conversation (an
    /// MCP server's sampling): the client's settings, with the request's temperature and stop
    /// sequences when it sets them. Retries as a turn's requests do; emits no events.
    pub async fn sample_model(
        &self,
        request: &SampleRequest,
        cancel: &CancellationToken,
    ) -> std::result::Result<Sampled, String> {
        let mut settings = self.settings.first().clone();
        if request.temperature.is_some() {
            settings.temperature = request.temperature;
        }
        if request.stop.is_some() {
            settings.stop = request.stop.clone();
        }
        let backend = self.backend();
        let body = backend.body(&ModelRequest {
            system: request.system.as_deref(),
            model: None,
            messages: &request.messages,
            tools: &[],
            settings: &settings,
            images: None,
            output: None,
        });
        let quiet = EventSink::discard();
        let response = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err("cancelled".into()),
            r = complete_with_retry(backend, &body, &self.config.retry, &quiet, 0, None) => r,
        };
        let response = response.map_err(|f| f.message)?;
        Ok(Sampled {
            text: response.text,
            usage: response.usage,
            model: self.config.model_name().to_string(),
            cut: response.stop == Some(StopReason::MaxTokens),
        })
    }

    /// The compaction of the conversation, with these settings, tools, sink and token.
    pub fn compaction<'a>(
        &'a self,
        settings: &'a CompactionConfig,
        tools: &'a [Arc<ToolSpec>],
        sink: &'a EventSink,
        cancel: &'a CancellationToken,
    ) -> Compaction<'a> {
        Compaction {
            backend: self.backend(),
            model_settings: self.settings.first(),
            retry: &self.config.retry,
            settings,
            compactor: self.compactor.as_ref(),
            conversation: &self.conversation,
            context: &self.context,
            system: self.config.system.as_deref(),
            tools,
            sink,
            cancel,
            lifecycle: &self.lifecycle,
            route: None,
        }
    }

    fn lock_conversation(&self) -> parking_lot::MutexGuard<'_, Transcript> {
        self.conversation.lock()
    }

    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<()> {
        self.toolkit.register(tool)
    }

    pub fn unregister(&self, name: &str) -> bool {
        self.toolkit.unregister(name)
    }

    pub fn tools(&self) -> Vec<ToolSpec> {
        self.toolkit.specs()
    }

    /// The parent of every turn's cancel token.
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Cancel every running turn, kill every background shell, refuse new turns.
    pub fn close(&self) {
        if !self.shutdown.is_cancelled() {
            // SessionEnd runs on the runtime the client is closed in (none: it is skipped),
            // bounded by its hooks' own timeouts.
            if let (Some(file), Ok(rt)) = (
                self.lifecycle.file.clone(),
                tokio::runtime::Handle::try_current(),
            ) {
                rt.spawn(async move { file.session_end().await });
            }
        }
        // Cancelling every turn's token kills the shells this client's turns started; shells
        // the host owns and shares (given with `background_shells`) stay for the host's
        // `close_all`.
        self.shutdown.cancel();
        if self.owns_shells {
            if let Some(shells) = &self.shells {
                shells.close_all();
            }
        }
        // The spans of the turns just cancelled end as their tasks notice; what is queued
        // now reaches the collector before close returns (a few seconds at most).
        if let Some(telemetry) = &self.telemetry {
            telemetry.flush();
        }
    }

    pub fn is_closed(&self) -> bool {
        self.shutdown.is_cancelled()
    }
}

impl HostTools for ClientState {
    fn toolkit(&self) -> &Toolkit {
        &self.toolkit
    }

    fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    fn roots(&self) -> Vec<PathBuf> {
        let mut roots = vec![PathBuf::clone(&self.root)];
        roots.extend(self.config.sandbox.writable.iter().cloned());
        roots
    }
}
