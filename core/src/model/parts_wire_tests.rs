//! Each style's body for the parts beyond text: images in prompts and tool results, reasoning
//! sent back (only to the kind of server that sent it), a provider's own blocks.

use serde_json::{json, Value};

use super::images::{ImageBytes, ResolvedImages};
use super::{anthropic_body, ollama_body, openai_body, ModelRequest};
use crate::transcript::{Image, Message, Part, ProviderBlock, Reasoning, ToolCall};

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments: json!({"path": "a.png"}),
        raw_arguments: false,
        via: None,
    }
}

fn png() -> Image {
    Image::Data {
        media_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    }
}

/// A prompt with an image by bytes and one by path, a reply with every kind of reasoning before
/// its two calls, two results (one with an image), and a last reply with a server block.
fn conversation() -> Vec<Message> {
    vec![
        Message::User {
            content: vec![
                Part::text("what is this?"),
                Part::Image(png()),
                Part::Image(Image::Path {
                    path: "shots/b.gif".into(),
                }),
                Part::Image(Image::Path {
                    path: "gone.png".into(),
                }),
            ],
        },
        Message::Assistant {
            content: vec![
                Part::Reasoning(Reasoning {
                    text: "signed thought".into(),
                    signature: Some("SIG+/=".into()),
                    ..Reasoning::default()
                }),
                Part::Reasoning(Reasoning {
                    redacted: Some("ENCRYPTED".into()),
                    ..Reasoning::default()
                }),
                Part::Reasoning(Reasoning {
                    text: "plain thought".into(),
                    field: Some("reasoning_content".into()),
                    ..Reasoning::default()
                }),
                Part::text("Reading."),
                Part::ToolCall(call("c1")),
                Part::ToolCall(call("c2")),
            ],
        },
        Message::Tool {
            call_id: "c1".into(),
            name: "read".into(),
            content: vec![Part::text("Image a.png"), Part::Image(png())],
            is_error: false,
        },
        Message::tool_result("c2", "read", "no such file", true),
        Message::Assistant {
            content: vec![
                Part::Reasoning(Reasoning {
                    text: "final thought".into(),
                    field: Some("reasoning_content".into()),
                    ..Reasoning::default()
                }),
                Part::Provider(ProviderBlock {
                    style: "anthropic".into(),
                    block: json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search",
                                  "input": {"query": "x"}}),
                }),
                Part::text("A PNG."),
            ],
        },
    ]
}

fn resolved() -> ResolvedImages {
    let mut images = ResolvedImages::new();
    images.insert(
        "shots/b.gif".into(),
        Ok(ImageBytes {
            media_type: "image/gif".into(),
            data: "R0lGODlh".into(),
        }),
    );
    images.insert(
        "gone.png".into(),
        Err("no such file beneath the root".into()),
    );
    images
}

fn body(render: fn(&str, u32, &ModelRequest<'_>) -> super::RequestBody) -> Value {
    let messages = conversation();
    let images = resolved();
    let req = ModelRequest {
        system: None,
        model: None,
        messages: &messages,
        tools: &[],
        images: Some(&images),
        output: None,
        settings: &crate::settings::ModelSettings::default(),
    };
    serde_json::from_slice(&render("m", 100, &req)).unwrap()
}

#[test]
fn openai_sends_images_as_data_urls_and_reasoning_under_its_field() {
    let b = body(openai_body::render);
    let m = b["messages"].as_array().unwrap();
    let roles: Vec<&str> = m.iter().map(|m| m["role"].as_str().unwrap()).collect();
    // The result's image follows the step's tool messages in one user message.
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "tool", "user", "assistant"]
    );
    assert_eq!(
        m[0]["content"],
        json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lGODlh"}},
            {"type": "text",
             "text": "[image gone.png was not sent: no such file beneath the root]"},
        ])
    );
    // Only the reasoning that came under an openai-style field goes back, under that field,
    // and only beside tool calls; signed and redacted reasoning never reach this style.
    assert_eq!(m[1]["reasoning_content"], "plain thought");
    assert!(m[1].get("reasoning").is_none());
    assert!(!b.to_string().contains("signed thought") && !b.to_string().contains("ENCRYPTED"));
    assert_eq!(m[1]["content"], "Reading.");
    assert_eq!(m[1]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(
        m[2]["content"],
        "Image a.png [the image follows in the next user message]"
    );
    assert_eq!(m[3]["content"], "Error: no such file");
    assert_eq!(
        m[4]["content"],
        json!([
            {"type": "text", "text": "Images from the result of tool call c1:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ])
    );
    // A reply without calls carries no reasoning; the server block is not this style's.
    assert_eq!(m[5], json!({"role": "assistant", "content": "A PNG."}));
}

#[test]
fn anthropic_sends_image_blocks_and_signed_thinking_in_order() {
    let b = body(|m, t, r| anthropic_body::render(m, t, false, r));
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 4, "{b}");
    let image = |media: &str, data: &str| json!({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}});
    assert_eq!(
        m[0]["content"],
        json!([
            {"type": "text", "text": "what is this?"},
            image("image/png", "iVBORw0KGgo="),
            image("image/gif", "R0lGODlh"),
            {"type": "text",
             "text": "[image gone.png was not sent: no such file beneath the root]"},
        ])
    );
    let kinds: Vec<&str> = m[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    // The blocks as they came, before the tool_use; reasoning of another kind is left out.
    assert_eq!(
        kinds,
        [
            "thinking",
            "redacted_thinking",
            "text",
            "tool_use",
            "tool_use"
        ]
    );
    assert_eq!(
        m[1]["content"][0],
        json!({"type": "thinking", "thinking": "signed thought", "signature": "SIG+/="})
    );
    assert_eq!(
        m[1]["content"][1],
        json!({"type": "redacted_thinking", "data": "ENCRYPTED"})
    );
    assert_eq!(
        m[2]["content"][0]["content"],
        json!([{"type": "text", "text": "Image a.png"}, image("image/png", "iVBORw0KGgo=")])
    );
    assert_eq!(m[2]["content"][1]["content"], "no such file");
    assert_eq!(
        m[3]["content"],
        json!([
            {"type": "server_tool_use", "id": "srv_1", "name": "web_search",
             "input": {"query": "x"}},
            {"type": "text", "text": "A PNG."},
        ])
    );
}

#[test]
fn ollama_sends_images_beside_the_text() {
    let b = body(ollama_body::render);
    let m = b["messages"].as_array().unwrap();
    assert_eq!(
        m[0],
        json!({"role": "user",
               "content": "what is this?\n[image gone.png was not sent: no such file beneath the root]",
               "images": ["iVBORw0KGgo=", "R0lGODlh"]})
    );
    assert!(m[1].get("thinking").is_none() && !b.to_string().contains("thought"));
    assert_eq!(m[2]["images"], json!(["iVBORw0KGgo="]));
    assert_eq!(m[2]["content"], "Image a.png");
    assert!(m[3].get("images").is_none());
    assert_eq!(m[4], json!({"role": "assistant", "content": "A PNG."}));
}
