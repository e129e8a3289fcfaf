//! The NDJSON decoder (ollama): any bytes, in chunks sized by the first byte, end in lines or a
//! cap error, and no line passes the cap (asserted inside).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    contenox::fuzz::ndjson(data);
});
