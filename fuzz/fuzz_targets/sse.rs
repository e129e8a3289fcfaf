//! The SSE decoder (openai, anthropic, MCP HTTP): any bytes, in chunks sized by the first
//! byte, end in events or a cap error, and no event's data passes the cap (asserted inside).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    contenox::fuzz::sse(data);
});
