//! Transcripts as JavaScript holds them: snapshots that share their messages.
//!
//! Every turn's result carries the whole conversation after the turn. A program that never reads
//! `result.transcript` leaves it to V8's garbage collector, which sees only a small wrapper object
//! and is in no hurry to collect it, so one long conversation may hold hundreds of uncollected
//! snapshots (docs/benchmarks.md, "Node binding: memory"). Sharing the messages behind `Arc`s was
//! not enough: a snapshot that held one pointer per message still made N snapshots of a growing
//! conversation cost N^2 / 2 pointers (800 turns: about 10 MB). A [`Snapshot`] is therefore a
//! chain of shared [`Segment`]s, each holding the messages one turn added after the segment
//! before it: a further snapshot costs one small segment with its new messages, whatever the
//! conversation's length.
//!
//! Hand-written rather than `imbl::Vector`: an RRB vector copies its 64-slot tail chunk (and the
//! path to it) on every push after a clone, about 1 KB per snapshot against this chain's ~100
//! bytes, and would add five crates to the module for the one operation a snapshot needs.

use std::sync::{Arc, Mutex, PoisonError};

use contenox::{Message, Transcript};
use napi::Env;
use napi_derive::napi;

use crate::{convert, error};
use serde::{Serialize, Serializer};

/// Messages a turn added to a conversation, after those of the segments before it.
struct Segment {
    /// The conversation before this segment's first message (`None`: it starts the conversation).
    before: Option<Arc<Segment>>,
    /// How many messages the segments before it hold.
    start: usize,
    /// Its own messages (never empty), each possibly shared with other snapshots.
    messages: Box<[Arc<Message>]>,
}

impl Segment {
    /// How many messages the conversation up to and including this segment holds.
    fn end(&self) -> usize {
        self.start + self.messages.len()
    }
}

impl Drop for Segment {
    /// Unlinks the chain one segment at a time: the default drop would recurse once per segment
    /// this one alone keeps alive, and a conversation of 100,000 turns would overflow the stack.
    fn drop(&mut self) {
        let mut next = self.before.take();
        // `into_inner` (not `try_unwrap`): of two threads dropping the last two handles at once,
        // exactly one gets the segment, so none is leaked and none is dropped twice.
        while let Some(segment) = next.and_then(Arc::into_inner) {
            let mut segment = segment;
            next = segment.before.take();
        }
    }
}

/// A conversation frozen at one moment; its messages may be shared with other snapshots.
#[derive(Clone, Default)]
pub struct Snapshot {
    /// The segment holding its last messages (`None`: an empty conversation).
    last: Option<Arc<Segment>>,
}

impl Snapshot {
    /// A snapshot that shares nothing (a loaded transcript).
    pub fn new(transcript: Transcript) -> Snapshot {
        Snapshot::after(
            None,
            transcript.messages.into_iter().map(Arc::new).collect(),
        )
    }

    /// `before` followed by `messages` (no new segment when there are none).
    fn after(before: Option<Arc<Segment>>, messages: Box<[Arc<Message>]>) -> Snapshot {
        if messages.is_empty() {
            return Snapshot { last: before };
        }
        let start = before.as_ref().map_or(0, |s| s.end());
        Snapshot {
            last: Some(Arc::new(Segment {
                before,
                start,
                messages,
            })),
        }
    }

    /// How many messages it holds.
    pub fn len(&self) -> usize {
        self.last.as_ref().map_or(0, |s| s.end())
    }

    /// Its segments, oldest first (one pointer per segment: reading is linear in its length).
    fn segments(&self) -> Vec<&Arc<Segment>> {
        let mut segments = Vec::new();
        let mut next = self.last.as_ref();
        while let Some(segment) = next {
            segments.push(segment);
            next = segment.before.as_ref();
        }
        segments.reverse();
        segments
    }

    /// The shared messages, oldest first.
    fn shared(&self) -> impl Iterator<Item = &Arc<Message>> {
        self.segments().into_iter().flat_map(|s| s.messages.iter())
    }

    /// The messages, oldest first.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.shared().map(|m| &**m)
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
            version: u32,
            messages: Messages<'a>,
        }
        struct Messages<'a>(&'a Snapshot);
        impl Serialize for Messages<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.messages())
            }
        }
        // Cannot fail: messages hold strings and `Value`s, whose map keys are strings.
        serde_json::to_string_pretty(&Document {
            version: contenox::TRANSCRIPT_VERSION,
            messages: Messages(self),
        })
        .expect("a transcript always serializes")
    }
}

/// One client's most recent snapshot, which the next one extends where they agree.
#[derive(Default)]
pub struct Snapshots {
    last: Mutex<Snapshot>,
}

impl Snapshots {
    /// Freeze `transcript` (the engine's copy of the conversation). It shares the longest run of
    /// the previous snapshot's segments that it begins with, and after those every message that
    /// equals the one at the same place in the previous snapshot; the engine's copies of shared
    /// messages are dropped here. A conversation that was replaced or compacted simply shares
    /// less.
    pub fn share(&self, transcript: Transcript) -> Snapshot {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let previous: Vec<&Arc<Message>> = last.shared().collect();
        let common = previous
            .iter()
            .zip(&transcript.messages)
            .take_while(|&(prev, m)| ***prev == *m)
            .count();
        // The deepest segment that ends within the common beginning.
        let mut base = last.last.clone();
        while let Some(segment) = base.as_ref().filter(|s| s.end() > common) {
            base = segment.before.clone();
        }
        let start = base.as_ref().map_or(0, |s| s.end());
        let messages = transcript
            .messages
            .into_iter()
            .enumerate()
            .skip(start)
            .map(|(i, m)| match previous.get(i) {
                Some(prev) if ***prev == m => Arc::clone(prev),
                _ => Arc::new(m),
            })
            .collect();
        drop(previous);
        let snapshot = Snapshot::after(base, messages);
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
            messages.push(Message::user(format!("turn {i}")));
            messages.push(Message::assistant(
                "",
                vec![ToolCall {
                    id: format!("call_{i}"),
                    name: "echo".into(),
                    arguments: json!({"text": i.to_string()}),
                    raw_arguments: false,
                    via: None,
                }],
            ));
            messages.push(Message::tool_result(
                format!("call_{i}"),
                "echo",
                i.to_string(),
                i % 2 == 0,
            ));
            messages.push(Message::assistant(format!("done {i} <&>\u{1F600}"), vec![]));
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
        for (i, (a, b)) in first.shared().zip(second.shared()).enumerate() {
            assert!(Arc::ptr_eq(a, b), "message {i}");
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
        edited.messages[0] = Message::user("summary");
        let after = snapshots.share(edited.clone());
        assert_eq!(after.to_transcript(), edited);
        let (before_m, after_m): (Vec<_>, Vec<_>) =
            (before.shared().collect(), after.shared().collect());
        assert!(!Arc::ptr_eq(before_m[0], after_m[0]));
        assert!(Arc::ptr_eq(before_m[1], after_m[1]));
        assert_eq!(before.to_transcript(), conversation(2));
        // A shorter one (a fresh conversation) shares nothing it does not hold.
        let empty = snapshots.share(Transcript::default());
        assert_eq!(empty.len(), 0);
        assert_eq!(after.to_transcript(), edited);
    }

    /// Bytes this thread holds on the heap, so a test can weigh what it keeps alive.
    mod counting {
        use std::alloc::{GlobalAlloc, Layout, System};
        use std::cell::Cell;

        thread_local! {
            static LIVE: Cell<isize> = const { Cell::new(0) };
        }

        fn add(bytes: isize) {
            let _ = LIVE.try_with(|c| c.set(c.get() + bytes));
        }

        /// The system allocator, counting per thread.
        pub struct Counting;

        // SAFETY: every call is forwarded to `System` unchanged; only a counter is added.
        unsafe impl GlobalAlloc for Counting {
            unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
                let p = unsafe { System.alloc(layout) };
                if !p.is_null() {
                    add(layout.size() as isize);
                }
                p
            }
            unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
                let p = unsafe { System.alloc_zeroed(layout) };
                if !p.is_null() {
                    add(layout.size() as isize);
                }
                p
            }
            unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
                unsafe { System.dealloc(p, layout) };
                add(-(layout.size() as isize));
            }
            unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
                let q = unsafe { System.realloc(p, layout, new_size) };
                if !q.is_null() {
                    add(new_size as isize - layout.size() as isize);
                }
                q
            }
        }

        /// Bytes allocated and not yet freed by this thread.
        pub fn live() -> isize {
            LIVE.with(|c| c.get())
        }
    }

    #[global_allocator]
    static ALLOCATOR: counting::Counting = counting::Counting;

    #[test]
    fn many_snapshots_of_a_growing_conversation_cost_linear_memory() {
        // Issue 18: a program that keeps (or has not yet collected) every turn's result. Holding
        // one pointer per message, 400 snapshots cost ~6.4 KB each on average (quadratic in
        // total); a chain of segments costs one segment with the turn's four new messages.
        const TURNS: usize = 400;
        let snapshots = Snapshots::default();
        let before = counting::live();
        let kept: Vec<Snapshot> = (1..=TURNS)
            .map(|k| snapshots.share(conversation(k)))
            .collect();
        let all = counting::live() - before;
        assert_eq!(kept[TURNS - 1].to_transcript(), conversation(TURNS));
        drop(kept);
        // What remains: the client's last snapshot, that is the messages themselves.
        let messages = counting::live() - before;
        let per_snapshot = (all - messages) / (TURNS as isize - 1);
        assert!(
            per_snapshot < 256,
            "each further snapshot keeps {per_snapshot} bytes alive"
        );
    }

    #[test]
    fn a_further_snapshot_holds_only_the_new_messages() {
        let snapshots = Snapshots::default();
        let first = snapshots.share(conversation(2));
        let second = snapshots.share(conversation(3));
        let (a, b) = (first.last.as_ref().unwrap(), second.last.as_ref().unwrap());
        assert!(Arc::ptr_eq(a, b.before.as_ref().unwrap()));
        assert_eq!((b.start, b.messages.len()), (8, 4));
        // The same conversation again, or one of its earlier states: no new segment at all.
        let again = snapshots.share(conversation(3));
        assert!(Arc::ptr_eq(b, again.last.as_ref().unwrap()));
        let earlier = snapshots.share(conversation(2));
        assert!(Arc::ptr_eq(a, earlier.last.as_ref().unwrap()));
        assert_eq!(earlier.to_transcript(), conversation(2));
    }

    #[test]
    fn a_conversation_cut_inside_a_segment_shares_what_is_equal() {
        let snapshots = Snapshots::default();
        let two = snapshots.share(conversation(2));
        let three = snapshots.share(conversation(3));
        // Compacted: the first six messages kept, the rest replaced (inside the first segment).
        let mut cut = conversation(3);
        cut.messages.truncate(6);
        cut.messages.push(Message::user("summary"));
        let after = snapshots.share(cut.clone());
        assert_eq!(after.to_transcript(), cut);
        assert_eq!(after.to_json(), cut.to_json());
        let (old, new): (Vec<_>, Vec<_>) = (three.shared().collect(), after.shared().collect());
        for i in 0..6 {
            assert!(Arc::ptr_eq(old[i], new[i]), "message {i}");
        }
        // The snapshots before it are unchanged.
        assert_eq!(two.to_transcript(), conversation(2));
        assert_eq!(three.to_transcript(), conversation(3));
        // And the conversation grows on from the cut one.
        let mut grown = cut.clone();
        grown
            .messages
            .extend(conversation(4).messages.split_off(12));
        let next = snapshots.share(grown.clone());
        assert_eq!(next.to_transcript(), grown);
        assert_eq!(next.len(), 11);
    }

    #[test]
    fn a_long_chain_is_read_and_dropped_without_recursion() {
        // 200,000 one-message segments in a thread with a 128 KB stack: a recursive drop (or
        // read) would overflow it long before the end.
        std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(|| {
                let message = Arc::new(Message::user("x"));
                let mut snapshot = Snapshot::default();
                for _ in 0..200_000 {
                    snapshot = Snapshot::after(snapshot.last.take(), Box::new([message.clone()]));
                }
                assert_eq!(snapshot.len(), 200_000);
                assert_eq!(snapshot.messages().count(), 200_000);
                let copy = snapshot.clone();
                drop(snapshot);
                assert_eq!(copy.len(), 200_000);
                drop(copy);
                assert_eq!(Arc::strong_count(&message), 1);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn snapshots_taken_from_several_threads_are_each_whole() {
        let snapshots = Arc::new(Snapshots::default());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let snapshots = snapshots.clone();
                std::thread::spawn(move || {
                    for k in 1..=30 {
                        let turns = if t % 2 == 0 { k } else { 31 - k };
                        let s = snapshots.share(conversation(turns));
                        assert_eq!(s.to_transcript(), conversation(turns));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}

/// A conversation, kept on the Rust side (its messages shared with the client's other
/// snapshots); JSON only when asked for.
#[napi]
pub struct NativeTranscript(pub(crate) Snapshot);

#[napi]
impl NativeTranscript {
    /// Parse and check a saved transcript (core's JSON document).
    #[napi(factory)]
    pub fn from_json(env: &Env, json: String) -> napi::Result<NativeTranscript> {
        Transcript::from_json(&json)
            .map(|t| NativeTranscript(Snapshot::new(t)))
            .map_err(|e| error::to_js(env, e))
    }

    /// Core's JSON document (the format every binding saves and loads).
    #[napi]
    pub fn to_json(&self) -> String {
        self.0.to_json()
    }

    /// How many messages it holds.
    #[napi(getter)]
    pub fn length(&self) -> u32 {
        self.0.len() as u32
    }

    /// The messages in JavaScript's spelling, as JSON.
    #[napi]
    pub fn messages_json(&self) -> String {
        convert::messages(self.0.messages())
    }
}
