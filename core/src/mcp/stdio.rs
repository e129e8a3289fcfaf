//! A stdio server's child process: its own process group (so `npx`-style launchers and whatever
//! they start stop together), an explicit environment, and the tail of its stderr. It is tied to
//! the host (`crate::sandbox`): a death signal, and the watchdog that kills its group when the
//! host dies.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Host variables a child server gets (when the host has them); everything else comes from the
/// server's `env`.
const INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR",
];

/// How many stderr lines are kept.
const TAIL_LINES: usize = 20;
/// How long a line may be before it is cut.
const TAIL_LINE_MAX: usize = 500;

/// The last lines a server wrote to stderr.
#[derive(Default)]
pub(crate) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
}

impl StderrTail {
    fn push(&self, mut line: String) {
        if line.len() > TAIL_LINE_MAX {
            let mut end = TAIL_LINE_MAX;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line.truncate(end);
            line.push('…');
        }
        let mut lines = self.lines.lock().expect("stderr tail lock");
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The kept lines, joined; empty when the server wrote nothing.
    pub fn text(&self) -> String {
        let lines = self.lines.lock().expect("stderr tail lock");
        lines.iter().cloned().collect::<Vec<_>>().join("\n")
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
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take().expect("piped stdin");
        let stderr = child.stderr.take().expect("piped stderr");
        let tail = Arc::new(StderrTail::default());
        let sink = tail.clone();
        let reader = tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "contenox::mcp", "{line}");
                sink.push(line);
            }
        });
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
