//! Running a chain: one turn of the client whose steps are the chain's tasks. Model calls and
//! tool calls go through the same pieces as a turn's ([`Turn`]): the client's backend, its
//! allowlists narrowed by the task's, the gate, the events, the conversation.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::limits::{self, history_bytes};
use super::parse::{Chain, Goto, Handler, Task};
use super::template::{RenderError, Scope, Template};
use crate::client_state::ClientState;
use crate::error::cut;
use crate::event::{Event, Outcome, TurnResult, Usage};
use crate::scope::{TurnScope, UsageCell};
use crate::settings::TurnSettings;
use crate::tool::{Allowlist, EventSink, ToolOutput};
use crate::transcript::{Message, ToolCall};
use crate::turn::{client_id, Response, Turn, TurnSetup, CANCELLED_RESULT, MAX_TURNS_RESULT};
use crate::turn_spans::trace_turn;

/// The result of a call the model asked for that no `execute_tool_calls` task ran before the
/// chain went on without it or ended.
pub const NOT_EXECUTED_RESULT: &str = "not executed: the chain went on without running this call";

/// A chain task's `value` in events is cut here (a tool's result can be large).
const EVENT_VALUE_MAX: usize = 4096;

/// How many of the last tasks the step limit's message names.
const TRAIL: usize = 6;

/// The field a task's prompt comes from, as errors name it.
const PROMPT: &str = "prompt_template";

/// What a task leaves for the next ones.
#[derive(Debug, Clone, Default)]
struct Output {
    /// Its text: a model's reply, a tool's result, a rendered prompt, the input passed on.
    text: String,
    /// Whether it stands for the conversation (a chat task's reply, executed tool calls): a
    /// chat task reading it continues the conversation instead of sending it as a new prompt.
    chat: bool,
}

impl Output {
    fn text(text: impl Into<String>) -> Output {
        Output {
            text: text.into(),
            chat: false,
        }
    }
}

/// How a task ended when it did not end well.
enum Stop {
    /// It failed: `on_failure` decides, else the chain ends with this error.
    Failed(String),
    /// `raise_error`: the chain ends with this error.
    Raised(String),
    /// The turn was cancelled.
    Cancelled,
    /// The client's `max_turns` model responses were used up.
    MaxTurns,
    /// A size cap of the chain ([`super::Limits`]) was reached: the chain ends with this
    /// error, never routed to `on_failure` nor retried (the same step would reach it again).
    Limit(String),
}

/// A task that ended well: what it leaves and the value its branches are matched against.
struct Done {
    output: Output,
    value: String,
}

/// A model's calls waiting for an `execute_tool_calls` task (not in the conversation yet, so
/// the transcript never holds a call without a result).
struct Pending {
    /// The chat task that made them.
    task: usize,
    text: String,
    /// The reply's reasoning (see `Message::assistant_with`).
    extra: Vec<(usize, crate::transcript::Part)>,
    calls: Vec<ToolCall>,
}

/// Run `chain` on `inner`'s conversation as one turn.
pub(crate) async fn run_chain(
    inner: Arc<ClientState>,
    chain: Arc<Chain>,
    input: String,
    setup: TurnSetup,
    cancel: CancellationToken,
    sink: EventSink,
) -> TurnResult {
    let _one_at_a_time = inner.lock_turn().await;
    let sink = trace_turn(&inner, sink, None, setup.trace_parent);
    sink.emit(Event::TurnStart {
        prompt: input.clone(),
    });
    // Remote hooks that were down are probed first, so what came up is offered to the chain.
    inner.sources().before_turn(&cancel).await;
    let mut run = ChainRun {
        inner: &inner,
        chain: &chain,
        run_allow: setup.allow.as_ref(),
        max_turns: setup.max_turns,
        settings: setup.settings,
        // A host's own run: the client's gate only, as for a turn of its own.
        scope: TurnScope::root(client_id(&inner), inner.clone()),
        cancel: &cancel,
        sink: &sink,
        input: Output::text(input),
        outputs: HashMap::new(),
        previous: None,
        pending: None,
        edges: HashMap::new(),
        responses: 0,
        history: 0,
        usage: Usage::default(),
        final_text: String::new(),
    };
    let (outcome, error) = run.tasks().await;
    let leftover = match outcome {
        Outcome::Cancelled => CANCELLED_RESULT,
        Outcome::MaxTurns => MAX_TURNS_RESULT,
        _ => NOT_EXECUTED_RESULT,
    };
    run.flush_pending(leftover);
    let (final_text, usage) = (run.final_text.clone(), run.usage);
    sink.emit(Event::TurnEnd {
        outcome,
        final_text: final_text.clone(),
        usage,
        error: error.clone(),
    });
    TurnResult {
        outcome,
        final_text,
        usage,
        error,
        // A chain branches on its replies; a reply that stopped short shows as its `stop`
        // event and the chat task's value.
        stop_reason: None,
        // A chain's answer is its last task's text: it has no output schema.
        output: None,
        checkpoint: None,
        pending: Vec::new(),
        transcript: inner.transcript(),
    }
}

struct ChainRun<'a> {
    inner: &'a Arc<ClientState>,
    chain: &'a Chain,
    run_allow: Option<&'a Allowlist>,
    /// The run's `max_turns` (replaces the client's, as for a turn).
    max_turns: Option<u32>,
    /// The run's model settings (over the client's, as for a turn).
    settings: Option<TurnSettings>,
    /// The gates the chain's calls pass (its tasks' turns run in it).
    scope: TurnScope,
    cancel: &'a CancellationToken,
    sink: &'a EventSink,
    input: Output,
    /// Each task's last output, by task index.
    outputs: HashMap<usize, Output>,
    /// The output of the task that ran last.
    previous: Option<Output>,
    pending: Option<Pending>,
    /// How often each edge (from, to) was taken.
    edges: HashMap<(usize, usize), u64>,
    /// Model responses so far (bounded by `max_turns`, as a turn's).
    responses: u32,
    /// Bytes this run added to the conversation (bounded by `max_history_bytes`).
    history: usize,
    usage: Usage,
    /// The output text of the last task that ended well.
    final_text: String,
}

impl ChainRun<'_> {
    /// Run tasks from the first until the chain ends; the outcome and, for `error`, why.
    async fn tasks(&mut self) -> (Outcome, Option<String>) {
        let mut current: Goto = Some(0);
        let mut steps = 0u32;
        // The last tasks that ran, for the step limit's message (not every step: a million).
        let mut trail: VecDeque<usize> = VecDeque::with_capacity(TRAIL + 1);
        let chain = self.chain;
        if let Err(message) = limits::check(
            "input",
            "the chain's input",
            self.input.text.len(),
            chain.limits.variable_bytes,
            "max_variable_bytes",
        ) {
            return (
                Outcome::Error,
                Some(message.replacen("task \"input\": ", "", 1)),
            );
        }
        while let Some(i) = current {
            if self.cancel.is_cancelled() {
                return (Outcome::Cancelled, None);
            }
            if steps >= chain.max_steps {
                return (Outcome::Error, Some(self.step_limit(&trail)));
            }
            steps += 1;
            trail.push_back(i);
            if trail.len() > TRAIL {
                trail.pop_front();
            }
            let task = &chain.tasks[i];
            self.sink.emit(Event::ChainTaskStart {
                task_id: task.id.clone(),
                handler: task.handler_name.clone(),
            });
            let end =
                |value: Option<&str>, next: Goto, error: Option<String>| Event::ChainTaskEnd {
                    task_id: task.id.clone(),
                    handler: task.handler_name.clone(),
                    value: value.map(|v| cut(v, EVENT_VALUE_MAX)),
                    next: next.map(|n| chain.tasks[n].id.clone()),
                    error,
                };
            let result = self.attempts(i).await;
            // What a task leaves is a variable of the chain: capped like one.
            let kept = match &result {
                Ok(Done { output, .. }) => Some(("its output", output.text.len())),
                Err(Stop::Failed(message)) if task.on_failure.is_some() => {
                    Some(("its failure's message", message.len()))
                }
                _ => None,
            };
            let result = match kept.map(|(what, len)| {
                limits::check(
                    &task.id,
                    what,
                    len,
                    chain.limits.variable_bytes,
                    "max_variable_bytes",
                )
            }) {
                Some(Err(message)) => Err(Stop::Limit(message)),
                _ => result,
            };
            let next = match result {
                Ok(Done { output, value }) => {
                    self.final_text = output.text.clone();
                    self.keep(i, output);
                    match choose(task, &value, &|from, to| self.edge_count(from, to)) {
                        Ok(next) => {
                            self.sink.emit(end(Some(&value), next, None));
                            next
                        }
                        Err(message) => {
                            self.sink
                                .emit(end(Some(&value), None, Some(message.clone())));
                            return (Outcome::Error, Some(message));
                        }
                    }
                }
                Err(Stop::Failed(message)) => match task.on_failure {
                    Some(handler) => {
                        // The failure's message is what the handler task reads as its input.
                        self.keep(i, Output::text(message.clone()));
                        self.sink.emit(end(None, Some(handler), Some(message)));
                        Some(handler)
                    }
                    None => {
                        self.sink.emit(end(None, None, Some(message.clone())));
                        return (
                            Outcome::Error,
                            Some(format!("task {:?} failed: {message}", task.id)),
                        );
                    }
                },
                Err(Stop::Raised(message)) | Err(Stop::Limit(message)) => {
                    self.sink.emit(end(None, None, Some(message.clone())));
                    return (Outcome::Error, Some(message));
                }
                Err(Stop::Cancelled) => {
                    self.sink
                        .emit(end(None, None, Some(CANCELLED_RESULT.to_string())));
                    return (Outcome::Cancelled, None);
                }
                Err(Stop::MaxTurns) => {
                    self.sink
                        .emit(end(None, None, Some(MAX_TURNS_RESULT.to_string())));
                    return (Outcome::MaxTurns, None);
                }
            };
            if let Some(n) = next {
                *self.edges.entry((i, n)).or_default() += 1;
            }
            current = next;
        }
        (Outcome::Done, None)
    }

    fn step_limit(&self, trail: &VecDeque<usize>) -> String {
        let last: Vec<&str> = trail
            .iter()
            .map(|i| self.chain.tasks[*i].id.as_str())
            .collect();
        format!(
            "chain {:?} stopped after {} tasks without reaching \"end\" (its step limit, \
             max_steps); the last ran {} -> ... (a loop with no way out?)",
            self.chain.id,
            self.chain.max_steps,
            last.join(" -> ")
        )
    }

    fn edge_count(&self, from: &str, to: &str) -> u64 {
        let index = |id: &str| self.chain.tasks.iter().position(|t| t.id == id);
        match (index(from), index(to)) {
            (Some(f), Some(t)) => self.edges.get(&(f, t)).copied().unwrap_or(0),
            _ => 0,
        }
    }

    fn keep(&mut self, task: usize, output: Output) {
        self.outputs.insert(task, output.clone());
        self.previous = Some(output);
    }

    /// Run task `i`, again on failure as often as its `retry_on_failure` says, each attempt
    /// bounded by its `timeout`.
    async fn attempts(&mut self, i: usize) -> Result<Done, Stop> {
        let task = &self.chain.tasks[i];
        let retries = task.retries;
        let mut attempt = 0;
        loop {
            let result = self.attempt(i).await;
            match result {
                Err(Stop::Failed(_)) if attempt < retries && !self.cancel.is_cancelled() => {
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    async fn attempt(&mut self, i: usize) -> Result<Done, Stop> {
        let Some(limit) = self.chain.tasks[i].timeout else {
            let cancel = self.cancel.clone();
            return self.run_task(i, &cancel).await;
        };
        // A timeout cancels the task's own token: running tools and model requests stop as
        // on a cancel (tool calls get their results), then the task fails.
        let task_cancel = self.cancel.child_token();
        let timer = {
            let t = task_cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(limit).await;
                t.cancel();
            })
        };
        let result = self.run_task(i, &task_cancel).await;
        timer.abort();
        if task_cancel.is_cancelled() && !self.cancel.is_cancelled() {
            return Err(Stop::Failed(format!("timed out after {}", humane(limit))));
        }
        result
    }

    /// The task's input: its `input_var`, else what the task before it left.
    fn input_of(&self, task: &Task) -> Output {
        let mut input = match task.input_var.as_deref() {
            Some("input") => self.input.clone(),
            Some(id) => self
                .chain
                .tasks
                .iter()
                .position(|t| t.id == id)
                .and_then(|i| self.outputs.get(&i).cloned())
                .unwrap_or_default(),
            None => self.previous.clone().unwrap_or_else(|| self.input.clone()),
        };
        if let Some(max) = task.input_max_bytes {
            if input.text.len() > max {
                let mut end = max;
                while !input.text.is_char_boundary(end) {
                    end -= 1;
                }
                input.text.truncate(end);
            }
        }
        input
    }

    async fn run_task(&mut self, i: usize, cancel: &CancellationToken) -> Result<Done, Stop> {
        let chain = self.chain;
        let task = &chain.tasks[i];
        let input = self.input_of(task);
        match task.handler {
            Handler::ChatCompletion => self.chat(i, input, cancel).await,
            Handler::ExecuteToolCalls => self.execute(i, cancel).await,
            Handler::Tools => self.direct_call(i, cancel).await,
            Handler::Noop => Ok(Done {
                value: input.text.clone(),
                output: input,
            }),
            Handler::PromptToString => {
                let text = self.render(task, task.prompt.as_ref(), PROMPT, cancel)?;
                let text = text.unwrap_or_default();
                Ok(Done {
                    value: text.clone(),
                    output: Output::text(text),
                })
            }
            Handler::RaiseError => {
                let text = self.render(task, task.prompt.as_ref(), PROMPT, cancel)?;
                let message = text.unwrap_or(input.text);
                Err(Stop::Raised(if message.trim().is_empty() {
                    format!("task {:?} raised an error", task.id)
                } else {
                    message
                }))
            }
        }
    }

    /// The tool filter of a task: its allowlist over tool names and the names of their hooks.
    fn narrow<'t>(&self, tasks: &'t [&'t Task]) -> impl Fn(&str) -> bool + Sync + 't {
        let servers: HashMap<String, Option<String>> = self
            .inner
            .toolkit()
            .names_and_servers()
            .into_iter()
            .collect();
        move |name: &str| {
            let server = servers.get(name).and_then(|s| s.as_deref());
            tasks.iter().all(|t| t.tools.sees(name, server))
        }
    }

    fn turn<'t>(
        &'t self,
        narrow: &'t (dyn Fn(&str) -> bool + Sync),
        cancel: &'t CancellationToken,
    ) -> Turn<'t> {
        Turn {
            inner: self.inner,
            run_allow: self.run_allow,
            narrow: Some(narrow),
            max_turns: self.max_turns,
            settings: self.settings.as_ref(),
            report_to: None,
            cancel,
            sink: self.sink,
            scope: self.scope.clone(),
            output: None,
            output_retries: 0,
            // A chain's calls do not suspend (a `{"suspend": true}` answer denies).
            durable: None,
            stepped: None,
        }
    }

    /// Expand `template` for `task` (`None` when there is none), its `field` named when it
    /// would pass the chain's `max_template_bytes`.
    fn render(
        &self,
        task: &Task,
        template: Option<&Template>,
        field: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, Stop> {
        let Some(template) = template else {
            return Ok(None);
        };
        let tasks = [task];
        let narrow = self.narrow(&tasks);
        let turn = self.turn(&narrow, cancel);
        let scope = TaskScope {
            run: self,
            task,
            visible: self.visible(&turn),
        };
        self.expand(task, template, &scope, field).map(Some)
    }

    /// `template` rendered within the chain's `max_template_bytes`.
    fn expand(
        &self,
        task: &Task,
        template: &Template,
        scope: &dyn Scope,
        field: &str,
    ) -> Result<String, Stop> {
        let max = self.chain.limits.template_bytes;
        template.render(scope, max).map_err(|e| match e {
            RenderError::Unbound(message) => Stop::Failed(message),
            RenderError::TooLong { at_least } => Stop::Limit(
                limits::check(
                    &task.id,
                    &format!("its {field} rendered"),
                    at_least,
                    max,
                    "max_template_bytes",
                )
                .expect_err("past the cap")
                .replacen(" is ", " is at least ", 1),
            ),
        })
    }

    /// Add `messages` to the conversation for `task`, within the chain's `max_history_bytes`.
    fn append(&mut self, task: &Task, messages: Vec<Message>) -> Result<(), Stop> {
        let grown = self.history.saturating_add(history_bytes(&messages));
        limits::check(
            &task.id,
            "what the run added to the conversation",
            grown,
            self.chain.limits.history_bytes,
            "max_history_bytes",
        )
        .map_err(Stop::Limit)?;
        self.history = grown;
        self.inner.append(messages);
        Ok(())
    }

    /// The tools `turn` may offer now, with their servers.
    fn visible(&self, turn: &Turn<'_>) -> Vec<(String, Option<String>)> {
        self.inner
            .toolkit()
            .names_and_servers()
            .into_iter()
            .filter(|(name, _)| turn.allowed(name))
            .collect()
    }

    async fn chat(
        &mut self,
        i: usize,
        input: Output,
        cancel: &CancellationToken,
    ) -> Result<Done, Stop> {
        // The same ceiling as a turn's: the run's `max_turns`, the client's, the policy's.
        let unnarrowed = |_: &str| true;
        if self.responses >= self.turn(&unnarrowed, cancel).ceilings().max_turns {
            return Err(Stop::MaxTurns);
        }
        // Calls of an earlier chat task nobody executed get their results first: the model
        // must see a conversation where every call has one.
        self.flush_pending(NOT_EXECUTED_RESULT);
        let chain = self.chain;
        let task = &chain.tasks[i];
        let system = self.render(task, task.system.as_ref(), "system_instruction", cancel)?;
        let prompt = match self.render(task, task.prompt.as_ref(), PROMPT, cancel)? {
            Some(p) => Some(p),
            None if !input.chat => Some(input.text),
            None => None,
        };
        if let Some(p) = prompt.filter(|p| !p.is_empty()) {
            self.append(task, vec![Message::user(p)])?;
        }
        let tasks = [task];
        let narrow = self.narrow(&tasks);
        let turn = self.turn(&narrow, cancel);
        let system = system.or_else(|| self.inner.config().system.clone());
        let mut spent = Usage::default();
        let response = turn
            .respond(
                self.responses,
                system.as_deref(),
                task.model.as_deref(),
                &mut spent,
                None,
            )
            .await;
        // Counted whatever the answer: a failed request (or its compaction) still cost this.
        self.usage.add(spent);
        match response {
            Response::Answer {
                text, calls, extra, ..
            } => {
                self.responses += 1;
                let value = if calls.is_empty() {
                    self.append(
                        task,
                        vec![Message::assistant_with(text.clone(), Vec::new(), extra)],
                    )?;
                    "stop"
                } else {
                    self.pending = Some(Pending {
                        task: i,
                        text: text.clone(),
                        calls,
                        extra,
                    });
                    "tool-call"
                };
                Ok(Done {
                    output: Output { text, chat: true },
                    value: value.to_string(),
                })
            }
            Response::Cancelled if self.cancel.is_cancelled() => Err(Stop::Cancelled),
            Response::Cancelled => Err(Stop::Failed(CANCELLED_RESULT.into())),
            Response::Failed(message) => Err(Stop::Failed(message)),
        }
    }

    /// `execute_tool_calls`: the calls of the chat task `input_var` names (or of the last
    /// chat task), through the gate, seen through that task's allowlist and this one's.
    async fn execute(&mut self, i: usize, cancel: &CancellationToken) -> Result<Done, Stop> {
        let chain = self.chain;
        let task = &chain.tasks[i];
        let wanted = task
            .input_var
            .as_deref()
            .map(|id| self.chain.tasks.iter().position(|t| t.id == id));
        let matches = match (&self.pending, wanted) {
            (Some(_), None) => true,
            (Some(p), Some(w)) => Some(p.task) == w,
            (None, _) => false,
        };
        if !matches {
            return Ok(Done {
                output: Output {
                    text: String::new(),
                    chat: true,
                },
                value: "no_calls_found".into(),
            });
        }
        // Cannot fail: `matches` is true only when `pending` is Some.
        let pending = self.pending.take().expect("matched above");
        let chat_task = &chain.tasks[pending.task];
        let tasks = [chat_task, task];
        let narrow = self.narrow(&tasks);
        let turn = self.turn(&narrow, cancel);
        let mut step = Vec::with_capacity(pending.calls.len() + 1);
        step.push(Message::assistant_with(
            pending.text,
            pending.calls.clone(),
            pending.extra,
        ));
        let mut texts = Vec::with_capacity(pending.calls.len());
        // What the calls spent on models (a subagent's turn) is the chain's too.
        let mut spent_on_calls = Usage::default();
        for call in &pending.calls {
            let cell = UsageCell::default();
            let out = if cancel.is_cancelled() {
                ToolOutput::error(CANCELLED_RESULT)
            } else {
                turn.handle_call(call, &cell).await
            };
            texts.push(out.content_text());
            let spent = Some(cell.get()).filter(|u| !u.is_zero());
            spent_on_calls.add(spent.unwrap_or_default());
            step.push(turn.result_message(call, out, spent));
        }
        self.usage.add(spent_on_calls);
        self.append(task, step)?;
        if self.cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        if cancel.is_cancelled() {
            return Err(Stop::Failed(CANCELLED_RESULT.into()));
        }
        Ok(Done {
            output: Output {
                text: texts.join("\n"),
                chat: true,
            },
            value: "tools_executed".into(),
        })
    }

    /// `tools` / `hook`: one named tool, called directly (no model), through the gate.
    async fn direct_call(&mut self, i: usize, cancel: &CancellationToken) -> Result<Done, Stop> {
        let chain = self.chain;
        let task = &chain.tasks[i];
        // Cannot fail: parsing refuses a tools task without its call.
        let call = task
            .call
            .as_ref()
            .expect("a tools task has its call (checked on read)");
        let name = self.resolve_tool(call).map_err(Stop::Failed)?;
        let mut args = Value::Object(call.args.clone());
        if !call.arg_templates.is_empty() {
            let tasks = [task];
            let narrow = self.narrow(&tasks);
            let turn = self.turn(&narrow, cancel);
            let scope = TaskScope {
                run: self,
                task,
                visible: self.visible(&turn),
            };
            for (pointer, template) in &call.arg_templates {
                let field = format!("tools.args{pointer}");
                let text = self.expand(task, template, &scope, &field)?;
                if let Some(slot) = args.pointer_mut(pointer) {
                    *slot = Value::String(text);
                }
            }
        }
        if let Some(entry) = self.inner.toolkit().lookup(&name, &|_| true) {
            coerce_to_schema(&mut args, &entry.spec.input_schema);
        }
        let tool_call = ToolCall {
            id: self.inner.next_call_id(),
            name,
            arguments: args,
            raw_arguments: false,
            via: None,
        };
        self.sink.emit(Event::ToolCall {
            call_id: tool_call.id.clone(),
            name: tool_call.name.clone(),
            arguments: tool_call.arguments.clone(),
            agent: Vec::new(),
        });
        let tasks = [task];
        let narrow = self.narrow(&tasks);
        let turn = self.turn(&narrow, cancel);
        let cell = UsageCell::default();
        let out = turn.handle_call(&tool_call, &cell).await;
        let (is_error, text) = (out.is_error, out.content_text());
        let spent = Some(cell.get()).filter(|u| !u.is_zero());
        // The call is the chain's, not the model's: its result is reported, not added to the
        // conversation.
        let _ = turn.result_message(&tool_call, out, spent);
        self.usage.add(spent.unwrap_or_default());
        if self.cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        if is_error {
            return Err(Stop::Failed(text));
        }
        Ok(Done {
            value: text.clone(),
            output: Output::text(text),
        })
    }

    /// The registered tool a direct call means: `tool_name` of the hook / MCP server
    /// `provider` (MCP names its tools `<server>__<tool>`), or the tool named `provider`.
    fn resolve_tool(&self, call: &super::parse::DirectCall) -> Result<String, String> {
        let all = self.inner.toolkit().names_and_servers();
        let provider = call.provider.as_str();
        let of_provider: Vec<&String> = all
            .iter()
            .filter(|(_, s)| s.as_deref() == Some(provider))
            .map(|(n, _)| n)
            .collect();
        let want = call.tool_name.as_deref().unwrap_or(provider);
        let prefixed = format!("{provider}__{want}");
        if let Some(n) = of_provider
            .iter()
            .find(|n| n.as_str() == want || n.as_str() == prefixed)
        {
            return Ok(n.to_string());
        }
        if !of_provider.is_empty() {
            let names: Vec<&str> = of_provider.iter().take(30).map(|s| s.as_str()).collect();
            return Err(format!(
                "{provider:?} has no tool {want:?} (its tools: {})",
                names.join(", ")
            ));
        }
        if all.iter().any(|(n, _)| n == want) && (call.tool_name.is_none() || provider == want) {
            return Ok(want.to_string());
        }
        Err(format!(
            "{provider:?} is not a hook, MCP server or tool of this client{}",
            if all.iter().any(|(n, _)| n == want) {
                format!(" (a tool {want:?} exists: name it as the provider)")
            } else {
                String::new()
            }
        ))
    }

    /// Give the pending calls (if any) `reason` as their results and add them to the
    /// conversation.
    fn flush_pending(&mut self, reason: &str) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let never = |_: &str| true;
        let turn = self.turn(&never, self.cancel);
        let mut step = Vec::with_capacity(pending.calls.len() + 1);
        step.push(Message::assistant_with(
            pending.text,
            pending.calls.clone(),
            pending.extra,
        ));
        for call in &pending.calls {
            step.push(turn.result_message(call, ToolOutput::error(reason), None));
        }
        self.inner.append(step);
    }
}

/// The first branch that matches `value`; no branches at all = the end.
fn choose(task: &Task, value: &str, edges: &dyn Fn(&str, &str) -> u64) -> Result<Goto, String> {
    if task.branches.is_empty() {
        return Ok(None);
    }
    task.branches
        .iter()
        .find(|b| b.operator.matches(value, edges))
        .map(|b| b.goto)
        .ok_or_else(|| {
            format!(
                "no branch of task {:?} matches its value {:?} (add a \"default\" branch)",
                task.id,
                cut(value, 200)
            )
        })
}

/// A chain writes every argument as a string; a top-level string whose parameter the tool
/// declares as an integer, a number or a boolean (and not as a string) is passed as that, when
/// it reads as one. Anything else is left for the tool's schema check to judge.
fn coerce_to_schema(args: &mut Value, schema: &Value) {
    let (Some(args), Some(props)) = (
        args.as_object_mut(),
        schema.get("properties").and_then(Value::as_object),
    ) else {
        return;
    };
    for (key, value) in args.iter_mut() {
        let Some(text) = value.as_str() else { continue };
        let types: Vec<&str> = match props.get(key).and_then(|p| p.get("type")) {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        if types.contains(&"string") {
            continue;
        }
        let text = text.trim();
        let parsed = if types.contains(&"integer") {
            text.parse::<i64>().ok().map(Value::from)
        } else {
            None
        }
        .or_else(|| {
            types
                .contains(&"number")
                .then(|| text.parse::<f64>().ok().filter(|n| n.is_finite()))
                .flatten()
                .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
        })
        .or_else(|| {
            types
                .contains(&"boolean")
                .then(|| text.parse::<bool>().ok().map(Value::Bool))
                .flatten()
        });
        if let Some(v) = parsed {
            *value = v;
        }
    }
}

fn humane(d: std::time::Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{} s", d.as_secs_f64())
    }
}

/// What a task's templates expand with.
struct TaskScope<'a, 'r> {
    run: &'a ChainRun<'r>,
    task: &'a Task,
    visible: Vec<(String, Option<String>)>,
}

impl Scope for TaskScope<'_, '_> {
    fn var(&self, name: &str) -> String {
        if name == "input" {
            return self.run.input.text.clone();
        }
        self.run
            .chain
            .tasks
            .iter()
            .position(|t| t.id == name)
            .and_then(|i| self.run.outputs.get(&i))
            .map(|o| o.text.clone())
            .unwrap_or_default()
    }

    fn tool_names(&self) -> Vec<String> {
        self.visible.iter().map(|(n, _)| n.clone()).collect()
    }

    fn hook_names(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        self.visible
            .iter()
            .filter_map(|(_, s)| s.clone())
            .filter(|s| seen.insert(s.clone()))
            .collect()
    }

    fn tools_of(&self, hook: &str) -> Vec<String> {
        self.visible
            .iter()
            .filter(|(_, s)| s.as_deref() == Some(hook))
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn chain_var(&self, name: &str) -> Option<String> {
        let config = self.run.inner.config();
        match name {
            "model" => self.task.model.clone().or_else(|| config.model.clone()),
            "provider" => serde_json::to_value(config.style)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string)),
            "chain" => Some(self.run.chain.id.clone()),
            _ => None,
        }
    }
}
