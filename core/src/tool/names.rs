//! Tool names from sources that name tools themselves (MCP servers, remote services), sanitised
//! to `^[A-Za-z0-9_-]{1,64}$`.
//!
//! MCP tools are named `<server>__<tool>`; remote (OpenAPI) tools by their operation ([`fit`]).
//! The rule, predictable from the config and the source's tool list alone:
//! 1. every character outside `A-Z a-z 0-9 _ -` becomes `_` (an empty server name becomes
//!    `server`, an empty tool name `tool`);
//! 2. a name longer than 64 characters keeps its first 55 and gets `_` plus the first 8 hex
//!    digits of the FNV-1a hash of the whole unsanitised `<server>__<tool>`;
//! 3. a name already given out (servers are named in sorted order of their config names, tools
//!    in the order the server lists them) gets `_2`, `_3`, ... (cutting the name so it still
//!    fits in 64).

use std::collections::HashSet;

/// The longest tool name any provider accepts.
pub const MAX_NAME: usize = 64;

/// Replace every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn fnv1a(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The name `<prefix>__<tool>` before collision handling (rules 1 and 2).
pub fn base_name(prefix: &str, tool: &str) -> String {
    let tool_part = if tool.is_empty() {
        "tool".to_string()
    } else {
        sanitize(tool)
    };
    let name = format!("{prefix}__{tool_part}");
    if name.len() <= MAX_NAME {
        return name;
    }
    format!(
        "{}_{:08x}",
        &name[..55],
        fnv1a(&format!("{prefix}__{tool}"))
    )
}

/// The sanitised server prefix (rule 1, and at most 30 characters so tool names keep room).
pub fn server_prefix(server: &str) -> String {
    if server.is_empty() {
        return "server".into();
    }
    let mut p = sanitize(server);
    if p.len() > 30 {
        p = format!("{}_{:08x}", &p[..21], fnv1a(server));
    }
    p
}

/// A name of its own (no prefix) made to fit: rules 1 and 2 (an empty name becomes `tool`).
pub fn fit(name: &str) -> String {
    let clean = if name.is_empty() {
        "tool".to_string()
    } else {
        sanitize(name)
    };
    if clean.len() <= MAX_NAME {
        return clean;
    }
    format!("{}_{:08x}", &clean[..55], fnv1a(name))
}

/// `base` if free, otherwise `base_2`, `base_3`, ... (rule 3). Marks the result as taken.
pub fn unique(base: &str, taken: &mut HashSet<String>) -> String {
    if taken.insert(base.to_string()) {
        return base.to_string();
    }
    for n in 2u32.. {
        let suffix = format!("_{n}");
        let keep = base.len().min(MAX_NAME - suffix.len());
        let candidate = format!("{}{}", &base[..keep], suffix);
        if taken.insert(candidate.clone()) {
            return candidate;
        }
    }
    unreachable!("u32 suffixes run out before names do")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::valid_tool_name;

    #[test]
    fn sanitised_and_within_limits() {
        assert_eq!(base_name("files", "read_file"), "files__read_file");
        assert_eq!(base_name("my_srv", "get.sum v2"), "my_srv__get_sum_v2");
        assert_eq!(server_prefix("my.server"), "my_server");
        assert_eq!(server_prefix(""), "server");
        let long = base_name("srv", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(valid_tool_name(&long));
        // Deterministic.
        assert_eq!(long, base_name("srv", &"x".repeat(100)));
        assert_ne!(long, base_name("srv", &"x".repeat(101)));
        let p = server_prefix(&"s".repeat(50));
        assert!(p.len() <= 30 && valid_tool_name(&p));
        assert!(valid_tool_name(&base_name(&server_prefix("ü"), "ß")));
    }

    #[test]
    fn own_names_fit() {
        assert_eq!(fit("get_user"), "get_user");
        assert_eq!(fit("users.{id}.get"), "users__id__get");
        assert_eq!(fit(""), "tool");
        let long = fit(&"ü".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(valid_tool_name(&long));
        assert_ne!(fit(&"a".repeat(70)), fit(&"a".repeat(71)));
    }

    #[test]
    fn collisions_get_numbered() {
        let mut taken = HashSet::new();
        assert_eq!(unique("a__b", &mut taken), "a__b");
        assert_eq!(unique("a__b", &mut taken), "a__b_2");
        assert_eq!(unique("a__b", &mut taken), "a__b_3");
        let long = "y".repeat(64);
        assert_eq!(unique(&long, &mut taken), long);
        let second = unique(&long, &mut taken);
        assert_eq!(second.len(), 64);
        assert!(second.ends_with("_2"));
    }
}
