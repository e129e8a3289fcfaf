//! Model settings through the engine against the fake server: each style's request carries them
//! in its own spelling, a run's settings replace the client's for that run only, a forced tool
//! choice holds for the turn's first request, and a run's bad settings are refused before any
//! request.

use contenox::{Client, Config, ModelSettings, Outcome, RunOptions, Spelling};
use contenox_conformance::fake;
use contenox_conformance::scenario::{ModelEntry, Style};
use serde_json::{json, Value};

fn config(style: Style, base: &str, root: &std::path::Path, extra: Value) -> Config {
    let mut v = json!({
        "style": style.as_str(),
        "base_url": base,
        "model": "fake",
        "api_key": "test",
        "builtins": ["list"],
        "root": root,
        "max_tokens": 9000,
    });
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(v).unwrap()
}

fn script(v: Value) -> Vec<ModelEntry> {
    serde_json::from_value(v).unwrap()
}

fn settings(v: Value) -> ModelSettings {
    ModelSettings::from_value(&v, Spelling::Snake).unwrap()
}

/// One turn with `extra` options; the bodies the server received.
async fn bodies(style: Style, extra: Value, entries: Value) -> Vec<Value> {
    let root = tempfile::tempdir().unwrap();
    let server = fake::serve(script(entries), style).await.unwrap();
    let client =
        Client::from_config(config(style, &server.base_url(), root.path(), extra)).unwrap();
    let result = client.run("hi").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
    let bodies = server.requests();
    server.shutdown().await;
    bodies
}

#[tokio::test]
async fn every_setting_reaches_each_style_in_its_own_spelling() {
    let common = json!({"temperature": 0.5, "top_p": 0.9, "stop": ["END"],
        "tool_choice": "required", "parallel_tool_calls": false,
        "extra_body": {"x_vendor": {"on": true}}});
    let with = |more: Value| {
        let mut v = common.clone();
        v.as_object_mut()
            .unwrap()
            .extend(more.as_object().unwrap().clone());
        v
    };
    let text = json!([{"text": "done"}]);

    let b = bodies(
        Style::Openai,
        with(json!({"seed": 7, "reasoning": {"effort": "low"}})),
        text.clone(),
    )
    .await;
    let o = &b[0];
    assert_eq!(o["temperature"], json!(0.5));
    assert_eq!(o["top_p"], json!(0.9));
    assert_eq!(o["stop"], json!(["END"]));
    assert_eq!(o["seed"], json!(7));
    assert_eq!(o["tool_choice"], json!("required"));
    assert_eq!(o["parallel_tool_calls"], json!(false));
    assert_eq!(o["reasoning_effort"], json!("low"));
    assert_eq!(o["x_vendor"], json!({"on": true}));
    assert_eq!(o["max_completion_tokens"], json!(9000));

    let b = bodies(
        Style::Anthropic,
        json!({"temperature": 0.5, "top_p": 0.9, "top_k": 20, "stop": ["END"],
            "tool_choice": {"name": "list"}, "parallel_tool_calls": false,
            "extra_body": {"metadata": {"user_id": "u1"}}}),
        text.clone(),
    )
    .await;
    let a = &b[0];
    assert_eq!(a["temperature"], json!(0.5));
    assert_eq!(a["top_p"], json!(0.9));
    assert_eq!(a["top_k"], json!(20));
    assert_eq!(a["stop_sequences"], json!(["END"]));
    assert_eq!(
        a["tool_choice"],
        json!({"type": "tool", "name": "list", "disable_parallel_tool_use": true})
    );
    assert_eq!(a["metadata"], json!({"user_id": "u1"}));
    assert!(a.get("stop").is_none() && a.get("seed").is_none());

    let b = bodies(
        Style::Anthropic,
        json!({"reasoning": {"effort": "medium"}}),
        text.clone(),
    )
    .await;
    assert_eq!(
        b[0]["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );

    let b = bodies(
        Style::Ollama,
        json!({"temperature": 0, "top_p": 0.9, "top_k": 20, "stop": ["END"], "seed": 7,
            "reasoning": {"effort": "high"}, "extra_body": {"options": {"num_ctx": 8192},
            "keep_alive": "5m"}}),
        text,
    )
    .await;
    let l = &b[0];
    assert_eq!(
        l["options"],
        json!({"num_predict": 9000, "temperature": 0.0, "top_p": 0.9, "top_k": 20,
            "stop": ["END"], "seed": 7, "num_ctx": 8192})
    );
    assert_eq!(l["think"], json!("high"));
    assert_eq!(l["keep_alive"], json!("5m"));
}

#[tokio::test]
async fn no_settings_send_no_setting_fields() {
    for style in [
        Style::Openai,
        Style::OpenaiResponses,
        Style::Anthropic,
        Style::Ollama,
    ] {
        let b = bodies(style, json!({}), json!([{"text": "done"}])).await;
        let keys: Vec<&str> = b[0]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        let want: &[&str] = match style {
            Style::Openai => &[
                "max_completion_tokens",
                "messages",
                "model",
                "stream",
                "stream_options",
                "tools",
            ],
            // What the style always sends: no setting among them.
            Style::OpenaiResponses => &[
                "include",
                "input",
                "max_output_tokens",
                "model",
                "store",
                "stream",
                "tools",
            ],
            Style::Anthropic => &["max_tokens", "messages", "model", "stream", "tools"],
            Style::Ollama => &["messages", "model", "options", "stream", "tools"],
        };
        assert_eq!(keys, want, "{style:?}");
        if style == Style::Ollama {
            assert_eq!(b[0]["options"], json!({"num_predict": 9000}));
        }
    }
}

#[tokio::test]
async fn a_forced_choice_holds_for_the_first_request_of_each_turn() {
    let root = tempfile::tempdir().unwrap();
    let entries = script(json!([
        {"tool_calls": [{"id": "c1", "name": "list", "arguments": {}}]},
        {"text": "listed"},
        {"text": "second turn"}
    ]));
    let server = fake::serve(entries, Style::Openai).await.unwrap();
    let client = Client::from_config(config(
        Style::Openai,
        &server.base_url(),
        root.path(),
        json!({"tool_choice": "required", "seed": 3}),
    ))
    .unwrap();
    assert_eq!(client.run("one").await.unwrap().outcome, Outcome::Done);
    assert_eq!(client.run("two").await.unwrap().outcome, Outcome::Done);
    let b = server.requests();
    assert_eq!(b[0]["tool_choice"], json!("required"));
    // After the model called a tool, the turn's next request leaves the choice to it ...
    assert!(b[1].get("tool_choice").is_none(), "{}", b[1]);
    // ... and the next turn forces again; the other settings stay throughout.
    assert_eq!(b[2]["tool_choice"], json!("required"));
    assert!(b.iter().all(|r| r["seed"] == json!(3)));
    server.shutdown().await;
}

#[tokio::test]
async fn a_runs_settings_replace_the_clients_for_that_run_only() {
    let root = tempfile::tempdir().unwrap();
    let entries = script(json!([{"text": "a"}, {"text": "b"}, {"text": "c"}]));
    let server = fake::serve(entries, Style::Anthropic).await.unwrap();
    let client = Client::from_config(config(
        Style::Anthropic,
        &server.base_url(),
        root.path(),
        json!({"temperature": 0.2, "top_k": 5}),
    ))
    .unwrap();
    let run = RunOptions::default().settings(settings(json!({"temperature": 0.9})));
    client.run_with("one", run).await.unwrap();
    let mut stream = client
        .stream_with(
            "two",
            RunOptions::default().settings(settings(json!({"stop": ["X"]}))),
        )
        .unwrap();
    while stream.next_event().await.is_some() {}
    client.run("three").await.unwrap();
    let b = server.requests();
    assert_eq!(
        (&b[0]["temperature"], &b[0]["top_k"]),
        (&json!(0.9), &json!(5))
    );
    assert_eq!(
        (&b[1]["temperature"], &b[1]["stop_sequences"]),
        (&json!(0.2), &json!(["X"]))
    );
    assert_eq!(b[2]["temperature"], json!(0.2));
    assert!(b[2].get("stop_sequences").is_none());
    server.shutdown().await;
}

#[tokio::test]
async fn a_runs_bad_settings_are_refused_before_any_request() {
    let root = tempfile::tempdir().unwrap();
    let server = fake::serve(script(json!([{"text": "a"}])), Style::Anthropic)
        .await
        .unwrap();
    let client = Client::from_config(config(
        Style::Anthropic,
        &server.base_url(),
        root.path(),
        json!({"temperature": 0.2}),
    ))
    .unwrap();
    let refused = |v: Value| RunOptions::default().settings(settings(v));
    let e = client
        .run_with("x", refused(json!({"seed": 1})))
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid configuration: settings.seed: style \"anthropic\" has no seed"
    );
    // Checked with the client's settings beside them: the client's temperature and the run's
    // thinking cannot go together.
    let e = client
        .stream_with("x", refused(json!({"reasoning": {"budget_tokens": 2048}})))
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("settings.temperature: cannot be set beside reasoning"),
        "{e}"
    );
    assert_eq!(server.requests.len(), 0);
    // And the client is fine for the next run.
    assert_eq!(client.run("y").await.unwrap().outcome, Outcome::Done);
    server.shutdown().await;
}

#[tokio::test]
async fn tool_choice_is_not_sent_without_tools() {
    let b = bodies(
        Style::Openai,
        json!({"builtins": [], "tool_choice": "none", "parallel_tool_calls": true}),
        json!([{"text": "done"}]),
    )
    .await;
    assert!(b[0].get("tools").is_none());
    assert!(b[0].get("tool_choice").is_none() && b[0].get("parallel_tool_calls").is_none());
}

#[test]
fn a_config_with_settings_a_style_lacks_is_refused_at_creation() {
    let root = tempfile::tempdir().unwrap();
    for (style, extra, message) in [
        (
            Style::Openai,
            json!({"top_k": 3}),
            "top_k: style \"openai\" has no top_k",
        ),
        (
            Style::Ollama,
            json!({"tool_choice": "auto"}),
            "tool_choice: style \"ollama\" has no tool_choice",
        ),
        (
            Style::Openai,
            json!({"extra_body": {"messages": []}}),
            "extra_body.messages: may not be set",
        ),
        (
            Style::Openai,
            json!({"prompt_cache": false}),
            "prompt_cache: style \"openai\" has no cache breakpoints",
        ),
    ] {
        let cfg = config(style, "http://127.0.0.1:9", root.path(), extra);
        let e = Client::from_config(cfg).err().unwrap().to_string();
        assert!(e.contains(message), "{e}");
    }
}
