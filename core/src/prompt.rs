//! A turn's prompt: text, or text and images in order (the parts of the user message the turn
//! starts with).

use crate::error::{ConfigError, Error, Result};
use crate::transcript::{Image, Message, Part};

/// What [`crate::Client::run`] and [`crate::Client::stream`] take: a string, or parts.
///
/// ```
/// use contenox::{Image, Part, Prompt};
///
/// let text: Prompt = "What is in this picture?".into();
/// assert_eq!(text.text(), "What is in this picture?");
///
/// let png = Image::from_bytes(b"\x89PNG\r\n\x1a\n", None).unwrap();
/// let with_image = Prompt::from(vec![Part::text("What is in this picture?"), Part::Image(png)]);
/// assert_eq!(with_image.text(), "What is in this picture?");
/// assert_eq!(with_image.images(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    parts: Vec<Part>,
}

impl Prompt {
    /// The prompt's text: its text parts, joined by a blank line.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n\n")
    }

    /// How many images the prompt holds.
    pub fn images(&self) -> usize {
        self.parts
            .iter()
            .filter(|p| matches!(p, Part::Image(_)))
            .count()
    }

    /// Its parts, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// A prompt holds text and images only: a reasoning, tool call or provider part is the
    /// host's mistake, refused before the turn starts.
    pub(crate) fn check(&self) -> Result<()> {
        for (i, part) in self.parts.iter().enumerate() {
            let kind = match part {
                Part::Text { .. } | Part::Image(Image::Data { .. } | Image::Path { .. }) => {
                    continue
                }
                Part::Reasoning(_) => "reasoning",
                Part::ToolCall(_) => "tool_call",
                Part::Provider(_) => "provider",
            };
            return Err(Error::Config(ConfigError {
                option: format!("prompt[{i}]"),
                value: Some(format!("{{\"type\": \"{kind}\", ...}}")),
                reason: format!(
                    "a prompt holds text and image parts; a {kind} part belongs to the model's \
                     messages"
                ),
            }));
        }
        Ok(())
    }

    /// The user message the turn appends.
    pub(crate) fn into_message(self) -> Message {
        Message::User {
            content: if self.parts.is_empty() {
                vec![Part::text("")]
            } else {
                self.parts
            },
        }
    }
}

impl From<String> for Prompt {
    fn from(text: String) -> Prompt {
        Prompt {
            parts: vec![Part::Text { text }],
        }
    }
}

impl From<&str> for Prompt {
    fn from(text: &str) -> Prompt {
        Prompt::from(text.to_string())
    }
}

impl From<&String> for Prompt {
    fn from(text: &String) -> Prompt {
        Prompt::from(text.clone())
    }
}

impl From<Vec<Part>> for Prompt {
    fn from(parts: Vec<Part>) -> Prompt {
        Prompt { parts }
    }
}
