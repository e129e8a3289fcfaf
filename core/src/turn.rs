//! One turn: model request, tool calls through the gate, results, next request, until the model
//! answers, the turn is cancelled, it fails, or it reaches `max_turns`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio_util::sync::CancellationToken;

use crate::client_state::ClientState;
use crate::code::inner_calls_made;
use crate::compact::{CompactFailed, SummaryRoute};
use crate::config::ToolConcurrency;
use crate::durable::{
    digests, now_ms, Approval, CallState, Checkpoint, Durable, Held, Reply, Resumed, RunRecord,
    Suspended, Suspension, CHECKPOINT_VERSION,
};
use crate::event::{CompactTrigger, Event, GateVerdict, Outcome, StopReason, TurnResult, Usage};
use crate::gate::{
    Answer, Decision, PendingRequest, ToolCallEvent, WaitFor, ASK_TIMEOUT_DENIAL, DEFAULT_DENIAL,
    SUSPEND_UNAVAILABLE,
};
use crate::gate_chain::{self, Gated};
use crate::image_file::{check_result_images, image_paths, resolve_images};
use crate::lifecycle::{refused_prompt_error, Notification, NotificationKind, TurnEndInfo};
use crate::model::{complete_with_fallback, Backend, ModelRequest, RawCall, RequestFailed};
use crate::output::OutputSchema;
use crate::policy::{self, Budget, Ceilings, Spend};
use crate::prompt::Prompt;
use crate::scope::{Gatekeeper, Judgement, SampleRequest, Sampled, TurnScope, UsageCell};
use crate::settings::TurnSettings;
use crate::step::Seam;
use crate::telemetry::SpanContext;
use crate::tool::{
    allowed_by, Allowlist, CallTool, Entry, EventSink, Source, ToolContext, ToolOutput, ToolSpec,
    CALL_TOOL,
};
use crate::transcript::{Message, Part, ToolCall, Transcript};
use crate::turn_calls::{Admission, CallRunner, ReplyCalls};
use crate::turn_spans::trace_turn;
use crate::until_cancelled::until_cancelled;

pub(crate) use crate::tool::CANCELLED_RESULT;
/// The result text of a call left unexecuted at `max_turns`.
pub const MAX_TURNS_RESULT: &str = "max_turns reached";

/// The result of a call made in a reply cut at `max_tokens` (or refused): its arguments may be
/// cut too, so it is not executed.
pub const STOPPED_REPLY_RESULT: &str =
    "not executed: the reply stopped short of a full answer (see the turn's stop_reason)";

/// The result of a call whose ask answered suspend, where a result must be shown (its reply
/// abandoned when the stream failed afterwards); a suspended turn's checkpoint holds the ask.
const SUSPENDED_RESULT: &str = "not executed: the turn was suspended at this call's ask";

/// The placeholder result of a call held after an earlier call of its reply suspended (never
/// in the conversation: the checkpoint holds the call's state).
const HELD_RESULT: &str = "not executed: an earlier call of the reply suspended the turn";

/// How a call is taken through the gate ([`Turn::admit_call`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Taking {
    /// A call made inside another (js_execution's, a chain task's): it does not suspend.
    Inner,
    /// One of the reply's own calls: its ask may suspend the turn.
    Own,
    /// One of the reply's own calls after one suspended: gated and asked (it may suspend
    /// too), never run; the gate's approvals are kept for the resume.
    Held,
}

/// How one turn runs, beyond its prompt: what `run_with` / `stream_with` pass, and what a
/// subagent's tool call sets for its child's turn.
#[derive(Default)]
pub(crate) struct TurnSetup {
    /// Narrows the client's allowlist for this turn.
    pub allow: Option<Allowlist>,
    /// Replaces the client's `max_turns` for this turn.
    pub max_turns: Option<u32>,
    /// The chain of clients the turn runs in, its own last; `None` = a host's own turn.
    pub scope: Option<TurnScope>,
    /// Start from an empty conversation (a subagent's fresh conversation per call).
    pub fresh: bool,
    /// Also count every token the turn spends here (the parent's subagent call), as it goes,
    /// so a cancelled child's spending is counted too.
    pub report_to: Option<UsageCell>,
    /// The run's model settings (over the client's); `None` = the client's.
    pub settings: Option<TurnSettings>,
    /// The run's `output_schema`; `None` = the client's (if any).
    pub output: Option<Arc<OutputSchema>>,
    /// The run's `output_retries`; `None` = the client's.
    pub output_retries: Option<u32>,
    /// The run's options as a suspended turn's checkpoint records them.
    pub record: RunRecord,
    /// The host's current span, which a host's turn's span is a child of (telemetry on).
    pub trace_parent: Option<SpanContext>,
    /// A turn stepped by its host: its I/O points hand out actions ([`crate::step`]).
    pub stepped: Option<Seam>,
}

/// How a turn begins: with a prompt, or where a suspended turn stopped.
enum Begin {
    Prompt(Prompt),
    Resume(Box<Checkpoint>, Box<Durable>),
}

/// Which client `inner` is: the address of its shared state.
pub(crate) fn client_id(inner: &Arc<ClientState>) -> usize {
    Arc::as_ptr(inner) as *const () as usize
}

/// Run one turn on `inner`'s conversation.
pub(crate) async fn run_turn(
    inner: Arc<ClientState>,
    prompt: Prompt,
    setup: TurnSetup,
    cancel: CancellationToken,
    sink: EventSink,
) -> TurnResult {
    run_or_resume(inner, Begin::Prompt(prompt), setup, cancel, sink).await
}

/// Go on with a suspended turn where its checkpoint `cp` stopped (`durable` holds the answers,
/// checked against it); the conversation becomes the checkpoint's.
pub(crate) async fn resume_turn(
    inner: Arc<ClientState>,
    cp: Checkpoint,
    durable: Durable,
    setup: TurnSetup,
    cancel: CancellationToken,
    sink: EventSink,
) -> TurnResult {
    let begin = Begin::Resume(Box::new(cp), Box::new(durable));
    run_or_resume(inner, begin, setup, cancel, sink).await
}

async fn run_or_resume(
    inner: Arc<ClientState>,
    begin: Begin,
    setup: TurnSetup,
    cancel: CancellationToken,
    sink: EventSink,
) -> TurnResult {
    // Queued behind a running turn: a cancel while waiting (or before) ends this turn without
    // touching the conversation.
    let queued = until_cancelled(&cancel, inner.lock_turn())
        .await
        .filter(|_| !cancel.is_cancelled());
    let Some(_one_at_a_time) = queued else {
        let prompt = match begin {
            Begin::Prompt(prompt) => prompt.text(),
            Begin::Resume(cp, _) => {
                // Never started: the checkpoint can be resumed again.
                inner.release_checkpoint(&cp.turn_id, cp.seq);
                cp.prompt.clone()
            }
        };
        return cancelled_before_start(&inner, prompt, &sink);
    };
    if setup.fresh {
        inner.replace_conversation(Transcript::default());
    }
    // A host's own turn may suspend; a subagent's (it has a scope) does not.
    let stepped = setup.stepped;
    let (prompt, resume, durable) = match begin {
        Begin::Prompt(prompt) => {
            let durable = setup.scope.is_none().then(|| {
                let mut durable = Durable::new(prompt.text(), setup.record.clone());
                if let Some(seam) = &stepped {
                    // A stepped turn's id is its host's state (replayed, never drawn anew).
                    durable.turn_id = seam.turn_id.clone();
                }
                durable
            });
            (Some(prompt), None, durable)
        }
        Begin::Resume(cp, durable) => (None, Some(cp), Some(*durable)),
    };
    let scope = match setup.scope {
        Some(s) => s,
        None => TurnScope::root(client_id(&inner), inner.clone()),
    };
    let output = setup.output.or_else(|| inner.output().cloned());
    let sink = match output {
        Some(_) => sink.with_output(),
        None => sink,
    };
    let chain = scope.agent();
    let sink = trace_turn(
        &inner,
        sink,
        chain.last().map(String::as_str),
        setup.trace_parent,
    );
    let turn = Turn {
        inner: &inner,
        run_allow: setup.allow.as_ref(),
        narrow: None,
        max_turns: setup.max_turns,
        settings: setup.settings.as_ref(),
        report_to: setup.report_to.as_ref(),
        cancel: &cancel,
        sink: &sink,
        scope,
        output: output.as_deref(),
        output_retries: setup
            .output_retries
            .unwrap_or(inner.config().output_retries),
        durable: durable.as_ref(),
        stepped: stepped.as_ref(),
    };
    let lifecycle = inner.lifecycle();
    match (prompt, &resume) {
        (Some(prompt), _) => {
            sink.emit_with(|| Event::TurnStart {
                prompt: prompt.text(),
            });
            lifecycle.turn_start(&prompt.text(), &cancel).await;
            let verdict = lifecycle.prompt(&prompt.text(), &cancel).await;
            if let Some(why) = verdict.refused {
                // Refused: no request, the conversation as it was.
                let end = TurnEndInfo {
                    outcome: Outcome::Error,
                    final_text: String::new(),
                    error: Some(refused_prompt_error(&why)),
                };
                lifecycle.turn_end(&end, &cancel).await;
                sink.emit_with(|| Event::TurnEnd {
                    outcome: end.outcome,
                    final_text: String::new(),
                    usage: Usage::default(),
                    error: end.error.clone(),
                });
                return TurnResult {
                    outcome: end.outcome,
                    final_text: String::new(),
                    usage: Usage::default(),
                    error: end.error,
                    stop_reason: None,
                    output: None,
                    transcript: inner.transcript(),
                    checkpoint: None,
                    pending: Vec::new(),
                };
            }
            inner.append([prompt
                .with_hooks(verdict.replace, verdict.context)
                .into_message()]);
        }
        (None, Some(cp)) => {
            sink.emit_with(|| Event::TurnStart {
                prompt: cp.prompt.clone(),
            });
            // A resumed turn starts again for the hooks; its prompt was judged when it began.
            lifecycle.turn_start(&cp.prompt, &cancel).await;
            // The ids of the checkpoint's calls are taken: new ones stay clear of them.
            let ids = cp
                .transcript
                .max_generated_id()
                .max(max_generated_in(&cp.reply.calls));
            inner.reserve_call_ids(ids);
            inner.replace_conversation(cp.transcript.clone());
        }
        (None, None) => unreachable!("a turn begins with a prompt or a checkpoint"),
    }
    // Sources that asked for it (a remote hook that was down) are probed before the first
    // request, so what came up is offered in it.
    inner.sources().before_turn(&cancel).await;
    let TurnEnd {
        outcome,
        final_text,
        usage,
        error,
        stop_reason,
        output,
        checkpoint,
        pending,
    } = turn.steps(resume).await;
    let end = TurnEndInfo {
        outcome,
        final_text,
        error,
    };
    lifecycle.turn_end(&end, &cancel).await;
    let TurnEndInfo {
        outcome,
        final_text,
        error,
    } = end;
    sink.emit_with(|| Event::TurnEnd {
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
        stop_reason,
        output,
        transcript: inner.transcript(),
        checkpoint,
        pending,
    }
}

/// The highest `call_cxN` number among `calls`.
fn max_generated_in(calls: &[ToolCall]) -> u64 {
    calls
        .iter()
        .filter_map(|c| c.id.strip_prefix("call_cx")?.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
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
    /// Why the last reply stopped short of a full answer.
    stop_reason: Option<StopReason>,
    /// The answer parsed and validated against the turn's `output_schema`.
    output: Option<Value>,
    /// For outcome `suspended`: the sealed checkpoint and the requests waiting.
    checkpoint: Option<String>,
    pending: Vec<PendingRequest>,
}

impl TurnEnd {
    fn new(outcome: Outcome, final_text: String, usage: Usage) -> Self {
        TurnEnd {
            outcome,
            final_text,
            usage,
            error: None,
            stop_reason: None,
            output: None,
            checkpoint: None,
            pending: Vec::new(),
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
        stop_reason: None,
        output: None,
        transcript: inner.transcript(),
        checkpoint: None,
        pending: Vec::new(),
    }
}

/// A client's gate, as one level of a turn's chain: its approval policy first, then its
/// `before_tool`, which may only narrow.
impl Gatekeeper for ClientState {
    fn judge<'a>(
        &'a self,
        call: &'a ToolCallEvent,
        root: &'a std::path::Path,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Option<Judgement>> {
        Box::pin(async move {
            let policy = policy::judge(self.policy().as_deref(), call, root);
            // The hooks file's PreToolUse after the policy, before the host's `before_tool`:
            // it may deny or ask, never widen what the policy denied.
            let file = match policy.denial() {
                Some(_) => None,
                None => {
                    let pre = self.lifecycle().file_pre_tool(call, cancel);
                    let d = until_cancelled(cancel, pre).await?;
                    d.filter(|d| !matches!(d, Decision::Allow))
                }
            };
            let decision = match (policy.denial(), file, self.hooks()) {
                (Some(denied), _, _) => Ok(denied),
                (None, Some(file), _) => policy.narrow(Ok(file)),
                (None, None, None) => policy.narrow(Ok(Decision::Allow)),
                (None, None, Some(hooks)) => {
                    let hook = AssertUnwindSafe(hooks.before_tool(call)).catch_unwind();
                    let host = tokio::select! {
                        biased;
                        _ = cancel.cancelled() => return None,
                        d = hook => d.unwrap_or_else(|_| Err("before_tool panicked".into())),
                    };
                    policy.narrow(host.map_err(|e| e.to_string()))
                }
            };
            Some(Judgement {
                decision,
                rule: policy.rule(),
            })
        })
    }

    fn after<'a>(
        &'a self,
        call: &'a ToolCallEvent,
        output: &'a ToolOutput,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Option<std::result::Result<Option<ToolOutput>, String>>> {
        Box::pin(async move {
            let host = match self.hooks() {
                None => Ok(None),
                Some(hooks) => {
                    let after = AssertUnwindSafe(hooks.after_tool(call, output)).catch_unwind();
                    tokio::select! {
                        biased;
                        _ = cancel.cancelled() => return None,
                        r = after => match r {
                            Ok(r) => r.map_err(|e| e.to_string()),
                            Err(_) => Err("after_tool panicked".into()),
                        },
                    }
                }
            };
            let Ok(host) = host else {
                return Some(host);
            };
            // Then the hooks file's PostToolUse (or PostToolUseFailure) and `on_tool_error`.
            let seen = host.as_ref().unwrap_or(output);
            let later = self.lifecycle().after_tool(call, seen, cancel);
            let later = until_cancelled(cancel, later).await?;
            Some(Ok(later.or(host)))
        })
    }

    fn wait_for(&self) -> Option<Arc<dyn WaitFor>> {
        ClientState::wait_for(self).cloned()
    }

    fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, std::result::Result<Sampled, String>> {
        Box::pin(self.sample_model(request, cancel))
    }
}

/// One turn's view of a client: what it may call, its cancel, where its events go, the chain of
/// gates it runs under. Task chains (`crate::chain`) run their tasks through the same pieces,
/// each task with its own `narrow`.
pub(crate) struct Turn<'a> {
    pub inner: &'a Arc<ClientState>,
    pub run_allow: Option<&'a Allowlist>,
    /// A further narrowing by tool name (a chain task's allowlist); `None` narrows nothing.
    pub narrow: Option<&'a (dyn Fn(&str) -> bool + Sync)>,
    /// Replaces the client's `max_turns` for this turn.
    pub max_turns: Option<u32>,
    /// The run's model settings; `None` = the client's.
    pub settings: Option<&'a TurnSettings>,
    /// Also counts every token the turn spends (a parent's subagent call).
    pub report_to: Option<&'a UsageCell>,
    pub cancel: &'a CancellationToken,
    pub sink: &'a EventSink,
    /// The chain of clients the turn runs in (their gates, their `wait_for`s), its own last.
    pub scope: TurnScope,
    /// The schema the final answer must match (asked for in each request); `None` = text.
    pub output: Option<&'a OutputSchema>,
    /// How many invalid answers are sent back for another try.
    pub output_retries: u32,
    /// A host's own turn: its id, its suspension, a resumed turn's answers. `None` for a
    /// subagent's turn and a chain's: their calls do not suspend.
    pub durable: Option<&'a Durable>,
    /// A turn stepped by its host: each model request, tool run and ask's wait goes through
    /// it ([`crate::step`]); `None` = the turn does its I/O itself.
    pub stepped: Option<&'a Seam>,
}

/// What one model request came back with.
pub(crate) enum Response {
    /// The model answered: its text, its calls (ids given, arguments parsed, `call_tool`
    /// unwrapped) and what the request spent (a compaction before it included).
    Answer {
        text: String,
        calls: Vec<ToolCall>,
        /// The reasoning parts, each with the number of calls before it (see
        /// [`Message::assistant_with`]).
        extra: Vec<(usize, Part)>,
        usage: Usage,
        /// Why the reply stopped short of a full answer (the `stop` event was emitted).
        stop: Option<StopReason>,
        /// The server paused the turn (anthropic `pause_turn`): send the reply back and ask
        /// again.
        paused: bool,
        /// How many of the first `calls` are those sent to `early` while the reply streamed.
        early: usize,
    },
    /// The turn was cancelled before the answer came.
    Cancelled,
    /// The request failed for good (after retries, or after compacting for a refusal as over
    /// the context length), or the compaction before it failed.
    Failed(String),
}

impl Turn<'_> {
    pub(crate) fn allowed(&self, name: &str) -> bool {
        allowed_by(self.inner.allow(), self.run_allow, name) && self.narrow.is_none_or(|n| n(name))
    }

    /// Send the conversation to the model with the tools this turn may offer now; emits
    /// `request`, `text_delta`, `usage`, `text` and `tool_call` (and `compact`). `index` counts
    /// the turn's model responses; `system` and `model` are this request's (a chain task may set
    /// its own). The conversation is compacted first when it is measured over the threshold,
    /// and once more when the server refuses it as over its context length (then the request
    /// is sent again, once). Every token spent, the compactions' included, is added to `spent`
    /// as it goes (so a failed or cancelled request still counts what it cost).
    pub(crate) async fn respond(
        &self,
        index: u32,
        system: Option<&str>,
        model: Option<&str>,
        spent: &mut Usage,
        early: Option<&UnboundedSender<ToolCall>>,
    ) -> Response {
        let inner = self.inner;
        // The calls announced complete while the reply streams, as they came and as parsed
        // (sent to `early`, their `tool_call` events emitted then).
        let announced: Mutex<Vec<(RawCall, ToolCall)>> = Mutex::default();
        let allowed = |n: &str| self.allowed(n);
        let mut this_request = Usage::default();
        // Set when a refusal as over the context length was answered by compacting: the same
        // request is sent again once, not in a loop.
        let mut compacted_for_refusal = false;
        // Replies the server refused as malformed tool calls, told to the model to try again
        // (within the retry budget).
        let mut corrections = 0u32;
        loop {
            let tools = inner.toolkit().offered(&allowed);
            match self.compact_when_over(&tools, index).await {
                Ok(cost) => {
                    self.spend(spent, cost);
                    this_request.add(cost);
                }
                Err(stopped) => return stopped,
            }
            let settings = self.settings.unwrap_or(inner.settings());
            // Images given by path are read (beneath the root) outside the conversation's lock.
            let paths = inner.with_messages(image_paths);
            let images = if paths.is_empty() {
                None
            } else {
                let root = inner.root().clone();
                tokio::task::spawn_blocking(move || resolve_images(&root, paths))
                    .await
                    .unwrap_or(None)
            };
            // Rendered for the model the turn is on, and again for each fallback it moves to
            // (a fallback model has its own name: a chain task's `model` is the first one's).
            let render = |slot: usize, backend: &dyn Backend| {
                inner.with_messages(|messages| {
                    let body = backend.body(&ModelRequest {
                        system,
                        model: model.filter(|_| slot == 0),
                        messages,
                        tools: &tools,
                        settings: settings.for_request(index),
                        images: images.as_ref(),
                        output: self.output,
                    });
                    (body, messages.len())
                })
            };
            let call_tool_offered = tools.iter().any(|t| t.name == CALL_TOOL);
            let on_call = |raw: &RawCall| {
                let Some(early) = early else { return };
                let mut announced = announced.lock();
                let before: Vec<ToolCall> = announced.iter().map(|(_, c)| c.clone()).collect();
                let call = self.parse_call(raw.clone(), &before, call_tool_offered);
                self.emit_tool_call(&call);
                // The receiver is gone only when the step stopped listening: nothing to do.
                let _ = early.send(call.clone());
                announced.push((raw.clone(), call));
            };
            let request = complete_with_fallback(
                inner.models(),
                inner.model_at(),
                &render,
                &inner.config().retry,
                self.sink,
                index,
                early.map(|_| &on_call as &(dyn Fn(&RawCall) + Send + Sync)),
            );
            let request = async {
                let Some(seam) = self.stepped else {
                    return request.await;
                };
                // The action shows the body as the model the turn is on takes it.
                let slot = inner.model_at().min(inner.models().len().saturating_sub(1));
                let (body, len) = render(slot, &*inner.models()[slot].backend);
                seam.model(index, &body, slot, len, request).await
            };
            let Some(response) = until_cancelled(self.cancel, request).await else {
                return Response::Cancelled;
            };
            let (response, sent, answered_by) = match response {
                Ok(a) => {
                    inner.set_model_at(a.slot);
                    let name = match (a.slot, model) {
                        (0, Some(m)) => m.to_string(),
                        (slot, _) => inner.models()[slot].name.clone(),
                    };
                    (a.response, a.rendered, name)
                }
                Err(f) if f.context_overflow && !compacted_for_refusal => {
                    match self.compact_for_refusal(&tools, index, &f.message).await {
                        Ok(cost) => {
                            self.spend(spent, cost);
                            this_request.add(cost);
                            compacted_for_refusal = true;
                            continue;
                        }
                        Err(stopped) => return stopped,
                    }
                }
                Err(RequestFailed {
                    malformed_call: Some(note),
                    message,
                    ..
                }) if corrections < inner.config().retry.max_retries => {
                    self.sink.emit(Event::Retry {
                        attempt: corrections,
                        status: Some(400),
                        error: message,
                        wait_ms: 0,
                        agent: Vec::new(),
                    });
                    corrections = corrections.saturating_add(1);
                    inner.append([Message::user(note)]);
                    continue;
                }
                Err(f) if f.context_overflow => {
                    return Response::Failed(format!(
                        "{} (the request was refused again after the conversation was compacted)",
                        f.message
                    ))
                }
                Err(f) => return Response::Failed(f.message),
            };
            drop(tools);
            self.spend(spent, response.usage);
            this_request.add(response.usage);
            inner.record_context(sent, response.usage);
            self.sink.emit(Event::Usage {
                usage: response.usage,
                model: Some(answered_by).filter(|m| !m.is_empty()),
                agent: Vec::new(),
            });
            for text in response.reasoning_texts() {
                self.sink.emit_with(|| Event::Reasoning {
                    text: text.to_string(),
                    agent: Vec::new(),
                });
            }
            if !response.text.is_empty() {
                self.sink.emit_with(|| Event::Text {
                    text: response.text.clone(),
                    agent: Vec::new(),
                });
            }
            let announced = std::mem::take(&mut *announced.lock());
            let (calls, early) =
                self.parse_reply_calls(response.calls, announced, call_tool_offered);
            for c in &calls[early..] {
                self.emit_tool_call(c);
            }
            if let Some(reason) = response.stop {
                self.sink.emit(Event::Stop {
                    reason,
                    agent: Vec::new(),
                });
            }
            return Response::Answer {
                text: response.text,
                calls,
                extra: response.extra,
                usage: this_request,
                stop: response.stop,
                paused: response.paused,
                early,
            };
        }
    }

    /// Count tokens in the turn's usage (and in the parent's subagent call, if any).
    fn spend(&self, usage: &mut Usage, spent: Usage) {
        usage.add(spent);
        if let Some(cell) = self.report_to {
            cell.add(spent);
        }
    }

    /// The ceilings in force now (set_policy applies mid-turn), with this run's `max_turns`.
    pub(crate) fn ceilings(&self) -> Ceilings {
        let policy = self.inner.policy();
        let mut ceilings = Ceilings::of(self.inner.config(), policy.as_deref());
        if let Some(n) = self.max_turns {
            let policy_max = policy.as_deref().and_then(|p| p.compute().max_turns);
            ceilings.max_turns = policy_max.map_or(n, |p| p.min(n));
        }
        ceilings
    }

    /// The step loop; `resume` = go on with a suspended reply (its recorded results replay,
    /// its other calls are gated again) before the next request.
    async fn steps(&self, resume: Option<Box<Checkpoint>>) -> TurnEnd {
        let inner = self.inner;
        let mut usage = Usage::default();
        let mut final_text = String::new();
        let mut index = 0u32;
        let mut budget = Budget::default();
        // Answers that did not match the output schema, sent back for another try.
        let mut corrections = 0u32;
        // How many times a stop hook sent the model back to work.
        let mut stop_hooks = 0u32;
        let mut warned_near = false;
        let mut resume = resume;
        if let Some(cp) = &resume {
            usage = cp.usage;
            index = cp.index;
            budget = cp.budget;
            corrections = cp.corrections;
        }
        loop {
            // A ceiling near (the last response max_turns allows, 80 % of a budget): told once.
            let ceilings = self.ceilings();
            if !warned_near {
                let near = if index.saturating_add(1) == ceilings.max_turns && index > 0 {
                    Some(format!(
                        "the next model response is the last max_turns ({}) allows",
                        ceilings.max_turns
                    ))
                } else {
                    budget.near(&ceilings)
                };
                if let Some(message) = near {
                    warned_near = true;
                    let notice = Notification {
                        kind: NotificationKind::BudgetNear,
                        message,
                    };
                    inner.lifecycle().notify(&notice, self.cancel).await;
                }
            }
            // The reply's calls run under a token of their own (a child of the turn's): a
            // stream that fails after some started cancels those, not the turn.
            let reply_cancel = self.cancel.child_token();
            let reply_turn = self.with_cancel(&reply_cancel);
            let anew_cancel = self.cancel.child_token();
            let anew_turn = self.with_cancel(&anew_cancel);
            let mut runner = self.reply_calls(&reply_turn);
            let mut early_calls = Vec::new();
            // A resumed reply: its calls' states stand in for the model's answer.
            let replay = resume.take().map(|cp| Replay::of(*cp));
            let response = match &replay {
                Some(r) => r.response(),
                None => {
                    self.respond_starting_calls(
                        index,
                        &mut usage,
                        &budget,
                        &mut runner,
                        &mut early_calls,
                    )
                    .await
                }
            };
            let (text, calls, extra, used, stop, paused, early) = match response {
                Response::Answer {
                    text,
                    calls,
                    extra,
                    usage,
                    stop,
                    paused,
                    early,
                } => (text, calls, extra, usage, stop, paused, early),
                Response::Cancelled => {
                    let spent = self.abandon(runner, &reply_cancel, &early_calls).await;
                    self.spend(&mut usage, spent);
                    return TurnEnd::new(Outcome::Cancelled, final_text, usage);
                }
                Response::Failed(message) => {
                    let spent = self.abandon(runner, &reply_cancel, &early_calls).await;
                    self.spend(&mut usage, spent);
                    return TurnEnd {
                        error: Some(message),
                        ..TurnEnd::new(Outcome::Error, final_text, usage)
                    };
                }
            };
            if runner.taken() > early {
                // The reply does not list the calls started early as they were announced (a
                // stream that started over): those are cancelled, and its own calls run anew.
                let spent = self.abandon(runner, &reply_cancel, &early_calls).await;
                self.spend(&mut usage, spent);
                // An abandoned call's suspension is no longer the reply's: its calls are asked
                // anew.
                if let Some(d) = self.durable {
                    d.take_suspension();
                }
                runner = self.reply_calls(&anew_turn);
            }
            if replay.is_none() {
                // A resumed reply was counted before it suspended. Saturating: a resumed
                // turn's counters come from its checkpoint.
                index = index.saturating_add(1);
            }
            final_text = text.clone();
            let mut step = Vec::with_capacity(calls.len() + 1);
            let reply_extra = self.durable.map(|_| extra.clone());
            step.push(Message::assistant_with(text, calls.clone(), extra));
            if paused && calls.is_empty() && stop.is_none() {
                // The server paused a long turn (its own tools ran): the paused reply goes
                // back as it came, and the model goes on in the next request, within max_turns.
                inner.append(step);
                if index >= self.ceilings().max_turns {
                    return TurnEnd::new(Outcome::MaxTurns, final_text, usage);
                }
                if self.cancel.is_cancelled() {
                    return TurnEnd::new(Outcome::Cancelled, final_text, usage);
                }
                continue;
            }
            // A reply that stopped short ends the turn; its calls (their arguments may be cut)
            // get an error result each, so the transcript stays valid (a call started while
            // the reply streamed was whole, and keeps its own result).
            let stopped = calls.is_empty() || stop.is_some();
            let ceilings = self.ceilings();
            let at_limit = index >= ceilings.max_turns;
            let spend = match &replay {
                // Spent before it suspended; its ceiling, if it reached one, is recorded.
                Some(r) => Some(Spend {
                    run: calls.len(),
                    exhausted: r.exhausted,
                }),
                None => (!stopped).then(|| budget.spend(calls.len(), used, &ceilings)),
            };
            let settled = |i: usize| {
                if let Some(r) = &replay {
                    if let Some(out) = r.settled(i) {
                        return Some(out);
                    }
                }
                if stopped {
                    return Some(ToolOutput::error(STOPPED_REPLY_RESULT));
                }
                if at_limit {
                    return Some(ToolOutput::error(MAX_TURNS_RESULT));
                }
                let spend = spend?;
                let exhausted = spend.exhausted.filter(|_| i >= spend.run);
                exhausted.map(|e| ToolOutput::error(e.result_text()))
            };
            // The calls js_execution's code made count in the budget too (the turn ends after
            // this step when they reached a ceiling).
            let mut inner_exhausted = None;
            let mut replayed = replay.as_ref().map(Replay::results).unwrap_or_default();
            let waits = |id: &str| self.durable.is_some_and(|d| d.waits(id));
            let mut done = |c: &ToolCall, out: ToolOutput, spent: Usage| {
                // A recorded result goes back into the conversation as it was (its events were
                // emitted when it ran); the calls that suspended, or wait after one that did,
                // have none yet.
                if let Some(recorded) = replayed.remove(&c.id) {
                    step.push(recorded);
                    return;
                }
                if waits(&c.id) {
                    return;
                }
                // What the call spent on models (a subagent's turn) is the turn's too.
                let spent = (!spent.is_zero()).then(|| {
                    self.spend(&mut usage, spent);
                    budget.spend(0, spent, &ceilings);
                    spent
                });
                let inner = inner_calls_made(c, &out);
                if inner > 0 {
                    let s = budget.spend(inner, Usage::default(), &ceilings);
                    inner_exhausted = inner_exhausted.or(s.exhausted);
                }
                step.push(self.result_message(c, out, spent));
            };
            for (i, call) in calls.iter().enumerate().skip(runner.taken()) {
                runner.clear_for(call).await;
                runner.hand_on(&calls, &mut done);
                if self.suspending() {
                    // After a call suspended, the later ones are gated and asked in the model's
                    // order, but none runs (it may depend on the suspended one): each waits for
                    // the resume, or gets its result from the gate (a denial).
                    let waiting = ToolOutput::error(HELD_RESULT);
                    runner.take_held(call, settled(i), waiting).await;
                } else {
                    runner.take(call, settled(i)).await;
                }
                runner.hand_on(&calls, &mut done);
            }
            runner.finish(&calls, &mut done).await;
            let suspension = self
                .durable
                .and_then(|d| d.take_suspension().map(|s| (d, s)));
            if let Some((durable, suspension)) = suspension {
                let exhausted = spend.and_then(|s| s.exhausted).or(inner_exhausted);
                let cp = self.checkpoint(
                    durable,
                    CheckpointParts {
                        suspension,
                        step,
                        reply: Reply {
                            text: final_text.clone(),
                            calls: calls.clone(),
                            extra: reply_extra.unwrap_or_default(),
                        },
                        settled: &settled,
                        index,
                        usage,
                        budget,
                        exhausted,
                        corrections,
                    },
                );
                return TurnEnd {
                    pending: cp.pending(now_ms()),
                    checkpoint: Some(cp.seal()),
                    ..TurnEnd::new(Outcome::Suspended, final_text, usage)
                };
            }
            inner.append(step);
            if stopped && stop.is_none() && !at_limit && !self.cancel.is_cancelled() {
                // The final answer: a stop hook may send the model back to work.
                let again = inner
                    .lifecycle()
                    .stop(&final_text, stop_hooks > 0, self.cancel)
                    .await;
                if let Some(message) = again {
                    stop_hooks += 1;
                    inner.append([Message::user(message)]);
                    continue;
                }
            }
            if stopped {
                let Some(schema) = self.output else {
                    return TurnEnd {
                        stop_reason: stop,
                        ..TurnEnd::new(Outcome::Done, final_text, usage)
                    };
                };
                let why = match (stop, schema.check(&final_text)) {
                    (None, Ok(output)) => {
                        return TurnEnd {
                            output: Some(output),
                            ..TurnEnd::new(Outcome::Done, final_text, usage)
                        }
                    }
                    (Some(reason), _) => {
                        return TurnEnd {
                            stop_reason: stop,
                            error: Some(format!(
                                "the answer stopped short ({}), so it was not checked against \
                                 the output schema",
                                reason.as_str()
                            )),
                            ..TurnEnd::new(Outcome::OutputInvalid, final_text, usage)
                        }
                    }
                    (None, Err(why)) => why,
                };
                if self.cancel.is_cancelled() {
                    return TurnEnd::new(Outcome::Cancelled, final_text, usage);
                }
                if corrections < self.output_retries && !at_limit {
                    // Sent back with what was wrong: the model answers again (and may call
                    // tools first), within max_turns.
                    self.sink.emit_with(|| Event::Retry {
                        attempt: corrections,
                        status: None,
                        error: why.clone(),
                        wait_ms: 0,
                        agent: Vec::new(),
                    });
                    corrections = corrections.saturating_add(1);
                    inner.append([Message::user(schema.correction(&final_text, &why))]);
                    continue;
                }
                let after = if corrections < self.output_retries {
                    "max_turns left no response to correct it".to_string()
                } else {
                    format!("after {corrections} correction(s) (output_retries)")
                };
                return TurnEnd {
                    error: Some(format!("{why}\n({after})")),
                    ..TurnEnd::new(Outcome::OutputInvalid, final_text, usage)
                };
            }
            if at_limit {
                return TurnEnd::new(Outcome::MaxTurns, final_text, usage);
            }
            if let Some(e) = spend.and_then(|s| s.exhausted).or(inner_exhausted) {
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

    /// [`Turn::respond`] with the client's system prompt; while the reply streams, each call it
    /// announces complete is gated and started in `runner` (and kept in `early_calls`), as long
    /// as the call runs whatever the reply turns out to be (`stream_tools` on, not the last
    /// response `max_turns` allows, within the budget, no token ceiling) and may run beside
    /// others: from the first that may not, the rest wait for the reply. The stream goes on
    /// while a call is gated.
    async fn respond_starting_calls(
        &self,
        index: u32,
        usage: &mut Usage,
        budget: &Budget,
        runner: &mut ReplyCalls<'_, Turn<'_>>,
        early_calls: &mut Vec<ToolCall>,
    ) -> Response {
        let ceilings = self.ceilings();
        // A stepped turn's calls start after the reply: its actions come in one order.
        let starting = self.inner.config().stream_tools
            && self.stepped.is_none()
            && index.saturating_add(1) < ceilings.max_turns
            && budget.may_run(0, &ceilings);
        let (tx, mut rx) = unbounded_channel();
        let system = self.inner.config().system.as_deref();
        let respond = self.respond(index, system, None, usage, starting.then_some(&tx));
        tokio::pin!(respond);
        let mut taking = starting;
        loop {
            let call = tokio::select! {
                biased;
                r = &mut respond => return r,
                Some(call) = rx.recv() => call,
            };
            let i = early_calls.len();
            // A call that must run alone (a write) starts after the reply, as every call after
            // it: it waits for the calls before it, whose results come after the reply.
            taking = taking
                && budget.may_run(i, &ceilings)
                && runner.runs_beside(&call)
                && !self.suspending();
            early_calls.push(call);
            if !taking {
                continue;
            }
            let take = runner.take(&early_calls[i], None);
            tokio::pin!(take);
            let mut answered = None;
            loop {
                tokio::select! {
                    biased;
                    () = &mut take => break,
                    r = &mut respond, if answered.is_none() => answered = Some(r),
                }
            }
            if let Some(r) = answered {
                return r;
            }
        }
    }

    /// The reply that `calls` were started from is not going on (its stream failed, the turn
    /// was cancelled, or it listed other calls): cancel them, and emit each one's result (its
    /// `tool_result`, so every `tool_call` has one); none goes into the conversation. What
    /// they spent on models.
    async fn abandon(
        &self,
        runner: ReplyCalls<'_, Turn<'_>>,
        reply_cancel: &CancellationToken,
        calls: &[ToolCall],
    ) -> Usage {
        reply_cancel.cancel();
        let mut spent_all = Usage::default();
        let mut done = |c: &ToolCall, out: ToolOutput, spent: Usage| {
            spent_all.add(spent);
            let _ = self.result_message(c, out, (!spent.is_zero()).then_some(spent));
        };
        runner.finish(calls, &mut done).await;
        spent_all
    }

    /// The calls of one reply, run by `turn` as the client's `tool_concurrency` allows.
    fn reply_calls<'t, 'b>(&self, turn: &'t Turn<'b>) -> ReplyCalls<'t, Turn<'b>> {
        let config = self.inner.config();
        // A stepped turn runs one call at a time: its actions come in one order.
        let concurrency = match self.stepped {
            Some(_) => ToolConcurrency::Sequential,
            None => config.tool_concurrency,
        };
        ReplyCalls::new(turn, concurrency, config.max_concurrent_tools)
    }

    /// This turn with another cancel token (the calls of one reply run under their own).
    pub(crate) fn with_cancel<'b>(&'b self, cancel: &'b CancellationToken) -> Turn<'b> {
        Turn {
            inner: self.inner,
            run_allow: self.run_allow,
            narrow: self.narrow,
            max_turns: self.max_turns,
            settings: self.settings,
            report_to: self.report_to,
            cancel,
            sink: self.sink,
            scope: self.scope.clone(),
            output: self.output,
            output_retries: self.output_retries,
            durable: self.durable,
            stepped: self.stepped,
        }
    }

    /// Compact before a request when the context is measured over the threshold; what the
    /// summary cost.
    async fn compact_when_over(
        &self,
        tools: &[Arc<ToolSpec>],
        index: u32,
    ) -> Result<Usage, Response> {
        let Some(settings) = &self.inner.config().compaction else {
            return Ok(Usage::default());
        };
        let route = self.stepped.map(|seam| seam.summary_at(index));
        let mut compaction = self
            .inner
            .compaction(settings, tools, self.sink, self.cancel);
        compaction.route = route.as_ref().map(|r| r as &dyn SummaryRoute);
        let pre = compaction.measure();
        if pre <= settings.threshold_tokens {
            return Ok(Usage::default());
        }
        match compaction.run(CompactTrigger::Auto, pre).await {
            Ok(notice) => Ok(notice.map(|n| n.usage).unwrap_or_default()),
            Err(CompactFailed::Cancelled) => Err(Response::Cancelled),
            Err(CompactFailed::Failed(why)) => Err(Response::Failed(why)),
        }
    }

    /// The server refused the request as over its context length (`refusal`): compact once so
    /// that it can be sent again.
    async fn compact_for_refusal(
        &self,
        tools: &[Arc<ToolSpec>],
        index: u32,
        refusal: &str,
    ) -> Result<Usage, Response> {
        let Some(settings) = &self.inner.config().compaction else {
            return Err(Response::Failed(format!(
                "{refusal} (the conversation is over the model's context length: set the \
                 `compaction` option, or compact the conversation before the next turn)"
            )));
        };
        let route = self.stepped.map(|seam| seam.summary_at(index));
        let mut compaction = self
            .inner
            .compaction(settings, tools, self.sink, self.cancel);
        compaction.route = route.as_ref().map(|r| r as &dyn SummaryRoute);
        let pre = compaction.measure();
        match compaction.run(CompactTrigger::Auto, pre).await {
            Ok(Some(notice)) => Ok(notice.usage),
            Ok(None) => Err(Response::Failed(format!(
                "{refusal} (compaction found nothing older than the last {} messages to \
                 summarise)",
                settings.keep_recent
            ))),
            Err(CompactFailed::Cancelled) => Err(Response::Cancelled),
            Err(CompactFailed::Failed(why)) => Err(Response::Failed(why)),
        }
    }

    /// The reply's calls, parsed: the first ones as they were announced while the reply
    /// streamed (`early`: the same ids), as long as the reply lists them the same; and how many
    /// of the reply's first calls are those.
    fn parse_reply_calls(
        &self,
        raw: Vec<RawCall>,
        early: Vec<(RawCall, ToolCall)>,
        call_tool_offered: bool,
    ) -> (Vec<ToolCall>, usize) {
        let same = raw
            .iter()
            .zip(&early)
            .take_while(|(r, (e, _))| *r == e)
            .count();
        let mut calls: Vec<ToolCall> = Vec::with_capacity(raw.len());
        calls.extend(early.into_iter().take(same).map(|(_, c)| c));
        for r in raw.into_iter().skip(same) {
            let call = self.parse_call(r, &calls, call_tool_offered);
            calls.push(call);
        }
        (calls, same)
    }

    /// One call: its id (the wire's, unless empty or taken by one of `before`), its arguments
    /// parsed, `call_tool` unwrapped.
    fn parse_call(&self, r: RawCall, before: &[ToolCall], call_tool_offered: bool) -> ToolCall {
        let id = match r.id.filter(|id| !id.is_empty()) {
            Some(id) if !before.iter().any(|c| c.id == id) => id,
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
        call
    }

    pub(crate) fn emit_tool_call(&self, c: &ToolCall) {
        self.sink.emit_with(|| Event::ToolCall {
            call_id: c.id.clone(),
            name: c.name.clone(),
            arguments: c.arguments.clone(),
            agent: Vec::new(),
        });
    }

    /// Emit `tool_result` for `out` (with what the call `spent` on models, if anything) and
    /// make it the call's result message.
    pub(crate) fn result_message(
        &self,
        call: &ToolCall,
        out: ToolOutput,
        spent: Option<Usage>,
    ) -> Message {
        let out = if out.images.is_empty() {
            out
        } else {
            check_result_images(&call.name, out)
        };
        let out = if !out.images.is_empty() && !self.inner.config().takes_images() {
            // Never a silent drop: the model learns why it gets no image.
            ToolOutput::error(format!(
                "{} returned {} image(s), but this model takes no images (the client's `images` \
                 option is false); its text was: {}",
                call.name,
                out.images.len(),
                out.model_text()
            ))
        } else {
            out
        };
        let content = out.model_text();
        self.sink.emit_with(|| Event::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.clone(),
            is_error: out.is_error,
            metadata: out.metadata,
            usage: spent,
            agent: Vec::new(),
        });
        let mut message =
            Message::tool_result(call.id.clone(), call.name.clone(), content, out.is_error);
        if let Message::Tool { content, .. } = &mut message {
            content.extend(out.images.into_iter().map(Part::Image));
        }
        message
    }

    /// Check one call, pass it through the gate, and run it.
    /// What the call spends on models (a subagent's turn) is added to `spent`.
    /// Such a call (js_execution's inner call, a chain task's) does not suspend.
    pub(crate) async fn handle_call(&self, call: &ToolCall, spent: &UsageCell) -> ToolOutput {
        match self.admit_call(call, Taking::Inner).await {
            Admission::Settled(out) => out,
            Admission::Run { entry, event } => self.execute(&entry, &event, spent).await,
        }
    }

    /// Check one call and pass it through the gate (its asks answered): either its result
    /// without running (an error, a denial, an answer given as the result) or the go-ahead.
    /// `taking` says whether its ask may suspend the turn, and whether it is held (then a
    /// go-ahead, or an ask cut by the turn's cancel, leaves it waiting for the resume, noted in
    /// the turn's durable state with the approvals the gate got).
    pub(crate) async fn admit_call(&self, call: &ToolCall, taking: Taking) -> Admission {
        let own = taking != Taking::Inner;
        let held = self.durable.filter(|_| taking == Taking::Held);
        let hold = |entry: &Entry, approvals: Vec<(usize, String)>| {
            if let Some(durable) = held {
                durable.hold(Held {
                    call_id: call.id.clone(),
                    approvals,
                    tool_digest: digests::tool(&entry.spec),
                });
            }
        };
        let allowed = |n: &str| self.allowed(n);
        if call.name == CALL_TOOL && call.via.is_none() {
            return Admission::Settled(self.call_tool_search(call));
        }
        let Some(entry) = self.inner.toolkit().lookup(&call.name, &allowed) else {
            return Admission::Settled(ToolOutput::error(self.unknown_tool(&call.name)));
        };
        let settled = |out: ToolOutput| Admission::Settled(out);
        // A resumed call whose tool or config changed since it suspended fails closed.
        if let Some(why) = self.durable.and_then(|d| d.fail_closed(&call.id, &entry)) {
            return settled(ToolOutput::error(why));
        }
        if call.raw_arguments {
            let raw = call.arguments.as_str().unwrap_or_default();
            let why = serde_json::from_str::<Value>(raw)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            return settled(ToolOutput::error(format!(
                "the arguments of {} are not valid JSON ({why}); send a JSON object",
                call.name
            )));
        }
        if !call.arguments.is_object() {
            return settled(ToolOutput::error(format!(
                "the arguments of {} must be a JSON object, got {}",
                call.name, call.arguments
            )));
        }
        if let Err(problems) = entry.validate(&call.arguments) {
            return settled(ToolOutput::error(format!(
                "the arguments of {} do not match its input schema: {problems}",
                call.name
            )));
        }
        let event = ToolCallEvent {
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            call_id: call.id.clone(),
            hints: entry.spec.hints,
            source: entry.source,
            server: entry.server.clone(),
            agent: self.scope.agent(),
        };
        let Some(gated) = self.gate(&event).await else {
            // Cancelled: a held call is gated again at resume.
            hold(&entry, Vec::new());
            return settled(ToolOutput::error(CANCELLED_RESULT));
        };
        let gate = |decision: GateVerdict, message: Option<String>| {
            self.sink
                .emit_with(|| gated.event(&event, decision, message))
        };
        if let Some(message) = gated.denied.clone() {
            gate(GateVerdict::Deny, Some(message.clone()));
            return settled(ToolOutput::error(message));
        }
        if gated.asks.is_empty() {
            gate(GateVerdict::Allow, None);
            hold(&entry, Vec::new());
            return Admission::Run { entry, event };
        }
        gate(GateVerdict::Ask, None);
        let rule = gated.rule.clone();
        let mut approvals = Vec::new();
        // Every gate that asked must approve, the innermost first.
        for (level, mut request) in gated.asks {
            request.call_id = event.call_id.clone();
            request.name = event.name.clone();
            request.arguments = event.arguments.clone();
            let Some((answer, deadline_ms)) = self.ask(request.clone(), level).await else {
                hold(&entry, Vec::new());
                return settled(ToolOutput::error(CANCELLED_RESULT));
            };
            let answer = match (answer, self.durable.filter(|_| own)) {
                (Answer::Suspend, Some(durable)) => {
                    // The turn stops after this reply's running calls; the checkpoint holds
                    // this ask.
                    durable.suspend(Suspended {
                        call_id: event.call_id.clone(),
                        request,
                        deadline_ms,
                        level,
                        rule,
                        tool_digest: digests::tool(&entry.spec),
                    });
                    return settled(ToolOutput::error(SUSPENDED_RESULT));
                }
                (Answer::Suspend, None) => Answer::deny(SUSPEND_UNAVAILABLE),
                (answer, _) => answer,
            };
            self.sink.emit(Event::Answer {
                call_id: event.call_id.clone(),
                name: event.name.clone(),
                answer: answer.clone(),
                agent: Vec::new(),
            });
            match answer {
                Answer::Approve => approvals.push((level, digests::request(&request))),
                Answer::Deny(message) => {
                    return settled(ToolOutput::error(
                        message.unwrap_or_else(|| DEFAULT_DENIAL.to_string()),
                    ))
                }
                Answer::Result(value) => return settled(ToolOutput::json(value)),
                Answer::Suspend => unreachable!("a suspend answer was handled above"),
            }
        }
        hold(&entry, approvals);
        Admission::Run { entry, event }
    }

    /// Pass `event` through every gate of the chain ([`gate_chain::gate`]); `None` when
    /// cancelled.
    async fn gate(&self, event: &ToolCallEvent) -> Option<Gated> {
        gate_chain::gate(&self.scope, event, self.inner.root(), self.cancel).await
    }

    /// Wait for the host's answer; `None` when the turn was cancelled meanwhile. The ask of the
    /// gate at `level` is answered by that client's `wait_for`, else the nearest one further
    /// out (a subagent without one asks its parent's).
    ///
    /// With the answer comes the ask's absolute deadline (Unix ms), when it has one: a resumed
    /// ask keeps the one it had (what is left of it is the request's `timeout_ms`, and past it
    /// the ask is denied as timed out without asking), and the answer the resume brought
    /// stands in for the host's.
    async fn ask(
        &self,
        mut request: PendingRequest,
        level: usize,
    ) -> Option<(Answer, Option<u64>)> {
        // A stepped turn's clock is its state, not the machine's.
        let now = self.stepped.map_or_else(now_ms, |s| s.clock_ms);
        let resumed = self.durable.map(|d| d.resumed_ask(&request, level));
        let (deadline, given) = match resumed {
            Some(Resumed::Same {
                deadline_ms,
                answer,
            }) => {
                if let Some(d) = deadline_ms {
                    request.timeout_ms = Some(d.saturating_sub(now));
                }
                (deadline_ms, answer)
            }
            _ => (request.timeout_ms.map(|t| now.saturating_add(t)), None),
        };
        if deadline.is_some_and(|d| d <= now) || given.is_some() {
            // Decided without asking: the host still sees the request, as for any ask.
            self.sink.emit(Event::Pending {
                call_id: request.call_id.clone(),
                name: request.name.clone(),
                request: request.clone(),
                agent: Vec::new(),
            });
            // Past its deadline the ask is denied as timed out, whatever answer came.
            let answer = match given {
                Some(answer) if deadline.is_none_or(|d| d > now) => answer,
                _ => Answer::deny(ASK_TIMEOUT_DENIAL),
            };
            return Some((answer, deadline));
        }
        let notice = Notification {
            kind: NotificationKind::Ask,
            message: format!(
                "{} needs approval{}",
                request.name,
                request
                    .prompt
                    .as_deref()
                    .map(|p| format!(": {p}"))
                    .unwrap_or_default()
            ),
        };
        self.inner.lifecycle().notify(&notice, self.cancel).await;
        let asked = gate_chain::ask(&self.scope, request.clone(), level, self.cancel, self.sink);
        let answer = match self.stepped {
            None => asked.await,
            Some(seam) => until_cancelled(self.cancel, seam.ask(request, asked))
                .await
                .flatten(),
        };
        answer.map(|a| (a, deadline))
    }

    /// Run an allowed call, then `after_tool`.
    pub(crate) async fn execute(
        &self,
        entry: &Entry,
        event: &ToolCallEvent,
        spent: &UsageCell,
    ) -> ToolOutput {
        self.sink.emit_with(|| Event::ToolStart {
            call_id: event.call_id.clone(),
            name: event.name.clone(),
            agent: Vec::new(),
        });
        // js_execution's code calls tools: those calls come back here, to this turn's gate.
        let (inner, inner_rx) = self.inner_calls_for(event).unzip();
        let ctx = ToolContext {
            call_id: event.call_id.clone(),
            name: event.name.clone(),
            cancel: self.cancel.clone(),
            root: self.inner.root().clone(),
            events: self.sink.clone(),
            secret_env: self.inner.secret_env().clone(),
            scope: self.scope.clone(),
            spent: spent.clone(),
            inner,
            turn_id: self.durable.map(|d| Arc::from(d.turn_id.as_str())),
        };
        let call = AssertUnwindSafe(entry.tool.call(event.arguments.clone(), ctx)).catch_unwind();
        let run = async {
            let ran = match inner_rx {
                None => until_cancelled(self.cancel, call).await,
                Some(rx) => {
                    until_cancelled(self.cancel, self.serve_inner_calls(event, spent, rx, call))
                        .await
                }
            };
            ran.map(|ran| match ran {
                Ok(Ok(out)) => out,
                Ok(Err(e)) => ToolOutput::error(e.message),
                Err(_) => ToolOutput::error(format!("the tool {} panicked", event.name)),
            })
        };
        let output = match self.stepped {
            None => run.await,
            Some(seam) => {
                let call = ToolCall {
                    id: event.call_id.clone(),
                    name: event.name.clone(),
                    arguments: event.arguments.clone(),
                    raw_arguments: false,
                    via: None,
                };
                let run = async {
                    run.await
                        .unwrap_or_else(|| ToolOutput::error(CANCELLED_RESULT))
                };
                until_cancelled(self.cancel, seam.tool(call, run)).await
            }
        };
        let Some(output) = output else {
            return ToolOutput::error(CANCELLED_RESULT);
        };
        // Every client of the chain sees the result, the innermost first; each may replace it.
        let mut output = output;
        for frame in self.scope.gates_inner_to_outer() {
            match frame.gate.after(event, &output, self.cancel).await {
                None => return ToolOutput::error(CANCELLED_RESULT),
                Some(Ok(Some(new))) => output = new,
                Some(Ok(None)) => {}
                Some(Err(e)) => return ToolOutput::error(format!("after_tool hook failed: {e}")),
            }
        }
        output
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

/// A suspended reply at resume: the checkpoint's reply and call states.
struct Replay {
    reply: Reply,
    calls: Vec<CallState>,
    exhausted: Option<policy::Exhausted>,
}

impl Replay {
    fn of(cp: Checkpoint) -> Self {
        Replay {
            reply: cp.reply,
            calls: cp.calls,
            exhausted: cp.exhausted,
        }
    }

    /// The reply, as if the model had just given it (already counted in usage and budget).
    fn response(&self) -> Response {
        Response::Answer {
            text: self.reply.text.clone(),
            calls: self.reply.calls.clone(),
            extra: self.reply.extra.clone(),
            usage: Usage::default(),
            stop: None,
            paused: false,
            early: 0,
        }
    }

    /// The recorded results, by call id.
    fn results(&self) -> std::collections::BTreeMap<String, Message> {
        self.calls
            .iter()
            .filter_map(|c| match c {
                CallState::Done { call_id, result } => Some((call_id.clone(), result.clone())),
                _ => None,
            })
            .collect()
    }

    /// The `i`-th call's result without running it: a recorded one (a placeholder the step
    /// swaps for the recorded message), or the ceiling it reached.
    fn settled(&self, i: usize) -> Option<ToolOutput> {
        match self.calls.get(i)? {
            CallState::Done { .. } => Some(ToolOutput::text(String::new())),
            CallState::Untaken {
                settled: Some(text),
                ..
            } => Some(ToolOutput::error(text.clone())),
            _ => None,
        }
    }
}

/// What a suspended step's checkpoint is made of.
struct CheckpointParts<'s> {
    /// The calls that suspended and those held after them.
    suspension: Suspension,
    /// The reply's message and the results that came in, in the model's order.
    step: Vec<Message>,
    reply: Reply,
    /// The `i`-th call's result without running, when a ceiling gives it one.
    settled: &'s dyn Fn(usize) -> Option<ToolOutput>,
    index: u32,
    usage: Usage,
    budget: Budget,
    exhausted: Option<policy::Exhausted>,
    corrections: u32,
}

impl Turn<'_> {
    /// Whether one of this turn's calls suspended.
    fn suspending(&self) -> bool {
        self.durable.is_some_and(Durable::suspending)
    }

    /// The checkpoint of a step that suspended: the conversation before it, the reply, each
    /// call's state (result in, asked, or not taken), what the turn spent.
    fn checkpoint(&self, durable: &Durable, parts: CheckpointParts<'_>) -> Checkpoint {
        let allowed = |n: &str| self.allowed(n);
        let offered = self.inner.toolkit().offered(&allowed);
        let mut specs: Vec<&ToolSpec> = offered.iter().map(|s| s.as_ref()).collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        let mut results: std::collections::BTreeMap<&str, &Message> = parts
            .step
            .iter()
            .filter_map(|m| match m {
                Message::Tool { call_id, .. } => Some((call_id.as_str(), m)),
                _ => None,
            })
            .collect();
        let Suspension { suspended, held } = &parts.suspension;
        let calls = parts
            .reply
            .calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                if let Some(m) = results.remove(call.id.as_str()) {
                    return CallState::Done {
                        call_id: call.id.clone(),
                        result: m.clone(),
                    };
                }
                if let Some(s) = suspended.iter().find(|s| s.call_id == call.id) {
                    return CallState::Asked {
                        call_id: call.id.clone(),
                        request: Box::new(s.request.clone()),
                        deadline_ms: s.deadline_ms,
                        request_digest: digests::request(&s.request),
                        tool_digest: s.tool_digest.clone(),
                        call_digest: crate::durable::call_digest(call),
                        level: s.level,
                        rule: s.rule.clone(),
                    };
                }
                let kept = held.iter().find(|h| h.call_id == call.id);
                if let Some(h) = kept.filter(|h| !h.approvals.is_empty()) {
                    return CallState::Approved {
                        call_id: call.id.clone(),
                        approvals: h
                            .approvals
                            .iter()
                            .map(|(level, d)| Approval {
                                level: *level,
                                request_digest: d.clone(),
                            })
                            .collect(),
                        tool_digest: h.tool_digest.clone(),
                        call_digest: crate::durable::call_digest(call),
                    };
                }
                CallState::Untaken {
                    call_id: call.id.clone(),
                    tool_digest: self
                        .inner
                        .toolkit()
                        .lookup(&call.name, &allowed)
                        .map(|e| digests::tool(&e.spec)),
                    settled: (parts.settled)(i).map(|o| o.model_text()),
                }
            })
            .collect();
        Checkpoint {
            version: CHECKPOINT_VERSION,
            turn_id: durable.turn_id.clone(),
            seq: durable.seq,
            prompt: durable.prompt.clone(),
            config_digest: digests::config(self.inner.config()),
            tools_digest: digests::of(&specs),
            transcript: self.inner.transcript(),
            reply: parts.reply,
            calls,
            index: parts.index,
            usage: parts.usage,
            budget: parts.budget,
            exhausted: parts.exhausted,
            corrections: parts.corrections,
            run: durable.run.clone(),
        }
    }
}

/// The turn runs a reply's calls ([`ReplyCalls`]) under the reply's cancel token (its own).
impl CallRunner for Turn<'_> {
    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Read-only and subagent calls under `read_only`. A call that names no tool it may use
    /// gets its error at the gate and runs nothing, so it waits for nothing either.
    fn runs_beside(&self, call: &ToolCall, mode: ToolConcurrency) -> bool {
        match mode {
            ToolConcurrency::All => true,
            ToolConcurrency::Sequential => false,
            ToolConcurrency::ReadOnly => {
                if call.name == CALL_TOOL && call.via.is_none() {
                    return true;
                }
                let allowed = |n: &str| self.allowed(n);
                match self.inner.toolkit().lookup(&call.name, &allowed) {
                    None => true,
                    Some(entry) => {
                        entry.spec.hints.read_only == Some(true) || entry.source == Source::Subagent
                    }
                }
            }
        }
    }

    fn admit<'s>(&'s self, call: &'s ToolCall) -> BoxFuture<'s, Admission> {
        Box::pin(self.admit_call(call, Taking::Own))
    }

    fn hold<'s>(&'s self, call: &'s ToolCall) -> BoxFuture<'s, Option<ToolOutput>> {
        Box::pin(async move {
            match self.admit_call(call, Taking::Held).await {
                Admission::Run { .. } => None,
                // Suspended too, or its ask cut by the turn's cancel: it waits.
                Admission::Settled(_) if self.durable.is_some_and(|d| d.waits(&call.id)) => None,
                Admission::Settled(out) => Some(out),
            }
        })
    }

    fn run(&self, entry: Arc<Entry>, event: ToolCallEvent) -> BoxFuture<'_, (ToolOutput, Usage)> {
        Box::pin(async move {
            let cell = UsageCell::default();
            let out = self.execute(&entry, &event, &cell).await;
            (out, cell.get())
        })
    }
}
