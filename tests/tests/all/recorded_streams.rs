//! Recorded provider streams replayed through the engine: the fake server sends each recording
//! (one JSON chunk per line) as the first answer in its style's framing, and the engine's events
//! must carry what the recording holds, read independently (`recorded::expected`): its text,
//! its tool calls with their arguments, its reasoning, and no `error` outcome.
//!
//! The committed recordings (`tests/recorded/`) are small ones written for this test in the
//! providers' documented shapes. `CONTENOX_RECORDED_STREAMS=DIR` replays every `*.chunks.txt`
//! under DIR too (real streams, such as the Vercel AI SDK's fixtures, which are not committed
//! here) and prints how many parsed right.

use std::path::{Path, PathBuf};

use contenox::{Client, Config, Event, Outcome};
use contenox_conformance::fake;
use contenox_conformance::recorded::{self, Recording, AFTER_REPLAY};
use serde_json::{json, Value};

fn committed() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("recorded")
}

/// Every `*.chunks.txt` under `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if path.to_string_lossy().ends_with(".chunks.txt") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// What the engine showed of each reply (events between one `request` and the next).
#[derive(Debug, Default, Clone)]
struct Reply {
    text: String,
    reasoning: String,
    calls: Vec<(String, Value)>,
    stop: Option<String>,
}

#[derive(Debug, Default)]
struct Seen {
    replies: Vec<Reply>,
    outcome: Option<Outcome>,
    final_text: String,
    error: Option<String>,
    requests: usize,
    bodies: Vec<Value>,
    usage: contenox::Usage,
}

async fn replay(rec: &Recording, replies: usize) -> Seen {
    let root = tempfile::tempdir().unwrap();
    let server = fake::serve(recorded::script(rec), rec.style).await.unwrap();
    let config: Config = serde_json::from_value(json!({
        "style": rec.style.as_str(),
        "base_url": server.base_url(),
        "model": "fake",
        "api_key": "test",
        "builtins": [],
        "root": root.path(),
        "max_turns": replies + 2,
        "retry": {"max_retries": 0},
    }))
    .unwrap();
    let client = Client::from_config(config).unwrap();
    let mut run = client.stream("Replay.").unwrap();
    let mut seen = Seen::default();
    while let Some(event) = run.next_event().await {
        match event {
            Event::Request { index, .. } => {
                seen.replies.resize(index as usize + 1, Reply::default());
            }
            Event::Text { text, .. } => seen.replies.last_mut().unwrap().text.push_str(&text),
            Event::Reasoning { text, .. } => {
                seen.replies.last_mut().unwrap().reasoning.push_str(&text)
            }
            Event::ToolCall {
                name, arguments, ..
            } => seen
                .replies
                .last_mut()
                .unwrap()
                .calls
                .push((name, arguments)),
            Event::Stop { reason, .. } => {
                seen.replies.last_mut().unwrap().stop = Some(reason.as_str().to_string())
            }
            _ => {}
        }
    }
    let result = run.result().await.unwrap();
    seen.outcome = Some(result.outcome);
    seen.error = result.error;
    seen.final_text = result.final_text;
    seen.usage = result.usage;
    seen.bodies = server.requests();
    seen.requests = seen.bodies.len();
    server.shutdown().await;
    seen
}

/// What is wrong with the engine's reading of `rec`, if anything.
async fn check(rec: &Recording) -> Vec<String> {
    let want = recorded::expected(rec);
    let seen = replay(rec, want.len()).await;
    let mut wrong = Vec::new();
    // The stop reasons that end a turn short of a full answer, in the engine's words.
    let short = |stop: &Option<String>| match stop.as_deref() {
        Some("refusal") => Some("refusal"),
        Some("max_tokens" | "length") => Some("max_tokens"),
        Some("content_filter") => Some("content_filter"),
        _ => None,
    };
    // The turn goes on while a reply calls tools: the replies it reaches, and the requests.
    let reached = want
        .iter()
        .position(|w| w.calls.is_empty() || w.error || short(&w.stop).is_some())
        .map_or(want.len(), |i| i + 1);
    let last = &want[reached - 1];
    let requests = if reached == want.len() && !last.calls.is_empty() && short(&last.stop).is_none()
    {
        reached + 1
    } else {
        reached
    };
    if want[..reached].iter().any(|w| w.error) {
        if seen.outcome != Some(Outcome::Error) {
            wrong.push(format!(
                "an error stream ended {:?}, not error",
                seen.outcome
            ));
        }
        return wrong;
    }
    if seen.outcome == Some(Outcome::Error) {
        wrong.push(format!("outcome error: {:?}", seen.error));
    }
    for (i, w) in want[..reached].iter().enumerate() {
        let got = seen.replies.get(i).cloned().unwrap_or_default();
        if got.text != w.text {
            wrong.push(format!("reply {i}: text {:?}, want {:?}", got.text, w.text));
        }
        if got.reasoning != w.reasoning {
            wrong.push(format!(
                "reply {i}: reasoning {:?}, want {:?}",
                got.reasoning, w.reasoning
            ));
        }
        if got.calls != w.calls {
            wrong.push(format!(
                "reply {i}: calls {:?}, want {:?}",
                got.calls, w.calls
            ));
        }
    }
    if seen.requests != requests {
        wrong.push(format!("{} requests, want {requests}", seen.requests));
    }
    // openai-responses: each reasoning item goes back whole, its encrypted content unchanged,
    // on the request after it; the turn's usage is the replies' (the fake's last answer
    // reports none).
    for (i, w) in want[..reached].iter().enumerate() {
        let Some(next) = seen.bodies.get(i + 1) else {
            continue;
        };
        let sent: Vec<&str> = next["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| item["encrypted_content"].as_str())
            .collect();
        for enc in &w.encrypted {
            if !sent.contains(&enc.as_str()) {
                wrong.push(format!(
                    "reply {i}: encrypted reasoning {:.40}... not sent back",
                    enc
                ));
            }
        }
    }
    if want[..reached].iter().all(|w| w.usage.is_some()) && !want[..reached].is_empty() {
        let mut sum = [0u64; 4];
        for w in &want[..reached] {
            for (s, n) in sum.iter_mut().zip(w.usage.unwrap()) {
                *s += n;
            }
        }
        let u = seen.usage;
        let got = [
            u.input_tokens,
            u.cache_read_input_tokens,
            u.output_tokens,
            u.reasoning_tokens,
        ];
        if got != sum {
            wrong.push(format!(
                "usage [input, cached, output, reasoning] {got:?}, want {sum:?}"
            ));
        }
    }
    if requests > want.len()
        && seen.outcome == Some(Outcome::Done)
        && seen.final_text != AFTER_REPLAY
    {
        wrong.push(format!("final text {:?} after the calls", seen.final_text));
    }
    wrong
}

/// Replay every recording of `dir`; (replayed, failures, skipped).
async fn replay_all(dir: &Path) -> (usize, Vec<String>, Vec<String>) {
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    let mut replayed = 0;
    for path in files(dir) {
        let name = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .display()
            .to_string();
        let Some(rec) = recorded::read(&path).unwrap() else {
            skipped.push(name);
            continue;
        };
        replayed += 1;
        let wrong = check(&rec).await;
        if !wrong.is_empty() {
            failures.push(format!(
                "{name} ({}): {}",
                rec.style.as_str(),
                wrong.join("; ")
            ));
        }
    }
    (replayed, failures, skipped)
}

#[tokio::test]
async fn the_committed_recordings_parse_right() {
    let (replayed, failures, skipped) = replay_all(&committed()).await;
    assert!(replayed >= 6, "only {replayed} recordings");
    assert!(skipped.is_empty(), "{skipped:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn the_recordings_of_contenox_recorded_streams_parse_right() {
    let Some(dir) = std::env::var_os("CONTENOX_RECORDED_STREAMS") else {
        return;
    };
    let (replayed, failures, skipped) = replay_all(Path::new(&dir)).await;
    println!(
        "recorded streams: {replayed} of contenox's styles replayed, {} parsed right, {} \
         wrong; {} of other wires skipped",
        replayed - failures.len(),
        failures.len(),
        skipped.len()
    );
    for f in &failures {
        println!("  WRONG {f}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_oracle_reads_what_the_providers_document() {
    // A check that could not fail would prove nothing: the oracle itself, on a known stream.
    let rec = Recording {
        style: contenox_conformance::scenario::Style::Anthropic,
        lines: recorded::lines(
            r#"{"type":"message_start","message":{"usage":{"input_tokens":1}}}
{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}
{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}
{"type":"content_block_stop","index":0}
{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"f","input":{"a":1}}}
{"type":"content_block_stop","index":1}
{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#,
        ),
    };
    let [e] = recorded::expected(&rec).try_into().unwrap();
    assert_eq!(e.reasoning, "hm");
    assert_eq!(e.calls, [("f".to_string(), json!({"a": 1}))]);
    assert_eq!(e.stop.as_deref(), Some("tool_use"));
}
