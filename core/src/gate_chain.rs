//! The gate of one call, across the chain of clients of its turn: every client's judgement
//! (policy, then `before_tool`), then the asks answered by `wait_for`. A turn's tool calls pass
//! it ([`crate::turn`]), and so do the requests an MCP server makes during a call (sampling),
//! which have only the call's [`TurnScope`] at hand.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::time::Duration;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::event::{Event, GateVerdict};
use crate::gate::{
    Answer, Decision, PendingRequest, ToolCallEvent, ASK_TIMEOUT_DENIAL, DEFAULT_DENIAL,
};
use crate::scope::TurnScope;
use crate::tool::EventSink;

/// How an ask ended.
#[derive(Debug)]
pub(crate) enum Asked {
    /// The host answered.
    Answered(Answer),
    /// No client of the chain has a `wait_for`.
    NoWaitFor,
    /// The request's `timeout_ms` passed first.
    TimedOut,
    /// The host's `wait_for` failed or panicked (the message says which).
    Failed(String),
    /// The turn was cancelled first.
    Cancelled,
}

/// What the chain of gates said about one call.
#[derive(Default)]
pub(crate) struct Gated {
    /// The denial message, when a gate denied.
    pub denied: Option<String>,
    /// The asks to answer, in order, with the level of the gate that raised each.
    pub asks: Vec<(usize, PendingRequest)>,
    /// The policy rule for the gate event.
    pub rule: Option<String>,
}

impl Gated {
    /// The `gate` event for `event`'s verdict, naming the rule that decided.
    pub fn event(
        &self,
        event: &ToolCallEvent,
        decision: GateVerdict,
        message: Option<String>,
    ) -> Event {
        Event::Gate {
            call_id: event.call_id.clone(),
            name: event.name.clone(),
            decision,
            message,
            hints: event.hints,
            source: event.source,
            rule: self.rule.clone(),
            agent: Vec::new(),
        }
    }
}

/// Pass `event` through every gate of the chain, the turn's own client first, then
/// outwards (a subagent's call also passes its parent's gate). The stricter answer wins:
/// a deny ends it (the gates further out are not asked); asks add up. `None` when
/// cancelled.
pub(crate) async fn gate(
    scope: &TurnScope,
    event: &ToolCallEvent,
    root: &Path,
    cancel: &CancellationToken,
) -> Option<Gated> {
    let mut gated = Gated::default();
    let mut first_rule = None;
    for (level, frame) in scope.gates_inner_to_outer().enumerate() {
        let judged = frame.gate.judge(event, root, cancel).await?;
        if first_rule.is_none() {
            first_rule = judged.rule.clone();
        }
        match judged.decision {
            Err(e) => {
                gated.denied = Some(format!("before_tool hook failed: {e}"));
                gated.rule = judged.rule;
                break;
            }
            Ok(Decision::Deny(message)) => {
                gated.denied = Some(message.unwrap_or_else(|| DEFAULT_DENIAL.to_string()));
                gated.rule = judged.rule;
                break;
            }
            Ok(Decision::Ask(request)) => {
                if gated.asks.is_empty() {
                    gated.rule = judged.rule;
                }
                gated.asks.push((level, request));
            }
            Ok(Decision::Allow) => {}
        }
    }
    // The gate event names the rule that decided, else the turn's own client's.
    gated.rule = gated.rule.or(first_rule);
    Some(gated)
}

/// Wait for the host's answer; `None` when the turn was cancelled meanwhile. The ask of the
/// gate at `level` is answered by that client's `wait_for`, else the nearest one further
/// out (a subagent without one asks its parent's).
pub(crate) async fn ask(
    scope: &TurnScope,
    request: PendingRequest,
    level: usize,
    cancel: &CancellationToken,
    sink: &EventSink,
) -> Option<Answer> {
    Some(
        match ask_outcome(scope, request, level, cancel, sink).await {
            Asked::Cancelled => return None,
            Asked::Answered(answer) => answer,
            Asked::NoWaitFor => Answer::deny(
                "The operation needs approval, but the host has no wait_for to ask; it was denied.",
            ),
            Asked::TimedOut => Answer::deny(ASK_TIMEOUT_DENIAL),
            Asked::Failed(e) => Answer::deny(e),
        },
    )
}

/// [`ask`], telling each way an ask can end apart (an MCP elicitation maps them
/// to different actions). Emits the `pending` event.
pub(crate) async fn ask_outcome(
    scope: &TurnScope,
    request: PendingRequest,
    level: usize,
    cancel: &CancellationToken,
    sink: &EventSink,
) -> Asked {
    sink.emit(Event::Pending {
        call_id: request.call_id.clone(),
        name: request.name.clone(),
        request: request.clone(),
        agent: Vec::new(),
    });
    let Some(wait_for) = scope.wait_for_from(level) else {
        return Asked::NoWaitFor;
    };
    let wait_token = cancel.child_token();
    let timeout = request.timeout_ms.map(Duration::from_millis);
    let wait = AssertUnwindSafe(wait_for.wait_for(request, wait_token.clone())).catch_unwind();
    let timer = async {
        match timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    let asked = tokio::select! {
        biased;
        _ = cancel.cancelled() => Asked::Cancelled,
        _ = timer => Asked::TimedOut,
        a = wait => match a {
            Ok(Ok(answer)) => Asked::Answered(answer),
            Ok(Err(e)) => Asked::Failed(format!("wait_for failed: {e}")),
            Err(_) => Asked::Failed("wait_for panicked".into()),
        },
    };
    // The wait is over either way: tell a host still waiting to stop.
    wait_token.cancel();
    asked
}
