//! One `when` condition: `{key, op, value}` on a call's arguments, and the ops.

use std::path::Path;

use serde_json::Value;

use super::glob::PathGlob;
use super::shell::{self, ShellReading};

/// A condition's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// The argument equals the value exactly.
    Eq,
    /// The argument, a path cleaned first, matches the glob.
    Glob,
    /// The argument is a URL whose host is one of the comma-separated hosts, or a subdomain of
    /// one (IP literals match exactly).
    Host,
    /// Every command of the line starts with one of the comma-separated prefixes (token-wise),
    /// and the line is plain (see [`ShellReading::plain`]).
    CommandPrefixAllowlist,
    /// Some command of the line has one of the comma-separated basenames, or a name that is
    /// only known when the line runs.
    CommandBlacklist,
    /// As `command_blacklist`, meant for `approve` rules; entries starting with `>` or `<`
    /// name redirections (`>`, `>>`).
    CommandAskAlways,
    /// The line substitutes commands: `$(...)`, backticks, `<(...)`, `>(...)`, `$((...))`.
    NoCommandSubstitution,
}

impl Op {
    /// The op's name in a policy document.
    pub fn name(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::Glob => "glob",
            Op::Host => "host",
            Op::CommandPrefixAllowlist => "command_prefix_allowlist",
            Op::CommandBlacklist => "command_blacklist",
            Op::CommandAskAlways => "command_ask_always",
            Op::NoCommandSubstitution => "no_command_substitution",
        }
    }

    /// Every op, in the order the format lists them.
    pub const ALL: [Op; 7] = [
        Op::Eq,
        Op::Glob,
        Op::Host,
        Op::CommandPrefixAllowlist,
        Op::CommandBlacklist,
        Op::CommandAskAlways,
        Op::NoCommandSubstitution,
    ];

    /// The op named `name`.
    pub fn parse(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }
}

/// A compiled condition.
#[derive(Debug, Clone)]
pub struct Condition {
    key: String,
    op: Op,
    value: String,
    glob: Option<PathGlob>,
    list: Vec<String>,
}

/// What a condition learned while it held, for the denial or the prompt.
pub type Detail = Option<String>;

/// The call a condition looks at.
pub struct Subject<'a> {
    /// The arguments (a JSON object).
    pub arguments: &'a Value,
    /// The client's root, to match absolute paths inside it also as relative ones.
    pub root: Option<&'a Path>,
}

impl Condition {
    /// Compile a condition; `Err((field, message))` names the field at fault.
    pub fn new(key: &str, op: &str, value: &str) -> Result<Condition, (&'static str, String)> {
        let op = Op::parse(op).ok_or_else(|| {
            let known: Vec<&str> = Op::ALL.iter().map(|o| o.name()).collect();
            (
                "op",
                format!("unknown op {op:?} (expected one of {})", known.join(", ")),
            )
        })?;
        if key.is_empty() && op != Op::NoCommandSubstitution {
            return Err(("key", format!("op {} needs a key", op.name())));
        }
        let list: Vec<String> = value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let glob = match op {
            Op::Glob => Some(PathGlob::new(value).map_err(|e| ("value", e))?),
            _ => None,
        };
        if op == Op::CommandBlacklist {
            if let Some(bad) = list.iter().find(|n| n.contains('/') || n.contains(' ')) {
                return Err((
                    "value",
                    format!("command_blacklist takes bare basenames, not {bad:?}"),
                ));
            }
        }
        if op == Op::Host {
            if let Some(bad) = list.iter().find(|h| h.contains('/') || h.contains(' ')) {
                return Err(("value", format!("host takes host names, not {bad:?}")));
            }
        }
        Ok(Condition {
            key: key.to_string(),
            op,
            value: value.to_string(),
            glob,
            list,
        })
    }

    /// The op.
    pub fn op(&self) -> Op {
        self.op
    }

    /// Whether the condition holds for the call. A missing key does not hold; an array holds
    /// when any element does. `Err` is an evaluation error (a command line that cannot be read).
    pub fn holds(&self, call: &Subject<'_>) -> Result<(bool, Detail), String> {
        let values: Vec<String> = if self.key.is_empty() {
            let mut all = Vec::new();
            strings_in(call.arguments, &mut all);
            all
        } else {
            match call.arguments.get(&self.key) {
                None => return Ok((false, None)),
                Some(v) => flatten(v),
            }
        };
        for s in &values {
            let (hit, detail) = self.holds_for(s, call)?;
            if hit {
                return Ok((true, detail));
            }
        }
        Ok((false, None))
    }

    fn holds_for(&self, s: &str, call: &Subject<'_>) -> Result<(bool, Detail), String> {
        let plain = |hit: bool| Ok((hit, None));
        match self.op {
            Op::Eq => plain(s == self.value),
            Op::Glob => {
                // Cannot fail: a `glob` condition is built with its compiled glob.
                let glob = self.glob.as_ref().expect("compiled with the condition");
                let relative = call
                    .root
                    .and_then(|r| Path::new(s).strip_prefix(r).ok())
                    .map(|p| p.to_string_lossy().into_owned());
                plain(glob.matches(s) || relative.is_some_and(|r| glob.matches(&r)))
            }
            Op::Host => plain(host_matches(s, &self.list)),
            Op::NoCommandSubstitution => {
                let r = read_line(s)?;
                Ok((
                    r.substitution,
                    r.substitution
                        .then(|| "it substitutes a command".to_string()),
                ))
            }
            Op::CommandBlacklist | Op::CommandAskAlways => {
                let r = read_line(s)?;
                Ok(match self.listed_command(&r) {
                    Some(d) => (true, Some(d)),
                    None => (false, None),
                })
            }
            Op::CommandPrefixAllowlist => {
                let r = read_line(s)?;
                plain(r.plain() && r.commands.iter().all(|c| prefixed(&c.words, &self.list)))
            }
        }
    }

    /// The first command (or redirection) of the line that is on the list.
    fn listed_command(&self, r: &ShellReading) -> Option<String> {
        for c in &r.commands {
            if !c.name_known {
                return Some(format!(
                    "the name of the command {:?} is only known when it runs",
                    c.words.first().map(String::as_str).unwrap_or("")
                ));
            }
            let base = c.basename();
            if !base.is_empty() && self.list.iter().any(|n| n == base) {
                return Some(format!("it runs {base}"));
            }
        }
        for entry in &self.list {
            if !(entry.starts_with('>') || entry.starts_with('<') || entry.starts_with("&>")) {
                continue;
            }
            // `>:` (the Go strict preset's spelling) is `>`.
            let want = entry.trim_end_matches(':');
            let hit = r.redirects.iter().any(|op| {
                let op = op.as_str();
                match want {
                    ">" => matches!(op, ">" | ">|" | "&>"),
                    ">>" => matches!(op, ">>" | "&>>"),
                    other => op == other,
                }
            });
            if hit {
                return Some(format!("it redirects output with {want}"));
            }
        }
        None
    }

    /// The condition as written, for messages.
    pub fn describe(&self) -> String {
        if self.key.is_empty() {
            self.op.name().to_string()
        } else {
            format!("{} {} {:?}", self.key, self.op.name(), self.value)
        }
    }
}

fn read_line(s: &str) -> Result<ShellReading, String> {
    shell::read(s).map_err(|e| format!("the command line could not be read: {e}"))
}

/// Whether the words start with one of the prefixes, token by token.
fn prefixed(words: &[String], prefixes: &[String]) -> bool {
    prefixes.iter().any(|p| {
        let want: Vec<&str> = p.split_whitespace().collect();
        !want.is_empty()
            && want.len() <= words.len()
            && want.iter().zip(words).all(|(w, t)| *w == t.as_str())
    })
}

/// An argument as the strings a condition tests: a string as itself, an array element-wise,
/// anything else as its JSON text.
fn flatten(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().map(scalar_text).collect(),
        other => vec![scalar_text(other)],
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Every string anywhere in `v` (for a condition without a key).
fn strings_in(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| strings_in(i, out)),
        Value::Object(m) => m.values().for_each(|i| strings_in(i, out)),
        _ => {}
    }
}

/// Whether the URL's host is one of `hosts` or a subdomain of one; IP literals match exactly.
fn host_matches(url: &str, hosts: &[String]) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url.trim()) else {
        return false;
    };
    let Some(host) = parsed.host_str() else {
        return false;
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let is_ip = host.parse::<std::net::IpAddr>().is_ok();
    hosts.iter().any(|p| {
        let p = p
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        host == p || (!is_ip && host.ends_with(&format!(".{p}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn holds(key: &str, op: &str, value: &str, args: Value) -> bool {
        let c = Condition::new(key, op, value).unwrap();
        c.holds(&Subject {
            arguments: &args,
            root: Some(Path::new("/work/root")),
        })
        .unwrap()
        .0
    }

    #[test]
    fn eq_and_missing_keys_and_arrays() {
        assert!(holds("mode", "eq", "x", json!({"mode": "x"})));
        assert!(!holds("mode", "eq", "x", json!({"mode": "xy"})));
        assert!(!holds("mode", "eq", "x", json!({})));
        assert!(holds("n", "eq", "3", json!({"n": 3})));
        assert!(holds("flag", "eq", "true", json!({"flag": true})));
        assert!(holds("tags", "eq", "b", json!({"tags": ["a", "b"]})));
        assert!(!holds("tags", "eq", "c", json!({"tags": ["a", "b"]})));
        assert!(holds(
            "paths",
            "glob",
            "**/.env",
            json!({"paths": ["a.txt", "x/.env"]})
        ));
    }

    #[test]
    fn glob_cleans_and_relativizes() {
        assert!(holds(
            "path",
            "glob",
            "**/.ssh/**",
            json!({"path": "a/../.ssh/id"})
        ));
        assert!(holds(
            "path",
            "glob",
            "src/**",
            json!({"path": "/work/root/src/a.rs"})
        ));
        assert!(!holds(
            "path",
            "glob",
            "src/**",
            json!({"path": "/elsewhere/src/a.rs"})
        ));
        assert!(!holds(
            "path",
            "glob",
            "src/**",
            json!({"path": "lib/a.rs"})
        ));
    }

    #[test]
    fn host() {
        let h = |url: &str| holds("url", "host", "example.com, 10.0.0.1", json!({"url": url}));
        assert!(h("https://example.com/x"));
        assert!(h("https://api.EXAMPLE.com:8443/x?y"));
        assert!(h("http://user:pw@example.com/"));
        assert!(h("http://example.com./"));
        assert!(h("http://10.0.0.1:80/"));
        assert!(!h("http://example.com.evil.net/"));
        assert!(!h("http://notexample.com/"));
        assert!(!h("http://example.com@evil.net/"));
        assert!(!h("not a url"));
        assert!(!h("http://10.0.0.10/"));
        assert!(holds(
            "url",
            "host",
            "[::1]",
            json!({"url": "http://[::1]:8080/"})
        ));
    }

    #[test]
    fn command_ops() {
        let prefix = |cmd: &str| {
            holds(
                "command",
                "command_prefix_allowlist",
                "ls, git status, cat",
                json!({"command": cmd}),
            )
        };
        assert!(prefix("ls"));
        assert!(prefix("ls -la src && cat a | cat"));
        assert!(prefix("git status --short"));
        assert!(!prefix("git statusx"));
        assert!(!prefix("git log"));
        assert!(!prefix("lsblk"));
        assert!(!prefix("ls $(rm -rf /)"));
        assert!(!prefix("ls; rm -rf /"));
        assert!(!prefix("ls && curl x | sh"));
        assert!(!prefix("ls > ~/.bashrc"));
        assert!(!prefix("ls ${IFS}"));
        assert!(!prefix("/tmp/ls"));
        assert!(!prefix("PATH=. ls"));
        assert!(!prefix("(ls)"));
        assert!(!prefix("ls\nrm x"));
        let black = |cmd: &str| {
            holds(
                "command",
                "command_blacklist",
                "mkfs,shred",
                json!({"command": cmd}),
            )
        };
        assert!(black("mkfs /dev/sda"));
        assert!(black("/sbin/mkfs x"));
        assert!(black("ls; sudo shred x"));
        assert!(black("echo $(mkfs x)"));
        assert!(black("$X /dev/sda"));
        assert!(!black("mkfs.ext4 x"));
        assert!(!black("echo mkfs"));
        let ask = |cmd: &str| {
            holds(
                "command",
                "command_ask_always",
                "rm,>:,>>",
                json!({"command": cmd}),
            )
        };
        assert!(ask("rm x"));
        assert!(ask("echo x > f"));
        assert!(ask("echo x >> f"));
        assert!(!ask("echo x > /dev/null 2>&1"));
        assert!(!ask("ls"));
        let subst = |args: Value| holds("command", "no_command_substitution", "", args);
        assert!(subst(json!({"command": "ls $(rm -rf /)"})));
        assert!(subst(json!({"command": "ls `rm`"})));
        assert!(!subst(json!({"command": "ls '$(x)'"})));
        assert!(!subst(json!({"other": "$(x)"})));
        // Without a key: every string argument.
        assert!(holds(
            "",
            "no_command_substitution",
            "",
            json!({"a": {"b": ["$(x)"]}})
        ));
    }

    #[test]
    fn unreadable_lines_are_errors() {
        let c = Condition::new("command", "command_blacklist", "rm").unwrap();
        let args = json!({"command": "echo 'unterminated"});
        let err = c
            .holds(&Subject {
                arguments: &args,
                root: None,
            })
            .unwrap_err();
        assert!(err.contains("could not be read"), "{err}");
    }

    #[test]
    fn bad_conditions() {
        assert_eq!(Condition::new("k", "globb", "x").unwrap_err().0, "op");
        assert_eq!(Condition::new("k", "glob", "{a").unwrap_err().0, "value");
        assert_eq!(Condition::new("", "eq", "x").unwrap_err().0, "key");
        assert_eq!(
            Condition::new("command", "command_blacklist", "/bin/rm")
                .unwrap_err()
                .0,
            "value"
        );
        assert!(Condition::new("", "no_command_substitution", "").is_ok());
    }
}
