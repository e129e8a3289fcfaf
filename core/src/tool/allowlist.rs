//! Allowlists: which tools a client (and a run) may offer.
//!
//! Grammar: `*` allows all, an exact name allows that tool, a glob (`mcp_*`, `re?d`) allows the
//! names it matches, and `!pattern` excludes (exclusions win over everything). An empty list
//! allows nothing. A run's allowlist is intersected with the client's, so a run can only narrow.

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::error::{Error, Result};

/// A compiled allowlist.
#[derive(Debug, Clone)]
pub struct Allowlist {
    allow: GlobSet,
    deny: GlobSet,
    /// A `*` among the allow patterns: every name is allowed without asking the glob set,
    /// which builds a path candidate (basename, extension) for each name it matches.
    allows_all: bool,
    patterns: Vec<String>,
}

impl Allowlist {
    /// Compile an allowlist from its patterns.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self> {
        let mut allow = GlobSetBuilder::new();
        let mut deny = GlobSetBuilder::new();
        let mut allows_all = false;
        for p in patterns {
            let p = p.as_ref().trim();
            let (set, pat) = match p.strip_prefix('!') {
                Some(rest) => (&mut deny, rest),
                None => (&mut allow, p),
            };
            if pat.is_empty() {
                return Err(Error::config(format!("empty allowlist pattern {p:?}")));
            }
            allows_all |= p == "*";
            let glob = Glob::new(pat)
                .map_err(|e| Error::config(format!("bad allowlist pattern {p:?}: {e}")))?;
            set.add(glob);
        }
        let build = |b: GlobSetBuilder| {
            b.build()
                .map_err(|e| Error::config(format!("bad allowlist: {e}")))
        };
        Ok(Allowlist {
            allow: build(allow)?,
            deny: build(deny)?,
            allows_all,
            patterns: patterns.iter().map(|p| p.as_ref().to_string()).collect(),
        })
    }

    /// The allowlist that allows everything (`["*"]`).
    pub fn all() -> Self {
        // Cannot fail: `*` is a valid pattern.
        Allowlist::new(&["*"]).expect("`*` is a valid pattern")
    }

    /// Whether `name` is allowed.
    pub fn allows(&self, name: &str) -> bool {
        // The common lists (`*`, `*` with no exclusion) answer without a glob match.
        (self.allows_all || self.allow.is_match(name))
            && (self.deny.is_empty() || !self.deny.is_match(name))
    }

    /// The patterns it was made from.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar() {
        let a = Allowlist::new(&["*", "!write"]).unwrap();
        assert!(a.allows("read"));
        assert!(!a.allows("write"));
        let a = Allowlist::new(&["read", "mcp__*", "!mcp__fs__delete"]).unwrap();
        assert!(a.allows("read"));
        assert!(!a.allows("edit"));
        assert!(a.allows("mcp__fs__list"));
        assert!(!a.allows("mcp__fs__delete"));
        // `*` allows every name a tool may have, empty included; an exclusion still wins.
        let all = Allowlist::all();
        for name in ["", "a", "mcp__fs__list", "x.y", "a/b", "*", "!"] {
            // What the glob set says too: the shortcut changes no answer.
            assert!(all.allows(name) && all.allow.is_match(name), "{name:?}");
        }
        let a = Allowlist::new(&[" * ", "!mcp__*"]).unwrap();
        assert!(a.allows("read"));
        assert!(!a.allows("mcp__fs__list"));
        let none = Allowlist::new::<&str>(&[]).unwrap();
        assert!(!none.allows("read"));
        assert!(Allowlist::new(&["!"]).is_err());
        assert!(Allowlist::new(&["[oops"]).is_err());
    }
}
