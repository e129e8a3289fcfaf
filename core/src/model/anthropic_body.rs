//! The anthropic request body, serialized straight to bytes from the engine's messages and tool
//! specs through borrowing `Serialize` structs (no `serde_json::Value` tree). Adjacent messages
//! of one role are merged, as the API requires alternation: tool results travel as
//! `tool_result` blocks in a user message.
//!
//! Fields are declared in sorted order: the bytes are those of the earlier `Value` rendering
//! (see [`super::wire_json`]).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::images::{wire_image, WireImage};
use super::settings_body::{with_extra_body, AnthropicToolChoice, Thinking};
use super::wire_json::{to_body, wire_name, ArgsObject};
use super::{ModelRequest, RequestBody};
use crate::output::Dialect;
use crate::tool::ToolSpec;
use crate::transcript::{join_text, Message, Part, Reasoning};

/// The request body's bytes; with `cache`, `cache_control` breakpoints (see
/// [`mark_breakpoints`]).
pub(crate) fn render(
    model: &str,
    max_tokens: u32,
    cache: bool,
    req: &ModelRequest<'_>,
) -> RequestBody {
    let s = req.settings;
    let has_tools = !req.tools.is_empty();
    let mut messages = merged(req);
    if cache {
        mark_breakpoints(&mut messages);
    }
    let body = to_body(&Body {
        max_tokens,
        messages,
        model,
        output_config: req
            .output
            .and_then(|o| o.strict_form(Dialect::Anthropic))
            .map(|schema| OutputConfig {
                format: JsonFormat {
                    schema,
                    r#type: "json_schema",
                },
            }),
        stop_sequences: s.stop.as_deref(),
        stream: true,
        system: req.system.map(|text| match cache {
            false => System::Text(text),
            true => System::Blocks([SystemBlock {
                cache_control: EPHEMERAL,
                text,
                r#type: "text",
            }]),
        }),
        temperature: s.temperature,
        thinking: Thinking::of(s),
        tool_choice: AnthropicToolChoice::of(s, has_tools),
        tools: AnthropicTools {
            specs: req.tools,
            cache,
        },
        top_k: s.top_k,
        top_p: s.top_p,
    });
    with_extra_body(body, s)
}

#[derive(Serialize)]
struct Body<'a> {
    max_tokens: u32,
    messages: Vec<WireMessage<'a>>,
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_sequences: Option<&'a [String]>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<System<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<AnthropicToolChoice<'a>>,
    #[serde(skip_serializing_if = "AnthropicTools::is_empty")]
    tools: AnthropicTools<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_k: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
}

/// `output_config: {format: {type: "json_schema", schema}}`: the API's structured output, which
/// constrains the answer to the schema (it takes only the strict form: see
/// [`OutputSchema::strict_form`](crate::output::OutputSchema::strict_form)).
#[derive(Serialize)]
struct OutputConfig<'a> {
    format: JsonFormat<'a>,
}

#[derive(Serialize)]
struct JsonFormat<'a> {
    schema: &'a Value,
    r#type: &'static str,
}

/// `{"type": "ephemeral"}`: a prompt-cache breakpoint, the prefix up to its block cached.
#[derive(Serialize, Clone, Copy)]
pub(crate) struct CacheControl {
    r#type: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl {
    r#type: "ephemeral",
};

/// Breakpoints in the messages: the last block of the newest message (this request's prefix is
/// written for the next one), and the last block of the user message before the newest
/// assistant message, where the previous request of a tool loop or a conversation ended (its
/// prefix, written then, is read now; the API's own look-back of 20 blocks would miss it after
/// a reply with many calls). With the last tool and the system prompt, at most four, as the API
/// allows; each request moves them forward. Only user blocks are marked (text, image, tool
/// result), never a thinking block, which the API does not let carry one.
fn mark_breakpoints(messages: &mut [WireMessage<'_>]) {
    let mark = |m: &mut WireMessage<'_>| {
        if let Some(block) = m.content.last_mut() {
            block.set_cache_control();
        }
    };
    let assistant = messages.iter().rposition(|m| m.role == "assistant");
    if let Some(before) = assistant.and_then(|a| a.checked_sub(1)) {
        if messages[before].role == "user" {
            mark(&mut messages[before]);
        }
    }
    if let Some(last) = messages.last_mut().filter(|m| m.role == "user") {
        mark(last);
    }
}

/// The system prompt: a string, or with caching one text block carrying a breakpoint.
#[derive(Serialize)]
#[serde(untagged)]
enum System<'a> {
    Text(&'a str),
    Blocks([SystemBlock<'a>; 1]),
}

#[derive(Serialize)]
struct SystemBlock<'a> {
    cache_control: CacheControl,
    text: &'a str,
    r#type: &'static str,
}

/// The tools as anthropic declares them; with caching the last one carries a breakpoint.
struct AnthropicTools<'a> {
    specs: &'a [std::sync::Arc<ToolSpec>],
    cache: bool,
}

impl AnthropicTools<'_> {
    fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }
}

impl Serialize for AnthropicTools<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let last = self.specs.len().saturating_sub(1);
        s.collect_seq(self.specs.iter().enumerate().map(|(i, t)| Tool {
            cache_control: (self.cache && i == last).then_some(EPHEMERAL),
            ..Tool::of(t)
        }))
    }
}

/// One wire message: the blocks of adjacent engine messages of its role.
#[derive(Serialize)]
struct WireMessage<'a> {
    content: Vec<Block<'a>>,
    role: &'static str,
}

/// One content block. Every block the body sends is rendered here, so what a block carries
/// beside its content (a cache breakpoint) is one field in one place.
#[derive(Serialize)]
#[serde(untagged)]
enum Block<'a> {
    Text {
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
        text: Cow<'a, str>,
        r#type: &'static str,
    },
    Image {
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
        source: ImageSource<'a>,
        r#type: &'static str,
    },
    /// A `thinking` block sent back as it came: its text and its signature.
    Thinking {
        signature: &'a str,
        thinking: &'a str,
        r#type: &'static str,
    },
    /// A `redacted_thinking` block sent back as it came.
    RedactedThinking { data: &'a str, r#type: &'static str },
    ToolUse {
        id: &'a str,
        input: ArgsObject<'a>,
        name: &'a str,
        r#type: &'static str,
    },
    ToolResult {
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
        content: ResultContent<'a>,
        is_error: bool,
        tool_use_id: &'a str,
        r#type: &'static str,
    },
    /// A block of the API's own kind the engine kept without interpreting it (a server tool's
    /// use and result), sent back as it came.
    Provider(&'a Value),
}

impl Block<'_> {
    /// Make this block a cache breakpoint (user blocks; the others cannot carry one).
    fn set_cache_control(&mut self) {
        if let Block::Text { cache_control, .. }
        | Block::Image { cache_control, .. }
        | Block::ToolResult { cache_control, .. } = self
        {
            *cache_control = Some(EPHEMERAL);
        }
    }
}

/// `{"data", "media_type", "type": "base64"}`.
#[derive(Serialize)]
struct ImageSource<'a> {
    data: &'a str,
    media_type: &'a str,
    r#type: &'static str,
}

/// A tool result's content: its text as a string, or text and image blocks when it has images.
#[derive(Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
}

/// The messages as blocks (borrowed), adjacent ones of a role merged into one message.
fn merged<'a>(req: &ModelRequest<'a>) -> Vec<WireMessage<'a>> {
    let messages = req.messages;
    let mut out: Vec<WireMessage<'a>> = Vec::with_capacity(messages.len());
    let mut push = |role: &'static str, block: Block<'a>| match out.last_mut() {
        Some(m) if m.role == role => m.content.push(block),
        _ => out.push(WireMessage {
            content: vec![block],
            role,
        }),
    };
    for m in messages {
        match m {
            Message::User { content } => {
                for p in content {
                    if let Some(block) = user_block(p, req) {
                        push("user", block);
                    }
                }
            }
            Message::Assistant { content } => {
                for p in content {
                    let block = match p {
                        Part::Text { text } => text_block(text),
                        Part::Reasoning(r) => thinking_block(r),
                        Part::ToolCall(c) => Some(Block::ToolUse {
                            id: &c.id,
                            input: ArgsObject(c),
                            name: wire_name(c),
                            r#type: "tool_use",
                        }),
                        Part::Provider(b) if b.style == "anthropic" => {
                            Some(Block::Provider(&b.block))
                        }
                        // Another style's block means nothing here; an assistant message holds
                        // no image (`Transcript::validate`).
                        Part::Provider(_) | Part::Image(_) => None,
                    };
                    if let Some(block) = block {
                        push("assistant", block);
                    }
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                let content = if m.images().next().is_none() {
                    ResultContent::Text(join_text(content))
                } else {
                    ResultContent::Blocks(
                        content.iter().filter_map(|p| user_block(p, req)).collect(),
                    )
                };
                push(
                    "user",
                    Block::ToolResult {
                        cache_control: None,
                        content,
                        is_error: *is_error,
                        tool_use_id: call_id,
                        r#type: "tool_result",
                    },
                )
            }
        }
    }
    out
}

/// A text or image block of a user message or a tool result.
fn user_block<'a>(p: &'a Part, req: &ModelRequest<'a>) -> Option<Block<'a>> {
    match p {
        Part::Text { text } => text_block(text),
        Part::Image(image) => Some(match wire_image(image, req) {
            WireImage::Data { media_type, data } => Block::Image {
                cache_control: None,
                source: ImageSource {
                    data,
                    media_type,
                    r#type: "base64",
                },
                r#type: "image",
            },
            WireImage::Note(note) => Block::Text {
                cache_control: None,
                text: Cow::Owned(note),
                r#type: "text",
            },
        }),
        // Only assistant messages hold these (`Transcript::validate`).
        Part::Reasoning(_) | Part::ToolCall(_) | Part::Provider(_) => None,
    }
}

/// Reasoning as the API takes it back: a signed `thinking` block, or a `redacted_thinking`
/// block; none for reasoning another kind of server sent (it has neither), which the API
/// would refuse.
fn thinking_block(r: &Reasoning) -> Option<Block<'_>> {
    match (&r.redacted, &r.signature) {
        (Some(data), _) => Some(Block::RedactedThinking {
            data,
            r#type: "redacted_thinking",
        }),
        (None, Some(signature)) => Some(Block::Thinking {
            signature,
            thinking: &r.text,
            r#type: "thinking",
        }),
        (None, None) => None,
    }
}

/// A text block; none for text without non-whitespace. The API refuses such blocks (HTTP 400,
/// not retried), so a reply that had neither text nor calls, once in the conversation, would fail
/// every later request: they are left out, and a message left with no block is left out whole
/// (the user messages around it merge).
fn text_block(text: &str) -> Option<Block<'_>> {
    (!text.trim().is_empty()).then_some(Block::Text {
        cache_control: None,
        text: Cow::Borrowed(text),
        r#type: "text",
    })
}

/// A tool as anthropic declares it: `{"description", "input_schema", "name"}` (and a
/// breakpoint on the last one, with caching).
#[derive(Serialize)]
struct Tool<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
    description: &'a str,
    input_schema: &'a Value,
    name: &'a str,
}

impl<'a> Tool<'a> {
    fn of(t: &'a ToolSpec) -> Self {
        Tool {
            cache_control: None,
            description: &t.description,
            input_schema: &t.input_schema,
            name: &t.name,
        }
    }
}
