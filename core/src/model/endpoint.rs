//! What every request of a bearer-token style names: the HTTP client, the model, the token
//! budget and the `authorization` header. The openai, openai-responses and ollama backends share
//! it; anthropic sends its key as `x-api-key` and keeps its own.

use super::http::Http;
use crate::config::Config;

/// A model server reached with `Authorization: Bearer <key>` (no header when no key is set).
pub(crate) struct BearerEndpoint {
    pub http: Http,
    /// The configured model; a request may name another (fallback, subagents).
    pub model: String,
    pub max_tokens: u32,
    pub auth: Vec<(&'static str, String)>,
}

impl BearerEndpoint {
    pub fn new(http: Http, config: &Config) -> Self {
        let auth = config
            .resolved_api_key()
            .map(|k| vec![("authorization", format!("Bearer {k}"))])
            .unwrap_or_default();
        BearerEndpoint {
            http,
            model: config.model.clone().unwrap_or_default(),
            max_tokens: config.max_tokens,
            auth,
        }
    }
}
