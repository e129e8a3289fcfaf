//! The UniFFI bindings generator, pinned to the `uniffi` version this crate is built with.
//!
//! `cargo run -p contenox-uniffi --bin uniffi-bindgen -- generate --library <libcontenox_uniffi.so>
//! --language kotlin --out-dir <dir>`

fn main() {
    uniffi::uniffi_bindgen_main()
}
