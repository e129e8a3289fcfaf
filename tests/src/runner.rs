//! The Rust runner: runs one scenario through contenox's public Rust API and writes its trace.
//! Every binding has a runner like this one in its own language; one checker judges them all.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use contenox::{
    async_trait, tool_fn, Answer, CancellationToken, Client, ClientBuilder, CompactAction,
    CompactRequest, Config, Decision, Event, FnTool, Hooks, HostError, Notification, Outcome,
    PendingRequest, PromptAction, SearchRequest, SearchResult, StopAction, SubagentOptions, Tool,
    ToolCallEvent, ToolOutput, ToolSpec, TurnEndInfo, WaitFor, WebSearchProvider,
};
use serde_json::{json, Value};

use crate::check::Trace;
use crate::fake;
use crate::scenario::{
    ActionDo, AfterRule, BeforeRule, Config as ScenarioConfig, Decision as RuleDecision,
    EventPattern, Hint, HostTool, HostToolKind, Match, Scenario, Style, Subagent, Tier, Usage,
    WaitAnswer,
};

/// How long one scenario may run.
pub const SCENARIO_TIMEOUT: Duration = Duration::from_secs(30);

/// Run `scenario` end to end and return its trace. `Err` is a failure of the harness or of the
/// client's construction, reported as the scenario's failure.
pub async fn run_scenario(scenario: &Scenario) -> Result<Trace, String> {
    match tokio::time::timeout(SCENARIO_TIMEOUT, run_inner(scenario)).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "still running after {} s",
            SCENARIO_TIMEOUT.as_secs()
        )),
    }
}

async fn run_inner(scenario: &Scenario) -> Result<Trace, String> {
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    for (path, content) in &scenario.workspace {
        let p = root.path().join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::write(&p, content).map_err(|e| e.to_string())?;
    }
    let server = fake::serve(scenario.model.clone(), scenario.style)
        .await
        .map_err(|e| format!("fake server: {e}"))?;

    let config = match client_config(scenario, &server.base_url(), root.path()) {
        Ok(config) => config,
        // A config core refuses to read is a creation error too (as in every other binding).
        Err(e) if scenario.expect.config_error_contains.is_some() => {
            return refused(scenario, server, root.path(), e).await;
        }
        Err(e) => return Err(e),
    };
    let answers = Arc::new(ScriptedAnswers {
        answers: Mutex::new(scenario.wait_for.iter().cloned().collect()),
    });
    let restart = scenario
        .extra
        .get("restart_between_prompts")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let current: ClientCell = Arc::new(Mutex::new(None));
    let subagents = build_subagents(scenario, &server.base_url(), root.path())?;
    let compactions: Arc<Mutex<Vec<Value>>> = Arc::default();
    let lifecycle_log: Arc<Mutex<Vec<String>>> = Arc::default();
    let parts = Parts {
        lifecycle_log: &lifecycle_log,
        config: &config,
        answers: &answers,
        current: &current,
        subagent_tools: &subagents.parent_tools,
        compactions: &compactions,
    };
    let mut client = match build_client(scenario, &parts) {
        Ok(c) => c,
        // SPEC "Approval policies": the creation error is the result; no turn runs.
        Err(e) if scenario.expect.config_error_contains.is_some() => {
            return refused(scenario, server, root.path(), e).await;
        }
        Err(e) => return Err(e),
    };
    let mcp = crate::mcp_support::setup(&scenario.extra).await?;
    if let Some(m) = &mcp {
        m.register_into(&client)?;
    }
    let mut remote = crate::remote_support::setup(scenario).await?;
    if let Some(r) = &mut remote {
        r.register_into(&client)?;
        r.bring_up().await?;
    }
    if let Some(saved) = &scenario.transcript {
        let restored =
            contenox::Transcript::from_json(&saved.to_string()).map_err(|e| e.to_string())?;
        client.set_transcript(restored).map_err(|e| e.to_string())?;
    }

    // Extension `chain`: each prompt is the input of a run of this chain. A chain that does not
    // read is the trace's `chain_error` (nothing runs).
    let chain = scenario
        .extra
        .get("chain")
        .map(|v| contenox::Chain::from_value(v.clone()).map_err(|e| e.to_string()));
    let mut chain_error = None;
    let mut events = Vec::new();
    let mut fired = vec![false; scenario.actions.len()];
    let mut last = None;
    // Extension `step`: the prompt as a turn stepped by its host (tests/src/runner_step.rs).
    let mut step_extra = serde_json::Map::new();
    let stepped = scenario.extra.get("step");
    if let Some(spec) = stepped {
        let s = crate::runner_step::run_stepped(spec, &scenario.prompt, &client, || {
            build_client(scenario, &parts)
        })
        .await?;
        events = s.events;
        last = Some(s.result);
        step_extra = s.extra;
    }
    let prompts = match stepped {
        Some(_) => Vec::new(),
        None => std::iter::once(&scenario.prompt)
            .chain(&scenario.more_prompts)
            .collect(),
    };
    for (i, prompt) in prompts.into_iter().enumerate() {
        if restart && i > 0 {
            // Save the transcript as JSON, drop the client, and continue in a new one.
            let saved = client.transcript().to_json();
            client.close();
            client = build_client(scenario, &parts)?;
            let restored = contenox::Transcript::from_json(&saved).map_err(|e| e.to_string())?;
            client.set_transcript(restored).map_err(|e| e.to_string())?;
            if let Some(r) = &remote {
                r.register_into(&client)?;
            }
        }
        // Extension `run_settings`: the first prompt's run has its own model settings.
        let mut options = contenox::RunOptions::default();
        if let (0, Some(v)) = (i, scenario.extra.get("run_settings")) {
            match contenox::ModelSettings::from_value(v, contenox::Spelling::Snake) {
                Ok(s) => options = options.settings(s),
                Err(e) if scenario.expect.config_error_contains.is_some() => {
                    client.close();
                    return refused(scenario, server, root.path(), e.to_string()).await;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        // Extension `run_output_schema`: the first prompt's run has its own output_schema.
        if let (0, Some(v)) = (i, scenario.extra.get("run_output_schema")) {
            options = options.output_schema(v.clone());
        }
        // Extension `prompt_parts`: the first prompt as text and image parts (the engine's JSON).
        let parts = match (i, scenario.extra.get("prompt_parts")) {
            (0, Some(v)) => Some(contenox::Prompt::from_json(v)),
            _ => None,
        };
        let started = match (&chain, parts) {
            (None, Some(Ok(p))) => client.stream_with(p, options),
            (None, Some(Err(e))) => Err(e),
            (None, None) => client.stream_with(prompt.clone(), options),
            (Some(_), Some(_)) => return Err("prompt_parts is not for a chain".into()),
            (Some(Ok(c)), None) => client.stream_chain_with(c, prompt.clone(), options),
            (Some(Err(e)), None) => {
                chain_error = Some(e.clone());
                break;
            }
        };
        let mut run = match started {
            Ok(run) => run,
            // A chain the client refuses to start (a task's provider is not its style, or the
            // run's settings): the error is the trace's chain_error, as for a chain that does
            // not read, and as every binding's runner records it.
            Err(e @ contenox::Error::Config(_)) if chain.is_some() => {
                chain_error = Some(e.to_string());
                break;
            }
            // A run's settings refused as a configuration: the error is the result.
            Err(e @ contenox::Error::Config(_))
                if scenario.expect.config_error_contains.is_some() =>
            {
                client.close();
                return refused(scenario, server, root.path(), e.to_string()).await;
            }
            Err(e) => return Err(e.to_string()),
        };
        while let Some(event) = run.next_event().await {
            for (i, action) in scenario.actions.iter().enumerate() {
                if fired[i] || !event_matches(&event, &action.on) {
                    continue;
                }
                fired[i] = true;
                match &action.action {
                    ActionDo::Cancel => run.cancel(),
                    ActionDo::Register { name } => client
                        .register(Arc::new(echo_tool(name, None)))
                        .map_err(|e| e.to_string())?,
                }
            }
            events.push(serde_json::to_value(&event).map_err(|e| e.to_string())?);
        }
        last = Some(run.result().await.map_err(|e| e.to_string())?);
    }
    // Extension `resume`: the last turn suspended; a client built again from the same parts
    // resumes it from its checkpoint with `answers` (under `policy` when given, after
    // `wait_ms`, from a checkpoint `edit`ed to be `tampered` or `newer`, and a second time when
    // `twice`). A refusal is the trace's `resume_error`.
    let mut resume_error = None;
    if let Some(spec) = scenario.extra.get("resume") {
        let checkpoint = last
            .as_ref()
            .and_then(|l| l.checkpoint.clone())
            .ok_or("resume: the turn did not suspend (its result has no checkpoint)")?;
        let checkpoint = edit_checkpoint(&checkpoint, spec.get("edit").and_then(Value::as_str))?;
        if let Some(ms) = spec.get("wait_ms").and_then(Value::as_u64) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        client.close();
        client = build_client(scenario, &parts)?;
        if let Some(policy) = spec.get("policy") {
            client
                .set_policy_source(policy)
                .map_err(|e| e.to_string())?;
        }
        let answers = spec.get("answers").cloned().unwrap_or_else(|| json!({}));
        let answers = contenox::durable::answers_from_json(&answers.to_string())
            .map_err(|e| e.to_string())?;
        let times = if spec.get("twice") == Some(&Value::Bool(true)) {
            2
        } else {
            1
        };
        for _ in 0..times {
            let mut run = match client.resume_stream(&checkpoint, answers.clone()) {
                Ok(run) => run,
                Err(e) => {
                    resume_error = Some(e.to_string());
                    break;
                }
            };
            while let Some(event) = run.next_event().await {
                events.push(serde_json::to_value(&event).map_err(|e| e.to_string())?);
            }
            last = Some(run.result().await.map_err(|e| e.to_string())?);
        }
    }
    let told = compactions.lock().expect("compactions").clone();
    let lifecycle_calls = lifecycle_log.lock().expect("lifecycle log").clone();
    if let Some(ms) = scenario.settle_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let requests = server.requests.get();
    server.shutdown().await;
    client.close();
    for c in &subagents.clients {
        c.close();
    }
    if let Some(m) = mcp {
        m.close().await;
    }
    let remote_requests = remote.as_ref().map(|r| r.requests()).unwrap_or_default();
    if let Some(r) = remote {
        r.close().await;
    }
    let mut extra = step_extra;
    if let Some(e) = chain_error {
        extra.insert("chain_error".into(), json!(e));
    }
    if let Some(e) = resume_error {
        extra.insert("resume_error".into(), json!(e));
    }
    if scenario.extra.contains_key("lifecycle") {
        extra.insert("lifecycle".into(), json!(lifecycle_calls));
    }
    Ok(Trace {
        scenario: scenario.name.clone(),
        binding: "rust".into(),
        outcome: last.as_ref().map(|l| outcome_name(l.outcome).into()),
        final_text: last.as_ref().map(|l| l.final_text.clone()),
        usage: last.as_ref().map(|l| Usage {
            input_tokens: l.usage.input_tokens,
            output_tokens: l.usage.output_tokens,
            cache_read_input_tokens: l.usage.cache_read_input_tokens,
            cache_creation_input_tokens: l.usage.cache_creation_input_tokens,
            reasoning_tokens: l.usage.reasoning_tokens,
        }),
        events,
        requests,
        workspace: snapshot(root.path()),
        remote_requests,
        config_error: None,
        compactions: told,
        output: last.as_ref().and_then(|l| l.output.clone()),
        extra,
    })
}

/// Extension `resume.edit`: `newer` raises the checkpoint's version, `tampered` changes the
/// first call's arguments (its digest no longer matches); absent leaves it as it is.
pub fn edit_checkpoint(checkpoint: &str, edit: Option<&str>) -> Result<String, String> {
    let Some(edit) = edit else {
        return Ok(checkpoint.to_string());
    };
    let mut v: Value = serde_json::from_str(checkpoint).map_err(|e| e.to_string())?;
    match edit {
        "newer" => {
            let n = v["version"].as_u64().unwrap_or(0);
            v["version"] = json!(n + 1);
        }
        "tampered" => v["reply"]["calls"][0]["arguments"]["tampered"] = json!(true),
        other => return Err(format!("resume.edit: {other:?} is not newer or tampered")),
    }
    Ok(v.to_string())
}

/// The trace of a scenario whose client (or first run) was refused as a configuration: the
/// error, and what the server received (nothing, when the check came first).
async fn refused(
    scenario: &Scenario,
    server: fake::FakeServer,
    root: &Path,
    error: String,
) -> Result<Trace, String> {
    let requests = server.requests.get();
    server.shutdown().await;
    Ok(Trace {
        scenario: scenario.name.clone(),
        binding: "rust".into(),
        requests,
        workspace: snapshot(root),
        config_error: Some(error),
        ..Default::default()
    })
}

/// The scenario's subagents: their clients, and the tools registered into the scenario's.
struct Subagents {
    clients: Vec<Client>,
    parent_tools: Vec<Arc<dyn Tool>>,
}

/// Build every subagent's client (same server, same root), register the subagents each one
/// lists into it, and make the tools of those the scenario's client gets.
fn build_subagents(scenario: &Scenario, base_url: &str, root: &Path) -> Result<Subagents, String> {
    let mut clients = Vec::new();
    for sub in &scenario.subagents {
        clients.push(build_subagent(scenario.style, sub, base_url, root)?);
    }
    let tool_of = |name: &str| -> Result<Arc<dyn Tool>, String> {
        let i = scenario
            .subagents
            .iter()
            .position(|s| s.name == name)
            .ok_or_else(|| format!("no subagent {name:?}"))?;
        let sub = &scenario.subagents[i];
        let options = SubagentOptions::from_json_value(sub.options.clone().unwrap_or(Value::Null))
            .map_err(|e| e.to_string())?;
        let description = sub
            .description
            .clone()
            .unwrap_or_else(|| format!("The subagent {name}."));
        clients[i]
            .as_tool_with(name, description, options)
            .map_err(|e| e.to_string())
    };
    for (i, sub) in scenario.subagents.iter().enumerate() {
        for name in &sub.subagents {
            clients[i]
                .register(tool_of(name)?)
                .map_err(|e| e.to_string())?;
        }
    }
    let mut parent_tools = Vec::new();
    for sub in scenario.subagents.iter().filter(|s| s.in_parent) {
        parent_tools.push(tool_of(&sub.name)?);
    }
    Ok(Subagents {
        clients,
        parent_tools,
    })
}

fn build_subagent(
    style: Style,
    sub: &Subagent,
    base_url: &str,
    root: &Path,
) -> Result<Client, String> {
    let config = config_of(&sub.config, style, base_url, root)?;
    let cell: ClientCell = Arc::new(Mutex::new(None));
    let mut builder = ClientBuilder::from_config(config);
    if let Some(rules) = &sub.before_tool {
        builder = builder.hooks(Arc::new(RuleHooks {
            before: rules.clone(),
            after: Vec::new(),
            lifecycle: None,
        }));
    }
    if let Some(answers) = &sub.wait_for {
        builder = builder.wait_for(Arc::new(ScriptedAnswers {
            answers: Mutex::new(answers.iter().cloned().collect()),
        }));
    }
    let meeting = Arc::new(Meeting::default());
    for t in &sub.host_tools {
        builder = builder.tool(Arc::new(host_tool(t, cell.clone(), &meeting)));
    }
    let client = builder.build().map_err(|e| e.to_string())?;
    *cell.lock().expect("client cell") = Some(client.clone());
    Ok(client)
}

/// The client a `register` tool registers on (replaced when the runner restarts the client).
type ClientCell = Arc<Mutex<Option<Client>>>;

/// What the scenario's client is built from (again after a restart).
struct Parts<'a> {
    config: &'a Config,
    answers: &'a Arc<ScriptedAnswers>,
    current: &'a ClientCell,
    subagent_tools: &'a [Arc<dyn Tool>],
    /// What `on_compact` is told, as JSON.
    compactions: &'a Arc<Mutex<Vec<Value>>>,
    /// Extension `lifecycle`: each call of the scenario's lifecycle hooks.
    lifecycle_log: &'a Arc<Mutex<Vec<String>>>,
}

fn build_client(scenario: &Scenario, parts: &Parts<'_>) -> Result<Client, String> {
    let told = parts.compactions.clone();
    let mut builder = ClientBuilder::from_config(parts.config.clone())
        .hooks(Arc::new(RuleHooks {
            before: scenario.before_tool.clone(),
            after: scenario.after_tool.clone().unwrap_or_default(),
            lifecycle: scenario
                .extra
                .get("lifecycle")
                .and_then(Value::as_object)
                .map(|spec| ScenarioLifecycle {
                    spec: spec.clone(),
                    log: parts.lifecycle_log.clone(),
                }),
        }))
        .wait_for(parts.answers.clone())
        .on_compact(move |notice| {
            if let Ok(v) = serde_json::to_value(notice) {
                told.lock().expect("compactions").push(v);
            }
        });
    let meeting = Arc::new(Meeting::default());
    for t in &scenario.host_tools {
        builder = builder.tool(Arc::new(host_tool(t, parts.current.clone(), &meeting)));
    }
    for t in parts.subagent_tools {
        builder = builder.tool(t.clone());
    }
    if let Some(results) = websearch_results(scenario)? {
        builder = builder.websearch(Arc::new(FixedResults(results)));
    }
    let client = builder.build().map_err(|e| e.to_string())?;
    *parts.current.lock().expect("client cell") = Some(client.clone());
    Ok(client)
}

/// `config.websearch`: `false`/absent = off; `{"results": [{title, url, snippet}]}` = a provider
/// that answers every query with those results.
fn websearch_results(scenario: &Scenario) -> Result<Option<Vec<SearchResult>>, String> {
    match &scenario.config.websearch {
        None | Some(Value::Bool(false)) | Some(Value::Null) => Ok(None),
        Some(v) => {
            let results = v.get("results").cloned().ok_or_else(|| {
                format!("websearch must be false or {{\"results\": [...]}}, got {v}")
            })?;
            serde_json::from_value(results)
                .map(Some)
                .map_err(|e| format!("websearch results: {e}"))
        }
    }
}

/// A search provider with fixed results (the engine filters and caps them).
struct FixedResults(Vec<SearchResult>);

#[async_trait]
impl WebSearchProvider for FixedResults {
    async fn search(
        &self,
        _request: SearchRequest,
        _cancel: CancellationToken,
    ) -> Result<Vec<SearchResult>, HostError> {
        Ok(self.0.clone())
    }
}

/// The client config of a scenario: its `config` plus the fake server's address.
pub fn client_config(scenario: &Scenario, base_url: &str, root: &Path) -> Result<Config, String> {
    config_of(&scenario.config, scenario.style, base_url, root)
}

/// A client config: `config` plus the fake server's address (the scenario's or a subagent's).
fn config_of(
    config: &ScenarioConfig,
    style: Style,
    base_url: &str,
    root: &Path,
) -> Result<Config, String> {
    let mut cfg = serde_json::to_value(config).map_err(|e| e.to_string())?;
    let obj = cfg.as_object_mut().ok_or("config must be an object")?;
    // `websearch` is a provider the host supplies, not a core option (see `websearch_results`).
    obj.remove("websearch");
    obj.insert("style".into(), json!(style.as_str()));
    point_fallbacks_here(obj, style, base_url);
    obj.insert("base_url".into(), json!(base_url));
    obj.insert("model".into(), json!("fake"));
    obj.insert("api_key".into(), json!("test"));
    obj.insert("root".into(), json!(root));
    // Read as every binding reads it: a mistake names the option's path.
    Config::from_json(&cfg.to_string()).map_err(|e| format!("invalid config: {e}"))
}

/// A `fallback` entry of another style than the scenario's and without a `base_url` talks to
/// the fake server too (it serves every style's chat endpoint): its base URL for that style.
fn point_fallbacks_here(
    config: &mut serde_json::Map<String, serde_json::Value>,
    style: Style,
    base_url: &str,
) {
    let root = base_url.strip_suffix("/v1").unwrap_or(base_url);
    let Some(serde_json::Value::Array(entries)) = config.get_mut("fallback") else {
        return;
    };
    for entry in entries
        .iter_mut()
        .filter_map(serde_json::Value::as_object_mut)
    {
        let other = match entry.get("style").and_then(serde_json::Value::as_str) {
            Some(s) if s != style.as_str() => s.to_string(),
            _ => continue,
        };
        if !entry.contains_key("base_url") {
            let url = if other.starts_with("openai") {
                format!("{root}/v1")
            } else {
                root.to_string()
            };
            entry.insert("base_url".into(), json!(url));
        }
    }
}

fn outcome_name(o: Outcome) -> &'static str {
    o.as_str()
}

fn event_matches(event: &Event, pattern: &str) -> bool {
    EventPattern::parse(pattern).matches(event.kind(), event.tool_name(), event.agent())
}

/// Every file under `root`, relative path -> content.
fn snapshot(root: &Path) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() => {
                    let rel = path
                        .strip_prefix(root)
                        .expect("under root")
                        .to_string_lossy()
                        .replace('\\', "/");
                    let bytes = std::fs::read(&path).unwrap_or_default();
                    out.insert(rel, Some(String::from_utf8_lossy(&bytes).into_owned()));
                }
                _ => {}
            }
        }
    }
    out
}

fn spec_of(t: &HostTool) -> ToolSpec {
    let mut spec = ToolSpec::new(
        t.name.clone(),
        t.description
            .clone()
            .unwrap_or_else(|| format!("Host tool {} ({:?}).", t.name, t.kind)),
        t.input_schema(),
    );
    if let Some(h) = &t.hints {
        spec.hints = contenox::Hints {
            read_only: h.read_only,
            destructive: h.destructive,
            open_world: h.open_world,
        };
    }
    if t.tier == Some(Tier::Deferred) {
        spec.tier = contenox::Tier::Deferred;
    }
    spec
}

fn echo_tool(name: &str, spec: Option<ToolSpec>) -> FnTool {
    let spec = spec
        .unwrap_or_else(|| ToolSpec::new(name, "Echo the arguments.", json!({"type": "object"})));
    tool_fn(spec, |args, _ctx| async move {
        Ok(ToolOutput::text(args.to_string()))
    })
}

/// What the `rendezvous` tools of one client share: how many of their calls run now, and how
/// many times a call arrived to find `count` running (each such meeting releases every call
/// running then).
#[derive(Default)]
struct Meeting {
    state: Mutex<(u64, u64)>,
}

/// Decrements the running count however the call ends (finished, or dropped when cancelled).
struct Leave<'a>(&'a Meeting);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.state.lock().expect("meeting").0 -= 1;
    }
}

/// The `rendezvous` kind (README): wait until `count` calls run at once, at most `timeout_ms`.
async fn rendezvous(meeting: &Meeting, args: &Value, cancel: &CancellationToken) -> String {
    let count = args["count"].as_u64().unwrap_or(1);
    let timeout = Duration::from_millis(args["timeout_ms"].as_u64().unwrap_or(5000));
    let max = args["max"].as_u64();
    let (entered_epoch, running) = {
        let mut s = meeting.state.lock().expect("meeting");
        s.0 += 1;
        let epoch = s.1;
        if s.0 >= count {
            s.1 += 1;
        }
        (epoch, s.0)
    };
    let _leave = Leave(meeting);
    let over = match max {
        Some(m) if running > m => format!("; over max: {running} running"),
        _ => String::new(),
    };
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let (now_running, epoch) = *meeting.state.lock().expect("meeting");
        if epoch > entered_epoch {
            let hold = Duration::from_millis(args["hold_ms"].as_u64().unwrap_or(0));
            tokio::select! {
                _ = tokio::time::sleep(hold) => {}
                _ = cancel.cancelled() => return "cancelled".to_string(),
            }
            return format!("met {count}{over}");
        }
        if tokio::time::Instant::now() >= deadline {
            return format!("timed out with {now_running} running{over}");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(5)) => {}
            _ = cancel.cancelled() => return "cancelled".to_string(),
        }
    }
}

fn host_tool(t: &HostTool, client: ClientCell, meeting: &Arc<Meeting>) -> FnTool {
    let spec = spec_of(t);
    match t.kind {
        HostToolKind::Rendezvous => {
            let meeting = meeting.clone();
            tool_fn(spec, move |args, ctx| {
                let meeting = meeting.clone();
                async move {
                    Ok(ToolOutput::text(
                        rendezvous(&meeting, &args, &ctx.cancel).await,
                    ))
                }
            })
        }
        HostToolKind::Echo => echo_tool(&t.name, Some(spec)),
        HostToolKind::Fail => tool_fn(spec, |args, _ctx| async move {
            let msg = args["message"].as_str().unwrap_or("failed").to_string();
            Err(HostError::new(msg))
        }),
        HostToolKind::Sleep => tool_fn(spec, |args, ctx| async move {
            let ms = args["ms"].as_u64().unwrap_or(0);
            // Woken by the cancel, it says so: the call's result must still be the engine's
            // `cancelled` (the conformance README).
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(ToolOutput::text("slept")),
                _ = ctx.cancel.cancelled() => Ok(ToolOutput::text("interrupted")),
            }
        }),
        HostToolKind::Register => tool_fn(spec, move |args, _ctx| {
            let client = client.clone();
            async move {
                let name = args["name"]
                    .as_str()
                    .ok_or_else(|| HostError::new("register needs `name`"))?
                    .to_string();
                let client = client
                    .lock()
                    .expect("client cell")
                    .clone()
                    .ok_or("the client is not built yet")?;
                client
                    .register(Arc::new(echo_tool(&name, None)))
                    .map_err(|e| HostError::new(e.to_string()))?;
                Ok(ToolOutput::text("registered"))
            }
        }),
    }
}

fn rule_matches(m: &Match, call: &ToolCallEvent) -> bool {
    if m.name.as_ref().is_some_and(|n| *n != call.name) {
        return false;
    }
    if let Some(h) = m.hint {
        let v = match h {
            Hint::ReadOnly => call.hints.read_only,
            Hint::Destructive => call.hints.destructive,
            Hint::OpenWorld => call.hints.open_world,
        };
        if v != Some(true) {
            return false;
        }
    }
    if let Some(no) = m.no_hints {
        if call.hints.is_empty() != no {
            return false;
        }
    }
    if let Some(s) = m.source {
        let wanted = serde_json::to_value(s).unwrap_or_default();
        if wanted.as_str() != Some(call.source.as_str()) {
            return false;
        }
    }
    if let Some(server) = &m.server {
        if call.server.as_deref() != Some(server.as_str()) {
            return false;
        }
    }
    true
}

struct RuleHooks {
    before: Vec<BeforeRule>,
    after: Vec<AfterRule>,
    lifecycle: Option<ScenarioLifecycle>,
}

/// Extension `lifecycle` (tests/conformance/README.md): for each point named, the answer every
/// call gives (core's JSON form, `true` for an observer) or `"raise"`; every call of a named
/// point is logged (`point` or `point:detail`) before it answers.
struct ScenarioLifecycle {
    spec: serde_json::Map<String, Value>,
    log: Arc<Mutex<Vec<String>>>,
}

impl RuleHooks {
    /// The answer of `point` (logged as `entry`), or `default` when the scenario names no such
    /// point.
    fn lifecycle<T: serde::de::DeserializeOwned>(
        &self,
        point: &str,
        entry: String,
        default: T,
    ) -> Result<T, HostError> {
        let Some(l) = &self.lifecycle else {
            return Ok(default);
        };
        let Some(answer) = l.spec.get(point) else {
            return Ok(default);
        };
        l.log.lock().expect("lifecycle log").push(entry);
        match answer {
            Value::String(s) if s == "raise" => Err(HostError::new(format!("{point} raised"))),
            Value::Bool(true) => Ok(default),
            other => serde_json::from_value(other.clone())
                .map_err(|e| HostError::new(format!("{point}: {e}"))),
        }
    }
}

#[async_trait]
impl Hooks for RuleHooks {
    async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
        let Some(rule) = self.before.iter().find(|r| rule_matches(&r.matches, call)) else {
            return Ok(Decision::Allow);
        };
        Ok(match &rule.decision {
            RuleDecision::Allow => Decision::Allow,
            RuleDecision::Deny(m) => Decision::Deny(m.clone()),
            RuleDecision::Ask(a) => Decision::Ask(PendingRequest {
                kind: a.kind.clone(),
                prompt: a.prompt.clone(),
                timeout_ms: a.timeout_ms,
                ..Default::default()
            }),
        })
    }

    async fn after_tool(
        &self,
        call: &ToolCallEvent,
        _result: &ToolOutput,
    ) -> Result<Option<ToolOutput>, HostError> {
        Ok(self
            .after
            .iter()
            .find(|r| rule_matches(&r.matches, call))
            .map(|r| ToolOutput::json(r.replace.clone())))
    }

    async fn on_prompt(&self, _prompt: &str) -> Result<PromptAction, HostError> {
        self.lifecycle("on_prompt", "on_prompt".into(), PromptAction::Continue)
    }

    async fn on_stop(&self, _final_text: &str) -> Result<StopAction, HostError> {
        self.lifecycle("on_stop", "on_stop".into(), StopAction::Stop)
    }

    async fn before_compact(&self, request: &CompactRequest) -> Result<CompactAction, HostError> {
        let entry = format!(
            "before_compact:{}",
            json!(request.trigger).as_str().unwrap_or("")
        );
        self.lifecycle("before_compact", entry, CompactAction::Proceed)
    }

    async fn on_tool_error(&self, call: &ToolCallEvent, _: &ToolOutput) -> Result<(), HostError> {
        self.lifecycle("on_tool_error", format!("on_tool_error:{}", call.name), ())
    }

    async fn on_turn_start(&self, _prompt: &str) -> Result<(), HostError> {
        self.lifecycle("on_turn_start", "on_turn_start".into(), ())
    }

    async fn on_turn_end(&self, end: &TurnEndInfo) -> Result<(), HostError> {
        let entry = format!("on_turn_end:{}", end.outcome.as_str());
        self.lifecycle("on_turn_end", entry, ())
    }

    async fn on_notification(&self, n: &Notification) -> Result<(), HostError> {
        let entry = format!("on_notification:{}", n.kind.as_str());
        self.lifecycle("on_notification", entry, ())
    }
}

struct ScriptedAnswers {
    answers: Mutex<VecDeque<WaitAnswer>>,
}

#[async_trait]
impl WaitFor for ScriptedAnswers {
    async fn wait_for(
        &self,
        _request: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        let next = self
            .answers
            .lock()
            .expect("answers lock")
            .pop_front()
            .unwrap_or(WaitAnswer::Never);
        match next {
            WaitAnswer::Never => {
                cancel.cancelled().await;
                Err(HostError::new("cancelled"))
            }
            WaitAnswer::Approve {
                approve: true,
                message: _,
            } => Ok(Answer::Approve),
            WaitAnswer::Approve {
                approve: false,
                message,
            } => Ok(Answer::Deny(message)),
            WaitAnswer::Result(v) => Ok(Answer::Result(v)),
            WaitAnswer::Suspend => Ok(Answer::Suspend),
        }
    }
}
