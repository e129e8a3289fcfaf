//! Secrets out of error texts and events: the API key, header values, injected values, and the
//! userinfo and query of configured endpoints (Azure-style deployments put `?api-key=...` in the
//! base URL). Every message built from a failure of the model or MCP clients passes through a
//! [`Redactor`] before it reaches a `retry` event, a `TurnResult.error`, a tool result or an
//! `Err`.

use reqwest::Url;

/// What a secret is replaced with.
pub(crate) const REDACTED: &str = "[redacted]";

/// Secrets shorter than this are not searched for: a one-letter header value would blank out
/// every occurrence of that letter.
const MIN_SECRET_LEN: usize = 4;

/// Replaces known secret values in text.
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    /// Longest first, so a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor for these secret values.
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
        out
    }
}

/// The secret parts of a URL: its userinfo and its query (whole, and each value), as written and
/// as a parser normalises them (reqwest prints the normalised form).
pub(crate) fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    // As written: everything between `://` and `@` of the authority, everything after `?`.
    if let Some((_, rest)) = url.split_once("://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            out.push(userinfo.to_string());
            out.extend(userinfo.split(':').map(str::to_string));
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        let query = query.split('#').next().unwrap_or("");
        out.push(query.to_string());
        for pair in query.split('&') {
            if let Some((_, v)) = pair.split_once('=') {
                out.push(v.to_string());
            }
        }
    }
    if let Ok(parsed) = Url::parse(url) {
        out.push(parsed.username().to_string());
        if let Some(p) = parsed.password() {
            out.push(p.to_string());
        }
        if let Some(q) = parsed.query() {
            out.push(q.to_string());
        }
        for (_, v) in parsed.query_pairs() {
            out.push(v.into_owned());
        }
        let raw_values: Vec<String> = parsed
            .query()
            .unwrap_or("")
            .split('&')
            .filter_map(|p| p.split_once('=').map(|(_, v)| v.to_string()))
            .collect();
        out.extend(raw_values);
    }
    // Percent-encoded parts also as they decode (a password `p%40ss` is `p@ss`).
    let decoded: Vec<String> = out.iter().filter_map(|s| percent_decoded(s)).collect();
    out.extend(decoded);
    out.retain(|s| !s.is_empty());
    out
}

/// `s` with `%XX` escapes (and `+` in queries) decoded, when that changes it and is UTF-8.
fn percent_decoded(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok().filter(|d| d != s)
}

/// A URL fit for a message: scheme, host, port and path, without userinfo, query or fragment
/// (`?…` marks a query that was left out).
pub(crate) fn display_url(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut u) => {
            let had_query = u.query().is_some();
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            let mut s = u.to_string();
            if had_query {
                s.push_str("?…");
            }
            s
        }
        // Not a URL reqwest could have used either; show no part of it that might be secret.
        Err(_) => {
            let cut = url.split(['?', '#']).next().unwrap_or("");
            match cut.split_once("://") {
                Some((scheme, rest)) => {
                    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
                    format!("{scheme}://{rest}")
                }
                None => cut.to_string(),
            }
        }
    }
}

/// The origin (`scheme://host:port`) of a URL, for naming where a redirect pointed; `None` when
/// it does not parse.
pub(crate) fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_and_query_values_are_secrets() {
        let url = "https://user:p%40ss@example.com:8443/openai/v1?api-version=2024-06-01&api-key=SEKRET123#frag";
        let secrets = url_secrets(url);
        for s in ["user:p%40ss", "p%40ss", "p@ss", "SEKRET123", "2024-06-01"] {
            assert!(secrets.iter().any(|x| x == s), "{s} in {secrets:?}");
        }
        let r = Redactor::new(secrets);
        let text = format!("error sending request for url ({url}): refused");
        let out = r.redact(&text);
        assert!(
            !out.contains("SEKRET123") && !out.contains("p%40ss"),
            "{out}"
        );
        assert!(out.contains("example.com:8443/openai/v1"), "{out}");
    }

    #[test]
    fn short_values_are_left_alone_and_longest_wins() {
        let r = Redactor::new([
            "ab".to_string(),
            "key".into(),
            "secret".into(),
            "secret-long".into(),
        ]);
        assert_eq!(
            r.redact("ab key secret-long secret"),
            "ab key [redacted] [redacted]"
        );
    }

    #[test]
    fn display_url_keeps_the_place_and_drops_the_secrets() {
        assert_eq!(
            display_url("https://u:p@host:1/mcp?token=abc#x"),
            "https://host:1/mcp?…"
        );
        assert_eq!(
            display_url("http://127.0.0.1:9/mcp"),
            "http://127.0.0.1:9/mcp"
        );
        assert_eq!(display_url("http://u:p@[bad/x?t=1"), "http://[bad/x");
        let u = Url::parse("https://evil.example:444/a/b?key=v").unwrap();
        assert_eq!(origin(&u), "https://evil.example:444");
    }
}
