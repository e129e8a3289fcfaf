//! `--editor-tools`: `read` and `write` through the editor (`fs/read_text_file`,
//! `fs/write_text_file`: its buffers, unsaved changes included) and `bash` in the editor's
//! terminals (`terminal/*`), when the editor advertises them. Off by default: the protocol's v2
//! draft removes these methods and clients differ in how they implement them.
//!
//! Each replaces the builtin of the same name with the builtin's own spec and source, so the
//! model sees the same tool and the approval policy judges it as the builtin (the secret
//! quarantine, the write rules, the shell tiers). The path is confined to the session's root
//! before the editor is asked, exactly as the builtins confine it; bash's `cwd` is the root.
//! What the editor's terminal does not give: bash's sandbox (the editor runs the command). A
//! terminal is always released: after the command, on its timeout, and when the turn is
//! cancelled (killed first).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use contenox::builtin::{builtin, confine, display_path};
use contenox::{
    async_trait, CancellationToken, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};
use serde_json::{json, Value};

use super::wire::Peer;
use crate::terminal::cut_chars;

/// Lines a read returns when the call gives no limit (the builtin's default).
const DEFAULT_LIMIT: u64 = 2000;
/// Characters of one line a read shows (the builtin's cut).
const MAX_LINE_CHARS: usize = 2000;
/// Output bytes the editor keeps of a command (the builtin keeps about as much).
const OUTPUT_LIMIT: u64 = 100_000;
/// A command's timeout when none is given, and the longest (the builtin's).
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// How long the clean-up of a terminal (kill, release) may take.
const CLEANUP: Duration = Duration::from_secs(5);

/// What the editor offers, from `initialize`'s `clientCapabilities`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EditorOffers {
    /// `fs.readTextFile`.
    pub read: bool,
    /// `fs.writeTextFile`.
    pub write: bool,
    /// `terminal`.
    pub terminal: bool,
}

impl EditorOffers {
    /// Read the client's capabilities (anything malformed counts as not offered).
    pub fn of(caps: &Value) -> EditorOffers {
        let yes = |p: &str| caps.pointer(p).and_then(Value::as_bool).unwrap_or(false);
        EditorOffers {
            read: yes("/fs/readTextFile"),
            write: yes("/fs/writeTextFile"),
            terminal: yes("/terminal"),
        }
    }
}

/// The connection and session the tools ask through.
struct Editor {
    peer: Arc<Peer>,
    session_id: String,
    root: PathBuf,
}

impl Editor {
    /// Call a client method; the turn's cancel (or the editor going away) stops waiting.
    async fn call(
        &self,
        method: &str,
        params: Value,
        cancel: &CancellationToken,
    ) -> Result<Value, ToolError> {
        let (id, answer) = self.peer.request(method, params).await;
        tokio::select! {
            a = answer => match a {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(ToolError::new(format!(
                    "the editor answered {method} with an error: {}",
                    cut_chars(&e.message, 500)
                ))),
                Err(_) => Err(ToolError::new("the editor went away")),
            },
            _ = cancel.cancelled() => {
                self.peer.forget(id);
                Err(ToolError::new("cancelled"))
            }
            _ = self.peer.gone().cancelled() => {
                self.peer.forget(id);
                Err(ToolError::new("the editor went away"))
            }
        }
    }

    fn path(&self, args: &Value) -> Result<(PathBuf, String), ToolError> {
        let given = args
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("`path` must be a string"))?;
        let real = confine(&self.root, given)?;
        let shown = display_path(&self.root, &real);
        Ok((real, shown))
    }
}

fn spec_of(name: &str) -> ToolSpec {
    // Cannot fail: called only with the names of the engine's file builtins.
    builtin(name)
        .expect("a builtin the engine implements")
        .spec()
}

/// `read` through `fs/read_text_file`.
pub struct EditorRead(Arc<Editor>);
/// `write` through `fs/write_text_file`.
pub struct EditorWrite(Arc<Editor>);
/// `bash` in an editor terminal.
pub struct EditorBash(Arc<Editor>);

/// The tools to register for what the editor offers, in session `session_id` rooted at `root`.
pub fn editor_tools(
    peer: Arc<Peer>,
    session_id: String,
    root: PathBuf,
    offers: EditorOffers,
) -> Vec<Arc<dyn Tool>> {
    let editor = Arc::new(Editor {
        peer,
        session_id,
        root,
    });
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    if offers.read {
        tools.push(Arc::new(EditorRead(editor.clone())));
    }
    if offers.write {
        tools.push(Arc::new(EditorWrite(editor.clone())));
    }
    if offers.terminal {
        tools.push(Arc::new(EditorBash(editor)));
    }
    tools
}

fn positive(args: &Value, key: &str) -> Result<Option<u64>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => Ok(Some(n)),
            _ => Err(ToolError::new(format!(
                "`{key}` must be a positive integer"
            ))),
        },
    }
}

#[async_trait]
impl Tool for EditorRead {
    fn spec(&self) -> ToolSpec {
        spec_of("read")
    }
    fn source(&self) -> Source {
        Source::Builtin
    }
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let (real, shown) = self.0.path(&args)?;
        let offset = positive(&args, "offset")?.unwrap_or(1);
        let limit = positive(&args, "limit")?.unwrap_or(DEFAULT_LIMIT);
        let params = json!({
            "sessionId": self.0.session_id,
            "path": real,
            "line": offset.min(u64::from(u32::MAX)),
            "limit": limit.min(u64::from(u32::MAX)),
        });
        let answer = self
            .0
            .call("fs/read_text_file", params, &ctx.cancel)
            .await?;
        let text = answer
            .get("content")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new(format!("the editor sent no text for {shown}")))?;
        // The editor was asked for the window; it is not trusted to have kept to it.
        let mut out = String::new();
        for (i, line) in text.lines().take(limit as usize).enumerate() {
            let n = offset.saturating_add(i as u64);
            out.push_str(&format!("{n:>6}\t{}\n", cut_chars(line, MAX_LINE_CHARS)));
        }
        if out.is_empty() {
            out = format!("({shown} has no lines from line {offset})");
        }
        Ok(ToolOutput::text(out))
    }
}

#[async_trait]
impl Tool for EditorWrite {
    fn spec(&self) -> ToolSpec {
        spec_of("write")
    }
    fn source(&self) -> Source {
        Source::Builtin
    }
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let (real, shown) = self.0.path(&args)?;
        let content = args
            .get("content")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("`content` must be a string"))?;
        let params = json!({"sessionId": self.0.session_id, "path": real, "content": content});
        self.0
            .call("fs/write_text_file", params, &ctx.cancel)
            .await?;
        Ok(ToolOutput::text(format!(
            "Wrote {shown} ({} bytes) in the editor",
            content.len()
        )))
    }
}

/// Kills (when still running) and releases a terminal, also when the call's future is dropped
/// by a cancelled turn: the clean-up then runs on its own task.
struct Release {
    editor: Arc<Editor>,
    terminal: Option<String>,
    running: bool,
}

impl Release {
    async fn now(mut self) {
        if let Some(id) = self.terminal.take() {
            cleanup(self.editor.clone(), id, self.running).await;
        }
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        if let Some(id) = self.terminal.take() {
            let editor = self.editor.clone();
            let running = self.running;
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(cleanup(editor, id, running));
            }
        }
    }
}

async fn cleanup(editor: Arc<Editor>, terminal: String, running: bool) {
    let never = CancellationToken::new();
    let params = json!({"sessionId": editor.session_id, "terminalId": terminal});
    let done = async {
        if running {
            let _ = editor.call("terminal/kill", params.clone(), &never).await;
        }
        let _ = editor
            .call("terminal/release", params.clone(), &never)
            .await;
    };
    if tokio::time::timeout(CLEANUP, done).await.is_err() {
        eprintln!("contenox acp: the editor did not release terminal {terminal}");
    }
}

#[async_trait]
impl Tool for EditorBash {
    fn spec(&self) -> ToolSpec {
        // The foreground bash (no background shells in `contenox acp`).
        spec_of("bash")
    }
    fn source(&self) -> Source {
        Source::Builtin
    }
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let editor = &self.0;
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("`command` must be a string"))?;
        let timeout_ms = positive(&args, "timeout_ms")?.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout_ms > MAX_TIMEOUT_MS {
            return Err(ToolError::new(format!(
                "timeout_ms must be between 1 and {MAX_TIMEOUT_MS} (got {timeout_ms})"
            )));
        }
        let created = editor
            .call(
                "terminal/create",
                json!({
                    "sessionId": editor.session_id,
                    "command": "bash",
                    "args": ["-c", command],
                    "cwd": editor.root,
                    "outputByteLimit": OUTPUT_LIMIT,
                }),
                &ctx.cancel,
            )
            .await?;
        let terminal = created
            .get("terminalId")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("the editor created no terminal"))?
            .to_string();
        let mut release = Release {
            editor: editor.clone(),
            terminal: Some(terminal.clone()),
            running: true,
        };
        // The editor shows the terminal's output live in the tool call.
        editor
            .peer
            .notify(
                "session/update",
                json!({"sessionId": editor.session_id, "update": {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": ctx.call_id,
                    "content": [{"type": "terminal", "terminalId": terminal}],
                }}),
            )
            .await;
        let params = json!({"sessionId": editor.session_id, "terminalId": terminal});
        let exited = tokio::time::timeout(
            Duration::from_millis(timeout_ms),
            editor.call("terminal/wait_for_exit", params.clone(), &ctx.cancel),
        )
        .await;
        let timed_out = exited.is_err();
        if timed_out {
            let never = CancellationToken::new();
            let _ = editor.call("terminal/kill", params.clone(), &never).await;
        }
        let status = match exited {
            Ok(r) => Some(r?),
            Err(_) => None,
        };
        release.running = false;
        let never = CancellationToken::new();
        let output = editor.call("terminal/output", params, &never).await;
        release.now().await;
        let output = output?;
        let text = output.get("output").and_then(Value::as_str).unwrap_or("");
        let truncated = output
            .get("truncated")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let status = status
            .or_else(|| output.get("exitStatus").cloned())
            .unwrap_or(Value::Null);
        let code = status.get("exitCode").and_then(Value::as_i64);
        let signal = status.get("signal").and_then(Value::as_str);
        let mut meta = json!({"exitCode": code, "terminal": true});
        if let Some(s) = signal {
            meta["signal"] = json!(s);
        }
        if truncated {
            meta["truncated"] = json!(true);
        }
        let text = cut_chars(text, OUTPUT_LIMIT as usize);
        if timed_out {
            meta["timedOut"] = json!(true);
            meta["timeoutMs"] = json!(timeout_ms);
            return Ok(
                ToolOutput::error(format!("{text}\n(timed out after {timeout_ms} ms)"))
                    .with_metadata(meta),
            );
        }
        Ok(ToolOutput::text(text).with_metadata(meta))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_from_capabilities() {
        let all = EditorOffers::of(
            &json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}),
        );
        assert_eq!(
            all,
            EditorOffers {
                read: true,
                write: true,
                terminal: true
            }
        );
        assert_eq!(
            EditorOffers::of(&json!({"fs": {"readTextFile": "yes"}, "terminal": 1})),
            EditorOffers::default()
        );
        assert_eq!(EditorOffers::of(&Value::Null), EditorOffers::default());
    }
}
