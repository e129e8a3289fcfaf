//! How a host language spells the engine's names: the one casing rule of the project. The
//! engine's own names are snake_case (`base_url`, `call_id`); JavaScript spells them in
//! camelCase (`baseUrl`, `callId`). Bindings use this to translate keys, and the engine uses it
//! to name options in configuration errors the way the host wrote them.

/// A host's spelling of option and field names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Spelling {
    /// snake_case, the engine's own (Rust, Python, Kotlin and Swift config JSON).
    #[default]
    Snake,
    /// camelCase (JavaScript / TypeScript).
    Camel,
}

impl Spelling {
    /// The engine's snake_case `name` as this host spells it: `base_url` -> `baseUrl`.
    pub fn name(self, name: &str) -> String {
        match self {
            Spelling::Snake => name.to_string(),
            Spelling::Camel => {
                let mut out = String::with_capacity(name.len());
                let mut upper = false;
                for c in name.chars() {
                    if c == '_' && !out.is_empty() {
                        upper = true;
                    } else if upper {
                        out.extend(c.to_uppercase());
                        upper = false;
                    } else {
                        out.push(c);
                    }
                }
                out
            }
        }
    }

    /// A name as this host spells it, in the engine's snake_case: `baseUrl` -> `base_url`.
    pub fn engine_name(self, name: &str) -> String {
        match self {
            Spelling::Snake => name.to_string(),
            Spelling::Camel => {
                let mut out = String::with_capacity(name.len() + 4);
                for c in name.chars() {
                    if c.is_ascii_uppercase() {
                        out.push('_');
                        out.push(c.to_ascii_lowercase());
                    } else {
                        out.push(c);
                    }
                }
                out
            }
        }
    }

    /// An option path (`script[0].tool_calls[1].retry_after_s`) with each key spelled the
    /// host's way; indexes stay.
    pub fn path(self, path: &str) -> String {
        if self == Spelling::Snake {
            return path.to_string();
        }
        let mut out = String::with_capacity(path.len());
        let mut key = String::new();
        for c in path.chars() {
            if c == '.' || c == '[' || c == ']' {
                out.push_str(&self.name(&key));
                key.clear();
                out.push(c);
            } else {
                key.push(c);
            }
        }
        out.push_str(&self.name(&key));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_both_ways() {
        let c = Spelling::Camel;
        assert_eq!(c.name("base_url"), "baseUrl");
        assert_eq!(c.name("retry_after_s"), "retryAfterS");
        assert_eq!(c.name("type"), "type");
        assert_eq!(c.engine_name("baseUrl"), "base_url");
        assert_eq!(c.engine_name("kind"), "kind");
        assert_eq!(
            c.engine_name(&c.name("max_retry_after_ms")),
            "max_retry_after_ms"
        );
        assert_eq!(Spelling::Snake.name("base_url"), "base_url");
        assert_eq!(
            c.path("script[0].tool_calls[12].retry_after_s"),
            "script[0].toolCalls[12].retryAfterS"
        );
        assert_eq!(c.path(""), "");
        assert_eq!(
            Spelling::Snake.path("retry.max_retries"),
            "retry.max_retries"
        );
    }
}
