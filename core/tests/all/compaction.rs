//! Compaction on the scripted style: at a threshold, on demand, on a restored transcript, after
//! a context-length refusal, by a host compactor; failures leave the conversation unchanged.

use std::sync::{Arc, Mutex};

use contenox::{
    async_trait, tool_fn, CancellationToken, Client, CompactNotice, CompactTrigger,
    CompactionConfig, Compactor, Event, Hints, HostError, Message, Outcome, ScriptEntry,
    ScriptError, ToolCall, ToolOutput, ToolSpec, Transcript, Usage, SUMMARY_HEADER,
};
use serde_json::json;

fn with_usage(mut e: ScriptEntry, input: u64, cache_read: u64) -> ScriptEntry {
    e.usage = Some(Usage {
        input_tokens: input,
        output_tokens: 1,
        cache_read_input_tokens: cache_read,
        ..Usage::default()
    });
    e
}

fn error(status: u16, body: &str) -> ScriptEntry {
    ScriptEntry {
        error: Some(ScriptError {
            status,
            retry_after_s: None,
            body: Some(body.into()),
        }),
        ..Default::default()
    }
}

fn echo() -> Arc<contenox::FnTool> {
    Arc::new(tool_fn(
        ToolSpec::new("echo", "Echo.", json!({"type": "object"})).with_hints(Hints::read_only()),
        |args, _ctx| async move { Ok(ToolOutput::text(format!("echo {args}"))) },
    ))
}

fn compaction(threshold: u64, keep_recent: usize) -> CompactionConfig {
    CompactionConfig {
        threshold_tokens: threshold,
        keep_recent,
        instructions: Some("Keep file names.".into()),
    }
}

async fn events_of(client: &Client, prompt: &str) -> (Vec<Event>, contenox::TurnResult) {
    let mut run = client.stream(prompt).unwrap();
    let mut events = Vec::new();
    while let Some(e) = run.next_event().await {
        events.push(e);
    }
    (events, run.result().await.unwrap())
}

fn notices() -> (
    Arc<Mutex<Vec<CompactNotice>>>,
    impl Fn(&CompactNotice) + Send + Sync,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    (seen, move |n: &CompactNotice| {
        s.lock().unwrap().push(n.clone())
    })
}

fn is_summary(m: &Message) -> bool {
    matches!(m, Message::User { .. } if m.text().starts_with(SUMMARY_HEADER))
}

#[tokio::test]
async fn over_the_threshold_the_older_part_becomes_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let (seen, on_compact) = notices();
    // The server reports 900 input tokens of which 880 came from the cache: all 900 count.
    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", "echo", json!({"text": "OLD-TEXT"})),
            with_usage(ScriptEntry::text("first answer"), 900, 880),
            // Turn 2: over 500 before its first request: the summary request, then the answer.
            ScriptEntry::text("The user asked for an echo of OLD-TEXT; done."),
            ScriptEntry::text("second answer"),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .tool(echo())
        .compaction(compaction(500, 1))
        .on_compact(on_compact)
        .build()
        .unwrap();
    let (events, first) = events_of(&client, "echo OLD-TEXT").await;
    assert_eq!(first.outcome, Outcome::Done);
    assert!(!events.iter().any(|e| e.kind() == "compact"));
    let (events, second) = events_of(&client, "and now?").await;
    assert_eq!(second.outcome, Outcome::Done);
    assert_eq!(second.final_text, "second answer");
    let compact = events
        .iter()
        .find_map(|e| match e {
            Event::Compact {
                trigger,
                pre_tokens,
                post_tokens,
                summary,
                ..
            } => Some((*trigger, *pre_tokens, *post_tokens, summary.clone())),
            _ => None,
        })
        .expect("a compact event");
    assert_eq!(compact.0, CompactTrigger::Auto);
    assert!(compact.1 > 900, "pre {}", compact.1);
    assert!(compact.2 < 100, "post {}", compact.2);
    assert_eq!(
        compact.3.as_deref(),
        Some("The user asked for an echo of OLD-TEXT; done.")
    );
    // The compact event comes before the turn's first request.
    let at = |k: &str| events.iter().position(|e| e.kind() == k).unwrap();
    assert!(at("compact") < at("request"));
    // on_compact saw what the event said.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].pre_tokens, seen[0].post_tokens),
        (compact.1, compact.2)
    );
    // The conversation: the summary, the kept prompt, the new answer.
    let t = second.transcript;
    t.validate().unwrap();
    assert!(is_summary(&t.messages[0]));
    assert!(t.messages[1] == Message::user("and now?"));
    assert_eq!(t.messages.len(), 3);
    assert!(!t.to_json().contains("\"OLD-TEXT\""));
}

#[tokio::test]
async fn a_cut_never_separates_a_call_from_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(4_000);
    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", "echo", json!({"text": "FIRST-CALL"})),
            ScriptEntry::tool_call("c2", "echo", json!({"text": big})),
            // Before the third request the context is ~2,000 tokens: compact, keeping 1
            // message, which is c2's result: its call must stay with it.
            ScriptEntry::text("summary of the first call"),
            ScriptEntry::text("done"),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .tool(echo())
        .compaction(compaction(1_000, 1))
        .build()
        .unwrap();
    let result = client.run("go").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
    let t = result.transcript;
    t.validate().unwrap();
    assert_eq!(t.messages.len(), 4);
    assert!(is_summary(&t.messages[0]));
    assert!(t.messages[1].tool_calls().next().unwrap().id == "c2");
    assert!(matches!(&t.messages[2], Message::Tool { call_id, .. } if call_id == "c2"));
    assert!(!t.to_json().contains("FIRST-CALL"));
}

#[tokio::test]
async fn a_restored_transcript_is_measured_and_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let old = Transcript {
        messages: vec![
            Message::user(format!("remember {}", "y".repeat(8_000))),
            Message::assistant("remembered", vec![]),
        ],
    };
    let client = Client::builder()
        .script(vec![
            ScriptEntry::text("The user asked to remember a long text."),
            ScriptEntry::text("ok"),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .compaction(compaction(1_000, 1))
        .build()
        .unwrap();
    client.set_transcript(old).unwrap();
    let (events, result) = events_of(&client, "what was it?").await;
    assert_eq!(result.outcome, Outcome::Done);
    assert_eq!(events.iter().filter(|e| e.kind() == "compact").count(), 1);
    let t = result.transcript;
    assert!(is_summary(&t.messages[0]));
    assert_eq!(t.messages.len(), 3);
}

#[tokio::test]
async fn a_context_length_refusal_is_compacted_and_sent_again_once() {
    let dir = tempfile::tempdir().unwrap();
    let refusal = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let client = Client::builder()
        .script(vec![
            ScriptEntry::text("hello"),
            // Turn 2: refused, summary, sent again.
            error(400, refusal),
            ScriptEntry::text("They greeted each other."),
            ScriptEntry::text("answer after compaction"),
            // Turn 3: refused, summary, refused again: the turn ends with error.
            error(400, refusal),
            ScriptEntry::text("Summary again."),
            error(400, refusal),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .compaction(compaction(1_000_000, 1))
        .build()
        .unwrap();
    client.run("hi").await.unwrap();
    let (events, second) = events_of(&client, "go on").await;
    assert_eq!(second.outcome, Outcome::Done, "{:?}", second.error);
    assert_eq!(second.final_text, "answer after compaction");
    assert_eq!(events.iter().filter(|e| e.kind() == "compact").count(), 1);
    assert!(is_summary(&second.transcript.messages[0]));
    let third = client.run("more").await.unwrap();
    assert_eq!(third.outcome, Outcome::Error);
    let why = third.error.unwrap();
    assert!(why.contains("context_length_exceeded"), "{why}");
    assert!(
        why.contains("refused again after the conversation was compacted"),
        "{why}"
    );
}

#[tokio::test]
async fn a_refusal_without_the_option_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let client = Client::builder()
        .script(vec![error(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#,
        )])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .build()
        .unwrap();
    let result = client.run("hi").await.unwrap();
    assert_eq!(result.outcome, Outcome::Error);
    let why = result.error.unwrap();
    assert!(
        why.contains("prompt is too long") && why.contains("`compaction`"),
        "{why}"
    );
}

#[tokio::test]
async fn a_failed_summary_leaves_the_conversation_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let client = Client::builder()
        .script(vec![
            with_usage(ScriptEntry::text("hello"), 5_000, 0),
            error(400, r#"{"error":{"message":"bad request"}}"#),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .compaction(compaction(1_000, 1))
        .build()
        .unwrap();
    client.run("hi").await.unwrap();
    let before = client.transcript();
    let result = client.run("go on").await.unwrap();
    assert_eq!(result.outcome, Outcome::Error);
    let why = result.error.unwrap();
    assert!(
        why.starts_with("compaction failed: the summary request failed"),
        "{why}"
    );
    // The prompt of the failed turn is there; nothing else changed.
    let mut expected = before.messages.clone();
    expected.push(Message::user("go on"));
    assert_eq!(result.transcript.messages, expected);
}

#[tokio::test]
async fn compact_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let (seen, on_compact) = notices();
    let client = Client::builder()
        .script(vec![
            ScriptEntry::text("one"),
            with_usage(ScriptEntry::text("The user said hi."), 40, 0),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .on_compact(on_compact)
        .build()
        .unwrap();
    // Nothing to compact yet.
    assert_eq!(client.compact().await.unwrap(), None);
    client.run("hi").await.unwrap();
    // keep_recent defaults to 4: two messages are not enough.
    assert_eq!(client.compact().await.unwrap(), None);
    assert!(seen.lock().unwrap().is_empty());
    let told = seen.clone();
    let client = Client::builder()
        .script(vec![
            ScriptEntry::text("one"),
            ScriptEntry::text("two"),
            with_usage(ScriptEntry::text("The user said hi twice."), 40, 0),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .compaction(compaction(u64::MAX, 1))
        .on_compact(move |n| told.lock().unwrap().push(n.clone()))
        .build()
        .unwrap();
    client
        .run(format!("hi {}", "there ".repeat(50)))
        .await
        .unwrap();
    client.run("hi again").await.unwrap();
    let notice = client.compact().await.unwrap().unwrap();
    assert_eq!(notice.trigger, CompactTrigger::Manual);
    assert_eq!(notice.summary.as_deref(), Some("The user said hi twice."));
    assert_eq!(notice.usage.input_tokens, 40);
    assert!(notice.post_tokens < notice.pre_tokens);
    let t = client.transcript();
    assert!(is_summary(&t.messages[0]));
    assert_eq!(t.messages.len(), 2);
    assert_eq!(*seen.lock().unwrap(), vec![notice]);
}

/// A host compactor: keeps only the last message, or returns something broken.
struct HostCompactor {
    broken: bool,
    told: Mutex<Vec<CompactNotice>>,
}

#[async_trait]
impl Compactor for HostCompactor {
    async fn compact(
        &self,
        transcript: &Transcript,
        _cancel: CancellationToken,
    ) -> Result<Option<Transcript>, HostError> {
        let mut messages = vec![Message::user("host summary")];
        if self.broken {
            // A result with no call before it: invalid.
            messages.push(Message::tool_result("nope", "echo", "x", false));
        } else {
            messages.extend(transcript.messages.last().cloned());
        }
        Ok(Some(Transcript { messages }))
    }

    async fn on_compact(&self, notice: &CompactNotice) -> Result<(), HostError> {
        self.told.lock().unwrap().push(notice.clone());
        Ok(())
    }
}

#[tokio::test]
async fn a_host_compactor_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    for broken in [false, true] {
        let host = Arc::new(HostCompactor {
            broken,
            told: Mutex::new(Vec::new()),
        });
        let client = Client::builder()
            .script(vec![
                with_usage(ScriptEntry::text("hello"), 5_000, 0),
                ScriptEntry::text("after"),
            ])
            .root(dir.path())
            .builtins(Vec::<String>::new())
            .compaction(compaction(1_000, 1))
            .compactor(host.clone())
            .build()
            .unwrap();
        client.run("hi").await.unwrap();
        let before = client.transcript();
        let result = client.run("go on").await.unwrap();
        if broken {
            assert_eq!(result.outcome, Outcome::Error);
            let why = result.error.unwrap();
            assert!(why.contains("invalid transcript"), "{why}");
            assert_eq!(result.transcript.messages.len(), before.messages.len() + 1);
            assert!(host.told.lock().unwrap().is_empty());
        } else {
            assert_eq!(result.outcome, Outcome::Done);
            let t = result.transcript;
            assert!(t.messages[0] == Message::user("host summary"));
            assert!(t.messages[1] == Message::user("go on"));
            let told = host.told.lock().unwrap().clone();
            assert_eq!(told.len(), 1);
            assert_eq!(told[0].summary, None);
        }
    }
}

#[tokio::test]
async fn usage_counts_cached_tokens_and_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let client = Client::builder()
        .script(vec![
            with_usage(ScriptEntry::text("a"), 25, 24),
            with_usage(ScriptEntry::text("summary"), 30, 0),
            with_usage(ScriptEntry::text("b"), 10, 4),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .compaction(compaction(20, 0))
        .build()
        .unwrap();
    let first = client.run("x").await.unwrap();
    assert_eq!(first.usage.cache_read_input_tokens, 24);
    let second = client.run("y").await.unwrap();
    assert_eq!(second.outcome, Outcome::Done, "{:?}", second.error);
    // The summary request (30 + 1) and the answer (10 + 1, 4 of them cached).
    assert_eq!(
        second.usage,
        Usage {
            input_tokens: 40,
            output_tokens: 2,
            cache_read_input_tokens: 4,
            cache_creation_input_tokens: 0,
            reasoning_tokens: 0,
        }
    );
}

#[tokio::test]
async fn the_tool_call_arguments_are_kept_whole_in_a_summary_request_cut() {
    // A call whose result is the last message is kept with its call, whatever keep_recent.
    let t = Transcript {
        messages: vec![
            Message::user("go"),
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "a".into(),
                    name: "echo".into(),
                    arguments: json!({}),
                    raw_arguments: false,
                    via: None,
                }],
            ),
            Message::tool_result("a", "echo", "r", false),
        ],
    };
    let dir = tempfile::tempdir().unwrap();
    let client = Client::builder()
        .script(vec![ScriptEntry::text("s")])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .compaction(compaction(u64::MAX, 1))
        .build()
        .unwrap();
    client.set_transcript(t).unwrap();
    let notice = client.compact().await.unwrap().unwrap();
    assert_eq!(notice.summary.as_deref(), Some("s"));
    let after = client.transcript();
    after.validate().unwrap();
    assert_eq!(after.messages.len(), 3);
}

#[tokio::test]
async fn a_chain_task_refused_as_too_long_is_compacted_and_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let refusal = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let (seen, on_compact) = notices();
    let client = Client::builder()
        .script(vec![
            ScriptEntry::text("hello"),
            // The chain's chat task: refused, the summary, sent again.
            error(400, refusal),
            with_usage(ScriptEntry::text("They greeted each other."), 10, 0),
            with_usage(ScriptEntry::text("answer after compaction"), 20, 0),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .compaction(compaction(1_000_000, 1))
        .on_compact(on_compact)
        .build()
        .unwrap();
    client.run("hi").await.unwrap();
    let chain = contenox::Chain::from_value(json!({"id": "one", "tasks": [
        {"id": "chat", "handler": "chat_completion"}
    ]}))
    .unwrap();
    let mut run = client.stream_chain(&chain, "go on").unwrap();
    let mut events = Vec::new();
    while let Some(e) = run.next_event().await {
        events.push(e);
    }
    let result = run.result().await.unwrap();
    assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
    assert_eq!(result.final_text, "answer after compaction");
    assert_eq!(events.iter().filter(|e| e.kind() == "compact").count(), 1);
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert!(is_summary(&result.transcript.messages[0]));
    // The summary's tokens are the chain's too.
    assert_eq!(result.usage.input_tokens, 30, "{:?}", result.usage);
}
