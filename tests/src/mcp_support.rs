//! The scenario key `mcp` in the Rust runner: MCP servers from the tests (tests/mcp/, installed by
//! tests/mcp/install.sh) loaded with `contenox::load_mcp` and registered into the client.
//!
//! ```jsonc
//! "mcp": {
//!   "servers": {                       // the mcpServers names the tools are prefixed with
//!     "fast": {
//!       "server": "fast",              // "fast" (tests/mcp/fast_server.py) | "everything" (npm)
//!       "transport": "stdio",          // "stdio" (default) | "http" (the runner starts it)
//!       "inject": {"tenant": "..."},   // optional, passed through
//!       "headers": {"X-Api-Key": ".."},// optional, http only, passed through
//!       "timeout_ms": 5000             // optional, passed through
//!     }
//!   },
//!   "resource_tools": true             // optional: also register list/read_mcp_resource
//! }
//! ```
//!
//! A server that does not come up fails the scenario (with its error).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use contenox::mcp::{load_mcp, McpConfig, McpSource, ServerState};
use contenox::Client;
use serde_json::{json, Map, Value};

/// The loaded MCP servers of one scenario, and the HTTP servers the runner started for it.
pub struct McpSetup {
    source: McpSource,
    resource_tools: bool,
    http: Vec<tokio::process::Child>,
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

fn installed(path: PathBuf, what: &str) -> Result<String, String> {
    if path.exists() {
        Ok(path.to_string_lossy().into_owned())
    } else {
        Err(format!(
            "{what} not found at {}: run tests/mcp/install.sh",
            path.display()
        ))
    }
}

/// The Python with the `mcp` SDK: $CONTENOX_MCP_PYTHON or tests/mcp/.venv.
fn python() -> Result<String, String> {
    match std::env::var("CONTENOX_MCP_PYTHON") {
        Ok(p) => Ok(p),
        Err(_) => installed(
            repo_root().join("tests/mcp/.venv/bin/python"),
            "the MCP venv",
        ),
    }
}

/// server-everything's entry point: $CONTENOX_MCP_NODE_MODULES or tests/mcp/node_modules.
fn everything_js() -> Result<String, String> {
    let modules = std::env::var("CONTENOX_MCP_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("tests/mcp/node_modules"));
    installed(
        modules.join("@modelcontextprotocol/server-everything/dist/index.js"),
        "@modelcontextprotocol/server-everything",
    )
}

/// The program and arguments of a test server, for stdio or for HTTP on `port`.
fn command_of(server: &str, http_port: Option<u16>) -> Result<(String, Vec<String>), String> {
    match server {
        "fast" => {
            let script = installed(
                repo_root().join("tests/mcp/fast_server.py"),
                "fast_server.py",
            )?;
            let mut args = vec![script];
            if let Some(port) = http_port {
                args.extend(["http".to_string(), port.to_string()]);
            }
            Ok((python()?, args))
        }
        "everything" => {
            let mode = if http_port.is_some() {
                "streamableHttp"
            } else {
                "stdio"
            };
            Ok(("node".into(), vec![everything_js()?, mode.into()]))
        }
        other => Err(format!(
            "mcp: unknown test server {other:?} (expected \"fast\" or \"everything\")"
        )),
    }
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// Start a test server over streamable HTTP and wait until it listens.
async fn start_http(server: &str) -> Result<(tokio::process::Child, String), String> {
    let port = free_port()?;
    let (program, args) = command_of(server, Some(port))?;
    let child = tokio::process::Command::new(program)
        .args(args)
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("mcp: cannot start {server} over HTTP: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if Instant::now() > deadline {
            return Err(format!("mcp: {server} over HTTP did not listen on {port}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((child, format!("http://127.0.0.1:{port}/mcp")))
}

/// Load the scenario's `mcp` servers, if it has the key.
pub async fn setup(extra: &Map<String, Value>) -> Result<Option<McpSetup>, String> {
    let Some(spec) = extra.get("mcp") else {
        return Ok(None);
    };
    let servers = spec
        .get("servers")
        .and_then(Value::as_object)
        .ok_or("mcp: \"servers\" must be an object")?;
    let resource_tools = spec
        .get("resource_tools")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut entries = Map::new();
    let mut http = Vec::new();
    for (name, s) in servers {
        let server = s
            .get("server")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("mcp: server {name} needs \"server\""))?;
        let transport = s
            .get("transport")
            .and_then(Value::as_str)
            .unwrap_or("stdio");
        let mut entry = match transport {
            "stdio" => {
                let (command, args) = command_of(server, None)?;
                json!({"command": command, "args": args})
            }
            "http" => {
                let (child, url) = start_http(server).await?;
                http.push(child);
                json!({"type": "http", "url": url})
            }
            other => return Err(format!("mcp: unknown transport {other:?}")),
        };
        for key in [
            "inject",
            "headers",
            "timeout_ms",
            "env",
            "elicitation",
            "sampling",
            "roots",
        ] {
            if let Some(v) = s.get(key) {
                entry[key] = v.clone();
            }
        }
        entries.insert(name.clone(), entry);
    }
    let config =
        McpConfig::from_value(json!({ "mcpServers": entries })).map_err(|e| e.to_string())?;
    let source = load_mcp(config, |_, _| {}).await;
    let failed: Vec<String> = source
        .servers()
        .into_iter()
        .filter_map(|(name, state)| match state {
            ServerState::Failed { error } => Some(format!("mcp: server {name} failed: {error}")),
            ServerState::Ready { .. } => None,
        })
        .collect();
    let setup = McpSetup {
        source,
        resource_tools,
        http,
    };
    if !failed.is_empty() {
        setup.close().await;
        return Err(failed.join("\n"));
    }
    Ok(Some(setup))
}

impl McpSetup {
    /// Register the servers' tools (and the resource tools when asked) into `client`.
    pub fn register_into(&self, client: &Client) -> Result<(), String> {
        self.source
            .register_into(client)
            .map_err(|e| e.to_string())?;
        if self.resource_tools {
            for tool in self.source.resource_tools() {
                client.register(tool).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// Stop the MCP servers and the HTTP servers the runner started.
    pub async fn close(mut self) {
        self.source.close().await;
        for child in &mut self.http {
            let _ = child.kill().await;
        }
    }
}
