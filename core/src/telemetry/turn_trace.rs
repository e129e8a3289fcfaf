//! One turn's spans, built from the events the turn emits: the events already say everything a
//! span needs (when a request starts and what it cost, each call's gate verdict and result, a
//! subagent's turn), so the turn's code gains no second set of calls to keep in step.
//!
//! The tree: `invoke_agent` (the turn) → `chat {model}` per model response, `execute_tool
//! {name}` per call, `compact` per compaction (under the chain task span, when a chain runs
//! tasks) → a subagent's `invoke_agent {name}` under its parent's `execute_tool {name}`.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use super::otlp_json::quoted;

use super::span::{
    hex, new_span_id, new_trace_id, now_nanos, AttributeValue, Attributes, SpanContext, SpanEvent,
    SpanKind, SpanRecord, SpanStatus,
};
use super::Telemetry;
use crate::event::{Event, GateVerdict, Outcome, Usage};
use crate::gate::Answer;

/// The model a chat span names: its name, provider and server.
#[derive(Clone, Debug, Default)]
pub(crate) struct ModelTarget {
    pub name: String,
    pub provider: &'static str,
    pub address: Option<String>,
    pub port: Option<u16>,
}

/// `{"type":"text","content":TEXT}`: a message part in the conventions' form.
fn text_part(text: &str) -> String {
    let mut part = String::from("{\"type\":\"text\",\"content\":");
    quoted(&mut part, text);
    part.push('}');
    part
}

/// `[{"role":ROLE,"parts":[TEXT PART]}]`: a one-message list in the conventions' form.
fn message(role: &str, text: &str) -> String {
    format!("[{{\"role\":\"{role}\",\"parts\":[{}]}}]", text_part(text))
}

/// A span still open.
struct Open {
    id: [u8; 8],
    parent: [u8; 8],
    name: String,
    kind: SpanKind,
    start: u64,
    attributes: Attributes,
    events: Vec<SpanEvent>,
    status: SpanStatus,
    status_message: Option<String>,
    /// A tool span's call was denied (by the gate, or by the host's answer to an ask).
    denied: bool,
}

impl Open {
    fn new(parent: [u8; 8], name: String, kind: SpanKind) -> Open {
        Open {
            id: new_span_id(),
            parent,
            name,
            kind,
            start: now_nanos(),
            attributes: Vec::new(),
            events: Vec::new(),
            status: SpanStatus::Unset,
            status_message: None,
            denied: false,
        }
    }

    fn set(&mut self, key: &str, value: impl Into<AttributeValue>) {
        let value = value.into();
        match self.attributes.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.attributes.push((key.to_string(), value)),
        }
    }

    fn event(&mut self, name: &str, attributes: Attributes) {
        self.events.push(SpanEvent {
            name: name.to_string(),
            time_unix_nano: now_nanos(),
            attributes,
        });
    }

    fn fail(&mut self, error_type: &str) {
        self.status = SpanStatus::Error;
        self.set("error.type", error_type);
    }

    fn usage(&mut self, usage: &Usage) {
        self.set("gen_ai.usage.input_tokens", usage.input_tokens);
        self.set("gen_ai.usage.output_tokens", usage.output_tokens);
        if usage.cache_read_input_tokens > 0 {
            self.set(
                "gen_ai.usage.cache_read.input_tokens",
                usage.cache_read_input_tokens,
            );
        }
        if usage.cache_creation_input_tokens > 0 {
            self.set(
                "gen_ai.usage.cache_creation.input_tokens",
                usage.cache_creation_input_tokens,
            );
        }
        if usage.reasoning_tokens > 0 {
            self.set(
                "gen_ai.usage.reasoning.output_tokens",
                usage.reasoning_tokens,
            );
        }
    }

    fn finish(self, trace_id: &[u8; 16], end: u64) -> SpanRecord {
        SpanRecord {
            trace_id: hex(trace_id),
            span_id: hex(&self.id),
            parent_span_id: (self.parent != [0; 8]).then(|| hex(&self.parent)),
            name: self.name,
            kind: self.kind,
            start_time_unix_nano: self.start,
            end_time_unix_nano: end.max(self.start),
            attributes: self.attributes,
            events: self.events,
            status: self.status,
            status_message: self.status_message,
        }
    }
}

/// The model response being read: its span, and what its finish reason is made of.
struct Chat {
    span: Open,
    /// When its usage came: the response is complete (its text and calls follow at once).
    answered: Option<u64>,
    calls: usize,
    stop: Option<&'static str>,
    /// Output parts (JSON objects), when contents are on.
    output: Vec<String>,
}

#[derive(Default)]
struct State {
    turn: Option<Open>,
    chat: Option<Chat>,
    /// The slot of `ModelTarget` requests go to (a fallback moves it).
    slot: usize,
    tools: HashMap<String, Open>,
    /// Arguments (JSON text) of calls not yet gated, when contents are on.
    arguments: Vec<(String, String)>,
    chain_task: Option<Open>,
    compaction_start: Option<u64>,
}

/// The spans of one turn (a host's, a chain's or a subagent's).
pub(crate) struct TurnTrace {
    telemetry: Arc<Telemetry>,
    trace_id: [u8; 16],
    turn_id: [u8; 8],
    /// The span of the host's turn this one runs in (its own, or its parent's root): a host's
    /// span sink gets each host turn's spans together.
    root: [u8; 8],
    targets: Vec<ModelTarget>,
    /// Request settings every chat span carries (temperature, max_tokens, ...).
    request: Attributes,
    state: Mutex<State>,
}

impl TurnTrace {
    /// Open the turn's span, under `parent` (the parent's tool span, or the host's current
    /// span) or as a new trace's root.
    pub(crate) fn begin(
        telemetry: Arc<Telemetry>,
        parent: Option<SpanContext>,
        root: Option<[u8; 8]>,
        agent: Option<&str>,
        targets: Vec<ModelTarget>,
        request: Attributes,
    ) -> TurnTrace {
        let trace_id = parent.map(|p| p.trace_id).unwrap_or_else(new_trace_id);
        let parent_id = parent.map(|p| p.span_id).unwrap_or([0; 8]);
        let name = match agent {
            Some(a) => format!("invoke_agent {a}"),
            None => "invoke_agent".to_string(),
        };
        let mut turn = Open::new(parent_id, name, SpanKind::Internal);
        turn.set("gen_ai.operation.name", "invoke_agent");
        if let Some(a) = agent {
            turn.set("gen_ai.agent.name", a);
        }
        if let Some(t) = targets.first() {
            turn.set("gen_ai.provider.name", t.provider);
            turn.set("gen_ai.system", t.provider);
            if !t.name.is_empty() {
                turn.set("gen_ai.request.model", t.name.clone());
            }
        }
        TurnTrace {
            telemetry,
            trace_id,
            turn_id: turn.id,
            root: root.unwrap_or(turn.id),
            targets,
            request,
            state: Mutex::new(State {
                turn: Some(turn),
                ..State::default()
            }),
        }
    }

    /// Where a subagent run by call `call_id` hangs its turn: under that call's span, within
    /// this turn's host turn.
    pub(crate) fn child_of_call(&self, call_id: &str) -> (Arc<Telemetry>, SpanContext, [u8; 8]) {
        let state = self.state.lock();
        let span_id = state
            .tools
            .get(call_id)
            .map(|t| t.id)
            .unwrap_or(self.turn_id);
        (
            self.telemetry.clone(),
            SpanContext {
                trace_id: self.trace_id,
                span_id,
                sampled: true,
            },
            self.root,
        )
    }

    /// The `traceparent` of the model response being read (its `chat` span), if one is open.
    pub(crate) fn chat_traceparent(&self) -> Option<String> {
        let state = self.state.lock();
        state
            .chat
            .as_ref()
            .map(|c| self.context(c.span.id).traceparent())
    }

    /// The `traceparent` of call `call_id`'s `execute_tool` span, while it is open.
    pub(crate) fn call_traceparent(&self, call_id: &str) -> Option<String> {
        let state = self.state.lock();
        state
            .tools
            .get(call_id)
            .map(|t| self.context(t.id).traceparent())
    }

    fn context(&self, span_id: [u8; 8]) -> SpanContext {
        SpanContext {
            trace_id: self.trace_id,
            span_id,
            sampled: true,
        }
    }

    /// A compaction starts now (its `compact` event comes when it ends).
    pub(crate) fn compaction_starts(&self) {
        self.state.lock().compaction_start = Some(now_nanos());
    }

    fn contents(&self) -> bool {
        self.telemetry.include_contents
    }

    fn export(&self, span: Open, end: u64) {
        self.telemetry
            .export(span.finish(&self.trace_id, end), self.root);
    }

    /// This turn's span ended: when it is a host's turn, its spans are complete.
    fn ended(&self) {
        if self.root == self.turn_id {
            self.telemetry.turn_ended(self.root);
        }
    }

    /// The parent of chat, tool and compaction spans: the running chain task's, or the turn's.
    fn inner_parent(state: &State, turn_id: [u8; 8]) -> [u8; 8] {
        state.chain_task.as_ref().map(|t| t.id).unwrap_or(turn_id)
    }

    fn finish_chat(&self, state: &mut State, outcome: Option<Outcome>) {
        let Some(mut chat) = state.chat.take() else {
            return;
        };
        let end = match chat.answered {
            Some(at) => {
                let reason =
                    chat.stop
                        .unwrap_or(if chat.calls > 0 { "tool_calls" } else { "stop" });
                chat.span
                    .set("gen_ai.response.finish_reasons", vec![reason.to_string()]);
                if self.contents() {
                    let message = format!(
                        "[{{\"role\":\"assistant\",\"parts\":[{}],\"finish_reason\":\"{reason}\"}}]",
                        chat.output.join(",")
                    );
                    chat.span.set("gen_ai.output.messages", message);
                }
                at
            }
            None => {
                chat.span
                    .fail(outcome.map(Outcome::as_str).unwrap_or("no_response"));
                now_nanos()
            }
        };
        self.export(chat.span, end);
    }

    fn open_chat(&self, state: &mut State, index: u32) {
        let target = self.targets.get(state.slot).cloned().unwrap_or_default();
        let name = if target.name.is_empty() {
            "chat".to_string()
        } else {
            format!("chat {}", target.name)
        };
        let parent = Self::inner_parent(state, self.turn_id);
        let mut span = Open::new(parent, name, SpanKind::Client);
        span.set("gen_ai.operation.name", "chat");
        span.set("gen_ai.provider.name", target.provider);
        span.set("gen_ai.system", target.provider);
        if !target.name.is_empty() {
            span.set("gen_ai.request.model", target.name.clone());
        }
        if let Some(address) = &target.address {
            span.set("server.address", address.clone());
        }
        if let Some(port) = target.port {
            span.set("server.port", i64::from(port));
        }
        for (k, v) in &self.request {
            span.set(k, v.clone());
        }
        span.set("contenox.response.index", i64::from(index));
        state.chat = Some(Chat {
            span,
            answered: None,
            calls: 0,
            stop: None,
            output: Vec::new(),
        });
    }

    fn tool_span(&self, state: &mut State, call_id: &str, name: &str) -> Open {
        let parent = Self::inner_parent(state, self.turn_id);
        let mut span = Open::new(parent, format!("execute_tool {name}"), SpanKind::Internal);
        span.set("gen_ai.operation.name", "execute_tool");
        span.set("gen_ai.tool.name", name);
        span.set("gen_ai.tool.call.id", call_id);
        span.set("gen_ai.tool.type", "function");
        if let Some(at) = state.arguments.iter().position(|(id, _)| id == call_id) {
            let (_, text) = state.arguments.swap_remove(at);
            span.set("gen_ai.tool.call.arguments", text);
        }
        span
    }

    /// Take in one event of the turn (before it is tagged for a parent's stream).
    pub(crate) fn observe(&self, event: &Event) {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        match event {
            Event::TurnStart { prompt } => {
                if let (true, Some(turn)) = (self.contents(), state.turn.as_mut()) {
                    turn.set("gen_ai.input.messages", message("user", prompt));
                }
            }
            Event::Request { index, attempt, .. } => {
                let retrying = state
                    .chat
                    .as_ref()
                    .is_some_and(|c| c.answered.is_none() && *attempt > 0);
                if !retrying {
                    self.finish_chat(state, None);
                    self.open_chat(state, *index);
                }
            }
            Event::Retry {
                attempt, status, ..
            } => {
                if let Some(chat) = state.chat.as_mut() {
                    let mut attributes: Attributes =
                        vec![("contenox.retry.attempt".into(), u64::from(*attempt).into())];
                    if let Some(s) = status {
                        attributes.push(("http.response.status_code".into(), i64::from(*s).into()));
                    }
                    chat.span.event("retry", attributes);
                }
            }
            Event::Fallback {
                to_model, status, ..
            } => {
                if let Some(mut chat) = state.chat.take() {
                    let error = status.map(|s| s.to_string());
                    chat.span.fail(error.as_deref().unwrap_or("fallback"));
                    self.export(chat.span, now_nanos());
                }
                if let Some(slot) = self.targets.iter().position(|t| &t.name == to_model) {
                    state.slot = slot;
                }
            }
            Event::Usage { usage, model, .. } => {
                if let Some(chat) = state.chat.as_mut() {
                    chat.span.usage(usage);
                    if let Some(m) = model {
                        chat.span.set("gen_ai.response.model", m.clone());
                    }
                    chat.answered = Some(now_nanos());
                }
            }
            Event::Text { text, .. } => {
                if let (true, Some(chat)) = (self.contents(), state.chat.as_mut()) {
                    chat.output.push(text_part(text));
                }
            }
            Event::ToolCall {
                call_id,
                name,
                arguments,
                ..
            } => {
                if let Some(chat) = state.chat.as_mut() {
                    chat.calls += 1;
                    if self.contents() {
                        let mut part = String::from("{\"type\":\"tool_call\",\"id\":");
                        quoted(&mut part, call_id);
                        part.push_str(",\"name\":");
                        quoted(&mut part, name);
                        part.push_str(",\"arguments\":");
                        part.push_str(&arguments.to_string());
                        part.push('}');
                        chat.output.push(part);
                    }
                }
                if self.contents() {
                    let text = match arguments {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    state.arguments.push((call_id.clone(), text));
                }
            }
            Event::Stop { reason, .. } => {
                if let Some(chat) = state.chat.as_mut() {
                    chat.stop = Some(reason.as_str());
                }
            }
            Event::Gate {
                call_id,
                name,
                decision,
                message,
                source,
                rule,
                ..
            } => {
                let mut span = match state.tools.remove(call_id) {
                    Some(span) => span,
                    None => self.tool_span(state, call_id, name),
                };
                span.set("contenox.tool.source", source.as_str());
                let verdict = match decision {
                    GateVerdict::Allow => "allow",
                    GateVerdict::Deny => "deny",
                    GateVerdict::Ask => "ask",
                };
                span.set("contenox.gate.decision", verdict);
                if let Some(rule) = rule {
                    span.set("contenox.policy.rule", rule.clone());
                }
                if *decision == GateVerdict::Deny {
                    span.denied = true;
                    if let (true, Some(m)) = (self.contents(), message) {
                        span.set("contenox.gate.message", m.clone());
                    }
                }
                state.tools.insert(call_id.clone(), span);
            }
            Event::Pending { call_id, .. } => {
                if let Some(span) = state.tools.get_mut(call_id) {
                    span.event("pending", Vec::new());
                }
            }
            Event::Answer {
                call_id, answer, ..
            } => {
                let answer = match answer {
                    Answer::Approve => "approve",
                    Answer::Deny(_) => "deny",
                    Answer::Result(_) => "result",
                    Answer::Suspend => "suspend",
                };
                if let Some(span) = state.tools.get_mut(call_id) {
                    span.denied |= answer == "deny";
                    span.event("answer", vec![("contenox.answer".into(), answer.into())]);
                }
            }
            Event::ToolResult {
                call_id,
                name,
                content,
                is_error,
                ..
            } => {
                let mut span = match state.tools.remove(call_id) {
                    Some(span) => span,
                    None => {
                        let mut span = self.tool_span(state, call_id, name);
                        // Never gated: not run (max_turns, a stopped reply, a ceiling).
                        span.set("contenox.tool.executed", false);
                        span
                    }
                };
                if *is_error {
                    span.fail(if span.denied { "denied" } else { "tool_error" });
                }
                if self.contents() {
                    span.set("gen_ai.tool.call.result", content.clone());
                }
                self.export(span, now_nanos());
            }
            Event::Compact {
                trigger,
                pre_tokens,
                post_tokens,
                usage,
                ..
            } => {
                let parent = Self::inner_parent(state, self.turn_id);
                let mut span = Open::new(parent, "compact".into(), SpanKind::Internal);
                span.start = state.compaction_start.take().unwrap_or(span.start);
                span.set("gen_ai.operation.name", "compact");
                span.set(
                    "contenox.compaction.trigger",
                    match trigger {
                        crate::event::CompactTrigger::Auto => "auto",
                        crate::event::CompactTrigger::Manual => "manual",
                    },
                );
                span.set("contenox.compaction.pre_tokens", *pre_tokens);
                span.set("contenox.compaction.post_tokens", *post_tokens);
                if !usage.is_zero() {
                    span.usage(usage);
                }
                self.export(span, now_nanos());
            }
            Event::ChainTaskStart { task_id, handler } => {
                if let Some(task) = state.chain_task.take() {
                    self.export(task, now_nanos());
                }
                let mut span = Open::new(
                    self.turn_id,
                    format!("chain_task {task_id}"),
                    SpanKind::Internal,
                );
                span.set("gen_ai.operation.name", "chain_task");
                span.set("contenox.chain.task_id", task_id.clone());
                span.set("contenox.chain.handler", handler.clone());
                state.chain_task = Some(span);
            }
            Event::ChainTaskEnd { next, error, .. } => {
                self.finish_chat(state, None);
                if let Some(mut task) = state.chain_task.take() {
                    if let Some(next) = next {
                        task.set("contenox.chain.next", next.clone());
                    }
                    if error.is_some() {
                        task.fail("task_failed");
                    }
                    self.export(task, now_nanos());
                }
            }
            Event::TurnEnd {
                outcome,
                final_text,
                usage,
                ..
            } => {
                self.finish_chat(state, Some(*outcome));
                let end = now_nanos();
                for (_, mut span) in state.tools.drain() {
                    span.fail(outcome.as_str());
                    self.telemetry
                        .export(span.finish(&self.trace_id, end), self.root);
                }
                if let Some(mut task) = state.chain_task.take() {
                    task.fail(outcome.as_str());
                    self.export(task, end);
                }
                if let Some(mut turn) = state.turn.take() {
                    turn.usage(usage);
                    turn.set("contenox.turn.outcome", outcome.as_str());
                    if !matches!(outcome, Outcome::Done) {
                        turn.fail(outcome.as_str());
                    }
                    if self.contents() {
                        turn.set("gen_ai.output.messages", message("assistant", final_text));
                    }
                    self.export(turn, end);
                    self.ended();
                }
            }
            Event::TextDelta { .. }
            | Event::OutputDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::Reasoning { .. }
            | Event::ToolStart { .. }
            | Event::Progress { .. }
            | Event::Todos { .. } => {}
        }
    }
}

impl Drop for TurnTrace {
    /// A turn dropped before its end (its future cancelled from outside) still reports what it
    /// opened, marked as such.
    fn drop(&mut self) {
        let mut state = self.state.lock();
        if state.turn.is_none() {
            return;
        }
        let end = now_nanos();
        let mut open: Vec<Open> = state.tools.drain().map(|(_, s)| s).collect();
        open.extend(state.chat.take().map(|c| c.span));
        open.extend(state.chain_task.take());
        open.extend(state.turn.take());
        drop(state);
        for mut span in open {
            span.fail("dropped");
            self.telemetry
                .export(span.finish(&self.trace_id, end), self.root);
        }
        self.ended();
    }
}
