//! Running one command hook: `bash -c COMMAND` in the client's root, in the same sandbox as the
//! `bash` builtin (allowlisted environment without the secret variables, its own session and
//! process group, Landlock and seccomp where the kernel has them), the event JSON on its stdin,
//! stdout and stderr read apart and each kept to [`MAX_HOOK_OUTPUT_BYTES`], a timeout, and the
//! whole process group killed when it ends, times out or the turn is cancelled: nothing a hook
//! starts outlives it.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::builtin::{kill_group, shell};
use crate::sandbox::{self, Sandbox};

/// Bytes of stdout (and of stderr) kept from a hook; the rest is read and dropped.
pub const MAX_HOOK_OUTPUT_BYTES: usize = 64 * 1024;
/// How long output is still read after the command ended (pipes held by stray processes).
const DRAIN: Duration = Duration::from_millis(200);

/// How a command hook ended.
#[derive(Debug, Default)]
pub(crate) struct Ran {
    /// The exit code; `None` when it did not exit by itself (see `failure`).
    pub code: Option<i32>,
    /// Its stdout (lossy UTF-8, at most [`MAX_HOOK_OUTPUT_BYTES`]).
    pub stdout: String,
    /// Its stderr (the same).
    pub stderr: String,
    /// Whether stdout was longer than what was kept.
    pub stdout_cut: bool,
    /// Why it has no exit code: could not start, timed out, killed by a signal, cancelled.
    pub failure: Option<String>,
    /// The turn was cancelled while it ran.
    pub cancelled: bool,
}

/// Kills the group when dropped (a dropped hook future kills its command).
struct Group(i32);

impl Drop for Group {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

/// Run `command` with `input` on its stdin.
pub(crate) async fn run(
    command: &str,
    input: &[u8],
    root: &Path,
    sandbox: &Sandbox,
    secret_env: &[String],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Ran {
    let mut cmd = tokio::process::Command::new(shell());
    cmd.arg("-c")
        .arg(command)
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let failed = |why: String| Ran {
        failure: Some(why),
        ..Ran::default()
    };
    if let Err(e) = sandbox.prepare(&mut cmd, root, secret_env) {
        return failed(format!("cannot start the hook: {e}"));
    }
    // Hooks written for Claude Code find their scripts through it.
    cmd.env("CLAUDE_PROJECT_DIR", root)
        .env("CONTENOX_PROJECT_DIR", root);
    let (mut child, _watched) = match sandbox::spawn(cmd) {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start the hook: {e}")),
    };
    let Some(pgid) = child.id().map(|p| p as i32) else {
        return failed("the hook exited before it could be tracked".into());
    };
    let group = Group(pgid);
    // Cannot fail: spawned with stdin, stdout and stderr piped, each taken once here.
    let (mut stdin, stdout, stderr) = (
        child.stdin.take().expect("piped stdin"),
        child.stdout.take().expect("piped stdout"),
        child.stderr.take().expect("piped stderr"),
    );
    let input = input.to_vec();
    // A hook that never reads its stdin must not hold the write up: written aside, and a
    // broken pipe (a hook that exited without reading) is no failure.
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&input).await;
        let _ = stdin.shutdown().await;
    });
    let out = tokio::spawn(read_bounded(stdout));
    let err = tokio::spawn(read_bounded(stderr));
    let mut ran = Ran::default();
    tokio::select! {
        status = child.wait() => match status {
            Ok(s) => {
                ran.code = s.code();
                if ran.code.is_none() {
                    ran.failure = Some(format!("the hook was killed by a signal ({s})"));
                }
            }
            Err(e) => ran.failure = Some(format!("waiting for the hook: {e}")),
        },
        _ = tokio::time::sleep(timeout) => {
            ran.failure = Some(format!("the hook timed out after {} ms", timeout.as_millis()));
        }
        _ = cancel.cancelled() => {
            ran.failure = Some("cancelled".into());
            ran.cancelled = true;
        }
    }
    drop(group);
    let _ = child.wait().await;
    writer.abort();
    let (stdout, cut) = tokio::time::timeout(DRAIN, out)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let (stderr, _) = tokio::time::timeout(DRAIN, err)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    ran.stdout = stdout;
    ran.stdout_cut = cut;
    ran.stderr = stderr;
    ran
}

/// Read to the end, keeping the first [`MAX_HOOK_OUTPUT_BYTES`]; whether more came.
async fn read_bounded(mut r: impl AsyncRead + Unpin) -> (String, bool) {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut cut = false;
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_HOOK_OUTPUT_BYTES - kept.len();
                if n > room {
                    cut = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    (String::from_utf8_lossy(&kept).into_owned(), cut)
}
