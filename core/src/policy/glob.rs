//! The `glob` op and `tool` patterns: `*` and `?` within one path component, `**` across
//! separators, `[...]` classes and `{a,b}` alternatives (globset's syntax, which is the Go
//! runtime's plus classes), on paths cleaned first so `a/../.ssh/key` cannot slip past
//! `**/.ssh/**`.

use globset::{GlobBuilder, GlobMatcher};

/// A compiled path glob.
#[derive(Debug, Clone)]
pub struct PathGlob {
    matcher: GlobMatcher,
}

impl PathGlob {
    /// Compile `pattern`; the error says what is wrong with it.
    pub fn new(pattern: &str) -> Result<Self, String> {
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map_err(|e| format!("bad glob {pattern:?}: {}", e.kind()))?;
        Ok(PathGlob {
            matcher: glob.compile_matcher(),
        })
    }

    /// Whether the cleaned `path` matches.
    pub fn matches(&self, path: &str) -> bool {
        self.matcher.is_match(clean(path))
    }
}

/// A compiled tool-name glob (`*` = every tool; `mcp_*`; `{read,grep}`).
#[derive(Debug, Clone)]
pub struct NameGlob {
    matcher: GlobMatcher,
}

impl NameGlob {
    /// Compile `pattern`.
    pub fn new(pattern: &str) -> Result<Self, String> {
        let glob = GlobBuilder::new(pattern)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map_err(|e| format!("bad glob {pattern:?}: {}", e.kind()))?;
        Ok(NameGlob {
            matcher: glob.compile_matcher(),
        })
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        self.matcher.is_match(name)
    }
}

/// Lexical path cleaning, as Go's `path.Clean`: one `/` between components, no `.`, `x/..`
/// removed, `..` above the root dropped, no trailing `/`; `""` becomes `.`.
pub fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning() {
        for (given, want) in [
            ("a/b/../c", "a/c"),
            ("./a//b/", "a/b"),
            ("/../etc/passwd", "/etc/passwd"),
            ("../../x", "../../x"),
            ("a/../../x", "../x"),
            ("", "."),
            ("/", "/"),
            ("src/.ssh/../.ssh/id_rsa", "src/.ssh/id_rsa"),
        ] {
            assert_eq!(clean(given), want, "{given}");
        }
    }

    #[test]
    fn double_star_and_braces() {
        let g = PathGlob::new("**/{.ssh,.aws,.config/gcloud}/**").unwrap();
        for p in [
            ".ssh/id_rsa",
            "/home/u/.ssh/config",
            "a/b/.aws/credentials",
            "x/.config/gcloud/creds.json",
            "src/../.ssh/id_rsa",
            "./.ssh/../.ssh/known_hosts",
        ] {
            assert!(g.matches(p), "{p}");
        }
        for p in [".sshx/a", "src/main.rs", ".ssh", "a/.config/other/x"] {
            assert!(!g.matches(p), "{p}");
        }
        let one = PathGlob::new("src/*.rs").unwrap();
        assert!(one.matches("src/a.rs") && one.matches("./src/a.rs"));
        assert!(!one.matches("src/sub/a.rs"));
        let q = PathGlob::new("a?.txt").unwrap();
        assert!(q.matches("ab.txt") && !q.matches("a/.txt"));
        let alt = PathGlob::new("{**/.git/**,.git/**}").unwrap();
        assert!(alt.matches(".git/config") && alt.matches("x/.git/hooks/pre-commit"));
        let keys = PathGlob::new("**/{id_rsa,id_ed25519}*").unwrap();
        assert!(keys.matches("/root/.ssh/id_rsa.pub") && keys.matches("id_ed25519"));
        assert!(PathGlob::new("./docs/**").unwrap().matches("docs/a/b.md"));
    }

    #[test]
    fn bad_globs_are_refused() {
        for bad in ["{a,b", "a[", "a}"] {
            assert!(PathGlob::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names() {
        let g = NameGlob::new("{read,grep}").unwrap();
        assert!(g.matches("read") && g.matches("grep") && !g.matches("write"));
        assert!(NameGlob::new("fast__*").unwrap().matches("fast__add"));
        assert!(NameGlob::new("*").unwrap().matches("x"));
    }
}
