//! Release builds of the library pack its relative relocations (`-z pack-relative-relocs`,
//! DT_RELR): UniFFI's scaffolding adds about a megabyte of them (vtables, string pointers), which
//! kept the Kotlin jar's native library over its 15 MB budget. The loader needs glibc 2.36 or
//! later for it; dev builds are left as they were.
//!
//! They also fold identical functions (`--icf=all`, lld: Rust's default linker on x86_64 Linux
//! since 1.90): generic instances that compile to the same machine code (drops, futures'
//! polls, serde visitors) are kept once. 313 KB of the library (14.71 -> 14.39 MB). Rust gives no
//! guarantee that two functions have different addresses, and lld folds only read-only
//! sections, so statics (tracing's callsites, once-cells) keep their own addresses.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if release && linux {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,pack-relative-relocs");
        // Only where lld is the default linker: GNU ld has no `--icf`.
        if std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64") {
            println!("cargo:rustc-cdylib-link-arg=-Wl,--icf=all");
        }
    }
}
