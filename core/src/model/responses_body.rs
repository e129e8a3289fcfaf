//! The openai-responses request body (`POST {base}/responses`), serialized straight to bytes from
//! the engine's messages and tool specs through borrowing `Serialize` structs.
//!
//! The conversation is one flat `input` list of items: user and assistant `message`s,
//! `function_call`s and their `function_call_output`s, and the `reasoning` items this style's
//! server sent, given back whole (with their `encrypted_content`). Nothing is stored at the
//! provider (`store: false`) and no `previous_response_id` is sent: each request carries the
//! whole conversation, the encrypted reasoning asked for with
//! `include: ["reasoning.encrypted_content"]`. Reasoning another style sent is not sent here
//! (it has no item this API takes back), nor is this style's sent to another.
//!
//! Fields are declared in sorted order, as every body the engine writes.

use serde::Serialize;
use serde_json::Value;

use super::images::{wire_image, WireImage};
use super::settings_body::with_extra_body;
use super::wire_json::{args_text, to_body, wire_name, ERROR_PREFIX};
use super::{ModelRequest, RequestBody};
use crate::output::{Dialect, OutputSchema};
use crate::settings::{ModelSettings, ToolChoice};
use crate::tool::ToolSpec;
use crate::transcript::{join_text, Image, Message, Part};

/// The style name a reasoning item kept in the transcript carries ([`crate::transcript::ProviderBlock::style`]).
pub(crate) const STYLE: &str = "openai-responses";

/// What the body asks the server to include in its answer: the encrypted reasoning, so it can
/// be sent back without the provider storing anything.
const INCLUDE: [&str; 1] = ["reasoning.encrypted_content"];

/// The request body's bytes.
pub(crate) fn render(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> RequestBody {
    let s = req.settings;
    let has_tools = !req.tools.is_empty();
    let body = to_body(&Body {
        include: INCLUDE,
        input: input(req),
        instructions: req.system,
        max_output_tokens: max_tokens,
        model,
        parallel_tool_calls: s.parallel_tool_calls.filter(|_| has_tools),
        reasoning: WireReasoning::of(s),
        store: false,
        stream: true,
        temperature: s.temperature,
        text: req.output.map(TextFormat::of),
        tool_choice: s
            .tool_choice
            .as_ref()
            .filter(|_| has_tools)
            .map(WireToolChoice::of),
        tools: req.tools.iter().map(|t| FunctionTool::of(t)).collect(),
        top_p: s.top_p,
    });
    with_extra_body(body, s)
}

#[derive(Serialize)]
struct Body<'a> {
    include: [&'static str; 1],
    input: Vec<Item<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    max_output_tokens: u32,
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<WireReasoning>,
    store: bool,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<TextFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<FunctionTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
}

/// `reasoning: {"effort", "summary": "auto"}`: the effort asked for, and its summaries (the
/// `reasoning` events; without `summary` the model reasons and says nothing of it).
#[derive(Serialize)]
struct WireReasoning {
    effort: &'static str,
    summary: &'static str,
}

impl WireReasoning {
    fn of(s: &ModelSettings) -> Option<Self> {
        s.reasoning.and_then(|r| r.effort).map(|e| WireReasoning {
            effort: e.as_str(),
            summary: "auto",
        })
    }
}

/// `text: {"format": {"name", "schema", "strict", "type": "json_schema"}}`: the output schema in
/// this API's spelling, in its strict form (the same subset as the openai style's
/// `response_format`) where it has one, else the host's schema, not strict.
#[derive(Serialize)]
struct TextFormat<'a> {
    format: JsonSchemaFormat<'a>,
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
    r#type: &'static str,
}

impl<'a> TextFormat<'a> {
    fn of(output: &'a OutputSchema) -> Self {
        let (schema, strict) = match output.strict_form(Dialect::Openai) {
            Some(strict) => (strict, true),
            None => (output.schema(), false),
        };
        TextFormat {
            format: JsonSchemaFormat {
                name: output.name(),
                schema,
                strict,
                r#type: "json_schema",
            },
        }
    }
}

/// `"auto"`, `"required"`, `"none"` or `{"name", "type": "function"}`.
#[derive(Serialize)]
#[serde(untagged)]
enum WireToolChoice<'a> {
    Mode(&'static str),
    Function { name: &'a str, r#type: &'static str },
}

impl<'a> WireToolChoice<'a> {
    fn of(choice: &'a ToolChoice) -> Self {
        match choice {
            ToolChoice::Auto => WireToolChoice::Mode("auto"),
            ToolChoice::Required => WireToolChoice::Mode("required"),
            ToolChoice::None => WireToolChoice::Mode("none"),
            ToolChoice::Tool(name) => WireToolChoice::Function {
                name,
                r#type: "function",
            },
        }
    }
}

/// `{"description", "name", "parameters", "strict": false, "type": "function"}`: the API makes
/// a function tool strict unless told otherwise, and a strict one refuses the schemas most
/// tools have (optional properties, open objects).
#[derive(Serialize)]
struct FunctionTool<'a> {
    description: &'a str,
    name: &'a str,
    parameters: &'a Value,
    strict: bool,
    r#type: &'static str,
}

impl<'a> FunctionTool<'a> {
    fn of(t: &'a ToolSpec) -> Self {
        FunctionTool {
            description: &t.description,
            name: &t.name,
            parameters: &t.input_schema,
            strict: false,
            r#type: "function",
        }
    }
}

/// One input item.
#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    /// A user or assistant message: `{"content", "role", "type": "message"}`.
    Message {
        content: Content<'a>,
        role: &'static str,
        r#type: &'static str,
    },
    /// `{"arguments", "call_id", "name", "type": "function_call"}`.
    Call {
        arguments: std::borrow::Cow<'a, str>,
        call_id: &'a str,
        name: &'a str,
        r#type: &'static str,
    },
    /// `{"call_id", "output", "type": "function_call_output"}`; an error's text is prefixed
    /// with `Error: ` (the item has no error flag).
    Output {
        call_id: &'a str,
        output: OutputText<'a>,
        r#type: &'static str,
    },
    /// An item this style's server sent (a `reasoning` item), as it came.
    Kept(&'a Value),
}

/// A message's content: text, or a list of parts when it holds images.
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(std::borrow::Cow<'a, str>),
    Parts(Vec<ContentPart<'a>>),
}

/// `{"text", "type": "input_text"}` or `{"image_url": "data:...", "type": "input_image"}`.
#[derive(Serialize)]
#[serde(untagged)]
enum ContentPart<'a> {
    Text {
        text: std::borrow::Cow<'a, str>,
        r#type: &'static str,
    },
    Image {
        image_url: String,
        r#type: &'static str,
    },
}

fn text_part<'a>(text: impl Into<std::borrow::Cow<'a, str>>) -> ContentPart<'a> {
    ContentPart::Text {
        text: text.into(),
        r#type: "input_text",
    }
}

/// An image as an `input_image` part, or a text part saying why it was not sent.
fn image_part<'a>(image: &'a Image, req: &ModelRequest<'a>) -> ContentPart<'a> {
    match wire_image(image, req) {
        WireImage::Data { media_type, data } => ContentPart::Image {
            image_url: format!("data:{media_type};base64,{data}"),
            r#type: "input_image",
        },
        WireImage::Note(note) => text_part(note),
    }
}

fn message<'a>(role: &'static str, content: Content<'a>) -> Item<'a> {
    Item::Message {
        content,
        role,
        r#type: "message",
    }
}

/// The conversation as input items.
fn input<'a>(req: &ModelRequest<'a>) -> Vec<Item<'a>> {
    let mut items = Vec::with_capacity(req.messages.len() + 1);
    // Images of the tool results since the last message that was not one: a
    // `function_call_output` here carries text, so they follow the step's outputs in one user
    // message, as the openai style sends them.
    let mut tool_images: Vec<(&str, &Image)> = Vec::new();
    for (i, m) in req.messages.iter().enumerate() {
        match m {
            Message::User { content } => {
                if content.iter().any(|p| matches!(p, Part::Image(_))) {
                    let parts = content
                        .iter()
                        .filter_map(|p| match p {
                            Part::Text { text } => Some(text_part(text.as_str())),
                            Part::Image(img) => Some(image_part(img, req)),
                            _ => None,
                        })
                        .collect();
                    items.push(message("user", Content::Parts(parts)));
                } else {
                    items.push(message("user", Content::Text(join_text(content))));
                }
            }
            Message::Assistant { content } => assistant(&mut items, content),
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                let images: Vec<&Image> = m.images().collect();
                let text = join_text(content);
                let note = match images.len() {
                    0 => "",
                    1 => " [the image follows in the next user message]",
                    _ => " [the images follow in the next user message]",
                };
                items.push(Item::Output {
                    call_id,
                    output: OutputText {
                        text,
                        note,
                        is_error: *is_error,
                    },
                    r#type: "function_call_output",
                });
                tool_images.extend(images.into_iter().map(|img| (call_id.as_str(), img)));
                let step_ends = !matches!(req.messages.get(i + 1), Some(Message::Tool { .. }));
                if step_ends && !tool_images.is_empty() {
                    items.push(images_of_results(&tool_images, req));
                    tool_images.clear();
                }
            }
        }
    }
    items
}

/// A tool output's text: `Error: ` in front for an error (the item has no error flag), the
/// note about its images after it, written as one JSON string.
struct OutputText<'a> {
    text: std::borrow::Cow<'a, str>,
    note: &'static str,
    is_error: bool,
}

impl Serialize for OutputText<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let prefix = if self.is_error { ERROR_PREFIX } else { "" };
        if prefix.is_empty() && self.note.is_empty() {
            return s.serialize_str(&self.text);
        }
        s.collect_str(&format_args!("{prefix}{}{}", self.text, self.note))
    }
}

/// An assistant message's parts as items, in order: its text as one message item (where its
/// first text part was), this style's kept items, its calls. Parts of other styles (their
/// reasoning, their provider blocks) are left out.
fn assistant<'a>(items: &mut Vec<Item<'a>>, content: &'a [Part]) {
    let text = join_text(content);
    let mut text = (!text.is_empty()).then_some(text);
    for part in content {
        match part {
            Part::Text { .. } => {
                if let Some(t) = text.take() {
                    items.push(message("assistant", Content::Text(t)));
                }
            }
            Part::Provider(b) if b.style == STYLE => items.push(Item::Kept(&b.block)),
            Part::ToolCall(c) => items.push(Item::Call {
                arguments: args_text(c),
                call_id: &c.id,
                name: wire_name(c),
                r#type: "function_call",
            }),
            Part::Provider(_) | Part::Reasoning(_) | Part::Image(_) => {}
        }
    }
}

/// The user message that carries the images of a step's tool results, each after a line that
/// names its call.
fn images_of_results<'a>(images: &[(&'a str, &'a Image)], req: &ModelRequest<'a>) -> Item<'a> {
    let mut parts = Vec::with_capacity(images.len() * 2);
    let mut last_call = None;
    for (call_id, image) in images {
        if last_call != Some(*call_id) {
            parts.push(text_part(format!(
                "Images from the result of tool call {call_id}:"
            )));
            last_call = Some(*call_id);
        }
        parts.push(image_part(image, req));
    }
    message("user", Content::Parts(parts))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::value_body::rich_tools;
    use crate::transcript::{ProviderBlock, Reasoning, ToolCall};

    fn body(settings: Value, messages: &[Message], system: Option<&str>) -> Value {
        let settings: ModelSettings = serde_json::from_value(settings).unwrap();
        let tools = rich_tools();
        let req = ModelRequest {
            system,
            model: None,
            messages,
            tools: &tools,
            settings: &settings,
            images: None,
            output: None,
        };
        serde_json::from_slice(&render("gpt-5", 1000, &req)).unwrap()
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "echo".into(),
            arguments: json!({"text": "hi"}),
            raw_arguments: false,
            via: None,
        }
    }

    #[test]
    fn the_conversation_goes_as_items_with_this_styles_reasoning_sent_back() {
        let kept = json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA",
                          "summary": [{"type": "summary_text", "text": "Echo it."}]});
        let png = Image::Data {
            media_type: "image/png".into(),
            data: "iVBO".into(),
        };
        let messages = vec![
            Message::User {
                content: vec![Part::text("look"), Part::Image(png.clone())],
            },
            Message::assistant_with(
                "Calling.",
                vec![call("call_1")],
                vec![
                    (
                        0,
                        Part::Provider(ProviderBlock {
                            style: STYLE.into(),
                            block: kept.clone(),
                        }),
                    ),
                    (
                        0,
                        Part::Reasoning(Reasoning {
                            text: "Echo it.".into(),
                            ..Reasoning::default()
                        }),
                    ),
                ],
            ),
            Message::Tool {
                call_id: "call_1".into(),
                name: "echo".into(),
                content: vec![Part::text("no"), Part::Image(png)],
                is_error: true,
            },
            // A reply another style sent (a fallback's): its signed reasoning and its own
            // blocks are not this API's, and are left out.
            Message::assistant_with(
                "",
                vec![call("toolu_2")],
                vec![
                    (
                        0,
                        Part::Reasoning(Reasoning {
                            text: "thinking".into(),
                            signature: Some("sig".into()),
                            ..Reasoning::default()
                        }),
                    ),
                    (
                        0,
                        Part::Provider(ProviderBlock {
                            style: "anthropic".into(),
                            block: json!({"type": "server_tool_use"}),
                        }),
                    ),
                ],
            ),
            Message::tool_result("toolu_2", "echo", "hi", false),
            Message::assistant("Done.", vec![]),
        ];
        let got = body(json!({}), &messages, Some("Be brief."));
        let echo =
            json!({"arguments": "{\"text\":\"hi\"}", "name": "echo", "type": "function_call"});
        let with_id = |id: &str| {
            let mut c = echo.clone();
            c["call_id"] = json!(id);
            c
        };
        assert_eq!(
            got,
            json!({
                "include": ["reasoning.encrypted_content"],
                "input": [
                    {"content": [{"text": "look", "type": "input_text"},
                                 {"image_url": "data:image/png;base64,iVBO", "type": "input_image"}],
                     "role": "user", "type": "message"},
                    kept,
                    {"content": "Calling.", "role": "assistant", "type": "message"},
                    with_id("call_1"),
                    {"call_id": "call_1", "output": "Error: no [the image follows in the next user message]",
                     "type": "function_call_output"},
                    {"content": [{"text": "Images from the result of tool call call_1:", "type": "input_text"},
                                 {"image_url": "data:image/png;base64,iVBO", "type": "input_image"}],
                     "role": "user", "type": "message"},
                    with_id("toolu_2"),
                    {"call_id": "toolu_2", "output": "hi", "type": "function_call_output"},
                    {"content": "Done.", "role": "assistant", "type": "message"},
                ],
                "instructions": "Be brief.",
                "max_output_tokens": 1000,
                "model": "gpt-5",
                "store": false,
                "stream": true,
                "tools": [
                    {"description": "Echo \"text\".\n", "name": "echo", "parameters": rich_tools()[0].input_schema,
                     "strict": false, "type": "function"},
                    {"description": "", "name": "call_tool", "parameters": rich_tools()[1].input_schema,
                     "strict": false, "type": "function"},
                ],
            })
        );
    }

    #[test]
    fn this_styles_reasoning_reaches_no_other_style() {
        // A turn that fell back from openai-responses to another style: the reasoning item (and
        // its encrypted content) is this style's alone.
        let messages = vec![
            Message::user("go"),
            Message::assistant_with(
                "",
                vec![call("call_1")],
                vec![
                    (
                        0,
                        Part::Provider(ProviderBlock {
                            style: STYLE.into(),
                            block: json!({"type": "reasoning", "id": "rs_9", "encrypted_content": "SECRETENC",
                                          "summary": [{"type": "summary_text", "text": "plan"}]}),
                        }),
                    ),
                    (
                        0,
                        Part::Reasoning(Reasoning {
                            text: "plan".into(),
                            ..Reasoning::default()
                        }),
                    ),
                ],
            ),
            Message::tool_result("call_1", "echo", "hi", false),
        ];
        let settings = ModelSettings::default();
        let tools = rich_tools();
        let req = ModelRequest {
            system: None,
            model: None,
            messages: &messages,
            tools: &tools,
            settings: &settings,
            images: None,
            output: None,
        };
        let others = [
            super::super::openai_body::render("m", 100, &req),
            super::super::anthropic_body::render("m", 100, false, &req),
            super::super::ollama_body::render("m", 100, &req),
        ];
        for body in others {
            let text = String::from_utf8_lossy(&body);
            assert!(
                !text.contains("SECRETENC") && !text.contains("rs_9"),
                "{text}"
            );
            // The plain reasoning text is not sent either: it has no field or signature.
            assert!(!text.contains("plan"), "{text}");
        }
        // Here it goes back.
        let ours = String::from_utf8_lossy(&render("m", 100, &req)).into_owned();
        assert!(ours.contains("SECRETENC"), "{ours}");
    }

    #[test]
    fn the_output_schema_goes_as_text_format() {
        let messages = [Message::user("hi")];
        let settings = ModelSettings::default();
        let render_with = |schema: Value| -> Value {
            let output = OutputSchema::new(&schema).unwrap();
            let req = ModelRequest {
                system: None,
                model: None,
                messages: &messages,
                tools: &[],
                settings: &settings,
                images: None,
                output: Some(&output),
            };
            serde_json::from_slice(&render("m", 100, &req)).unwrap()
        };
        // A schema the strict subset takes: its strict form, strict.
        let closed = render_with(json!({"title": "Point", "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x"]}));
        assert_eq!(
            closed["text"],
            json!({"format": {"type": "json_schema", "name": "Point", "strict": true,
                "schema": {"title": "Point", "type": "object", "additionalProperties": false,
                           "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                           "required": ["x", "y"]}}})
        );
        // One it does not (an open object): the host's schema, not strict.
        let open = json!({"type": "object", "additionalProperties": true});
        let got = render_with(open.clone());
        assert_eq!(
            got["text"],
            json!({"format": {"type": "json_schema", "name": "output", "strict": false, "schema": open}})
        );
    }

    #[test]
    fn settings_go_in_this_apis_spelling() {
        let messages = [Message::user("hi")];
        let got = body(
            json!({"temperature": 0.5, "top_p": 0.9, "reasoning": {"effort": "high"},
                   "tool_choice": {"name": "echo"}, "parallel_tool_calls": false,
                   "extra_body": {"include": null, "service_tier": "flex"}}),
            &messages,
            None,
        );
        assert_eq!(got["temperature"], json!(0.5));
        assert_eq!(got["top_p"], json!(0.9));
        assert_eq!(
            got["reasoning"],
            json!({"effort": "high", "summary": "auto"})
        );
        assert_eq!(
            got["tool_choice"],
            json!({"name": "echo", "type": "function"})
        );
        assert_eq!(got["parallel_tool_calls"], json!(false));
        // `extra_body` merges last: a server that refuses `include` can be spared it.
        assert!(got.get("include").is_none());
        assert_eq!(got["service_tier"], json!("flex"));
        assert!(got.get("instructions").is_none());
        assert_eq!(
            got["input"],
            json!([{"content": "hi", "role": "user", "type": "message"}])
        );
        for (choice, wire) in [("auto", "auto"), ("required", "required"), ("none", "none")] {
            let got = body(json!({"tool_choice": choice}), &messages, None);
            assert_eq!(got["tool_choice"], json!(wire));
        }
    }
}
