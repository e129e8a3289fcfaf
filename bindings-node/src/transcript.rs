//! Transcripts as JavaScript holds them: snapshots that share their messages.
//!
//! Every turn's result carries the whole conversation after the turn. A program that never reads
//! `result.transcript` leaves it to V8's garbage collector, which sees only a small wrapper object
//! and is in no hurry to collect it: in one long conversation the uncollected copies added up to
//! the square of its length (200 turns, ~800 messages: about 15 MB resident, see
//! docs/benchmarks.md, "Node binding: memory"). A [`Snapshot`] holds its messages behind `Arc`s,
//! and a client's [`Snapshots`] reuse the messages a new snapshot has in common with the one
//! before it, so each further snapshot costs one pointer per message plus the messages that are
//! new.

use std::sync::{Arc, Mutex, PoisonError};

use contenox::{Message, Transcript};
use serde::{Serialize, Serializer};

/// A conversation frozen at one moment; its messages may be shared with other snapshots.
#[derive(Clone, Default)]
pub struct Snapshot {
    messages: Arc<[Arc<Message>]>,
}

impl Snapshot {
    /// A snapshot that shares nothing (a loaded transcript).
    pub fn new(transcript: Transcript) -> Snapshot {
        Snapshot {
            messages: transcript.messages.into_iter().map(Arc::new).collect(),
        }
    }

    /// How many messages it holds.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// The messages, oldest first.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.messages.iter().map(|m| &**m)
    }

    /// Core's transcript (a copy of every message: for handing it back to the engine).
    pub fn to_transcript(&self) -> Transcript {
        Transcript {
            messages: self.messages().cloned().collect(),
        }
    }

    /// Core's JSON document, byte for byte what [`Transcript::to_json`] writes, without copying
    /// the messages first.
    pub fn to_json(&self) -> String {
        /// `Transcript`'s serialized shape over borrowed messages.
        #[derive(Serialize)]
        struct Document<'a> {
            messages: Messages<'a>,
        }
        struct Messages<'a>(&'a [Arc<Message>]);
        impl Serialize for Messages<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.iter().map(|m| &**m))
            }
        }
        serde_json::to_string_pretty(&Document {
            messages: Messages(&self.messages),
        })
        .expect("a transcript always serializes")
    }
}

/// One client's most recent snapshot, whose messages the next one reuses where they are equal.
#[derive(Default)]
pub struct Snapshots {
    last: Mutex<Snapshot>,
}

impl Snapshots {
    /// Freeze `transcript` (the engine's copy of the conversation), sharing every message that
    /// equals the one at the same place in the previous snapshot; the engine's copies of those are
    /// dropped here. A conversation that was replaced or compacted simply shares less.
    pub fn share(&self, transcript: Transcript) -> Snapshot {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let messages: Arc<[Arc<Message>]> = transcript
            .messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| match last.messages.get(i) {
                Some(prev) if **prev == m => prev.clone(),
                _ => Arc::new(m),
            })
            .collect();
        let snapshot = Snapshot { messages };
        *last = snapshot.clone();
        snapshot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contenox::ToolCall;
    use serde_json::json;

    fn conversation(turns: usize) -> Transcript {
        let mut messages = Vec::new();
        for i in 1..=turns {
            messages.push(Message::User {
                content: format!("turn {i}"),
            });
            messages.push(Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: format!("call_{i}"),
                    name: "echo".into(),
                    arguments: json!({"text": i.to_string()}),
                    raw_arguments: false,
                    via: None,
                }],
            });
            messages.push(Message::Tool {
                call_id: format!("call_{i}"),
                name: "echo".into(),
                content: i.to_string(),
                is_error: i % 2 == 0,
            });
            messages.push(Message::Assistant {
                content: format!("done {i} <&>\u{1F600}"),
                tool_calls: vec![],
            });
        }
        Transcript { messages }
    }

    #[test]
    fn to_json_is_cores_document_byte_for_byte() {
        let t = conversation(3);
        assert_eq!(Snapshot::new(t.clone()).to_json(), t.to_json());
        assert_eq!(
            Snapshot::new(Transcript::default()).to_json(),
            Transcript::default().to_json()
        );
    }

    #[test]
    fn round_trips_to_the_same_transcript() {
        let t = conversation(2);
        let s = Snapshot::new(t.clone());
        assert_eq!(s.len(), 8);
        assert_eq!(s.to_transcript(), t);
        assert_eq!(s.messages().cloned().collect::<Vec<_>>(), t.messages);
    }

    #[test]
    fn a_grown_conversation_shares_its_older_messages() {
        let snapshots = Snapshots::default();
        let first = snapshots.share(conversation(2));
        let second = snapshots.share(conversation(3));
        assert_eq!(second.to_transcript(), conversation(3));
        for i in 0..first.len() {
            assert!(
                Arc::ptr_eq(&first.messages[i], &second.messages[i]),
                "message {i}"
            );
        }
        // The first snapshot is unchanged by the second.
        assert_eq!(first.to_transcript(), conversation(2));
    }

    #[test]
    fn a_replaced_conversation_shares_only_what_is_equal() {
        let snapshots = Snapshots::default();
        let before = snapshots.share(conversation(2));
        // A compacted or edited conversation: a different first message, the rest as before.
        let mut edited = conversation(2);
        edited.messages[0] = Message::User {
            content: "summary".into(),
        };
        let after = snapshots.share(edited.clone());
        assert_eq!(after.to_transcript(), edited);
        assert!(!Arc::ptr_eq(&before.messages[0], &after.messages[0]));
        assert!(Arc::ptr_eq(&before.messages[1], &after.messages[1]));
        assert_eq!(before.to_transcript(), conversation(2));
        // A shorter one (a fresh conversation) shares nothing it does not hold.
        let empty = snapshots.share(Transcript::default());
        assert_eq!(empty.len(), 0);
        assert_eq!(after.to_transcript(), edited);
    }
}
