//! The turn loop on the scripted style: calls, gate, asks, cancel, max_turns, transcript.

use std::sync::Arc;
use std::time::Duration;

use contenox::{
    async_trait, tool_fn, Answer, CancellationToken, Client, Decision, Event, Hints, Hooks,
    HostError, Message, Outcome, PendingRequest, ScriptEntry, ToolCallEvent, ToolOutput, ToolSpec,
    Transcript, WaitFor,
};
use serde_json::json;

fn echo() -> Arc<contenox::FnTool> {
    Arc::new(tool_fn(
        ToolSpec::new(
            "echo",
            "Echo.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        )
        .with_hints(Hints::read_only()),
        |args, _ctx| async move { Ok(ToolOutput::text(args.to_string())) },
    ))
}

fn results(t: &Transcript) -> Vec<(String, String, bool)> {
    t.messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                call_id, is_error, ..
            } => Some((call_id.clone(), m.text().into_owned(), *is_error)),
            _ => None,
        })
        .collect()
}

struct AskWrites;
#[async_trait]
impl Hooks for AskWrites {
    async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
        Ok(if call.hints.read_only == Some(true) {
            Decision::Allow
        } else {
            Decision::Ask(PendingRequest::new("approval", "ok?"))
        })
    }
}

struct Never;
#[async_trait]
impl WaitFor for Never {
    async fn wait_for(
        &self,
        _r: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        cancel.cancelled().await;
        Err("cancelled".into())
    }
}

#[tokio::test]
async fn echo_roundtrip_and_transcript_restore() {
    let dir = tempfile::tempdir().unwrap();
    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", "echo", json!({"text": "hi"})),
            ScriptEntry::text("done"),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .tool(echo())
        .build()
        .unwrap();
    let mut run = client.stream("go").unwrap();
    let mut kinds = Vec::new();
    while let Some(e) = run.next_event().await {
        kinds.push(e.kind());
    }
    let result = run.result().await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    assert_eq!(result.final_text, "done");
    assert_eq!(kinds.first(), Some(&"turn_start"));
    assert_eq!(kinds.last(), Some(&"turn_end"));
    assert!(kinds.contains(&"tool_start"));
    let r = results(&result.transcript);
    assert_eq!(r.len(), 1);
    assert!(r[0].1.contains("hi") && !r[0].2);

    let saved = result.transcript.to_json();
    let restored = Transcript::from_json(&saved).unwrap();
    assert_eq!(restored, result.transcript);
    let other = Client::builder()
        .script(vec![ScriptEntry::text("again")])
        .root(dir.path())
        .build()
        .unwrap();
    other.set_transcript(restored).unwrap();
    let r2 = other.run("more").await.unwrap();
    assert_eq!(r2.transcript.messages.len(), 6);
}

#[tokio::test]
async fn pending_ask_is_cancelled_with_a_valid_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", "write", json!({"path": "x.txt", "content": "x"})),
            ScriptEntry::text("unreachable"),
        ])
        .root(dir.path())
        .builtins(["write"])
        .hooks(Arc::new(AskWrites))
        .wait_for(Arc::new(Never))
        .build()
        .unwrap();
    let mut run = client.stream("write").unwrap();
    while let Some(e) = run.next_event().await {
        if let Event::Pending { request, .. } = &e {
            assert_eq!(request.name, "write");
            assert_eq!(request.arguments["path"], "x.txt");
            run.cancel();
        }
    }
    let result = run.result().await.unwrap();
    assert_eq!(result.outcome, Outcome::Cancelled);
    assert!(!dir.path().join("x.txt").exists());
    result.transcript.validate().unwrap();
    assert_eq!(results(&result.transcript)[0].1, "cancelled");
}

#[tokio::test]
async fn ask_timeout_denies_with_the_sentence() {
    struct AskFast;
    #[async_trait]
    impl Hooks for AskFast {
        async fn before_tool(&self, _c: &ToolCallEvent) -> Result<Decision, HostError> {
            Ok(Decision::Ask(
                PendingRequest::new("input", "?").with_timeout_ms(20),
            ))
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", "echo", json!({})),
            ScriptEntry::text("ok"),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .tool(echo())
        .hooks(Arc::new(AskFast))
        .wait_for(Arc::new(Never))
        .build()
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(5), client.run("x"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    let r = results(&result.transcript);
    assert_eq!(r[0].1, contenox::ASK_TIMEOUT_DENIAL);
    assert!(r[0].2);
}

#[tokio::test]
async fn max_turns_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", "echo", json!({})),
            ScriptEntry::tool_call("c2", "echo", json!({})),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .tool(echo())
        .max_turns(2)
        .build()
        .unwrap();
    let result = client.run("x").await.unwrap();
    assert_eq!(result.outcome, Outcome::MaxTurns);
    let r = results(&result.transcript);
    assert_eq!(r[1].1, contenox::MAX_TURNS_RESULT);
    // The script is used up: the next turn ends with `error`, not an Err.
    let next = client.run("again").await.unwrap();
    assert_eq!(next.outcome, Outcome::Error);
    assert!(next.error.unwrap().contains("script exhausted"));
}

#[tokio::test]
async fn a_run_allowlist_only_narrows() {
    let dir = tempfile::tempdir().unwrap();
    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", "read", json!({"path": "x"})),
            ScriptEntry::text("ok"),
            ScriptEntry::tool_call("c2", "write", json!({"path": "x", "content": "y"})),
            ScriptEntry::text("ok"),
        ])
        .root(dir.path())
        .builtins(["read", "write", "edit"])
        .allow(["*", "!write"])
        .build()
        .unwrap();
    // The run allows only `edit`: `read` becomes unknown for this run.
    let narrowed = contenox::RunOptions::default().allow(&["edit"]).unwrap();
    let r = client.run_with("read", narrowed).await.unwrap();
    let res = results(&r.transcript);
    assert!(res[0].2 && res[0].1.contains("unknown tool"), "{res:?}");
    // A run cannot widen: `write` stays hidden even when the run allows `*`.
    let widened = contenox::RunOptions::default().allow(&["*"]).unwrap();
    let r = client.run_with("write", widened).await.unwrap();
    let res = results(&r.transcript);
    assert!(res[1].2 && res[1].1.contains("unknown tool"), "{res:?}");
    assert!(!dir.path().join("x").exists());
}

#[tokio::test]
async fn the_event_stream_ends_at_turn_end_even_if_a_tool_kept_its_context() {
    let kept: Arc<std::sync::Mutex<Vec<contenox::ToolContext>>> = Arc::default();
    let keeper = kept.clone();
    let hoard = Arc::new(tool_fn(
        ToolSpec::new("hoard", "Keeps its context.", json!({"type": "object"})),
        move |_args, ctx| {
            keeper.lock().unwrap().push(ctx);
            async { Ok(ToolOutput::text("kept")) }
        },
    ));
    let dir = tempfile::tempdir().unwrap();
    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", "hoard", json!({})),
            ScriptEntry::text("done"),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .tool(hoard)
        .build()
        .unwrap();
    let mut run = client.stream("go").unwrap();
    let drained = tokio::time::timeout(Duration::from_secs(5), async {
        let mut last = None;
        while let Some(e) = run.next_event().await {
            last = Some(e.kind());
        }
        last
    })
    .await
    .expect("the stream ends after turn_end");
    assert_eq!(drained, Some("turn_end"));
    assert_eq!(kept.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_prompt_of_parts_starts_the_turn_with_its_text_and_images() {
    let client = Client::builder()
        .script(vec![ScriptEntry::text("a red square")])
        .builtins(Vec::<String>::new())
        .build()
        .unwrap();
    let png = contenox::Image::from_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", None).unwrap();
    let prompt = vec![
        contenox::Part::text("What is this?"),
        contenox::Part::Image(png.clone()),
    ];
    let mut run = client.stream(prompt.clone()).unwrap();
    let mut started = None;
    while let Some(event) = run.next_event().await {
        if let Event::TurnStart { prompt } = event {
            started = Some(prompt);
        }
    }
    let r = run.result().await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    assert_eq!(started.as_deref(), Some("What is this?"));
    assert_eq!(r.transcript.messages[0], Message::User { content: prompt });
    assert_eq!(r.transcript.messages[0].images().next(), Some(&png));
}

#[tokio::test]
async fn a_prompt_with_a_part_of_the_models_is_refused_before_the_turn() {
    let client = Client::builder()
        .script(vec![ScriptEntry::text("unreachable")])
        .builtins(Vec::<String>::new())
        .build()
        .unwrap();
    let call = contenox::ToolCall {
        id: "c1".into(),
        name: "echo".into(),
        arguments: json!({}),
        raw_arguments: false,
        via: None,
    };
    let prompt = vec![contenox::Part::text("hi"), contenox::Part::ToolCall(call)];
    let e = client.run(prompt).await.unwrap_err();
    match e {
        contenox::Error::Config(c) => {
            assert_eq!(c.option, "prompt[1]");
            assert!(c.reason.contains("tool_call"), "{}", c.reason);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        client.transcript().messages.is_empty(),
        "nothing was appended"
    );
}
