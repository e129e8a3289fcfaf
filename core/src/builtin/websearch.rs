//! Opt-in `websearch`: web search through a provider the host implements (none ships). The
//! engine owns the tool: its schema, the domain filters, the result cap and the numbered
//! `title / URL / snippet` text the model reads.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{cut_chars, opt_u64, str_arg};
use crate::tool::{Hints, HostError, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Results returned when the call does not say.
pub const DEFAULT_RESULTS: u64 = 10;
/// Results returned at most.
pub const MAX_RESULTS: u64 = 20;
/// A snippet is cut to this many characters.
const MAX_SNIPPET_CHARS: usize = 1000;

/// What the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchRequest {
    /// The query.
    pub query: String,
    /// How many results the tool will show (a provider may return more; the rest are dropped).
    pub max_results: u64,
    /// Only results from these domains (and their subdomains); empty = any.
    pub allowed_domains: Vec<String>,
    /// No results from these domains (and their subdomains).
    pub blocked_domains: Vec<String>,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResult {
    /// The page title.
    pub title: String,
    /// The page URL.
    pub url: String,
    /// A short extract of the page (missing or null: empty).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub snippet: String,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

impl SearchResult {
    /// A provider's answer given as JSON (by a binding: `[{title, url, snippet?}]`), with the
    /// same message in every language when it has another shape.
    pub fn list_from_json(value: Value) -> Result<Vec<SearchResult>, String> {
        let Value::Array(items) = value else {
            let kind = match value {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                Value::Object(_) => "an object",
                Value::Array(_) => unreachable!(),
            };
            return Err(format!(
                "websearch must return a list of {{title, url, snippet}} results, not {kind}"
            ));
        };
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                serde_json::from_value(item).map_err(|e| format!("websearch result {i}: {e}"))
            })
            .collect()
    }
}

/// A web search backend the host supplies (a search API, an internal index...). The engine
/// filters its results by the requested domains again and caps them, so a provider may ignore
/// the filters it cannot apply.
#[async_trait]
pub trait WebSearchProvider: Send + Sync + 'static {
    /// Search; `cancel` fires when the turn is cancelled.
    async fn search(
        &self,
        request: SearchRequest,
        cancel: CancellationToken,
    ) -> Result<Vec<SearchResult>, HostError>;
}

pub(crate) struct WebSearch {
    provider: Arc<dyn WebSearchProvider>,
}

impl WebSearch {
    pub fn new(provider: Arc<dyn WebSearchProvider>) -> Self {
        WebSearch { provider }
    }
}

fn domains(args: &Value, key: &str) -> Result<Vec<String>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(|s| s.trim().trim_start_matches("*.").to_ascii_lowercase())
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| format!("`{key}` must be a list of domain names").into())
            })
            .collect(),
        Some(_) => Err(format!("`{key}` must be a list of domain names").into()),
    }
}

/// The host of a URL, lower-cased.
fn host_of(url: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()?
        .host_str()
        .map(|h| h.to_ascii_lowercase())
}

fn in_domain(host: &str, domain: &str) -> bool {
    host == domain
        || host
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// Filter, cap and number the results.
pub(crate) fn render(request: &SearchRequest, results: Vec<SearchResult>) -> ToolOutput {
    let kept: Vec<SearchResult> = results
        .into_iter()
        .filter(|r| {
            let Some(host) = host_of(&r.url) else {
                return false;
            };
            (request.allowed_domains.is_empty()
                || request.allowed_domains.iter().any(|d| in_domain(&host, d)))
                && !request.blocked_domains.iter().any(|d| in_domain(&host, d))
        })
        .collect();
    let total = kept.len();
    if total == 0 {
        return ToolOutput::text(format!("No results for {:?}.", request.query));
    }
    let mut text = String::new();
    let shown = usize::try_from(request.max_results).unwrap_or(usize::MAX);
    for (i, r) in kept.iter().take(shown).enumerate() {
        if i > 0 {
            text.push('\n');
        }
        let title = r.title.trim();
        text.push_str(&format!(
            "{}. {}\n   {}\n",
            i + 1,
            if title.is_empty() {
                "(untitled)"
            } else {
                title
            },
            r.url.trim()
        ));
        let snippet = r.snippet.split_whitespace().collect::<Vec<_>>().join(" ");
        if !snippet.is_empty() {
            let (s, _) = cut_chars(&snippet, MAX_SNIPPET_CHARS);
            text.push_str(&format!("   {s}\n"));
        }
    }
    let mut out = ToolOutput::text(text);
    if total > shown {
        out = out.with_metadata(json!({"truncated": true, "total": total}));
    }
    out
}

#[async_trait]
impl Tool for WebSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "websearch",
            "Search the web. Returns numbered results, each with a title, its URL and a \
             snippet; fetch a page with `web_fetch` to read it. Use it for facts newer than \
             your training or that you are unsure of. `allowed_domains` / `blocked_domains` \
             narrow the results to (or away from) sites.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 2, "description": "The search query."},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "How many results (default 10, at most 20)."},
                    "allowed_domains": {"type": "array", "items": {"type": "string"}, "description": "Only results from these domains."},
                    "blocked_domains": {"type": "array", "items": {"type": "string"}, "description": "No results from these domains."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        )
        .with_hints(Hints {
            read_only: Some(true),
            destructive: Some(false),
            open_world: Some(true),
        })
    }

    fn source(&self) -> Source {
        Source::Builtin
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let query = str_arg(&args, "query")?.trim().to_string();
        if query.chars().count() < 2 {
            return Err("the query must have at least 2 characters".into());
        }
        let request = SearchRequest {
            query,
            max_results: opt_u64(&args, "max_results")?
                .unwrap_or(DEFAULT_RESULTS)
                .clamp(1, MAX_RESULTS),
            allowed_domains: domains(&args, "allowed_domains")?,
            blocked_domains: domains(&args, "blocked_domains")?,
        };
        let results = tokio::select! {
            r = self.provider.search(request.clone(), ctx.cancel.clone()) => r
                .map_err(|e| ToolError::new(format!("web search failed: {e}")))?,
            _ = ctx.cancel.cancelled() => return Err("cancelled".into()),
        };
        Ok(render(&request, results))
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn results_from_json_name_what_is_wrong() {
        let ok = SearchResult::list_from_json(json!([
            {"title": "T", "url": "https://a.b/"},
            {"title": "U", "url": "https://c.d/", "snippet": null},
            {"title": "V", "url": "https://e.f/", "snippet": "s"}
        ]))
        .unwrap();
        assert_eq!(
            ok.iter().map(|r| r.snippet.as_str()).collect::<Vec<_>>(),
            ["", "", "s"]
        );
        let err = |v| SearchResult::list_from_json(v).unwrap_err();
        assert_eq!(
            err(json!({"title": "T"})),
            "websearch must return a list of {title, url, snippet} results, not an object"
        );
        assert_eq!(
            err(json!("x")),
            "websearch must return a list of {title, url, snippet} results, not a string"
        );
        assert_eq!(
            err(json!([{"title": "T"}])),
            "websearch result 0: missing field `url`"
        );
        assert!(
            err(json!([{"title": "T", "url": "u"}, {"title": "T", "url": 3}]))
                .starts_with("websearch result 1: invalid type: integer `3`, expected a string")
        );
    }

    use super::*;

    struct Fixed(Vec<SearchResult>);

    #[async_trait]
    impl WebSearchProvider for Fixed {
        async fn search(
            &self,
            request: SearchRequest,
            _cancel: CancellationToken,
        ) -> Result<Vec<SearchResult>, HostError> {
            if request.query == "fail please" {
                return Err(HostError::new("quota exceeded"));
            }
            Ok(self.0.clone())
        }
    }

    fn r(title: &str, url: &str, snippet: &str) -> SearchResult {
        SearchResult {
            title: title.into(),
            url: url.into(),
            snippet: snippet.into(),
        }
    }

    fn tool() -> WebSearch {
        WebSearch::new(Arc::new(Fixed(vec![
            r(
                "Rust",
                "https://www.rust-lang.org/",
                "A language  empowering\neveryone.",
            ),
            r("Docs", "https://docs.rs/tokio", "Tokio docs"),
            r("Blog", "https://blog.example.com/post", ""),
            r("Bad", "not a url", "x"),
        ])))
    }

    async fn call(args: Value) -> Result<ToolOutput, ToolError> {
        tool()
            .call(args, ToolContext::detached("/", "websearch"))
            .await
    }

    #[tokio::test]
    async fn numbered_results_with_filters() {
        let out = call(json!({"query": "rust"})).await.unwrap();
        assert_eq!(
            out.content_text(),
            "1. Rust\n   https://www.rust-lang.org/\n   A language empowering everyone.\n\n\
             2. Docs\n   https://docs.rs/tokio\n   Tokio docs\n\n\
             3. Blog\n   https://blog.example.com/post\n"
        );
        let out = call(json!({"query": "rust", "allowed_domains": ["example.com"]}))
            .await
            .unwrap();
        assert!(out.content_text().starts_with("1. Blog"));
        let out = call(json!({"query": "rust", "blocked_domains": ["rust-lang.org", "docs.rs"]}))
            .await
            .unwrap();
        assert!(out.content_text().starts_with("1. Blog"));
        let out = call(json!({"query": "rust", "max_results": 1}))
            .await
            .unwrap();
        assert_eq!(out.content_text().lines().count(), 3);
        assert_eq!(out.metadata.unwrap()["total"], 3);
        let out = call(json!({"query": "rust", "allowed_domains": ["nowhere.org"]}))
            .await
            .unwrap();
        assert_eq!(out.content_text(), "No results for \"rust\".");
    }

    #[tokio::test]
    async fn errors_are_clear() {
        let err = call(json!({"query": "fail please"})).await.unwrap_err();
        assert_eq!(err.message, "web search failed: quota exceeded");
        assert!(call(json!({"query": "x"})).await.is_err());
        assert!(call(json!({"query": "rust", "allowed_domains": "x"}))
            .await
            .is_err());
        assert!(in_domain("a.b.example.com", "example.com"));
        assert!(!in_domain("badexample.com", "example.com"));
    }
}
