//! Framing helpers shared by the three styles.

use axum::body::Bytes;
use axum::http::StatusCode;
use serde_json::{json, Value};

use super::Reply;
use crate::scenario::{ErrorSpec, Style};

/// Splits `text` into word pieces (a word and the whitespace after it) whose concatenation is
/// `text`: "Hello there." -> ["Hello ", "there."].
pub fn split_words(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut seen_word = false;
    let mut prev_ws = false;
    for (i, c) in text.char_indices() {
        let ws = c.is_whitespace();
        if !ws && prev_ws && seen_word {
            pieces.push(&text[start..i]);
            start = i;
        }
        seen_word |= !ws;
        prev_ws = ws;
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// Splits `s` at char boundaries into up to `parts` non-empty pieces of similar length.
pub fn split_fragments(s: &str, parts: usize) -> Vec<&str> {
    let chars = s.chars().count();
    if chars == 0 {
        return Vec::new();
    }
    let per = chars.div_ceil(parts.max(1));
    let mut out = Vec::new();
    let mut start = 0;
    for (count, (i, _)) in s.char_indices().enumerate() {
        if count > 0 && count % per == 0 {
            out.push(&s[start..i]);
            start = i;
        }
    }
    out.push(&s[start..]);
    out
}

/// `data: <json>\n\n`.
pub fn sse_data(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

/// `event: <name>\ndata: <json>\n\n`.
pub fn sse_event(name: &str, v: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {v}\n\n"))
}

/// `<json>\n`.
pub fn ndjson_line(v: &Value) -> Bytes {
    Bytes::from(format!("{v}\n"))
}

/// A recorded stream's chunks in the style's framing: `data:` events ending with `[DONE]`
/// (openai), named events (anthropic and openai-responses, the name from each chunk's `type`), NDJSON lines
/// (ollama). A line that is not JSON is sent as it is.
pub fn replay_reply(style: Style, lines: &[String]) -> Reply {
    let mut chunks: Vec<Bytes> = lines
        .iter()
        .map(|line| match style {
            Style::Openai => Bytes::from(format!("data: {line}\n\n")),
            Style::Anthropic | Style::OpenaiResponses => {
                let kind = serde_json::from_str::<Value>(line)
                    .ok()
                    .and_then(|v| v["type"].as_str().map(str::to_string))
                    .unwrap_or_else(|| "message".into());
                Bytes::from(format!("event: {kind}\ndata: {line}\n\n"))
            }
            Style::Ollama => Bytes::from(format!("{line}\n")),
        })
        .collect();
    if style == Style::Openai {
        chunks.push(Bytes::from("data: [DONE]\n\n"));
    }
    Reply {
        status: StatusCode::OK,
        content_type: match style {
            Style::Ollama => "application/x-ndjson",
            _ => "text/event-stream; charset=utf-8",
        },
        headers: Vec::new(),
        chunks,
        streaming: true,
        pauses: Vec::new(),
    }
}

/// The reply of an `error` entry: that status, the body given (a string as-is, other JSON
/// compact) or the style's error object, and `Retry-After` when `retry_after_s` is given.
pub fn error_reply(style: Style, spec: &ErrorSpec) -> Reply {
    let status = StatusCode::from_u16(spec.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = match &spec.body {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => default_error_body(style, status).to_string(),
    };
    let content_type = if serde_json::from_str::<Value>(&body).is_ok() {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    let mut headers = Vec::new();
    if let Some(s) = spec.retry_after_s {
        headers.push(("retry-after", s.to_string()));
    }
    Reply {
        status,
        content_type,
        headers,
        chunks: vec![Bytes::from(body)],
        streaming: false,
        pauses: Vec::new(),
    }
}

fn default_error_body(style: Style, status: StatusCode) -> Value {
    let code = status.as_u16();
    let message = format!("scripted error {code}");
    match style {
        Style::Openai | Style::OpenaiResponses => {
            let (kind, code_name) = match code {
                429 => ("requests", Value::from("rate_limit_exceeded")),
                401 => ("invalid_request_error", Value::from("invalid_api_key")),
                500..=599 => ("server_error", Value::Null),
                _ => ("invalid_request_error", Value::Null),
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": code_name}})
        }
        Style::Anthropic => {
            let kind = match code {
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                500..=599 => "api_error",
                _ => "invalid_request_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Style::Ollama => json!({ "error": message }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_concatenate_back() {
        assert_eq!(split_words("Hello there."), vec!["Hello ", "there."]);
        assert_eq!(split_words("  a  b\nc "), vec!["  a  ", "b\n", "c "]);
        assert_eq!(split_words("one"), vec!["one"]);
        assert!(split_words("").is_empty());
        for t in ["x y z", "  lead", "trail  ", "héllo wörld ünïcode"] {
            assert_eq!(split_words(t).concat(), t);
        }
    }

    #[test]
    fn fragments_concatenate_back() {
        assert_eq!(
            split_fragments(r#"{"a":1}"#, 3),
            vec![r#"{"a"#, r#"":1"#, "}"]
        );
        assert_eq!(split_fragments("abcdef", 3), vec!["ab", "cd", "ef"]);
        assert_eq!(split_fragments("{}", 3), vec!["{", "}"]);
        assert!(split_fragments("", 3).is_empty());
        let s = r#"{"text":"ünïcödé hi"}"#;
        let f = split_fragments(s, 3);
        assert_eq!(f.len(), 3);
        assert_eq!(f.concat(), s);
    }
}
