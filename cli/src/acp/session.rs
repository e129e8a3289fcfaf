//! One ACP session: a client rooted at the session's `cwd` with the builtins, the registered
//! hooks `--hooks` selects and the MCP servers the editor listed, the editor's gate, and the
//! conversation, saved after every prompt.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use contenox::{Client, ClientBuilder, Config, McpConfig, Outcome, Prompt, RunOptions, Transcript};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::editor_tools::{editor_tools, EditorOffers};
use super::permission::EditorGate;
use super::updates::{replay, Updates};
use super::wire::{Peer, RpcError, INTERNAL_ERROR, INVALID_REQUEST};
use super::Shared;
use crate::setup::{plain, Sources};
use crate::terminal::{clean_line, cut_chars};

/// A live session.
pub struct Session {
    /// Its id.
    pub id: String,
    /// Its working directory, as the editor gave it (what the store keeps).
    pub cwd: PathBuf,
    /// The same, resolved (the root of the file tools and bash).
    root: PathBuf,
    client: Client,
    sources: Sources,
    gate: Arc<EditorGate>,
    /// The running prompt's cancel token.
    turn: Mutex<Option<CancellationToken>>,
}

/// `cwd` checked: absolute, an existing directory.
fn root_of(cwd: &str) -> Result<PathBuf, RpcError> {
    let path = Path::new(cwd);
    if !path.is_absolute() {
        return Err(RpcError::params(format!(
            "cwd must be an absolute path, got {:?}",
            cut_chars(cwd, 200)
        )));
    }
    let root = std::fs::canonicalize(path)
        .map_err(|e| RpcError::params(format!("cwd {}: {e}", clean_line(&cut_chars(cwd, 200)))))?;
    if !root.is_dir() {
        return Err(RpcError::params(format!(
            "cwd {} is not a directory",
            cut_chars(cwd, 200)
        )));
    }
    Ok(root)
}

/// The editor's `mcpServers` as the engine's MCP config: stdio servers run in the session's
/// directory; HTTP servers are reached with the headers given; SSE is not supported.
fn mcp_config(servers: &Value, root: &Path) -> Result<Option<McpConfig>, RpcError> {
    let list = match servers {
        Value::Null => return Ok(None),
        Value::Array(l) if l.is_empty() => return Ok(None),
        Value::Array(l) => l,
        _ => return Err(RpcError::params("mcpServers must be a list")),
    };
    let mut out = Map::new();
    for s in list {
        let name = s
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::params("every MCP server needs a name"))?;
        if out.contains_key(name) {
            return Err(RpcError::params(format!(
                "two MCP servers are named {:?}",
                cut_chars(name, 100)
            )));
        }
        let pairs = |key: &str, field: &str| -> Result<Map<String, Value>, RpcError> {
            let mut m = Map::new();
            for p in s.get(key).and_then(Value::as_array).into_iter().flatten() {
                let (Some(n), Some(v)) = (
                    p.get("name").and_then(Value::as_str),
                    p.get("value").and_then(Value::as_str),
                ) else {
                    return Err(RpcError::params(format!(
                        "MCP server {name:?}: every {field} needs a name and a value"
                    )));
                };
                m.insert(n.to_string(), json!(v));
            }
            Ok(m)
        };
        let server = match s.get("type").and_then(Value::as_str) {
            Some("http") => json!({
                "type": "http",
                "url": s.get("url").cloned().unwrap_or(Value::Null),
                "headers": pairs("headers", "header")?,
            }),
            Some("sse") => {
                return Err(RpcError::params(format!(
                    "MCP server {name:?}: the SSE transport is not supported (mcpCapabilities.sse is false)"
                )))
            }
            None | Some("stdio") => json!({
                "command": s.get("command").cloned().unwrap_or(Value::Null),
                "args": s.get("args").cloned().unwrap_or(json!([])),
                "env": pairs("env", "environment variable")?,
                "cwd": root,
            }),
            Some(other) => {
                return Err(RpcError::params(format!(
                    "MCP server {name:?}: unknown transport {:?}",
                    cut_chars(other, 40)
                )))
            }
        };
        out.insert(name.to_string(), server);
    }
    McpConfig::from_value(json!({"mcpServers": out}))
        .map(Some)
        .map_err(|e| RpcError::params(plain(&e)))
}

impl Session {
    /// Start a session `id` in `cwd` with the editor's MCP servers, continuing `transcript`.
    pub async fn start(
        shared: &Shared,
        id: String,
        cwd: &str,
        mcp_servers: &Value,
        transcript: Option<Transcript>,
    ) -> Result<Session, RpcError> {
        let root = root_of(cwd)?;
        let mcp = mcp_config(mcp_servers, &root)?;
        let mut config: Config = shared.config.clone();
        config.root = Some(root.clone());
        let gate = Arc::new(EditorGate::new(
            shared.peer.clone(),
            id.clone(),
            root.clone(),
            shared.auto,
        ));
        let client = ClientBuilder::from_config(config)
            .wait_for(gate.clone())
            .build()
            .map_err(|e| RpcError::new(INTERNAL_ERROR, plain(&e)))?;
        if shared.editor_tools {
            let caps = shared.client_capabilities.lock().clone();
            let offered: Vec<String> = client.tools().into_iter().map(|t| t.name).collect();
            let has = |n: &str| offered.iter().any(|o| o == n);
            let mut offers = EditorOffers::of(&caps);
            offers.read &= has("read");
            offers.write &= has("write");
            offers.terminal &= has("bash");
            for tool in editor_tools(shared.peer.clone(), id.clone(), root.clone(), offers) {
                client
                    .register(tool)
                    .map_err(|e| RpcError::new(INTERNAL_ERROR, plain(&e)))?;
            }
        }
        if let Some(t) = transcript {
            client
                .set_transcript(t)
                .map_err(|e| RpcError::new(INTERNAL_ERROR, plain(&e)))?;
        }
        let note = Arc::new(|line: String| eprintln!("{line}"));
        let sources = match Sources::start(&client, shared.hooks.clone(), mcp, None, note).await {
            Ok(s) => s,
            Err(e) => {
                client.close();
                return Err(RpcError::params(e.message));
            }
        };
        Ok(Session {
            id,
            cwd: PathBuf::from(cwd),
            root,
            client,
            sources,
            gate,
            turn: Mutex::new(None),
        })
    }

    /// The updates that replay the conversation so far.
    pub fn replay(&self) -> Vec<Value> {
        replay(&self.root, &self.client.transcript())
    }

    /// Save the conversation; a failure is logged, not fatal (the turn already happened).
    fn save(&self, shared: &Shared) {
        if let Err(e) = shared
            .store
            .save(&self.id, &self.cwd, &self.client.transcript())
        {
            eprintln!("contenox acp: session {} could not be saved: {e}", self.id);
        }
    }

    /// Save the new, empty session (so it can be loaded even before its first prompt).
    pub fn save_new(&self, shared: &Shared) {
        self.save(shared);
    }

    /// Cancel the running prompt, if any.
    pub fn cancel(&self) {
        if let Some(t) = self.turn.lock().as_ref() {
            t.cancel();
        }
    }

    /// Cancel what runs and end the session's client and tool sources.
    pub async fn close(&self) {
        self.cancel();
        self.client.close();
        self.sources.close().await;
    }

    /// One prompt turn: its updates streamed to the editor, its stop reason returned.
    pub async fn prompt(&self, shared: &Shared, prompt: Prompt) -> Result<Value, RpcError> {
        let token = CancellationToken::new();
        {
            let mut turn = self.turn.lock();
            if turn.is_some() {
                return Err(RpcError::new(
                    INVALID_REQUEST,
                    "a prompt is already running in this session (cancel it first)",
                ));
            }
            *turn = Some(token.clone());
        }
        let outcome = self.run(shared, prompt, token).await;
        self.gate.turn_ended();
        *self.turn.lock() = None;
        self.save(shared);
        outcome
    }

    async fn run(
        &self,
        shared: &Shared,
        prompt: Prompt,
        token: CancellationToken,
    ) -> Result<Value, RpcError> {
        let peer: &Peer = &shared.peer;
        let mut run = self
            .client
            .stream_with(prompt, RunOptions::default().cancel(token.clone()))
            .map_err(|e| RpcError::new(INTERNAL_ERROR, plain(&e)))?;
        let mut updates = Updates::new(self.root.clone(), shared.context_window);
        loop {
            let event = tokio::select! {
                e = run.next_event() => e,
                _ = peer.gone().cancelled() => {
                    run.cancel();
                    run.next_event().await
                }
            };
            let Some(event) = event else { break };
            for update in updates.of(&event) {
                peer.notify(
                    "session/update",
                    json!({"sessionId": self.id, "update": update}),
                )
                .await;
            }
            if let contenox::Event::Pending { call_id, .. } = &event {
                self.gate.shown(call_id);
            }
        }
        let result = run
            .result()
            .await
            .map_err(|e| RpcError::new(INTERNAL_ERROR, plain(&e)))?;
        // A cancelled prompt answers "cancelled", also when the cancel came while the turn was
        // ending (or made the model request fail): never end_turn, never an error.
        if token.is_cancelled() {
            return Ok(json!({"stopReason": "cancelled"}));
        }
        let stop = match result.outcome {
            Outcome::Done => "end_turn",
            // ACP has no typed answer: the client has the answer's text, as for any turn.
            Outcome::OutputInvalid => "end_turn",
            Outcome::Cancelled => "cancelled",
            Outcome::MaxTurns => "max_turn_requests",
            Outcome::Budget => {
                let why = result.error.as_deref().unwrap_or("");
                if why.contains("token") {
                    "max_tokens"
                } else {
                    "max_turn_requests"
                }
            }
            Outcome::Error => {
                return Err(RpcError::new(
                    INTERNAL_ERROR,
                    result.error.unwrap_or_else(|| "the turn failed".into()),
                ))
            }
            // ACP's permission requests are answered in the session; its gate never suspends.
            Outcome::Suspended => {
                return Err(RpcError::new(
                    INTERNAL_ERROR,
                    "the turn suspended, which an ACP session does not support",
                ))
            }
        };
        Ok(json!({"stopReason": stop}))
    }
}
