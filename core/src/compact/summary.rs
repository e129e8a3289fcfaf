//! The summary request: the older part of the conversation, written out as plain text in one
//! user message, sent to the same model without tools (so no server sees tool blocks without
//! tool declarations, and the model cannot call anything).

use crate::error::cut;
use crate::transcript::Message;

/// The longest a single message may be in the summary request; longer ones are cut.
const MESSAGE_CAP: usize = 16 * 1024;
/// The longest the written-out conversation may be; the middle messages go first.
const TOTAL_CAP: usize = 256 * 1024;

/// The system prompt of the summary request.
pub(crate) fn system_prompt(instructions: Option<&str>) -> String {
    let mut prompt = String::from(
        "You summarise a conversation between a user and an AI assistant that uses tools, so \
         that the assistant can carry on from the summary alone. Keep: what the user asked for \
         and still wants, decisions and their reasons, facts learned (file paths, names, \
         numbers, errors), what the tools returned that still matters, what was done and what \
         is left to do. Leave out greetings and whatever no longer matters. Answer with the \
         summary only, as plain text; do not call tools.",
    );
    if let Some(extra) = instructions.filter(|i| !i.trim().is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(extra.trim());
    }
    prompt
}

/// The user message of the summary request: the older messages written out.
pub(crate) fn request_text(older: &[Message]) -> String {
    let mut parts: Vec<String> = older.iter().map(written).collect();
    let total = |p: &[String]| p.iter().map(String::len).sum::<usize>();
    // Over the cap: leave out messages from the middle (the task at the start and the state
    // at the end matter most), saying how many.
    let mut left_out = 0usize;
    while total(&parts) > TOTAL_CAP && parts.len() > 2 {
        parts.remove(parts.len() / 2);
        left_out += 1;
    }
    if left_out > 0 {
        let at = parts.len() / 2;
        parts.insert(at, format!("[... {left_out} messages left out here ...]"));
    }
    format!(
        "Summarise this conversation:\n\n<conversation>\n{}\n</conversation>",
        parts.join("\n\n")
    )
}

fn written(m: &Message) -> String {
    let images = m.images().count();
    let images = match images {
        0 => String::new(),
        1 => " [an image]".to_string(),
        n => format!(" [{n} images]"),
    };
    let text = match m {
        Message::User { .. } => format!("User: {}{images}", m.text()),
        Message::Assistant { .. } => {
            let mut out = format!("Assistant: {}", m.text());
            for c in m.tool_calls() {
                out.push_str(&format!(
                    "\nAssistant called {} with {}",
                    c.name, c.arguments
                ));
            }
            out
        }
        Message::Tool { name, is_error, .. } => {
            let kind = if *is_error { "error" } else { "result" };
            format!("Tool {name} {kind}: {}{images}", m.text())
        }
    };
    cut(&text, MESSAGE_CAP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conversation_is_written_out_and_bounded() {
        let older = vec![
            Message::user("read a.txt"),
            Message::tool_result("c", "read", "y".repeat(100_000), true),
        ];
        let text = request_text(&older);
        assert!(text.contains("User: read a.txt"));
        assert!(text.contains("Tool read error: yyy"));
        assert!(text.len() < 20_000, "{}", text.len());
        let many: Vec<Message> = (0..100)
            .map(|i| Message::user(format!("{i} {}", "z".repeat(10_000))))
            .collect();
        let text = request_text(&many);
        assert!(text.len() <= TOTAL_CAP + 200);
        assert!(text.contains("User: 0 ") && text.contains("User: 99 "));
        assert!(text.contains("messages left out here"));
        assert!(system_prompt(Some("Keep the numbers.")).ends_with("Keep the numbers."));
    }
}
