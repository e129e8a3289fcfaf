//! Reading a command hook's answer as Claude Code does: exit code 0 (its stdout read as JSON
//! when it is a JSON object, else as plain text), 2 (block, the reason on stderr), anything else
//! or no exit at all (a non-blocking error: the point's fallback, which is to go on).

use serde_json::Value;

use super::command::Ran;
use super::file::HookEvent;

/// What one hook said.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Reply {
    /// Block what the point is about (exit 2; `decision: "block"`; `permissionDecision:
    /// "deny"`), with the reason for the model.
    pub block: Option<String>,
    /// `continue: false`, with its `stopReason`: stop what is going on (deny the call, refuse
    /// the prompt, veto the compaction; at `Stop`, let the turn end).
    pub halt: Option<String>,
    /// `permissionDecision: "ask"` with its reason (PreToolUse).
    pub ask: Option<String>,
    /// Text for the model: `additionalContext`, or a plain stdout on the points that take one
    /// (UserPromptSubmit, SessionStart).
    pub context: Option<String>,
    /// `updatedInput` was given (contenox cannot apply it to a call: see `docs/hooks.md`).
    pub updated_input: bool,
    /// The hook failed without blocking (exit 1, a timeout, no start, output not understood):
    /// logged, and the point goes on.
    pub error: Option<String>,
}

/// The first line-ish of a text, bounded, for messages.
fn short(text: &str) -> String {
    let t = text.trim();
    let mut s: String = t.chars().take(2000).collect();
    if s.len() < t.len() {
        s.push_str(" …");
    }
    s
}

/// Read `ran` as the answer of a hook of `event`.
pub(crate) fn read(event: HookEvent, command: &str, ran: &Ran) -> Reply {
    let mut reply = Reply::default();
    let code = match (&ran.failure, ran.code) {
        (Some(why), _) => {
            reply.error = Some(format!("hook `{}`: {why}", short(command)));
            return reply;
        }
        (None, Some(code)) => code,
        (None, None) => {
            reply.error = Some(format!("hook `{}`: no exit code", short(command)));
            return reply;
        }
    };
    if code == 2 {
        let why = short(&ran.stderr);
        reply.block = Some(if why.is_empty() {
            format!("blocked by hook `{}`", short(command))
        } else {
            why
        });
        return reply;
    }
    if code != 0 {
        reply.error = Some(format!(
            "hook `{}` exited {code}: {}",
            short(command),
            short(&ran.stderr)
        ));
        return reply;
    }
    let text = ran.stdout.trim();
    if text.is_empty() {
        return reply;
    }
    let parsed = if ran.stdout_cut {
        None
    } else {
        serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object)
    };
    let Some(v) = parsed else {
        if text.starts_with('{') {
            // Meant as JSON but not readable (cut, malformed): nothing of it is applied.
            reply.error = Some(format!(
                "hook `{}` printed output that is not a JSON object{}; ignored",
                short(command),
                if ran.stdout_cut { " (too long)" } else { "" }
            ));
        } else if matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart) {
            reply.context = Some(short(text));
        }
        return reply;
    };
    let specific = v.get("hookSpecificOutput").filter(|s| s.is_object());
    let s = |k: &str| {
        specific
            .and_then(|o| o.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let top = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let reason = top("reason")
        .or_else(|| s("permissionDecisionReason"))
        .unwrap_or_else(|| format!("blocked by hook `{}`", short(command)));
    match (
        s("permissionDecision").as_deref(),
        top("decision").as_deref(),
    ) {
        (Some("deny"), _) | (None, Some("block")) => reply.block = Some(reason.clone()),
        (Some("ask"), _) => {
            reply.ask = Some(s("permissionDecisionReason").unwrap_or_else(|| reason.clone()))
        }
        _ => {}
    }
    if v.get("continue") == Some(&Value::Bool(false)) {
        reply.halt = Some(top("stopReason").unwrap_or(reason));
    }
    reply.context = s("additionalContext").map(|c| short(&c));
    reply.updated_input = specific.is_some_and(|o| o.get("updatedInput").is_some());
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(code: i32, stdout: &str, stderr: &str) -> Ran {
        Ran {
            code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            ..Ran::default()
        }
    }

    #[test]
    fn exit_codes_and_json_answers_read_as_claude_code_reads_them() {
        let pre = HookEvent::PreToolUse;
        assert_eq!(
            read(pre, "g", &ran(2, "", "no rm -rf\n")).block.as_deref(),
            Some("no rm -rf")
        );
        let r = read(pre, "g", &ran(1, "", "oops"));
        assert!(r.block.is_none() && r.error.unwrap().contains("exited 1: oops"));
        let deny = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not here"}}"#;
        assert_eq!(
            read(pre, "g", &ran(0, deny, "")).block.as_deref(),
            Some("not here")
        );
        let ask = r#"{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "sure?"}}"#;
        assert_eq!(
            read(pre, "g", &ran(0, ask, "")).ask.as_deref(),
            Some("sure?")
        );
        let old = r#"{"decision": "block", "reason": "old style"}"#;
        assert_eq!(
            read(pre, "g", &ran(0, old, "")).block.as_deref(),
            Some("old style")
        );
        let allow = r#"{"hookSpecificOutput": {"permissionDecision": "allow"}}"#;
        assert_eq!(read(pre, "g", &ran(0, allow, "")), Reply::default());
        let stop = r#"{"continue": false, "stopReason": "enough"}"#;
        let r = read(HookEvent::Stop, "g", &ran(0, stop, ""));
        assert_eq!((r.halt.as_deref(), r.block), (Some("enough"), None));
        // JSON meant but broken: nothing applied, a non-blocking error.
        let r = read(pre, "g", &ran(0, "{\"decision\": \"blo", ""));
        assert!(r.block.is_none() && r.error.is_some());
        // Plain stdout is context only where Claude Code takes it as context.
        assert_eq!(
            read(
                HookEvent::UserPromptSubmit,
                "g",
                &ran(0, "it is Monday\n", "")
            )
            .context
            .as_deref(),
            Some("it is Monday")
        );
        assert_eq!(
            read(pre, "g", &ran(0, "it is Monday", "")),
            Reply::default()
        );
        let failed = Ran {
            failure: Some("the hook timed out after 10 ms".into()),
            ..Ran::default()
        };
        assert!(read(pre, "g", &failed).error.unwrap().contains("timed out"));
    }
}
