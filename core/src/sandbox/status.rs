//! What the sandbox gets from the kernel it runs on, said as it is.

use serde::{Deserialize, Serialize};

use super::config::SandboxConfig;

/// The state of one layer of the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Layer {
    /// In force for every command.
    Active,
    /// Wanted, but this kernel or process does not offer it; commands run without it.
    Unavailable {
        /// Why.
        reason: String,
    },
    /// Turned off by config (`sandbox.enabled: false`).
    Off,
}

impl Layer {
    /// Whether the layer is in force.
    pub fn is_active(&self) -> bool {
        matches!(self, Layer::Active)
    }

    fn from_result(result: Result<(), String>) -> Layer {
        match result {
            Ok(()) => Layer::Active,
            Err(reason) => Layer::Unavailable { reason },
        }
    }
}

/// Which layers confine the commands of bash and background shells.
///
/// ```
/// let status = contenox::sandbox::status();
/// println!("{}", status.summary());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxStatus {
    /// Landlock: writes only beneath the root, the scratch directory and `sandbox.writable`;
    /// no access to the host's `/proc/<pid>/environ` or memory; from ABI 6, no signals to
    /// processes outside the sandbox.
    pub landlock: Layer,
    /// The kernel's Landlock ABI version, when it has Landlock.
    pub landlock_abi: Option<u32>,
    /// seccomp: `setsid`, `setpgid`, `ptrace` and the rest of `core/src/sandbox/seccomp.rs`
    /// refused (and, with the network off, sockets).
    pub seccomp: Layer,
    /// Whether commands can open network sockets: false only when config `network: false` and
    /// seccomp is there to refuse them.
    pub network: bool,
    /// The watchdog that kills every command's process group when the host dies.
    pub watchdog: Layer,
}

impl SandboxStatus {
    /// One line: `landlock abi 7, seccomp, network on, watchdog` or what is missing and why.
    pub fn summary(&self) -> String {
        let layer = |name: &str, l: &Layer| match l {
            Layer::Active => name.to_string(),
            Layer::Off => format!("{name} off"),
            Layer::Unavailable { reason } => format!("{name} unavailable ({reason})"),
        };
        let landlock = match (&self.landlock, self.landlock_abi) {
            (Layer::Active, Some(abi)) => format!("landlock abi {abi}"),
            (l, _) => layer("landlock", l),
        };
        format!(
            "{landlock}, {}, network {}, {}",
            layer("seccomp", &self.seccomp),
            if self.network { "on" } else { "off" },
            layer("watchdog", &self.watchdog)
        )
    }
}

/// The sandbox that commands get with the default config, on this kernel.
pub fn status() -> SandboxStatus {
    status_for(&SandboxConfig::default())
}

/// The sandbox that commands get with `config`, on this kernel.
pub fn status_for(config: &SandboxConfig) -> SandboxStatus {
    let landlock_abi = super::landlock::abi().ok();
    let (landlock, seccomp) = if config.enabled {
        (
            Layer::from_result(super::landlock::abi().map(|_| ())),
            Layer::from_result(super::seccomp::available()),
        )
    } else {
        (Layer::Off, Layer::Off)
    };
    SandboxStatus {
        network: config.network || !seccomp.is_active(),
        landlock,
        landlock_abi,
        seccomp,
        watchdog: Layer::from_result(super::watchdog::state()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_is_off_and_network_needs_seccomp() {
        let off = status_for(&SandboxConfig {
            enabled: false,
            network: false,
            ..Default::default()
        });
        assert_eq!(off.landlock, Layer::Off);
        assert_eq!(off.seccomp, Layer::Off);
        assert!(
            off.network,
            "nothing refuses sockets when the sandbox is off"
        );
        assert!(off.summary().contains("seccomp off"), "{}", off.summary());
    }

    #[test]
    fn summary_says_why() {
        let s = SandboxStatus {
            landlock: Layer::Unavailable {
                reason: "no Landlock".into(),
            },
            landlock_abi: None,
            seccomp: Layer::Active,
            network: false,
            watchdog: Layer::Active,
        };
        assert_eq!(
            s.summary(),
            "landlock unavailable (no Landlock), seccomp, network off, watchdog"
        );
        assert_eq!(
            serde_json::to_value(&s.landlock).unwrap(),
            serde_json::json!({"state": "unavailable", "reason": "no Landlock"})
        );
    }
}
