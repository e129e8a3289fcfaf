//! Pieces for `Debug` impls that must not print secrets: config types show which keys, headers
//! and variables are set, never their values.
//!
//! A config type's `Debug` destructures the whole struct (no `..`), so a field added later does
//! not compile until its author has decided here whether it is secret.

use std::collections::BTreeMap;
use std::fmt;

/// What a redacted value prints as.
pub(crate) const REDACTED: &str = "<redacted>";

/// A value that is set but not shown.
#[derive(Clone, Copy)]
pub(crate) struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// `Some(<redacted>)` or `None`: whether a secret is set.
pub(crate) fn redacted_option<T>(value: &Option<T>) -> Option<Redacted> {
    value.as_ref().map(|_| Redacted)
}

/// A map whose keys print and whose values do not (headers, environment, injected values).
pub(crate) struct RedactedValues<'a, K, V>(pub &'a BTreeMap<K, V>);

impl<K: fmt::Debug, V> fmt::Debug for RedactedValues<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, Redacted)))
            .finish()
    }
}

/// A JSON object whose keys print and whose values do not.
pub(crate) struct RedactedObject<'a>(pub &'a serde_json::Map<String, serde_json::Value>);

impl fmt::Debug for RedactedObject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, Redacted)))
            .finish()
    }
}

/// A list that prints only how long it is (a command's arguments may hold a token or a
/// connection string).
pub(crate) struct RedactedList(pub usize);

impl fmt::Debug for RedactedList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(std::iter::repeat_n(Redacted, self.0))
            .finish()
    }
}

/// Shell environment entries (`NAME`, `PREFIX*`, `NAME=value`): names print, a set value does
/// not (`NAME=<redacted>`).
pub(crate) struct RedactedAssignments<'a>(pub &'a [String]);

/// A `NAME=value` entry as `NAME=<redacted>` (an entry without `=` names a variable and is
/// shown as it is).
pub(crate) fn redacted_assignment(entry: &str) -> String {
    match entry.split_once('=') {
        Some((name, _)) => format!("{name}={REDACTED}"),
        None => entry.to_string(),
    }
}

impl fmt::Debug for RedactedAssignments<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|entry| redacted_assignment(entry)))
            .finish()
    }
}

/// How much of a URL a `Debug` print shows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum UrlParts {
    /// Scheme, host, port and path; user info, query and fragment redacted (a model server's
    /// base URL, whose path names the API).
    KeepPath,
    /// Scheme, host and port only (an MCP endpoint, whose path is often the secret itself).
    OriginOnly,
}

/// A URL with its secret-bearing parts replaced by `<redacted>`.
pub(crate) struct RedactedUrl<'a>(pub &'a str, pub UrlParts);

impl fmt::Debug for RedactedUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", redact_url(self.0, self.1))
    }
}

/// `url` with user info, query and fragment (and with [`UrlParts::OriginOnly`], the path)
/// replaced by `<redacted>`; a text that is not a URL is redacted whole.
pub(crate) fn redact_url(url: &str, parts: UrlParts) -> String {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return REDACTED.to_string();
    };
    let mut out = format!("{}://", parsed.scheme());
    if !parsed.username().is_empty() || parsed.password().is_some() {
        out.push_str(REDACTED);
        out.push('@');
    }
    out.push_str(parsed.host_str().unwrap_or(""));
    if let Some(port) = parsed.port() {
        out.push_str(&format!(":{port}"));
    }
    match parts {
        UrlParts::KeepPath => out.push_str(parsed.path()),
        UrlParts::OriginOnly if !matches!(parsed.path(), "" | "/") => {
            out.push('/');
            out.push_str(REDACTED);
        }
        UrlParts::OriginOnly => {}
    }
    if parsed.query().is_some() {
        out.push('?');
        out.push_str(REDACTED);
    }
    if parsed.fragment().is_some() {
        out.push('#');
        out.push_str(REDACTED);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_secret_parts() {
        let keep = |u| redact_url(u, UrlParts::KeepPath);
        let origin = |u| redact_url(u, UrlParts::OriginOnly);
        assert_eq!(
            keep("https://api.example.com/v1"),
            "https://api.example.com/v1"
        );
        assert_eq!(
            keep("https://user:pw-SECRET@h.example:8443/v1?key=SECRET#frag"),
            "https://<redacted>@h.example:8443/v1?<redacted>#<redacted>"
        );
        assert_eq!(
            origin("https://actions.example.com/mcp/sk-SECRET/sse?x=1"),
            "https://actions.example.com/<redacted>?<redacted>"
        );
        assert_eq!(origin("http://127.0.0.1:9/"), "http://127.0.0.1:9");
        assert_eq!(keep("not a url SECRET"), "<redacted>");
    }
}
