//! Error kinds: each misuse has its own variant, configuration errors name the option in the
//! host's spelling, and transport errors keep their cause chain.

use contenox::{Client, Config, ConfigError, Error, ScriptEntry, Spelling, Transcript};
use serde_json::json;

fn scripted(dir: &std::path::Path, script: Vec<ScriptEntry>) -> Client {
    Client::builder()
        .script(script)
        .root(dir)
        .builtins(Vec::<String>::new())
        .build()
        .unwrap()
}

fn config_error(e: Error) -> ConfigError {
    match e {
        Error::Config(c) => c,
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_closed_client_says_closed() {
    let dir = tempfile::tempdir().unwrap();
    let client = scripted(dir.path(), vec![ScriptEntry::text("hi")]);
    client.close();
    assert!(matches!(client.run("x").await, Err(Error::Closed)));
    assert!(matches!(client.stream("x"), Err(Error::Closed)));
}

#[tokio::test]
async fn replacing_the_transcript_mid_turn_is_busy_and_a_bad_one_is_a_transcript_error() {
    let dir = tempfile::tempdir().unwrap();
    let stall = ScriptEntry {
        stall: true,
        ..Default::default()
    };
    let client = scripted(dir.path(), vec![stall]);
    let run = client.stream("stall").unwrap();
    // The turn holds the client once its first event is out.
    assert!(!run.next_batch().await.is_empty());
    let err = client.set_transcript(Transcript::default()).unwrap_err();
    assert!(matches!(err, Error::Busy(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "cannot replace the transcript while a turn runs"
    );
    run.cancel();
    run.result().await.unwrap();
    client.set_transcript(Transcript::default()).unwrap();

    let bad = r#"{"messages": [{"role": "tool", "call_id": "x", "name": "y", "content": "z", "is_error": false}]}"#;
    let err = Transcript::from_json(bad).unwrap_err();
    assert!(matches!(err, Error::Transcript(_)), "{err:?}");
}

#[tokio::test]
async fn a_transcript_with_images_is_refused_by_a_client_whose_model_takes_none() {
    let dir = tempfile::tempdir().unwrap();
    // A transcript with an image, as a client whose model takes images saves it.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
    let saved = json!({"version": 2, "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image", "media_type": "image/png", "data": png}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A pixel."}]}]})
    .to_string();
    let with_image = Transcript::from_json(&saved).unwrap();
    let takes_none = Client::builder()
        .script(vec![ScriptEntry::text("hi")])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .images(false)
        .build()
        .unwrap();
    let err = takes_none.set_transcript(with_image.clone()).unwrap_err();
    assert!(matches!(err, Error::Transcript(_)), "{err:?}");
    assert!(err.to_string().contains("holds 1 image(s)"), "{err}");
    // Nothing was replaced, and the same transcript without its image is taken.
    assert!(takes_none.transcript().messages.is_empty());
    let text_only = json!({"version": 2, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A pixel."}]}]})
    .to_string();
    takes_none
        .set_transcript(Transcript::from_json(&text_only).unwrap())
        .unwrap();
    assert_eq!(takes_none.transcript().messages.len(), 2);
    // A client whose model takes images restores it as it was.
    let takes = scripted(dir.path(), vec![ScriptEntry::text("hi")]);
    takes.set_transcript(with_image).unwrap();
    assert_eq!(takes.transcript().messages[0].images().count(), 1);
}

#[tokio::test]
async fn transport_errors_keep_their_cause_chain() {
    // A port nobody listens on: bind, note it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = Config {
        base_url: Some(format!("http://127.0.0.1:{port}/v1")),
        model: Some("m".into()),
        api_key: Some("k".into()),
        ..Default::default()
    };
    let err = contenox::list_models(&config).await.unwrap_err();
    let Error::Transport { message, source } = &err else {
        panic!("expected a transport error, got {err:?}");
    };
    assert_eq!(message, "could not reach the model server");
    let mut causes = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = source
        .as_deref()
        .map(|s| s as &(dyn std::error::Error + 'static));
    let mut io = false;
    while let Some(c) = cur {
        io |= c.downcast_ref::<std::io::Error>().is_some();
        causes.push(c.to_string());
        cur = c.source();
    }
    assert!(causes.len() >= 2, "{causes:?}");
    assert!(io, "the chain reaches the I/O error: {causes:?}");
}

#[test]
fn configuration_errors_name_option_value_and_what_is_allowed() {
    let e =
        config_error(Config::from_value(&json!({"style": "nope"}), Spelling::Snake).unwrap_err());
    assert_eq!(e.option, "style");
    assert_eq!(e.value.as_deref(), Some("\"nope\""));
    assert_eq!(
        e.reason,
        "is not one of openai, openai-responses, anthropic, ollama, scripted"
    );

    let e = config_error(
        Config::from_value(
            &json!({"style": "openai", "model": "m", "baseUrl": "x"}),
            Spelling::Camel,
        )
        .unwrap_err(),
    );
    assert_eq!(e.option, "");
    assert!(
        e.reason.starts_with("unknown option \"baseUrl\""),
        "{}",
        e.reason
    );

    let e = config_error(
        Config::from_value(
            &json!({"model": "m", "base_url": "not a url"}),
            Spelling::Camel,
        )
        .unwrap_err(),
    );
    assert_eq!(e.option, "baseUrl");
    assert_eq!(e.value.as_deref(), Some("\"not a url\""));

    let e = config_error(
        Config::from_json(r#"{"style": "scripted", "script": [{"txt": "x"}]}"#).unwrap_err(),
    );
    assert_eq!(e.option, "script[0]");
    assert!(e.reason.starts_with("unknown key \"txt\""), "{}", e.reason);

    let syntax = Config::from_json("{not json").unwrap_err().to_string();
    assert!(syntax.contains("not valid JSON"), "{syntax}");
}

#[test]
fn the_builder_checks_the_whole_config_in_the_hosts_spelling() {
    let dir = tempfile::tempdir().unwrap();
    // A bad base_url fails at creation (it used to be tried, and retried, at the first turn).
    let e = Client::builder()
        .base_url("not a url")
        .model("m")
        .root(dir.path())
        .spelling(Spelling::Camel)
        .build()
        .err()
        .expect("refused");
    assert_eq!(config_error(e).option, "baseUrl");
    // Empty script entries are refused.
    let e = Client::builder()
        .script(vec![ScriptEntry::text("ok"), ScriptEntry::default()])
        .root(dir.path())
        .build()
        .err()
        .expect("refused");
    assert_eq!(config_error(e).option, "script[1]");
    // Options checked by later parts name themselves too.
    let e = Client::builder()
        .script(vec![ScriptEntry::text("ok")])
        .root(dir.path())
        .builtins(["nope"])
        .build()
        .err()
        .expect("refused");
    let e = config_error(e);
    assert_eq!(e.option, "builtins");
    assert!(
        e.reason.contains("unknown builtin \"nope\""),
        "{}",
        e.reason
    );
    let e = Client::builder()
        .script(vec![ScriptEntry::text("ok")])
        .root(dir.path().join("missing"))
        .spelling(Spelling::Camel)
        .build()
        .err()
        .expect("refused");
    assert_eq!(config_error(e).option, "root");
    let e = Client::builder()
        .script(vec![ScriptEntry::text("ok")])
        .root(dir.path())
        .allow(["["])
        .build()
        .err()
        .expect("refused");
    assert_eq!(config_error(e).option, "allow");
}
