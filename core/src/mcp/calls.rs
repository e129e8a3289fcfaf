//! The tool calls in progress on one server, so that a request the server sends during a call
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) is answered in the turn that
//! made the call: its `wait_for`, its gate, its model, its usage.
//!
//! MCP does not say which call a server request belongs to over stdio (streamable HTTP sends it
//! on the call's stream, which rmcp does not pass on), so the newest call still running is taken:
//! exact whenever one turn at a time calls the server, which is the common case.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::tool::ToolContext;

/// The calls running on one server, oldest first.
#[derive(Default)]
pub(crate) struct ActiveCalls {
    next: AtomicU64,
    calls: Mutex<Vec<(u64, ToolContext)>>,
}

/// Removes its call from the list when dropped (the call returned, failed or was cancelled).
pub(crate) struct InCall {
    calls: Arc<ActiveCalls>,
    id: u64,
}

impl Drop for InCall {
    fn drop(&mut self) {
        self.calls.calls.lock().retain(|(id, _)| *id != self.id);
    }
}

impl ActiveCalls {
    /// Note a call starting in the turn of `ctx`, until the guard is dropped.
    pub fn enter(self: &Arc<Self>, ctx: &ToolContext) -> InCall {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.calls.lock().push((id, ctx.clone()));
        InCall {
            calls: self.clone(),
            id,
        }
    }

    /// The context of the newest call still running and not cancelled.
    pub fn current(&self) -> Option<ToolContext> {
        self.calls
            .lock()
            .iter()
            .rev()
            .find(|(_, ctx)| !ctx.cancel.is_cancelled())
            .map(|(_, ctx)| ctx.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_running_call_is_current_and_leaves_when_dropped() {
        let calls = Arc::new(ActiveCalls::default());
        assert!(calls.current().is_none());
        let first = ToolContext::detached("/", "a");
        let second = ToolContext::detached("/", "b");
        let a = calls.enter(&first);
        let b = calls.enter(&second);
        assert_eq!(calls.current().unwrap().name, "b");
        second.cancel.cancel();
        assert_eq!(
            calls.current().unwrap().name,
            "a",
            "a cancelled call answers nothing"
        );
        drop(b);
        drop(a);
        assert!(calls.current().is_none());
    }
}
