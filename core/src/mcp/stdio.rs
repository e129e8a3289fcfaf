//! A stdio server's child process: its own process group (so `npx`-style launchers and whatever
//! they start stop together), an explicit environment, and the tail of its stderr. It is tied to
//! the host (`crate::sandbox`): a death signal, and the watchdog that kills its group when the
//! host dies.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::model::redact::Redactor;

/// Host variables a child server gets (when the host has them); everything else comes from the
/// server's `env`.
const INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR",
];

/// How many stderr lines are kept.
const TAIL_LINES: usize = 20;
/// How many bytes of a line are kept (the rest of it is read and dropped).
const TAIL_LINE_MAX: usize = 500;

/// The last lines a server wrote to stderr, each cut at [`TAIL_LINE_MAX`] bytes, and the start
/// of the line it is writing now. Nothing more of its stderr is kept, however long a line is.
#[derive(Default)]
pub(crate) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    /// The start of the line not ended yet (a server that hangs mid-line shows what it wrote).
    partial: Mutex<Option<String>>,
}

/// `bytes` as text, marked when the line went on past them.
fn line_text(bytes: &[u8], cut: bool) -> String {
    let mut line = String::from_utf8_lossy(bytes).into_owned();
    if cut {
        line.push('…');
    }
    line
}

impl StderrTail {
    fn push(&self, line: String) {
        *self.partial.lock() = None;
        let mut lines = self.lines.lock();
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    fn set_partial(&self, line: String) {
        *self.partial.lock() = Some(line);
    }

    /// The kept lines, joined; empty when the server wrote nothing.
    pub fn text(&self) -> String {
        let lines = self.lines.lock();
        let mut all: Vec<String> = lines.iter().cloned().collect();
        all.extend(self.partial.lock().clone());
        all.join("\n")
    }
}

/// Read a server's stderr to its end into `tail`, keeping at most [`TAIL_LINE_MAX`] bytes of
/// any line (a line without a newline is never buffered whole). Lines are redacted of the
/// server's secrets before they are logged or kept.
pub(crate) async fn read_stderr(
    mut stderr: impl AsyncRead + Unpin,
    tail: Arc<StderrTail>,
    secrets: Redactor,
) {
    let mut buf = [0u8; 8192];
    let mut line: Vec<u8> = Vec::with_capacity(TAIL_LINE_MAX);
    let mut cut = false;
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut changed = false;
        for piece in buf[..n].split_inclusive(|b| *b == b'\n') {
            let (text, ends) = match piece.strip_suffix(b"\n") {
                Some(t) => (t, true),
                None => (piece, false),
            };
            let room = TAIL_LINE_MAX - line.len();
            if text.len() > room {
                changed |= !cut || room > 0;
                cut = true;
            } else {
                changed |= !text.is_empty();
            }
            line.extend_from_slice(&text[..text.len().min(room)]);
            if ends {
                let text = secrets.redact(&line_text(&line, cut));
                tracing::debug!(target: "contenox::mcp", "{text}");
                tail.push(text);
                line.clear();
                cut = false;
                changed = false;
            }
        }
        if changed {
            tail.set_partial(secrets.redact(&line_text(&line, cut)));
        }
    }
    if !line.is_empty() {
        tail.push(secrets.redact(&line_text(&line, cut)));
    }
}

/// A running child server.
pub(crate) struct ChildProcess {
    child: Child,
    pgid: Option<i32>,
    /// The watchdog's watch on the group, given up after the group was killed (fields drop
    /// after `drop` ran).
    _watched: Option<crate::sandbox::Watched>,
    pub stderr: Arc<StderrTail>,
    reader: tokio::task::JoinHandle<()>,
}

impl ChildProcess {
    /// Start `command` with piped stdio in a new process group.
    pub fn spawn(
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        cwd: Option<&PathBuf>,
    ) -> std::io::Result<(ChildProcess, ChildStdout, ChildStdin)> {
        let mut cmd = Command::new(command);
        cmd.args(args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for key in INHERITED_ENV {
            if let Some(v) = std::env::var_os(key) {
                cmd.env(key, v);
            }
        }
        cmd.envs(env);
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        #[cfg(unix)]
        cmd.process_group(0);
        crate::sandbox::tie_to_host(&mut cmd);
        let (mut child, watched) = crate::sandbox::spawn(cmd)?;
        // Cannot fail: the command was spawned with stdin, stdout and stderr piped, taken once here.
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take().expect("piped stdin");
        let stderr = child.stderr.take().expect("piped stderr");
        let tail = Arc::new(StderrTail::default());
        let sink = tail.clone();
        let secrets = Redactor::new(env.values().cloned());
        let reader = tokio::spawn(read_stderr(stderr, sink, secrets));
        let pgid = child.id().map(|id| id as i32);
        Ok((
            ChildProcess {
                child,
                pgid,
                _watched: watched,
                stderr: tail,
                reader,
            },
            stdout,
            stdin,
        ))
    }

    /// The process id of the server (the group leader).
    pub fn id(&self) -> Option<u32> {
        self.pgid.map(|p| p as u32)
    }

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Stop the server: give it `grace` to exit on its own (its stdin should be closed by now),
    /// then SIGTERM its group, then SIGKILL. Whatever is left of the group is killed at the end.
    /// Returns once the server's stderr is read to its end (shortly).
    pub async fn shutdown(mut self, grace: Duration) {
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            self.signal_group(libc::SIGTERM);
            if tokio::time::timeout(grace, self.child.wait())
                .await
                .is_err()
            {
                self.signal_group(libc::SIGKILL);
                let _ = self.child.wait().await;
            }
        }
        // Children of the server that outlived it (for example what `npx` started).
        self.signal_group(libc::SIGKILL);
        self.pgid = None;
        let _ = tokio::time::timeout(Duration::from_millis(500), &mut self.reader).await;
    }

    /// SIGKILL the whole group now, without waiting (for drops outside any runtime).
    pub fn kill_now(&mut self) {
        self.signal_group(libc::SIGKILL);
        let _ = self.child.start_kill();
    }

    /// Wait for the (killed) process to exit and collect its status.
    pub async fn reap(mut self) {
        let _ = self.child.wait().await;
        self.pgid = None;
    }

    fn signal_group(&self, signal: i32) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            // SAFETY: killpg only sends a signal; a group that is gone gives ESRCH.
            unsafe {
                libc::killpg(pgid, signal);
            }
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if self.pgid.is_some() {
            self.signal_group(libc::SIGKILL);
        }
        self.reader.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_line_without_newline_is_kept_only_up_to_its_cap() {
        let (mut writer, reader) = tokio::io::duplex(64 * 1024);
        let tail = Arc::new(StderrTail::default());
        let task = tokio::spawn(read_stderr(reader, tail.clone(), Redactor::default()));
        writer.write_all(b"starting\n").await.unwrap();
        // 8 MiB of one line, and the server keeps its stderr open (it hangs mid-line).
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..128 {
            writer.write_all(&chunk).await.unwrap();
        }
        // What it wrote so far shows, cut, while it is still writing.
        let shown = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let text = tail.text();
                if text.ends_with('…') {
                    return text;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the partial line never showed");
        assert!(shown.starts_with("starting\nxxx"), "{shown:.40}");
        assert!(shown.len() <= "starting\n".len() + TAIL_LINE_MAX + '…'.len_utf8());
        writer.write_all(b"\nnext line\n").await.unwrap();
        drop(writer);
        task.await.unwrap();
        let text = tail.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text:.80}");
        assert_eq!(lines[1].len(), TAIL_LINE_MAX + '…'.len_utf8());
        assert_eq!(lines[2], "next line");
    }

    #[tokio::test]
    async fn only_the_last_lines_are_kept() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let tail = Arc::new(StderrTail::default());
        read_stderr(text.as_bytes(), tail.clone(), Redactor::default()).await;
        let kept = tail.text();
        assert_eq!(kept.lines().count(), TAIL_LINES);
        assert!(kept.ends_with("line 99"), "{kept}");
    }

    #[tokio::test]
    async fn secrets_are_redacted_before_they_are_kept() {
        let tail = Arc::new(StderrTail::default());
        let secrets = Redactor::new(["tok-ENV-SECRET".to_string()]);
        read_stderr(
            &b"using token tok-ENV-SECRET\nhalf tok-ENV-SECRET"[..],
            tail.clone(),
            secrets,
        )
        .await;
        assert_eq!(tail.text(), "using token [redacted]\nhalf [redacted]");
    }
}
