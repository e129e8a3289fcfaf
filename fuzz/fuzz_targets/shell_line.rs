//! The shell-line analysis the policy's command conditions rest on (`policy::shell::read`),
//! through the shipped default and strict presets. Beyond "no panic", fail closed:
//! - a line that cannot be read is denied (the evaluation fails or a rule denies), never
//!   asked about or allowed;
//! - a line the preset allows was read as plain (literal simple commands only);
//! - a line with a blacklisted command anywhere, or a command whose name is only known when
//!   it runs, is denied.
#![no_main]

use std::sync::OnceLock;

use contenox::policy::{presets, shell, Action, Policy, PolicyCall};
use contenox::{Hints, Source};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

struct Presets {
    policies: Vec<(&'static str, Policy)>,
    /// The default preset's `command_blacklist` names.
    blacklist: Vec<String>,
}

fn presets() -> &'static Presets {
    static P: OnceLock<Presets> = OnceLock::new();
    P.get_or_init(|| {
        let doc: Value = serde_json::from_str(presets::DEFAULT_JSON).unwrap();
        let blacklist = doc["rules"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["when"].as_array().cloned().unwrap_or_default())
            .filter(|c| c["op"] == "command_blacklist")
            .flat_map(|c| {
                c["value"]
                    .as_str()
                    .unwrap()
                    .split(',')
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>();
        assert!(!blacklist.is_empty());
        Presets {
            policies: vec![
                ("default", presets::default()),
                ("strict", presets::strict()),
            ],
            blacklist,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let p = presets();
    let line = String::from_utf8_lossy(data);
    let reading = shell::read(&line);
    let args = json!({"command": line});
    for (name, policy) in &p.policies {
        let verdict = policy.evaluate(&PolicyCall {
            name: "bash",
            arguments: &args,
            source: Source::Builtin,
            server: None,
            hints: Hints::default(),
            root: None,
        });
        let action = verdict.as_ref().map(|v| v.action);
        match &reading {
            Err(e) => assert!(
                matches!(action, Err(_) | Ok(Action::Deny)),
                "{name}: unreadable line ({e}) got {verdict:?}: {line:?}"
            ),
            Ok(r) => {
                if action == Ok(Action::Allow) {
                    assert!(
                        r.plain(),
                        "{name}: allowed a line that is not plain: {line:?}"
                    );
                }
                let caught = r
                    .commands
                    .iter()
                    .any(|c| !c.name_known || p.blacklist.iter().any(|b| b == c.basename()));
                if caught {
                    assert_eq!(
                        action,
                        Ok(Action::Deny),
                        "{name}: blacklisted or unknown command not denied: {line:?} {r:?}"
                    );
                }
            }
        }
    }
});
