//! A turn's prompt: text, or text and images in order (the parts of the user message the turn
//! starts with).

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::error::{ConfigError, Error, Result};
use crate::transcript::{sniff_media_type, Image, Message, Part, IMAGE_MEDIA_TYPES};

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

    /// A prompt as the bindings pass it: a JSON string (the text), or an array of parts, each
    /// `{"type": "text", "text": ...}`, `{"type": "image", "data": <base64>, "media_type": ...}`
    /// (`media_type` may be left out: it is then read from the bytes' signature) or
    /// `{"type": "image", "path": ...}`. Everything else is a configuration error naming the
    /// part (`prompt[2]`) and what is wrong with it: an unknown `type`, a field of the wrong
    /// kind, data that is not base64 or is empty, bytes that are not PNG, JPEG, GIF or WebP, a
    /// `media_type` the bytes contradict.
    ///
    /// ```
    /// use contenox::Prompt;
    /// use serde_json::json;
    ///
    /// let p = Prompt::from_json(&json!([
    ///     {"type": "text", "text": "What is this?"},
    ///     {"type": "image", "data": "R0lGODlhAQABAAAAACw="},
    /// ])).unwrap();
    /// assert_eq!(p.images(), 1);
    /// let bad = Prompt::from_json(&json!([{"type": "video", "path": "a.mp4"}])).unwrap_err();
    /// assert!(bad.to_string().contains("prompt[0]"));
    /// ```
    pub fn from_json(value: &Value) -> Result<Prompt> {
        match value {
            Value::String(text) => Ok(Prompt::from(text.as_str())),
            Value::Array(items) => {
                let parts = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| part_from_json(i, item))
                    .collect::<Result<Vec<Part>>>()?;
                Ok(Prompt { parts })
            }
            other => Err(prompt_error(
                "prompt".into(),
                None,
                format!(
                    "a prompt is a string or a list of parts, not {}",
                    kind_of(other)
                ),
            )),
        }
    }

    /// A prompt holds text and images only: a reasoning, tool call or provider part is the
    /// host's mistake, refused before the turn starts. (Images given by path are checked
    /// beneath the root by the client, see `image_file::check_prompt_paths`.)
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

    /// The prompt as the lifecycle hooks left it: its text parts replaced by `replace` (one
    /// text part first, the images kept in order), then each `context` text as a part after.
    pub(crate) fn with_hooks(mut self, replace: Option<String>, context: Vec<String>) -> Prompt {
        if let Some(text) = replace {
            self.parts.retain(|p| !matches!(p, Part::Text { .. }));
            self.parts.insert(0, Part::text(text));
        }
        self.parts.extend(context.into_iter().map(Part::text));
        self
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

/// A configuration error about the prompt (or one of its parts).
pub(crate) fn prompt_error(option: String, value: Option<String>, reason: String) -> Error {
    Error::Config(ConfigError {
        option,
        value,
        reason,
    })
}

/// What kind of JSON value `v` is, for an error.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Part `i` of a prompt given as JSON.
fn part_from_json(i: usize, item: &Value) -> Result<Part> {
    let at = format!("prompt[{i}]");
    let Value::Object(fields) = item else {
        return Err(prompt_error(
            at,
            None,
            format!(
                "a prompt part is an object with a \"type\" (\"text\" or \"image\"), not {}",
                kind_of(item)
            ),
        ));
    };
    let string = |name: &str| -> Result<Option<&str>> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(prompt_error(
                format!("{at}.{name}"),
                None,
                format!("\"{name}\" must be a string, not {}", kind_of(other)),
            )),
        }
    };
    let known = |allowed: &[&str]| -> Result<()> {
        match fields.keys().find(|k| !allowed.contains(&k.as_str())) {
            None => Ok(()),
            Some(k) => Err(prompt_error(
                format!("{at}.{k}"),
                None,
                format!(
                    "unknown field of this part (it takes {})",
                    allowed.join(", ")
                ),
            )),
        }
    };
    match string("type")? {
        Some("text") => {
            known(&["type", "text"])?;
            let Some(text) = string("text")? else {
                return Err(prompt_error(
                    format!("{at}.text"),
                    None,
                    "a text part needs its \"text\"".into(),
                ));
            };
            Ok(Part::text(text))
        }
        Some("image") => {
            known(&["type", "data", "media_type", "path"])?;
            image_from_json(&at, fields, string("data")?, string("path")?)
        }
        Some(other) => Err(prompt_error(
            format!("{at}.type"),
            Some(format!("{other:?}")),
            "is not a prompt part's type (\"text\" or \"image\")".into(),
        )),
        None => Err(prompt_error(
            format!("{at}.type"),
            None,
            "a prompt part needs a \"type\" (\"text\" or \"image\")".into(),
        )),
    }
}

/// An image part: its bytes (base64, media type checked against them or read from them) or a
/// path (checked beneath the root when the turn starts).
fn image_from_json(
    at: &str,
    fields: &Map<String, Value>,
    data: Option<&str>,
    path: Option<&str>,
) -> Result<Part> {
    let media_type = match fields.get("media_type") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m.as_str()),
        Some(other) => {
            return Err(prompt_error(
                format!("{at}.media_type"),
                None,
                format!("\"media_type\" must be a string, not {}", kind_of(other)),
            ))
        }
    };
    match (data, path) {
        (Some(data), None) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| {
                    prompt_error(
                        format!("{at}.data"),
                        None,
                        format!("the image's data is not base64 (standard alphabet): {e}"),
                    )
                })?;
            if bytes.is_empty() {
                return Err(prompt_error(
                    format!("{at}.data"),
                    None,
                    "the image's data is empty".into(),
                ));
            }
            let Some(sniffed) = sniff_media_type(&bytes) else {
                return Err(prompt_error(
                    format!("{at}.data"),
                    None,
                    format!(
                        "the image's bytes are not {} (by their signature)",
                        IMAGE_MEDIA_TYPES.join(", ")
                    ),
                ));
            };
            let image = Image::from_bytes(&bytes, media_type).map_err(|e| {
                prompt_error(
                    format!("{at}.media_type"),
                    media_type.map(Into::into),
                    e.to_string(),
                )
            })?;
            if let Image::Data { media_type, .. } = &image {
                if media_type != sniffed {
                    return Err(prompt_error(
                        format!("{at}.media_type"),
                        None,
                        format!("the image's bytes are {sniffed}, not {media_type}"),
                    ));
                }
            }
            Ok(Part::Image(image))
        }
        (None, Some("")) => Err(prompt_error(
            format!("{at}.path"),
            None,
            "the image's path is empty".into(),
        )),
        (None, Some(path)) => {
            if media_type.is_some() {
                return Err(prompt_error(
                    format!("{at}.media_type"),
                    None,
                    "an image given by path has its media type read from its bytes".into(),
                ));
            }
            Ok(Part::Image(Image::Path { path: path.into() }))
        }
        (Some(_), Some(_)) => Err(prompt_error(
            at.into(),
            None,
            "an image has either \"data\" or \"path\", not both".into(),
        )),
        (None, None) => Err(prompt_error(
            at.into(),
            None,
            "an image needs \"data\" (base64) or \"path\"".into(),
        )),
    }
}
