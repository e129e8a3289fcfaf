//! The event vocabulary: `conformance/event-schema.json` is the JSON Schema of core's `Event`
//! (derived with schemars). Every binding checks its own event types against this file
//! (Python `tests/test_events_schema.py`, Node `tests/events.test.mjs`, UniFFI
//! `src/event.rs` tests), so a new or changed core event fails here first, then in each
//! binding until it is mirrored there.
//!
//! `CONTENOX_UPDATE_SCHEMA=1 cargo test -p contenox-conformance --test all event_schema::` rewrites
//! the file after a deliberate change to `Event`.

use std::path::PathBuf;

fn committed() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance/event-schema.json")
}

fn derived() -> String {
    let schema = schemars::schema_for!(contenox::Event);
    serde_json::to_string_pretty(&schema).expect("a schema serializes") + "\n"
}

#[test]
fn the_committed_event_schema_is_the_one_core_derives() {
    let fresh = derived();
    if std::env::var_os("CONTENOX_UPDATE_SCHEMA").is_some() {
        std::fs::write(committed(), &fresh).expect("write the schema");
        return;
    }
    let on_disk = std::fs::read_to_string(committed()).unwrap_or_default();
    assert!(
        on_disk == fresh,
        "tests/conformance/event-schema.json is not the schema of core's Event any more: run \
         CONTENOX_UPDATE_SCHEMA=1 cargo test -p contenox-conformance --test all event_schema::, \
         commit it, and update every binding's events (their tests say which)"
    );
}

#[test]
fn every_event_kind_is_in_the_schema_with_its_tag() {
    let schema: serde_json::Value = serde_json::from_str(&derived()).unwrap();
    let variants = schema["oneOf"].as_array().expect("a tagged union");
    let tags: Vec<&str> = variants
        .iter()
        .map(|v| {
            v["properties"]["type"]["const"]
                .as_str()
                .expect("a const tag")
        })
        .collect();
    for kind in [
        "turn_start",
        "text_delta",
        "tool_call",
        "gate",
        "pending",
        "turn_end",
    ] {
        assert!(tags.contains(&kind), "{kind} not in {tags:?}");
    }
    let mut unique = tags.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), tags.len(), "{tags:?}");
}
