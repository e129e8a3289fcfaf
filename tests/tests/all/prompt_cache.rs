//! Anthropic prompt caching through the engine against the fake server: every request of a
//! tool loop starts with the bytes of the one before (a cache hit needs them byte for byte),
//! the breakpoints move forward, at most four, and the fake's prefix-rule usage shows each
//! request reading what the one before wrote.

use contenox::{Client, Config, Outcome};
use contenox_conformance::fake;
use contenox_conformance::scenario::{ModelEntry, Style};
use serde_json::{json, Value};

const MARK: &str = r#""cache_control":{"type":"ephemeral"},"#;

fn config(base: &str, root: &std::path::Path, extra: Value) -> Config {
    let mut v = json!({
        "style": "anthropic",
        "base_url": base,
        "model": "fake",
        "api_key": "test",
        "builtins": ["list", "read"],
        "system": "You are a careful assistant. Answer in one line.",
        "root": root,
    });
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(v).unwrap()
}

/// A turn of `calls` tool calls (one per request) and a final answer, each counted.
fn tool_loop(calls: usize) -> Vec<ModelEntry> {
    let mut entries: Vec<Value> = (0..calls)
        .map(|i| {
            json!({"tool_calls": [{"id": format!("c{i}"), "name": "list", "arguments": {}}],
                   "usage": "counted"})
        })
        .collect();
    entries.push(json!({"text": "all listed", "usage": "counted"}));
    serde_json::from_value(json!(entries)).unwrap()
}

/// The byte range of the value of top-level `key` in a body (keys sorted, compact).
fn field<'a>(body: &'a str, key: &str) -> &'a str {
    let start = body.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
    let v: Value = serde_json::Deserializer::from_str(&body[start..])
        .into_iter::<Value>()
        .next()
        .unwrap()
        .unwrap();
    &body[start..start + v.to_string().len()]
}

#[tokio::test]
async fn each_request_starts_with_the_bytes_of_the_one_before() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "a").unwrap();
    let server = fake::serve(tool_loop(4), Style::Anthropic).await.unwrap();
    let client = Client::from_config(config(&server.base_url(), root.path(), json!({}))).unwrap();
    let result = client.run("List the files, four times.").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
    let raw: Vec<String> = server
        .requests
        .raw()
        .iter()
        .map(|b| String::from_utf8(b.to_vec()).unwrap())
        .collect();
    assert_eq!(raw.len(), 5);
    for body in &raw {
        assert!(body.matches(MARK).count() <= 4, "{body}");
    }
    // The first and second requests: the second's tools, system prompt and messages start with
    // the first's bytes, breakpoints and all.
    let (one, two) = (&raw[0], &raw[1]);
    assert_eq!(field(one, "tools"), field(two, "tools"));
    assert_eq!(field(one, "system"), field(two, "system"));
    let first = field(one, "messages");
    let first = &first[..first.len() - 1];
    assert!(
        field(two, "messages").starts_with(first),
        "\n{first}\n{}",
        field(two, "messages")
    );
    // Every later pair: the same, with the breakpoints that moved on taken out (the API matches
    // the blocks' content; the markers say where to write and look).
    for pair in raw.windows(2) {
        let (a, b) = (pair[0].replace(MARK, ""), pair[1].replace(MARK, ""));
        assert_eq!(field(&a, "tools"), field(&b, "tools"));
        assert_eq!(field(&a, "system"), field(&b, "system"));
        let earlier = field(&a, "messages");
        assert!(field(&b, "messages").starts_with(&earlier[..earlier.len() - 1]));
    }
    // Where the breakpoints are: the last tool, the system prompt, the newest message and the
    // user message before the newest assistant message.
    let last: Value = serde_json::from_str(&raw[4]).unwrap();
    let tools = last["tools"].as_array().unwrap();
    assert!(tools.last().unwrap().get("cache_control").is_some());
    assert!(tools[0].get("cache_control").is_none());
    assert_eq!(
        last["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let messages = last["messages"].as_array().unwrap();
    let marked: Vec<usize> = (0..messages.len())
        .filter(|&i| {
            messages[i]["content"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b.get("cache_control").is_some())
        })
        .collect();
    assert_eq!(marked, [messages.len() - 3, messages.len() - 1]);

    // The fake's usage: after the first request, each reads what the one before wrote.
    let usage = result.usage;
    assert!(usage.cache_read_input_tokens > 0, "{usage:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn caching_cuts_the_billed_input_and_can_be_turned_off() {
    let root = tempfile::tempdir().unwrap();
    let mut totals = Vec::new();
    for cache in [true, false] {
        let server = fake::serve(tool_loop(6), Style::Anthropic).await.unwrap();
        let client = Client::from_config(config(
            &server.base_url(),
            root.path(),
            json!({"prompt_cache": cache}),
        ))
        .unwrap();
        let result = client.run("List the files.").await.unwrap();
        assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
        let bodies = server.requests();
        let marks = bodies
            .iter()
            .map(|b| b.to_string().matches("cache_control").count())
            .sum::<usize>();
        assert_eq!(marks > 0, cache);
        totals.push(result.usage);
        server.shutdown().await;
    }
    let (on, off) = (totals[0], totals[1]);
    // The same prompt either way; with caching most of it is read from the cache.
    assert_eq!(on.input_tokens, off.input_tokens);
    assert_eq!(
        off.cache_read_input_tokens + off.cache_creation_input_tokens,
        0
    );
    assert!(on.cache_read_input_tokens * 2 > on.input_tokens, "{on:?}");
}
