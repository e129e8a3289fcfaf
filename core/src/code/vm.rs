//! One run of model-written JavaScript: a fresh QuickJS runtime and context on the calling
//! thread (a thread of its own, [`super::tool`]), torn down at the end.
//!
//! The code runs as a global script with top-level `await` (its last expression is the value);
//! a script that uses `return` at top level runs again as the body of an async function (the
//! returned value is the value). Inner tool calls go out as [`InnerCall`]s and come back on
//! `settled`; while any is out and no job is pending, the thread waits for one, checking the
//! deadline and the stop flag.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Exception, Function, Promise, Runtime, Value};
use serde_json::Value as Json;
use tokio::sync::mpsc::UnboundedSender;

use super::heap::{HeapMeter, LimitedHeap};
use crate::config::CodeExecutionConfig;
use crate::tool::{InnerCall, InnerSettled};

/// The script's file name in stacks: error messages name the line as `code.js:LINE`.
const FILE: &str = "code.js";

/// How often a run waiting for an inner call looks at the deadline and the stop flag.
const POLL: Duration = Duration::from_millis(20);

/// What one run is given.
pub(crate) struct Job {
    pub code: String,
    pub limits: CodeExecutionConfig,
    /// The tools `tools.NAME` reaches (empty when run by hand, outside a turn).
    pub tools: Vec<String>,
    /// Where inner calls go; `None` outside a turn.
    pub calls: Option<UnboundedSender<InnerCall>>,
    /// Set when the turn is cancelled: the code is interrupted at once.
    pub stop: Arc<AtomicBool>,
}

/// Why a run ended without a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The code threw (or its promise rejected), or did not parse.
    Thrown,
    /// `timeout_ms` passed.
    Timeout,
    /// The heap reached `memory_mb`.
    Memory,
    /// The turn was cancelled.
    Cancelled,
    /// The code awaits something that can never come (no inner call is out, no job pending).
    NeverSettles,
}

/// How a run ended.
#[derive(Debug)]
pub(crate) struct Ended {
    /// What `console` printed (at most `max_output_bytes`).
    pub console: String,
    /// Bytes `console` was given in all (more than `console.len()` when cut).
    pub console_total: usize,
    /// The value, JSON-encoded (`None` for `undefined`), or the failure and its message.
    pub result: Result<Option<String>, (Failure, String)>,
    /// Inner calls made.
    pub calls: u64,
}

/// What the closures the code calls share with the run.
struct Shared {
    console: String,
    console_total: usize,
    max_output: usize,
    calls_made: u64,
    calls_out: u64,
}

/// Run `job` on this thread until the code's value is there, it fails, or a limit ends it.
pub(crate) fn run(job: Job) -> Ended {
    let meter = Arc::new(HeapMeter::default());
    let limits = job.limits.clone();
    let started = Instant::now();
    let deadline = started + Duration::from_millis(limits.timeout_ms);
    let shared = Rc::new(RefCell::new(Shared {
        console: String::new(),
        console_total: 0,
        max_output: usize::try_from(limits.max_output_bytes).unwrap_or(usize::MAX),
        calls_made: 0,
        calls_out: 0,
    }));
    let failure = || {
        let why = if job.stop.load(Ordering::Relaxed) {
            Failure::Cancelled
        } else if meter.hit() {
            Failure::Memory
        } else if Instant::now() >= deadline {
            Failure::Timeout
        } else {
            return None;
        };
        Some(why)
    };
    let result = match setup_runtime(&limits, &meter, &job.stop, deadline) {
        Err(e) => Err((
            Failure::Thrown,
            format!("the JavaScript engine did not start: {e}"),
        )),
        Ok((runtime, context)) => {
            let result = context.with(|ctx| drive(&ctx, &job, &shared, deadline, &failure));
            drop(context);
            drop(runtime);
            result
        }
    };
    // A limit reached wins over what the code made of it (a caught out-of-memory error, an
    // interrupted promise's rejection).
    let result = match failure() {
        Some(why) => Err((why, limit_message(why, &limits))),
        None => result,
    };
    let shared = Rc::try_unwrap(shared)
        .map(RefCell::into_inner)
        .unwrap_or_else(|rc| {
            let s = rc.borrow();
            Shared {
                console: s.console.clone(),
                console_total: s.console_total,
                max_output: s.max_output,
                calls_made: s.calls_made,
                calls_out: 0,
            }
        });
    Ended {
        console: shared.console,
        console_total: shared.console_total,
        result,
        calls: shared.calls_made,
    }
}

/// The message of a limit reached.
fn limit_message(why: Failure, limits: &CodeExecutionConfig) -> String {
    match why {
        Failure::Timeout => format!(
            "time limit hit: the code ran longer than {} ms (code_execution.timeout_ms)",
            limits.timeout_ms
        ),
        Failure::Memory => format!(
            "memory limit hit: the code needed more than {} MiB (code_execution.memory_mb)",
            limits.memory_mb
        ),
        Failure::Cancelled => crate::tool::CANCELLED_RESULT.to_string(),
        Failure::NeverSettles | Failure::Thrown => String::new(),
    }
}

fn setup_runtime(
    limits: &CodeExecutionConfig,
    meter: &Arc<HeapMeter>,
    stop: &Arc<AtomicBool>,
    deadline: Instant,
) -> rquickjs::Result<(Runtime, Context)> {
    let bytes = usize::try_from(limits.memory_mb.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX);
    let runtime = Runtime::new_with_alloc(LimitedHeap::new(bytes, meter.clone()))?;
    runtime.set_max_stack_size(usize::try_from(limits.max_stack_kb * 1024).unwrap_or(usize::MAX));
    let (stop, meter) = (stop.clone(), meter.clone());
    runtime.set_interrupt_handler(Some(Box::new(move || {
        stop.load(Ordering::Relaxed) || meter.hit() || Instant::now() >= deadline
    })));
    let context = Context::full(&runtime)?;
    Ok((runtime, context))
}

/// The prelude: `console` and a frozen `tools` object whose functions return promises settled
/// by the run. Takes the Rust functions as arguments, so nothing else reaches the globals;
/// returns the function that settles call `id`. `Atomics.wait` would block the thread beyond
/// the interrupt handler's reach: it goes.
const PRELUDE: &str = r#"(function (names, call, print) {
  "use strict";
  const show = (v) => {
    if (typeof v === "string") return v;
    try { const s = JSON.stringify(v); return s === undefined ? String(v) : s; }
    catch (e) { return String(v); }
  };
  const log = (...args) => print(args.map(show).join(" "));
  globalThis.console = Object.freeze({ log, info: log, warn: log, error: log, debug: log });
  const pending = new Map();
  const tools = Object.create(null);
  for (const name of names) {
    tools[name] = (args) => new Promise((resolve, reject) => {
      const text = JSON.stringify(args === undefined ? {} : args);
      pending.set(call(name, text === undefined ? "null" : text), [resolve, reject]);
    });
  }
  Object.defineProperty(globalThis, "tools", { value: Object.freeze(tools) });
  if (typeof Atomics === "object") { delete Atomics.wait; }
  return (id, ok, text) => {
    const p = pending.get(id);
    pending.delete(id);
    if (p) { if (ok) p[0](text); else p[1](new Error(text)); }
  };
})"#;

/// Set up the context, evaluate the code and drive its promise to the end.
fn drive<'js>(
    ctx: &Ctx<'js>,
    job: &Job,
    shared: &Rc<RefCell<Shared>>,
    deadline: Instant,
    failure: &dyn Fn() -> Option<Failure>,
) -> Result<Option<String>, (Failure, String)> {
    let internal = |e: rquickjs::Error| (Failure::Thrown, format!("js_execution: {e}"));
    let (settled_tx, settled_rx) = channel::<InnerSettled>();
    let settle = {
        let prelude: Function = ctx.eval(PRELUDE).map_err(internal)?;
        let print = {
            let shared = shared.clone();
            Function::new(ctx.clone(), move |line: String| {
                let mut s = shared.borrow_mut();
                let room = s.max_output.saturating_sub(s.console.len());
                let piece = format!("{line}\n");
                s.console_total += piece.len();
                if room > 0 {
                    let cut = floor_char_boundary(&piece, room);
                    s.console.push_str(&piece[..cut]);
                }
            })
            .map_err(internal)?
        };
        let call = {
            let shared = shared.clone();
            let calls = job.calls.clone();
            let max = job.limits.max_tool_calls;
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, name: String, arguments: String| -> rquickjs::Result<f64> {
                    let mut s = shared.borrow_mut();
                    if s.calls_made >= max {
                        return Err(Exception::throw_message(
                            &ctx,
                            &format!(
                                "max_tool_calls reached: a run may make {max} tool calls \
                                 (code_execution.max_tool_calls)"
                            ),
                        ));
                    }
                    let Some(calls) = &calls else {
                        return Err(Exception::throw_message(
                            &ctx,
                            "tools are reachable only inside a turn",
                        ));
                    };
                    let arguments: Json = serde_json::from_str(&arguments).unwrap_or(Json::Null);
                    let id = s.calls_made;
                    let sent = calls.send(InnerCall {
                        id,
                        name,
                        arguments,
                        reply: settled_tx.clone(),
                    });
                    if sent.is_err() {
                        return Err(Exception::throw_message(&ctx, "the turn is over"));
                    }
                    s.calls_made += 1;
                    s.calls_out += 1;
                    Ok(id as f64)
                },
            )
            .map_err(internal)?
        };
        let settle: Function = prelude
            .call((job.tools.clone(), call, print))
            .map_err(|e| thrown(ctx, e))?;
        settle
    };
    let promise = evaluate(ctx, &job.code)?;
    loop {
        while ctx.execute_pending_job() {}
        if let Some(why) = failure() {
            return Err((why, String::new()));
        }
        match promise.state() {
            PromiseState::Resolved => {
                let value: Value = promise
                    .result::<Value>()
                    .transpose()
                    .map_err(internal)?
                    .unwrap_or_else(|| Value::new_undefined(ctx.clone()));
                return encode(ctx, value);
            }
            PromiseState::Rejected => {
                let reason = promise.result::<Value>();
                let e = match reason {
                    Some(Err(e)) => thrown(ctx, e),
                    Some(Ok(v)) => describe(ctx, v),
                    None => (Failure::Thrown, "the code failed".into()),
                };
                return Err(e);
            }
            PromiseState::Pending => {}
        }
        if shared.borrow().calls_out == 0 {
            return Err((
                Failure::NeverSettles,
                "the code's promise never settles: it awaits something that cannot come (no \
                 tool call is out; timers do not exist here)"
                    .into(),
            ));
        }
        match wait(&settled_rx, deadline, failure) {
            Some(done) => {
                shared.borrow_mut().calls_out -= 1;
                let (ok, text) = match done.result {
                    Ok(text) => (true, text),
                    Err(text) => (false, text),
                };
                // A throw here is the interrupt (a limit): the loop names it.
                let _ = settle.call::<_, ()>((done.id as f64, ok, text));
            }
            None => continue,
        }
    }
}

/// Wait for an inner call's end, up to the deadline; `None` when a limit or the stop flag
/// ended the wait (the caller's loop names it).
fn wait(
    settled: &Receiver<InnerSettled>,
    deadline: Instant,
    failure: &dyn Fn() -> Option<Failure>,
) -> Option<InnerSettled> {
    loop {
        if failure().is_some() {
            return None;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match settled.recv_timeout(left.min(POLL)) {
            Ok(done) => return Some(done),
            Err(RecvTimeoutError::Timeout) => continue,
            // Every sender is the run's own: unreachable while it runs.
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// Evaluate the code: a global script with top-level await, or (when it returns at top level)
/// an async function's body. Either way a promise of the value.
fn evaluate<'js>(ctx: &Ctx<'js>, code: &str) -> Result<Promise<'js>, (Failure, String)> {
    let mut options = EvalOptions::default();
    options.promise = true;
    options.filename = Some(FILE.into());
    match ctx.eval_with_options::<Promise, _>(code, options) {
        Ok(p) => Ok(p),
        Err(e) => {
            let err = thrown(ctx, e);
            if !err.1.contains("return not in a function") {
                return Err(err);
            }
            // The opening stays on the code's first line, so line numbers hold.
            let wrapped = format!("(async function () {{{code}\n}})()");
            let mut options = EvalOptions::default();
            options.filename = Some(FILE.into());
            ctx.eval_with_options::<Promise, _>(wrapped, options)
                .map_err(|e| thrown(ctx, e))
                .map(|p| wrap_value(ctx, p))
                .and_then(|p| p)
        }
    }
}

/// A promise of `{value}` from the async function's promise of the value (the shape top-level
/// await gives).
fn wrap_value<'js>(ctx: &Ctx<'js>, p: Promise<'js>) -> Result<Promise<'js>, (Failure, String)> {
    let wrap: Function = ctx
        .eval("(p) => p.then((value) => ({ value }))")
        .map_err(|e| thrown(ctx, e))?;
    wrap.call((p,)).map_err(|e| thrown(ctx, e))
}

/// The value (`{value}` from the script's promise), JSON-encoded; `None` for `undefined`.
fn encode<'js>(ctx: &Ctx<'js>, wrapper: Value<'js>) -> Result<Option<String>, (Failure, String)> {
    let value: Value = match wrapper.as_object() {
        Some(o) => o.get("value").map_err(|e| thrown(ctx, e))?,
        None => wrapper,
    };
    if value.is_undefined() {
        return Ok(None);
    }
    match ctx.json_stringify(value) {
        Ok(Some(s)) => Ok(Some(s.to_string().map_err(|e| thrown(ctx, e))?)),
        Ok(None) => Ok(None),
        Err(e) => {
            let (why, message) = thrown(ctx, e);
            Err((
                why,
                format!("the value could not be JSON-encoded: {message}"),
            ))
        }
    }
}

/// The pending exception behind `e`, described.
fn thrown<'js>(ctx: &Ctx<'js>, e: rquickjs::Error) -> (Failure, String) {
    if e.is_exception() {
        describe(ctx, ctx.catch())
    } else {
        (Failure::Thrown, e.to_string())
    }
}

/// A thrown value as the model reads it: `Name: message (line N)`, or the value itself.
fn describe<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> (Failure, String) {
    let _ = ctx;
    if let Some(e) = value.as_exception() {
        let message = e.message().unwrap_or_default();
        let name: String = e
            .get::<_, Option<rquickjs::Coerced<String>>>("name")
            .ok()
            .flatten()
            .map(|c| c.0)
            .unwrap_or_else(|| "Error".into());
        let line = e.stack().as_deref().and_then(line_of);
        let text = match line {
            Some(line) => format!("{name}: {message} (line {line})"),
            None => format!("{name}: {message}"),
        };
        return (Failure::Thrown, text);
    }
    let shown = value
        .as_string()
        .and_then(|s| s.to_string().ok())
        .or_else(|| {
            ctx.json_stringify(value.clone())
                .ok()
                .flatten()
                .and_then(|s| s.to_string().ok())
        })
        .unwrap_or_else(|| format!("{:?}", value.type_of()));
    (Failure::Thrown, format!("Uncaught {shown}"))
}

/// The first `code.js:LINE` of a stack.
fn line_of(stack: &str) -> Option<u64> {
    let at = stack.find("code.js:")? + "code.js:".len();
    let digits: String = stack[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The largest char boundary of `s` at or below `at`.
pub(crate) fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}
