//! A turn's events as ACP `session/update`s: text as `agent_message_chunk`, the model's reasoning
//! as `agent_thought_chunk`, each tool call as a
//! `tool_call` (kind, title, raw input, the file it touches, the diff a write or edit would
//! make) followed by `tool_call_update`s (in progress, then completed or failed with the
//! result the model sees, or failed with the sentence of the rule or person that refused it),
//! `todo_write`'s list as a `plan`, and the tokens in context as `usage_update`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use contenox::{Answer, Event, GateVerdict, Image, Message, Part, Transcript, DEFAULT_DENIAL};
use serde_json::{json, Value};

use crate::preview::proposed_change;
use crate::terminal::cut_chars;

/// The most characters of a tool result shown in the editor (the model sees the whole result).
const MAX_SHOWN_RESULT: usize = 100_000;

/// What the editor is told about one tool call.
pub struct CallView {
    /// `read`, `edit`, `execute`, ... (ACP's ToolKind).
    pub kind: &'static str,
    /// A short line: `Read src/main.rs`, the shell command, `Fetch https://...`.
    pub title: String,
    /// The files it touches, as absolute paths.
    pub locations: Vec<Value>,
    /// The diff a write or edit would make, when it can be shown.
    pub diff: Option<Value>,
}

/// ACP's tool kind for a builtin's name; `other` for the rest.
pub fn kind(name: &str) -> &'static str {
    match name {
        "read" | "list" | "bash_output" => "read",
        "write" | "edit" | "multi_edit" | "notebook_edit" => "edit",
        "glob" | "grep" | "websearch" => "search",
        "bash" | "kill_shell" => "execute",
        "web_fetch" => "fetch",
        "todo_write" => "think",
        _ => "other",
    }
}

fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// `path` as the editor needs it: absolute (relative ones are under `root`).
pub fn absolute(root: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    }
}

/// The view of a call of `name` with `args`, in the session rooted at `root`.
pub fn view(root: &Path, name: &str, args: &Value) -> CallView {
    let kind = kind(name);
    let one_line = |s: &str| cut_chars(s.lines().next().unwrap_or(""), 160);
    let path = arg(args, "path").filter(|_| {
        matches!(
            name,
            "read" | "write" | "edit" | "multi_edit" | "notebook_edit" | "list" | "glob" | "grep"
        )
    });
    let title = match (name, path) {
        ("read", Some(p)) => format!("Read {p}"),
        ("write", Some(p)) => format!("Write {p}"),
        ("edit" | "multi_edit" | "notebook_edit", Some(p)) => format!("Edit {p}"),
        ("list", Some(p)) => format!("List {p}"),
        ("glob", _) => format!("Find {}", arg(args, "pattern").unwrap_or("")),
        ("grep", _) => format!("Search for {}", arg(args, "pattern").unwrap_or("")),
        ("bash", _) => one_line(arg(args, "command").unwrap_or("bash")),
        ("web_fetch", _) => format!("Fetch {}", arg(args, "url").unwrap_or("")),
        ("websearch", _) => format!("Search the web for {}", arg(args, "query").unwrap_or("")),
        ("todo_write", _) => "Update the plan".to_string(),
        _ => name.to_string(),
    };
    let title = one_line(&title);
    let locations = match path {
        Some(p) => {
            let mut loc = json!({"path": absolute(root, p)});
            if name == "read" {
                if let Some(line) = args.get("offset").and_then(Value::as_u64) {
                    loc["line"] = json!(line.clamp(1, u64::from(u32::MAX)));
                }
            }
            vec![loc]
        }
        None => Vec::new(),
    };
    let diff = match (name, path) {
        ("write" | "edit" | "multi_edit", Some(p)) => proposed_change(root, name, p, args)
            .ok()
            .map(|(old, new)| {
                json!({"type": "diff", "path": absolute(root, p), "oldText": old, "newText": new})
            }),
        _ => None,
    };
    CallView {
        kind,
        title,
        locations,
        diff,
    }
}

/// The `tool_call` update (and the `toolCall` of a permission request) of a call.
pub fn tool_call(root: &Path, call_id: &str, name: &str, args: &Value) -> Value {
    let v = view(root, name, args);
    let mut update = json!({
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": v.title,
        "kind": v.kind,
        "status": "pending",
        "rawInput": args,
    });
    if !v.locations.is_empty() {
        update["locations"] = Value::Array(v.locations);
    }
    if let Some(d) = v.diff {
        update["content"] = json!([d]);
    }
    update
}

fn message_chunk(text: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
}

fn thought_chunk(text: &str) -> Value {
    json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}})
}

fn text_content(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": cut_chars(text, MAX_SHOWN_RESULT)}})
}

fn failed(call_id: &str, message: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed",
        "content": [text_content(message)],
    })
}

/// Turns a turn's events into updates, keeping what it needs between them.
pub struct Updates {
    root: PathBuf,
    context_window: Option<u64>,
    /// The diff shown for each call, kept for its completed update.
    diffs: HashMap<String, Value>,
    /// Calls already reported failed (a denial), whose result adds nothing.
    ended: HashMap<String, ()>,
    /// Whether the current model response streamed its text (else its whole text is sent).
    streamed: bool,
    /// The same for its reasoning.
    streamed_thought: bool,
}

impl Updates {
    /// For a session rooted at `root`; `usage_update`s only with a known context window.
    pub fn new(root: PathBuf, context_window: Option<u64>) -> Updates {
        Updates {
            root,
            context_window,
            diffs: HashMap::new(),
            ended: HashMap::new(),
            streamed: false,
            streamed_thought: false,
        }
    }

    /// The updates one event makes (often none). Subagents' events are not shown: the call
    /// that runs the subagent is.
    pub fn of(&mut self, event: &Event) -> Vec<Value> {
        if !event.agent().is_empty() {
            return Vec::new();
        }
        match event {
            Event::Request { .. } => {
                self.streamed = false;
                self.streamed_thought = false;
                Vec::new()
            }
            // The model's reasoning, shown as the editor shows thoughts.
            Event::ReasoningDelta { text, .. } if !text.is_empty() => {
                self.streamed_thought = true;
                vec![thought_chunk(text)]
            }
            Event::Reasoning { text, .. } if !self.streamed_thought && !text.is_empty() => {
                vec![thought_chunk(text)]
            }
            Event::TextDelta { text, .. } if !text.is_empty() => {
                self.streamed = true;
                vec![message_chunk(text)]
            }
            // A response whose text came whole, without deltas.
            Event::Text { text, .. } if !self.streamed && !text.is_empty() => {
                vec![message_chunk(text)]
            }
            Event::ToolCall {
                call_id,
                name,
                arguments,
                ..
            } => {
                let update = tool_call(&self.root, call_id, name, arguments);
                if let Some(d) = update.get("content").and_then(|c| c.get(0)) {
                    self.diffs.insert(call_id.clone(), d.clone());
                }
                vec![update]
            }
            Event::Gate {
                call_id,
                decision: GateVerdict::Deny,
                message,
                ..
            } => {
                self.ended.insert(call_id.clone(), ());
                vec![failed(
                    call_id,
                    message.as_deref().unwrap_or(DEFAULT_DENIAL),
                )]
            }
            Event::Answer {
                call_id,
                answer: Answer::Deny(message),
                ..
            } => {
                self.ended.insert(call_id.clone(), ());
                vec![failed(
                    call_id,
                    message.as_deref().unwrap_or(DEFAULT_DENIAL),
                )]
            }
            Event::ToolStart { call_id, .. } => vec![json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "in_progress",
            })],
            Event::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                if self.ended.remove(call_id).is_some() {
                    return Vec::new();
                }
                let diff = self.diffs.remove(call_id);
                if *is_error {
                    return vec![failed(call_id, content)];
                }
                let mut shown: Vec<Value> = diff.into_iter().collect();
                shown.push(text_content(content));
                vec![json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": "completed",
                    "content": shown,
                })]
            }
            Event::Todos { todos, .. } => vec![plan(todos)],
            Event::Usage { usage, .. } => match self.context_window {
                Some(size) => vec![json!({
                    "sessionUpdate": "usage_update",
                    "used": usage.input_tokens.saturating_add(usage.output_tokens),
                    "size": size,
                })],
                None => Vec::new(),
            },
            _ => Vec::new(),
        }
    }
}

/// `todo_write`'s task list as an ACP plan (every entry `medium` unless it says otherwise).
pub fn plan(todos: &Value) -> Value {
    let entries: Vec<Value> = todos
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let status = arg(t, "status")
                .filter(|s| matches!(*s, "pending" | "in_progress" | "completed"))
                .unwrap_or("pending");
            let priority = arg(t, "priority")
                .filter(|p| matches!(*p, "high" | "medium" | "low"))
                .unwrap_or("medium");
            json!({
                "content": arg(t, "content").unwrap_or(""),
                "priority": priority,
                "status": status,
            })
        })
        .collect();
    json!({"sessionUpdate": "plan", "entries": entries})
}

/// A transcript part as ACP content: text, or an image given by its bytes. Parts that are not
/// content (reasoning, tool calls, provider blocks) and images given by path give `None`.
fn part_content(part: &Part) -> Option<Value> {
    match part {
        Part::Text { text } => Some(json!({"type": "text", "text": text})),
        Part::Image(Image::Data { media_type, data }) => {
            Some(json!({"type": "image", "mimeType": media_type, "data": data}))
        }
        _ => None,
    }
}

/// The updates that replay a saved conversation (`session/load`): the user's prompts, the
/// model's reasoning (as thoughts), text and tool calls, each call's result. No diffs: the
/// files have moved on since.
pub fn replay(root: &Path, transcript: &Transcript) -> Vec<Value> {
    let mut out = Vec::new();
    let chunk = |kind: &str, content: Value| json!({"sessionUpdate": kind, "content": content});
    for m in &transcript.messages {
        match m {
            Message::User { content } => out.extend(
                content
                    .iter()
                    .filter_map(part_content)
                    .map(|c| chunk("user_message_chunk", c)),
            ),
            Message::Assistant { content } => {
                for part in content {
                    match part {
                        Part::Reasoning(r) if !r.text.is_empty() => out.push(chunk(
                            "agent_thought_chunk",
                            json!({"type": "text", "text": r.text}),
                        )),
                        Part::ToolCall(c) => {
                            let mut update = tool_call(root, &c.id, &c.name, &c.arguments);
                            if let Some(m) = update.as_object_mut() {
                                m.remove("content");
                            }
                            out.push(update);
                        }
                        other => {
                            if let Some(c) = part_content(other).filter(|c| c["text"] != "") {
                                out.push(chunk("agent_message_chunk", c));
                            }
                        }
                    }
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                let shown: Vec<Value> = content
                    .iter()
                    .filter_map(|p| match p {
                        Part::Text { text } => Some(text_content(text)),
                        p => part_content(p).map(|c| json!({"type": "content", "content": c})),
                    })
                    .collect();
                out.push(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": if *is_error { "failed" } else { "completed" },
                    "content": shown,
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_of_builtins() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        let v = view(
            &root,
            "edit",
            &json!({"path": "a.txt", "old_string": "one", "new_string": "1"}),
        );
        assert_eq!((v.kind, v.title.as_str()), ("edit", "Edit a.txt"));
        assert_eq!(v.locations, vec![json!({"path": root.join("a.txt")})]);
        let d = v.diff.unwrap();
        assert_eq!(
            (d["oldText"].as_str(), d["newText"].as_str()),
            (Some("one\n"), Some("1\n"))
        );
        let w = view(&root, "write", &json!({"path": "new.txt", "content": "x"}));
        assert_eq!(w.diff.unwrap()["oldText"], Value::Null);
        let b = view(&root, "bash", &json!({"command": "ls -la\nrm -rf /"}));
        assert_eq!((b.kind, b.title.as_str()), ("execute", "ls -la"));
        assert!(b.locations.is_empty() && b.diff.is_none());
        // A path outside the root gets no diff (the file is never read).
        let outside = view(&root, "write", &json!({"path": "../x", "content": "y"}));
        assert!(outside.diff.is_none());
        assert_eq!(view(&root, "mcp_tool", &json!({})).kind, "other");
    }

    #[test]
    fn text_is_sent_once_streamed_or_whole() {
        let mut u = Updates::new(PathBuf::from("/w"), None);
        let req = Event::Request {
            index: 0,
            attempt: 0,
            agent: vec![],
        };
        let delta = Event::TextDelta {
            text: "Hel".into(),
            agent: vec![],
        };
        let whole = Event::Text {
            text: "Hello".into(),
            agent: vec![],
        };
        assert!(u.of(&req).is_empty());
        assert_eq!(u.of(&delta), vec![message_chunk("Hel")]);
        assert!(u.of(&whole).is_empty(), "streamed text is not sent again");
        u.of(&req);
        assert_eq!(u.of(&whole), vec![message_chunk("Hello")]);
    }

    #[test]
    fn reasoning_is_sent_as_thoughts_once_streamed_or_whole() {
        let mut u = Updates::new(PathBuf::from("/w"), None);
        let req = Event::Request {
            index: 0,
            attempt: 0,
            agent: vec![],
        };
        let delta = Event::ReasoningDelta {
            text: "Hm".into(),
            agent: vec![],
        };
        let whole = Event::Reasoning {
            text: "Hmm, a.txt".into(),
            agent: vec![],
        };
        let of_a_subagent = Event::ReasoningDelta {
            text: "inner".into(),
            agent: vec!["researcher".into()],
        };
        assert!(u.of(&req).is_empty());
        assert_eq!(u.of(&delta), vec![thought_chunk("Hm")]);
        assert!(
            u.of(&whole).is_empty(),
            "streamed reasoning is not sent again"
        );
        assert!(u.of(&of_a_subagent).is_empty());
        u.of(&req);
        assert_eq!(u.of(&whole), vec![thought_chunk("Hmm, a.txt")]);
        // Text streams as before, apart from the thoughts.
        let text = Event::TextDelta {
            text: "It".into(),
            agent: vec![],
        };
        assert_eq!(u.of(&text), vec![message_chunk("It")]);
    }

    #[test]
    fn replay_shows_prompts_thoughts_text_calls_and_results() {
        let reasoning: contenox::Reasoning =
            serde_json::from_value(json!({"text": "thinking it over"})).unwrap();
        let call = contenox::ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: json!({"path": "a.txt"}),
            raw_arguments: false,
            via: None,
        };
        let t = Transcript {
            messages: vec![
                Message::user("What is in a.txt?"),
                Message::Assistant {
                    content: vec![
                        Part::Reasoning(reasoning),
                        Part::text("Let me look."),
                        Part::ToolCall(call),
                    ],
                },
                Message::Tool {
                    call_id: "c1".into(),
                    name: "read".into(),
                    content: vec![Part::text("     1\thello")],
                    is_error: false,
                },
                Message::assistant("It says hello.", vec![]),
            ],
        };
        let kinds: Vec<String> = replay(Path::new("/w"), &t)
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_thought_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update",
                "agent_message_chunk"
            ]
        );
        let r = replay(Path::new("/w"), &t);
        assert_eq!(r[1]["content"]["text"], "thinking it over");
        assert_eq!(r[3]["locations"][0]["path"], "/w/a.txt");
        assert_eq!(r[4]["status"], "completed");
    }

    #[test]
    fn plans_from_todos() {
        let p = plan(&json!([
            {"content": "a", "status": "in_progress"},
            {"content": "b", "status": "weird", "priority": "high"}
        ]));
        assert_eq!(
            p["entries"][0],
            json!({"content": "a", "priority": "medium", "status": "in_progress"})
        );
        assert_eq!(
            p["entries"][1],
            json!({"content": "b", "priority": "high", "status": "pending"})
        );
    }
}
