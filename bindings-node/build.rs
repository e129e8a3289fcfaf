//! napi-rs's build setup, and for release builds on Linux:
//!
//! - packed relative relocations (`-z pack-relative-relocs`, DT_RELR), as bindings-uniffi/build.rs
//!   does for the jar: the module's 25,000 relative relocations take 609 KB of `.rela.dyn` as
//!   RELA entries, which the loader reads in whole at every `require` (resident pages of every
//!   process that loads the module), and a few KB as RELR. The loader needs glibc 2.36 or later
//!   for it (the module already needed 2.34 for the symbols it links).
//! - on x86-64, hot-code.ld (written by scripts/hot-code.mjs from a profile): the functions that
//!   loading the module, creating a client and running turns execute, packed before the rest of
//!   `.text`. The kernel maps a file's pages in 64 KB-and-larger blocks around each fault, so with
//!   that code scattered over 8.7 MB a process had 7 MB of the module's code resident; packed, it
//!   has 1.5-1.8 MB (docs/benchmarks.md, "Node binding: memory"). The script names sections by
//!   pattern where hashes would go stale, and a stale entry only costs layout. It needs a linker
//!   that takes `INSERT BEFORE` (rust-lld, the toolchain's default there, and GNU ld; not gold,
//!   not mold), so it is left out when the build chooses its own linker, and
//!   `CONTENOX_HOT_CODE_LAYOUT=0` leaves it out too.
//!
//! Dev builds are left as they were.

fn main() {
    napi_build::setup();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=hot-code.ld");
    println!("cargo:rerun-if-env-changed=CONTENOX_HOT_CODE_LAYOUT");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let x86_64 = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64");
    if release && linux {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,pack-relative-relocs");
        if x86_64 && hot_code_layout_wanted() {
            let script = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
                .join("hot-code.ld");
            println!("cargo:rustc-cdylib-link-arg=-Wl,-T,{}", script.display());
        }
    }
}

/// Whether to pass hot-code.ld: not when switched off, and not when the build picks its own
/// linker (a linker that does not understand the script would fail the link, and the layout is
/// never worth a failed build).
fn hot_code_layout_wanted() -> bool {
    if std::env::var("CONTENOX_HOT_CODE_LAYOUT").is_ok_and(|v| v == "0") {
        return false;
    }
    if std::env::var_os("RUSTC_LINKER").is_some() {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    !flags
        .split('\x1f')
        .any(|f| f.contains("fuse-ld") || f.contains("linker") || f.contains("link-self-contained"))
}
