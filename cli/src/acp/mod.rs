//! `contenox acp`: the agent inside any editor that speaks the Agent Client Protocol (v1, over
//! stdio: one JSON-RPC message per line; stdout carries nothing else, every log goes to
//! stderr).
//!
//! The editor starts the command, calls `initialize`, then `session/new {cwd, mcpServers}`:
//! each session is a client rooted at `cwd` with the builtins, the hooks `--hooks` selects and
//! the editor's MCP servers. `session/prompt` runs one turn, streamed as `session/update`s
//! ([`updates`]); the approval policy's asks become `session/request_permission`
//! ([`permission`]); `session/cancel` cancels the turn (the prompt answers `cancelled`).
//! Conversations are kept per session under the data directory ([`store`]) for `session/load`
//! (replayed) and `session/resume`.
//!
//! The protocol's messages are read and written here ([`wire`]) rather than with the
//! `agent-client-protocol` crate: see docs/decisions.md ("contenox acp").

mod editor_tools;
mod permission;
mod session;
mod store;
mod updates;
mod wire;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use contenox::{Config, Image, Part, Prompt, RemoteHook};
use futures::FutureExt;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use self::session::Session;
use self::store::{default_data_dir, new_id, Store};
use self::wire::{
    parse_line, read_line, Incoming, Peer, RpcError, INTERNAL_ERROR, INVALID_REQUEST,
    MAX_LINE_BYTES, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND,
};
use crate::args::AcpArgs;
use crate::error::{CliError, CliResult};
use crate::setup::{client_config, selected_hooks};
use crate::terminal::{clean_line, cut_chars};

/// The protocol version spoken (the stable ACP v1).
const PROTOCOL_VERSION: u64 = 1;
/// The most sessions live at once (each holds a client, its MCP servers and their processes).
const MAX_SESSIONS: usize = 64;
/// How long in-flight requests may take to wind down after the editor closed stdin.
const WIND_DOWN: Duration = Duration::from_secs(10);

/// What every session shares.
pub struct Shared {
    /// The connection.
    pub peer: Arc<Peer>,
    /// The client config from the flags (each session sets its own root).
    pub config: Config,
    /// The registered hooks `--hooks` selected.
    pub hooks: Vec<RemoteHook>,
    /// `--auto`.
    pub auto: bool,
    /// `--context-window`.
    pub context_window: Option<u64>,
    /// Where sessions are kept.
    pub store: Store,
    /// `--editor-tools`.
    pub editor_tools: bool,
    /// The client's capabilities, from `initialize`.
    pub client_capabilities: Mutex<Value>,
}

struct Agent {
    shared: Shared,
    initialized: AtomicBool,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The running prompts' request ids (their JSON text), for `$/cancel_request`.
    prompts: Mutex<HashMap<String, String>>,
}

/// Serve the editor until it closes stdin (or stdout); `Ok(0)` then.
pub async fn run(db: &Path, args: AcpArgs) -> CliResult<i32> {
    let here = std::env::current_dir()
        .map_err(|e| CliError::failed(format!("the current directory: {e}")))?;
    // Everything the flags name is checked before the first message is read.
    let config = client_config(&args.client, &here)?;
    let hooks = selected_hooks(db, args.hooks.as_deref().unwrap_or(""))?;
    let data_dir = args
        .data_dir
        .clone()
        .or_else(default_data_dir)
        .ok_or_else(|| {
            CliError::usage("no data directory: give --data-dir (or CONTENOX_DATA_DIR, or HOME)")
        })?;
    let peer = Peer::start(tokio::io::stdout());
    eprintln!(
        "contenox acp: ready (protocol v{PROTOCOL_VERSION}, policy {}{}, sessions in {})",
        args.client.gate.policy,
        if args.client.gate.auto {
            ", --auto"
        } else {
            ""
        },
        data_dir.display()
    );
    let agent = Arc::new(Agent {
        shared: Shared {
            peer: peer.clone(),
            config,
            hooks,
            auto: args.client.gate.auto,
            context_window: args.context_window,
            store: Store::new(&data_dir),
            editor_tools: args.editor_tools,
            client_capabilities: Mutex::new(Value::Null),
        },
        initialized: AtomicBool::new(false),
        sessions: Mutex::new(HashMap::new()),
        prompts: Mutex::new(HashMap::new()),
    });
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut tasks = JoinSet::new();
    loop {
        let line = tokio::select! {
            line = read_line(&mut stdin, MAX_LINE_BYTES) => line,
            _ = peer.gone().cancelled() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        let line = match line {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                eprintln!("contenox acp: stdin: {e}");
                break;
            }
        };
        let Some(message) = parse_line(&line) else {
            continue;
        };
        match message {
            // `initialize` is answered before the next line is read: a client that sends
            // session/new right behind it finds the connection initialized.
            Incoming::Request { id, method, params } if method == "initialize" => {
                let result = agent.initialize(&params);
                peer.respond(id, result).await;
            }
            Incoming::Request { id, method, params } => {
                let agent = agent.clone();
                tasks.spawn(async move {
                    let handled = AssertUnwindSafe(agent.request(&id, &method, params))
                        .catch_unwind()
                        .await;
                    let result = handled.unwrap_or_else(|_| {
                        Err(RpcError::new(
                            INTERNAL_ERROR,
                            format!("contenox failed while handling {method}"),
                        ))
                    });
                    agent.shared.peer.respond(id, result).await;
                });
            }
            Incoming::Notification { method, params } => agent.notification(&method, &params),
            Incoming::Response { id, result } => {
                if !peer.deliver(&id, result) {
                    eprintln!(
                        "contenox acp: an answer to request {} that is not waiting, ignored",
                        clean_line(&cut_chars(&id.to_string(), 80))
                    );
                }
            }
            Incoming::Invalid { id, error } => {
                eprintln!("contenox acp: invalid message: {}", error.message);
                peer.respond(id, Err(error)).await;
            }
        }
    }
    // The editor is gone (or stopped talking): cancel every turn, end every session's tools,
    // and let the requests in flight answer (bounded).
    let sessions: Vec<Arc<Session>> = agent.sessions.lock().drain().map(|(_, s)| s).collect();
    for s in &sessions {
        s.cancel();
    }
    let wound_down = tokio::time::timeout(WIND_DOWN, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if wound_down.is_err() {
        eprintln!("contenox acp: requests still running after {WIND_DOWN:?}; stopping them");
        tasks.abort_all();
    }
    for s in &sessions {
        s.close().await;
    }
    // Every answer reaches stdout before the process exits.
    let _ = tokio::time::timeout(Duration::from_secs(5), peer.flush()).await;
    Ok(0)
}

/// A string param.
fn string<'a>(params: &'a Value, key: &str) -> Result<&'a str, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::params(format!("params.{key} must be a string")))
}

/// A prompt's content blocks as the parts the model reads: text as is, resource links as
/// Markdown links, embedded text resources inside a `<context>` block (consecutive ones joined
/// into one text part, a line apart), and images as image parts (PNG, JPEG, GIF or WebP, base64).
/// Audio is refused (not advertised).
fn prompt_parts(blocks: &Value) -> Result<Prompt, RpcError> {
    let blocks = blocks
        .as_array()
        .ok_or_else(|| RpcError::params("params.prompt must be a list of content blocks"))?;
    let mut parts: Vec<Part> = Vec::with_capacity(blocks.len());
    let mut text: Vec<String> = Vec::new();
    let flush = |text: &mut Vec<String>, parts: &mut Vec<Part>| {
        if !text.is_empty() {
            parts.push(Part::text(text.join("\n")));
            text.clear();
        }
    };
    for b in blocks {
        let field = |k: &str| b.get(k).and_then(Value::as_str);
        match field("type") {
            Some("text") => text.push(
                field("text")
                    .ok_or_else(|| RpcError::params("a text block needs its text"))?
                    .to_string(),
            ),
            Some("resource_link") => {
                let uri =
                    field("uri").ok_or_else(|| RpcError::params("a resource link needs a uri"))?;
                text.push(format!("[{}]({uri})", field("name").unwrap_or(uri)));
            }
            Some("resource") => {
                let r = b.get("resource").unwrap_or(&Value::Null);
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => text.push(format!("<context uri={uri:?}>\n{t}\n</context>")),
                    None => text.push(format!("(the binary resource {uri} is not included)")),
                }
            }
            Some("image") => {
                let wire = json!({"media_type": field("mimeType"), "data": field("data")});
                let image: Image = serde_json::from_value(wire)
                    .map_err(|e| RpcError::params(format!("an image block: {e}")))?;
                flush(&mut text, &mut parts);
                parts.push(Part::Image(image));
            }
            Some("audio") => return Err(RpcError::params(
                "audio content is not supported by this agent (promptCapabilities.audio is false)",
            )),
            other => {
                return Err(RpcError::params(format!(
                    "unknown content block type {:?}",
                    other.map(|o| cut_chars(o, 40))
                )))
            }
        }
    }
    flush(&mut text, &mut parts);
    Ok(Prompt::from(parts))
}

impl Agent {
    fn session(&self, params: &Value) -> Result<Arc<Session>, RpcError> {
        let id = string(params, "sessionId")?;
        self.sessions
            .lock()
            .get(id)
            .cloned()
            .ok_or_else(|| RpcError::new(RESOURCE_NOT_FOUND, "no active session has that id"))
    }

    /// Refuse a new live session past [`MAX_SESSIONS`].
    fn room_for_a_session(&self) -> Result<(), RpcError> {
        if self.sessions.lock().len() >= MAX_SESSIONS {
            return Err(RpcError::new(
                INVALID_REQUEST,
                format!("{MAX_SESSIONS} sessions are open: close one (session/close) first"),
            ));
        }
        Ok(())
    }

    fn notification(&self, method: &str, params: &Value) {
        match method {
            "session/cancel" => match self.session(params) {
                Ok(s) => s.cancel(),
                Err(e) => eprintln!("contenox acp: session/cancel: {}", e.message),
            },
            "$/cancel_request" => {
                let Some(id) = params.get("requestId") else {
                    return;
                };
                let session = self.prompts.lock().get(&id.to_string()).cloned();
                let live = session.and_then(|sid| self.sessions.lock().get(&sid).cloned());
                if let Some(s) = live {
                    s.cancel();
                }
            }
            other => eprintln!(
                "contenox acp: notification {} ignored",
                clean_line(&cut_chars(other, 80))
            ),
        }
    }

    async fn request(&self, id: &Value, method: &str, params: Value) -> Result<Value, RpcError> {
        if method == "initialize" {
            return self.initialize(&params);
        }
        if !self.initialized.load(Ordering::SeqCst) {
            return Err(RpcError::new(
                INVALID_REQUEST,
                format!(
                    "{} before initialize: call initialize first",
                    clean_line(&cut_chars(method, 80))
                ),
            ));
        }
        let shared = &self.shared;
        match method {
            "session/new" => {
                self.room_for_a_session()?;
                let cwd = string(&params, "cwd")?;
                let mcp = params.get("mcpServers").unwrap_or(&Value::Null);
                let session = Session::start(shared, new_id(), cwd, mcp, None).await?;
                session.save_new(shared);
                let sid = session.id.clone();
                self.sessions.lock().insert(sid.clone(), Arc::new(session));
                Ok(json!({"sessionId": sid}))
            }
            "session/load" | "session/resume" => {
                let sid = string(&params, "sessionId")?;
                let cwd = string(&params, "cwd")?;
                if !self.sessions.lock().contains_key(sid) {
                    self.room_for_a_session()?;
                }
                let saved = shared
                    .store
                    .load(sid)
                    .map_err(|why| RpcError::new(RESOURCE_NOT_FOUND, why))?;
                if saved.cwd != Path::new(cwd) {
                    eprintln!(
                        "contenox acp: session {sid} was made in {}; it continues in {}",
                        saved.cwd.display(),
                        clean_line(&cut_chars(cwd, 200))
                    );
                }
                let mcp = params.get("mcpServers").unwrap_or(&Value::Null);
                let session =
                    Session::start(shared, sid.to_string(), cwd, mcp, Some(saved.transcript))
                        .await?;
                let session = Arc::new(session);
                let old = self
                    .sessions
                    .lock()
                    .insert(sid.to_string(), session.clone());
                if let Some(old) = old {
                    old.close().await;
                }
                if method == "session/resume" {
                    return Ok(json!({}));
                }
                for update in session.replay() {
                    shared
                        .peer
                        .notify(
                            "session/update",
                            json!({"sessionId": sid, "update": update}),
                        )
                        .await;
                }
                Ok(json!({}))
            }
            "session/close" => {
                let session = self.session(&params)?;
                self.sessions.lock().remove(&session.id);
                session.close().await;
                Ok(json!({}))
            }
            "session/prompt" => {
                let session = self.session(&params)?;
                let prompt = prompt_parts(params.get("prompt").unwrap_or(&Value::Null))?;
                let key = id.to_string();
                self.prompts.lock().insert(key.clone(), session.id.clone());
                let answer = session.prompt(shared, prompt).await;
                self.prompts.lock().remove(&key);
                answer
            }
            other => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method not found: {}", clean_line(&cut_chars(other, 80))),
            )),
        }
    }

    fn initialize(&self, params: &Value) -> Result<Value, RpcError> {
        let asked = params
            .get("protocolVersion")
            .and_then(Value::as_u64)
            .filter(|v| *v <= u64::from(u16::MAX))
            .ok_or_else(|| {
                RpcError::params("params.protocolVersion must be an integer 0..=65535")
            })?;
        if asked != PROTOCOL_VERSION {
            eprintln!(
                "contenox acp: the client asked for protocol v{asked}; this agent speaks v{PROTOCOL_VERSION}"
            );
        }
        *self.shared.client_capabilities.lock() = params
            .get("clientCapabilities")
            .cloned()
            .unwrap_or(Value::Null);
        self.initialized.store(true, Ordering::SeqCst);
        Ok(json!({
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
                "mcpCapabilities": {"http": true, "sse": false},
                "sessionCapabilities": {"resume": {}, "close": {}},
            },
            "agentInfo": {
                "name": "contenox",
                "title": "contenox",
                "version": env!("CARGO_PKG_VERSION"),
            },
            "authMethods": [],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_become_parts() {
        let p = prompt_parts(&json!([
            {"type": "text", "text": "Look at"},
            {"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs"},
            {"type": "resource", "resource": {"uri": "file:///w/b.rs", "text": "fn b() {}"}}
        ]))
        .unwrap();
        assert_eq!(
            p.parts(),
            [Part::text(
                "Look at\n[a.rs](file:///w/a.rs)\n<context uri=\"file:///w/b.rs\">\nfn b() {}\n</context>"
            )]
        );
        let p = prompt_parts(&json!([
            {"type": "text", "text": "What is"},
            {"type": "text", "text": "this?"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "text", "text": "And this?"}
        ]))
        .unwrap();
        assert_eq!(p.images(), 1);
        assert_eq!(p.text(), "What is\nthis?\n\nAnd this?");
        assert!(
            matches!(&p.parts()[1], Part::Image(Image::Data { media_type, .. }) if media_type == "image/png")
        );
        for bad in [
            json!([{"type": "image", "data": "", "mimeType": "image/tiff"}]),
            json!([{"type": "image", "data": "not base64!", "mimeType": "image/png"}]),
            json!([{"type": "image", "mimeType": "image/png"}]),
            json!([{"type": "audio", "data": "", "mimeType": "audio/wav"}]),
            json!([{"type": "nope"}]),
            json!("text"),
        ] {
            assert_eq!(
                prompt_parts(&bad).unwrap_err().code,
                wire::INVALID_PARAMS,
                "{bad}"
            );
        }
    }
}
