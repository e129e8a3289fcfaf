//! The UniFFI bindings generator, pinned to the `uniffi` version this crate is built with.
//!
//! `cargo run --manifest-path bindings-uniffi/bindgen/Cargo.toml -- generate <libcontenox_uniffi.so>
//! --language kotlin --out-dir <dir>` (gen.sh does this)

fn main() {
    uniffi::uniffi_bindgen_main()
}
