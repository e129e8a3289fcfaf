//! The client and its cancel tokens, as napi classes.

use std::sync::Arc;

use contenox::CancellationToken;
use contenox::{Client, ClientBuilder, Config, RunOptions, Spelling, SubagentOptions, ToolSpec};
use napi::bindgen_prelude::{Function, FunctionRef, Promise, PromiseRaw};
use napi::threadsafe_function::UnknownReturnValue;
use napi::{Env, Result};
use napi_derive::napi;
use serde_json::Value;

use crate::hooks::{JsHooks, JsLifecycle, LifecycleArgs};
use crate::host::{
    self, AfterArgs, BeforeArgs, CompactArgs, JsCompactor, JsTool, JsWaitFor, JsWebSearch,
    NoticeArgs, SearchArgs, Shared, ToolArgs, WaitArgs,
};
use crate::run::{NativeRun, NativeTurnResult};
use crate::shells::NativeBackgroundShells;
use crate::step::NativeStepper;
use crate::telemetry::JsHostTracer;
use crate::transcript::{NativeTranscript, Snapshots};
use crate::{convert, error};

/// The options of `createClient` / `listModels` (JSON text, as the host wrote them) as core's
/// config; mistakes are named in JavaScript's spelling.
fn config(env: &Env, options_json: &str) -> Result<Config> {
    let options: Value = serde_json::from_str(options_json).map_err(error::reason)?;
    Config::from_value(&convert::config_from_js(options), Spelling::Camel)
        .map_err(|e| error::to_js(env, e))
}

/// A cancel token an AbortSignal drives.
#[napi]
pub struct NativeCancel {
    token: CancellationToken,
}

#[napi]
impl NativeCancel {
    /// A fresh, uncancelled token.
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        NativeCancel {
            token: CancellationToken::new(),
        }
    }

    /// Cancel every run given this token.
    #[napi]
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// Whether it was cancelled.
    #[napi(getter)]
    pub fn cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}

/// A client: one conversation, its tools, its gate and its model.
#[napi]
pub struct NativeClient {
    client: Client,
    shared: Arc<Shared>,
    /// The transcripts this client handed out share their messages through it.
    snapshots: Arc<Snapshots>,
    /// `() => traceparent | null`: the host's active span, when the host has its own tracer
    /// provider (`lib/telemetry.ts`).
    trace_current: Option<FunctionRef<(), Option<String>>>,
}

fn run_options(
    env: &Env,
    allow: Option<Vec<String>>,
    cancel: Option<&NativeCancel>,
    settings_json: Option<String>,
    output_json: Option<String>,
) -> Result<RunOptions> {
    let mut options = RunOptions::default();
    if let Some(patterns) = allow {
        options = options.allow(&patterns).map_err(|e| error::to_js(env, e))?;
    }
    if let Some(c) = cancel {
        options = options.cancel(c.token.clone());
    }
    if let Some(json) = settings_json {
        let value: Value = serde_json::from_str(&json).map_err(error::reason)?;
        let settings =
            contenox::ModelSettings::from_value(&convert::settings_from_js(value), Spelling::Camel)
                .map_err(|e| error::to_js(env, e))?;
        options = options.settings(settings);
    }
    if let Some(json) = output_json {
        let output: RunOutput = serde_json::from_str(&json).map_err(error::reason)?;
        if let Some(schema) = output.schema {
            // The host's JSON Schema, keys as written (never renamed); the engine checks it.
            options = options.output_schema(schema);
        }
        if let Some(n) = output.retries {
            options = options.output_retries(n);
        }
    }
    Ok(options)
}

/// A run's `outputSchema` and `outputRetries`, as the TypeScript layer sends them (one JSON
/// text: `{schema?, retries?}`).
#[derive(serde::Deserialize)]
struct RunOutput {
    schema: Option<Value>,
    retries: Option<u32>,
}

#[napi]
impl NativeClient {
    /// Build a client from its options (JSON text, JavaScript's spelling) and the wrapped host
    /// callbacks. Each callback resolves to JSON text: `{"value": ...}`, or `{"error": message}`
    /// when the host's function threw or rejected. `abort(key)` aborts the AbortSignal of the
    /// call that was given `key`.
    /// `websearch` (a search provider) turns on the `websearch` builtin. `onCompact` and
    /// `compact` are the host's compactor.
    #[napi(
        constructor,
        ts_args_type = "optionsJson: string, abort: (key: number) => void, beforeTool?: (callJson: string) => Promise<string>, afterTool?: (callJson: string, resultJson: string) => Promise<string>, waitFor?: (requestJson: string, key: number) => Promise<string>, websearch?: (requestJson: string, key: number) => Promise<string>, onCompact?: (noticeJson: string) => Promise<string>, compact?: (transcriptJson: string, key: number) => Promise<string>, shells?: NativeBackgroundShells, lifecycle?: (point: string, argsJson: string) => Promise<string>, lifecyclePoints?: Array<string>, hostCurrent?: () => string | null, hostReplay?: (spansJson: string) => void"
    )]
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        env: &Env,
        options_json: String,
        abort: Function<'_, u32, UnknownReturnValue>,
        before_tool: Option<Function<'_, BeforeArgs, Promise<String>>>,
        after_tool: Option<Function<'_, AfterArgs, Promise<String>>>,
        wait_for: Option<Function<'_, WaitArgs, Promise<String>>>,
        websearch: Option<Function<'_, SearchArgs, Promise<String>>>,
        on_compact: Option<Function<'_, NoticeArgs, Promise<String>>>,
        compact: Option<Function<'_, CompactArgs, Promise<String>>>,
        shells: Option<&NativeBackgroundShells>,
        lifecycle: Option<Function<'_, LifecycleArgs, Promise<String>>>,
        lifecycle_points: Option<Vec<String>>,
        host_current: Option<Function<'_, (), Option<String>>>,
        host_replay: Option<Function<'_, String, UnknownReturnValue>>,
    ) -> Result<Self> {
        let config = config(env, &options_json)?;
        let shared = Shared::new(&abort)?;
        let mut builder = ClientBuilder::from_config(config).spelling(Spelling::Camel);
        let lifecycle = match (&lifecycle, lifecycle_points) {
            (Some(f), Some(points)) if !points.is_empty() => {
                Some(JsLifecycle::new(host::weak(f)?, points))
            }
            _ => None,
        };
        if before_tool.is_some() || after_tool.is_some() || lifecycle.is_some() {
            let before = before_tool.as_ref().map(host::weak).transpose()?;
            let after = after_tool.as_ref().map(host::weak).transpose()?;
            builder = builder.hooks(Arc::new(JsHooks::new(before, after, lifecycle)));
        }
        if let Some(f) = &wait_for {
            builder = builder.wait_for(Arc::new(JsWaitFor::new(host::weak(f)?, shared.clone())));
        }
        if let Some(f) = &websearch {
            builder = builder.websearch(Arc::new(JsWebSearch::new(host::weak(f)?, shared.clone())));
        }
        if on_compact.is_some() || compact.is_some() {
            let on_compact = on_compact.as_ref().map(host::weak).transpose()?;
            let compact = compact.as_ref().map(host::weak).transpose()?;
            builder = builder.compactor(Arc::new(JsCompactor::new(
                on_compact,
                compact,
                shared.clone(),
            )));
        }
        if let Some(shells) = shells {
            builder = builder.background_shells(shells.0.clone());
        }
        if let Some(replay) = &host_replay {
            builder = builder.host_tracer(Arc::new(JsHostTracer::new(replay)?));
        }
        let client = builder.build().map_err(|e| error::to_js(env, e))?;
        Ok(NativeClient {
            client,
            shared,
            snapshots: Arc::default(),
            trace_current: host_current.map(|f| f.create_ref()).transpose()?,
        })
    }

    /// Add a host tool (or replace the one of the same name); `spec_json` is its declaration
    /// (`{name, description, inputSchema, hints, tier}`). `execute` resolves to
    /// `{"value": content}` or `{"error": message}`.
    #[napi(
        ts_args_type = "specJson: string, execute: (argsJson: string, callId: string, key: number, idempotencyKey: string) => Promise<string>"
    )]
    pub fn register(
        &self,
        env: &Env,
        spec_json: String,
        execute: Function<'_, ToolArgs, Promise<String>>,
    ) -> Result<()> {
        let spec: Value = serde_json::from_str(&spec_json).map_err(error::reason)?;
        let spec: ToolSpec = serde_json::from_value(convert::tool_spec_from_js(spec))
            .map_err(|e| error::to_js(env, contenox::Error::Tool(e.to_string())))?;
        let tool = JsTool::new(spec, host::weak(&execute)?, self.shared.clone());
        self.client
            .register(Arc::new(tool))
            .map_err(|e| error::to_js(env, e))
    }

    /// Add a tool of another source (an MCP server's, a resource tool) as it is.
    #[napi]
    pub fn register_native(&self, env: &Env, tool: &crate::source::NativeTool) -> Result<()> {
        self.client
            .register(tool.0.clone())
            .map_err(|e| error::to_js(env, e))
    }

    /// Add a tool source (an MCP config's servers, remote hooks): its tools are registered and
    /// kept in step with it, its before-turn work runs before each turn, MCP servers stop with
    /// the client (the engine's `Client::add_source`). Throws, registering nothing, when a name
    /// is taken by a tool of another source.
    #[napi]
    pub fn add_source(&self, env: &Env, source: &crate::source::NativeSource) -> Result<()> {
        // A source may watch the client from a task in the engine's runtime.
        napi::bindgen_prelude::within_runtime_if_available(|| {
            self.client
                .add_source(source.core())
                .map_err(|e| error::to_js(env, e))
        })
    }

    /// This client as a tool of another (`registerNative` it there). `options_json`:
    /// `{conversation, maxTurns, allow, inputSchema, hints, maxDepth}`.
    #[napi]
    pub fn as_tool_with(
        &self,
        env: &Env,
        name: String,
        description: String,
        options_json: String,
    ) -> Result<crate::source::NativeTool> {
        let options: Value = serde_json::from_str(&options_json).map_err(error::reason)?;
        let options = SubagentOptions::from_json_value(convert::subagent_options_from_js(options))
            .map_err(|e| error::to_js(env, e))?;
        let tool = self
            .client
            .as_tool_with(name, description, options)
            .map_err(|e| error::to_js(env, e))?;
        Ok(crate::source::NativeTool(tool))
    }

    /// Compact the conversation now: the notice as JSON text, or `null` when there was nothing
    /// older to summarise.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn compact<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Option<String>>> {
        let client = self.client.clone();
        env.spawn_future_with_callback(async move { Ok(client.compact().await) }, |env, r| {
            r.map(|n| n.as_ref().map(convert::compact_notice))
                .map_err(|e| error::to_js(env, e))
        })
    }

    /// Remove a tool; true when it was there.
    #[napi]
    pub fn unregister(&self, name: String) -> bool {
        self.client.unregister(&name)
    }

    /// The names of the registered tools (before allowlists).
    #[napi]
    pub fn tool_names(&self) -> Vec<String> {
        self.client.tools().into_iter().map(|s| s.name).collect()
    }

    /// `options` with the host's active span as the turn's parent, when the host has its own
    /// tracer provider (called where the host called `run` / `stream` / `resume`).
    fn traced(&self, env: &Env, options: RunOptions) -> RunOptions {
        let Some(current) = &self.trace_current else {
            return options;
        };
        // The TypeScript function never throws (it answers null instead).
        let traceparent = current
            .borrow_back(env)
            .and_then(|f| f.call(()))
            .ok()
            .flatten();
        RunOptions {
            traceparent,
            ..options
        }
    }

    /// Run one turn to its end.
    #[napi(ts_return_type = "Promise<NativeTurnResult>")]
    pub fn run<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Array<Record<string, unknown>>")] prompt: Value,
        allow: Option<Vec<String>>,
        cancel: Option<&NativeCancel>,
        settings_json: Option<String>,
        output_json: Option<String>,
    ) -> Result<PromiseRaw<'env, NativeTurnResult>> {
        let prompt = contenox::Prompt::from_json(&prompt).map_err(|e| error::to_js(env, e))?;
        let options = self.traced(
            env,
            run_options(env, allow, cancel, settings_json, output_json)?,
        );
        let client = self.client.clone();
        let snapshots = self.snapshots.clone();
        env.spawn_future_with_callback(
            async move { Ok(client.run_with(prompt, options).await) },
            move |env, r| {
                r.map(|r| NativeTurnResult::new(r, &snapshots))
                    .map_err(|e| error::to_js(env, e))
            },
        )
    }

    /// Start a turn and return its handle (events, cancel, result).
    #[napi]
    pub fn stream(
        &self,
        env: &Env,
        #[napi(ts_arg_type = "string | Array<Record<string, unknown>>")] prompt: Value,
        allow: Option<Vec<String>>,
        cancel: Option<&NativeCancel>,
        settings_json: Option<String>,
        output_json: Option<String>,
    ) -> Result<NativeRun> {
        let prompt = contenox::Prompt::from_json(&prompt).map_err(|e| error::to_js(env, e))?;
        let options = self.traced(
            env,
            run_options(env, allow, cancel, settings_json, output_json)?,
        );
        // Core spawns the turn on the current tokio runtime: napi's.
        napi::bindgen_prelude::within_runtime_if_available(|| {
            let run = self
                .client
                .stream_with(prompt, options)
                .map_err(|e| error::to_js(env, e))?;
            Ok(NativeRun::new(run, self.snapshots.clone()))
        })
    }

    /// Start a turn stepped by the host (the engine's `Client::step_with`): `turn_id` and
    /// `clock_ms` are its start state (a recorded stepper's `options()`, to replay it; absent:
    /// drawn now).
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &self,
        env: &Env,
        #[napi(ts_arg_type = "string | Array<Record<string, unknown>>")] prompt: Value,
        allow: Option<Vec<String>>,
        cancel: Option<&NativeCancel>,
        settings_json: Option<String>,
        output_json: Option<String>,
        turn_id: Option<String>,
        clock_ms: Option<f64>,
    ) -> Result<NativeStepper> {
        let prompt = contenox::Prompt::from_json(&prompt).map_err(|e| error::to_js(env, e))?;
        let options = self.traced(
            env,
            run_options(env, allow, cancel, settings_json, output_json)?,
        );
        let clock_ms = clock_ms
            .map(|ms| {
                // A whole, non-negative number of milliseconds that u64 holds exactly.
                if ms.fract() == 0.0 && (0.0..=9_007_199_254_740_991.0).contains(&ms) {
                    Ok(ms as u64)
                } else {
                    Err(error::to_js(
                        env,
                        contenox::Error::Config(
                            contenox::ConfigError::new(
                                "clockMs",
                                "the turn's clock is whole milliseconds since 1970, 0 or more \
                                 (a stepper's options().clockMs)",
                            )
                            .with_value(ms.to_string()),
                        ),
                    ))
                }
            })
            .transpose()?;
        let start = contenox::step::StepOptions { turn_id, clock_ms };
        // Core spawns the turn on the current tokio runtime: napi's.
        napi::bindgen_prelude::within_runtime_if_available(|| {
            let stepper = self
                .client
                .step_with(prompt, options, start)
                .map_err(|e| error::to_js(env, e))?;
            Ok(NativeStepper::new(stepper, self.snapshots.clone()))
        })
    }

    /// Resume a suspended turn from its checkpoint with the answers (JSON text of call id to
    /// answer); the engine checks both before anything runs.
    #[napi(ts_return_type = "Promise<NativeTurnResult>")]
    pub fn resume<'env>(
        &self,
        env: &'env Env,
        checkpoint: String,
        answers_json: String,
        cancel: Option<&NativeCancel>,
    ) -> Result<PromiseRaw<'env, NativeTurnResult>> {
        let answers = contenox::durable::answers_from_json(&answers_json)
            .map_err(|e| error::to_js(env, e))?;
        let options = self.traced(env, run_options(env, None, cancel, None, None)?);
        let client = self.client.clone();
        let snapshots = self.snapshots.clone();
        env.spawn_future_with_callback(
            async move { Ok(client.resume_with(&checkpoint, answers, options).await) },
            move |env, r| {
                r.map(|r| NativeTurnResult::new(r, &snapshots))
                    .map_err(|e| error::to_js(env, e))
            },
        )
    }

    /// Resume a suspended turn and return its handle (events, cancel, result).
    #[napi]
    pub fn resume_stream(
        &self,
        env: &Env,
        checkpoint: String,
        answers_json: String,
        cancel: Option<&NativeCancel>,
    ) -> Result<NativeRun> {
        let answers = contenox::durable::answers_from_json(&answers_json)
            .map_err(|e| error::to_js(env, e))?;
        let options = self.traced(env, run_options(env, None, cancel, None, None)?);
        napi::bindgen_prelude::within_runtime_if_available(|| {
            let run = self
                .client
                .resume_stream_with(&checkpoint, answers, options)
                .map_err(|e| error::to_js(env, e))?;
            Ok(NativeRun::new(run, self.snapshots.clone()))
        })
    }

    /// Run a task chain (its JSON text) on `input` to its end; the engine reads and runs it.
    #[napi(ts_return_type = "Promise<NativeTurnResult>")]
    pub fn run_chain<'env>(
        &self,
        env: &'env Env,
        chain_json: String,
        input: String,
        allow: Option<Vec<String>>,
        cancel: Option<&NativeCancel>,
        settings_json: Option<String>,
    ) -> Result<PromiseRaw<'env, NativeTurnResult>> {
        let chain = contenox::Chain::from_json(&chain_json).map_err(|e| error::to_js(env, e))?;
        let options = self.traced(env, run_options(env, allow, cancel, settings_json, None)?);
        let client = self.client.clone();
        let snapshots = self.snapshots.clone();
        env.spawn_future_with_callback(
            async move { Ok(client.run_chain_with(&chain, input, options).await) },
            move |env, r| {
                r.map(|r| NativeTurnResult::new(r, &snapshots))
                    .map_err(|e| error::to_js(env, e))
            },
        )
    }

    /// Start a task chain on `input` and return its handle (events, cancel, result).
    #[napi]
    pub fn stream_chain(
        &self,
        env: &Env,
        chain_json: String,
        input: String,
        allow: Option<Vec<String>>,
        cancel: Option<&NativeCancel>,
        settings_json: Option<String>,
    ) -> Result<NativeRun> {
        let chain = contenox::Chain::from_json(&chain_json).map_err(|e| error::to_js(env, e))?;
        let options = self.traced(env, run_options(env, allow, cancel, settings_json, None)?);
        napi::bindgen_prelude::within_runtime_if_available(|| {
            let run = self
                .client
                .stream_chain_with(&chain, input, options)
                .map_err(|e| error::to_js(env, e))?;
            Ok(NativeRun::new(run, self.snapshots.clone()))
        })
    }

    /// The conversation so far.
    #[napi]
    pub fn transcript(&self) -> NativeTranscript {
        NativeTranscript(self.snapshots.share(self.client.transcript()))
    }

    /// Replace the conversation (fails while a turn runs).
    #[napi]
    pub fn set_transcript(&self, env: &Env, transcript: &NativeTranscript) -> Result<()> {
        self.client
            .set_transcript(transcript.0.to_transcript())
            .map_err(|e| error::to_js(env, e))
    }

    /// Replace the approval policy from the JSON text of the `policy` option's value (a
    /// document, a string of its JSON text or a file path; `null` removes it). A bad one throws
    /// a `ConfigurationError` and the old one stays.
    #[napi]
    pub fn set_policy(&self, env: &Env, source_json: String) -> Result<()> {
        let source: Value = serde_json::from_str(&source_json).map_err(error::reason)?;
        self.client
            .set_policy_source(&source)
            .map_err(|e| error::to_js(env, e))
    }

    /// The approval policy in force, as its document's JSON text (`null` without one).
    #[napi]
    pub fn policy_json(&self) -> Option<String> {
        self.client.policy().map(|p| p.document().to_string())
    }

    /// The models the configured server offers, as JSON `[{id, displayName?}]`.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn list_models<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, String>> {
        let client = self.client.clone();
        env.spawn_future_with_callback(async move { Ok(client.list_models().await) }, |env, r| {
            r.map(|m| convert::models(&m))
                .map_err(|e| error::to_js(env, e))
        })
    }

    /// The client's background shells (shared with the host that gave them); `null` when
    /// option `background` is off.
    #[napi]
    pub fn background_shells(&self) -> Option<NativeBackgroundShells> {
        self.client
            .background_shells()
            .map(|s| NativeBackgroundShells(s.clone()))
    }

    /// Cancel every running turn, kill the background shells, and refuse new turns. Idempotent.
    #[napi]
    pub fn close(&self) {
        self.client.close();
    }

    /// Whether `close()` was called.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.client.is_closed()
    }
}

/// The models of the server the options (JSON text, JavaScript's spelling) point at, as JSON
/// `[{id, displayName?}]`.
#[napi(ts_return_type = "Promise<string>")]
pub fn list_models(env: &Env, options_json: String) -> Result<PromiseRaw<'_, String>> {
    let config = config(env, &options_json)?;
    env.spawn_future_with_callback(
        async move { Ok(contenox::list_models(&config).await) },
        |env, r| {
            r.map(|m| convert::models(&m))
                .map_err(|e| error::to_js(env, e))
        },
    )
}

/// A preset policy's document as JSON text (`default`, `strict`, `dev`): the engine's own.
#[napi]
pub fn policy_preset(name: String) -> Result<String> {
    contenox::policy::presets::json_by_name(&name)
        .map(str::to_string)
        .ok_or_else(|| {
            error::reason(format!(
                "no preset policy {name:?}; the presets are {}",
                contenox::policy::presets::NAMES.join(", ")
            ))
        })
}

/// The JavaScript spelling of one of the engine's names (`call_id` -> `callId`, `arguments` ->
/// `args`): the rule `convert` applies, for the TypeScript layer's tests.
#[napi]
pub fn js_name(name: String) -> String {
    convert::camel(&name)
}
