//! What a child does between fork and exec. The host is multithreaded, so the child (a copy of
//! one thread) may only make async-signal-safe calls: every step here is one system call on data
//! prepared before the fork, with no allocation and no lock.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use super::capabilities::CapDrop;
use super::seccomp::Filter;

/// The steps, prepared in the parent.
#[derive(Clone)]
pub(crate) struct ChildSetup {
    /// The host's pid: a child whose parent is no longer the host after PR_SET_PDEATHSIG was set
    /// missed the host's death, and must not run.
    pub host_pid: libc::pid_t,
    /// Start a session of its own (`setsid`): a process group the engine can kill, and no
    /// controlling terminal, so a command cannot reach the user's terminal through `/dev/tty`.
    pub new_session: bool,
    /// Capabilities to drop (a host running as root).
    pub caps: Option<CapDrop>,
    /// A Landlock ruleset to enforce.
    pub landlock: Option<Arc<OwnedFd>>,
    /// A seccomp filter to install (after Landlock, whose system call it would not refuse
    /// anyway).
    pub seccomp: Option<&'static Filter>,
}

impl ChildSetup {
    /// Run the steps in the child. An error makes the spawn fail with that errno.
    pub(crate) fn apply(&self) -> std::io::Result<()> {
        // SAFETY: every call below is a plain system call on values prepared before the fork.
        unsafe {
            if self.new_session && libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) < 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != self.host_pid {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            if (self.landlock.is_some() || self.seccomp.is_some())
                && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) < 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        if let Some(caps) = &self.caps {
            caps.apply()?;
        }
        if let Some(ruleset) = &self.landlock {
            super::landlock::restrict_self(ruleset.as_raw_fd())?;
        }
        if let Some(filter) = self.seccomp {
            filter.install()?;
        }
        Ok(())
    }

    /// Install the steps as the command's `pre_exec`.
    pub(crate) fn install(self, cmd: &mut tokio::process::Command) {
        // SAFETY: `apply` is async-signal-safe (see above).
        unsafe {
            cmd.pre_exec(move || self.apply());
        }
    }
}
