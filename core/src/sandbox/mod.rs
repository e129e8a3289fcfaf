//! How the commands of bash and background shells are confined, and how every child the engine
//! starts is tied to its host.
//!
//! A command gets:
//! - only stdin, stdout and stderr: every other descriptor of the host is close-on-exec in the
//!   child ([`descriptors`]; Landlock and seccomp check at open, so an inherited descriptor
//!   would pass both). This holds for every child the engine starts, through [`spawn`];
//! - an allowlisted environment ([`env`]): `PATH`, `HOME`, the locale and a few more, `TMPDIR`
//!   set to the client's scratch directory ([`scratch`]), what the host adds by `shell_env`,
//!   never a name in `secret_env` or a model API key variable;
//! - a session of its own (`setsid`): one process group to kill, and no controlling terminal;
//! - `PR_SET_PDEATHSIG` (SIGKILL), set from a thread that lives as long as the host
//!   ([`spawner`]), and the [`watchdog`], which kills its whole group when the host dies;
//! - where the kernel offers them and config `sandbox.enabled` is on (the default):
//!   [`landlock`] (writes only beneath the root, the scratch directory and `sandbox.writable`;
//!   the host's `/proc` entries out of reach) and [`seccomp`] (no leaving the group, no ptrace,
//!   no namespaces, no set-ID bits, no sockets when `sandbox.network` is off); a host running
//!   as root also has its commands' [`capabilities`] cut to Docker's default set less
//!   CAP_MKNOD, CAP_SETFCAP and CAP_FSETID.
//!
//! [`status`] / [`status_for`] say which layers this kernel gives; bash's description says what
//! is in force to the model. MCP stdio servers get the death signal and the watchdog (they are
//! the host's, not the model's, so they are not confined). Everything after the fork is
//! async-signal-safe ([`child`]); rulesets and filters are built before it.

mod capabilities;
mod child;
mod config;
mod descriptors;
mod env;
mod handshake;
mod landlock;
mod scratch;
mod seccomp;
mod sigpipe;
mod spawner;
mod status;
mod watchdog;

pub use config::SandboxConfig;
pub use status::{status, status_for, Layer, SandboxStatus};

pub(crate) use sigpipe::ignore_sigpipe_if_default;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::ConfigError;
use crate::redact::redacted_assignment;
use child::ChildSetup;
use scratch::Scratch;
pub(crate) use watchdog::Watched;

/// What is wrong with the sandbox's part of a config (`shell_env`, `sandbox`), if anything.
pub(crate) fn config_problem(shell_env: &[String], sandbox: &SandboxConfig) -> Option<ConfigError> {
    let quoted = |s: String| serde_json::Value::String(s).to_string();
    if let Some((i, why)) = env::problem(shell_env) {
        // The value of a `NAME=value` entry may be a secret.
        let shown = redacted_assignment(&shell_env[i]);
        return Some(ConfigError::new(format!("shell_env[{i}]"), why).with_value(quoted(shown)));
    }
    sandbox.problem().map(|i| {
        ConfigError::new(format!("sandbox.writable[{i}]"), "is not an absolute path")
            .with_value(quoted(sandbox.writable[i].display().to_string()))
    })
}

/// The sandbox of one client's commands: its options, its scratch directory, and what the
/// kernel gives.
#[derive(Debug)]
pub(crate) struct Sandbox {
    config: SandboxConfig,
    shell_env: Vec<String>,
    scratch: Scratch,
    status: SandboxStatus,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::new(SandboxConfig::default(), Vec::new())
    }
}

impl Sandbox {
    /// A sandbox with these options (checked by the config check before).
    pub fn new(config: SandboxConfig, shell_env: Vec<String>) -> Self {
        let status = status_for(&config);
        static WARNED: AtomicBool = AtomicBool::new(false);
        let missing = |l: &Layer| matches!(l, Layer::Unavailable { .. });
        if (missing(&status.landlock) || missing(&status.seccomp))
            && !WARNED.swap(true, Ordering::Relaxed)
        {
            tracing::warn!(target: "contenox::sandbox", "commands run with a partial sandbox: {}", status.summary());
        }
        Sandbox {
            config,
            shell_env,
            scratch: Scratch::default(),
            status,
        }
    }

    /// Set `cmd` up to run confined in `root`: environment (less `secret_env`), session, death
    /// signal, Landlock, seccomp. A layer the status calls active that cannot be set up is an
    /// error: a command never runs less confined than the status says.
    pub fn prepare(
        &self,
        cmd: &mut tokio::process::Command,
        root: &Path,
        secret_env: &[String],
    ) -> std::io::Result<()> {
        let scratch = self.scratch.path()?;
        cmd.env_clear().envs(env::shell_env(
            std::env::vars_os(),
            &self.shell_env,
            secret_env,
            Some(scratch),
        ));
        let landlock = match (&self.status.landlock, self.status.landlock_abi) {
            (Layer::Active, Some(abi)) => Some(Arc::new(
                landlock::ruleset(
                    abi,
                    &[root, scratch],
                    &self.config.writable,
                    self.config.network,
                )
                .map_err(|e| std::io::Error::other(format!("the sandbox: {e}")))?,
            )),
            _ => None,
        };
        let seccomp = match &self.status.seccomp {
            Layer::Active => Some(
                seccomp::filter(self.config.network)
                    .map_err(|e| std::io::Error::other(format!("the sandbox: {e}")))?,
            ),
            _ => None,
        };
        ChildSetup {
            host_pid: std::process::id() as libc::pid_t,
            new_session: true,
            caps: if self.config.enabled {
                capabilities::cut()
            } else {
                None
            },
            landlock,
            seccomp,
        }
        .install(cmd);
        Ok(())
    }

    /// Whether commands can reach the network (false only when the sandbox cuts it and that cut
    /// is in force).
    pub fn has_network(&self) -> bool {
        self.status.network
    }

    /// What bash's description tells the model about the sandbox: only what is in force.
    pub fn description(&self) -> String {
        let mut text = String::new();
        if self.status.landlock.is_active() {
            text.push_str(
                " Commands run in a sandbox: they can read everything, but write only beneath \
                 the working directory and $TMPDIR (a scratch directory)",
            );
            for dir in &self.config.writable {
                text.push_str(&format!(", {}", dir.display()));
            }
            text.push('.');
        }
        if self.status.seccomp.is_active() {
            text.push_str(
                " A command cannot leave its process group (setsid and setpgid are refused: use \
                 `timeout --foreground`, or timeout_ms) or trace other processes.",
            );
        }
        if !self.status.network {
            text.push_str(" There is no network access.");
        }
        text
    }
}

/// Tie a child that is not sandboxed (an MCP stdio server) to its host: the death signal, from
/// the spawner thread.
pub(crate) fn tie_to_host(cmd: &mut tokio::process::Command) {
    ChildSetup {
        host_pid: std::process::id() as libc::pid_t,
        new_session: false,
        caps: None,
        landlock: None,
        seccomp: None,
    }
    .install(cmd);
}

/// Spawn a prepared `cmd` (its child leads a process group) from the spawner thread, with the
/// watchdog watching that group before the child execs ([`handshake`]). The watch is `None`
/// when this host has no watchdog (the status says why).
///
/// Every child the engine starts goes through here, so every child starts with only stdin,
/// stdout and stderr: the host's other descriptors are close-on-exec in it ([`descriptors`]).
pub(crate) fn spawn(
    mut cmd: tokio::process::Command,
) -> std::io::Result<(tokio::process::Child, Option<Watched>)> {
    // SAFETY: `keep_only_stdio` makes only system calls on the stack (async-signal-safe).
    unsafe {
        cmd.pre_exec(descriptors::keep_only_stdio);
    }
    let handshake = handshake::Handshake::new()?;
    handshake.install(&mut cmd);
    let (child, watched) = handshake.run(move || spawner::spawn(cmd));
    let child = child?;
    // The registrar read the pid the child wrote; a mismatch cannot happen, but a watch of
    // another group must never be kept.
    let watched = watched.filter(|w| child.id().is_some_and(|pid| w.pgid() == pid as i32));
    Ok((child, watched))
}
