//! Listing the models a server offers.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::http::Http;
use crate::config::{Config, Style};
use crate::error::{Error, Result};

/// One model a server offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The name to pass as `model`.
    pub id: String,
    /// A human-readable name, when the server gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// List the models of the server `config` points at (GET `/v1/models` for openai and anthropic,
/// GET `/api/tags` for ollama; the scripted style offers the model named in the config, or
/// `scripted`).
pub async fn list_models(config: &Config) -> Result<Vec<ModelInfo>> {
    crate::config_check::check_endpoint(config, crate::spelling::Spelling::Snake)?;
    let doc = match config.style {
        Style::Scripted => {
            return Ok(vec![ModelInfo {
                id: config
                    .model
                    .clone()
                    .unwrap_or_else(|| "scripted".to_string()),
                display_name: None,
            }])
        }
        Style::Openai | Style::OpenaiResponses => {
            let auth: Vec<(&str, String)> = config
                .resolved_api_key()
                .map(|k| vec![("authorization", format!("Bearer {k}"))])
                .unwrap_or_default();
            Http::new(config)?.get_json("/models", &auth).await?
        }
        Style::Anthropic => {
            let headers = super::anthropic::auth_headers(config);
            Http::new(config)?.get_json("/v1/models", &headers).await?
        }
        Style::Ollama => Http::new(config)?.get_json("/api/tags", &[]).await?,
    };
    let (list, id_key, name_key) = match config.style {
        Style::Ollama => (&doc["models"], "name", None),
        Style::Anthropic => (&doc["data"], "id", Some("display_name")),
        _ => (&doc["data"], "id", None),
    };
    let list = list.as_array().ok_or_else(|| Error::Transport {
        message: format!(
            "unexpected model list: {}",
            crate::error::cut(&doc.to_string(), 300)
        ),
        source: None,
    })?;
    Ok(list
        .iter()
        .filter_map(|m| {
            Some(ModelInfo {
                id: m.get(id_key)?.as_str()?.to_string(),
                display_name: name_key
                    .and_then(|k| m.get(k))
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
        })
        .collect())
}
