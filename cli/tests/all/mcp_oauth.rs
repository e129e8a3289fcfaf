//! `contenox run --mcp` against an OAuth-protected MCP server (tests/mcp/oauth_server.py: the
//! MCP Python SDK's authorization server and protected streamable HTTP server), with $BROWSER a
//! script that follows the authorization URL (tests/mcp/browser.py, loopback only): the tools
//! load after the callback on the CLI's loopback listener, the tokens land in an owner-only file
//! and are reused by the next run, a file open to others is refused, `contenox mcp logout`
//! forgets them, and no token appears on stdout, stderr or in the transcript.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{both, contenox, repo_root};
use serde_json::{json, Value};

/// The Python with the `mcp` SDK (tests/mcp/.venv, or $CONTENOX_MCP_PYTHON).
fn mcp_python() -> String {
    if let Ok(p) = std::env::var("CONTENOX_MCP_PYTHON") {
        return p;
    }
    let p = repo_root().join("tests/mcp/.venv/bin/python");
    assert!(
        p.exists(),
        "the MCP venv not found at {}: run tests/mcp/install.sh first",
        p.display()
    );
    p.to_string_lossy().into_owned()
}

/// oauth_server.py on a free port, in its own process group, stopped on drop.
struct OAuthServer {
    child: Child,
    port: u16,
}

impl OAuthServer {
    fn start() -> OAuthServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(mcp_python())
            .arg(repo_root().join("tests/mcp/oauth_server.py"))
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start oauth_server.py");
        let server = OAuthServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "oauth_server.py did not listen");
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// GET /_test/stats.
    fn stats(&self) -> Value {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            s,
            "GET /_test/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        let body = reply.split("\r\n\r\n").nth(1).unwrap_or("");
        serde_json::from_str(body).unwrap_or_else(|_| panic!("stats: {reply}"))
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        unsafe {
            libc::killpg(self.child.id() as i32, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

struct Work {
    dir: tempfile::TempDir,
    mcp: PathBuf,
    script: PathBuf,
}

impl Work {
    fn new(server: &OAuthServer) -> Work {
        let dir = tempfile::tempdir().unwrap();
        let mcp = dir.path().join("mcp.json");
        std::fs::write(
            &mcp,
            json!({"mcpServers": {"vault": {"type": "http", "url": server.url()}}}).to_string(),
        )
        .unwrap();
        let script = dir.path().join("script.json");
        std::fs::write(
            &script,
            json!([
                {"tool_calls": [{"id": "c1", "name": "vault__vault_sum",
                                 "arguments": {"a": 2, "b": 3}}]},
                {"text": "All done."}
            ])
            .to_string(),
        )
        .unwrap();
        Work { dir, mcp, script }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn token_dir(&self) -> PathBuf {
        self.state().join("contenox/mcp-oauth")
    }

    fn transcript(&self) -> PathBuf {
        self.dir.path().join("t.json")
    }

    fn command(&self) -> assert_cmd::Command {
        let mut cmd = contenox(&self.dir.path().join("registry.db"));
        cmd.current_dir(self.dir.path())
            .env("XDG_STATE_HOME", self.state())
            .env("BROWSER", repo_root().join("tests/mcp/browser.py"))
            .env("BROWSER_LOG", self.dir.path().join("browser.log"));
        cmd
    }

    /// One `contenox run` calling the protected tool: (exit ok, stdout, stderr).
    fn run(&self) -> (bool, String, String) {
        let out = self
            .command()
            .args(["run", "--mcp"])
            .arg(&self.mcp)
            .arg("--script")
            .arg(&self.script)
            .args(["--builtins", "none", "--auto", "--transcript"])
            .arg(self.transcript())
            .arg("add")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Every token value in the token file.
    fn tokens(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.token_dir().join("tokens.json")).unwrap();
        let all: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
        let mut out = Vec::new();
        for v in all.values() {
            let saved: Value = serde_json::from_str(v.as_str().unwrap()).unwrap();
            for key in ["access_token", "refresh_token"] {
                if let Some(t) = saved[key].as_str() {
                    out.push(t.to_string());
                }
            }
        }
        out
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_browser_step_signs_in_the_token_file_is_private_and_reused_and_never_shown() {
    let server = OAuthServer::start();
    let work = Work::new(&server);

    let (ok, stdout, stderr) = work.run();
    assert!(ok, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("[mcp] vault: sign in to authorize contenox"),
        "{stderr}"
    );
    assert!(stderr.contains("[mcp] vault: authorized"), "{stderr}");
    assert!(stderr.contains("[mcp] vault: 1 tool(s)"), "{stderr}");
    assert!(stderr.contains("vault says 5"), "{stderr}");
    assert_eq!(stdout.trim(), "All done.");
    // The URL printed is the one the browser was given: the authorization request.
    let given = std::fs::read_to_string(work.dir.path().join("browser.log")).unwrap();
    let given = given.lines().next().unwrap();
    assert!(stderr.contains(given), "{stderr}");
    assert!(given.contains("code_challenge_method=S256"), "{given}");
    assert!(
        given.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A"),
        "{given}"
    );
    assert_eq!(server.stats()["authorizations"], 1);

    assert_eq!(mode(&work.token_dir()), 0o700);
    assert_eq!(mode(&work.token_dir().join("tokens.json")), 0o600);
    let names: Vec<_> = std::fs::read_dir(work.token_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["tokens.json"], "no temporary file left");
    let tokens = work.tokens();
    assert_eq!(tokens.len(), 2, "an access and a refresh token");
    let transcript = std::fs::read_to_string(work.transcript()).unwrap();
    assert!(transcript.contains("vault says 5"));

    // The next run uses the saved token: no browser, no new authorization.
    let (ok, stdout2, stderr2) = work.run();
    assert!(ok, "{stdout2}\n{stderr2}");
    assert!(!stderr2.contains("sign in"), "{stderr2}");
    assert!(stderr2.contains("vault says 5"), "{stderr2}");
    assert_eq!(server.stats()["authorizations"], 1);

    let transcript = std::fs::read_to_string(work.transcript()).unwrap();
    for token in work.tokens().iter().chain(&tokens) {
        for (what, text) in [
            ("stdout", &stdout),
            ("stderr", &stderr),
            ("stdout", &stdout2),
            ("stderr", &stderr2),
            ("transcript", &transcript),
        ] {
            assert!(!text.contains(token.as_str()), "a token in the {what}");
        }
    }
}

#[test]
fn a_token_file_open_to_others_is_refused_and_logout_forgets_the_server() {
    let server = OAuthServer::start();
    let work = Work::new(&server);
    let (ok, stdout, stderr) = work.run();
    assert!(ok, "{stdout}\n{stderr}");
    let file = work.token_dir().join("tokens.json");

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (_, _, stderr) = work.run();
    assert!(
        stderr.contains("[mcp] vault: failed:")
            && stderr.contains("readable or writable by others"),
        "{stderr}"
    );
    assert!(stderr.contains("chmod 600"), "{stderr}");
    assert!(!stderr.contains("vault says 5"), "{stderr}");
    // Nothing was rewritten or widened further.
    assert_eq!(mode(&file), 0o644);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();

    let out = work
        .command()
        .args(["mcp", "logout"])
        .arg(server.url())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("signed out of"));
    assert!(work.tokens().is_empty());
    assert_eq!(mode(&file), 0o600);
    // Signed out: the next run signs in again.
    let (ok, _, stderr) = work.run();
    assert!(ok, "{stderr}");
    assert!(stderr.contains("sign in to authorize"), "{stderr}");
    assert_eq!(server.stats()["authorizations"], 2);
}
