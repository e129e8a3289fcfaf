//! The `Client` class of `contenox._native` (wrapped by `contenox._client.Client`).

use std::future::Future;
use std::sync::{Arc, Mutex};

use contenox::{
    CancellationToken, ClientBuilder, Compactor, Config, Hooks, RunOptions, Style, SubagentOptions,
    Tool, ToolSource, ToolSpec, Transcript, TurnResult, WaitFor, WebSearchProvider,
};
use pyo3::prelude::*;

use crate::blocking;
use crate::convert::{from_py, ser_to_py, to_value};
use crate::error::to_py_err;
use crate::hooks::{PyHooks, PyLifecycle};
use crate::host::{Callback, Host, Parts, PyCompactor, PyTool, PyWaitFor, PyWebSearch, SharedHost};
use crate::prompt::to_prompt;
use crate::quiet;
use crate::run::{result_dict, PyRun};
use crate::runtime::{produce, py_future, running_loop, runtime};
use crate::shells::PyBackgroundShells;
use crate::source::{PyNativeTool, PySource};
use crate::step::PyStepper;
use crate::transcript::PyTranscript;

/// A host callable handed over by the Python layer: `(callable, is_async)`.
type PyCallable<'py> = (Bound<'py, PyAny>, bool);
/// The web search provider's `search`: `(callable, is_async, takes_cancel)`.
type PySearch<'py> = (Bound<'py, PyAny>, bool, bool);

fn tool_from_py(host: &SharedHost, tool: &Bound<'_, PyAny>) -> PyResult<Arc<dyn Tool>> {
    if let Ok(native) = tool.cast::<crate::source::PyNativeTool>() {
        if let Some(child) = &native.get().host {
            host.link(child);
        }
        return Ok(native.get().tool.clone());
    }
    let (spec, invoke, is_async): (Bound<'_, PyAny>, Bound<'_, PyAny>, bool) = tool.extract()?;
    host.note(is_async);
    let spec: ToolSpec = from_py(&spec).map_err(|e| {
        to_py_err(contenox::Error::Tool(format!(
            "{} (a spec has name, description, input_schema, hints, tier)",
            Python::attach(|py| e.value(py).to_string())
        )))
    })?;
    Ok(Arc::new(PyTool {
        spec,
        cb: Callback::from_py(&invoke, is_async),
        host: host.clone(),
    }))
}

struct State {
    pid: u32,
    client: contenox::Client,
}

/// The native client: a `contenox::Client` plus what async callbacks need.
#[pyclass(frozen, module = "contenox._native", name = "Client")]
pub struct PyClient {
    state: Mutex<State>,
    host: SharedHost,
    parts: Parts,
    /// The host tools registered so far, in order (to rebuild the engine client after a fork).
    host_tools: Mutex<Vec<Arc<dyn Tool>>>,
    /// The tool sources added to it (added again to a client rebuilt after a
    /// fork).
    sources: Mutex<Vec<Arc<dyn ToolSource>>>,
    /// Its `run` / `run_chain` turns still running (see [`quiet::Running`]).
    quiet_running: quiet::Running,
}

fn build(
    config: Config,
    tools: &[Arc<dyn Tool>],
    parts: &Parts,
) -> contenox::Result<contenox::Client> {
    let mut b = ClientBuilder::from_config(config);
    for t in tools {
        b = b.tool(t.clone());
    }
    if let Some(h) = &parts.hooks {
        b = b.hooks(h.clone());
    }
    if let Some(w) = &parts.wait_for {
        b = b.wait_for(w.clone());
    }
    if let Some(p) = &parts.websearch {
        b = b.websearch(p.clone());
    }
    if let Some(c) = &parts.compactor {
        b = b.compactor(c.clone());
    }
    if let Some(s) = &parts.shells {
        b = b.background_shells(s.clone());
    }
    if let Some(t) = &parts.host_tracer {
        b = b.host_tracer(t.clone());
    }
    b.build()
}

impl PyClient {
    /// The engine client of this process. In a forked child the parent's client (its HTTP
    /// connections belong to the parent's runtime, and their sockets to both processes) is
    /// rebuilt once from the same config, tools, gate and conversation; a scripted client has
    /// no connections and is kept as it is.
    fn core(&self) -> PyResult<contenox::Client> {
        let pid = std::process::id();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.pid != pid && st.client.config().style == Style::Scripted {
            // No connections to lose: the scripted model keeps its client (and its place).
            st.pid = pid;
        } else if st.pid != pid {
            let tools = self
                .host_tools
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let fresh =
                build(st.client.config().clone(), &tools, &self.parts).map_err(to_py_err)?;
            fresh
                .set_transcript(st.client.transcript())
                .map_err(to_py_err)?;
            // The policy in force, which `set_policy` may have replaced since creation.
            fresh
                .set_policy(st.client.policy().map(|p| (*p).clone()))
                .map_err(to_py_err)?;
            for src in self
                .sources
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
            {
                if !src.is_closed() {
                    fresh.add_source(src.clone()).map_err(to_py_err)?;
                }
            }
            if st.client.is_closed() {
                fresh.close();
            }
            *st = State { pid, client: fresh };
        }
        Ok(st.client.clone())
    }

    /// Add a tool source; kept, to be added again to a client rebuilt after a fork.
    fn add_core_source(&self, src: Arc<dyn ToolSource>) -> PyResult<()> {
        let core = self.core()?;
        let _rt = runtime().enter();
        core.add_source(src.clone()).map_err(to_py_err)?;
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(src);
        Ok(())
    }

    /// `options` with the host's current span as the turn's parent, when the host has its own
    /// tracer provider (called where the host called `run` / `stream` / `resume`).
    fn traced(&self, options: RunOptions) -> RunOptions {
        match &self.parts.host_tracer {
            Some(tracer) => RunOptions {
                traceparent: Python::attach(|py| tracer.current(py)),
                ..options
            },
            None => options,
        }
    }

    fn start(
        &self,
        prompt: contenox::Prompt,
        allow: Option<Vec<String>>,
        settings: Option<&str>,
        output: OutputOptions<'_>,
    ) -> PyResult<contenox::Run> {
        let options = self.traced(output.apply(run_options(allow, settings)?)?);
        let core = self.core()?;
        let _rt = runtime().enter();
        core.stream_with(prompt, options).map_err(to_py_err)
    }

    /// Start a turn nobody streams (`client.run`, `client.run_sync`): see [`crate::quiet`].
    /// Returns its result's future and its outside cancel token.
    fn start_quiet(
        &self,
        prompt: contenox::Prompt,
        allow: Option<Vec<String>>,
        settings: Option<&str>,
        output: OutputOptions<'_>,
    ) -> PyResult<(
        impl Future<Output = contenox::Result<TurnResult>> + Send + 'static,
        CancellationToken,
    )> {
        let cancel = CancellationToken::new();
        let options = self.traced(
            output
                .apply(run_options(allow, settings)?)?
                .cancel(cancel.clone()),
        );
        let core = self.open_core()?;
        let turn = quiet::spawn(
            async move { core.run_with(prompt, options).await },
            cancel.clone(),
            &self.quiet_running,
        );
        Ok((turn, cancel))
    }

    /// Start a task chain (its JSON text) on `input`; the engine reads and runs it.
    fn start_chain(
        &self,
        chain_json: &str,
        input: String,
        allow: Option<Vec<String>>,
        settings: Option<&str>,
    ) -> PyResult<contenox::Run> {
        let chain = contenox::Chain::from_json(chain_json).map_err(to_py_err)?;
        let options = self.traced(run_options(allow, settings)?);
        let core = self.core()?;
        let _rt = runtime().enter();
        core.stream_chain_with(&chain, input, options)
            .map_err(to_py_err)
    }

    /// Start a task chain nobody streams (`client.run_chain`), as [`PyClient::start_quiet`].
    fn start_chain_quiet(
        &self,
        chain_json: &str,
        input: String,
        allow: Option<Vec<String>>,
        settings: Option<&str>,
    ) -> PyResult<(
        impl Future<Output = contenox::Result<TurnResult>> + Send + 'static,
        CancellationToken,
    )> {
        let chain = contenox::Chain::from_json(chain_json).map_err(to_py_err)?;
        let cancel = CancellationToken::new();
        let options = self.traced(run_options(allow, settings)?.cancel(cancel.clone()));
        let core = self.open_core()?;
        let turn = quiet::spawn(
            async move { core.run_chain_with(&chain, input, options).await },
            cancel.clone(),
            &self.quiet_running,
        );
        Ok((turn, cancel))
    }

    /// Resume a suspended turn (its checkpoint, the answers' JSON text) nobody streams, as
    /// [`PyClient::start_quiet`]: the engine checks both before anything runs.
    fn start_resume_quiet(
        &self,
        checkpoint: String,
        answers_json: &str,
    ) -> PyResult<(
        impl Future<Output = contenox::Result<TurnResult>> + Send + 'static,
        CancellationToken,
    )> {
        let answers = contenox::durable::answers_from_json(answers_json).map_err(to_py_err)?;
        let cancel = CancellationToken::new();
        let options = self.traced(RunOptions::default().cancel(cancel.clone()));
        let core = self.open_core()?;
        let turn = quiet::spawn(
            async move { core.resume_with(&checkpoint, answers, options).await },
            cancel.clone(),
            &self.quiet_running,
        );
        Ok((turn, cancel))
    }

    /// The engine client, refusing (as `stream_with` does, at the call) when it is closed.
    fn open_core(&self) -> PyResult<contenox::Client> {
        let core = self.core()?;
        if core.is_closed() {
            return Err(to_py_err(contenox::Error::Closed));
        }
        Ok(core)
    }
}

/// A run's `output_schema` (its JSON text) and `output_retries`, when given.
#[derive(Default)]
struct OutputOptions<'a> {
    schema: Option<&'a str>,
    retries: Option<u32>,
}

impl OutputOptions<'_> {
    /// `options` with this run's output schema and retries; the engine checks the schema.
    fn apply(self, mut options: RunOptions) -> PyResult<RunOptions> {
        if let Some(json) = self.schema {
            let value: serde_json::Value = serde_json::from_str(json).map_err(|e| {
                to_py_err(contenox::Error::config(format!(
                    "output_schema: not valid JSON: {e}"
                )))
            })?;
            options = options.output_schema(value);
        }
        if let Some(n) = self.retries {
            options = options.output_retries(n);
        }
        Ok(options)
    }
}

/// The options of one run: the per-run allowlist and the model settings (their JSON text, read
/// with the engine's names), when given.
fn run_options(allow: Option<Vec<String>>, settings: Option<&str>) -> PyResult<RunOptions> {
    let mut options = match allow {
        Some(patterns) => RunOptions::default().allow(&patterns).map_err(to_py_err)?,
        None => RunOptions::default(),
    };
    if let Some(json) = settings {
        let value: serde_json::Value = serde_json::from_str(json).map_err(|e| {
            to_py_err(contenox::Error::config(format!(
                "settings: not valid JSON: {e}"
            )))
        })?;
        let settings = contenox::ModelSettings::from_value(&value, contenox::Spelling::Snake)
            .map_err(to_py_err)?;
        options = options.settings(settings);
    }
    Ok(options)
}

#[pymethods]
impl PyClient {
    /// Build a client from the config JSON, host tools `(spec, invoke, is_async)`, hooks,
    /// wait_for, on_compact and compactor `(callable, is_async)`, and the web search provider's
    /// `search` `(callable, is_async, takes_cancel)`.
    #[staticmethod]
    #[pyo3(signature = (config_json, tools, before_tool=None, after_tool=None, wait_for=None, websearch=None, on_compact=None, compactor=None, background_shells=None, lifecycle=None, *, host_tracer=None))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        config_json: &str,
        tools: Vec<Bound<'_, PyAny>>,
        before_tool: Option<PyCallable<'_>>,
        after_tool: Option<PyCallable<'_>>,
        wait_for: Option<PyCallable<'_>>,
        websearch: Option<PySearch<'_>>,
        on_compact: Option<PyCallable<'_>>,
        compactor: Option<PyCallable<'_>>,
        background_shells: Option<PyRef<'_, PyBackgroundShells>>,
        lifecycle: Option<std::collections::HashMap<String, PyCallable<'_>>>,
        host_tracer: Option<(Py<PyAny>, Py<PyAny>)>,
    ) -> PyResult<PyClient> {
        let config = Config::from_json(config_json).map_err(to_py_err)?;
        let host: SharedHost = Arc::new(Host::default());
        for (_, is_async) in [
            &before_tool,
            &after_tool,
            &wait_for,
            &on_compact,
            &compactor,
        ]
        .into_iter()
        .flatten()
        {
            host.note(*is_async);
        }
        if let Some((_, is_async, _)) = &websearch {
            host.note(*is_async);
        }
        let lifecycle = PyLifecycle {
            points: lifecycle
                .unwrap_or_default()
                .into_iter()
                .map(|(point, (f, is_async))| {
                    host.note(is_async);
                    (point, Callback::from_py(&f, is_async))
                })
                .collect(),
        };
        let tools = tools
            .iter()
            .map(|t| tool_from_py(&host, t))
            .collect::<PyResult<Vec<_>>>()?;
        let any_hook =
            before_tool.is_some() || after_tool.is_some() || !lifecycle.points.is_empty();
        let hooks: Option<Arc<dyn Hooks>> = if any_hook {
            Some(Arc::new(PyHooks {
                before: before_tool.map(|(f, a)| Callback::from_py(&f, a)),
                after: after_tool.map(|(f, a)| Callback::from_py(&f, a)),
                lifecycle,
                host: host.clone(),
            }))
        } else {
            None
        };
        let wait_for: Option<Arc<dyn WaitFor>> = wait_for.map(|(f, a)| {
            Arc::new(PyWaitFor {
                cb: Callback::from_py(&f, a),
                host: host.clone(),
            }) as Arc<dyn WaitFor>
        });
        let websearch: Option<Arc<dyn WebSearchProvider>> = websearch.map(|(f, a, c)| {
            Arc::new(PyWebSearch {
                cb: Callback::from_py(&f, a),
                with_cancel: c,
                host: host.clone(),
            }) as Arc<dyn WebSearchProvider>
        });
        let compactor: Option<Arc<dyn Compactor>> = if on_compact.is_some() || compactor.is_some() {
            Some(Arc::new(PyCompactor {
                on_compact: on_compact.map(|(f, a)| Callback::from_py(&f, a)),
                compact: compactor.map(|(f, a)| Callback::from_py(&f, a)),
                host: host.clone(),
            }))
        } else {
            None
        };
        let parts = Parts {
            hooks,
            wait_for,
            websearch,
            compactor,
            shells: background_shells.map(|s| s.inner.clone()),
            host_tracer: host_tracer.map(|(current, replay)| {
                Arc::new(crate::telemetry::PyHostTracer { current, replay })
            }),
        };
        let client = build(config, &tools, &parts).map_err(to_py_err)?;
        Ok(PyClient {
            state: Mutex::new(State {
                pid: std::process::id(),
                client,
            }),
            host,
            parts,
            host_tools: Mutex::new(tools),
            sources: Mutex::new(Vec::new()),
            quiet_running: quiet::Running::default(),
        })
    }

    /// Run one turn; an awaitable of the result dict. Cancelling the awaiting task cancels the
    /// turn (it still ends with outcome `cancelled` and a valid transcript).
    #[pyo3(signature = (prompt, allow=None, settings=None, output_schema=None, output_retries=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        prompt: &Bound<'py, PyAny>,
        allow: Option<Vec<String>>,
        settings: Option<&str>,
        output_schema: Option<&str>,
        output_retries: Option<u32>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let prompt = to_prompt(prompt)?;
        let locals = running_loop(py, "client.run()")?;
        self.host.set_running(&locals);
        let output = OutputOptions {
            schema: output_schema,
            retries: output_retries,
        };
        let (turn, _) = self.start_quiet(prompt, allow, settings, output)?;
        // Cancelling the asyncio future drops this one, and with it the turn's guard: that
        // cancels the turn.
        py_future(locals.event_loop(py), async move {
            let r = turn.await;
            produce(move |py| result_dict(py, r.map_err(to_py_err)?))
        })
    }

    /// Run one turn and block until it ends, without the GIL and without an event loop
    /// (`client.run_sync`); sync callbacks only (see `needs_loop`). Ctrl-C cancels the turn,
    /// waits for it to end, and raises KeyboardInterrupt (see [`crate::blocking`]).
    #[pyo3(signature = (prompt, allow=None, settings=None, output_schema=None, output_retries=None))]
    fn run_blocking(
        &self,
        py: Python<'_>,
        prompt: &Bound<'_, PyAny>,
        allow: Option<Vec<String>>,
        settings: Option<&str>,
        output_schema: Option<&str>,
        output_retries: Option<u32>,
    ) -> PyResult<Py<PyAny>> {
        let prompt = to_prompt(prompt)?;
        let output = OutputOptions {
            schema: output_schema,
            retries: output_retries,
        };
        let (turn, cancel) = self.start_quiet(prompt, allow, settings, output)?;
        let r = blocking::wait(py, turn, &cancel)?;
        result_dict(py, r.map_err(to_py_err)?)
    }

    /// `run_blocking` for a task chain (`client.run_chain_sync`).
    #[pyo3(signature = (chain_json, input, allow=None, settings=None))]
    fn run_chain_blocking(
        &self,
        py: Python<'_>,
        chain_json: &str,
        input: String,
        allow: Option<Vec<String>>,
        settings: Option<&str>,
    ) -> PyResult<Py<PyAny>> {
        let (turn, cancel) = self.start_chain_quiet(chain_json, input, allow, settings)?;
        let r = blocking::wait(py, turn, &cancel)?;
        result_dict(py, r.map_err(to_py_err)?)
    }

    /// Whether a turn of this client needs an asyncio event loop: an async callable (tool,
    /// hook, wait_for, web search, compactor) was handed to it or to a subagent registered
    /// into it. `run_sync` runs such a client's turn through asyncio instead.
    fn needs_loop(&self) -> bool {
        self.host.needs_loop()
    }

    /// Block (without the GIL) until no `run` / `run_chain` turn of this client is running, at
    /// most `timeout` seconds; True when none is. `run_sync` on the asyncio path calls it after
    /// Ctrl-C, so that the cancelled turn has ended when KeyboardInterrupt reaches the script.
    fn wait_idle(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let timeout = std::time::Duration::try_from_secs_f64(timeout.max(0.0))
            .unwrap_or(std::time::Duration::MAX);
        self.quiet_running.wait_idle(py, timeout)
    }

    /// Start a turn and return its handle.
    #[pyo3(signature = (prompt, allow=None, settings=None, output_schema=None, output_retries=None))]
    fn stream(
        &self,
        py: Python<'_>,
        prompt: &Bound<'_, PyAny>,
        allow: Option<Vec<String>>,
        settings: Option<&str>,
        output_schema: Option<&str>,
        output_retries: Option<u32>,
    ) -> PyResult<PyRun> {
        let prompt = to_prompt(prompt)?;
        self.host.capture(py);
        let output = OutputOptions {
            schema: output_schema,
            retries: output_retries,
        };
        Ok(PyRun::new(self.start(prompt, allow, settings, output)?))
    }

    /// Start a turn stepped by the host (`client.step`): its model requests, tool calls and
    /// asks wait for their results ([`PyStepper`]). `turn_id` / `clock_ms`: a recorded
    /// stepper's start state, to replay it.
    #[pyo3(signature = (prompt, allow=None, settings=None, output_schema=None, output_retries=None, turn_id=None, clock_ms=None))]
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        py: Python<'_>,
        prompt: &Bound<'_, PyAny>,
        allow: Option<Vec<String>>,
        settings: Option<&str>,
        output_schema: Option<&str>,
        output_retries: Option<u32>,
        turn_id: Option<String>,
        clock_ms: Option<u64>,
    ) -> PyResult<PyStepper> {
        let prompt = to_prompt(prompt)?;
        self.host.capture(py);
        let output = OutputOptions {
            schema: output_schema,
            retries: output_retries,
        };
        let options = output.apply(run_options(allow, settings)?)?;
        let start = contenox::step::StepOptions { turn_id, clock_ms };
        let core = self.core()?;
        let _rt = runtime().enter();
        let stepper = core.step_with(prompt, options, start).map_err(to_py_err)?;
        Ok(PyStepper::new(stepper))
    }

    /// Resume a suspended turn from its checkpoint with the answers (JSON text of call id to
    /// answer); an awaitable of the result dict, as `run`. A refused checkpoint or answer
    /// raises when awaited, before anything runs.
    fn resume<'py>(
        &self,
        py: Python<'py>,
        checkpoint: String,
        answers_json: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "client.resume()")?;
        self.host.set_running(&locals);
        let (turn, _) = self.start_resume_quiet(checkpoint, answers_json)?;
        py_future(locals.event_loop(py), async move {
            let r = turn.await;
            produce(move |py| result_dict(py, r.map_err(to_py_err)?))
        })
    }

    /// `resume` blocking until the turn ends (`client.resume_sync`), as `run_blocking`.
    fn resume_blocking(
        &self,
        py: Python<'_>,
        checkpoint: String,
        answers_json: &str,
    ) -> PyResult<Py<PyAny>> {
        let (turn, cancel) = self.start_resume_quiet(checkpoint, answers_json)?;
        let r = blocking::wait(py, turn, &cancel)?;
        result_dict(py, r.map_err(to_py_err)?)
    }

    /// Resume a suspended turn and return its handle, as `stream`.
    fn resume_stream(
        &self,
        py: Python<'_>,
        checkpoint: &str,
        answers_json: &str,
    ) -> PyResult<PyRun> {
        let answers = contenox::durable::answers_from_json(answers_json).map_err(to_py_err)?;
        self.host.capture(py);
        let core = self.core()?;
        let _rt = runtime().enter();
        let options = self.traced(RunOptions::default());
        Ok(PyRun::new(
            core.resume_stream_with(checkpoint, answers, options)
                .map_err(to_py_err)?,
        ))
    }

    /// Run a task chain (JSON text) on `input`; an awaitable of the result dict, as `run`.
    #[pyo3(signature = (chain_json, input, allow=None, settings=None))]
    fn run_chain<'py>(
        &self,
        py: Python<'py>,
        chain_json: &str,
        input: String,
        allow: Option<Vec<String>>,
        settings: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "client.run_chain()")?;
        self.host.set_running(&locals);
        let (turn, _) = self.start_chain_quiet(chain_json, input, allow, settings)?;
        py_future(locals.event_loop(py), async move {
            let r = turn.await;
            produce(move |py| result_dict(py, r.map_err(to_py_err)?))
        })
    }

    /// Start a task chain on `input` and return its handle, as `stream`.
    #[pyo3(signature = (chain_json, input, allow=None, settings=None))]
    fn stream_chain(
        &self,
        py: Python<'_>,
        chain_json: &str,
        input: String,
        allow: Option<Vec<String>>,
        settings: Option<&str>,
    ) -> PyResult<PyRun> {
        self.host.capture(py);
        Ok(PyRun::new(
            self.start_chain(chain_json, input, allow, settings)?,
        ))
    }

    /// Add a host tool `(spec, invoke, is_async)`, replacing one of the same name.
    fn register(&self, tool: &Bound<'_, PyAny>) -> PyResult<()> {
        let tool = tool_from_py(&self.host, tool)?;
        self.core()?.register(tool.clone()).map_err(to_py_err)?;
        let name = tool.spec().name;
        let mut tools = self.host_tools.lock().unwrap_or_else(|e| e.into_inner());
        tools.retain(|t| t.spec().name != name);
        tools.push(tool);
        Ok(())
    }

    /// Add a tool source (`McpSource.register_into`, `RemoteSource.register_into`): its tools
    /// are registered and kept in step with it, its before-turn work runs before each turn, MCP
    /// servers stop with the client (the engine's `Client::add_source`). Raises, registering
    /// nothing, when a name is taken by a tool of another source.
    fn add_source(&self, source: &PySource) -> PyResult<()> {
        self.add_core_source(source.core())
    }

    /// Remove a tool; True when it was there.
    fn unregister(&self, name: &str) -> PyResult<bool> {
        self.host_tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|t| t.spec().name != name);
        Ok(self.core()?.unregister(name))
    }

    /// The specs of every registered tool, as dicts.
    fn tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.core()?.tools())
    }

    /// The conversation (written as JSON only when read).
    fn transcript(&self) -> PyResult<PyTranscript> {
        Ok(PyTranscript::pretty(self.core()?.transcript()))
    }

    /// Replace the conversation with one saved as JSON.
    fn set_transcript_json(&self, json: &str) -> PyResult<()> {
        let t = Transcript::from_json(json).map_err(to_py_err)?;
        self.core()?.set_transcript(t).map_err(to_py_err)
    }

    /// Replace the conversation with one the engine handed over (no JSON round trip; the
    /// engine checks it as it checks any).
    fn set_transcript(&self, transcript: &Bound<'_, PyTranscript>) -> PyResult<()> {
        let t = transcript.get().transcript.clone();
        self.core()?.set_transcript(t).map_err(to_py_err)
    }

    /// This client as a tool of another (`register` it there): options JSON with the engine's
    /// names (`conversation`, `max_turns`, `allow`, `input_schema`, `hints`, `max_depth`).
    fn as_tool_with(
        &self,
        name: String,
        description: String,
        options_json: &str,
    ) -> PyResult<PyNativeTool> {
        let value: serde_json::Value = serde_json::from_str(options_json)
            .map_err(|e| to_py_err(contenox::Error::config(format!("subagent options: {e}"))))?;
        let options = SubagentOptions::from_json_value(value).map_err(to_py_err)?;
        let tool = self
            .core()?
            .as_tool_with(name, description, options)
            .map_err(to_py_err)?;
        Ok(PyNativeTool {
            tool,
            host: Some(self.host.clone()),
        })
    }

    /// Compact the conversation now; an awaitable of the notice dict, or None when there was
    /// nothing older to summarise.
    fn compact<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "client.compact()")?;
        self.host.capture(py);
        let core = self.core()?;
        py_future(locals.event_loop(py), async move {
            let notice = core.compact().await;
            produce(move |py| Ok(ser_to_py(py, &notice.map_err(to_py_err)?)?.unbind()))
        })
    }

    /// The models the configured server offers; an awaitable of a list of dicts.
    fn list_models<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "client.list_models()")?;
        let core = self.core()?;
        py_future(locals.event_loop(py), async move {
            let models = core.list_models().await;
            produce(move |py| Ok(ser_to_py(py, &models.map_err(to_py_err)?)?.unbind()))
        })
    }

    /// Replace the approval policy from the `policy` option's forms (a dict, JSON text or a
    /// file path; None removes it); a bad one raises and the old one stays.
    fn set_policy(&self, source: &Bound<'_, PyAny>) -> PyResult<()> {
        self.core()?
            .set_policy_source(&to_value(source)?)
            .map_err(to_py_err)
    }

    /// The approval policy in force, as its document (None without one).
    fn policy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.core()?.policy().map(|p| p.document().clone()))
    }

    /// The config the client was built with, as a dict.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, self.core()?.config())
    }

    /// The client's background shells (shared with the host that gave them); None when config
    /// `background` is off.
    fn background_shells(&self) -> PyResult<Option<PyBackgroundShells>> {
        Ok(self
            .core()?
            .background_shells()
            .map(|s| PyBackgroundShells::of(s.clone())))
    }

    /// Cancel every running turn, kill the background shells, and refuse new turns; queued
    /// spans (telemetry on) are sent first, without the GIL (a few seconds at most).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let core = self.core()?;
        py.detach(|| core.close());
        Ok(())
    }

    #[getter]
    fn closed(&self) -> PyResult<bool> {
        Ok(self.core()?.is_closed())
    }
}

/// A preset policy's document as JSON text (`default`, `strict`, `dev`): the engine's own.
#[pyfunction]
pub fn policy_preset(name: &str) -> PyResult<String> {
    contenox::policy::presets::json_by_name(name)
        .map(str::to_string)
        .ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "no preset policy {name:?}; the presets are {}",
                contenox::policy::presets::NAMES.join(", ")
            ))
        })
}

/// The models of the server a config points at; an awaitable of a list of dicts.
#[pyfunction]
pub fn list_models<'py>(py: Python<'py>, config_json: &str) -> PyResult<Bound<'py, PyAny>> {
    let config = Config::from_json(config_json).map_err(to_py_err)?;
    let locals = running_loop(py, "contenox.list_models()")?;
    py_future(locals.event_loop(py), async move {
        let models = contenox::list_models(&config).await;
        produce(move |py| Ok(ser_to_py(py, &models.map_err(to_py_err)?)?.unbind()))
    })
}
