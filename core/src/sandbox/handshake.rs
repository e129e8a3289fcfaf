//! The child waits, before it execs, until the watchdog watches its process group.
//!
//! Without this, a child runs from its exec until the parent registers its group; a host killed
//! in that window (a few microseconds idle, milliseconds on a loaded machine) leaves whatever
//! the child started in the meantime running. So the child writes its pid into one pipe and
//! blocks reading another; a registrar thread in the host reads the pid, registers the group and
//! answers. The spawning thread cannot answer: `spawn` returns only after the exec.

use std::os::fd::{AsRawFd, OwnedFd};

use nix::fcntl::OFlag;
use nix::unistd::pipe2;

use super::watchdog::{self, Watched};

/// The host's ends of the two pipes, and the child's ends (closed in the host once the child
/// has been forked).
pub(crate) struct Handshake {
    pid_read: OwnedFd,
    pid_write: OwnedFd,
    go_read: OwnedFd,
    go_write: OwnedFd,
}

impl Handshake {
    /// Make the pipes (close-on-exec: the child's ends vanish at its exec, and no other child
    /// keeps them).
    pub(crate) fn new() -> std::io::Result<Self> {
        let (pid_read, pid_write) = pipe2(OFlag::O_CLOEXEC)?;
        let (go_read, go_write) = pipe2(OFlag::O_CLOEXEC)?;
        Ok(Handshake {
            pid_read,
            pid_write,
            go_read,
            go_write,
        })
    }

    /// Add the child's side as the command's last `pre_exec` step (after `setsid`, so its pid
    /// is its group's id).
    pub(crate) fn install(&self, cmd: &mut tokio::process::Command) {
        let pid_write = self.pid_write.as_raw_fd();
        let go_read = self.go_read.as_raw_fd();
        // SAFETY: getpid, write and read are async-signal-safe; the fds stay open in the parent
        // until the spawn has returned.
        unsafe {
            cmd.pre_exec(move || {
                let pid = libc::getpid().to_ne_bytes();
                if libc::write(pid_write, pid.as_ptr().cast(), pid.len()) != pid.len() as isize {
                    return Err(std::io::Error::last_os_error());
                }
                let mut go = [0u8; 1];
                loop {
                    // 1: registered (or not watchable: the parent logged why); 0: the registrar
                    // is gone. Either way the exec goes on, as it did before the handshake.
                    let n = libc::read(go_read, go.as_mut_ptr().cast(), 1);
                    if n >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)
                    {
                        break;
                    }
                }
                Ok(())
            });
        }
    }

    /// Run `spawn` while a registrar thread answers the child: the child's group is watched
    /// before the child execs. Returns what `spawn` returned and the watch (`None` when the child
    /// never reached the handshake or the group could not be watched).
    pub(crate) fn run<T>(
        self,
        spawn: impl FnOnce() -> std::io::Result<T>,
    ) -> (std::io::Result<T>, Option<Watched>) {
        let Handshake {
            pid_read,
            pid_write,
            go_read,
            go_write,
        } = self;
        let registrar = std::thread::Builder::new()
            .name("contenox-watch".into())
            .spawn(move || register(pid_read, go_write));
        let spawned = spawn();
        // The host's copies of the child's ends: with them closed, a child that failed before
        // its write gives the registrar an end of file instead of a wait forever.
        drop(pid_write);
        drop(go_read);
        let watched = match registrar {
            Ok(thread) => thread.join().unwrap_or(None),
            Err(e) => {
                // No thread, no answer: the child reads an end of file (go_write was moved into
                // the closure that never ran and is dropped) and execs unwatched.
                tracing::debug!(target: "contenox::sandbox", "no registrar thread: {e}");
                None
            }
        };
        (spawned, watched)
    }
}

/// Read the child's pid, watch its group, let it go on.
fn register(pid_read: OwnedFd, go_write: OwnedFd) -> Option<Watched> {
    let mut file = std::fs::File::from(pid_read);
    let mut pid = [0u8; 4];
    let watched = match std::io::Read::read_exact(&mut file, &mut pid) {
        Ok(()) => {
            let pid = i32::from_ne_bytes(pid);
            match watchdog::watch(pid) {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::debug!(target: "contenox::sandbox", "process group {pid} is not watched: {e}");
                    None
                }
            }
        }
        Err(_) => None,
    };
    let mut go = std::fs::File::from(go_write);
    let _ = std::io::Write::write_all(&mut go, &[1]);
    watched
}
