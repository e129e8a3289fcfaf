//! `todo_write`: the turn's task list, replaced whole on every call and handed to the host in a
//! `todos` event.

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::event::Event;
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

pub(crate) struct TodoWrite;

const STATUSES: [&str; 3] = ["pending", "in_progress", "completed"];

/// Check a task list; the error names the first bad item.
pub(crate) fn check_todos(todos: &Value) -> Result<&Vec<Value>, ToolError> {
    let items = todos
        .as_array()
        .ok_or_else(|| ToolError::new("`todos` must be a list of tasks"))?;
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        let content = item.get("content").and_then(Value::as_str).unwrap_or("");
        if content.trim().is_empty() {
            return Err(format!("task {n} has no `content`").into());
        }
        match item.get("status").and_then(Value::as_str) {
            Some(s) if STATUSES.contains(&s) => {}
            other => {
                return Err(format!(
                    "task {n} has status {other:?}; it must be one of pending, in_progress, \
                     completed"
                )
                .into())
            }
        }
    }
    Ok(items)
}

#[async_trait]
impl Tool for TodoWrite {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "todo_write",
            "Write your task list for this piece of work, to plan it and show progress. Send \
             the whole list every time: it replaces the previous one. Use it for work of three \
             steps or more; keep one task `in_progress` at a time and mark each `completed` as \
             soon as it is done.",
            json!({
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "description": "The whole task list.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "content": {"type": "string", "minLength": 1, "description": "The task, in the imperative (\"Run the tests\")."},
                                "status": {"type": "string", "enum": STATUSES, "description": "pending, in_progress or completed."},
                                "activeForm": {"type": "string", "description": "The task while it is being done (\"Running the tests\")."},
                                "id": {"type": "string", "description": "An optional id of the task."}
                            },
                            "required": ["content", "status"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["todos"],
                "additionalProperties": false
            }),
        )
        .with_hints(Hints::read_only())
    }

    fn source(&self) -> Source {
        Source::Builtin
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let todos = args
            .get("todos")
            .ok_or_else(|| ToolError::new("missing argument `todos`"))?;
        let items = check_todos(todos)?;
        let count = |s: &str| {
            items
                .iter()
                .filter(|t| t.get("status").and_then(Value::as_str) == Some(s))
                .count()
        };
        let (pending, doing, done) = (count("pending"), count("in_progress"), count("completed"));
        ctx.events.emit(Event::Todos {
            todos: todos.clone(),
            agent: Vec::new(),
        });
        let s = if items.len() == 1 { "" } else { "s" };
        Ok(ToolOutput::text(format!(
            "Task list updated: {} task{s} ({done} completed, {doing} in progress, {pending} \
             pending). Keep it current as you work.",
            items.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::EventSink;

    #[tokio::test]
    async fn emits_the_list_and_counts() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut ctx = ToolContext::detached("/", "todo_write");
        ctx.events = EventSink::new(tx);
        let todos = json!([
            {"content": "Read the code", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
            {"content": "Run the tests", "status": "pending"}
        ]);
        let out = TodoWrite
            .call(json!({"todos": todos.clone()}), ctx)
            .await
            .unwrap();
        assert!(out
            .content_text()
            .starts_with("Task list updated: 3 tasks (1 completed, 1 in progress, 1 pending)"));
        assert_eq!(
            rx.recv().await.unwrap(),
            Event::Todos {
                todos,
                agent: Vec::new()
            }
        );
    }

    #[tokio::test]
    async fn bad_lists_are_refused() {
        let ctx = || ToolContext::detached("/", "todo_write");
        for bad in [
            json!({}),
            json!({"todos": "x"}),
            json!({"todos": [{"content": "", "status": "pending"}]}),
            json!({"todos": [{"content": "a", "status": "done"}]}),
        ] {
            assert!(TodoWrite.call(bad.clone(), ctx()).await.is_err(), "{bad}");
        }
        let out = TodoWrite.call(json!({"todos": []}), ctx()).await.unwrap();
        assert!(out.content_text().starts_with("Task list updated: 0 tasks"));
    }
}
