//! `Client`: the engine's client as a UniFFI object.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use contenox::step::StepOptions;
use contenox::{CancellationToken, CompactNotice, ModelInfo, RunOptions, SubagentOptions};

use crate::convert::{via_json, Answer, ToolSpec, Transcript, TurnResult};
use crate::error::ContenoxError;
use crate::hooks::{Hooks, HooksAdapter, LifecycleHooks};
use crate::host::{
    HostTool, OnCompact, OnCompactAdapter, ToolAdapter, WaitFor, WaitForAdapter, WebSearchAdapter,
    WebSearchProvider,
};
use crate::prompt::{to_prompt, PromptPart};
use crate::run::Run;
use crate::shells::BackgroundShells;
use crate::source::SourceTool;
use crate::step::Stepper;

/// An agent client: one conversation, its tools, its gate and its model.
///
/// Turns on one client run one at a time, in the order they were started. `shutdown()` cancels
/// what runs and refuses new turns; freeing the client (Kotlin `close()` / `use {}`, Swift
/// `deinit`) does the same.
#[derive(uniffi::Object)]
pub struct Client {
    inner: contenox::Client,
    /// Every turn's cancel token is a child of this one; `cancel()` cancels it and puts a fresh
    /// one in its place.
    turns: Mutex<CancellationToken>,
}

impl Client {
    /// The engine's client.
    pub(crate) fn core(&self) -> &contenox::Client {
        &self.inner
    }

    /// A turn's options: a child of the client's cancel token, the run's allowlist, its model
    /// settings (JSON text with the engine's names) and its output schema (JSON text), when
    /// given.
    fn turn_options(
        &self,
        allow: Option<Vec<String>>,
        settings_json: Option<String>,
        output_schema_json: Option<String>,
    ) -> Result<RunOptions, ContenoxError> {
        let token = self.turns.lock().child_token();
        let mut options = RunOptions::default().cancel(token);
        if let Some(patterns) = allow {
            options = options.allow(&patterns)?;
        }
        if let Some(json) = settings_json {
            let value: serde_json::Value = serde_json::from_str(&json)
                .map_err(|e| contenox::Error::config(format!("settings: not valid JSON: {e}")))?;
            options = options.settings(contenox::ModelSettings::from_value(
                &value,
                contenox::Spelling::Snake,
            )?);
        }
        if let Some(json) = output_schema_json {
            let schema: serde_json::Value = serde_json::from_str(&json).map_err(|e| {
                contenox::Error::config(format!("output_schema: not valid JSON: {e}"))
            })?;
            options = options.output_schema(schema);
        }
        Ok(options)
    }

    /// Start a resumed turn (under a child of the client's cancel token); the engine checks the
    /// checkpoint and the answers before anything runs.
    fn resume_run(
        &self,
        checkpoint: String,
        answers: HashMap<String, Answer>,
    ) -> Result<contenox::Run, ContenoxError> {
        let answers = answers
            .into_iter()
            .map(|(id, a)| Ok((id, a.into_core()?)))
            .collect::<Result<contenox::durable::Answers, ContenoxError>>()?;
        let options = RunOptions::default().cancel(self.turns.lock().child_token());
        Ok(self
            .inner
            .resume_stream_with(&checkpoint, answers, options)?)
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Client {
    /// Build a client. `config_json` is the engine's `Config` as JSON (snake_case keys, the same
    /// names in every binding: `style`, `base_url`, `model`, `api_key`, `root`, `builtins`,
    /// `allow`, `max_turns`, `script`, `compaction`, ...); unknown keys are an error.
    /// `websearch`: a search provider, which turns on the `websearch` builtin. `on_compact`:
    /// told after every compaction. `background_shells`: host-made shells (turns background
    /// shells on; several clients may share them; the host calls `closeAll()` on shutdown).
    /// `lifecycle`: the turn's lifecycle points (`LifecycleHooks`: `onPrompt`, `onStop`, ...),
    /// beside the gate's `hooks`.
    #[uniffi::constructor(default(
        tools = [],
        hooks = None,
        wait_for = None,
        websearch = None,
        on_compact = None,
        background_shells = None,
        lifecycle = None
    ))]
    #[allow(clippy::too_many_arguments)] // the constructor's named, defaulted options in Kotlin/Swift
    pub fn new(
        config_json: String,
        tools: Vec<Arc<dyn HostTool>>,
        hooks: Option<Arc<dyn Hooks>>,
        wait_for: Option<Arc<dyn WaitFor>>,
        websearch: Option<Arc<dyn WebSearchProvider>>,
        on_compact: Option<Arc<dyn OnCompact>>,
        background_shells: Option<Arc<BackgroundShells>>,
        lifecycle: Option<Arc<dyn LifecycleHooks>>,
    ) -> Result<Arc<Self>, ContenoxError> {
        let config = contenox::Config::from_json(&config_json)?;
        let mut builder = contenox::ClientBuilder::from_config(config);
        for tool in tools {
            builder = builder.tool(ToolAdapter::wrap(tool)?);
        }
        if hooks.is_some() || lifecycle.is_some() {
            builder = builder.hooks(Arc::new(HooksAdapter {
                gate: hooks,
                lifecycle,
            }));
        }
        if let Some(wait_for) = wait_for {
            builder = builder.wait_for(Arc::new(WaitForAdapter(wait_for)));
        }
        if let Some(provider) = websearch {
            builder = builder.websearch(Arc::new(WebSearchAdapter(provider)));
        }
        if let Some(on_compact) = on_compact {
            builder = builder.compactor(Arc::new(OnCompactAdapter(on_compact)));
        }
        if let Some(shells) = background_shells {
            builder = builder.background_shells(shells.handle());
        }
        Ok(Arc::new(Client {
            inner: builder.build()?,
            turns: Mutex::new(CancellationToken::new()),
        }))
    }

    /// Run one turn to its end. Resolves with outcome `Done`, `Cancelled`, `MaxTurns`, `Budget`
    /// or `Error` (the transcript kept in every case); throws only for misuse (a closed client, a bad
    /// `allow` pattern, bad settings). `allow` narrows the tools for this turn only (allowlist
    /// grammar). `settings_json`: model settings for this turn only, as JSON with the config's
    /// names (`{"temperature": 0, "seed": 7}`); each key given replaces the client's, checked
    /// as the client's are (`ContenoxError.Config` naming `settings.<key>`).
    /// `output_schema_json`: a JSON Schema this turn's final answer must match, instead of the
    /// config's `output_schema` (a bad one is `ContenoxError.Config`); the result's
    /// `outputJson` is the validated answer.
    ///
    /// Cancelling the caller (the Kotlin coroutine, or dropping the future) cancels the turn, as
    /// `cancel()` does: it ends as `Cancelled` with a valid transcript.
    #[uniffi::method(default(allow = None, settings_json = None, output_schema_json = None))]
    pub async fn run(
        &self,
        prompt: String,
        allow: Option<Vec<String>>,
        settings_json: Option<String>,
        output_schema_json: Option<String>,
    ) -> Result<TurnResult, ContenoxError> {
        let options = self.turn_options(allow, settings_json, output_schema_json)?;
        // The turn runs in its own task; dropping this future drops the run, which cancels the
        // turn: it still ends properly, as `Cancelled`, instead of being cut off mid-step.
        let run = self.inner.stream_with(prompt, options)?;
        Ok(run.result().await?.into())
    }

    /// Go on with a turn that ended `Suspended` (its `WaitFor` answered `Answer.Suspend`), from
    /// its result's `checkpoint`, in this process or another with the same config. `answers`
    /// are keyed by the `call_id` of the result's `pending`; a request left out is asked again
    /// through `WaitFor` with what is left of its time. The gate runs again first (a policy
    /// that now denies wins; an answer counts only while the gate asks the same), an ask past
    /// its deadline is denied as timed out, recorded results replay. Throws
    /// `ContenoxError.Checkpoint` before anything runs when the checkpoint is not one, was
    /// written by a newer engine, was edited, was already resumed on this client, or an answer
    /// names a call that is not waiting.
    pub async fn resume(
        &self,
        checkpoint: String,
        answers: HashMap<String, Answer>,
    ) -> Result<TurnResult, ContenoxError> {
        let run = self.resume_run(checkpoint, answers)?;
        Ok(run.result().await?.into())
    }

    /// [`Client::resume`] as a `Run`: events as they happen (results replayed from the
    /// checkpoint emit none again), `cancel()`, `result()`.
    pub async fn resume_stream(
        &self,
        checkpoint: String,
        answers: HashMap<String, Answer>,
    ) -> Result<Arc<Run>, ContenoxError> {
        Ok(Arc::new(Run::new(self.resume_run(checkpoint, answers)?)))
    }

    /// Start a turn and return its `Run`: events as they happen (`nextBatch()`), `cancel()`,
    /// and `result()`. See the Kotlin `Run.events()` Flow and the Swift `Run.events`
    /// AsyncStream helpers.
    #[uniffi::method(default(allow = None, settings_json = None, output_schema_json = None))]
    pub async fn stream(
        &self,
        prompt: String,
        allow: Option<Vec<String>>,
        settings_json: Option<String>,
        output_schema_json: Option<String>,
    ) -> Result<Arc<Run>, ContenoxError> {
        let options = self.turn_options(allow, settings_json, output_schema_json)?;
        let run = self.inner.stream_with(prompt, options)?;
        Ok(Arc::new(Run::new(run)))
    }

    /// Start a turn stepped by its host: the returned `Stepper`'s `next()` gives each model
    /// request, tool call (with its idempotency key `turnId:callId`) and ask as an `Action`,
    /// and the turn waits until the host gives its result (`feed` one recorded before, or
    /// `perform()` to have the engine do it now), then `Action.Done` with what `run` returns.
    /// `options`: the turn's id and clock; give a recorded stepper's `options()` to replay it
    /// (`null`: a new id, now). `allow`, `settings_json`, `output_schema_json` as for `run`.
    /// A stepped turn runs its calls one at a time, its compaction's summary request is an
    /// action too (`Action.SummaryRequest`), and its asks cannot suspend (the host holds its
    /// state). Throws as `stream` does.
    #[uniffi::method(default(
        options = None,
        allow = None,
        settings_json = None,
        output_schema_json = None
    ))]
    pub async fn step(
        &self,
        prompt: String,
        options: Option<StepOptions>,
        allow: Option<Vec<String>>,
        settings_json: Option<String>,
        output_schema_json: Option<String>,
    ) -> Result<Arc<Stepper>, ContenoxError> {
        let run_options = self.turn_options(allow, settings_json, output_schema_json)?;
        let stepper = self
            .inner
            .step_with(prompt, run_options, options.unwrap_or_default())?;
        Ok(Arc::new(Stepper::new(stepper)))
    }

    /// [`Client::run`] with a prompt of parts: text and images in order
    /// (`listOf(PromptPart.Text("What is this?"), PromptPart.Image(pngBytes, null))`). A bad
    /// part throws `ContenoxError.Config` naming it (`prompt[1].data`) before anything is sent.
    #[uniffi::method(default(allow = None, settings_json = None, output_schema_json = None))]
    pub async fn run_parts(
        &self,
        parts: Vec<PromptPart>,
        allow: Option<Vec<String>>,
        settings_json: Option<String>,
        output_schema_json: Option<String>,
    ) -> Result<TurnResult, ContenoxError> {
        let prompt = to_prompt(parts)?;
        let options = self.turn_options(allow, settings_json, output_schema_json)?;
        let run = self.inner.stream_with(prompt, options)?;
        Ok(run.result().await?.into())
    }

    /// [`Client::stream`] with a prompt of parts (as [`Client::run_parts`]).
    #[uniffi::method(default(allow = None, settings_json = None, output_schema_json = None))]
    pub async fn stream_parts(
        &self,
        parts: Vec<PromptPart>,
        allow: Option<Vec<String>>,
        settings_json: Option<String>,
        output_schema_json: Option<String>,
    ) -> Result<Arc<Run>, ContenoxError> {
        let prompt = to_prompt(parts)?;
        let options = self.turn_options(allow, settings_json, output_schema_json)?;
        let run = self.inner.stream_with(prompt, options)?;
        Ok(Arc::new(Run::new(run)))
    }

    /// Run a task chain (the chain JSON text) on `input` to its end, as one turn of this
    /// client (its gate, allowlists and events, plus `ChainTaskStart` / `ChainTaskEnd`). A
    /// chain that does not read throws `ContenoxError.Config` naming the field, before anything
    /// runs. `finalText` is the output of the last task that ran.
    #[uniffi::method(default(allow = None, settings_json = None))]
    pub async fn run_chain(
        &self,
        chain_json: String,
        input: String,
        allow: Option<Vec<String>>,
        settings_json: Option<String>,
    ) -> Result<TurnResult, ContenoxError> {
        let chain = contenox::Chain::from_json(&chain_json)?;
        let options = self.turn_options(allow, settings_json, None)?;
        let run = self.inner.stream_chain_with(&chain, input, options)?;
        Ok(run.result().await?.into())
    }

    /// Start a task chain on `input` and return its `Run` (as `stream`).
    #[uniffi::method(default(allow = None, settings_json = None))]
    pub async fn stream_chain(
        &self,
        chain_json: String,
        input: String,
        allow: Option<Vec<String>>,
        settings_json: Option<String>,
    ) -> Result<Arc<Run>, ContenoxError> {
        let chain = contenox::Chain::from_json(&chain_json)?;
        let options = self.turn_options(allow, settings_json, None)?;
        let run = self.inner.stream_chain_with(&chain, input, options)?;
        Ok(Arc::new(Run::new(run)))
    }

    /// Cancel every turn of this client started before this call (running or queued). The
    /// client stays usable.
    pub fn cancel(&self) {
        let mut turns = self.turns.lock();
        turns.cancel();
        *turns = CancellationToken::new();
    }

    /// Add a tool (or replace the one of the same name). A tool registered while a turn runs is
    /// offered from that turn's next model request.
    pub fn register(&self, tool: Arc<dyn HostTool>) -> Result<(), ContenoxError> {
        Ok(self.inner.register(ToolAdapter::wrap(tool)?)?)
    }

    /// Add a tool of another source (an MCP server's tool, a resource tool: see `McpSource`) as
    /// it is, or replace the one of the same name. Kotlin: also `client.register(tool)`.
    pub fn register_source_tool(&self, tool: Arc<SourceTool>) -> Result<(), ContenoxError> {
        Ok(self.inner.register(tool.tool.clone())?)
    }

    /// This client as a tool of another (a subagent): register the result there
    /// (`registerSourceTool`). `options_json`: the engine's `SubagentOptions` (`conversation`
    /// `fresh`/`kept`, `max_turns`, `allow`, `input_schema`, `hints`, `max_depth`); `null` for
    /// the defaults. Each call runs one turn of this client; its calls pass its own gate and
    /// then the parent's; its events reach the parent's stream with `agent` set.
    #[uniffi::method(default(options_json = None))]
    pub fn as_tool_with(
        &self,
        name: String,
        description: String,
        options_json: Option<String>,
    ) -> Result<Arc<SourceTool>, ContenoxError> {
        let value = match options_json {
            Some(text) => serde_json::from_str(&text).map_err(|e| ContenoxError::Json {
                detail: format!("subagent options: {e}"),
            })?,
            None => serde_json::Value::Null,
        };
        let options = SubagentOptions::from_json_value(value)?;
        let tool = self.inner.as_tool_with(name, description, options)?;
        Ok(Arc::new(SourceTool { tool }))
    }

    /// Compact the conversation now (waits for a running turn): the notice, or `null` when
    /// there is nothing older to summarise. Throws `Compaction` when the summary request
    /// failed (the conversation is then unchanged). `on_compact` is told too.
    pub async fn compact(&self) -> Result<Option<CompactNotice>, ContenoxError> {
        Ok(self.inner.compact().await?)
    }

    /// Remove a tool; true when it was there.
    pub fn unregister(&self, name: String) -> bool {
        self.inner.unregister(&name)
    }

    /// The specs of every registered tool (before allowlists).
    pub fn tools(&self) -> Vec<ToolSpec> {
        // The mirror reads every spec the engine writes.
        self.inner
            .tools()
            .iter()
            .filter_map(|s| via_json(s).ok())
            .collect()
    }

    /// The conversation so far (during a turn: as of its last complete step).
    pub fn transcript(&self) -> Arc<Transcript> {
        Arc::new(Transcript {
            inner: self.inner.transcript(),
        })
    }

    /// Replace the conversation, for example with one saved earlier (`Transcript.fromJson`).
    /// Throws while a turn runs.
    pub fn set_transcript(&self, transcript: Arc<Transcript>) -> Result<(), ContenoxError> {
        Ok(self.inner.set_transcript(transcript.inner.clone())?)
    }

    /// The models the configured server offers.
    pub async fn list_models(&self) -> Result<Vec<ModelInfo>, ContenoxError> {
        Ok(self.inner.list_models().await?)
    }

    /// The client's background shells (the ones given, or its own), or `null` when background
    /// shells are off.
    pub fn background_shells(&self) -> Option<Arc<BackgroundShells>> {
        self.inner
            .background_shells()
            .map(|shells| Arc::new(BackgroundShells::of(shells.clone())))
    }

    /// Replace the approval policy: `policy` is what config `policy` takes as a string, the
    /// document's JSON text or a file path (`null` removes it; `Policies.default()` gives a
    /// preset). It applies from the next tool call, also within a running turn. A policy that
    /// does not validate throws `Config` (option `policy`) and the old one stays.
    #[uniffi::method(default(policy = None))]
    pub fn set_policy(&self, policy: Option<String>) -> Result<(), ContenoxError> {
        let source = policy.map_or(serde_json::Value::Null, serde_json::Value::String);
        Ok(self.inner.set_policy_source(&source)?)
    }

    /// The approval policy in force (given at creation or by the last `setPolicy`), as its
    /// document's JSON text; `null` without one.
    pub fn policy_json(&self) -> Option<String> {
        self.inner.policy().map(|p| p.document().to_string())
    }

    /// The config the client was built with, as JSON.
    pub fn config_json(&self) -> String {
        // Cannot fail: a config holds strings, numbers and `Value`s, whose map keys are strings.
        serde_json::to_string(self.inner.config()).expect("a config always serializes")
    }

    /// Cancel every running turn and refuse new ones (the engine's `close`; named so because
    /// Kotlin's `close()` frees the object). Idempotent.
    pub fn shutdown(&self) {
        self.inner.close();
    }

    /// Whether `shutdown()` was called (or the client was freed).
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}

impl Drop for Client {
    /// Turns still running hold the engine's client; freeing the binding's object ends them.
    fn drop(&mut self) {
        self.inner.close();
    }
}

/// A preset approval policy's document as JSON text: `default`, `strict` or `dev` (the engine's
/// own; Kotlin and Swift: `Policies.default()` ...). For config `policy` or `setPolicy`.
#[uniffi::export]
pub fn policy_preset(name: String) -> Result<String, ContenoxError> {
    use contenox::policy::presets;
    presets::json_by_name(&name)
        .map(str::to_string)
        .ok_or_else(|| {
            contenox::Error::config(format!(
                "no preset policy {name:?}; the presets are {}",
                presets::NAMES.join(", ")
            ))
            .into()
        })
}

/// The models the server `config_json` points at, without building a client.
#[uniffi::export(async_runtime = "tokio")]
pub async fn list_models(config_json: String) -> Result<Vec<ModelInfo>, ContenoxError> {
    let config = contenox::Config::from_json(&config_json)?;
    Ok(contenox::list_models(&config).await?)
}
