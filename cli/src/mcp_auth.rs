//! OAuth for `contenox run --mcp`: the host side of [`McpAuth`] (the engine does the protocol).
//!
//! - The browser step: the authorization URL is printed and opened with `$BROWSER` (else
//!   `xdg-open`); a listener on `http://127.0.0.1:<random port>/callback` takes one request,
//!   within [`WAIT`], whose `state` must be the one the URL carries, and hands its URL back.
//! - The token store: one JSON file, `tokens.json` (0600) in `mcp-oauth/` (0700) under
//!   `$XDG_STATE_HOME/contenox`, else `~/.local/state/contenox`; written through a file beside
//!   it renamed over it; refused with a clear error when the file or the folder is open to others.
//!   `contenox mcp logout` removes a server's tokens (or all).
//!
//! Nothing here prints a token or the callback's code: the printed URL is the authorization
//! request (client id, PKCE challenge, state), which grants nothing by itself.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use contenox::mcp::McpAuth;
use contenox::{async_trait, HostError};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::args::McpCommand;
use crate::error::{CliError, CliResult};
use crate::terminal::clean_line;

/// How long the listener waits for the browser to come back.
const WAIT: Duration = Duration::from_secs(300);
/// How long one connection may take to send its request line and headers.
const REQUEST_WAIT: Duration = Duration::from_secs(10);
/// The largest request head read from the browser.
const MAX_REQUEST: usize = 16 * 1024;
/// The largest token file read.
const MAX_STORE: u64 = 1024 * 1024;
/// The callback's path.
const CALLBACK: &str = "/callback";

/// Where the token file lives: `$XDG_STATE_HOME/contenox/mcp-oauth`, else
/// `~/.local/state/contenox/mcp-oauth`.
pub fn default_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(base.join("contenox").join("mcp-oauth"))
}

/// The token file: a JSON object of key → the engine's saved text.
pub struct TokenFile {
    dir: PathBuf,
    /// One read-modify-write at a time within the process.
    lock: Mutex<()>,
}

impl TokenFile {
    /// The store in `dir` (created, 0700, on the first save).
    pub fn new(dir: PathBuf) -> TokenFile {
        TokenFile {
            dir,
            lock: Mutex::new(()),
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.join("tokens.json")
    }

    /// Refuse a folder or file others can read or write.
    fn check_private(path: &Path) -> Result<(), String> {
        match std::fs::symlink_metadata(path) {
            Ok(meta) => {
                if meta.file_type().is_symlink() {
                    return Err(format!(
                        "{} is a symbolic link; the token store must be a plain file and folder",
                        path.display()
                    ));
                }
                let mode = meta.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    return Err(format!(
                        "{} is readable or writable by others (mode {mode:o}); it holds OAuth \
                         tokens: chmod {} it (or remove it to sign in again)",
                        path.display(),
                        if meta.is_dir() { "700" } else { "600" }
                    ));
                }
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// Every entry (none when there is no file yet).
    fn read_all(&self) -> Result<BTreeMap<String, String>, String> {
        Self::check_private(&self.dir)?;
        let path = self.path();
        Self::check_private(&path)?;
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_STORE + 1), &mut text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if text.len() as u64 > MAX_STORE {
            return Err(format!(
                "{} is larger than {MAX_STORE} bytes",
                path.display()
            ));
        }
        serde_json::from_str(&text).map_err(|_| {
            format!(
                "{} is not a token store (JSON object of text); remove it to sign in again",
                path.display()
            )
        })
    }

    /// Write every entry: a 0600 file beside the store, renamed over it.
    fn write_all(&self, all: &BTreeMap<String, String>) -> Result<(), String> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| format!("{}: {e}", self.dir.display()))?;
        Self::check_private(&self.dir)?;
        let path = self.path();
        let tmp = self
            .dir
            .join(format!("tokens.json.{}.tmp", std::process::id()));
        let text = serde_json::to_string_pretty(all).map_err(|e| e.to_string())?;
        let written = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(format!("{}: {e}", path.display()));
        }
        Ok(())
    }

    /// The text under `key`.
    pub fn load(&self, key: &str) -> Result<Option<String>, String> {
        let _one = self.lock.lock();
        Ok(self.read_all()?.remove(key))
    }

    /// Keep `value` under `key`.
    pub fn save(&self, key: &str, value: &str) -> Result<(), String> {
        let _one = self.lock.lock();
        let mut all = self.read_all()?;
        all.insert(key.to_string(), value.to_string());
        self.write_all(&all)
    }

    /// Remove the entries `which` selects; how many were removed.
    pub fn remove(&self, which: impl Fn(&str) -> bool) -> Result<usize, String> {
        let _one = self.lock.lock();
        let mut all = self.read_all()?;
        let before = all.len();
        all.retain(|k, _| !which(k));
        let removed = before - all.len();
        if removed > 0 {
            self.write_all(&all)?;
        }
        Ok(removed)
    }
}

/// `contenox mcp logout URL` / `--all`.
pub fn run(command: McpCommand) -> CliResult<()> {
    let McpCommand::Logout { url, all } = command;
    let dir = default_dir().ok_or_else(|| {
        CliError::failed("no state folder: neither XDG_STATE_HOME nor HOME is set")
    })?;
    let store = TokenFile::new(dir);
    let removed = match &url {
        Some(u) => {
            let key = format!("mcp-oauth:{u}");
            store.remove(|k| k == key)
        }
        None if all => store.remove(|k| k.starts_with("mcp-oauth:")),
        None => Ok(0),
    }
    .map_err(CliError::failed)?;
    match (&url, removed) {
        (Some(u), 0) => eprintln!("no tokens kept for {}", clean_line(u)),
        (Some(u), _) => eprintln!("signed out of {}", clean_line(u)),
        (None, n) => eprintln!("signed out of {n} server(s)"),
    }
    Ok(())
}

/// The value of `name` in the query of `url_or_target` (as written: not decoded).
fn query_param<'a>(url_or_target: &'a str, name: &str) -> Option<&'a str> {
    let query = url_or_target.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or("");
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The CLI's [`McpAuth`].
pub struct CliAuth {
    store: TokenFile,
    /// The loopback listener, bound on the first `redirect_uri` and kept for the run.
    listener: Mutex<Option<(Arc<TcpListener>, u16)>>,
    /// One browser step at a time.
    authorizing: tokio::sync::Mutex<()>,
    note: Arc<dyn Fn(String) + Send + Sync>,
}

impl CliAuth {
    /// Tokens in `store`; `note` prints a line for the person.
    pub fn new(store: TokenFile, note: Arc<dyn Fn(String) + Send + Sync>) -> CliAuth {
        CliAuth {
            store,
            listener: Mutex::new(None),
            authorizing: tokio::sync::Mutex::new(()),
            note,
        }
    }

    fn listener(&self) -> Result<(Arc<TcpListener>, u16), String> {
        let mut slot = self.listener.lock();
        if let Some(l) = slot.as_ref() {
            return Ok(l.clone());
        }
        let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| format!("cannot listen on 127.0.0.1 for the OAuth callback: {e}"))?;
        let port = std_listener.local_addr().map_err(|e| e.to_string())?.port();
        std_listener
            .set_nonblocking(true)
            .map_err(|e| e.to_string())?;
        let listener = TcpListener::from_std(std_listener).map_err(|e| e.to_string())?;
        let l = (Arc::new(listener), port);
        *slot = Some(l.clone());
        Ok(l)
    }

    /// Open `url` in the browser: `$BROWSER` (its `%s` replaced, else the URL appended), else
    /// `xdg-open`. The child is reaped in the background.
    fn open_browser(&self, url: &str) {
        let browser = std::env::var("BROWSER")
            .ok()
            .filter(|b| !b.trim().is_empty());
        // $BROWSER may list several commands separated by ':' ; the first is used.
        let command = browser
            .as_deref()
            .and_then(|b| b.split(':').next())
            .unwrap_or("xdg-open");
        let mut words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
        if words.iter().any(|w| w.contains("%s")) {
            for w in &mut words {
                *w = w.replace("%s", url);
            }
        } else {
            words.push(url.to_string());
        }
        let Some((program, args)) = words.split_first() else {
            return;
        };
        let spawned = tokio::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(false)
            .spawn();
        match spawned {
            Ok(mut child) => {
                tokio::spawn(async move {
                    let _ = child.wait().await;
                });
            }
            Err(e) => (self.note)(format!(
                "[mcp] could not open a browser ({}: {e}); open the URL above yourself",
                clean_line(program)
            )),
        }
    }

    /// Wait for the one callback request; its URL, when its state is `state`.
    async fn callback(listener: &TcpListener, port: u16, state: &str) -> Result<String, HostError> {
        let (mut stream, _) = tokio::time::timeout(WAIT, listener.accept())
            .await
            .map_err(|_| {
                HostError::new(format!(
                    "no browser came back to the callback within {} s",
                    WAIT.as_secs()
                ))
            })?
            .map_err(|e| HostError::new(format!("the callback listener failed: {e}")))?;
        let head = tokio::time::timeout(REQUEST_WAIT, async {
            let mut head = Vec::new();
            let mut buf = [0u8; 2048];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
                let n = stream.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                head.extend_from_slice(&buf[..n]);
            }
            Ok::<_, std::io::Error>(head)
        })
        .await
        .map_err(|_| HostError::new("the callback request did not arrive in time"))?
        .map_err(|e| HostError::new(format!("the callback request: {e}")))?;
        let head = String::from_utf8_lossy(&head);
        let target = head
            .lines()
            .next()
            .and_then(|line| {
                let mut parts = line.split(' ');
                match (parts.next(), parts.next()) {
                    (Some("GET"), Some(t)) => Some(t.to_string()),
                    _ => None,
                }
            })
            .unwrap_or_default();
        let path_ok = target.split('?').next() == Some(CALLBACK);
        let state_ok = query_param(&target, "state") == Some(state);
        let (status, body) = if path_ok && state_ok {
            ("200 OK", "contenox is authorized. You can close this tab.")
        } else {
            ("400 Bad Request", "contenox did not expect this request.")
        };
        let reply = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
             Connection: close\r\nCache-Control: no-store\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
        if !path_ok {
            return Err(HostError::new(
                "the browser came back to another path than /callback; refused",
            ));
        }
        if !state_ok {
            return Err(HostError::new(
                "the callback's state is not the one sent; refused (another page may have called the listener)",
            ));
        }
        Ok(format!("http://127.0.0.1:{port}{target}"))
    }
}

#[async_trait]
impl McpAuth for CliAuth {
    fn redirect_uri(&self) -> String {
        match self.listener() {
            Ok((_, port)) => format!("http://127.0.0.1:{port}{CALLBACK}"),
            // authorize reports the failure; a URI nobody listens on fails the same way.
            Err(_) => format!("http://127.0.0.1:9{CALLBACK}"),
        }
    }

    async fn authorize(&self, server: &str, url: &str) -> Result<String, HostError> {
        let _one = self.authorizing.lock().await;
        let (listener, port) = self.listener().map_err(HostError::new)?;
        let state = query_param(url, "state")
            .ok_or_else(|| HostError::new("the authorization URL carries no state"))?
            .to_string();
        (self.note)(format!(
            "[mcp] {}: sign in to authorize contenox; opening your browser at:\n  {}",
            clean_line(server),
            clean_line(url)
        ));
        self.open_browser(url);
        let back = Self::callback(&listener, port, &state).await?;
        (self.note)(format!("[mcp] {}: authorized", clean_line(server)));
        Ok(back)
    }

    async fn load(&self, key: &str) -> Result<Option<String>, HostError> {
        self.store.load(key).map_err(HostError::new)
    }

    async fn save(&self, key: &str, value: &str) -> Result<(), HostError> {
        self.store.save(key, value).map_err(HostError::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_private_atomic_and_refuses_wider_permissions() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state/contenox/mcp-oauth");
        let store = TokenFile::new(dir.clone());
        assert_eq!(store.load("k").unwrap(), None);
        store.save("k", "v1").unwrap();
        store.save("j", "v2").unwrap();
        assert_eq!(store.load("k").unwrap().as_deref(), Some("v1"));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("tokens.json")), 0o600);
        // No temporary file left beside it.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        assert_eq!(store.remove(|k| k == "k").unwrap(), 1);
        assert_eq!(store.load("k").unwrap(), None);
        std::fs::set_permissions(
            dir.join("tokens.json"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let err = store.load("j").unwrap_err();
        assert!(err.contains("readable or writable by others"), "{err}");
        assert!(err.contains("chmod 600"), "{err}");
        std::fs::set_permissions(
            dir.join("tokens.json"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(store.save("j", "v3").unwrap_err().contains("chmod 700"));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(dir.join("tokens.json"), "[1]").unwrap();
        std::fs::set_permissions(
            dir.join("tokens.json"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        assert!(store.load("j").unwrap_err().contains("not a token store"));
    }

    #[test]
    fn query_params_are_read_as_written() {
        assert_eq!(
            query_param("/callback?code=a&state=xyz#f", "state"),
            Some("xyz")
        );
        assert_eq!(query_param("/callback?code=a", "state"), None);
        assert_eq!(query_param("/callback", "state"), None);
    }

    #[tokio::test]
    async fn one_callback_with_the_right_state_is_taken_and_a_wrong_one_refused() {
        for (sent, ok) in [("s1", true), ("other", false)] {
            let auth = CliAuth::new(
                TokenFile::new(tempfile::tempdir().unwrap().path().join("x")),
                Arc::new(|_| {}),
            );
            let uri = auth.redirect_uri();
            let (listener, port) = auth.listener().unwrap();
            let browser = tokio::spawn(async move {
                let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap();
                let req = format!("GET /callback?code=c&state={sent} HTTP/1.1\r\nHost: x\r\n\r\n");
                s.write_all(req.as_bytes()).await.unwrap();
                let mut reply = String::new();
                s.read_to_string(&mut reply).await.unwrap();
                reply
            });
            let back = CliAuth::callback(&listener, port, "s1").await;
            let reply = browser.await.unwrap();
            assert!(uri.starts_with("http://127.0.0.1:"));
            if ok {
                assert_eq!(
                    back.unwrap(),
                    format!("http://127.0.0.1:{port}/callback?code=c&state=s1")
                );
                assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
            } else {
                assert!(back.unwrap_err().to_string().contains("state"));
                assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
            }
        }
    }
}
