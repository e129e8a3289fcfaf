//! The HTML conversion `web_fetch` runs on every page: any bytes convert to Markdown without a
//! panic, a stack overflow or an unbounded stall. The per-input deadline is libFuzzer's
//! `-timeout` (bench/fuzz/run.sh sets it): an input that takes longer is reported as a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The converting thread cannot fail to start or panic: either is a bug.
    contenox::builtin::html_to_markdown(data).expect("the HTML conversion failed");
});
