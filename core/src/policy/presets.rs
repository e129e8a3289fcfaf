//! The policies that ship with the engine, written for this project's builtin names (`read`,
//! `write`, `edit`, `multi_edit`, `notebook_edit`, `glob`, `grep`, `list`, `bash`, `web_fetch`,
//! `websearch`, `todo_write`, `bash_output`, `kill_shell`), with the Go runtime's secret
//! quarantine and its command tiers for bash.
//!
//! ```
//! let policy = contenox::policy::presets::default();
//! assert_eq!(policy.default_action(), contenox::policy::Action::Approve);
//! ```

use super::document::Policy;

/// The default preset's JSON text: secrets denied, reads allowed, writes and unknown shell
/// commands asked, everything else asked.
pub const DEFAULT_JSON: &str = include_str!("presets/default.json");
/// The strict preset's JSON text: as the default, but every shell line asks and anything not
/// named is denied.
pub const STRICT_JSON: &str = include_str!("presets/strict.json");
/// The dev preset's JSON text: secrets still denied and destructive shell lines asked; the
/// rest runs.
pub const DEV_JSON: &str = include_str!("presets/dev.json");

/// The names of the presets, for [`by_name`].
pub const NAMES: [&str; 3] = ["default", "strict", "dev"];

fn parse(text: &str) -> Policy {
    // Cannot fail: the presets are the crate's own files, each validated by the tests.
    Policy::from_json(text).expect("a shipped preset validates (checked by the tests)")
}

/// The default preset.
pub fn default() -> Policy {
    parse(DEFAULT_JSON)
}

/// The strict preset.
pub fn strict() -> Policy {
    parse(STRICT_JSON)
}

/// The dev preset.
pub fn dev() -> Policy {
    parse(DEV_JSON)
}

/// A preset by name (`default`, `strict`, `dev`).
pub fn by_name(name: &str) -> Option<Policy> {
    json_by_name(name).map(parse)
}

/// A preset's JSON text by name (`default`, `strict`, `dev`): what the bindings hand their hosts
/// as `policies.default()` and the like, so every language serves the engine's own documents.
pub fn json_by_name(name: &str) -> Option<&'static str> {
    match name {
        "default" => Some(DEFAULT_JSON),
        "strict" => Some(STRICT_JSON),
        "dev" => Some(DEV_JSON),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::document::Action;
    use super::super::evaluate::PolicyCall;
    use super::*;
    use crate::tool::{Hints, Source};
    use serde_json::{json, Value};

    fn verdict(p: &Policy, name: &str, args: Value) -> Action {
        p.evaluate(&PolicyCall {
            name,
            arguments: &args,
            source: Source::Builtin,
            server: None,
            hints: Hints::default(),
            root: None,
        })
        .unwrap()
        .action
    }

    #[test]
    fn presets_validate() {
        for n in NAMES {
            let p = by_name(n).unwrap();
            assert!(p.compute().max_tool_calls.is_some(), "{n}");
        }
        assert!(by_name("lax").is_none());
    }

    #[test]
    fn secrets_are_quarantined_everywhere() {
        for p in [default(), strict(), dev()] {
            for (tool, path) in [
                ("read", "/home/u/.ssh/id_ed25519"),
                ("read", ".aws/credentials"),
                ("grep", "home/.config/gcloud/a"),
                ("write", "a/../.ssh/authorized_keys"),
                ("read", ".bash_history"),
                ("read", "p/.mozilla/firefox/x/logins.json"),
            ] {
                let got = verdict(&p, tool, json!({"path": path}));
                assert_eq!(got, Action::Deny, "{tool} {path}");
            }
            assert_eq!(
                verdict(&p, "write", json!({"path": ".bashrc", "content": ""})),
                Action::Deny
            );
            assert_eq!(
                verdict(&p, "edit", json!({"path": ".git/config"})),
                Action::Deny
            );
        }
    }

    #[test]
    fn default_tiers() {
        let p = default();
        assert_eq!(
            verdict(&p, "read", json!({"path": "src/main.rs"})),
            Action::Allow
        );
        assert_eq!(
            verdict(&p, "read", json!({"path": "app/.env"})),
            Action::Approve
        );
        assert_eq!(
            verdict(&p, "write", json!({"path": "a.txt"})),
            Action::Approve
        );
        let bash = |cmd: &str| verdict(&p, "bash", json!({"command": cmd}));
        assert_eq!(bash("ls -la"), Action::Allow);
        assert_eq!(bash("cargo test -p x && git status"), Action::Approve);
        assert_eq!(bash("ls $(rm -rf /)"), Action::Approve);
        assert_eq!(bash("rm -rf build"), Action::Approve);
        assert_eq!(bash("sudo mkfs.ext4 /dev/sda1"), Action::Deny);
        assert_eq!(bash("curl x | sh"), Action::Approve);
        assert_eq!(
            verdict(&p, "web_fetch", json!({"url": "https://x"})),
            Action::Allow
        );
    }

    #[test]
    fn strict_and_dev() {
        let s = strict();
        assert_eq!(
            verdict(&s, "bash", json!({"command": "ls"})),
            Action::Approve
        );
        assert_eq!(verdict(&s, "some_host_tool", json!({})), Action::Deny);
        let d = dev();
        assert_eq!(
            verdict(&d, "bash", json!({"command": "git status"})),
            Action::Allow
        );
        assert_eq!(
            verdict(&d, "bash", json!({"command": "rm -rf x"})),
            Action::Approve
        );
        assert_eq!(
            verdict(&d, "write", json!({"path": "a.txt"})),
            Action::Allow
        );
    }
}
