//! Where a conversation is cut: the older part is summarised, the most recent messages stay,
//! and a tool call is never separated from its result.

use crate::transcript::Message;

/// What starts the message that replaces the older part: how the model (and a host reading
/// the transcript) knows it is a summary.
pub const SUMMARY_HEADER: &str = "[Summary of the earlier conversation]";

/// The index where the kept part begins: at most `keep_recent` messages from the end, moved
/// earlier while it would begin with a tool result (whose call must stay with it).
pub(crate) fn split_point(messages: &[Message], keep_recent: usize) -> usize {
    let mut at = messages.len().saturating_sub(keep_recent);
    while at > 0 && matches!(messages.get(at), Some(Message::Tool { .. })) {
        at -= 1;
    }
    at
}

/// Whether summarising `older` can shrink anything: not when it is empty or only the summary
/// of an earlier compaction.
pub(crate) fn worth_compacting(older: &[Message]) -> bool {
    match older {
        [] => false,
        [only] => !is_summary(only),
        _ => true,
    }
}

/// The message that stands for the older part.
pub(crate) fn summary_message(summary: &str) -> Message {
    Message::user(format!("{SUMMARY_HEADER}\n{summary}"))
}

/// Whether `m` is the summary of an earlier compaction.
pub(crate) fn is_summary(m: &Message) -> bool {
    matches!(m, Message::User { .. } if m.text().starts_with(SUMMARY_HEADER))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::ToolCall;

    fn user(t: &str) -> Message {
        Message::user(t)
    }
    fn calls(ids: &[&str]) -> Message {
        Message::assistant(
            "",
            ids.iter()
                .map(|id| ToolCall {
                    id: id.to_string(),
                    name: "read".into(),
                    arguments: serde_json::json!({}),
                    raw_arguments: false,
                    via: None,
                })
                .collect(),
        )
    }
    fn result(id: &str) -> Message {
        Message::tool_result(id, "read", "x", false)
    }
    fn text(t: &str) -> Message {
        Message::assistant(t, vec![])
    }

    #[test]
    fn never_between_a_call_and_its_results() {
        // 0 user, 1 calls(a, b), 2 result a, 3 result b, 4 text, 5 user
        let m = vec![
            user("q"),
            calls(&["a", "b"]),
            result("a"),
            result("b"),
            text("t"),
            user("next"),
        ];
        assert_eq!(split_point(&m, 2), 4);
        assert_eq!(split_point(&m, 3), 1, "would begin with result b");
        assert_eq!(split_point(&m, 4), 1, "would begin with result a");
        assert_eq!(split_point(&m, 5), 1);
        assert_eq!(split_point(&m, 6), 0);
        assert_eq!(split_point(&m, 60), 0);
        assert_eq!(split_point(&m, 0), 6);
        // Whatever is kept, it is a valid transcript on its own.
        for keep in 0..8 {
            let at = split_point(&m, keep);
            let mut kept = vec![summary_message("s")];
            kept.extend_from_slice(&m[at..]);
            crate::transcript::Transcript { messages: kept }
                .validate()
                .unwrap();
        }
    }

    #[test]
    fn a_lone_earlier_summary_is_not_worth_compacting() {
        assert!(!worth_compacting(&[]));
        assert!(!worth_compacting(&[summary_message("s")]));
        assert!(worth_compacting(&[user("q")]));
        assert!(worth_compacting(&[summary_message("s"), user("q")]));
        assert!(is_summary(&summary_message("s")));
        assert!(!is_summary(&user("s")));
    }
}
