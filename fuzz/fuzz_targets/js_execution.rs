//! `js_execution` under arbitrary source: whatever the bytes (as UTF-8, lossily), the call
//! returns a result (never an error of the tool, never a crash of the host), within its time
//! limit plus the thread's start and teardown, with at most `max_output_bytes` of output plus
//! the line saying the cut, and a limit that was hit is an error result.
#![no_main]

use std::time::{Duration, Instant};

use contenox::{code, CodeExecutionConfig, ToolContext};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

const TIMEOUT_MS: u64 = 200;
const MAX_OUTPUT: u64 = 4096;

fuzz_target!(|data: &[u8]| {
    let source = String::from_utf8_lossy(data).into_owned();
    let limits = CodeExecutionConfig {
        timeout_ms: TIMEOUT_MS,
        memory_mb: 16,
        max_output_bytes: MAX_OUTPUT,
        ..CodeExecutionConfig::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let js = code::js_execution(limits);
    let started = Instant::now();
    let out = rt
        .block_on(js.call(
            json!({ "code": source }),
            ToolContext::detached(std::env::temp_dir(), "js_execution"),
        ))
        .expect("js_execution answers every source with a result");
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(TIMEOUT_MS) + Duration::from_secs(2),
        "ran {took:?} past its {TIMEOUT_MS} ms limit"
    );
    let text = out.content_text();
    if !out.is_error {
        // The content: at most MAX_OUTPUT bytes, plus the line that says the cut.
        let body = text.split("\n[output cut: ").next().unwrap_or_default();
        assert!(body.len() as u64 <= MAX_OUTPUT, "{} bytes of output", body.len());
    }
    for limit in ["time limit hit", "memory limit hit"] {
        if text.starts_with(limit) {
            assert!(out.is_error, "{limit} must be an error result");
        }
    }
});
