//! Where a request stands within its turn: the number of model replies since the user's prompt.
//!
//! `--repeat` picks its script entry from this rather than from a global counter, so clients
//! that share one server and interleave their requests each still get the script in order
//! (entry 0 for the prompt, entry 1 after the first tool result, ...).

use serde_json::Value;

/// The number of assistant messages after the last user prompt in the request's `messages`
/// (0 for a fresh prompt). A user message made only of `tool_result` blocks (Anthropic's way of
/// returning tool output) is not a prompt. A request without a `messages` array counts as 0.
pub(crate) fn turn_step(request: &Value) -> usize {
    let Some(messages) = request.get("messages").and_then(Value::as_array) else {
        return 0;
    };
    messages
        .iter()
        .rev()
        .take_while(|m| !is_prompt(m))
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .count()
}

fn is_prompt(message: &Value) -> bool {
    if message.get("role").and_then(Value::as_str) != Some("user") {
        return false;
    }
    match message.get("content") {
        Some(Value::Array(blocks)) => !blocks
            .iter()
            .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openai_steps_follow_the_turn() {
        let prompt = json!({"messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "turn 1"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c"}]},
            {"role": "tool", "tool_call_id": "c", "content": "1"},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "turn 2"},
        ]});
        assert_eq!(turn_step(&prompt), 0);
        let after_tool = json!({"messages": [
            {"role": "user", "content": "turn 2"},
            {"role": "assistant", "tool_calls": [{"id": "c"}]},
            {"role": "tool", "content": "2"},
        ]});
        assert_eq!(turn_step(&after_tool), 1);
    }

    #[test]
    fn anthropic_tool_results_are_not_prompts() {
        let request = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "turn 1"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "u"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u"}]},
        ]});
        assert_eq!(turn_step(&request), 2);
    }

    #[test]
    fn broken_requests_count_as_a_fresh_prompt() {
        for request in [
            json!({}),
            json!({"messages": "nope"}),
            json!({"messages": [1, null, {"role": 7}]}),
            json!([]),
        ] {
            assert_eq!(turn_step(&request), 0, "{request}");
        }
    }
}
