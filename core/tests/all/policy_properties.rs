//! Properties of the policy evaluator over random policies and calls: a deny rule added
//! anywhere never makes any call's verdict more permissive (so a denied call stays denied); a
//! deny rule matching the call put first always denies; rules after a catch-all change nothing;
//! the shell reader never panics, and nothing after a command can hide it.

use contenox::policy::{shell, Action, Policy, PolicyCall};
use contenox::{Hints, Source};
use proptest::prelude::*;
use serde_json::{json, Value};

const TOOLS: [&str; 4] = ["read", "write", "bash", "fast__add"];

fn strictness(a: Action) -> u8 {
    match a {
        Action::Allow => 0,
        Action::Approve => 1,
        Action::Deny => 2,
    }
}

fn action() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["allow", "approve", "deny"])
}

fn condition() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec!["a.txt", "x", "src/a.rs"])
            .prop_map(|v| json!({"key": "path", "op": "eq", "value": v})),
        prop::sample::select(vec!["**/*.rs", "src/**", "{a,b}.txt", "**/.ssh/**"])
            .prop_map(|v| json!({"key": "path", "op": "glob", "value": v})),
        prop::sample::select(vec!["ls,cat", "git status", "echo"])
            .prop_map(|v| json!({"key": "command", "op": "command_prefix_allowlist", "value": v})),
        prop::sample::select(vec!["rm", "mkfs,shred", "sudo"])
            .prop_map(|v| json!({"key": "command", "op": "command_blacklist", "value": v})),
        prop::sample::select(vec!["rm,>>", "cp"])
            .prop_map(|v| json!({"key": "command", "op": "command_ask_always", "value": v})),
        Just(json!({"key": "command", "op": "no_command_substitution"})),
        prop::sample::select(vec!["example.com", "10.0.0.1"])
            .prop_map(|v| json!({"key": "url", "op": "host", "value": v})),
    ]
}

fn rule() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop::sample::select(vec!["builtin", "host", "fast", "mcp"])),
        prop::option::of(prop::sample::select(vec![
            "read",
            "write",
            "bash",
            "*",
            "fast__*",
            "{read,write}",
        ])),
        prop::collection::vec(condition(), 0..3),
        action(),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(tools, tool, when, action, read_only)| {
            let mut r = json!({"action": action, "when": when});
            if let Some(t) = tools {
                r["tools"] = json!(t);
            }
            if let Some(t) = tool {
                r["tool"] = json!(t);
            }
            if let Some(ro) = read_only {
                r["hints"] = json!({"readOnly": ro});
            }
            r
        })
}

fn document() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(rule(), 0..6),
        prop::option::of(action()),
    )
        .prop_map(|(rules, default)| match default {
            Some(d) => json!({"rules": rules, "default_action": d}),
            None => json!({"rules": rules}),
        })
}

fn command() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "ls",
            "cat a",
            "rm -rf /",
            "git status",
            "echo $(rm x)",
            "`mkfs`",
            "sudo cp a b",
            "x > f",
            "y >> f",
            "'q'",
            "\"",
            "$X",
            "|",
            "&&",
            ";",
            "\n",
            "(",
            ")",
            "${IFS}",
        ]),
        1..5,
    )
    .prop_map(|parts| parts.join(" "))
}

fn call() -> impl Strategy<Value = (String, Value, bool)> {
    (
        prop::sample::select(TOOLS.to_vec()),
        prop::sample::select(vec!["a.txt", "src/a.rs", "b.txt", "/h/.ssh/id", "x"]),
        command(),
        prop::sample::select(vec![
            "https://example.com/a",
            "http://10.0.0.1/",
            "http://evil.net",
        ]),
        any::<bool>(),
    )
        .prop_map(|(name, path, cmd, url, ro)| {
            (
                name.to_string(),
                json!({"path": path, "command": cmd, "url": url}),
                ro,
            )
        })
}

/// The gate's reading of an evaluation: an error denies.
fn verdict(p: &Policy, name: &str, args: &Value, read_only: bool) -> Action {
    let (source, server) = if name.starts_with("fast__") {
        (Source::Mcp, Some("fast"))
    } else {
        (Source::Builtin, None)
    };
    let hints = if read_only {
        Hints::read_only()
    } else {
        Hints::default()
    };
    p.evaluate(&PolicyCall {
        name,
        arguments: args,
        source,
        server,
        hints,
        root: None,
    })
    .map_or(Action::Deny, |v| v.action)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn adding_a_deny_rule_never_widens(
        doc in document(),
        deny in rule(),
        at in 0usize..8,
        (name, args, ro) in call(),
    ) {
        let before = Policy::from_value(&doc).unwrap();
        let mut deny = deny;
        deny["action"] = json!("deny");
        let mut widened = doc.clone();
        let rules = widened["rules"].as_array_mut().unwrap();
        let at = at.min(rules.len());
        rules.insert(at, deny);
        let after = Policy::from_value(&widened).unwrap();
        let (b, a) = (verdict(&before, &name, &args, ro), verdict(&after, &name, &args, ro));
        prop_assert!(strictness(a) >= strictness(b), "{b:?} became {a:?}");
        if b == Action::Deny {
            prop_assert_eq!(a, Action::Deny);
        }
    }

    #[test]
    fn a_matching_deny_rule_first_always_denies(doc in document(), (name, args, ro) in call()) {
        let mut d = doc.clone();
        d["rules"].as_array_mut().unwrap().insert(0, json!({"tool": name, "action": "deny"}));
        let p = Policy::from_value(&d).unwrap();
        prop_assert_eq!(verdict(&p, &name, &args, ro), Action::Deny);
    }

    #[test]
    fn rules_after_a_catch_all_change_nothing(
        doc in document(),
        extra in prop::collection::vec(rule(), 1..4),
        last in action(),
        (name, args, ro) in call(),
    ) {
        let mut d = doc.clone();
        d["rules"].as_array_mut().unwrap().push(json!({"action": last}));
        let base = Policy::from_value(&d).unwrap();
        d["rules"].as_array_mut().unwrap().extend(extra);
        let more = Policy::from_value(&d).unwrap();
        prop_assert_eq!(verdict(&base, &name, &args, ro), verdict(&more, &name, &args, ro));
    }

    #[test]
    fn the_shell_reader_never_panics(line in "[ -~\\n\\t]{0,200}") {
        let _ = shell::read(&line);
    }

    #[test]
    fn what_follows_cannot_hide_a_command(line in command()) {
        // Whatever comes after `rm x;`, the reader either sees rm or refuses the line.
        if let Ok(r) = shell::read(&format!("rm x; {line}")) {
            prop_assert!(r.commands.iter().any(|c| c.name_known && c.basename() == "rm"));
            prop_assert!(!r.plain() || r.commands.iter().all(|c| c.literal));
        }
    }
}
