//! Reading a hooks file in the shape Claude Code, codex and goose share:
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
//!     {"type": "command", "command": "./guard.sh", "timeout": 30}]}]}}
//! ```
//!
//! A whole settings file (other keys beside `hooks` are someone else's and are left alone) or
//! the `hooks` object alone. Everything is checked when the client is made: an event contenox
//! does not fire, a hook type other than `command`, a matcher that is not a valid regex: each
//! refuses the file, naming where, since a guard that silently never runs is worse than none.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::error::ConfigError;

/// A hooks file larger than this is refused.
pub const MAX_HOOKS_FILE_BYTES: u64 = 1 << 20;
/// A command's timeout when its hook gives none (Claude Code's).
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest timeout a hook may give, in seconds.
pub const MAX_HOOK_TIMEOUT_S: u64 = 600;
/// Longest matcher accepted (bounded compile work for hostile files).
const MAX_MATCHER_CHARS: usize = 1024;

/// The events of the shape contenox fires, and where (see `docs/hooks.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookEvent {
    /// Before a call runs: `before_tool`'s point (may deny, ask).
    PreToolUse,
    /// After a call ran: `after_tool`'s point (may add text for the model).
    PostToolUse,
    /// After a call ran and failed: `on_tool_error`'s point.
    PostToolUseFailure,
    /// Before the first model request: `on_prompt`'s point (may refuse, add context).
    UserPromptSubmit,
    /// The model gave its final answer: `on_stop`'s point (may send it back to work).
    Stop,
    /// Before a compaction: `before_compact`'s point (may veto, give instructions).
    PreCompact,
    /// The client's first turn starts (`source` `startup`): may add context to its prompt.
    SessionStart,
    /// The client is closed (`reason` `other`). Observes only.
    SessionEnd,
    /// An ask raised, a budget near its ceiling: `on_notification`'s point. Observes only.
    Notification,
}

impl HookEvent {
    const ALL: [HookEvent; 9] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::PreCompact,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::Notification,
    ];

    /// Its name in the file (`PreToolUse`, ...), which is also `hook_event_name`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::Notification => "Notification",
        }
    }

    fn from_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// Events of the shape that contenox has no point for (refused by name, with why).
const NOT_FIRED: [(&str, &str); 5] = [
    (
        "SubagentStop",
        "a subagent is a client of its own: give it its own hooks (Stop)",
    ),
    (
        "PermissionRequest",
        "contenox has no permission dialog: use PreToolUse with permissionDecision \"ask\"",
    ),
    ("PermissionDenied", "contenox has no permission dialog"),
    ("PostToolBatch", "not fired by contenox"),
    ("StopFailure", "not fired by contenox"),
];

/// One command hook.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandHook {
    /// The shell command (run with `bash -c` in the client's root, in the bash sandbox).
    pub command: String,
    /// How long it may run before its process group is killed.
    pub timeout: Duration,
}

/// A matcher group's filter.
#[derive(Debug, Clone)]
enum Matcher {
    /// Absent, empty or `*`.
    All,
    /// Anchored: `Edit|Write` matches those two names exactly, `mcp__.*` every MCP tool.
    Pattern(regex::Regex),
}

impl Matcher {
    fn matches(&self, subjects: &[&str]) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Pattern(re) => subjects.iter().any(|s| re.is_match(s)),
        }
    }
}

#[derive(Debug, Clone)]
struct Group {
    matcher: Matcher,
    hooks: Vec<CommandHook>,
}

/// A hooks file, checked: per event, its matcher groups in file order.
#[derive(Debug, Clone, Default)]
pub struct HooksFile {
    events: BTreeMap<HookEvent, Vec<Group>>,
}

impl HooksFile {
    /// The `hooks_file` option's forms: a JSON object (a settings file with a `hooks` key, or the
    /// `hooks` object itself), its JSON text (a string starting with `{`), or a file path.
    pub fn from_source(source: &Value) -> Result<HooksFile, ConfigError> {
        match source {
            Value::Object(_) => HooksFile::from_value(source),
            Value::String(s) if s.trim_start().starts_with('{') => {
                let v: Value = serde_json::from_str(s).map_err(|e| {
                    ConfigError::new("hooks_file", format!("is not valid JSON: {e}"))
                })?;
                HooksFile::from_value(&v)
            }
            Value::String(s) => HooksFile::load(s),
            other => Err(ConfigError::new(
                "hooks",
                format!("must be an object, its JSON text or a file path, got {other}"),
            )),
        }
    }

    /// Read a hooks (or settings) file of at most [`MAX_HOOKS_FILE_BYTES`].
    pub fn load(path: impl AsRef<Path>) -> Result<HooksFile, ConfigError> {
        let path = path.as_ref();
        let at = |why: String| {
            ConfigError::new("hooks_file", why)
                .with_value(serde_json::Value::String(path.display().to_string()).to_string())
        };
        let meta = std::fs::metadata(path).map_err(|e| at(format!("cannot be read: {e}")))?;
        if !meta.is_file() {
            return Err(at("is not a regular file".into()));
        }
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_HOOKS_FILE_BYTES + 1).read_to_string(&mut text))
            .map_err(|e| at(format!("cannot be read: {e}")))?;
        if text.len() as u64 > MAX_HOOKS_FILE_BYTES {
            return Err(at(format!("is larger than {MAX_HOOKS_FILE_BYTES} bytes")));
        }
        let v: Value =
            serde_json::from_str(&text).map_err(|e| at(format!("is not valid JSON: {e}")))?;
        HooksFile::from_value(&v)
    }

    /// Read the shape from a parsed value.
    pub fn from_value(v: &Value) -> Result<HooksFile, ConfigError> {
        let obj = v
            .as_object()
            .ok_or_else(|| ConfigError::new("hooks_file", "must be an object"))?;
        // A settings file holds its hooks under `hooks`; the bare object is the events map.
        let (events, prefix) = match obj.get("hooks") {
            Some(Value::Object(inner)) => (inner, "hooks_file.hooks"),
            Some(_) => return Err(ConfigError::new("hooks_file.hooks", "must be an object")),
            None => (obj, "hooks_file"),
        };
        let mut file = HooksFile::default();
        for (name, groups) in events {
            let at = format!("{prefix}.{name}");
            let Some(event) = HookEvent::from_name(name) else {
                let why = NOT_FIRED
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, why)| format!("is an event contenox does not fire ({why})"))
                    .unwrap_or_else(|| {
                        format!(
                            "is not a hook event contenox knows (it fires {})",
                            HookEvent::ALL.map(HookEvent::name).join(", ")
                        )
                    });
                return Err(ConfigError::new(at, why));
            };
            let groups = groups
                .as_array()
                .ok_or_else(|| ConfigError::new(&at, "must be an array of matcher groups"))?;
            let mut read = Vec::with_capacity(groups.len());
            for (i, g) in groups.iter().enumerate() {
                read.push(read_group(g, &format!("{at}[{i}]"))?);
            }
            file.events.entry(event).or_default().extend(read);
        }
        Ok(file)
    }

    /// Whether the file has hooks for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.events
            .get(&event)
            .is_some_and(|g| g.iter().any(|g| !g.hooks.is_empty()))
    }

    /// Whether the file has no hook at all.
    pub fn is_empty(&self) -> bool {
        !HookEvent::ALL.into_iter().any(|e| self.has(e))
    }

    /// The hooks of `event` whose matcher matches one of `subjects` (a tool's names, a
    /// compaction's trigger, ...), each command once (as Claude Code dedupes identical ones).
    pub fn commands(&self, event: HookEvent, subjects: &[&str]) -> Vec<&CommandHook> {
        let mut out: Vec<&CommandHook> = Vec::new();
        for group in self.events.get(&event).into_iter().flatten() {
            if !group.matcher.matches(subjects) {
                continue;
            }
            for hook in &group.hooks {
                if !out.iter().any(|h| h.command == hook.command) {
                    out.push(hook);
                }
            }
        }
        out
    }
}

fn read_group(g: &Value, at: &str) -> Result<Group, ConfigError> {
    let obj = g.as_object().ok_or_else(|| {
        ConfigError::new(
            at,
            "must be an object {\"matcher\"?: str, \"hooks\": [...]}",
        )
    })?;
    let matcher = match obj.get("matcher") {
        None | Some(Value::Null) => Matcher::All,
        Some(Value::String(m)) if m.is_empty() || m == "*" => Matcher::All,
        Some(Value::String(m)) => {
            if m.chars().count() > MAX_MATCHER_CHARS {
                return Err(ConfigError::new(
                    format!("{at}.matcher"),
                    format!("is longer than {MAX_MATCHER_CHARS} characters"),
                ));
            }
            let re = regex::RegexBuilder::new(&format!("^(?:{m})$"))
                .size_limit(1 << 20)
                .build()
                .map_err(|e| {
                    ConfigError::new(
                        format!("{at}.matcher"),
                        format!("is not a valid regex: {e}"),
                    )
                })?;
            Matcher::Pattern(re)
        }
        Some(other) => {
            return Err(ConfigError::new(
                format!("{at}.matcher"),
                format!("must be a string, got {other}"),
            ))
        }
    };
    let hooks = obj
        .get("hooks")
        .and_then(Value::as_array)
        .ok_or_else(|| ConfigError::new(format!("{at}.hooks"), "must be an array of hooks"))?;
    let mut read = Vec::with_capacity(hooks.len());
    for (i, h) in hooks.iter().enumerate() {
        read.push(read_hook(h, &format!("{at}.hooks[{i}]"))?);
    }
    Ok(Group {
        matcher,
        hooks: read,
    })
}

fn read_hook(h: &Value, at: &str) -> Result<CommandHook, ConfigError> {
    let obj = h.as_object().ok_or_else(|| {
        ConfigError::new(
            at,
            "must be an object {\"type\": \"command\", \"command\": str}",
        )
    })?;
    match obj.get("type").and_then(Value::as_str) {
        Some("command") => {}
        Some(other) => {
            return Err(ConfigError::new(
                format!("{at}.type"),
                format!(
                    "is {other:?}: contenox runs only \"command\" hooks (a host hook in code \
                     does what http, prompt, agent and mcp_tool hooks do)"
                ),
            ))
        }
        None => {
            return Err(ConfigError::new(
                format!("{at}.type"),
                "must be \"command\"",
            ))
        }
    }
    let command = obj
        .get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| ConfigError::new(format!("{at}.command"), "must be a non-empty string"))?;
    let timeout = match obj.get("timeout") {
        None | Some(Value::Null) => DEFAULT_HOOK_TIMEOUT,
        Some(t) => match t.as_f64() {
            Some(s) if s > 0.0 && s <= MAX_HOOK_TIMEOUT_S as f64 => Duration::from_secs_f64(s),
            _ => {
                return Err(ConfigError::new(
                    format!("{at}.timeout"),
                    format!(
                    "must be a number of seconds above 0, at most {MAX_HOOK_TIMEOUT_S}; got {t}"
                ),
                ))
            }
        },
    };
    Ok(CommandHook {
        command: command.to_string(),
        timeout,
    })
}

/// The names a matcher is tried against for a tool: contenox's own name, and Claude Code's name
/// of the same tool (`Bash` for `bash`), so a file written for Claude Code matches as it is.
/// MCP tools are `mcp__<server>__<tool>` there: that name is tried too.
pub fn claude_tool_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "bash" => "Bash",
        "bash_output" => "BashOutput",
        "kill_shell" => "KillShell",
        "read" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "multi_edit" => "MultiEdit",
        "glob" => "Glob",
        "grep" => "Grep",
        "list" => "LS",
        "web_fetch" => "WebFetch",
        "websearch" => "WebSearch",
        "notebook_edit" => "NotebookEdit",
        "todo_write" => "TodoWrite",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_settings_file_and_the_bare_object_read_the_same() {
        let hooks = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x", "timeout": 5}]}]});
        for v in [json!({"hooks": hooks.clone(), "permissions": {}}), hooks] {
            let f = HooksFile::from_value(&v).unwrap();
            let found = f.commands(HookEvent::PreToolUse, &["bash", "Bash"]);
            assert_eq!(found.len(), 1);
            assert_eq!(found[0].timeout, Duration::from_secs(5));
            assert!(f
                .commands(HookEvent::PreToolUse, &["read", "Read"])
                .is_empty());
        }
    }

    #[test]
    fn matchers_are_anchored_regexes_and_star_matches_all() {
        let f = HooksFile::from_value(&json!({"PostToolUse": [
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "a"}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "b"}]},
            {"hooks": [{"type": "command", "command": "a"}]}
        ]}))
        .unwrap();
        let names = |s: &[&str]| {
            f.commands(HookEvent::PostToolUse, s)
                .iter()
                .map(|h| h.command.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&["edit", "Edit"]), ["a", "b"]);
        assert_eq!(names(&["MultiEdit"]), ["b", "a"]);
    }

    #[test]
    fn what_contenox_cannot_honour_is_refused_by_name() {
        let cases = [
            (json!({"SubagentStop": []}), "hooks_file.SubagentStop"),
            (json!({"Bogus": []}), "hooks_file.Bogus"),
            (
                json!({"Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}),
                "hooks_file.Stop[0].hooks[0].type",
            ),
            (
                json!({"Stop": [{"hooks": [{"type": "command"}]}]}),
                "hooks_file.Stop[0].hooks[0].command",
            ),
            (
                json!({"PreToolUse": [{"matcher": "(", "hooks": []}]}),
                "hooks_file.PreToolUse[0].matcher",
            ),
            (
                json!({"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}),
                "hooks_file.Stop[0].hooks[0].timeout",
            ),
            (
                json!({"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 601}]}]}),
                "hooks_file.Stop[0].hooks[0].timeout",
            ),
            (json!({"hooks": []}), "hooks_file.hooks"),
        ];
        for (v, at) in cases {
            let e = HooksFile::from_value(&v).unwrap_err();
            assert_eq!(e.option, at, "{v}: {e}");
        }
        let e = HooksFile::from_source(&json!("/nonexistent/hooks.json")).unwrap_err();
        assert!(e.to_string().contains("cannot be read"), "{e}");
    }
}
