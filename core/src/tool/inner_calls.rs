//! Tool calls a tool makes while it runs (`js_execution`'s `tools.NAME(args)`): each goes back
//! to the turn that runs the tool, which passes it through the same gate as a direct call.

use std::sync::mpsc::Sender;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

/// One call a running tool asks the turn to make.
#[derive(Debug)]
pub(crate) struct InnerCall {
    /// The run's own number for it (0, 1, ...), handed back in [`InnerSettled`].
    pub id: u64,
    /// The tool to call.
    pub name: String,
    /// Its arguments (any JSON; the gate says when they are not an object).
    pub arguments: Value,
    /// Where its end goes (a thread that blocks on it: a std channel).
    pub reply: Sender<InnerSettled>,
}

/// The end of an [`InnerCall`]: its result text, or its error text.
#[derive(Debug)]
pub(crate) struct InnerSettled {
    /// The call's [`InnerCall::id`].
    pub id: u64,
    /// `Ok(text)` for a result, `Err(text)` for an error result (a denial among them).
    pub result: Result<String, String>,
}

/// What a tool call that may make inner calls gets in its context: where to send them, and the
/// names it may call (what the model could call directly, itself left out).
#[derive(Debug, Clone)]
pub(crate) struct InnerCalls {
    pub tx: UnboundedSender<InnerCall>,
    pub names: Arc<Vec<String>>,
}
