//! `loadMcp(config, { auth })`: the host's OAuth part for MCP servers (core's `McpAuth`): its
//! redirect URI, and one JavaScript function `(op, argsJson) => Promise<string>` the TypeScript
//! layer builds from the host's `authorize` / `load` / `save` (lib/mcp.ts), answering in the
//! callbacks' envelope (`{"value"}` or `{"error"}`).

use contenox::{async_trait, HostError, McpAuth};
use napi::bindgen_prelude::{FnArgs, Function, Promise};
use serde_json::{json, Value};

use crate::host::{call, weak, JsCallback};

/// `(op, argsJson) => Promise<string>`, `op` one of `authorize`, `load`, `save`.
pub type AuthArgs = FnArgs<(String, String)>;

/// Core's `McpAuth` over the host's JavaScript functions.
pub struct JsMcpAuth {
    redirect_uri: String,
    call: JsCallback<AuthArgs>,
}

impl JsMcpAuth {
    /// From the redirect URI and the TypeScript layer's dispatcher.
    pub fn new(
        redirect_uri: String,
        f: &Function<'_, AuthArgs, Promise<String>>,
    ) -> napi::Result<JsMcpAuth> {
        Ok(JsMcpAuth {
            redirect_uri,
            call: weak(f)?,
        })
    }

    async fn op(&self, op: &str, args: Value) -> Result<Value, HostError> {
        call(
            &self.call,
            FnArgs::from((op.to_string(), args.to_string())),
            &format!("auth.{op}"),
        )
        .await
    }
}

#[async_trait]
impl McpAuth for JsMcpAuth {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    async fn authorize(&self, server: &str, url: &str) -> Result<String, HostError> {
        match self.op("authorize", json!([server, url])).await? {
            Value::String(back) => Ok(back),
            _ => Err(HostError::new(
                "auth.authorize must return the URL the browser was redirected to (a string)",
            )),
        }
    }

    async fn load(&self, key: &str) -> Result<Option<String>, HostError> {
        match self.op("load", json!([key])).await? {
            Value::String(text) => Ok(Some(text)),
            Value::Null => Ok(None),
            _ => Err(HostError::new(
                "auth.load must return the saved text, or null / undefined",
            )),
        }
    }

    async fn save(&self, key: &str, value: &str) -> Result<(), HostError> {
        self.op("save", json!([key, value])).await.map(|_| ())
    }
}
