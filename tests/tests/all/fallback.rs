//! Fallback models across styles, against two fake servers over loopback HTTP: an anthropic
//! model that thought (a signed thinking block) and called a tool, then answers 529, and an
//! openai fallback that finishes the turn. The openai request carries the conversation without
//! anthropic's thinking; the next turn goes back to anthropic with its thinking intact.

use contenox::{Client, Config, Outcome};
use contenox_conformance::fake;
use contenox_conformance::scenario::{ModelEntry, Style};
use serde_json::{json, Value};

fn entries(v: Value) -> Vec<ModelEntry> {
    serde_json::from_value(v).unwrap()
}

#[tokio::test]
async fn anthropic_falls_back_to_openai_without_its_thinking() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "the notes").unwrap();
    let anthropic = fake::serve(
        entries(json!([
            {"reasoning": [{"text": "PRIVATE-THOUGHT about the notes"}],
             "tool_calls": [{"id": "toolu_1", "name": "read", "arguments": {"path": "notes.txt"}}],
             "usage": {"input_tokens": 11, "output_tokens": 3}},
            {"error": {"status": 529, "body": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}}},
            {"error": {"status": 529, "body": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}}},
            {"text": "back on claude", "usage": {"input_tokens": 40, "output_tokens": 4}}
        ])),
        Style::Anthropic,
    )
    .await
    .unwrap();
    let openai = fake::serve(
        entries(json!([
            {"text": "the notes say: the notes", "usage": {"input_tokens": 20, "output_tokens": 7}}
        ])),
        Style::Openai,
    )
    .await
    .unwrap();
    let config: Config = serde_json::from_value(json!({
        "style": "anthropic",
        "base_url": anthropic.base_url(),
        "model": "claude-fake",
        "api_key": "anthropic-key",
        "headers": {"x-only-for-anthropic": "MARKER-header"},
        "builtins": ["read"],
        "root": root.path(),
        "retry": {"max_retries": 1, "initial_backoff_ms": 1, "max_backoff_ms": 2},
        "fallback": [{"style": "openai", "base_url": openai.base_url(), "model": "gpt-fake",
                      "api_key": "openai-key"}]
    }))
    .unwrap();
    let client = Client::from_config(config).unwrap();

    let mut run = client.stream("Read notes.txt.").unwrap();
    let mut events = Vec::new();
    while let Some(e) = run.next_event().await {
        events.push(serde_json::to_value(&e).unwrap());
    }
    let result = run.result().await.unwrap();
    assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
    assert_eq!(result.final_text, "the notes say: the notes");
    // The turn's usage is both models' together; each usage event names its model.
    assert_eq!(
        (result.usage.input_tokens, result.usage.output_tokens),
        (31, 10)
    );
    let usage_models: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "usage")
        .map(|e| e["model"].as_str().unwrap())
        .collect();
    assert_eq!(usage_models, ["claude-fake", "gpt-fake"]);
    let fallbacks: Vec<&Value> = events.iter().filter(|e| e["type"] == "fallback").collect();
    assert_eq!(fallbacks.len(), 1, "{events:#?}");
    assert_eq!(fallbacks[0]["from_model"], "claude-fake");
    assert_eq!(fallbacks[0]["to_model"], "gpt-fake");
    assert_eq!(fallbacks[0]["status"], 529);
    assert!(
        fallbacks[0]["error"]
            .as_str()
            .unwrap()
            .contains("after 2 attempts"),
        "{}",
        fallbacks[0]
    );

    // The openai model got the conversation in its own wire: the call and its result, no
    // thinking, no signature, none of anthropic's key or headers.
    let sent = openai.requests();
    assert_eq!(sent.len(), 1);
    let body = sent[0].to_string();
    assert_eq!(sent[0]["model"], "gpt-fake");
    assert!(
        body.contains("toolu_1") && body.contains("the notes"),
        "{body}"
    );
    for absent in [
        "PRIVATE-THOUGHT",
        "signature",
        "thinking",
        "reasoning_content",
    ] {
        assert!(!body.contains(absent), "{absent} sent to openai: {body}");
    }

    // The next turn starts on the first model again, which gets its own thinking back.
    let result = client.run("And now?").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
    assert_eq!(result.final_text, "back on claude");
    let sent = anthropic.requests();
    assert_eq!(sent.len(), 4);
    let last = sent[3].to_string();
    assert_eq!(sent[3]["model"], "claude-fake");
    assert!(
        last.contains("PRIVATE-THOUGHT") && last.contains("signature"),
        "{last}"
    );
    assert!(last.contains("the notes say: the notes"), "{last}");
    assert_eq!(openai.requests().len(), 1);
    anthropic.shutdown().await;
    openai.shutdown().await;
}
