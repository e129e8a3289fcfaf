//! How big the context of the next request is, in tokens: what the server last reported (all
//! input tokens, cached or not) plus an estimate of what was appended since, and never less
//! than an estimate of the whole (some servers under-report: Ollama's `prompt_eval_count` can
//! leave out a prompt prefix its KV cache reused; a restored or compacted conversation has no
//! report yet).

use std::sync::Arc;

use crate::event::Usage;
use crate::tool::ToolSpec;
use crate::transcript::{Message, Part};

/// What the wire adds around each message (role, separators), in tokens.
const PER_MESSAGE: u64 = 4;

/// Tokens of a text, estimated: four bytes per token, rounded up. Close for English prose and
/// code under the usual tokenizers, low for CJK text (whose bytes are three per character).
pub(crate) fn estimate_text(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// What one image is taken to cost, in tokens: about what Anthropic bills for an image at the
/// largest size it keeps (1.15 megapixels, images above it are scaled down); OpenAI's high-detail
/// tiles come to a similar figure.
const PER_IMAGE: u64 = 1_600;

/// Tokens of one message as the wire carries it.
pub(crate) fn estimate_message(m: &Message) -> u64 {
    let name = match m {
        Message::Tool { name, .. } => estimate_text(name),
        _ => 0,
    };
    PER_MESSAGE + name + m.content().iter().map(estimate_part).sum::<u64>()
}

/// Tokens of one part of a message.
fn estimate_part(p: &Part) -> u64 {
    match p {
        Part::Text { text } => estimate_text(text),
        Part::Image(_) => PER_IMAGE,
        Part::Reasoning(r) => {
            estimate_text(&r.text) + r.redacted.as_deref().map_or(0, estimate_text)
        }
        Part::Provider(b) => estimate_text(&b.block.to_string()),
        Part::ToolCall(c) => {
            PER_MESSAGE
                + estimate_text(&c.id)
                + estimate_text(&c.name)
                + match &c.arguments {
                    serde_json::Value::String(raw) => estimate_text(raw),
                    other => estimate_text(&other.to_string()),
                }
        }
    }
}

/// Tokens of a whole request: system prompt, messages and tool declarations.
pub(crate) fn estimate_request(
    system: Option<&str>,
    messages: &[Message],
    tools: &[Arc<ToolSpec>],
) -> u64 {
    let system = system.map_or(0, |s| PER_MESSAGE + estimate_text(s));
    let tools: u64 = tools
        .iter()
        .map(|t| {
            PER_MESSAGE
                + estimate_text(&t.name)
                + estimate_text(&t.description)
                + estimate_text(&t.input_schema.to_string())
        })
        .sum();
    system + tools + messages.iter().map(estimate_message).sum::<u64>()
}

/// The last report of a client's model server: how many input tokens a request of how many
/// messages had.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ContextMeasure {
    reported: Option<Reported>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reported {
    input_tokens: u64,
    messages: usize,
}

impl ContextMeasure {
    /// A response to a request of `messages` messages reported `usage`. A report of no input
    /// tokens (a server that counts none) is no report.
    pub fn record(&mut self, messages: usize, usage: Usage) {
        self.reported = (usage.input_tokens > 0).then_some(Reported {
            input_tokens: usage.input_tokens,
            messages,
        });
    }

    /// The conversation was replaced (compacted, restored, cleared): earlier reports are about
    /// another conversation.
    pub fn reset(&mut self) {
        self.reported = None;
    }

    /// The size of a request of `messages` (with this system prompt and these tools).
    pub fn measure(
        &self,
        system: Option<&str>,
        messages: &[Message],
        tools: &[Arc<ToolSpec>],
    ) -> u64 {
        let whole = estimate_request(system, messages, tools);
        match self.reported {
            Some(r) if r.messages <= messages.len() => {
                let appended: u64 = messages[r.messages..].iter().map(estimate_message).sum();
                whole.max(r.input_tokens.saturating_add(appended))
            }
            _ => whole,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Message {
        Message::user(text)
    }

    #[test]
    fn reported_tokens_plus_what_was_appended() {
        let mut messages = vec![user("hi")];
        let mut m = ContextMeasure::default();
        let alone = m.measure(None, &messages, &[]);
        assert_eq!(alone, PER_MESSAGE + 1);
        // The server saw 5,000 tokens for that one message (cached ones included).
        m.record(
            1,
            Usage {
                input_tokens: 5_000,
                cache_read_input_tokens: 4_990,
                ..Usage::default()
            },
        );
        messages.push(user(&"x".repeat(400)));
        assert_eq!(m.measure(None, &messages, &[]), 5_000 + PER_MESSAGE + 100);
        // A report smaller than the estimate does not shrink the measure.
        m.record(
            2,
            Usage {
                input_tokens: 3,
                ..Usage::default()
            },
        );
        assert_eq!(m.measure(None, &messages, &[]), 2 * PER_MESSAGE + 1 + 100);
        // No report, or one about a longer conversation than this one: the estimate.
        m.record(
            9,
            Usage {
                input_tokens: 7_000,
                ..Usage::default()
            },
        );
        assert_eq!(m.measure(None, &messages, &[]), 2 * PER_MESSAGE + 101);
        m.reset();
        assert_eq!(m.measure(None, &messages, &[]), 2 * PER_MESSAGE + 101);
        m.record(1, Usage::default());
        assert_eq!(m, ContextMeasure::default());
    }

    #[test]
    fn the_whole_counts_system_and_tools() {
        let tool = Arc::new(ToolSpec::new(
            "read",
            "Read a file.",
            serde_json::json!({"type": "object"}),
        ));
        let n = estimate_request(Some("be brief"), &[user("hi")], &[tool]);
        // `{"type":"object"}` is 17 bytes: 5 tokens.
        assert_eq!(
            n,
            (PER_MESSAGE + 2) + (PER_MESSAGE + 1 + 3 + 5) + (PER_MESSAGE + 1)
        );
    }
}
