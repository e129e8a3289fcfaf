//! Opt-in background shells: `bash` with `run_in_background` starts a command that keeps
//! running after the call; `bash_output` returns what it printed since the last look plus
//! `[status: running|exited N|killed]`; `kill_shell` stops its process group.
//!
//! No process outlives its owner: a shell is killed when the turn that started it is cancelled,
//! when [`BackgroundShells::close_all`] runs (the client's `close`), and when the last handle to
//! the shells is dropped (a dropped client). When a shell's command ends, whatever it left
//! running in its process group is killed too.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::process::{kill_group, pump, spawn, Capture};
use super::{opt_u64, str_arg};
use crate::sandbox::Sandbox;
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// How long output is still read after a shell's command ended.
const DRAIN: Duration = Duration::from_millis(500);
/// The longest `wait_ms` of `bash_output`.
const MAX_WAIT_MS: u64 = 600_000;

/// A shell's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    Exited(i32),
    Killed,
}

impl State {
    fn label(self) -> String {
        match self {
            State::Running => "running".into(),
            State::Exited(code) => format!("exited {code}"),
            State::Killed => "killed".into(),
        }
    }
}

struct Shell {
    command: String,
    pgid: i32,
    /// Output not yet returned by `bash_output`.
    fresh: Arc<Mutex<Capture>>,
    state: watch::Receiver<State>,
    /// Set before we kill it, so its end reads as `killed`.
    killed: AtomicBool,
}

impl Shell {
    fn state(&self) -> State {
        *self.state.borrow()
    }

    fn kill(&self) {
        if self.state() == State::Running {
            self.killed.store(true, Ordering::SeqCst);
            kill_group(self.pgid);
        }
    }
}

#[derive(Default)]
struct Inner {
    shells: Mutex<BTreeMap<u64, Arc<Shell>>>,
    next: AtomicU64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for shell in self.shells.get_mut().values() {
            shell.kill();
        }
    }
}

/// The background shells of a client. Cheap to clone (clones share the shells). Turned on by
/// config `background: true`, or given to [`crate::ClientBuilder::background_shells`].
#[derive(Clone, Default)]
pub struct BackgroundShells {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for BackgroundShells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundShells")
            .field("ids", &self.ids())
            .finish()
    }
}

fn parse_id(id: &str) -> Option<u64> {
    id.strip_prefix("shell_")?.parse().ok()
}

impl BackgroundShells {
    /// No shells yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Kill every running shell's process group. Idempotent; needs no runtime.
    pub fn close_all(&self) {
        for shell in self.inner.shells.lock().values() {
            shell.kill();
        }
    }

    /// The ids of every shell started so far (`shell_1`, `shell_2`, ...).
    pub fn ids(&self) -> Vec<String> {
        self.inner
            .shells
            .lock()
            .keys()
            .map(|n| format!("shell_{n}"))
            .collect()
    }

    /// A shell's status: `running`, `exited N` or `killed`; `None` for an unknown id.
    pub fn status(&self, id: &str) -> Option<String> {
        self.get(id).map(|s| s.state().label())
    }

    fn get(&self, id: &str) -> Option<Arc<Shell>> {
        let n = parse_id(id)?;
        self.inner.shells.lock().get(&n).cloned()
    }

    fn unknown(&self, id: &str) -> ToolError {
        let ids = self.ids();
        if ids.is_empty() {
            format!("no background shell {id:?}: none was started").into()
        } else {
            format!(
                "no background shell {id:?}; the shells are: {}",
                ids.join(", ")
            )
            .into()
        }
    }

    /// Start `command` in the background, in `sandbox`; killed when `cancel` (the turn's token)
    /// fires. Needs a tokio runtime.
    pub(crate) fn start(
        &self,
        command: &str,
        dir: &Path,
        sandbox: &Sandbox,
        secret_env: &[String],
        cancel: CancellationToken,
    ) -> std::io::Result<String> {
        let spawned = spawn(command, dir, sandbox, secret_env)?;
        let n = self.inner.next.fetch_add(1, Ordering::SeqCst) + 1;
        let (state_tx, state_rx) = watch::channel(State::Running);
        let shell = Arc::new(Shell {
            command: command.to_string(),
            pgid: spawned.pgid,
            fresh: Arc::new(Mutex::new(Capture::default())),
            state: state_rx,
            killed: AtomicBool::new(false),
        });
        self.inner.shells.lock().insert(n, shell.clone());
        let pumping = tokio::spawn(pump(spawned.output, shell.fresh.clone()));
        let mut child = spawned.child;
        let guard = spawned.guard;
        tokio::spawn(async move {
            let status = tokio::select! {
                status = child.wait() => status.ok(),
                _ = cancel.cancelled() => {
                    shell.killed.store(true, Ordering::SeqCst);
                    guard.kill();
                    child.wait().await.ok()
                }
            };
            // The command ended: nothing it started stays behind.
            guard.kill();
            let _ = tokio::time::timeout(DRAIN, pumping).await;
            let state = match status.and_then(|s| s.code()) {
                _ if shell.killed.load(Ordering::SeqCst) => State::Killed,
                Some(code) => State::Exited(code),
                None => State::Killed,
            };
            let _ = state_tx.send(state);
            drop(guard);
        });
        Ok(format!("shell_{n}"))
    }
}

/// `bash_output`: a background shell's new output and status.
pub(crate) struct BashOutput(pub BackgroundShells);

#[async_trait]
impl Tool for BashOutput {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "bash_output",
            "Read the output a background shell (started by bash with run_in_background) \
             printed since the last bash_output call for it, followed by its status: \
             `[status: running]`, `[status: exited N]` or `[status: killed]`. With `wait_ms`, \
             first wait up to that long for the shell to finish.",
            json!({
                "type": "object",
                "properties": {
                    "shell_id": {"type": "string", "description": "The shell id bash returned, e.g. `shell_1`."},
                    "wait_ms": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS, "description": "Wait up to this long for the shell to finish before returning (default 0)."}
                },
                "required": ["shell_id"],
                "additionalProperties": false
            }),
        )
        .with_hints(Hints::read_only())
    }

    fn source(&self) -> Source {
        Source::Builtin
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let id = str_arg(&args, "shell_id")?;
        let shell = self.0.get(id).ok_or_else(|| self.0.unknown(id))?;
        let wait_ms = opt_u64(&args, "wait_ms")?.unwrap_or(0).min(MAX_WAIT_MS);
        if wait_ms > 0 {
            let mut state = shell.state.clone();
            let finished = state.wait_for(|s| *s != State::Running);
            tokio::select! {
                _ = finished => {}
                _ = tokio::time::sleep(Duration::from_millis(wait_ms)) => {}
                _ = ctx.cancel.cancelled() => return Err("cancelled".into()),
            }
        }
        // Read the state first: output that arrives after it is left for the next call.
        let state = shell.state();
        let fresh = std::mem::take(&mut *shell.fresh.lock());
        let (mut text, cut) = fresh.finish();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[status: {}]", state.label()));
        let mut meta = json!({"shellId": id, "status": match state {
            State::Running => "running",
            State::Exited(_) => "exited",
            State::Killed => "killed",
        }});
        if let State::Exited(code) = state {
            meta["exitCode"] = json!(code);
        }
        if let Some(Value::Object(cut)) = cut {
            for (k, v) in cut {
                meta[k] = v;
            }
        }
        Ok(ToolOutput::text(text).with_metadata(meta))
    }
}

/// `kill_shell`: stop a background shell's process group.
pub(crate) struct KillShell(pub BackgroundShells);

#[async_trait]
impl Tool for KillShell {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "kill_shell",
            "Stop a background shell (started by bash with run_in_background) and every \
             process it started.",
            json!({
                "type": "object",
                "properties": {
                    "shell_id": {"type": "string", "description": "The shell id bash returned, e.g. `shell_1`."}
                },
                "required": ["shell_id"],
                "additionalProperties": false
            }),
        )
        .with_hints(Hints::destructive())
    }

    fn source(&self) -> Source {
        Source::Builtin
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let id = str_arg(&args, "shell_id")?;
        let shell = self.0.get(id).ok_or_else(|| self.0.unknown(id))?;
        match shell.state() {
            State::Running => {
                shell.kill();
                let mut state = shell.state.clone();
                let _ = tokio::time::timeout(
                    Duration::from_secs(5),
                    state.wait_for(|s| *s != State::Running),
                )
                .await;
                Ok(ToolOutput::text(format!(
                    "Killed shell {id} ({})",
                    crate::shown::shown(&shell.command)
                ))
                .with_metadata(json!({"shellId": id, "status": "killed"})))
            }
            done => Ok(ToolOutput::text(format!(
                "Shell {id} was no longer running: [status: {}]",
                done.label()
            ))
            .with_metadata(json!({"shellId": id, "status": done.label()}))),
        }
    }
}
