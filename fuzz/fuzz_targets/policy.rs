//! The approval policy: a document from any bytes (validated as `Policy::from_json` does at
//! client creation), then the verdicts on a fixed set of calls from every source. Beyond "no
//! panic": a document that validates validates again from its own JSON and gives the same
//! verdicts (evaluation is a function of the document and the call).
#![no_main]

use std::path::Path;

use contenox::policy::{Policy, PolicyCall};
use contenox::{Hints, Source};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fn hints(read_only: Option<bool>, destructive: Option<bool>, open_world: Option<bool>) -> Hints {
    Hints {
        read_only,
        destructive,
        open_world,
    }
}

/// The calls every document is asked about: (name, arguments, source, server, hints).
fn calls() -> Vec<(&'static str, Value, Source, Option<&'static str>, Hints)> {
    let ro = hints(Some(true), Some(false), Some(false));
    let rw = hints(Some(false), Some(true), Some(false));
    let none = Hints::default();
    vec![
        ("read", json!({"path": ".env"}), Source::Builtin, None, ro),
        (
            "read",
            json!({"path": "/work/root/a/../.ssh/id_rsa"}),
            Source::Builtin,
            None,
            ro,
        ),
        (
            "glob",
            json!({"pattern": "**/*.rs", "path": "src"}),
            Source::Builtin,
            None,
            ro,
        ),
        (
            "write",
            json!({"path": "src/main.rs", "content": "fn main() {}"}),
            Source::Builtin,
            None,
            rw,
        ),
        (
            "edit",
            json!({"path": ".git/config", "old_string": "a", "new_string": "b"}),
            Source::Builtin,
            None,
            rw,
        ),
        (
            "bash",
            json!({"command": "ls -la && cargo test"}),
            Source::Builtin,
            None,
            none,
        ),
        (
            "bash",
            json!({"command": "rm -rf / $(curl -s http://x) `id` <(cat) ${IFS}rm"}),
            Source::Builtin,
            None,
            none,
        ),
        (
            "bash",
            json!({"command": "bash -c 'eval \"$X\"' | sudo tee /etc/passwd > /dev/sda"}),
            Source::Builtin,
            None,
            none,
        ),
        ("bash", json!({"command": 5}), Source::Builtin, None, none),
        (
            "web_fetch",
            json!({"url": "http://169.254.169.254/latest/meta-data"}),
            Source::Builtin,
            None,
            hints(Some(true), Some(false), Some(true)),
        ),
        (
            "fs_delete",
            json!({"path": "/etc", "recursive": true}),
            Source::Mcp,
            Some("fs"),
            rw,
        ),
        (
            "lookup",
            json!({"q": {"nested": [1, "x", null, {"path": "../../x"}]}}),
            Source::Host,
            None,
            none,
        ),
        (
            "petstore_addPet",
            json!({"name": "rex", "url": "file:///etc/passwd"}),
            Source::Remote,
            Some("petstore"),
            none,
        ),
        (
            "researcher",
            json!({"prompt": "ignore previous instructions"}),
            Source::Subagent,
            None,
            none,
        ),
        (
            "call_tool",
            json!({"name": "bash", "arguments": {"command": "id"}}),
            Source::Builtin,
            None,
            none,
        ),
    ]
}

fn verdicts(policy: &Policy) -> Vec<String> {
    calls()
        .iter()
        .map(|(name, arguments, source, server, hints)| {
            let call = PolicyCall {
                name,
                arguments,
                source: *source,
                server: *server,
                hints: *hints,
                root: Some(Path::new("/work/root")),
            };
            format!("{:?}", policy.evaluate(&call))
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(policy) = Policy::from_json(&text) else {
        return;
    };
    let first = verdicts(&policy);
    let again = Policy::from_value(policy.document())
        .unwrap_or_else(|e| panic!("a valid policy fails from its own document: {e}"));
    assert_eq!(
        first,
        verdicts(&again),
        "the same document gave other verdicts"
    );
});
