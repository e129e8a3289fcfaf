//! One turn: model request, tool calls through the gate, results, next request, until the model
//! answers, the turn is cancelled, it fails, or it reaches `max_turns`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::client_state::ClientState;
use crate::event::{Event, GateVerdict, Outcome, TurnResult, Usage};
use crate::gate::{Answer, Decision, ToolCallEvent, ASK_TIMEOUT_DENIAL, DEFAULT_DENIAL};
use crate::model::{complete_with_retry, ModelRequest, RawCall};
use crate::policy::{self, Budget, Ceilings};
use crate::tool::{
    allowed_by, Allowlist, CallTool, Entry, EventSink, ToolContext, ToolOutput, CALL_TOOL,
};
use crate::transcript::{Message, ToolCall};

/// The result text of a call cut off by a cancel.
pub const CANCELLED_RESULT: &str = "cancelled";
/// The result text of a call left unexecuted at `max_turns`.
pub const MAX_TURNS_RESULT: &str = "max_turns reached";

/// Run one turn on `inner`'s conversation.
pub(crate) async fn run_turn(
    inner: Arc<ClientState>,
    prompt: String,
    run_allow: Option<Allowlist>,
    cancel: CancellationToken,
    sink: EventSink,
) -> TurnResult {
    // Queued behind a running turn: a cancel while waiting (or before) ends this turn without
    // touching the conversation.
    let queued = tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        guard = inner.lock_turn() => Some(guard).filter(|_| !cancel.is_cancelled()),
    };
    let Some(_one_at_a_time) = queued else {
        return cancelled_before_start(&inner, prompt, &sink);
    };
    let turn = Turn {
        inner: &inner,
        run_allow: run_allow.as_ref(),
        narrow: None,
        cancel: &cancel,
        sink: &sink,
    };
    sink.emit(Event::TurnStart {
        prompt: prompt.clone(),
    });
    inner.append([Message::User { content: prompt }]);
    // Sources that asked for it (a remote hook that was down) are probed before the first
    // request, so what came up is offered in it.
    inner.before_turn().run(&cancel).await;
    let TurnEnd {
        outcome,
        final_text,
        usage,
        error,
    } = turn.steps().await;
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
        transcript: inner.transcript(),
    }
}

/// How the step loop ended: what the turn's `turn_end` event and result report.
struct TurnEnd {
    outcome: Outcome,
    /// The text of the last model response.
    final_text: String,
    /// Usage summed over the turn's model responses.
    usage: Usage,
    /// What went wrong, for outcome `error`; which ceiling, for outcome `budget`.
    error: Option<String>,
}

impl TurnEnd {
    fn new(outcome: Outcome, final_text: String, usage: Usage) -> Self {
        TurnEnd {
            outcome,
            final_text,
            usage,
            error: None,
        }
    }
}

/// A turn cancelled before it began: `turn_start` and `turn_end` (cancelled) as for any turn, and
/// the conversation unchanged (the prompt is not appended).
fn cancelled_before_start(inner: &ClientState, prompt: String, sink: &EventSink) -> TurnResult {
    sink.emit(Event::TurnStart { prompt });
    sink.emit(Event::TurnEnd {
        outcome: Outcome::Cancelled,
        final_text: String::new(),
        usage: Usage::default(),
        error: None,
    });
    TurnResult {
        outcome: Outcome::Cancelled,
        final_text: String::new(),
        usage: Usage::default(),
        error: None,
        transcript: inner.transcript(),
    }
}

/// One turn's view of a client: what it may call, its cancel, where its events go. Task chains
/// (`crate::chain`) run their tasks through the same pieces, each task with its own `narrow`.
pub(crate) struct Turn<'a> {
    pub inner: &'a ClientState,
    pub run_allow: Option<&'a Allowlist>,
    /// A further narrowing by tool name (a chain task's allowlist); `None` narrows nothing.
    pub narrow: Option<&'a (dyn Fn(&str) -> bool + Sync)>,
    pub cancel: &'a CancellationToken,
    pub sink: &'a EventSink,
}

/// What one model request came back with.
pub(crate) enum Response {
    /// The model answered: its text, its calls (ids given, arguments parsed, `call_tool`
    /// unwrapped) and the usage of the request.
    Answer {
        text: String,
        calls: Vec<ToolCall>,
        usage: Usage,
    },
    /// The turn was cancelled before the answer came.
    Cancelled,
    /// The request failed for good (after retries).
    Failed(String),
}

impl Turn<'_> {
    pub(crate) fn allowed(&self, name: &str) -> bool {
        allowed_by(self.inner.allow(), self.run_allow, name) && self.narrow.is_none_or(|n| n(name))
    }

    /// Send the conversation to the model with the tools this turn may offer now; emits
    /// `request`, `text_delta`, `usage`, `text` and `tool_call`. `index` counts the turn's model
    /// responses; `system` and `model` are this request's (a chain task may set its own).
    pub(crate) async fn respond(
        &self,
        index: u32,
        system: Option<&str>,
        model: Option<&str>,
    ) -> Response {
        let inner = self.inner;
        let allowed = |n: &str| self.allowed(n);
        let tools = inner.toolkit().offered(&allowed);
        let body = inner.with_messages(|messages| {
            inner.backend().body(&ModelRequest {
                system,
                model,
                messages,
                tools: &tools,
            })
        });
        let call_tool_offered = tools.iter().any(|t| t.name == CALL_TOOL);
        drop(tools);
        let response = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Response::Cancelled,
            r = complete_with_retry(inner.backend(), &body, &inner.config().retry, self.sink, index) => r,
        };
        let response = match response {
            Ok(r) => r,
            Err(message) => return Response::Failed(message),
        };
        self.sink.emit(Event::Usage {
            usage: response.usage,
        });
        if !response.text.is_empty() {
            self.sink.emit(Event::Text {
                text: response.text.clone(),
            });
        }
        let calls = self.parse_calls(response.calls, call_tool_offered);
        for c in &calls {
            self.sink.emit(Event::ToolCall {
                call_id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            });
        }
        Response::Answer {
            text: response.text,
            calls,
            usage: response.usage,
        }
    }

    async fn steps(&self) -> TurnEnd {
        let inner = self.inner;
        let mut usage = Usage::default();
        let mut final_text = String::new();
        let mut index = 0u32;
        let mut budget = Budget::default();
        loop {
            let (text, calls, used) = match self
                .respond(index, inner.config().system.as_deref(), None)
                .await
            {
                Response::Answer { text, calls, usage } => (text, calls, usage),
                Response::Cancelled => return TurnEnd::new(Outcome::Cancelled, final_text, usage),
                Response::Failed(message) => {
                    return TurnEnd {
                        error: Some(message),
                        ..TurnEnd::new(Outcome::Error, final_text, usage)
                    }
                }
            };
            index += 1;
            usage.add(used);
            final_text = text.clone();
            let mut step = Vec::with_capacity(calls.len() + 1);
            step.push(Message::Assistant {
                content: text,
                tool_calls: calls.clone(),
            });
            if calls.is_empty() {
                inner.append(step);
                return TurnEnd::new(Outcome::Done, final_text, usage);
            }
            // The ceilings of the policy in force now (set_policy applies mid-turn).
            let ceilings = Ceilings::of(inner.config(), inner.policy().as_deref());
            let at_limit = index >= ceilings.max_turns;
            let spend = budget.spend(calls.len(), used, &ceilings);
            for (i, c) in calls.iter().enumerate() {
                let out = if at_limit {
                    ToolOutput::error(MAX_TURNS_RESULT)
                } else if let Some(e) = spend.exhausted.filter(|_| i >= spend.run) {
                    ToolOutput::error(e.result_text())
                } else if self.cancel.is_cancelled() {
                    ToolOutput::error(CANCELLED_RESULT)
                } else {
                    self.handle_call(c).await
                };
                step.push(self.result_message(c, out));
            }
            inner.append(step);
            if at_limit {
                return TurnEnd::new(Outcome::MaxTurns, final_text, usage);
            }
            if let Some(e) = spend.exhausted {
                return TurnEnd {
                    error: Some(e.to_string()),
                    ..TurnEnd::new(Outcome::Budget, final_text, usage)
                };
            }
            if self.cancel.is_cancelled() {
                return TurnEnd::new(Outcome::Cancelled, final_text, usage);
            }
        }
    }

    /// Give every call an id, parse its arguments, and unwrap `call_tool`.
    pub(crate) fn parse_calls(&self, raw: Vec<RawCall>, call_tool_offered: bool) -> Vec<ToolCall> {
        let mut calls: Vec<ToolCall> = Vec::with_capacity(raw.len());
        for r in raw {
            let id = match r.id.filter(|id| !id.is_empty()) {
                Some(id) if !calls.iter().any(|c| c.id == id) => id,
                _ => self.inner.next_call_id(),
            };
            let text = r.arguments.trim();
            let (arguments, raw_arguments) = if text.is_empty() {
                (Value::Object(Default::default()), false)
            } else {
                match serde_json::from_str::<Value>(text) {
                    Ok(v) => (v, false),
                    Err(_) => (Value::String(r.arguments.clone()), true),
                }
            };
            let mut call = ToolCall {
                id,
                name: r.name,
                arguments,
                raw_arguments,
                via: None,
            };
            if call_tool_offered && call.name == CALL_TOOL && !call.raw_arguments {
                if let Some((name, args)) = CallTool::unwrap(&call.arguments) {
                    call.raw_arguments = args.is_string();
                    call.name = name;
                    call.arguments = args;
                    call.via = Some(CALL_TOOL.to_string());
                }
            }
            calls.push(call);
        }
        calls
    }

    /// Emit `tool_result` for `out` and make it the call's result message.
    pub(crate) fn result_message(&self, call: &ToolCall, out: ToolOutput) -> Message {
        let content = out.model_text();
        self.sink.emit(Event::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.clone(),
            is_error: out.is_error,
            metadata: out.metadata,
        });
        Message::Tool {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error: out.is_error,
        }
    }

    /// Check one call, pass it through the gate, and run it.
    pub(crate) async fn handle_call(&self, call: &ToolCall) -> ToolOutput {
        let allowed = |n: &str| self.allowed(n);
        if call.name == CALL_TOOL && call.via.is_none() {
            return self.call_tool_search(call);
        }
        let Some(entry) = self.inner.toolkit().lookup(&call.name, &allowed) else {
            return ToolOutput::error(self.unknown_tool(&call.name));
        };
        if call.raw_arguments {
            let raw = call.arguments.as_str().unwrap_or_default();
            let why = serde_json::from_str::<Value>(raw)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            return ToolOutput::error(format!(
                "the arguments of {} are not valid JSON ({why}); send a JSON object",
                call.name
            ));
        }
        if !call.arguments.is_object() {
            return ToolOutput::error(format!(
                "the arguments of {} must be a JSON object, got {}",
                call.name, call.arguments
            ));
        }
        if let Err(problems) = entry.validate(&call.arguments) {
            return ToolOutput::error(format!(
                "the arguments of {} do not match its input schema: {problems}",
                call.name
            ));
        }
        let event = ToolCallEvent {
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            call_id: call.id.clone(),
            hints: entry.spec.hints,
            source: entry.source,
            server: entry.server.clone(),
        };
        // The approval policy decides first; the host's before_tool may only narrow.
        let policy = policy::judge(self.inner.policy().as_deref(), &event, self.inner.root());
        let decision = match (policy.denial(), self.inner.hooks()) {
            (Some(denied), _) => Ok(denied),
            (None, None) => policy.narrow(Ok(Decision::Allow)),
            (None, Some(hooks)) => {
                let hook = AssertUnwindSafe(hooks.before_tool(&event)).catch_unwind();
                let host = tokio::select! {
                    biased;
                    _ = self.cancel.cancelled() => return ToolOutput::error(CANCELLED_RESULT),
                    d = hook => d.unwrap_or_else(|_| Err("before_tool panicked".into())),
                };
                policy.narrow(host.map_err(|e| e.to_string()))
            }
        };
        let rule = policy.rule();
        let gate = |decision: GateVerdict, message: Option<String>| {
            self.sink.emit(Event::Gate {
                call_id: event.call_id.clone(),
                name: event.name.clone(),
                decision,
                message,
                hints: event.hints,
                source: event.source,
                rule: rule.clone(),
            })
        };
        match decision {
            Err(e) => {
                let message = format!("before_tool hook failed: {e}");
                gate(GateVerdict::Deny, Some(message.clone()));
                ToolOutput::error(message)
            }
            Ok(Decision::Allow) => {
                gate(GateVerdict::Allow, None);
                self.execute(&entry, &event).await
            }
            Ok(Decision::Deny(message)) => {
                let message = message.unwrap_or_else(|| DEFAULT_DENIAL.to_string());
                gate(GateVerdict::Deny, Some(message.clone()));
                ToolOutput::error(message)
            }
            Ok(Decision::Ask(mut request)) => {
                gate(GateVerdict::Ask, None);
                request.call_id = event.call_id.clone();
                request.name = event.name.clone();
                request.arguments = event.arguments.clone();
                let Some(answer) = self.ask(request).await else {
                    return ToolOutput::error(CANCELLED_RESULT);
                };
                self.sink.emit(Event::Answer {
                    call_id: event.call_id.clone(),
                    name: event.name.clone(),
                    answer: answer.clone(),
                });
                match answer {
                    Answer::Approve => self.execute(&entry, &event).await,
                    Answer::Deny(message) => {
                        ToolOutput::error(message.unwrap_or_else(|| DEFAULT_DENIAL.to_string()))
                    }
                    Answer::Result(value) => ToolOutput::json(value),
                }
            }
        }
    }

    /// Wait for the host's answer; `None` when the turn was cancelled meanwhile.
    async fn ask(&self, request: crate::gate::PendingRequest) -> Option<Answer> {
        self.sink.emit(Event::Pending {
            call_id: request.call_id.clone(),
            name: request.name.clone(),
            request: request.clone(),
        });
        let Some(wait_for) = self.inner.wait_for() else {
            return Some(Answer::deny(
                "The operation needs approval, but the host has no wait_for to ask; it was denied.",
            ));
        };
        let wait_token = self.cancel.child_token();
        let timeout = request.timeout_ms.map(Duration::from_millis);
        let wait = AssertUnwindSafe(wait_for.wait_for(request, wait_token.clone())).catch_unwind();
        let timer = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let answer = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => None,
            _ = timer => Some(Answer::deny(ASK_TIMEOUT_DENIAL)),
            a = wait => Some(match a {
                Ok(Ok(answer)) => answer,
                Ok(Err(e)) => Answer::deny(format!("wait_for failed: {e}")),
                Err(_) => Answer::deny("wait_for panicked"),
            }),
        };
        // The wait is over either way: tell a host still waiting to stop.
        wait_token.cancel();
        answer
    }

    /// Run an allowed call, then `after_tool`.
    async fn execute(&self, entry: &Entry, event: &ToolCallEvent) -> ToolOutput {
        self.sink.emit(Event::ToolStart {
            call_id: event.call_id.clone(),
            name: event.name.clone(),
        });
        let ctx = ToolContext {
            call_id: event.call_id.clone(),
            name: event.name.clone(),
            cancel: self.cancel.clone(),
            root: self.inner.root().clone(),
            events: self.sink.clone(),
            secret_env: self.inner.secret_env().clone(),
        };
        let call = AssertUnwindSafe(entry.tool.call(event.arguments.clone(), ctx)).catch_unwind();
        let output = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return ToolOutput::error(CANCELLED_RESULT),
            r = call => match r {
                Ok(Ok(out)) => out,
                Ok(Err(e)) => ToolOutput::error(e.message),
                Err(_) => ToolOutput::error(format!("the tool {} panicked", event.name)),
            },
        };
        let Some(hooks) = self.inner.hooks() else {
            return output;
        };
        let after = AssertUnwindSafe(hooks.after_tool(event, &output)).catch_unwind();
        let replaced = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return ToolOutput::error(CANCELLED_RESULT),
            r = after => r.unwrap_or_else(|_| Err("after_tool panicked".into())),
        };
        match replaced {
            Ok(Some(new)) => new,
            Ok(None) => output,
            Err(e) => ToolOutput::error(format!("after_tool hook failed: {e}")),
        }
    }

    /// `call_tool` with only `query`: the matching deferred tools and their schemas.
    fn call_tool_search(&self, call: &ToolCall) -> ToolOutput {
        let allowed = |n: &str| self.allowed(n);
        match call.arguments.get("query").and_then(Value::as_str) {
            Some(q) if !call.raw_arguments => {
                let found = self.inner.toolkit().search_deferred(q, &allowed);
                if found.is_empty() {
                    ToolOutput::text(format!("No tool matches {q:?}."))
                } else {
                    ToolOutput::json(CallTool::search_result(&found))
                }
            }
            _ => ToolOutput::error(
                "call_tool needs `name` and `arguments` to call a tool, or `query` to search",
            ),
        }
    }

    fn unknown_tool(&self, name: &str) -> String {
        let allowed = |n: &str| self.allowed(n);
        let names: Vec<String> = self
            .inner
            .toolkit()
            .offered(&allowed)
            .into_iter()
            .map(|s| s.name.clone())
            .take(30)
            .collect();
        if names.is_empty() {
            format!("unknown tool {name:?}: no tools are available")
        } else {
            format!(
                "unknown tool {name:?}; the available tools are: {}",
                names.join(", ")
            )
        }
    }
}
