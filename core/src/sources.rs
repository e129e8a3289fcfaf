//! `register_into`, the way the MCP and remote sources were added to a client before
//! [`Client::add_source`]: kept here, above both, so the sources never import the client.

use crate::client::Client;
use crate::error::Result;
use crate::mcp::McpSource;
use crate::remote::RemoteSource;

impl McpSource {
    /// Register every tool into `client`, keep the client's tools in step with
    /// `notifications/tools/list_changed`, and stop the servers when the client is closed.
    /// The same as `client.add_source(self.source())`.
    pub fn register_into(&self, client: &Client) -> Result<()> {
        client.add_source(self.source())
    }
}

impl RemoteSource {
    /// Register every tool into `client`, probe unavailable hooks before each of its turns,
    /// and keep its tools in step with later refreshes. `Err` (and nothing registered) when a
    /// tool's name is taken in the client by a tool of another source. The same as
    /// `client.add_source(self.source())`.
    pub fn register_into(&self, client: &Client) -> Result<()> {
        client.add_source(self.source())
    }
}
