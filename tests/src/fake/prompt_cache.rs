//! Usage the fake counts itself (`"usage": "counted"` in a model entry), and on the anthropic
//! style the prompt cache's prefix rule, as the Messages API bills it.
//!
//! A request's prompt is a list of blocks in the order the API reads them: each tool, the
//! system prompt (a string is one block, a list one block per entry), then every content block
//! of every message (a string content is one block). A block counts one token per four bytes
//! of its JSON (keys sorted, compact, `cache_control` left out), at least one. Output tokens
//! count the same way over the answer's text and arguments.
//!
//! Anthropic: a block carrying `cache_control` is a breakpoint. The cache holds the prefixes
//! (the model and every block up to a breakpoint) that earlier requests wrote. A request reads
//! the longest cached prefix it starts with, looked for at each of its breakpoints and at the
//! 20 block boundaries before each (the API's look-back); it writes every prefix up to its
//! breakpoints. Its `cache_read_input_tokens` are the tokens of the prefix read,
//! `cache_creation_input_tokens` those from there to its last breakpoint, and `input_tokens`
//! (uncached) those after it. Not modelled: the minimum cacheable length (1,024 tokens on most
//! models) and the five-minute lifetime; a prefix once written stays.
//!
//! The other styles report every prompt token as uncached input.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hasher};

use serde_json::{json, Value};

use crate::scenario::{Style, ToolCall, Usage};

/// How many block boundaries before a breakpoint the API also looks at.
const LOOK_BACK: usize = 20;

/// The prefixes anthropic requests wrote, by digest.
#[derive(Default)]
pub(crate) struct PromptCache {
    written: HashSet<u64>,
}

/// One block of a prompt: its tokens, whether it is a breakpoint, the digest of the prompt up
/// to and including it.
struct Block {
    tokens: u64,
    breakpoint: bool,
    prefix: u64,
}

impl PromptCache {
    /// The usage of `request` answered with `text` and `calls`, the cache updated.
    pub fn count(
        &mut self,
        style: Style,
        request: &Value,
        text: Option<&str>,
        calls: &[ToolCall],
    ) -> Usage {
        let blocks = blocks(style, request);
        let input: u64 = blocks.iter().map(|b| b.tokens).sum();
        let mut out = text.map_or(0, tokens_of_text);
        for call in calls {
            out += tokens_of_text(&call.name) + tokens_of_text(&call.arguments.to_wire_string());
        }
        let mut usage = Usage {
            input_tokens: input,
            output_tokens: out,
            ..Usage::default()
        };
        if style != Style::Anthropic {
            return usage;
        }
        let breakpoints: Vec<usize> = (0..blocks.len())
            .filter(|&i| blocks[i].breakpoint)
            .collect();
        let Some(&last) = breakpoints.last() else {
            return usage;
        };
        // The longest cached prefix among the places the API looks.
        let read_end = breakpoints
            .iter()
            .flat_map(|&b| (b.saturating_sub(LOOK_BACK)..=b).rev())
            .filter(|&i| self.written.contains(&blocks[i].prefix))
            .map(|i| i + 1)
            .max()
            .unwrap_or(0);
        let sum =
            |range: std::ops::Range<usize>| -> u64 { blocks[range].iter().map(|b| b.tokens).sum() };
        usage.cache_read_input_tokens = sum(0..read_end);
        usage.cache_creation_input_tokens = if last + 1 > read_end {
            sum(read_end..last + 1)
        } else {
            0
        };
        for b in breakpoints {
            self.written.insert(blocks[b].prefix);
        }
        usage
    }
}

/// Tokens of a piece of text: one per four bytes, at least one for any text.
fn tokens_of_text(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The prompt's blocks in the order the API reads them.
fn blocks(style: Style, request: &Value) -> Vec<Block> {
    let mut ordered: Vec<&Value> = Vec::new();
    if let Some(tools) = request.get("tools").and_then(Value::as_array) {
        ordered.extend(tools);
    }
    if style == Style::Anthropic {
        match request.get("system") {
            Some(Value::Array(list)) => ordered.extend(list),
            Some(text @ Value::String(_)) => ordered.push(text),
            _ => {}
        }
    }
    for m in request
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        // openai and ollama messages are blocks of their own; an anthropic string content is
        // one block.
        match m.get("content") {
            _ if style != Style::Anthropic => ordered.push(m),
            Some(Value::Array(list)) => ordered.extend(list),
            Some(other) => ordered.push(other),
            None => {}
        }
    }
    let mut hasher = DefaultHasher::new();
    hasher.write(
        request
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .as_bytes(),
    );
    ordered
        .into_iter()
        .map(|block| {
            let (json, breakpoint) = canonical(block);
            hasher.write(json.as_bytes());
            hasher.write_u8(0);
            Block {
                tokens: (json.len() as u64).div_ceil(4).max(1),
                breakpoint,
                prefix: hasher.clone().finish(),
            }
        })
        .collect()
}

/// A block's JSON without its `cache_control`, and whether it had one. A string (a system
/// prompt or message content given as text) is the text block the API reads it as.
fn canonical(block: &Value) -> (String, bool) {
    match block {
        Value::String(text) => (json!({"text": text, "type": "text"}).to_string(), false),
        Value::Object(map) if map.contains_key("cache_control") => {
            let mut map = map.clone();
            map.remove("cache_control");
            (Value::Object(map).to_string(), true)
        }
        other => (other.to_string(), false),
    }
}

/// The number of `cache_control` breakpoints in an anthropic request.
pub(crate) fn breakpoints(request: &Value) -> usize {
    let marked = |v: &Value| usize::from(v.get("cache_control").is_some());
    let list = |v: Option<&Value>| -> usize {
        v.and_then(Value::as_array)
            .map_or(0, |items| items.iter().map(marked).sum())
    };
    list(request.get("tools"))
        + list(request.get("system"))
        + request
            .get("messages")
            .and_then(Value::as_array)
            .map_or(0, |ms| ms.iter().map(|m| list(m.get("content"))).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cc() -> Value {
        json!({"type": "ephemeral"})
    }

    fn request(messages: Value, marks: &[(usize, usize)]) -> Value {
        let mut r = json!({"model": "m", "system": [{"type": "text", "text": "You are terse.", "cache_control": cc()}],
            "tools": [{"name": "t", "description": "a tool", "input_schema": {}, "cache_control": cc()}],
            "messages": messages});
        for (m, b) in marks {
            r["messages"][m]["content"][b]["cache_control"] = cc();
        }
        r
    }

    fn msg(role: &str, text: &str) -> Value {
        json!({"role": role, "content": [{"type": "text", "text": text}]})
    }

    #[test]
    fn a_request_reads_the_prefix_the_one_before_wrote() {
        let mut cache = PromptCache::default();
        let first = request(json!([msg("user", "one two three four")]), &[(0, 0)]);
        let u1 = cache.count(Style::Anthropic, &first, Some("ok"), &[]);
        // Nothing cached yet: everything up to the last breakpoint is written.
        assert_eq!(u1.cache_read_input_tokens, 0);
        assert_eq!(u1.cache_creation_input_tokens, u1.input_tokens);
        assert_eq!(u1.output_tokens, 1);
        let second = request(
            json!([
                msg("user", "one two three four"),
                msg("assistant", "ok"),
                msg("user", "five")
            ]),
            &[(0, 0), (2, 0)],
        );
        let u2 = cache.count(Style::Anthropic, &second, None, &[]);
        assert_eq!(u2.cache_read_input_tokens, u1.input_tokens);
        assert_eq!(
            u2.cache_creation_input_tokens,
            u2.input_tokens - u1.input_tokens
        );
        assert_eq!(u2.uncached_input(), 0);
        // The same request again reads it all.
        let u3 = cache.count(Style::Anthropic, &second, None, &[]);
        assert_eq!(u3.cache_read_input_tokens, u2.input_tokens);
        // A prefix that differs by one byte before the breakpoint reads only what came before
        // the difference that was written (here: nothing past the system prompt and tool).
        let changed = request(
            json!([
                msg("user", "one two three fouR"),
                msg("assistant", "ok"),
                msg("user", "five")
            ]),
            &[(0, 0), (2, 0)],
        );
        let u4 = cache.count(Style::Anthropic, &changed, None, &[]);
        assert!(u4.cache_read_input_tokens < u1.input_tokens, "{u4:?}");
        assert!(u4.cache_read_input_tokens > 0, "{u4:?}");
    }

    #[test]
    fn without_breakpoints_nothing_is_cached() {
        let mut cache = PromptCache::default();
        let plain = json!({"model": "m", "system": "s", "messages": [msg("user", "hi")]});
        for _ in 0..2 {
            let u = cache.count(Style::Anthropic, &plain, None, &[]);
            assert_eq!(u.cache_read_input_tokens + u.cache_creation_input_tokens, 0);
            assert_eq!(u.uncached_input(), u.input_tokens);
        }
        // Only the look-back finds an older breakpoint's prefix: one breakpoint on the newest
        // block still reads the previous request's prefix within 20 blocks.
        let mut cache = PromptCache::default();
        let mut messages = vec![msg("user", "q")];
        let first = request(json!(messages.clone()), &[(0, 0)]);
        let u1 = cache.count(Style::Anthropic, &first, None, &[]);
        messages.push(msg("assistant", "a"));
        messages.push(msg("user", "q2"));
        let second = request(json!(messages), &[(2, 0)]);
        let u2 = cache.count(Style::Anthropic, &second, None, &[]);
        assert_eq!(u2.cache_read_input_tokens, u1.input_tokens);
    }

    #[test]
    fn other_styles_count_every_token_as_input() {
        let mut cache = PromptCache::default();
        let r = json!({"model": "m", "messages": [{"role": "user", "content": "12345678"}]});
        let u = cache.count(Style::Openai, &r, Some("1234"), &[]);
        assert_eq!(u.output_tokens, 1);
        assert_eq!(
            u.input_tokens,
            (r["messages"][0].to_string().len() as u64).div_ceil(4)
        );
        assert_eq!(u.cache_read_input_tokens, 0);
    }

    #[test]
    fn breakpoints_are_counted_everywhere() {
        let r = request(
            json!([msg("user", "a"), msg("user", "b")]),
            &[(0, 0), (1, 0)],
        );
        assert_eq!(breakpoints(&r), 4);
    }
}
