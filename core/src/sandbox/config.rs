//! The sandbox's options (config `sandbox`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How bash and background shells are confined (config `sandbox`). Every layer is applied only
/// where the kernel offers it; [`crate::sandbox::status_for`] says which are in force.
///
/// ```
/// let config: contenox::Config = serde_json::from_value(serde_json::json!({
///     "sandbox": {"network": false, "writable": ["/var/cache/build"]}
/// })).unwrap();
/// assert!(config.sandbox.enabled);
/// assert!(!config.sandbox.network);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// Confine commands with Landlock and seccomp where the kernel offers them (default true).
    /// Turning it off is dangerous: a command may then write anywhere the host may, read the
    /// host's environment through `/proc`, trace the host, and leave processes running with
    /// `setsid`.
    pub enabled: bool,
    /// Whether commands may open network sockets (default true: package installs, `git fetch`
    /// and local test servers work). `false` refuses every socket but Unix and netlink ones,
    /// which also stops commands that talk to servers on 127.0.0.1.
    pub network: bool,
    /// More directories (absolute paths, existing when a command starts) that commands may write
    /// beneath, besides the root and the scratch directory `$TMPDIR`; for example a package
    /// manager's cache.
    pub writable: Vec<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            enabled: true,
            network: true,
            writable: Vec::new(),
        }
    }
}

impl SandboxConfig {
    /// What is wrong with these options, if anything: the index of a `writable` entry that is
    /// not an absolute path.
    pub(crate) fn problem(&self) -> Option<usize> {
        self.writable.iter().position(|p| !p.is_absolute())
    }
}
