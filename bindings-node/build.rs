//! napi-rs's build setup, and for release builds on Linux packed relative relocations
//! (`-z pack-relative-relocs`, DT_RELR), as bindings-uniffi/build.rs does for the jar: the
//! module's 25,000 relative relocations take 609 KB of `.rela.dyn` as RELA entries, which the
//! loader reads in whole at every `require` (resident pages of every process that loads the
//! module), and a few KB as RELR. The loader needs glibc 2.36 or later for it (the module already
//! needed 2.34 for the symbols it links); dev builds are left as they were.

fn main() {
    napi_build::setup();
    println!("cargo:rerun-if-changed=build.rs");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if release && linux {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,pack-relative-relocs");
    }
}
