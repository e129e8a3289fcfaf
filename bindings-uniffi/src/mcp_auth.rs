//! `loadMcp(configJson, onServer, auth)`: the host's OAuth part for MCP servers (core's
//! `McpAuth`) implemented in Kotlin or Swift: its redirect URI, the browser step and the token
//! store, the same shape as Python's and Node's (docs/mcp.md "OAuth"). This module only
//! translates; the engine does the protocol.

use std::sync::Arc;

use contenox::{async_trait, HostError};

use crate::error::ContenoxError;

/// Where the browser comes back, the browser step, and where tokens are kept. A thrown error
/// fails that server's load with the message (`onServer` reports it).
#[uniffi::export(foreign)]
#[async_trait]
pub trait McpAuth: Send + Sync {
    /// The loopback URL the authorization server sends the browser back to, such as
    /// `http://127.0.0.1:33418/callback`.
    fn redirect_uri(&self) -> String;
    /// Open `url` for the person and return the full URL the browser was redirected to (with
    /// `code` and `state`). `server` is the server's name in the config.
    async fn authorize(&self, server: String, url: String) -> Result<String, ContenoxError>;
    /// The text saved under `key`, or null / nil.
    async fn load(&self, key: String) -> Result<Option<String>, ContenoxError>;
    /// Keep `value` under `key`; it holds tokens: keep it where only the user can read it.
    async fn save(&self, key: String, value: String) -> Result<(), ContenoxError>;
}

/// The host's `McpAuth` as the engine sees it.
pub(crate) struct McpAuthAdapter(pub(crate) Arc<dyn McpAuth>);

#[async_trait]
impl contenox::McpAuth for McpAuthAdapter {
    fn redirect_uri(&self) -> String {
        self.0.redirect_uri()
    }

    async fn authorize(&self, server: &str, url: &str) -> Result<String, HostError> {
        Ok(self.0.authorize(server.into(), url.into()).await?)
    }

    async fn load(&self, key: &str) -> Result<Option<String>, HostError> {
        Ok(self.0.load(key.into()).await?)
    }

    async fn save(&self, key: &str, value: &str) -> Result<(), HostError> {
        Ok(self.0.save(key.into(), value.into()).await?)
    }
}
