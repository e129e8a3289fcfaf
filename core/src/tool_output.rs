//! What a tool call returns: its [`ToolOutput`], or the [`HostError`] host code raised.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::transcript::Image;

/// The result text of a call cut off by a cancel (the turn's, a source's tool's).
pub const CANCELLED_RESULT: &str = "cancelled";

/// A tool's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// A string is sent as is; any other JSON value is sent as compact JSON text.
    pub content: Value,
    /// Whether the model should read this as a failure.
    #[serde(default)]
    pub is_error: bool,
    /// Facts about the result that are not the result itself (`truncated`, `nextOffset`, `total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Images the model sees after the text (`read` of an image file; a host tool's image
    /// parts), in order. Each style sends them as its API takes a tool result's images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

impl ToolOutput {
    /// A text result.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: Value::String(text.into()),
            is_error: false,
            metadata: None,
            images: Vec::new(),
        }
    }

    /// A JSON result.
    pub fn json(value: Value) -> Self {
        ToolOutput {
            content: value,
            is_error: false,
            metadata: None,
            images: Vec::new(),
        }
    }

    /// An error result.
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput {
            content: Value::String(message.into()),
            is_error: true,
            metadata: None,
            images: Vec::new(),
        }
    }

    /// Attach an image, shown to the model after the text.
    pub fn with_image(mut self, image: Image) -> Self {
        self.images.push(image);
        self
    }

    /// Attach metadata.
    pub fn with_metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// The content as text (strings as they are, other values as compact JSON).
    pub fn content_text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// The text the model sees: the content, then the metadata (when there is any) on a line of
    /// its own, so the model learns about a cut without the content's bytes changing.
    pub fn model_text(&self) -> String {
        let mut text = self.content_text();
        if let Some(meta) = &self.metadata {
            text.push_str("\n\n[metadata: ");
            text.push_str(&meta.to_string());
            text.push(']');
        }
        text
    }
}

/// An error raised by host code (a tool, a hook, a wait_for): it becomes an error result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    /// The message the model sees.
    pub message: String,
}

/// The error a tool returns.
pub type ToolError = HostError;

impl HostError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        HostError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HostError {}

impl From<String> for HostError {
    fn from(message: String) -> Self {
        HostError { message }
    }
}

impl From<&str> for HostError {
    fn from(message: &str) -> Self {
        HostError::new(message)
    }
}

impl From<std::io::Error> for HostError {
    fn from(e: std::io::Error) -> Self {
        HostError::new(e.to_string())
    }
}

impl From<serde_json::Error> for HostError {
    fn from(e: serde_json::Error) -> Self {
        HostError::new(e.to_string())
    }
}
