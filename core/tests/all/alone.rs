//! Tests that change what a whole process shares (environment variables the engine or its
//! children read) run alone in a process of their own: this test binary again, started by the
//! test that owns them, with only that one test selected. In the one process every other test
//! shares, `set_var` would race the other threads' reads of the environment (libc's `getenv` is
//! not synchronised with it) and leak the variables into the other tests' children.
//!
//! The pair: an ordinary test calls `alone::run("module::name_alone")`; the ignored test
//! `name_alone` starts with `if !alone::here("module::name_alone") { return; }` and ends with
//! `alone::done()`. Run by hand outside its own process (`--ignored`), it does nothing.

use std::process::Command;

/// Names the test a process of its own was started for.
const ALONE: &str = "CONTENOX_TEST_ALONE";
/// Printed by `done`: the body ran to its end in that process.
const DONE: &str = "contenox-test-alone: done";

/// Runs the ignored test `path` (its path in this binary) as the only test of a fresh process of
/// this binary, and fails with that process's output unless the test ran to its end and passed.
pub fn run(path: &str) {
    let exe = std::env::current_exe().expect("the test binary's own path");
    let out = Command::new(exe)
        .args([
            path,
            "--exact",
            "--ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(ALONE, path)
        .output()
        .expect("start the test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(DONE) && stdout.contains("1 passed"),
        "{path} in a process of its own: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
}

/// Whether this process is the one `run` started for `path`.
pub fn here(path: &str) -> bool {
    std::env::var(ALONE).is_ok_and(|p| p == path)
}

/// Marks the end of the body of a test run by `run`.
pub fn done() {
    println!("{DONE}");
}
