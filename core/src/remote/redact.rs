//! Keeping a hook's secrets out of what the model, events, errors and logs see.

use std::borrow::Cow;

/// What a hidden value prints as.
pub(crate) const REDACTED: &str = "<redacted>";

/// A URL for messages: without userinfo, query and fragment (an API key often rides in the
/// query, and injected query parameters do). Text that is not a URL is cut at `?` and `#`.
pub fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
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
        Err(_) => {
            let end = url.find(['?', '#']).unwrap_or(url.len());
            let mut s = url[..end].to_string();
            if let Some(at) = s.find('@') {
                if let Some(scheme) = s.find("://") {
                    if at > scheme {
                        s.replace_range(scheme + 3..=at, "");
                    }
                }
            }
            s
        }
    }
}

/// Header values of a hook, as the words that are removed from every text the hook's tools
/// return (a service that echoes its `Authorization` header must not hand the token to the
/// model). Words under 8 characters (`Bearer`, short ids) are kept: they say nothing secret
/// and removing them would mangle ordinary text.
#[derive(Debug, Default, Clone)]
pub(crate) struct Secrets {
    words: Vec<String>,
}

/// Words shorter than this are not scrubbed.
const MIN_SECRET_LEN: usize = 8;

impl Secrets {
    pub fn new<'a>(values: impl IntoIterator<Item = &'a String>) -> Secrets {
        let mut words: Vec<String> = values
            .into_iter()
            .flat_map(|v| {
                std::iter::once(v.as_str())
                    .chain(v.split_whitespace())
                    .filter(|w| w.len() >= MIN_SECRET_LEN)
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        // Longest first, so a whole value goes before the words inside it.
        words.sort_by_key(|w| std::cmp::Reverse(w.len()));
        words.dedup();
        Secrets { words }
    }

    /// `text` with every secret word replaced by `<redacted>`.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.words.iter().any(|w| text.contains(w.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_string();
        for w in &self.words {
            if out.contains(w.as_str()) {
                out = out.replace(w.as_str(), REDACTED);
            }
        }
        Cow::Owned(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_userinfo_and_query() {
        assert_eq!(
            redact_url("https://u:p@x.example:8080/a/b?key=s#f"),
            "https://x.example:8080/a/b?…"
        );
        assert_eq!(redact_url("http://x/a"), "http://x/a");
        assert_eq!(redact_url("/tmp/spec.json?x"), "/tmp/spec.json");
        assert_eq!(redact_url("weird://u:p@h x?q"), "weird://h x");
    }

    #[test]
    fn secret_words_are_scrubbed() {
        let values = ["Bearer s3cret-token".to_string(), "short".to_string()];
        let s = Secrets::new(&values);
        assert_eq!(
            s.scrub("you sent Bearer s3cret-token"),
            "you sent <redacted>"
        );
        assert_eq!(s.scrub("token=s3cret-token;"), "token=<redacted>;");
        assert_eq!(s.scrub("short Bearer"), "short Bearer");
        assert!(matches!(s.scrub("nothing"), Cow::Borrowed(_)));
    }
}
