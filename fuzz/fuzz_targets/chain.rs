//! Chain documents: any bytes through `Chain::from_json` (the schema, then the strict checks),
//! and a chain that reads is run on a scripted model with a host tool, on a current-thread
//! runtime. A chain is hostile input: beyond "no panic", the run ends (done, error or
//! max_turns; libFuzzer's `-timeout` is the deadline), its final text and error stay within
//! the chain's caps, what it added to the conversation stays within `max_history_bytes`, and
//! the transcript it leaves is valid (every call has its result).
//!
//! The caps and the step limit are lowered for the run (a document's own smaller ones stay),
//! so one input runs in milliseconds; the caps' logic is the same at any size.
#![no_main]

use std::sync::Arc;

use contenox::chain::{Chain, Limits};
use contenox::{tool_fn, Client, Message, Outcome, ScriptEntry, ToolOutput, ToolSpec};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

const TEMPLATE: usize = 16 << 10;
const VARIABLE: usize = 32 << 10;
const HISTORY: usize = 128 << 10;
const STEPS: u32 = 64;

/// What the model answers, in order: text, calls of the host tool and of tools the chain may
/// not see, a call with arguments that are not an object.
fn script() -> Vec<ScriptEntry> {
    vec![
        ScriptEntry::tool_call("c1", "echo", json!({"text": "hi"})),
        ScriptEntry::text("tool-call weather 42"),
        ScriptEntry::tool_call("c2", "missing", json!({})),
        ScriptEntry::text("stop"),
        ScriptEntry::tool_call("c3", "echo", json!("not an object")),
        ScriptEntry::text("x".repeat(1000)),
        ScriptEntry::text(""),
        ScriptEntry::text("end"),
    ]
}

fn client() -> Client {
    let echo = Arc::new(tool_fn(
        ToolSpec::new("echo", "Echo its arguments.", json!({"type": "object"})),
        |args, _ctx| async move { Ok(ToolOutput::text(format!("echo {args}"))) },
    ));
    Client::builder()
        .script(script())
        .builtins(Vec::<String>::new())
        .tool(echo)
        .build()
        .expect("a scripted client builds")
}

/// The bytes of text a message holds (its texts, its calls' arguments, a result's name).
fn text_bytes(m: &Message) -> usize {
    let calls: usize = m
        .tool_calls()
        .map(|c| c.name.len() + c.arguments.to_string().len())
        .sum();
    m.text().len() + calls
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(chain) = Chain::from_json(&text) else {
        return;
    };
    let own = chain.limits();
    let caps = Limits {
        template_bytes: own.template_bytes.min(TEMPLATE),
        variable_bytes: own.variable_bytes.min(VARIABLE),
        history_bytes: own.history_bytes.min(HISTORY),
    };
    let steps = chain.max_steps().min(STEPS);
    let chain = chain.with_limits(caps).with_max_steps(steps);
    assert_eq!(chain.limits(), caps);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let client = client();
    let result = rt
        .block_on(client.run_chain(&chain, "what is the weather in Paris? 42"))
        .expect("the client is open");
    assert!(
        matches!(
            result.outcome,
            Outcome::Done | Outcome::Error | Outcome::MaxTurns
        ),
        "{:?}",
        result.outcome
    );
    assert!(
        result.final_text.len() <= caps.variable_bytes,
        "final text of {} bytes",
        result.final_text.len()
    );
    // An error is a raised text (a render or a variable) or the engine's own message.
    if let Some(error) = &result.error {
        let most = caps.template_bytes.max(caps.variable_bytes) + 4096;
        assert!(error.len() <= most, "an error of {} bytes", error.len());
    }
    // Within the cap, plus the calls left pending at the end (one scripted reply's worth).
    let added: usize = result.transcript.messages.iter().map(text_bytes).sum();
    assert!(
        added <= caps.history_bytes + 4096,
        "the run added {added} bytes to the conversation"
    );
    result
        .transcript
        .validate()
        .expect("the chain leaves a valid transcript");
});
