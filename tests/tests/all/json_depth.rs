//! Hostile nesting from the model: tool-call arguments nested 200,000 levels deep. serde_json's
//! recursion limit turns them into an error result; with the limit switched off (its
//! `unbounded_depth` feature, which a build dependency such as cargo_metadata turns on for every
//! crate of the same build when it shares the workspace) the parse would overflow the worker's
//! stack and kill the host process instead.

use contenox::{Client, Config, Outcome};
use contenox_conformance::fake;
use contenox_conformance::scenario::{ModelEntry, Style};
use serde_json::json;

#[tokio::test]
async fn deeply_nested_tool_arguments_are_an_error_result_not_a_crash() {
    let deep = "[".repeat(200_000);
    let entries: Vec<ModelEntry> = serde_json::from_value(json!([
        {"tool_calls": [{"id": "call_1", "name": "read", "arguments": deep}]},
        {"text": "recovered"}
    ]))
    .unwrap();
    let server = fake::serve(entries, Style::Openai).await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let config: Config = serde_json::from_value(json!({
        "style": "openai",
        "base_url": server.base_url(),
        "model": "fake",
        "api_key": "test",
        "builtins": ["read"],
        "root": root.path(),
    }))
    .unwrap();
    let client = Client::from_config(config).unwrap();
    let result = client.run("go").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
    assert_eq!(result.final_text, "recovered");
    let requests = server.requests();
    let results: Vec<_> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(results.len(), 1);
    assert!(
        results[0]["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("Error: ")),
        "{}",
        &results[0].to_string()[..200.min(results[0].to_string().len())]
    );
    server.shutdown().await;
}

#[test]
fn serde_json_keeps_its_recursion_limit_in_this_build() {
    // The same property without a model: if any crate of the workspace switched the limit off,
    // this parse would recurse 200,000 levels deep on a 2 MiB test thread.
    let deep = "[".repeat(200_000);
    let err = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
    assert!(err.to_string().contains("recursion limit"), "{err}");
}
