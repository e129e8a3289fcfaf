//! Code execution: the opt-in `js_execution` builtin (config `code_execution`), model-written
//! JavaScript run in-process in QuickJS (through rquickjs), one fresh runtime per call.
//!
//! The option is [`CodeExecutionConfig`] (config `code_execution`); `heap.rs` the counted allocator behind `memory_mb`, `vm.rs` one
//! run on its own thread, `tool.rs` the builtin. The code's `await tools.NAME(args)` calls go
//! back to the turn as inner calls ([`crate::tool::InnerCall`]), which `turn_code.rs` passes
//! through the same gate as the model's own calls.
//!
//! ```
//! use contenox::{builtin, CodeExecutionConfig, ToolContext};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let js = contenox::code::js_execution(CodeExecutionConfig::default());
//! let out = js
//!     .call(json!({"code": "console.log('sum'); [1, 2, 3].reduce((a, b) => a + b)"}),
//!           ToolContext::detached(std::env::temp_dir(), "js_execution"))
//!     .await
//!     .unwrap();
//! assert_eq!(out.content_text(), "sum\n6");
//! # });
//! ```

mod heap;
mod tool;
mod vm;

use std::sync::Arc;

pub use crate::config::CodeExecutionConfig;
pub use tool::JS_EXECUTION;

use serde_json::Value;

use crate::tool::{Tool, ToolOutput};
use crate::transcript::ToolCall;

/// The `js_execution` builtin with these limits (run by hand it reaches no tools).
pub fn js_execution(limits: CodeExecutionConfig) -> Arc<dyn Tool> {
    Arc::new(tool::JsExecution::new(limits))
}

/// How many inner calls the call `call` made (its result's metadata lists them): they count in
/// the turn's budget.
pub(crate) fn inner_calls_made(call: &ToolCall, out: &ToolOutput) -> usize {
    if call.name != JS_EXECUTION {
        return 0;
    }
    out.metadata
        .as_ref()
        .and_then(|m| m.get("calls"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}
