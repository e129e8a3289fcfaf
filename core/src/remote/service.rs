//! One hook at run time: its endpoint, its state, its tools, and the probe that makes an
//! unavailable hook's tools appear (discovery itself is the endpoint's, `endpoint.rs`).

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use tokio_util::sync::CancellationToken;

pub(crate) use super::endpoint::Shared;
use super::endpoint::{Endpoint, ToolDef};
use super::hook::RemoteHook;
use super::tool::RemoteTool;
use super::HookState;
use crate::tool::{names, Source, Tool, ToolHost};

/// One hook of a source: its endpoint, its state and its tools. The tools hold the endpoint,
/// never the service, so nothing points back up: a service is freed with the last handle of its
/// source, while tools a client still holds keep only what a call needs.
pub(crate) struct Service {
    pub endpoint: Arc<Endpoint>,
    state: Mutex<HookState>,
    tools: RwLock<Vec<Arc<RemoteTool>>>,
    probe_lock: tokio::sync::Mutex<()>,
}

impl Service {
    pub fn new(hook: RemoteHook, shared: Arc<Shared>) -> Service {
        Service {
            endpoint: Arc::new(Endpoint::new(hook, shared)),
            state: Mutex::new(HookState::Unavailable {
                error: "not loaded yet".into(),
            }),
            tools: RwLock::new(Vec::new()),
            probe_lock: tokio::sync::Mutex::new(()),
        }
    }

    pub fn name(&self) -> &str {
        self.endpoint.name()
    }

    fn shared(&self) -> &Shared {
        &self.endpoint.shared
    }

    pub fn state(&self) -> HookState {
        self.state.lock().clone()
    }

    fn set_state(&self, state: HookState) {
        *self.state.lock() = state;
    }

    pub fn tools(&self) -> Vec<Arc<RemoteTool>> {
        self.tools.read().clone()
    }

    /// Read the hook's tools (the document's operations, or the one protocol tool).
    pub async fn discover(&self, cancel: &CancellationToken) -> Result<Vec<ToolDef>, String> {
        self.endpoint.discover(cancel).await
    }
}

impl Service {
    /// Take discovered tools: names are given out here (a tool that stays keeps its name) and
    /// the clients the source was registered into get the new list.
    pub fn install(self: &Arc<Self>, defs: Vec<ToolDef>) -> usize {
        let (gone, fresh) = {
            let mut taken = self.shared().taken.lock();
            let old = self.tools();
            for t in &old {
                taken.remove(&t.name);
            }
            let mut fresh = Vec::with_capacity(defs.len());
            for def in defs {
                let kept = old
                    .iter()
                    .find(|t| t.key == def.key)
                    .map(|t| t.name.clone());
                let name = match kept {
                    Some(n) if taken.insert(n.clone()) => n,
                    _ => names::unique(&def.base_name, &mut taken),
                };
                fresh.push(Arc::new(RemoteTool::new(self.endpoint.clone(), name, def)));
            }
            let gone: Vec<String> = old
                .iter()
                .filter(|o| !fresh.iter().any(|f| f.name == o.name))
                .map(|o| o.name.clone())
                .collect();
            *self.tools.write() = fresh.clone();
            (gone, fresh)
        };
        for client in self.shared().live_clients() {
            for name in &gone {
                if self.owns(&client, name) {
                    client.unregister(name);
                }
            }
            for tool in &fresh {
                self.register_one(&client, tool);
            }
        }
        let n = fresh.len();
        self.set_state(HookState::Ready { tools: n as u64 });
        n
    }

    /// Whether `client`'s tool `name` is one of this hook's.
    pub fn owns(&self, client: &ToolHost, name: &str) -> bool {
        client
            .lookup(name)
            .is_some_and(|e| e.source == Source::Remote && e.server.as_deref() == Some(self.name()))
    }

    /// Register `tool` into `client` unless the name belongs to another tool there (a builtin,
    /// a host tool, another source's): a remote document never replaces those.
    pub fn register_one(&self, client: &ToolHost, tool: &Arc<RemoteTool>) {
        let free = client.lookup(&tool.name).is_none();
        if !free && !self.owns(client, &tool.name) {
            tracing::warn!(
                hook = %self.name(),
                tool = %tool.name,
                "remote tool not registered: the client has another tool of that name"
            );
            return;
        }
        if let Err(e) = client.register(tool.clone() as Arc<dyn Tool>) {
            tracing::warn!(hook = %self.name(), tool = %tool.name, "remote tool not registered: {e}");
        }
    }

    /// Discover again and install what was found. With `only_unavailable`, a ready hook is
    /// left as it is. A hook that was ready keeps its tools when the new discovery fails.
    pub async fn probe(
        self: &Arc<Self>,
        cancel: &CancellationToken,
        only_unavailable: bool,
    ) -> HookState {
        let _one_at_a_time = self.probe_lock.lock().await;
        let was = self.state();
        if self.shared().closed.is_cancelled()
            || (only_unavailable && matches!(was, HookState::Ready { .. }))
        {
            return was;
        }
        match self.discover(cancel).await {
            Ok(defs) => {
                self.install(defs);
            }
            Err(_) if cancel.is_cancelled() => {}
            Err(e) => match was {
                HookState::Ready { .. } => {
                    tracing::warn!(hook = %self.name(), "remote hook kept its tools; discovery failed: {e}");
                }
                HookState::Unavailable { .. } => {
                    self.set_state(HookState::Unavailable { error: e })
                }
            },
        }
        self.state()
    }

    /// Record a failure of the first discovery.
    pub fn fail(&self, error: String) {
        self.set_state(HookState::Unavailable { error });
    }
}
