//! The input tokens billed over one 20-request anthropic turn, with and without prompt caching,
//! as the fake server counts them (`"usage": "counted"`: one token per four bytes of each prompt
//! block, and the Messages API's prefix rule for the cache; see `tests/src/fake/prompt_cache.rs`).
//!
//! ```sh
//! cargo run -p contenox-conformance --example prompt_cache_bill
//! ```
//!
//! The turn: the ten default builtins offered, a system prompt, a prompt, then 19 requests each
//! answered with one `read` of a 2 KB file, and a final answer. "Billed" weighs the tokens at
//! Anthropic's prices relative to plain input: cache writes (5-minute) 1.25x, cache reads 0.1x.

use contenox::{Client, Config, Outcome};
use contenox_conformance::fake;
use contenox_conformance::scenario::{ModelEntry, Style};
use serde_json::{json, Value};

const REQUESTS: usize = 20;

fn script() -> Vec<ModelEntry> {
    let mut entries: Vec<Value> = (1..REQUESTS)
        .map(|i| {
            json!({"tool_calls": [{"id": format!("call_{i}"), "name": "read",
                "arguments": {"path": format!("src/part_{i}.txt")}}], "usage": "counted"})
        })
        .collect();
    entries.push(json!({"text": "I read every part; they agree.", "usage": "counted"}));
    serde_json::from_value(json!(entries)).expect("script")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(root.path().join("src")).expect("src");
    for i in 1..REQUESTS {
        let text: String = (0..40)
            .map(|line| format!("part {i} line {line}: the quick brown fox jumps over it\n"))
            .collect();
        std::fs::write(root.path().join(format!("src/part_{i}.txt")), text).expect("write");
    }
    println!(
        "| prompt_cache | requests | input tokens | uncached | cache writes | cache reads | billed (1x / 1.25x / 0.1x) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for cache in [false, true] {
        let server = fake::serve(script(), Style::Anthropic)
            .await
            .expect("fake server");
        let config: Config = serde_json::from_value(json!({
            "style": "anthropic",
            "base_url": server.base_url(),
            "model": "fake",
            "api_key": "test",
            "root": root.path(),
            "max_turns": REQUESTS + 1,
            "prompt_cache": cache,
            "system": "You are a careful engineer. Read what you need, then answer in one line.",
        }))
        .expect("config");
        let client = Client::from_config(config).expect("client");
        let result = client
            .run("Read src/part_1.txt to src/part_19.txt, one at a time, then tell me whether they agree.")
            .await
            .expect("turn");
        assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
        assert_eq!(server.requests.len(), REQUESTS);
        let u = result.usage;
        let uncached = u.input_tokens - u.cache_read_input_tokens - u.cache_creation_input_tokens;
        let billed = uncached as f64
            + 1.25 * u.cache_creation_input_tokens as f64
            + 0.1 * u.cache_read_input_tokens as f64;
        println!(
            "| {} | {REQUESTS} | {} | {uncached} | {} | {} | {billed:.0} |",
            if cache { "on (default)" } else { "off" },
            u.input_tokens,
            u.cache_creation_input_tokens,
            u.cache_read_input_tokens,
        );
        server.shutdown().await;
    }
}
