//! The engine against the fake server over loopback HTTP: list_models per style, and the error
//! a turn ends with once retries run out.

use contenox::{list_models, Client, Config, Outcome};
use contenox_conformance::fake;
use contenox_conformance::scenario::{ModelEntry, Style};
use serde_json::json;

fn config(style: Style, base: &str, root: &std::path::Path) -> Config {
    serde_json::from_value(json!({
        "style": style.as_str(),
        "base_url": base,
        "model": "fake",
        "api_key": "test",
        "builtins": [],
        "root": root,
        "retry": {"initial_backoff_ms": 1, "max_backoff_ms": 2}
    }))
    .unwrap()
}

#[tokio::test]
async fn list_models_speaks_every_style() {
    let root = tempfile::tempdir().unwrap();
    for style in [Style::Openai, Style::Anthropic, Style::Ollama] {
        let server = fake::serve(Vec::new(), style).await.unwrap();
        let models = list_models(&config(style, &server.base_url(), root.path()))
            .await
            .unwrap_or_else(|e| panic!("{style:?}: {e}"));
        assert_eq!(models.len(), 1, "{style:?}");
        assert_eq!(models[0].id, "fake", "{style:?}");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn exhausted_retries_name_the_status_and_quote_the_body() {
    let root = tempfile::tempdir().unwrap();
    let entries: Vec<ModelEntry> = serde_json::from_value(json!([
        {"error": {"status": 503, "body": "the fleet is on fire"}},
        {"error": {"status": 503, "body": "the fleet is on fire"}},
        {"error": {"status": 503, "body": "the fleet is on fire"}},
        {"error": {"status": 503, "body": "the fleet is on fire"}}
    ]))
    .unwrap();
    let server = fake::serve(entries, Style::Openai).await.unwrap();
    let client =
        Client::from_config(config(Style::Openai, &server.base_url(), root.path())).unwrap();
    let mut run = client.stream("hi").unwrap();
    let mut retries = 0;
    while let Some(e) = run.next_event().await {
        if e.kind() == "retry" {
            retries += 1;
        }
    }
    let result = run.result().await.unwrap();
    assert_eq!(result.outcome, Outcome::Error, "{:?}", result.error);
    assert_eq!(retries, 3, "{:?}", result.error);
    let error = result.error.unwrap();
    assert!(error.contains("HTTP 503"), "{error}");
    assert!(error.contains("the fleet is on fire"), "{error}");
    assert_eq!(server.requests.len(), 4);
    // The prompt stays in the transcript; there is no half answer.
    assert_eq!(result.transcript.messages.len(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn unreachable_server_is_an_error_outcome_not_a_panic() {
    let root = tempfile::tempdir().unwrap();
    // A port nobody listens on: bind, read the port, close.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut cfg = config(
        Style::Anthropic,
        &format!("http://127.0.0.1:{port}"),
        root.path(),
    );
    cfg.retry.max_retries = 1;
    let client = Client::from_config(cfg).unwrap();
    let result = client.run("hi").await.unwrap();
    assert_eq!(result.outcome, Outcome::Error);
    assert!(result.error.unwrap().contains("could not reach"));
}

/// A prompt of text and an image reaches each style's request as that API takes images:
/// anthropic an `image` block (base64 source), openai an `image_url` data URL, ollama `images`.
#[tokio::test]
async fn an_image_prompt_reaches_every_style_s_request() {
    let root = tempfile::tempdir().unwrap();
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
    let image: contenox::Image =
        serde_json::from_value(json!({"media_type": "image/png", "data": png})).unwrap();
    for style in [
        Style::Openai,
        Style::OpenaiResponses,
        Style::Anthropic,
        Style::Ollama,
    ] {
        let entries: Vec<ModelEntry> =
            serde_json::from_value(json!([{"text": "A red square."}])).unwrap();
        let server = fake::serve(entries, style).await.unwrap();
        let client = Client::from_config(config(style, &server.base_url(), root.path())).unwrap();
        let prompt = vec![
            contenox::Part::text("What is this?"),
            contenox::Part::Image(image.clone()),
        ];
        let r = client.run(prompt).await.unwrap();
        assert_eq!(r.outcome, Outcome::Done, "{style:?}: {:?}", r.error);
        let requests = server.requests();
        let list = if style == Style::OpenaiResponses {
            "input"
        } else {
            "messages"
        };
        let user = &requests[0][list]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .unwrap_or_else(|| panic!("{style:?}: no user message"))
            .clone();
        match style {
            Style::Anthropic => {
                assert_eq!(
                    user["content"][0],
                    json!({"type": "text", "text": "What is this?"})
                );
                // (with prompt caching's breakpoint on the newest block beside it)
                assert_eq!(user["content"][1]["type"], "image", "{user}");
                assert_eq!(
                    user["content"][1]["source"],
                    json!({"type": "base64", "media_type": "image/png", "data": png}),
                    "{user}"
                );
            }
            Style::Openai => {
                let parts = user["content"].as_array().unwrap();
                assert!(
                    parts.contains(&json!({"type": "text", "text": "What is this?"})),
                    "{user}"
                );
                let url = parts
                    .iter()
                    .find(|p| p["type"] == "image_url")
                    .unwrap_or_else(|| panic!("no image_url: {user}"))["image_url"]["url"]
                    .clone();
                assert_eq!(url, json!(format!("data:image/png;base64,{png}")));
            }
            Style::Ollama => {
                assert_eq!(user["content"], "What is this?", "{user}");
                assert_eq!(user["images"], json!([png]), "{user}");
            }
            Style::OpenaiResponses => {
                assert_eq!(
                    user["content"],
                    json!([{"type": "input_text", "text": "What is this?"},
                           {"type": "input_image", "image_url": format!("data:image/png;base64,{png}")}]),
                    "{user}"
                );
            }
        }
        server.shutdown().await;
    }
}

/// An image given by path is read beneath the root when each request is built (its media type
/// from its bytes, not its name): the request carries the bytes, the transcript the path.
#[tokio::test]
async fn an_image_prompt_by_path_sends_the_file_s_bytes() {
    let root = tempfile::tempdir().unwrap();
    // A GIF named .png: the bytes decide.
    let gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x00;";
    std::fs::create_dir(root.path().join("shots")).unwrap();
    std::fs::write(root.path().join("shots/login.png"), gif).unwrap();
    let contenox::Image::Data { data: b64, .. } = contenox::Image::from_bytes(gif, None).unwrap()
    else {
        unreachable!()
    };
    let entries: Vec<ModelEntry> =
        serde_json::from_value(json!([{"text": "A login form."}])).unwrap();
    let server = fake::serve(entries, Style::Anthropic).await.unwrap();
    let client =
        Client::from_config(config(Style::Anthropic, &server.base_url(), root.path())).unwrap();
    let prompt = contenox::Prompt::from_json(&json!([
        {"type": "text", "text": "What is this?"},
        {"type": "image", "path": "shots/login.png"}
    ]))
    .unwrap();
    let r = client.run(prompt).await.unwrap();
    assert_eq!(r.outcome, Outcome::Done, "{:?}", r.error);
    let requests = server.requests();
    let user = requests[0]["messages"][0].clone();
    assert_eq!(
        user["content"][1]["source"],
        json!({"type": "base64", "media_type": "image/gif", "data": b64}),
        "{user}"
    );
    assert_eq!(
        r.transcript.messages[0].images().next(),
        Some(&contenox::Image::Path {
            path: "shots/login.png".into()
        })
    );
    server.shutdown().await;
}

/// A prompt's image path outside the root, missing, or not an image is refused before the turn
/// starts, as a configuration error naming the part: no request is sent.
#[tokio::test]
async fn a_prompt_image_path_outside_the_root_or_not_an_image_is_refused() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(outer.path().join("secret.png"), b"\x89PNG\r\n\x1a\nsecret").unwrap();
    std::fs::write(root.join("notes.png"), b"just text").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(outer.path().join("secret.png"), root.join("link.png")).unwrap();
    let server = fake::serve(Vec::new(), Style::Openai).await.unwrap();
    let client = Client::from_config(config(Style::Openai, &server.base_url(), &root)).unwrap();
    let mut cases = vec![
        ("../secret.png", "outside"),
        ("missing.png", "missing"),
        ("notes.png", "not a png, jpeg, gif or webp"),
    ];
    if cfg!(unix) {
        cases.push(("link.png", "outside"));
    }
    for (path, why) in cases {
        let prompt = contenox::Prompt::from_json(&json!([
            {"type": "text", "text": "look"},
            {"type": "image", "path": path}
        ]))
        .unwrap();
        let err = client.run(prompt).await.unwrap_err();
        assert_eq!(err.kind(), contenox::ErrorKind::Config, "{path}: {err}");
        let text = err.to_string();
        assert!(text.contains("prompt[1].path"), "{path}: {text}");
        assert!(text.to_lowercase().contains(why), "{path}: {text}");
    }
    assert_eq!(server.requests().len(), 0);
    server.shutdown().await;
}

/// Bad prompt parts are configuration errors naming the part and what is wrong.
#[test]
fn bad_prompt_parts_are_named() {
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
    let cases = [
        (json!(42), "prompt", "string or a list"),
        (json!(["hi"]), "prompt[0]", "object"),
        (
            json!([{"text": "hi"}]),
            "prompt[0].type",
            "needs a \"type\"",
        ),
        (
            json!([{"type": "video", "path": "a.mp4"}]),
            "prompt[0].type",
            "\"text\" or \"image\"",
        ),
        (json!([{"type": "text"}]), "prompt[0].text", "needs its"),
        (
            json!([{"type": "text", "text": 3}]),
            "prompt[0].text",
            "must be a string",
        ),
        (
            json!([{"type": "text", "text": "a", "x": 1}]),
            "prompt[0].x",
            "unknown field",
        ),
        (json!([{"type": "image"}]), "prompt[0]", "needs \"data\""),
        (
            json!([{"type": "image", "data": "!!!"}]),
            "prompt[0].data",
            "not base64",
        ),
        (
            json!([{"type": "image", "data": ""}]),
            "prompt[0].data",
            "empty",
        ),
        (
            json!([{"type": "image", "data": "aGVsbG8="}]),
            "prompt[0].data",
            "not image/png",
        ),
        (
            json!([{"type": "image", "data": png, "media_type": "image/gif"}]),
            "prompt[0].media_type",
            "bytes are image/png",
        ),
        (
            json!([{"type": "image", "data": png, "media_type": "image/tiff"}]),
            "prompt[0].media_type",
            "not one of",
        ),
        (
            json!([{"type": "image", "data": png, "path": "a.png"}]),
            "prompt[0]",
            "not both",
        ),
        (
            json!([{"type": "image", "path": ""}]),
            "prompt[0].path",
            "empty",
        ),
    ];
    for (value, option, why) in cases {
        let err = contenox::Prompt::from_json(&value).unwrap_err();
        assert_eq!(err.kind(), contenox::ErrorKind::Config, "{value}: {err}");
        let contenox::Error::Config(c) = &err else {
            unreachable!()
        };
        assert_eq!(c.option, option, "{value}: {err}");
        assert!(err.to_string().contains(why), "{value}: {err}");
    }
    let ok = contenox::Prompt::from_json(&json!([
        {"type": "text", "text": "a"},
        {"type": "image", "data": png, "media_type": "image/PNG"},
        {"type": "image", "data": png}
    ]))
    .unwrap();
    assert_eq!(ok.images(), 2);
    assert_eq!(
        contenox::Prompt::from_json(&json!("hi")).unwrap().text(),
        "hi"
    );
}

/// A host tool's result may carry images: each is checked as a prompt's are (its bytes an image
/// of the media type given) and sent; one that is not is the call's error result naming why.
#[tokio::test]
async fn a_host_tool_s_images_are_checked_and_sent() {
    use contenox::{async_trait, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

    struct Shot(&'static str);
    #[async_trait]
    impl Tool for Shot {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new(self.0, "A screenshot.", json!({"type": "object"}))
        }
        async fn call(
            &self,
            _args: serde_json::Value,
            _ctx: ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
            let (media_type, data) = match self.0 {
                "good" => ("image/png", png),
                "mislabelled" => ("image/jpeg", png),
                _ => ("image/png", "aGVsbG8="),
            };
            Ok(
                ToolOutput::text("the screen").with_image(contenox::Image::Data {
                    media_type: media_type.into(),
                    data: data.into(),
                }),
            )
        }
    }
    let root = tempfile::tempdir().unwrap();
    let entries: Vec<ModelEntry> = serde_json::from_value(json!([
        {"tool_calls": [{"id": "c1", "name": "good", "arguments": {}},
                        {"id": "c2", "name": "mislabelled", "arguments": {}},
                        {"id": "c3", "name": "not_an_image", "arguments": {}}]},
        {"text": "seen"}
    ]))
    .unwrap();
    let server = fake::serve(entries, Style::Anthropic).await.unwrap();
    let client =
        Client::from_config(config(Style::Anthropic, &server.base_url(), root.path())).unwrap();
    for name in ["good", "mislabelled", "not_an_image"] {
        client.register(std::sync::Arc::new(Shot(name))).unwrap();
    }
    let r = client.run("look").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done, "{:?}", r.error);
    let requests = server.requests();
    let results: Vec<serde_json::Value> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[0]["content"][1]["type"], "image", "{}", results[0]);
    assert_eq!(results[0]["is_error"], false);
    let text = |r: &serde_json::Value| r["content"].to_string();
    assert_eq!(results[1]["is_error"], true);
    assert!(
        text(&results[1]).contains("bytes are image/png, not image/jpeg"),
        "{}",
        results[1]
    );
    assert_eq!(results[2]["is_error"], true);
    assert!(
        text(&results[2]).contains("not a PNG, JPEG, GIF or WebP"),
        "{}",
        results[2]
    );
    assert!(!text(&results[2]).contains("\"image\""), "{}", results[2]);
    server.shutdown().await;
}
