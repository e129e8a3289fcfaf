//! Tools: the [`Tool`] trait, its [`ToolSpec`] and [`Hints`], the context a call runs in, the
//! [`Toolkit`] registry, allowlists and tiers.

mod allowlist;
mod call_tool;
mod context;
mod fn_tool;
pub(crate) mod inject;
mod inner_calls;
pub mod names;
mod source;
mod source_shared;
mod toolkit;

pub use crate::tool_output::{HostError, ToolError, ToolOutput, CANCELLED_RESULT};
pub use crate::tool_spec::{valid_tool_name, Hints, Source, Tier, ToolSpec};
pub use allowlist::Allowlist;
pub use context::{EventSink, ToolContext};
pub use fn_tool::{tool_fn, FnTool};
pub use toolkit::Toolkit;

pub(crate) use call_tool::{CallTool, CALL_TOOL};
pub(crate) use inner_calls::{InnerCall, InnerCalls, InnerSettled};
pub(crate) use source::{HostTools, SourceList};
pub use source::{ToolHost, ToolSource, WeakHost};
pub(crate) use source_shared::SourceShared;
pub(crate) use toolkit::{allowed_by, check_spec, Entry};

use async_trait::async_trait;
use serde_json::Value;

/// A tool the model can call. Implement it for host tools; builtins, MCP and OpenAPI tools
/// implement it too, so the gate sees them all the same way.
///
/// ```
/// use contenox::{async_trait, Tool, ToolSpec, ToolContext, ToolOutput, ToolError};
/// use serde_json::{json, Value};
///
/// struct Upper;
///
/// #[async_trait]
/// impl Tool for Upper {
///     fn spec(&self) -> ToolSpec {
///         ToolSpec::new("upper", "Upper-case a text.", json!({
///             "type": "object",
///             "properties": {"text": {"type": "string"}},
///             "required": ["text"]
///         }))
///     }
///     async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
///         let text = args["text"].as_str().unwrap_or_default();
///         Ok(ToolOutput::text(text.to_uppercase()))
///     }
/// }
/// ```
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name, description, input schema, hints and tier. Read once, when registered.
    fn spec(&self) -> ToolSpec;

    /// Where the tool comes from; the gate sees it. Host tools keep the default.
    fn source(&self) -> Source {
        Source::Host
    }

    /// The server a tool belongs to (MCP, remote), shown on the gate event.
    fn server(&self) -> Option<String> {
        None
    }

    /// Run the tool. Arguments were checked against the input schema. An `Err` becomes an error
    /// result the model sees; the turn goes on.
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError>;
}
