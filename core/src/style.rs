//! The wire style a model server speaks, and what each style reads from the environment.

use serde::{Deserialize, Serialize};

/// The wire style of the model server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// OpenAI Chat Completions (and every OpenAI-compatible server: vLLM, llama.cpp, LM Studio,
    /// Ollama's `/v1`).
    #[default]
    Openai,
    /// OpenAI Responses (`/responses`): OpenAI's API for its reasoning models, also served by
    /// vLLM, llama.cpp, LM Studio and Ollama. Reasoning goes back encrypted; nothing is stored
    /// at the provider.
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Ollama's native `/api/chat`.
    Ollama,
    /// A fixed list of responses replayed in-process; no network.
    Scripted,
}

impl Style {
    /// The style's name as configs spell it (`openai`, `openai-responses`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Style::Openai => "openai",
            Style::OpenaiResponses => "openai-responses",
            Style::Anthropic => "anthropic",
            Style::Ollama => "ollama",
            Style::Scripted => "scripted",
        }
    }

    /// The default base URL, as that style's official SDK takes it.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Style::Openai | Style::OpenaiResponses => "https://api.openai.com/v1",
            Style::Anthropic => "https://api.anthropic.com",
            Style::Ollama => "http://127.0.0.1:11434",
            Style::Scripted => "",
        }
    }

    /// The environment variable read when no `api_key` is given.
    pub fn api_key_env(self) -> Option<&'static str> {
        match self {
            Style::Openai | Style::OpenaiResponses => Some("OPENAI_API_KEY"),
            Style::Anthropic => Some("ANTHROPIC_API_KEY"),
            Style::Ollama => Some("OLLAMA_API_KEY"),
            Style::Scripted => None,
        }
    }

    /// The environment variable read for the base URL when none is given.
    pub fn base_url_env(self) -> Option<&'static str> {
        match self {
            Style::Openai | Style::OpenaiResponses => Some("OPENAI_BASE_URL"),
            Style::Anthropic => Some("ANTHROPIC_BASE_URL"),
            Style::Ollama => Some("OLLAMA_HOST"),
            Style::Scripted => None,
        }
    }
}
