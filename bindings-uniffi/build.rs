//! Release builds of the library pack its relative relocations (`-z pack-relative-relocs`,
//! DT_RELR): UniFFI's scaffolding adds about a megabyte of them (vtables, string pointers), which
//! kept the Kotlin jar's native library over its 15 MB budget. The loader needs glibc 2.36 or
//! later for it; dev builds are left as they were.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if release && linux {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,pack-relative-relocs");
    }
}
