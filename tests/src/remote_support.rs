//! The scenario key `remote` in the Rust runner: the scenario's fake remote services started
//! (`crate::remote::server`), registered as hooks through `contenox::load_remote`, the
//! `unreachable` ones brought up after load and before the first prompt.

use contenox::remote::{load_remote, HookState, RemoteHook, RemoteSource};
use contenox::Client;
use serde_json::Value;

use crate::remote::server::FakeRemote;
use crate::scenario::Scenario;

/// The services and the remote source of one scenario.
pub struct RemoteSetup {
    fake: FakeRemote,
    source: RemoteSource,
}

/// Start the scenario's services and load them as hooks, if it has the key. A service that is
/// not `unreachable` must come out ready (else the scenario fails with its error), and an
/// `unreachable` one unavailable.
pub async fn setup(scenario: &Scenario) -> Result<Option<RemoteSetup>, String> {
    if scenario.remote.is_empty() {
        return Ok(None);
    }
    let fake = FakeRemote::start(&scenario.remote)
        .await
        .map_err(|e| format!("remote: cannot start the services: {e}"))?;
    let hooks =
        RemoteHook::list_from_value(Value::Array(fake.hooks())).map_err(|e| e.to_string())?;
    let source = load_remote(hooks, |_, _| {})
        .await
        .map_err(|e| e.to_string())?;
    for ((name, state), spec) in source.hooks().into_iter().zip(&scenario.remote) {
        match (state, spec.unreachable) {
            (HookState::Ready { .. }, false) | (HookState::Unavailable { .. }, true) => {}
            (HookState::Unavailable { error }, false) => {
                return Err(format!("remote: hook {name} is unavailable: {error}"))
            }
            (HookState::Ready { .. }, true) => {
                return Err(format!(
                    "remote: hook {name} answered while it should be down"
                ))
            }
        }
    }
    Ok(Some(RemoteSetup { fake, source }))
}

impl RemoteSetup {
    /// Register the hooks' tools into `client` (and have it probe the unavailable ones).
    pub fn register_into(&self, client: &Client) -> Result<(), String> {
        self.source.register_into(client).map_err(|e| e.to_string())
    }

    /// Start the services that were down at load.
    pub async fn bring_up(&mut self) -> Result<(), String> {
        if self.fake.has_unreachable() {
            self.fake
                .bring_up()
                .await
                .map_err(|e| format!("remote: cannot bring the services up: {e}"))?;
        }
        Ok(())
    }

    /// What the services received.
    pub fn requests(&self) -> Vec<Value> {
        self.fake.requests()
    }

    /// Close the source and stop the services.
    pub async fn close(self) {
        self.source.close().await;
        self.fake.shutdown().await;
    }
}
