//! What the tool sources that register into clients (MCP servers, remote hooks) share across
//! the servers or hooks of one source: its close signal, the clients it registered into, and
//! the tool names it gave out.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};

use tokio_util::sync::CancellationToken;

use crate::client_state::ClientState;

/// The shared part of one source (`McpSource`, `RemoteSource`).
pub(crate) struct SourceShared {
    /// Cancelled when the source closes.
    pub closed: CancellationToken,
    /// Clients the source's tools were registered into (kept weakly: a client's life is its
    /// host's business).
    pub clients: Mutex<Vec<Weak<ClientState>>>,
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

    /// The clients still alive and open.
    pub fn live_clients(&self) -> Vec<Arc<ClientState>> {
        let mut clients = self.clients.lock().expect("clients lock");
        clients.retain(|w| w.strong_count() > 0);
        clients
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|c| !c.is_closed())
            .collect()
    }
}
