//! What the built-in tool sources (MCP servers, remote hooks) share across the servers or hooks
//! of one source: its close signal, the clients it was added to, and the tool names it gave out.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;

use tokio_util::sync::CancellationToken;

use super::source::{ToolHost, WeakHost};

/// The shared part of one source (`McpSource`, `RemoteSource`).
pub(crate) struct SourceShared {
    /// Cancelled when the source closes.
    pub closed: CancellationToken,
    /// Clients the source was added to (kept weakly: a client's life is its host's business).
    clients: Mutex<Vec<WeakHost>>,
    /// Every tool name given out, across the source's servers or hooks.
    pub taken: Mutex<HashSet<String>>,
}

impl SourceShared {
    /// A source with no clients and no names yet.
    pub fn new() -> Arc<SourceShared> {
        Arc::new(SourceShared {
            closed: CancellationToken::new(),
            clients: Mutex::new(Vec::new()),
            taken: Mutex::new(HashSet::new()),
        })
    }

    /// Remember `host` (once, however often it is added).
    pub fn add_client(&self, host: &ToolHost) {
        let mut clients = self.clients.lock();
        clients.retain(|w| !w.is_gone());
        if !clients
            .iter()
            .any(|w| w.upgrade().is_some_and(|h| h.same(host)))
        {
            clients.push(host.downgrade());
        }
    }

    /// The clients still alive and open.
    pub fn live_clients(&self) -> Vec<ToolHost> {
        let mut clients = self.clients.lock();
        clients.retain(|w| !w.is_gone());
        clients.iter().filter_map(WeakHost::upgrade).collect()
    }
}
