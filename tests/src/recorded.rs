//! Recorded provider streams: a file of one JSON chunk per line, as the Vercel AI SDK keeps its
//! providers' test fixtures (`__fixtures__/*.chunks.txt`): each line is the `data` of one SSE
//! event (openai and anthropic) or one NDJSON line (ollama). The fake server replays one as the
//! stream of its style (`fake-model-server --replay FILE`, or [`script`]), and [`expected`]
//! reads from the lines, independently of the engine, what a reader must get out of them.

use std::path::Path;

use serde_json::Value;

use crate::scenario::{ModelEntry, Style};

/// The text the fake answers with after a replayed reply (the request that follows its calls).
pub const AFTER_REPLAY: &str = "replay over";

/// A recorded stream of a style contenox speaks.
#[derive(Debug, Clone)]
pub struct Recording {
    pub style: Style,
    /// The chunks, one JSON text each, in order.
    pub lines: Vec<String>,
}

/// The JSON chunks of a file, in order (blank lines skipped).
pub fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The style a stream's chunks are in: anthropic Messages events, openai Chat Completions
/// chunks, OpenAI Responses events (`response.*`), ollama chat lines; `None` for any other wire
/// (Bedrock, Gemini, Cohere, OpenAI Realtime: formats contenox has no style for).
pub fn style_of(lines: &[String]) -> Option<Style> {
    let chunks: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let any = |f: &dyn Fn(&Value) -> bool| chunks.iter().any(f);
    if any(&|c| c["type"] == "message_start") {
        Some(Style::Anthropic)
    } else if any(&|c| {
        c["type"]
            .as_str()
            .is_some_and(|t| t.starts_with("response."))
    }) {
        Some(Style::OpenaiResponses)
    } else if any(&|c| {
        c["object"] == "chat.completion.chunk" || (c["choices"].is_array() && c["type"].is_null())
    }) && !any(&|c| c["object"] == "text_completion")
    {
        Some(Style::Openai)
    } else if any(&|c| c["message"].is_object() && c["done"].is_boolean()) {
        Some(Style::Ollama)
    } else {
        None
    }
}

/// Read a recording; `Ok(None)` when its wire is not one of contenox's styles.
pub fn read(path: &Path) -> std::io::Result<Option<Recording>> {
    let lines = lines(&std::fs::read_to_string(path)?);
    Ok(style_of(&lines).map(|style| Recording { style, lines }))
}

impl Recording {
    /// The replies it holds, in order: a recording of a tool loop holds one message per model
    /// request (anthropic: each ends with `message_stop`, a `message_start` before it being a
    /// restart within the same reply; openai-responses: each ends with `response.completed`,
    /// `.incomplete` or `.failed`). Other styles: one reply.
    pub fn replies(&self) -> Vec<Vec<String>> {
        let ends: &[&str] = match self.style {
            Style::Anthropic => &["message_stop"],
            Style::OpenaiResponses => &[
                "response.completed",
                "response.incomplete",
                "response.failed",
            ],
            Style::Openai | Style::Ollama => return vec![self.lines.clone()],
        };
        let mut replies = vec![Vec::new()];
        for line in &self.lines {
            replies.last_mut().expect("one").push(line.clone());
            let stop = serde_json::from_str::<Value>(line)
                .is_ok_and(|v| v["type"].as_str().is_some_and(|t| ends.contains(&t)));
            if stop {
                replies.push(Vec::new());
            }
        }
        replies.retain(|r| !r.is_empty());
        replies
    }
}

/// The fake's script for a replay: each reply of the recording in turn, then a plain answer for
/// the request that follows the last one's calls.
pub fn script(recording: &Recording) -> Vec<ModelEntry> {
    let mut script: Vec<ModelEntry> = recording
        .replies()
        .into_iter()
        .map(|lines| ModelEntry {
            replay: Some(lines),
            ..ModelEntry::default()
        })
        .collect();
    script.push(ModelEntry {
        text: Some(AFTER_REPLAY.into()),
        ..ModelEntry::default()
    });
    script
}

/// What a reader must get out of a recording.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expected {
    /// The answer text, joined.
    pub text: String,
    /// The tool calls: name and arguments (parsed JSON; `{}` when none streamed).
    pub calls: Vec<(String, Value)>,
    /// The reasoning text, joined.
    pub reasoning: String,
    /// Encrypted or signed reasoning blocks (anthropic; openai-responses reasoning items with
    /// `encrypted_content`).
    pub signed_blocks: usize,
    /// The stop reason the stream gave (`finish_reason` / `stop_reason` / `done_reason`).
    pub stop: Option<String>,
    /// The stream carries an error event.
    pub error: bool,
    /// openai-responses: each reasoning item's `encrypted_content`, in order (what the next
    /// request must send back).
    pub encrypted: Vec<String>,
    /// openai-responses: the usage of the terminal response: input, cached, output and
    /// reasoning tokens.
    pub usage: Option<[u64; 4]>,
}

/// Read each reply of a recording the plain way (`serde_json::Value` lookups, the providers'
/// documented shapes), for comparing with what the engine read.
pub fn expected(recording: &Recording) -> Vec<Expected> {
    recording
        .replies()
        .iter()
        .map(|reply| expected_reply(recording.style, reply))
        .collect()
}

/// What a reader must get out of one reply's chunks.
pub fn expected_reply(style: Style, lines: &[String]) -> Expected {
    let chunks: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    match style {
        Style::Openai => expected_openai(&chunks),
        Style::OpenaiResponses => {
            let mut e = expected_responses(&chunks);
            // A line that is not JSON is a broken stream, which a reader reports as an error.
            e.error |= chunks.len() < lines.len();
            e
        }
        Style::Anthropic => expected_anthropic(&chunks),
        Style::Ollama => expected_ollama(&chunks),
    }
}

fn args(text: &str) -> Value {
    if text.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
    }
}

fn expected_openai(chunks: &[Value]) -> Expected {
    let mut e = Expected::default();
    // index -> (name, arguments)
    let mut calls: Vec<(u64, String, String)> = Vec::new();
    for c in chunks {
        if !c["error"].is_null() {
            e.error = true;
        }
        let choice = &c["choices"][0];
        let d = if choice["delta"].is_object() {
            &choice["delta"]
        } else {
            &choice["message"]
        };
        for field in ["reasoning_content", "reasoning"] {
            if let Some(t) = d[field].as_str().filter(|t| !t.is_empty()) {
                e.reasoning.push_str(t);
                break;
            }
        }
        match &d["content"] {
            Value::String(t) => e.text.push_str(t),
            Value::Array(parts) => {
                for p in parts {
                    match p["type"].as_str() {
                        Some("text") => e.text.push_str(p["text"].as_str().unwrap_or("")),
                        Some("thinking") => match &p["thinking"] {
                            Value::String(t) => e.reasoning.push_str(t),
                            Value::Array(ts) => {
                                for t in ts {
                                    e.reasoning.push_str(t["text"].as_str().unwrap_or(""));
                                }
                            }
                            _ => {}
                        },
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        if let Some(t) = d["refusal"].as_str() {
            e.text.push_str(t);
        }
        for (pos, tc) in d["tool_calls"].as_array().into_iter().flatten().enumerate() {
            let index = tc["index"].as_u64().unwrap_or(pos as u64);
            let slot = match calls.iter().position(|(i, _, _)| *i == index) {
                Some(s) => s,
                None => {
                    calls.push((index, String::new(), String::new()));
                    calls.len() - 1
                }
            };
            if let Some(n) = tc["function"]["name"].as_str() {
                calls[slot].1.push_str(n);
            }
            match &tc["function"]["arguments"] {
                Value::String(a) => calls[slot].2.push_str(a),
                Value::Null => {}
                other => calls[slot].2.push_str(&other.to_string()),
            }
        }
        if let Some(r) = choice["finish_reason"].as_str() {
            e.stop = Some(r.to_string());
        }
    }
    calls.sort_by_key(|(i, _, _)| *i);
    e.calls = calls.into_iter().map(|(_, n, a)| (n, args(&a))).collect();
    e
}

fn expected_anthropic(chunks: &[Value]) -> Expected {
    let mut e = Expected::default();
    let mut started = false;
    // index -> (name, start input, streamed json) of open tool_use blocks
    let mut open: Vec<(u64, String, Value, String)> = Vec::new();
    for c in chunks {
        match c["type"].as_str().unwrap_or("") {
            "message_start" => {
                if started {
                    // A restart: the unfinished message is dropped.
                    let stop = e.stop.take();
                    e = Expected {
                        stop,
                        ..Expected::default()
                    };
                    open.clear();
                }
                started = true;
            }
            "content_block_start" => {
                let b = &c["content_block"];
                let index = c["index"].as_u64().unwrap_or(0);
                match b["type"].as_str() {
                    Some("text") => e.text.push_str(b["text"].as_str().unwrap_or("")),
                    Some("thinking") => {
                        e.reasoning.push_str(b["thinking"].as_str().unwrap_or(""));
                        e.signed_blocks += 1;
                    }
                    Some("redacted_thinking") => e.signed_blocks += 1,
                    Some("tool_use") => open.push((
                        index,
                        b["name"].as_str().unwrap_or("").to_string(),
                        b["input"].clone(),
                        String::new(),
                    )),
                    _ => {}
                }
            }
            "content_block_delta" => {
                let d = &c["delta"];
                let index = c["index"].as_u64().unwrap_or(0);
                match d["type"].as_str() {
                    Some("text_delta") => e.text.push_str(d["text"].as_str().unwrap_or("")),
                    Some("thinking_delta") => {
                        e.reasoning.push_str(d["thinking"].as_str().unwrap_or(""))
                    }
                    Some("input_json_delta") => {
                        if let Some(o) = open.iter_mut().find(|o| o.0 == index) {
                            o.3.push_str(d["partial_json"].as_str().unwrap_or(""));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = c["index"].as_u64().unwrap_or(0);
                if let Some(pos) = open.iter().position(|o| o.0 == index) {
                    let (_, name, start, json) = open.remove(pos);
                    let whole = json.is_empty() && start.as_object().is_some_and(|o| !o.is_empty());
                    e.calls
                        .push((name, if whole { start } else { args(&json) }));
                }
            }
            "message_delta" => {
                if let Some(r) = c["delta"]["stop_reason"].as_str() {
                    e.stop = Some(r.to_string());
                }
            }
            "error" => e.error = true,
            _ => {}
        }
    }
    e
}

fn expected_ollama(chunks: &[Value]) -> Expected {
    let mut e = Expected::default();
    for c in chunks {
        if !c["error"].is_null() {
            e.error = true;
        }
        let m = &c["message"];
        e.reasoning.push_str(m["thinking"].as_str().unwrap_or(""));
        e.text.push_str(m["content"].as_str().unwrap_or(""));
        for tc in m["tool_calls"].as_array().into_iter().flatten() {
            let f = &tc["function"];
            let a = match &f["arguments"] {
                Value::String(s) => args(s),
                Value::Null => args(""),
                other => other.clone(),
            };
            e.calls
                .push((f["name"].as_str().unwrap_or("").to_string(), a));
        }
        if let Some(r) = c["done_reason"].as_str() {
            e.stop = Some(r.to_string());
        }
    }
    e
}

/// OpenAI Responses events: text from `output_text` (and `refusal`) deltas, reasoning from
/// summary deltas (a blank line between two summary parts of one item) and reasoning text
/// deltas, calls from the `function_call` items done; a message or reasoning item that streamed
/// no deltas gives the text its done item holds. Items of other kinds (tools the server runs)
/// give nothing.
fn expected_responses(chunks: &[Value]) -> Expected {
    let mut e = Expected::default();
    // The items that streamed deltas, and the last summary part seen per reasoning item.
    let mut streamed: Vec<Value> = Vec::new();
    let mut last_part: Option<(Value, u64)> = None;
    let key = |c: &Value| -> Value {
        if c["output_index"].is_u64() {
            c["output_index"].clone()
        } else {
            c["item_id"].clone()
        }
    };
    for c in chunks {
        match c["type"].as_str().unwrap_or("") {
            "response.output_text.delta" | "response.refusal.delta" => {
                let d = c["delta"].as_str().unwrap_or("");
                e.text.push_str(d);
                if !d.is_empty() {
                    streamed.push(key(c));
                }
                if c["type"] == "response.refusal.delta" && !d.is_empty() {
                    e.stop = Some("refusal".into());
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let d = c["delta"].as_str().unwrap_or("");
                if d.is_empty() {
                    continue;
                }
                if c["type"] == "response.reasoning_summary_text.delta" {
                    let part = c["summary_index"].as_u64().unwrap_or(0);
                    if let Some((item, p)) = &last_part {
                        if *item == key(c) && *p != part {
                            e.reasoning.push_str("\n\n");
                        }
                    }
                    last_part = Some((key(c), part));
                }
                e.reasoning.push_str(d);
                streamed.push(key(c));
            }
            "response.output_item.done" => {
                let item = &c["item"];
                let was_streamed = streamed.contains(&key(c)) || streamed.contains(&item["id"]);
                match item["type"].as_str() {
                    Some("function_call") => e.calls.push((
                        item["name"].as_str().unwrap_or("").to_string(),
                        args(item["arguments"].as_str().unwrap_or("")),
                    )),
                    Some("reasoning") => {
                        if let Some(enc) = item["encrypted_content"].as_str() {
                            e.signed_blocks += 1;
                            e.encrypted.push(enc.to_string());
                        }
                        if !was_streamed {
                            let texts = |k: &str| -> Vec<String> {
                                item[k]
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .filter_map(|p| p["text"].as_str())
                                    .filter(|t| !t.is_empty())
                                    .map(str::to_string)
                                    .collect()
                            };
                            let summary = texts("summary");
                            if summary.is_empty() {
                                e.reasoning.push_str(&texts("content").concat());
                            } else {
                                e.reasoning.push_str(&summary.join("\n\n"));
                            }
                        }
                    }
                    Some("message") if !was_streamed => {
                        for p in item["content"].as_array().into_iter().flatten() {
                            match p["type"].as_str() {
                                Some("output_text") => {
                                    e.text.push_str(p["text"].as_str().unwrap_or(""))
                                }
                                Some("refusal") => {
                                    e.text.push_str(p["refusal"].as_str().unwrap_or(""));
                                    e.stop = Some("refusal".into());
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" if c["response"]["usage"].is_object() => {
                let u = &c["response"]["usage"];
                let n = |v: &Value| v.as_u64().unwrap_or(0);
                e.usage = Some([
                    n(&u["input_tokens"]),
                    n(&u["input_tokens_details"]["cached_tokens"]),
                    n(&u["output_tokens"]),
                    n(&u["output_tokens_details"]["reasoning_tokens"]),
                ]);
                if c["type"] == "response.incomplete" {
                    e.stop = Some(
                        match c["response"]["incomplete_details"]["reason"].as_str() {
                            Some("content_filter") => "content_filter",
                            _ => "max_tokens",
                        }
                        .into(),
                    );
                }
            }
            "response.incomplete" => {
                e.stop = Some(
                    match c["response"]["incomplete_details"]["reason"].as_str() {
                        Some("content_filter") => "content_filter",
                        _ => "max_tokens",
                    }
                    .into(),
                );
            }
            "response.failed" | "error" => e.error = true,
            _ => {}
        }
    }
    e
}
