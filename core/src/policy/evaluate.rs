//! Evaluating a policy for one call: the first matching rule wins, else the default action.

use std::fmt;
use std::path::Path;

use serde_json::Value;

use super::condition::{Op, Subject};
use super::document::{Action, Policy, Rule};
use crate::tool::{Hints, Source};

/// A call as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct PolicyCall<'a> {
    /// The tool's name (unwrapped from `call_tool`).
    pub name: &'a str,
    /// The arguments (a JSON object).
    pub arguments: &'a Value,
    /// Where the tool comes from.
    pub source: Source,
    /// The MCP server or remote hook it belongs to.
    pub server: Option<&'a str>,
    /// Its hints.
    pub hints: Hints,
    /// The client's root directory (absolute paths inside it also match as relative ones).
    pub root: Option<&'a Path>,
}

/// Which part of the policy decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleRef {
    /// `rules[index]`, with its optional name.
    Rule {
        /// 0-based, as in the document.
        index: usize,
        /// The rule's `name`, when it has one.
        name: Option<String>,
    },
    /// No rule matched: `default_action`.
    Default,
}

impl fmt::Display for RuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleRef::Rule {
                index,
                name: Some(n),
            } => write!(f, "rules[{index}] ({n:?})"),
            RuleRef::Rule { index, name: None } => write!(f, "rules[{index}]"),
            RuleRef::Default => f.write_str("default_action"),
        }
    }
}

/// The policy's verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// allow / approve / deny.
    pub action: Action,
    /// The rule (or the default) that decided.
    pub rule: RuleRef,
    /// For `approve`: seconds before the ask denies; `None` = no deadline of its own.
    pub timeout_s: Option<u64>,
    /// What the rule caught, when its conditions say more than the tool name (`it runs rm`).
    pub detail: Option<String>,
}

/// An evaluation that failed: the call is denied with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the approval policy could not evaluate {rule}: {message}")]
pub struct EvalError {
    /// The rule whose condition failed.
    pub rule: RuleRef,
    /// Why.
    pub message: String,
}

impl Policy {
    /// The verdict on `call`.
    pub fn evaluate(&self, call: &PolicyCall<'_>) -> Result<Verdict, EvalError> {
        let subject = Subject {
            arguments: call.arguments,
            root: call.root,
        };
        for (index, rule) in self.rules.iter().enumerate() {
            let at = || RuleRef::Rule {
                index,
                name: rule.name.clone(),
            };
            if !group_matches(rule, call) || !rule.tool_matches(call.name) {
                continue;
            }
            if rule.hints.is_some_and(|h| !h.matches(&call.hints)) {
                continue;
            }
            let mut detail = None;
            let mut all = true;
            for c in &rule.when {
                let (holds, d) = c.holds(&subject).map_err(|message| EvalError {
                    rule: at(),
                    message,
                })?;
                // `trusted_binaries` is not enforced here: an allow it would gate is not given.
                let held =
                    holds && !(self.trusted_binaries && c.op() == Op::CommandPrefixAllowlist);
                if !held {
                    all = false;
                    break;
                }
                if detail.is_none() {
                    detail = d.or_else(|| Some(c.describe()));
                }
            }
            if all {
                return Ok(Verdict {
                    action: rule.action,
                    rule: at(),
                    timeout_s: rule.timeout_s,
                    detail,
                });
            }
        }
        Ok(Verdict {
            action: self.default_action,
            rule: RuleRef::Default,
            timeout_s: None,
            detail: None,
        })
    }
}

/// `tools`: absent or `*` = any; else the tool's source kind (`builtin`, `host`, `mcp`,
/// `remote`, `subagent`) or its server's name.
fn group_matches(rule: &Rule, call: &PolicyCall<'_>) -> bool {
    match &rule.tools {
        None => true,
        Some(g) => g == call.source.as_str() || call.server == Some(g.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(doc: Value) -> Policy {
        Policy::from_value(&doc).unwrap()
    }

    fn call<'a>(name: &'a str, args: &'a Value) -> PolicyCall<'a> {
        PolicyCall {
            name,
            arguments: args,
            source: Source::Builtin,
            server: None,
            hints: Hints::default(),
            root: None,
        }
    }

    #[test]
    fn first_match_wins_and_default_applies() {
        let p = policy(json!({
            "default_action": "deny",
            "rules": [
                {"tool": "read", "when": [{"key": "path", "op": "glob", "value": "**/.env"}], "action": "approve", "timeout_s": 30},
                {"tool": "read", "action": "allow"},
                {"tool": "read", "action": "deny"}
            ]
        }));
        let env = json!({"path": "a/.env"});
        let v = p.evaluate(&call("read", &env)).unwrap();
        assert_eq!(v.action, Action::Approve);
        assert_eq!(
            v.rule,
            RuleRef::Rule {
                index: 0,
                name: None
            }
        );
        assert_eq!(v.timeout_s, Some(30));
        let other = json!({"path": "a.txt"});
        let v = p.evaluate(&call("read", &other)).unwrap();
        assert_eq!(
            (v.action, v.rule.to_string()),
            (Action::Allow, "rules[1]".into())
        );
        let v = p.evaluate(&call("write", &other)).unwrap();
        assert_eq!((v.action, v.rule), (Action::Deny, RuleRef::Default));
        // Absent default_action fails closed to approve.
        let v = policy(json!({})).evaluate(&call("write", &other)).unwrap();
        assert_eq!(v.action, Action::Approve);
    }

    #[test]
    fn groups_tool_globs_and_hints() {
        let p = policy(json!({
            "default_action": "allow",
            "rules": [
                {"tools": "fast", "tool": "*", "action": "deny", "name": "no fast"},
                {"tools": "mcp", "tool": "*__delete*", "action": "approve"},
                {"tools": "host", "hints": {"destructive": true}, "action": "approve"},
                {"tool": "{grep,glob}", "action": "deny"}
            ]
        }));
        let args = json!({});
        let mut c = call("fast__add", &args);
        c.source = Source::Mcp;
        c.server = Some("fast");
        let v = p.evaluate(&c).unwrap();
        assert_eq!(v.action, Action::Deny);
        assert_eq!(v.rule.to_string(), "rules[0] (\"no fast\")");
        c.server = Some("other");
        c.name = "other__delete_all";
        assert_eq!(p.evaluate(&c).unwrap().action, Action::Approve);
        let mut h = call("echo", &args);
        h.source = Source::Host;
        // Unknown hints count as destructive.
        assert_eq!(p.evaluate(&h).unwrap().action, Action::Approve);
        h.hints = Hints::read_only();
        assert_eq!(p.evaluate(&h).unwrap().action, Action::Allow);
        assert_eq!(
            p.evaluate(&call("grep", &args)).unwrap().action,
            Action::Deny
        );
        assert_eq!(
            p.evaluate(&call("read", &args)).unwrap().action,
            Action::Allow
        );
    }

    #[test]
    fn all_conditions_must_hold() {
        let p = policy(json!({
            "default_action": "allow",
            "rules": [{"tool": "write", "action": "deny", "when": [
                {"key": "path", "op": "glob", "value": "**/*.rs"},
                {"key": "mode", "op": "eq", "value": "force"}
            ]}]
        }));
        let both = json!({"path": "a.rs", "mode": "force"});
        let one = json!({"path": "a.rs"});
        assert_eq!(
            p.evaluate(&call("write", &both)).unwrap().action,
            Action::Deny
        );
        assert_eq!(
            p.evaluate(&call("write", &one)).unwrap().action,
            Action::Allow
        );
    }

    #[test]
    fn shell_tiers() {
        let p = policy(json!({
            "default_action": "deny",
            "rules": [
                {"tool": "bash", "action": "deny", "when": [{"key": "command", "op": "command_blacklist", "value": "mkfs,shred"}]},
                {"tool": "bash", "action": "approve", "when": [{"key": "command", "op": "no_command_substitution"}]},
                {"tool": "bash", "action": "allow", "when": [{"key": "command", "op": "command_prefix_allowlist", "value": "ls,cat,git status"}]},
                {"tool": "bash", "action": "approve", "when": [{"key": "command", "op": "command_ask_always", "value": "rm,sudo"}]},
                {"tool": "bash", "action": "approve"}
            ]
        }));
        let verdict = |cmd: &str| {
            let args = json!({"command": cmd});
            p.evaluate(&call("bash", &args))
                .map(|v| (v.action, v.rule.to_string()))
        };
        assert_eq!(
            verdict("ls -la").unwrap(),
            (Action::Allow, "rules[2]".into())
        );
        assert_eq!(
            verdict("ls $(rm -rf /)").unwrap(),
            (Action::Approve, "rules[1]".into())
        );
        assert_eq!(
            verdict("ls `mkfs x`").unwrap(),
            (Action::Deny, "rules[0]".into())
        );
        assert_eq!(
            verdict("ls;rm -rf /").unwrap(),
            (Action::Approve, "rules[3]".into())
        );
        assert_eq!(
            verdict("ls && curl x | sh").unwrap(),
            (Action::Approve, "rules[4]".into())
        );
        assert_eq!(verdict("l\\s").unwrap(), (Action::Allow, "rules[2]".into()));
        assert_eq!(verdict("sudo mkfs /dev/sda").unwrap().0, Action::Deny);
        assert_eq!(verdict("X=mkfs; $X /dev/sda").unwrap().0, Action::Deny);
        // `${IFS}` makes the name unknowable before it runs: the blacklist fails closed.
        assert_eq!(verdict("ls${IFS}-la").unwrap().0, Action::Deny);
        assert_eq!(verdict("ls\nrm x").unwrap().0, Action::Approve);
        let err = verdict("ls 'oops").unwrap_err();
        assert_eq!(err.rule.to_string(), "rules[0]");
        assert!(
            err.to_string().contains("could not evaluate rules[0]"),
            "{err}"
        );
        // A trusted_binaries block this engine does not enforce: no prefix allowlist admits.
        let mut doc = p.document().clone();
        doc["trusted_binaries"] = json!({"dirs": ["/usr/bin"]});
        let strict = Policy::from_value(&doc).unwrap();
        let args = json!({"command": "ls"});
        assert_eq!(
            strict.evaluate(&call("bash", &args)).unwrap().action,
            Action::Approve
        );
    }

    #[test]
    fn details_name_what_was_caught() {
        let p = policy(json!({"rules": [
            {"tool": "bash", "action": "deny", "when": [{"key": "command", "op": "command_blacklist", "value": "rm"}]}
        ]}));
        let args = json!({"command": "ls; rm -rf /"});
        let v = p.evaluate(&call("bash", &args)).unwrap();
        assert_eq!(v.detail.as_deref(), Some("it runs rm"));
    }
}
