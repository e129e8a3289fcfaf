//! Which tools a task sees: its `execute_config.tools` (or `hooks`) allowlist and `hide_tools`,
//! on top of what the client and the caller allow. A task can only narrow.
//!
//! A pattern matches a tool by its name or by the name of the hook / MCP server it comes from,
//! so `"hooks": ["nws"]` shows every tool of the `nws` hook and `["read", "nws"]` adds the
//! `read` builtin. `!pattern` excludes the same way and wins. No allowlist = every tool the
//! client and the caller allow.

use crate::error::{Error, Result};
use crate::tool::Allowlist;

/// A task's narrowing, compiled once when the chain is read.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskTools {
    /// `None`: no allowlist given (no narrowing besides `hide`).
    allow: Option<Allowlist>,
    /// The `!pattern` exclusions of the allowlist.
    deny: Option<Allowlist>,
    /// `hide_tools`.
    hide: Option<Allowlist>,
}

impl TaskTools {
    /// Compile the allowlist (`None` = absent) and the hidden names.
    pub fn new(allow: Option<&[String]>, hide: Option<&[String]>) -> Result<TaskTools> {
        let mut tools = TaskTools::default();
        if let Some(patterns) = allow {
            let (neg, pos): (Vec<&String>, Vec<&String>) =
                patterns.iter().partition(|p| p.trim().starts_with('!'));
            tools.allow = Some(Allowlist::new(&pos)?);
            let neg: Vec<&str> = neg.iter().map(|p| &p.trim()[1..]).collect();
            if neg.iter().any(|p| p.trim().is_empty()) {
                return Err(Error::config("empty allowlist pattern \"!\"".into()));
            }
            if !neg.is_empty() {
                tools.deny = Some(Allowlist::new(&neg)?);
            }
        }
        if let Some(hidden) = hide.filter(|h| !h.is_empty()) {
            tools.hide = Some(Allowlist::new(hidden)?);
        }
        Ok(tools)
    }

    /// Whether the task sees the tool `name` of `server` (its hook or MCP server, if any).
    pub fn sees(&self, name: &str, server: Option<&str>) -> bool {
        let hit = |list: &Allowlist| list.allows(name) || server.is_some_and(|s| list.allows(s));
        if self.hide.as_ref().is_some_and(hit) || self.deny.as_ref().is_some_and(hit) {
            return false;
        }
        self.allow.as_ref().is_none_or(hit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_and_servers() {
        let t = TaskTools::new(Some(&strings(&["nws", "read"])), None).unwrap();
        assert!(t.sees("point", Some("nws")));
        assert!(t.sees("read", None));
        assert!(!t.sees("bash", None));
        assert!(!t.sees("summarize_text", Some("myapp")));

        let t = TaskTools::new(Some(&strings(&["*", "!nws", "!bash"])), None).unwrap();
        assert!(!t.sees("point", Some("nws")));
        assert!(!t.sees("bash", None));
        assert!(t.sees("read", None));

        let none = TaskTools::new(Some(&[]), None).unwrap();
        assert!(!none.sees("read", None));

        let all = TaskTools::new(None, Some(&strings(&["write"]))).unwrap();
        assert!(all.sees("read", None));
        assert!(!all.sees("write", None));
        assert!(TaskTools::new(None, None)
            .unwrap()
            .sees("anything", Some("any")));
        assert!(TaskTools::new(Some(&strings(&["!"])), None).is_err());
        assert!(TaskTools::new(Some(&strings(&["[x"])), None).is_err());
    }
}
