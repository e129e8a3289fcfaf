//! What the MCP tests share: where the real servers are (installed by tests/mcp/install.sh),
//! an HTTP server started by a test, a recording gate, and the /proc checks that no process of
//! a server outlives its test.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use contenox::{async_trait, Decision, Event, Hooks, HostError, Run, ToolCallEvent};
use serde_json::{json, Value};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

fn need(path: PathBuf, what: &str) -> String {
    assert!(
        path.exists(),
        "{what} not found at {}: run tests/mcp/install.sh first",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// The Python with the `mcp` SDK (tests/mcp/.venv, or $CONTENOX_MCP_PYTHON).
pub fn python() -> String {
    match std::env::var("CONTENOX_MCP_PYTHON") {
        Ok(p) => p,
        Err(_) => need(
            repo_root().join("tests/mcp/.venv/bin/python"),
            "the MCP venv",
        ),
    }
}

pub fn fast_server_py() -> String {
    need(
        repo_root().join("tests/mcp/fast_server.py"),
        "fast_server.py",
    )
}

/// server-everything's entry point (tests/mcp/node_modules, or $CONTENOX_MCP_NODE_MODULES).
pub fn everything_js() -> String {
    let modules = std::env::var("CONTENOX_MCP_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("tests/mcp/node_modules"));
    need(
        modules.join("@modelcontextprotocol/server-everything/dist/index.js"),
        "@modelcontextprotocol/server-everything",
    )
}

/// An `mcpServers` entry running the FastMCP test server over stdio.
pub fn fast_stdio(env: Value) -> Value {
    json!({"command": python(), "args": [fast_server_py()], "env": env})
}

/// An `mcpServers` entry running server-everything over stdio.
pub fn everything_stdio() -> Value {
    json!({"command": "node", "args": [everything_js(), "stdio"]})
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// A server the test starts itself (for streamable HTTP), in its own process group, stopped
/// and checked on drop.
pub struct HttpServer {
    child: Child,
    pub port: u16,
}

impl HttpServer {
    fn start(mut cmd: Command, port: u16) -> HttpServer {
        use std::os::unix::process::CommandExt;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let child = cmd.spawn().expect("start the HTTP MCP server");
        let server = HttpServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the HTTP MCP server did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    pub fn everything() -> HttpServer {
        let port = free_port();
        let mut cmd = Command::new("node");
        cmd.arg(everything_js())
            .arg("streamableHttp")
            .env("PORT", port.to_string());
        HttpServer::start(cmd, port)
    }

    /// tests/mcp/oauth_server.py: an OAuth-protected MCP server and its authorization server
    /// (the Python SDK's auth parts); access tokens live `ttl_s` seconds.
    pub fn oauth(ttl_s: u64) -> HttpServer {
        let port = free_port();
        let mut cmd = Command::new(python());
        cmd.arg(need(
            repo_root().join("tests/mcp/oauth_server.py"),
            "oauth_server.py",
        ))
        .arg(port.to_string())
        .env("ACCESS_TTL", ttl_s.to_string());
        HttpServer::start(cmd, port)
    }

    pub fn fast() -> HttpServer {
        let port = free_port();
        let mut cmd = Command::new(python());
        cmd.arg(fast_server_py()).arg("http").arg(port.to_string());
        HttpServer::start(cmd, port)
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        // SAFETY: signals our own child's process group.
        unsafe {
            libc::killpg(self.child.id() as i32, libc::SIGKILL);
        }
        let _ = self.child.wait();
        wait_group_gone(self.child.id() as i32, Duration::from_secs(5));
    }
}

/// (pid, state) of every process whose process group is `pgid`.
pub fn group_members(pgid: i32) -> Vec<(i32, char)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // state ppid pgrp ...
        if fields.len() > 2 && fields[2].parse::<i32>() == Ok(pgid) {
            out.push((pid, fields[0].chars().next().unwrap_or('?')));
        }
    }
    out
}

/// Wait until no process (not even a zombie) is left in the group; panics after `limit`.
pub fn wait_group_gone(pgid: i32, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let left = group_members(pgid);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes of server group {pgid} outlived it: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A gate that records every event and denies tools hinted destructive when told to.
#[derive(Default)]
pub struct Recorder {
    pub events: Mutex<Vec<ToolCallEvent>>,
    pub deny_destructive: bool,
}

#[async_trait]
impl Hooks for Recorder {
    async fn before_tool(&self, event: &ToolCallEvent) -> Result<Decision, HostError> {
        self.events.lock().unwrap().push(event.clone());
        if self.deny_destructive && event.hints.destructive == Some(true) {
            return Ok(Decision::deny("destructive tools are not allowed"));
        }
        Ok(Decision::Allow)
    }
}

impl Recorder {
    pub fn new(deny_destructive: bool) -> Arc<Recorder> {
        Arc::new(Recorder {
            events: Mutex::new(Vec::new()),
            deny_destructive,
        })
    }

    pub fn event(&self, name: &str) -> ToolCallEvent {
        self.events
            .lock()
            .unwrap()
            .iter()
            .find(|e| e.name == name)
            .cloned()
            .unwrap_or_else(|| panic!("no gate event for {name}"))
    }
}

/// Collect a run's events to its end.
pub async fn events(mut run: Run) -> Vec<Event> {
    let mut out = Vec::new();
    while let Some(e) = run.next_event().await {
        out.push(e);
    }
    out
}

/// The tool results of a list of events: (name, content, is_error).
pub fn results(events: &[Event]) -> Vec<(String, String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult {
                name,
                content,
                is_error,
                ..
            } => Some((name.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}
