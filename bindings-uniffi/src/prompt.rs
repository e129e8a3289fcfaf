//! A turn's prompt of parts ([`Client::run_parts`](crate::Client::run_parts)): text and images
//! in order. The engine checks every part (bytes that are empty or not an image, a media type
//! the bytes contradict, a path outside the root: `ContenoxError.Config` naming the part,
//! `prompt[1].data`); this file only puts the bytes into the base64 form the engine takes.

use base64::Engine as _;
use serde_json::{json, Value};

use crate::error::ContenoxError;

/// One part of a prompt. Kotlin: `PromptPart.Text("...")`, `PromptPart.Image(bytes, null)`,
/// `PromptPart.ImagePath("shots/login.png")`; Swift: `.text(text:)`, `.image(data:mediaType:)`,
/// `.imagePath(path:)`.
#[derive(Debug, Clone, PartialEq, uniffi::Enum)]
pub enum PromptPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image's bytes (`ByteArray` / `Data`). `media_type` (`image/png`, `image/jpeg`,
    /// `image/gif`, `image/webp`) may be null: the engine reads it from the bytes' signature.
    Image {
        /// The image's bytes.
        data: Vec<u8>,
        /// Its media type, or null to read it from the bytes.
        media_type: Option<String>,
    },
    /// An image file beneath the client's root: checked when the turn starts and read for each
    /// request (PNG, JPEG, GIF or WebP by its bytes, at most 3.75 MiB).
    ImagePath {
        /// The path, relative to the root.
        path: String,
    },
}

/// `parts` as the engine's prompt.
pub(crate) fn to_prompt(parts: Vec<PromptPart>) -> Result<contenox::Prompt, ContenoxError> {
    let values: Vec<Value> = parts
        .into_iter()
        .map(|part| match part {
            PromptPart::Text { text } => json!({"type": "text", "text": text}),
            PromptPart::Image { data, media_type } => {
                let data = base64::engine::general_purpose::STANDARD.encode(data);
                match media_type {
                    Some(m) => json!({"type": "image", "data": data, "media_type": m}),
                    None => json!({"type": "image", "data": data}),
                }
            }
            PromptPart::ImagePath { path } => json!({"type": "image", "path": path}),
        })
        .collect();
    Ok(contenox::Prompt::from_json(&Value::Array(values))?)
}
