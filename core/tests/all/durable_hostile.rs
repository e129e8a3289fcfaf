//! Hostile checkpoints at resume: truncated, not JSON, huge, deeply nested, a wrong type in
//! every field, unknown fields, counters at their limits, a checkpoint of another client. Each
//! is refused with an error of kind `checkpoint` before anything runs (or, where the issue says
//! so, fails closed for its call), never a panic, and the client loses nothing: the good
//! checkpoint still resumes afterwards. And the v1 checkpoint saved from the engine that wrote
//! the format (`tests/data/checkpoint_v1.json`) still resumes, so a change that breaks old
//! checkpoints fails here.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use contenox::durable::{Answers, MAX_CHECKPOINT_BYTES};
use contenox::policy::Policy;
use contenox::{Answer, Client, ErrorKind, Outcome, ScriptEntry, TurnResult};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::durable::{counted, results, Host};

/// The checkpoint the engine wrote when version 1 was made: `read` (c0) ran, `write` (c1) is
/// asked by the policy's rule with no timeout. Written by the client of [`Fixture::client`].
const V1: &str = include_str!("../data/checkpoint_v1.json");

/// The parts of the client that wrote [`V1`] (its config and tools must stay the same for the
/// checkpoint to resume as it is).
struct Fixture {
    reads: Arc<AtomicU32>,
    writes: Arc<AtomicU32>,
}

impl Fixture {
    fn new() -> Self {
        Fixture {
            reads: Arc::default(),
            writes: Arc::default(),
        }
    }

    fn policy() -> Policy {
        Policy::from_value(&json!({"default_action": "allow",
            "rules": [{"tool": "write", "action": "approve"}]}))
        .unwrap()
    }

    fn client(&self, script: Vec<ScriptEntry>) -> Client {
        self.builder(script).build().unwrap()
    }

    fn builder(&self, script: Vec<ScriptEntry>) -> contenox::ClientBuilder {
        Client::builder()
            .script(script)
            .tool(counted("read", true, self.reads.clone()))
            .tool(counted("write", false, self.writes.clone()))
            .policy(Self::policy())
            .wait_for(Host::new(Answer::deny("the host must not be asked")))
    }

    fn ran(&self) -> (u32, u32) {
        (
            self.reads.load(Ordering::SeqCst),
            self.writes.load(Ordering::SeqCst),
        )
    }
}

fn approve_c1() -> Answers {
    Answers::from([("c1".to_string(), Answer::Approve)])
}

/// Seal `v` as the engine does: `digest` = SHA-256 of the rest's JSON text (sorted keys). What
/// an attacker who edits a checkpoint does too (the digest is a seal, not a signature).
fn reseal(mut v: Value) -> String {
    if let Value::Object(m) = &mut v {
        m.remove("digest");
    }
    let sum = Sha256::digest(v.to_string().as_bytes());
    let hex: String = sum.iter().map(|b| format!("{b:02x}")).collect();
    if let Value::Object(m) = &mut v {
        m.insert("digest".into(), Value::String(hex));
    }
    v.to_string()
}

/// Resume `text` on a fresh client of the fixture; the error when refused.
async fn resume(f: &Fixture, text: &str) -> Result<TurnResult, contenox::Error> {
    f.client(vec![ScriptEntry::text("done")])
        .resume(text, approve_c1())
        .await
}

/// Refused with kind `checkpoint`, saying `has`; nothing ran, the client's conversation as it
/// was.
async fn assert_refused(text: &str, has: &str) {
    let f = Fixture::new();
    let client = f.client(vec![ScriptEntry::text("done")]);
    let e = client.resume(text, approve_c1()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Checkpoint, "{e}");
    assert!(e.to_string().contains(has), "{e} (wanted {has:?})");
    assert_eq!(f.ran(), (0, 0), "nothing ran");
    assert!(client.transcript().messages.is_empty(), "nothing changed");
    // Nothing lost: the same client still resumes the good checkpoint.
    let done = client.resume(V1, approve_c1()).await.unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    assert_eq!(f.ran(), (0, 1));
}

#[tokio::test]
async fn the_v1_fixture_resumes_with_todays_engine() {
    let cp: Value = serde_json::from_str(V1).unwrap();
    assert_eq!(cp["version"], 1);
    let turn_id = cp["turn_id"].as_str().unwrap();
    let f = Fixture::new();
    let host = Host::new(Answer::deny("not asked"));
    let client = f
        .builder(vec![ScriptEntry::text("all done")])
        .wait_for(host.clone())
        .build()
        .unwrap();
    let done = client.resume(V1, approve_c1()).await.unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    assert_eq!(done.final_text, "all done");
    assert_eq!(
        f.ran(),
        (0, 1),
        "the recorded read replays; the write runs once"
    );
    assert_eq!(host.asked(), 0, "the answer stood in for the ask");
    let r = results(&done.transcript);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!((r[0].0.as_str(), r[0].2), ("c0", false));
    assert!(r[0].1.ends_with(&format!("as {turn_id}:c0")), "{r:?}");
    assert_eq!((r[1].0.as_str(), r[1].2), ("c1", false));
    assert!(r[1].1.ends_with(&format!("as {turn_id}:c1")), "{r:?}");
    done.transcript.validate().unwrap();
}

#[tokio::test]
async fn a_truncated_checkpoint_is_refused() {
    let len = V1.len();
    let mut cuts: Vec<usize> = (0..40).map(|i| i * len / 40).collect();
    cuts.extend([1, len - 1, len - 2]);
    for cut in cuts {
        let cut = (0..=cut).rev().find(|&c| V1.is_char_boundary(c)).unwrap();
        let f = Fixture::new();
        let e = resume(&f, &V1[..cut]).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Checkpoint, "cut at {cut}: {e}");
        assert_eq!(f.ran(), (0, 0));
    }
    assert_refused(&V1[..len / 2], "not JSON").await;
}

#[tokio::test]
async fn text_that_is_not_a_checkpoint_is_refused() {
    for (text, has) in [
        ("", "not JSON"),
        ("   ", "not JSON"),
        ("checkpoint", "not JSON"),
        ("{\"version\":1,}", "not JSON"),
        ("null", "not a JSON object"),
        ("[1]", "not a JSON object"),
        ("\"{}\"", "not a JSON object"),
        ("{}", "no numeric `version`"),
        ("{\"version\":\"1\"}", "no numeric `version`"),
        ("{\"version\":-1}", "no numeric `version`"),
        ("{\"version\":0}", "version 0"),
        ("{\"version\":1}", "no `digest`"),
        ("{\"version\":1,\"digest\":7}", "no `digest`"),
        (
            "{\"version\":1,\"digest\":\"00\"}",
            "does not match its digest",
        ),
    ] {
        assert_refused(text, has).await;
    }
    // Sealed, but not a checkpoint inside.
    assert_refused(&reseal(json!({"version": 1})), "not a checkpoint").await;
}

#[tokio::test]
async fn a_checkpoint_over_the_size_cap_is_refused_before_it_is_parsed() {
    // Valid JSON up to the cap and past it: the size decides, not the parser.
    let mut huge = String::with_capacity(MAX_CHECKPOINT_BYTES + 64);
    huge.push_str("{\"version\":1,\"pad\":\"");
    huge.extend(std::iter::repeat_n('a', MAX_CHECKPOINT_BYTES));
    huge.push_str("\"}");
    assert_refused(&huge, "more than the 256 MiB a checkpoint may be").await;
    // One byte under the cap is read (and refused for what it is).
    let pad = MAX_CHECKPOINT_BYTES - "{\"version\":1,\"pad\":\"\"}".len() - 1;
    huge.clear();
    huge.push_str("{\"version\":1,\"pad\":\"");
    huge.extend(std::iter::repeat_n('a', pad));
    huge.push_str("\"}");
    assert!(huge.len() < MAX_CHECKPOINT_BYTES);
    assert_refused(&huge, "no `digest`").await;
}

#[tokio::test]
async fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let depth = 200_000;
    let arrays = "[".repeat(depth) + &"]".repeat(depth);
    assert_refused(&arrays, "recursion limit").await;
    let objects = "{\"a\":".repeat(depth) + "1" + &"}".repeat(depth);
    assert_refused(&objects, "recursion limit").await;
    // Inside a real checkpoint: the call's arguments nested deeply.
    let deep = "[".repeat(depth) + &"]".repeat(depth);
    let text = V1.replacen("{\"n\":1}", &deep, 1);
    assert_ne!(text, V1);
    assert_refused(&text, "recursion limit").await;
}

/// Every node of `v` with its path (`a.b[0].c`).
fn paths(v: &Value, at: String, out: &mut Vec<(String, Value)>) {
    out.push((at.clone(), v.clone()));
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let next = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                paths(x, next, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                paths(x, format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// `v` with the node at `path` replaced.
fn replaced(v: &Value, path: &str, with: Value) -> Value {
    let mut v = v.clone();
    let mut node = &mut v;
    for step in path.split('.') {
        let (key, indexes) = match step.find('[') {
            Some(i) => (&step[..i], &step[i..]),
            None => (step, ""),
        };
        node = &mut node[key];
        for ix in indexes.split('[').filter(|s| !s.is_empty()) {
            node = &mut node[ix.trim_end_matches(']').parse::<usize>().unwrap()];
        }
    }
    *node = with;
    v
}

#[tokio::test]
async fn a_wrong_type_in_any_field_is_refused() {
    let cp: Value = serde_json::from_str(V1).unwrap();
    let mut all = Vec::new();
    paths(&cp, String::new(), &mut all);
    let mut tried = 0;
    let mut accepted = Vec::new();
    for (path, node) in all.into_iter().skip(1) {
        if path == "digest" {
            continue;
        }
        let wrong: Vec<Value> = match node {
            Value::String(_) => vec![json!(42), json!(true), json!([]), json!({})],
            Value::Number(_) => vec![json!("7"), json!(true), json!(-1), json!(1.5), json!([])],
            Value::Bool(_) => vec![json!("true"), json!(1), json!({})],
            Value::Object(_) => vec![json!("{}"), json!(1), json!([])],
            Value::Array(_) => vec![json!("[]"), json!(1), json!({})],
            Value::Null => vec![json!(1), json!({})],
        };
        for w in wrong {
            tried += 1;
            let text = reseal(replaced(&cp, &path, w.clone()));
            let f = Fixture::new();
            match resume(&f, &text).await {
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Checkpoint, "{path} = {w}: {e}");
                    assert_eq!(f.ran(), (0, 0), "{path} = {w}");
                }
                // Free-form JSON (a call's arguments, an ask's data) takes any type; the rest
                // of the engine reads it as it reads a model's.
                Ok(done) => {
                    assert!(f.ran().1 <= 1, "{path} = {w}");
                    assert_ne!(
                        done.outcome,
                        Outcome::Error,
                        "{path} = {w}: {:?}",
                        done.error
                    );
                    accepted.push((path.clone(), w.clone()));
                }
            }
        }
    }
    // What may take another type, and why:
    // - free-form JSON: a call's arguments, an ask's data (checked by digests where it matters:
    //   a reply's call against its ask's `call_digest`; an ask's request is re-made by the gate);
    // - a message's `content` as a string: the transcript's shorthand for one text part;
    // - `run` as `[]`: serde reads a struct from an array of its fields in order; with none
    //   given, every option is unset, as `{}` says.
    let free = |p: &str, w: &Value| {
        p.contains(".arguments")
            || p.contains(".data")
            || (p.ends_with(".content") && w.is_string())
            || (p == "run" && *w == json!([]))
    };
    let typed: Vec<_> = accepted.iter().filter(|(p, w)| !free(p, w)).collect();
    assert!(
        typed.is_empty(),
        "typed fields took a wrong type: {typed:?}"
    );
    assert!(tried > 100, "{tried}");
}

#[tokio::test]
async fn unknown_fields_are_refused() {
    let cp: Value = serde_json::from_str(V1).unwrap();
    for path in ["", "reply", "calls[0]", "calls[1]", "run"] {
        let mut v = cp.clone();
        let node = if path.is_empty() {
            &mut v
        } else {
            let mut n = &mut v;
            for step in path.split('.') {
                n = match step.split_once('[') {
                    Some((k, i)) => &mut n[k][i.trim_end_matches(']').parse::<usize>().unwrap()],
                    None => &mut n[step],
                };
            }
            n
        };
        node.as_object_mut()
            .unwrap_or_else(|| panic!("{path} is an object"))
            .insert("from_the_future".into(), json!(true));
        assert_refused(&reseal(v), "unknown field `from_the_future`").await;
    }
}

#[tokio::test]
async fn counters_at_their_limits_neither_panic_nor_run_twice() {
    let cp: Value = serde_json::from_str(V1).unwrap();
    for (path, value) in [
        ("seq", json!(u32::MAX)),
        ("index", json!(u32::MAX)),
        ("corrections", json!(u32::MAX)),
        ("budget.calls", json!(u64::MAX)),
        ("budget.tokens", json!(u64::MAX)),
        ("usage.input_tokens", json!(u64::MAX)),
        ("usage.output_tokens", json!(u64::MAX)),
        ("calls[1].level", json!(u64::MAX)),
        ("calls[1].deadline_ms", json!(u64::MAX)),
        ("calls[1].deadline_ms", json!(0)),
    ] {
        let text = reseal(replaced(&cp, path, value.clone()));
        let f = Fixture::new();
        match resume(&f, &text).await {
            Err(e) => assert_eq!(e.kind(), ErrorKind::Checkpoint, "{path} = {value}: {e}"),
            Ok(done) => {
                assert!(f.ran().1 <= 1, "{path} = {value}");
                assert!(done.transcript.validate().is_ok(), "{path} = {value}");
            }
        }
        // Past what the field holds: refused.
        // (JSON's reader takes 2^64 as a float; the engine reads it so too.)
        let over = reseal(replaced(&cp, path, json!(18_446_744_073_709_551_616.0_f64)));
        let f = Fixture::new();
        let e = resume(&f, &over).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Checkpoint, "{path}: {e}");
    }
    // A turn id that is not one the engine draws would reach tools in their keys: refused.
    for id in [
        "",
        "turn_",
        "turn_xyz",
        "turn_0:evil",
        "turn_00000000000000000000000000000000\n",
    ] {
        assert_refused(
            &reseal(replaced(&cp, "turn_id", json!(id))),
            "is not one this engine draws",
        )
        .await;
    }
}

#[tokio::test]
async fn a_checkpoint_of_another_client_fails_closed_for_its_calls() {
    // Another config (its system prompt): the unrecorded write is not run, the recorded read
    // replays, the turn goes on.
    let f = Fixture::new();
    let other = f
        .builder(vec![ScriptEntry::text("done")])
        .system("Another agent.")
        .build()
        .unwrap();
    let done = other.resume(V1, approve_c1()).await.unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    assert_eq!(f.ran(), (0, 0));
    let r = results(&done.transcript);
    assert!(!r[0].2, "{r:?}");
    assert!(r[1].2 && r[1].1.contains("config"), "{r:?}");
    // Another `write` tool (its spec changed): not run.
    let writes = Arc::new(AtomicU32::new(0));
    let reads = Arc::new(AtomicU32::new(0));
    let changed = Client::builder()
        .script(vec![ScriptEntry::text("done")])
        .tool(counted("read", true, reads.clone()))
        .tool(counted("write", true, writes.clone()))
        .policy(Fixture::policy())
        .build()
        .unwrap();
    let done = changed.resume(V1, approve_c1()).await.unwrap();
    assert_eq!(writes.load(Ordering::SeqCst), 0);
    let r = results(&done.transcript);
    assert!(r[1].2 && r[1].1.contains("the tool changed"), "{r:?}");
    // No `write` at all: an error result, nothing run.
    let reads = Arc::new(AtomicU32::new(0));
    let without = Client::builder()
        .script(vec![ScriptEntry::text("done")])
        .tool(counted("read", true, reads.clone()))
        .policy(Fixture::policy())
        .build()
        .unwrap();
    let done = without.resume(V1, approve_c1()).await.unwrap();
    let r = results(&done.transcript);
    assert!(r[1].2, "{r:?}");
    assert_eq!(reads.load(Ordering::SeqCst), 0);
}
