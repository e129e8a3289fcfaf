//! The `js_execution` builtin: runs the model's JavaScript on a thread of its own (the async
//! runtime never blocks on it) and answers with what it printed and its value.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::vm::{self, floor_char_boundary, Ended, Failure, Job};
use crate::config::CodeExecutionConfig;
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The builtin's name.
pub const JS_EXECUTION: &str = "js_execution";

/// Native stack the thread gets beyond `max_stack_kb`: QuickJS stops the code at its limit,
/// and the engine's own frames (and Rust's) need room past it.
const STACK_MARGIN: usize = 1024 * 1024;

/// `js_execution`: model-written JavaScript in a fresh QuickJS context per call.
pub(crate) struct JsExecution {
    limits: CodeExecutionConfig,
}

impl JsExecution {
    pub(crate) fn new(limits: CodeExecutionConfig) -> Self {
        JsExecution { limits }
    }
}

/// Sets the stop flag when the call ends or is dropped (a cancelled turn drops it): a run
/// still going is interrupted and its thread ends.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[async_trait]
impl Tool for JsExecution {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            JS_EXECUTION,
            "Run JavaScript (ES2023, in a sandbox: no files, network, timers, modules or \
             environment) and get what it printed with console.log plus the value of its last \
             expression or of a top-level `return`, JSON-encoded. Call tools from the code with \
             `await tools.NAME({...arguments})`: each resolves to the tool's result text and \
             rejects with its error; every call passes the same approval as a direct one. Use \
             it to make many tool calls and compute over their results in one step.",
            json!({
                "type": "object",
                "properties": {
                    "code": {"type": "string", "description": "The JavaScript to run. Top-level await works."}
                },
                "required": ["code"],
                "additionalProperties": false
            }),
        )
        .with_hints(Hints {
            read_only: None,
            destructive: None,
            open_world: None,
        })
    }

    fn source(&self) -> Source {
        Source::Builtin
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(code) = args.get("code").and_then(Value::as_str) else {
            return Err(ToolError::new("missing string argument `code`"));
        };
        let code = code.to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let _stop_on_drop = StopOnDrop(stop.clone());
        let (tools, calls) = match &ctx.inner {
            Some(inner) => (inner.names.as_ref().clone(), Some(inner.tx.clone())),
            None => (Vec::new(), None),
        };
        let job = Job {
            code,
            limits: self.limits.clone(),
            tools,
            calls,
            stop: stop.clone(),
        };
        let limits = self.limits.clone();
        let ended = run_on_thread(job, &limits).await?;
        Ok(answer(ended, &limits))
    }
}

/// Run `job` on a thread of its own with a stack sized for the limit; the call awaits its end.
async fn run_on_thread(job: Job, limits: &CodeExecutionConfig) -> Result<Ended, ToolError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let stack = usize::try_from(limits.max_stack_kb * 1024).unwrap_or(usize::MAX) + STACK_MARGIN;
    std::thread::Builder::new()
        .name("contenox-js".into())
        .stack_size(stack)
        .spawn(move || {
            let _ = tx.send(vm::run(job));
        })
        .map_err(|e| ToolError::new(format!("js_execution could not start a thread: {e}")))?;
    rx.await
        .map_err(|_| ToolError::new("js_execution failed inside the JavaScript engine"))
}

/// The result the model sees: the console output, then the value; an error result for a
/// failure (with what was printed before it). Cut at `max_output_bytes`, the cut said.
fn answer(ended: Ended, limits: &CodeExecutionConfig) -> ToolOutput {
    let max = usize::try_from(limits.max_output_bytes).unwrap_or(usize::MAX);
    let mut text = ended.console;
    let mut total = ended.console_total;
    let mut meta = serde_json::Map::new();
    let out = match ended.result {
        Ok(value) => {
            if let Some(value) = value {
                total += value.len();
                let room = max.saturating_sub(text.len());
                text.push_str(&value[..floor_char_boundary(&value, room)]);
            }
            if text.is_empty() {
                text = "(no output: nothing printed, and the value is undefined)".into();
            }
            if total > text.len() {
                text.push_str(&format!(
                    "\n[output cut: {} of {total} bytes shown (code_execution.max_output_bytes)]",
                    text.len()
                ));
            }
            ToolOutput::text(text)
        }
        Err((why, message)) => {
            meta.insert("failure".into(), json!(failure_name(why)));
            let mut shown = message;
            if !text.is_empty() {
                shown.push_str("\nconsole output before it:\n");
                shown.push_str(&text);
                if total > text.len() {
                    shown.push_str(&format!(
                        "\n[console cut: {} of {total} bytes shown]",
                        text.len()
                    ));
                }
            }
            ToolOutput::error(shown)
        }
    };
    if ended.calls > 0 {
        meta.insert("tool_calls".into(), json!(ended.calls));
    }
    if meta.is_empty() {
        out
    } else {
        out.with_metadata(Value::Object(meta))
    }
}

/// The failure's name in the result's metadata.
fn failure_name(why: Failure) -> &'static str {
    match why {
        Failure::Thrown => "thrown",
        Failure::Timeout => "timeout",
        Failure::Memory => "memory",
        Failure::Cancelled => "cancelled",
        Failure::NeverSettles => "never_settles",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(code: &str, limits: CodeExecutionConfig) -> ToolOutput {
        let dir = tempfile::tempdir().unwrap();
        JsExecution::new(limits)
            .call(
                json!({ "code": code }),
                ToolContext::detached(dir.path(), JS_EXECUTION),
            )
            .await
            .unwrap()
    }

    fn fast() -> CodeExecutionConfig {
        CodeExecutionConfig {
            timeout_ms: 500,
            memory_mb: 16,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn the_last_expression_and_console() {
        let out = run(
            "console.log('hi', {a: 1}); const x = [1, 2, 3]; x.map((n) => n * 2)",
            fast(),
        )
        .await;
        assert!(!out.is_error, "{}", out.content_text());
        assert_eq!(out.content_text(), "hi {\"a\":1}\n[2,4,6]");
    }

    #[tokio::test]
    async fn a_top_level_return_and_await() {
        let out = run(
            "const v = await Promise.resolve(41);\nreturn {v: v + 1};",
            fast(),
        )
        .await;
        assert_eq!(out.content_text(), "{\"v\":42}", "{out:?}");
    }

    #[tokio::test]
    async fn a_throw_is_an_error_result_with_its_line() {
        let out = run("let a = 1;\nthrow new TypeError('boom');", fast()).await;
        assert!(out.is_error);
        assert_eq!(out.content_text(), "TypeError: boom (line 2)");
        let out = run("let a = 1;\nlet = = 2;", fast()).await;
        assert!(out.is_error);
        assert!(
            out.content_text().starts_with("SyntaxError: "),
            "{}",
            out.content_text()
        );
        assert!(
            out.content_text().contains("(line 2)"),
            "{}",
            out.content_text()
        );
        let out = run("throw 'plain'", fast()).await;
        assert_eq!(out.content_text(), "Uncaught plain");
    }

    #[tokio::test]
    async fn an_infinite_loop_hits_the_time_limit() {
        let out = run("try { for (;;) {} } catch (e) { 'caught' }", fast()).await;
        assert!(out.is_error);
        assert!(
            out.content_text().starts_with("time limit hit"),
            "{}",
            out.content_text()
        );
    }

    #[tokio::test]
    async fn a_memory_bomb_hits_the_memory_limit_even_when_caught() {
        let code = "const a = []; try { for (;;) a.push(new Array(100000).fill(1)); } catch (e) { 'caught' }";
        let out = run(code, fast()).await;
        assert!(out.is_error, "{}", out.content_text());
        assert!(
            out.content_text().starts_with("memory limit hit"),
            "{}",
            out.content_text()
        );
    }

    #[tokio::test]
    async fn deep_recursion_is_an_error_result() {
        let out = run("function f(n) { return f(n + 1) + 1; } f(0)", fast()).await;
        assert!(out.is_error);
        assert_eq!(
            out.content_text(),
            "RangeError: Maximum call stack size exceeded (line 1)"
        );
    }

    #[tokio::test]
    async fn a_promise_that_never_settles_ends_at_once() {
        let out = run("await new Promise(() => {})", fast()).await;
        assert!(out.is_error);
        assert!(
            out.content_text().contains("never settles"),
            "{}",
            out.content_text()
        );
    }

    #[tokio::test]
    async fn output_is_cut_and_the_cut_said() {
        let limits = CodeExecutionConfig {
            max_output_bytes: 10,
            ..fast()
        };
        let out = run(
            "for (let i = 0; i < 100; i++) console.log('line ' + i)",
            limits,
        )
        .await;
        assert_eq!(
            out.content_text(),
            "line 0\nlin\n[output cut: 10 of 790 bytes shown (code_execution.max_output_bytes)]"
        );
    }

    #[tokio::test]
    async fn nothing_of_the_host_is_reachable() {
        let out = run(
            "[typeof require, typeof process, typeof setTimeout, typeof fetch, typeof std, typeof os, typeof Atomics.wait]",
            fast(),
        )
        .await;
        assert_eq!(
            out.content_text(),
            "[\"undefined\",\"undefined\",\"undefined\",\"undefined\",\"undefined\",\"undefined\",\"undefined\"]"
        );
        let out = run("await import('fs')", fast()).await;
        assert!(out.is_error, "{}", out.content_text());
    }

    #[tokio::test]
    async fn tools_outside_a_turn_are_none() {
        let out = run("Object.keys(tools)", fast()).await;
        assert_eq!(out.content_text(), "[]");
    }
}
