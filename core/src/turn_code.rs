//! The tool calls `js_execution`'s code makes (`await tools.NAME(args)`): the turn takes each
//! as one of its own calls, through [`Turn::handle_call`] (checks, `before_tool`, the policy,
//! asks, `after_tool`) exactly as a call the model made, with the usual events.
//!
//! Inner calls run one at a time, in the order the code made them (a `Promise.all` of many is
//! still one run; they queue), so a write never races a read. Each gets the id
//! `PARENT/jsN` (the js_execution call's id, the run's count), and the js_execution result's
//! metadata lists them (`calls`: id, name, whether it failed).

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::code::JS_EXECUTION;
use crate::gate::ToolCallEvent;
use crate::scope::UsageCell;
use crate::tool::{InnerCall, InnerCalls, InnerSettled, Source, ToolOutput, CALL_TOOL};
use crate::transcript::ToolCall;
use crate::turn::Turn;

/// How a tool call ended: its output or error, or its panic.
pub(crate) type Ran<E> = Result<Result<ToolOutput, E>, Box<dyn std::any::Any + Send>>;

/// The record of one inner call in the js_execution result's metadata.
struct Record {
    call_id: String,
    name: String,
    is_error: bool,
}

impl Turn<'_> {
    /// For a call of `js_execution`: the channel its inner calls come on and what goes into
    /// its context. `None` for any other tool.
    pub(crate) fn inner_calls_for(
        &self,
        event: &ToolCallEvent,
    ) -> Option<(InnerCalls, UnboundedReceiver<InnerCall>)> {
        if event.name != JS_EXECUTION || event.source != Source::Builtin {
            return None;
        }
        let mut names: Vec<String> = self
            .inner
            .toolkit()
            .names_and_servers()
            .into_iter()
            .map(|(name, _)| name)
            .filter(|n| n != JS_EXECUTION && n != CALL_TOOL && self.allowed(n))
            .collect();
        names.sort();
        names.dedup();
        let (tx, rx) = unbounded_channel();
        Some((
            InnerCalls {
                tx,
                names: Arc::new(names),
            },
            rx,
        ))
    }

    /// Drive `run` (the js_execution call) while taking the inner calls that come on `rx`, one
    /// at a time; then list them in the output's metadata. When the run ends, a call still
    /// running is waited for (the turn's cancel still ends it); queued ones are dropped unstarted.
    ///
    /// Boxed: the inner calls run through [`Turn::execute`], which runs this.
    pub(crate) fn serve_inner_calls<'s, E: Send + 's>(
        &'s self,
        parent: &'s ToolCallEvent,
        spent: &'s UsageCell,
        mut rx: UnboundedReceiver<InnerCall>,
        run: impl Future<Output = Ran<E>> + Send + 's,
    ) -> BoxFuture<'s, Ran<E>> {
        Box::pin(async move {
            tokio::pin!(run);
            let mut queue: VecDeque<InnerCall> = VecDeque::new();
            let mut current: Option<BoxFuture<'_, (InnerCall, ToolCall, ToolOutput)>> = None;
            let mut records: Vec<Record> = Vec::new();
            let ended = loop {
                if current.is_none() {
                    if let Some(request) = queue.pop_front() {
                        current = Some(Box::pin(self.inner_call(parent, request, spent)));
                    }
                }
                tokio::select! {
                    biased;
                    ended = &mut run => break ended,
                    Some(request) = rx.recv() => queue.push_back(request),
                    // cannot fail: the branch runs only when `current` is set.
                    (request, call, out) = async { current.as_mut().expect("guarded").await }, if current.is_some() => {
                        current = None;
                        records.push(Record {
                            call_id: call.id.clone(),
                            name: call.name.clone(),
                            is_error: out.is_error,
                        });
                        let text = out.model_text();
                        let result = if out.is_error { Err(text) } else { Ok(text) };
                        // The run may have ended meanwhile: nobody to tell then.
                        let _ = request.reply.send(InnerSettled { id: request.id, result });
                    }
                }
            };
            // A call already started (the code did not wait for it) still ends as a call does:
            // a write is never cut off half way. The queued ones never started: no event, no run.
            if let Some(running) = current {
                let (_, call, out) = running.await;
                records.push(Record {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    is_error: out.is_error,
                });
            }
            Ok(ended?.map(|out| with_records(out, &records)))
        })
    }

    /// One inner call: announced (`tool_call`), taken through the gate and run, its result
    /// emitted (`tool_result`).
    async fn inner_call(
        &self,
        parent: &ToolCallEvent,
        request: InnerCall,
        spent: &UsageCell,
    ) -> (InnerCall, ToolCall, ToolOutput) {
        let call = ToolCall {
            id: format!("{}/js{}", parent.call_id, request.id),
            name: request.name.clone(),
            arguments: request.arguments.clone(),
            raw_arguments: false,
            via: None,
        };
        self.emit_tool_call(&call);
        let out = if call.name == JS_EXECUTION {
            ToolOutput::error("js_execution cannot call itself")
        } else {
            self.handle_call(&call, spent).await
        };
        let _ = self.result_message(&call, out.clone(), None);
        (request, call, out)
    }
}

/// `out` with the inner calls listed in its metadata (`calls`).
fn with_records(mut out: ToolOutput, records: &[Record]) -> ToolOutput {
    if records.is_empty() {
        return out;
    }
    let calls: Vec<Value> = records
        .iter()
        .map(|r| json!({"call_id": r.call_id, "name": r.name, "is_error": r.is_error}))
        .collect();
    let mut meta = match out.metadata.take() {
        Some(Value::Object(m)) => m,
        Some(other) => {
            let mut m = serde_json::Map::new();
            m.insert("metadata".into(), other);
            m
        }
        None => serde_json::Map::new(),
    };
    meta.insert("calls".into(), Value::Array(calls));
    out.metadata = Some(Value::Object(meta));
    out
}
