//! The policy's place in the gate: it decides first; `deny` ends there, `approve` becomes an ask,
//! `allow` hands the call to the host's `before_tool`, which may only narrow.

use std::panic::AssertUnwindSafe;
use std::path::Path;

use serde_json::{json, Value};

use super::diff::change_diff;
use super::document::{Action, Policy};
use super::evaluate::{PolicyCall, RuleRef, Verdict};
use crate::gate::{Decision, PendingRequest, ToolCallEvent};

/// How a policy denial ends: the words the model is trained to act on.
pub const POLICY_DENIAL_TAIL: &str =
    "please ask for clarification or try a different, less destructive approach.";
/// How much of the arguments an approval prompt shows (the request carries them whole).
const PROMPT_ARGUMENTS_BYTES: usize = 2_000;

/// The policy's say on one call.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicyGate {
    /// No policy is set: the host's gate alone decides.
    Absent,
    /// The policy allows; the host's `before_tool` may still narrow.
    Allow {
        /// The rule that allowed (`rules[3]`, `default_action`).
        rule: String,
    },
    /// The policy denies (or could not evaluate): the host is not asked.
    Deny {
        /// The rule that denied.
        rule: String,
        /// The error result the model sees.
        message: String,
    },
    /// The policy asks the host's `wait_for`.
    Approve {
        /// The rule that asks.
        rule: String,
        /// The ask: kind `approval`, a prompt naming the tool, its arguments and the diff.
        request: PendingRequest,
    },
}

impl PolicyGate {
    /// The policy's rule, for the gate event.
    pub fn rule(&self) -> Option<String> {
        match self {
            PolicyGate::Absent => None,
            PolicyGate::Allow { rule }
            | PolicyGate::Deny { rule, .. }
            | PolicyGate::Approve { rule, .. } => Some(rule.clone()),
        }
    }

    /// The denial, when the policy denies: the host's `before_tool` is then not called.
    pub fn denial(&self) -> Option<Decision> {
        match self {
            PolicyGate::Deny { message, .. } => Some(Decision::Deny(Some(message.clone()))),
            _ => None,
        }
    }

    /// Combine with the host's decision; the host can narrow, never widen. A host ask on top
    /// of a policy ask is one ask: the host's kind, prompt and data where it set them, the
    /// policy's otherwise, and the shorter deadline.
    pub fn narrow(&self, host: Result<Decision, String>) -> Result<Decision, String> {
        match self {
            PolicyGate::Absent | PolicyGate::Allow { .. } => host,
            PolicyGate::Deny { message, .. } => Ok(Decision::Deny(Some(message.clone()))),
            PolicyGate::Approve { request, .. } => match host? {
                Decision::Allow => Ok(Decision::Ask(request.clone())),
                Decision::Deny(m) => Ok(Decision::Deny(m)),
                Decision::Ask(mut asked) => {
                    if asked.kind.is_empty() {
                        asked.kind = request.kind.clone();
                    }
                    asked.prompt = asked.prompt.or_else(|| request.prompt.clone());
                    asked.data = asked.data.or_else(|| request.data.clone());
                    asked.timeout_ms = match (asked.timeout_ms, request.timeout_ms) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    Ok(Decision::Ask(asked))
                }
            },
        }
    }
}

/// What `policy` says about `call`. An evaluation that fails, or panics, denies.
pub fn judge(policy: Option<&Policy>, call: &ToolCallEvent, root: &Path) -> PolicyGate {
    let Some(policy) = policy else {
        return PolicyGate::Absent;
    };
    let subject = PolicyCall {
        name: &call.name,
        arguments: &call.arguments,
        source: call.source,
        server: call.server.as_deref(),
        hints: call.hints,
        root: Some(root),
    };
    let evaluated = std::panic::catch_unwind(AssertUnwindSafe(|| policy.evaluate(&subject)));
    let verdict = match evaluated {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            return PolicyGate::Deny {
                rule: e.rule.to_string(),
                message: format!("{e}; the call was denied: {POLICY_DENIAL_TAIL}"),
            }
        }
        Err(_) => {
            return PolicyGate::Deny {
                rule: "evaluation".into(),
                message: format!(
                    "The approval policy failed while evaluating {}; the call was denied: {POLICY_DENIAL_TAIL}",
                    call.name
                ),
            }
        }
    };
    let rule = verdict.rule.to_string();
    match verdict.action {
        Action::Allow => PolicyGate::Allow { rule },
        Action::Deny => PolicyGate::Deny {
            message: denial_text(&call.name, &verdict),
            rule,
        },
        Action::Approve => PolicyGate::Approve {
            request: approval_request(call, &verdict, root),
            rule,
        },
    }
}

fn what(verdict: &Verdict) -> String {
    let by = match &verdict.rule {
        RuleRef::Default => "its default_action (no rule matched)".to_string(),
        r => format!("rule {r}"),
    };
    match &verdict.detail {
        Some(d) => format!("{by}: {d}"),
        None => by,
    }
}

/// `The approval policy denied write (rule rules[3]: path glob "**/.ssh/**"); please ask ...`
fn denial_text(tool: &str, verdict: &Verdict) -> String {
    format!(
        "The approval policy denied {tool} ({}); {POLICY_DENIAL_TAIL}",
        what(verdict)
    )
}

fn approval_request(call: &ToolCallEvent, verdict: &Verdict, root: &Path) -> PendingRequest {
    // A diff is a courtesy to the person asked: whatever goes wrong in it, the ask still stands.
    let diff = std::panic::catch_unwind(AssertUnwindSafe(|| {
        change_diff(&call.name, call.source, &call.arguments, root)
    }))
    .unwrap_or_else(|_| Some("(no diff: computing it failed)".to_string()));
    let args = crate::error::cut(&call.arguments.to_string(), PROMPT_ARGUMENTS_BYTES);
    let mut prompt = format!(
        "Approve {}? The approval policy asks ({}).\nArguments: {args}",
        call.name,
        what(verdict)
    );
    if let Some(d) = &diff {
        prompt.push_str("\nChange:\n");
        prompt.push_str(d);
    }
    let mut data = json!({
        "policy": {"rule": verdict.rule.to_string(), "detail": verdict.detail},
    });
    if let Some(d) = diff {
        data["diff"] = Value::String(d);
    }
    PendingRequest {
        kind: "approval".into(),
        prompt: Some(prompt),
        timeout_ms: verdict.timeout_s.map(|s| s.saturating_mul(1000)),
        data: Some(data),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Hints, Source};

    fn event(name: &str, args: Value) -> ToolCallEvent {
        ToolCallEvent {
            name: name.into(),
            arguments: args,
            call_id: "c1".into(),
            hints: Hints::default(),
            source: Source::Builtin,
            server: None,
            agent: Vec::new(),
        }
    }

    fn policy() -> Policy {
        Policy::from_value(&json!({"rules": [
            {"tool": "read", "action": "allow"},
            {"tool": "bash", "action": "deny", "when": [{"key": "command", "op": "command_blacklist", "value": "rm"}]},
            {"tool": "write", "action": "approve", "timeout_s": 5}
        ], "default_action": "deny"}))
        .unwrap()
    }

    #[test]
    fn deny_names_the_rule_and_ends_with_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let g = judge(
            Some(&policy()),
            &event("bash", json!({"command": "rm -rf /"})),
            dir.path(),
        );
        let PolicyGate::Deny { message, rule } = &g else {
            panic!("{g:?}")
        };
        assert_eq!(rule, "rules[1]");
        assert!(
            message.contains("rules[1]") && message.contains("it runs rm"),
            "{message}"
        );
        assert!(message.ends_with(POLICY_DENIAL_TAIL), "{message}");
        // The host cannot widen it.
        assert_eq!(
            g.narrow(Ok(Decision::Allow)),
            Ok(Decision::Deny(Some(message.clone())))
        );
        let d = judge(Some(&policy()), &event("other", json!({})), dir.path());
        let PolicyGate::Deny { message, .. } = d else {
            panic!()
        };
        assert!(message.contains("default_action"), "{message}");
        let e = judge(
            Some(&policy()),
            &event("bash", json!({"command": "echo 'x"})),
            dir.path(),
        );
        let PolicyGate::Deny { message, .. } = e else {
            panic!()
        };
        assert!(message.contains("could not evaluate rules[1]"), "{message}");
    }

    #[test]
    fn approve_asks_with_prompt_diff_and_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let g = judge(
            Some(&policy()),
            &event("write", json!({"path": "n.txt", "content": "hello\n"})),
            &root,
        );
        let PolicyGate::Approve { request, .. } = &g else {
            panic!("{g:?}")
        };
        assert_eq!(request.kind, "approval");
        assert_eq!(request.timeout_ms, Some(5000));
        let prompt = request.prompt.as_deref().unwrap();
        assert!(
            prompt.contains("Approve write?")
                && prompt.contains("n.txt")
                && prompt.contains("+hello"),
            "{prompt}"
        );
        assert!(request.data.as_ref().unwrap()["diff"]
            .as_str()
            .unwrap()
            .contains("+hello"));
        // The host narrows: deny stays deny, allow becomes the ask, an ask merges.
        assert_eq!(g.narrow(Ok(Decision::Deny(None))), Ok(Decision::Deny(None)));
        assert_eq!(
            g.narrow(Ok(Decision::Allow)),
            Ok(Decision::Ask(request.clone()))
        );
        let host = PendingRequest::new("approval", "host prompt").with_timeout_ms(100_000);
        let Ok(Decision::Ask(merged)) = g.narrow(Ok(Decision::Ask(host))) else {
            panic!()
        };
        assert_eq!(merged.prompt.as_deref(), Some("host prompt"));
        assert_eq!(merged.timeout_ms, Some(5000));
        assert!(merged.data.is_some());
        assert_eq!(g.narrow(Err("boom".into())), Err("boom".into()));
    }

    #[test]
    fn allow_hands_over_to_the_host() {
        let dir = tempfile::tempdir().unwrap();
        let g = judge(
            Some(&policy()),
            &event("read", json!({"path": "a"})),
            dir.path(),
        );
        assert_eq!(g.rule().as_deref(), Some("rules[0]"));
        assert_eq!(g.narrow(Ok(Decision::deny("no"))), Ok(Decision::deny("no")));
        assert_eq!(g.narrow(Ok(Decision::Allow)), Ok(Decision::Allow));
        assert_eq!(
            judge(None, &event("read", json!({})), dir.path()),
            PolicyGate::Absent
        );
    }
}
