//! An agent turn, offline: the scripted model asks to read a file and to write another; a gate
//! allows reads and asks before anything destructive; the "host" approves on the terminal's
//! behalf. Run it with `cargo run --example quickstart`.
//!
//! Swap `.script(...)` for `.style(Style::Openai).model("gpt-4.1-mini")` (and an API key in
//! `OPENAI_API_KEY`) to talk to a real model; nothing else changes.

use std::sync::Arc;

use contenox::{
    async_trait, Answer, CancellationToken, Client, Decision, Event, Hooks, HostError,
    PendingRequest, ScriptCall, ScriptEntry, ToolCallEvent, WaitFor,
};
use serde_json::json;

/// Reads pass; anything not known to be read-only waits for approval.
struct AskBeforeChanges;

#[async_trait]
impl Hooks for AskBeforeChanges {
    async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
        Ok(if call.hints.read_only == Some(true) {
            Decision::Allow
        } else {
            Decision::Ask(PendingRequest::new(
                "approval",
                format!("Allow {} on {}?", call.name, call.arguments["path"]),
            ))
        })
    }
}

/// A host that approves every request (a real one would ask a person).
struct ApproveAll;

#[async_trait]
impl WaitFor for ApproveAll {
    async fn wait_for(
        &self,
        _request: PendingRequest,
        _cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        Ok(Answer::approve())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = tempfile::tempdir()?;
    std::fs::write(root.path().join("notes.txt"), "buy milk\ncall Ada\n")?;

    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("call_1", "read", json!({"path": "notes.txt"})),
            ScriptEntry {
                text: Some("I will save the list as a todo file.".into()),
                tool_calls: Some(vec![ScriptCall {
                    id: Some("call_2".into()),
                    name: "write".into(),
                    arguments: json!({"path": "todo.md", "content": "- [ ] buy milk\n- [ ] call Ada\n"}),
                    pause_after_ms: None,
                }]),
                ..Default::default()
            },
            ScriptEntry::text("Done: todo.md has your two tasks."),
        ])
        .root(root.path())
        .hooks(Arc::new(AskBeforeChanges))
        .wait_for(Arc::new(ApproveAll))
        .build()?;

    let mut run = client.stream("Turn my notes into a todo list.")?;
    while let Some(event) = run.next_event().await {
        match event {
            Event::TextDelta { text, .. } => print!("{text}"),
            Event::Text { .. } => println!(),
            Event::ToolCall {
                name, arguments, ..
            } => println!("  > {name} {arguments}"),
            Event::Gate { name, decision, .. } => println!("  gate {name}: {decision:?}"),
            Event::Pending { request, .. } => {
                println!("  ? {}", request.prompt.unwrap_or_default())
            }
            Event::Answer { answer, .. } => println!("  ! {}", answer.to_value()),
            Event::ToolResult {
                name,
                content,
                is_error,
                ..
            } => println!(
                "  < {name}{}: {}",
                if is_error { " (error)" } else { "" },
                content.lines().next().unwrap_or("")
            ),
            Event::TurnEnd { outcome, usage, .. } => {
                println!("turn ended: {outcome:?}, usage {usage:?}")
            }
            _ => {}
        }
    }
    let result = run.result().await?;
    println!(
        "todo.md now holds:\n{}",
        std::fs::read_to_string(root.path().join("todo.md"))?
    );
    println!("transcript: {} messages", result.transcript.messages.len());
    Ok(())
}
