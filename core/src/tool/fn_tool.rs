//! A tool made from a spec and an async closure.

use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::Value;

use super::{Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

type Handler =
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// A tool backed by a closure; see [`tool_fn`].
pub struct FnTool {
    spec: ToolSpec,
    source: Source,
    handler: Arc<Handler>,
}

impl FnTool {
    /// Mark the tool as coming from another source (bindings use `Source::Host`, the default).
    pub fn with_source(mut self, source: Source) -> Self {
        self.source = source;
        self
    }
}

/// Make a tool from a spec and an async closure.
///
/// ```
/// use contenox::{tool_fn, ToolSpec, ToolOutput};
/// use serde_json::json;
///
/// let echo = tool_fn(
///     ToolSpec::new("echo", "Echo the arguments.", json!({"type": "object"})),
///     |args, _ctx| async move { Ok(ToolOutput::text(args.to_string())) },
/// );
/// ```
pub fn tool_fn<F, Fut>(spec: ToolSpec, f: F) -> FnTool
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    FnTool {
        spec,
        source: Source::Host,
        handler: Arc::new(move |args, ctx| Box::pin(f(args, ctx))),
    }
}

#[async_trait]
impl Tool for FnTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn source(&self) -> Source {
        self.source
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        (self.handler)(args, ctx).await
    }
}
