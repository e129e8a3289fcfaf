//! Running a shell command in its own session and process group, in the client's sandbox
//! (`crate::sandbox`), with its stdout and stderr combined in one pipe (so they interleave as a
//! terminal shows them), and a guard that kills the whole group when it is dropped: a cancelled
//! turn drops the tool's future, and with it every process the command started. The sandbox's
//! watchdog kills the group if the host dies first.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;

use parking_lot::Mutex;

use nix::fcntl::OFlag;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::{pipe2, Pid};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};

use crate::sandbox::{self, Sandbox, Watched};

/// Characters of output kept: the first half and the last half of this many.
pub const MAX_OUTPUT_CHARS: usize = 30_000;

/// Kills a process group when dropped.
pub(crate) struct GroupGuard {
    pgid: i32,
    /// The watchdog's watch on the group, given up after the group was killed (fields drop
    /// after `drop` ran).
    _watched: Option<Watched>,
}

impl GroupGuard {
    /// Send SIGKILL to every process of the group (gone already is fine).
    pub fn kill(&self) {
        kill_group(self.pgid);
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.pgid);
    }
}

/// SIGKILL to the process group `pgid`.
pub(crate) fn kill_group(pgid: i32) {
    if pgid > 1 {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// A started command.
pub(crate) struct Spawned {
    pub child: Child,
    pub pgid: i32,
    /// Reads the combined output until every process holding the pipe is gone.
    pub output: pipe::Receiver,
    pub guard: GroupGuard,
}

/// The shell commands run in: bash when there is one, else sh.
pub(crate) fn shell() -> &'static str {
    static SHELL: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    SHELL.get_or_init(|| {
        ["/bin/bash", "/usr/bin/bash"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .unwrap_or("/bin/sh")
    })
}

/// Start `command` with `sh -c` semantics (bash), in `dir`, in a session and process group of
/// its own, with stdin closed, in `sandbox` (its environment less the variables named in
/// `secret_env`).
pub(crate) fn spawn(
    command: &str,
    dir: &Path,
    sandbox: &Sandbox,
    secret_env: &[String],
) -> std::io::Result<Spawned> {
    let (read_end, write_end): (OwnedFd, OwnedFd) = pipe2(OFlag::O_CLOEXEC)?;
    let write_err = write_end.try_clone()?;
    let mut cmd = Command::new(shell());
    cmd.arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::from(write_err))
        .kill_on_drop(true);
    sandbox.prepare(&mut cmd, dir, secret_env)?;
    // `cmd` holds the parent's copies of the write end: spawning consumes it, so the pipe ends
    // with the child.
    let (child, watched) = sandbox::spawn(cmd)?;
    let pgid = child
        .id()
        .ok_or_else(|| std::io::Error::other("the shell exited before it could be tracked"))?
        as i32;
    let output = pipe::Receiver::from_owned_fd(read_end)?;
    Ok(Spawned {
        child,
        pgid,
        output,
        guard: GroupGuard {
            pgid,
            _watched: watched,
        },
    })
}

/// The output of a command: all of it while it is short, else the first and last
/// `MAX_OUTPUT_CHARS / 2` characters (kept as bytes, four per character at most, and cut to
/// characters at the end).
#[derive(Debug, Default)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total_bytes: u64,
    /// Bytes that do not continue a UTF-8 sequence: the characters, for valid UTF-8.
    total_chars: u64,
}

const HALF_BYTES: usize = MAX_OUTPUT_CHARS / 2 * 4;

impl Capture {
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total_bytes += bytes.len() as u64;
        self.total_chars += bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count() as u64;
        if self.head.len() < HALF_BYTES {
            let n = bytes.len().min(HALF_BYTES - self.head.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.len() >= HALF_BYTES {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - HALF_BYTES..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(HALF_BYTES);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    /// The text and, when it was cut, the metadata of the cut: the first and the last
    /// `MAX_OUTPUT_CHARS / 2` characters are the output's own bytes; `total` counts the
    /// characters of the whole output and `omitted` those left out between the two parts.
    pub fn finish(self) -> (String, Option<serde_json::Value>) {
        let whole = self.total_bytes == (self.head.len() + self.tail.len()) as u64;
        if whole {
            let mut all = self.head;
            all.extend(self.tail);
            let text = String::from_utf8_lossy(&all).into_owned();
            let chars = text.chars().count();
            if chars <= MAX_OUTPUT_CHARS {
                return (text, None);
            }
            let half = MAX_OUTPUT_CHARS / 2;
            let head_end = text.char_indices().nth(half).map_or(text.len(), |c| c.0);
            let tail_start = text
                .char_indices()
                .nth(chars - half)
                .map_or(text.len(), |c| c.0);
            let out = format!("{}{}", &text[..head_end], &text[tail_start..]);
            let meta = serde_json::json!({
                "truncated": true,
                "total": chars,
                "omitted": chars - 2 * half,
                "omittedAt": half,
            });
            return (out, Some(meta));
        }
        // Bytes were dropped between head and tail.
        let half = MAX_OUTPUT_CHARS / 2;
        let head = String::from_utf8_lossy(&self.head).into_owned();
        let head_end = head.char_indices().nth(half).map_or(head.len(), |c| c.0);
        let tail: Vec<u8> = self.tail.into_iter().collect();
        let start = tail
            .iter()
            .position(|b| (b & 0xC0) != 0x80)
            .unwrap_or(tail.len());
        let tail = String::from_utf8_lossy(&tail[start..]).into_owned();
        let tail_chars = tail.chars().count();
        let tail_start = tail
            .char_indices()
            .nth(tail_chars.saturating_sub(half))
            .map_or(tail.len(), |c| c.0);
        let out = format!("{}{}", &head[..head_end], &tail[tail_start..]);
        let kept = out.chars().count() as u64;
        let meta = serde_json::json!({
            "truncated": true,
            "total": self.total_chars,
            "omitted": self.total_chars.saturating_sub(kept),
            "omittedAt": half,
        });
        (out, Some(meta))
    }
}

/// Read `output` into `capture` until EOF.
pub(crate) async fn pump(mut output: pipe::Receiver, capture: Arc<Mutex<Capture>>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match output.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => capture.lock().push(&buf[..n]),
        }
    }
}

/// How a command ended, as metadata.
pub(crate) fn exit_metadata(status: &ExitStatus) -> serde_json::Value {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => serde_json::json!({"exitCode": code}),
        (None, Some(sig)) => serde_json::json!({"exitCode": null, "signal": sig}),
        _ => serde_json::json!({"exitCode": null}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_short_output_whole() {
        let mut c = Capture::default();
        c.push(b"hello ");
        c.push("wörld\n".as_bytes());
        assert_eq!(c.finish(), ("hello wörld\n".to_string(), None));
    }

    #[test]
    fn capture_cuts_the_middle() {
        let mut c = Capture::default();
        let text: String = (0..40_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        c.push(text.as_bytes());
        let (out, meta) = c.finish();
        let meta = meta.unwrap();
        assert_eq!(out.chars().count(), MAX_OUTPUT_CHARS);
        assert_eq!(&out[..15_000], &text[..15_000]);
        assert_eq!(&out[15_000..], &text[25_000..]);
        assert_eq!(meta["total"], 40_000);
        assert_eq!(meta["omitted"], 10_000);
        assert_eq!(meta["truncated"], true);
    }

    #[test]
    fn capture_of_huge_output_keeps_head_and_tail() {
        let mut c = Capture::default();
        c.push(b"START");
        for _ in 0..1000 {
            c.push(&[b'x'; 10_000]);
        }
        c.push("ende ü".as_bytes());
        let (out, meta) = c.finish();
        assert!(out.starts_with("START"));
        assert!(out.ends_with("ende ü"));
        assert_eq!(out.chars().count(), MAX_OUTPUT_CHARS);
        let meta = meta.unwrap();
        assert_eq!(meta["total"], 10_000_000 + 5 + 6);
        assert_eq!(meta["omitted"], 10_000_011 - MAX_OUTPUT_CHARS as u64);
    }
}
