//! The two binaries: `fake-model-server` (port line, stdin EOF exit) and `conformance-check`
//! (exit codes), plus the scenario files themselves.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use contenox_conformance::scenario::{scenario_files, Scenario};
use serde_json::json;

const SERVER: &str = env!("CARGO_BIN_EXE_fake-model-server");
const CHECK: &str = env!("CARGO_BIN_EXE_conformance-check");

fn write(dir: &Path, name: &str, v: &serde_json::Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    path
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < within {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn server_prints_port_serves_and_exits_on_stdin_eof() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(
        dir.path(),
        "s.json",
        &json!({"name": "s", "style": "openai", "prompt": "p", "model": [{"text": "hi"}]}),
    );
    let mut child = Command::new(SERVER)
        .args([
            "--scenario",
            scenario.to_str().unwrap(),
            "--style",
            "ollama",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim_end().parse().expect("the first line is the port");
    // --style overrides the scenario's style: /api/chat answers.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body: serde_json::Value = rt.block_on(async {
        reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/api/chat"))
            .json(&json!({"model": "fake", "stream": false, "messages": []}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    assert_eq!(body["message"]["content"], "hi");
    assert!(
        child.try_wait().unwrap().is_none(),
        "exited with stdin open"
    );
    let mut stdin = child.stdin.take().unwrap();
    stdin.flush().unwrap();
    drop(stdin);
    let status = wait_exit(&mut child, Duration::from_secs(5));
    if status.is_none() {
        child.kill().unwrap();
    }
    assert!(status.expect("still running after stdin EOF").success());
}

#[test]
fn server_rejects_bad_arguments() {
    let out = Command::new(SERVER).stdin(Stdio::piped()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(SERVER)
        .args(["--scenario", "/nonexistent.json"])
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.json"));
}

#[test]
fn checker_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(
        dir.path(),
        "s.json",
        &json!({"name": "s", "style": "openai", "prompt": "p", "model": [{"text": "hi"}],
                "expect": {"outcome": "done", "final_text": "hi", "request_count": 1}}),
    );
    let good = write(
        dir.path(),
        "good.json",
        &json!({"scenario": "s", "binding": "test", "outcome": "done", "final_text": "hi",
                "events": [], "requests": [{}], "workspace": {}}),
    );
    let bad = write(
        dir.path(),
        "bad.json",
        &json!({"scenario": "s", "binding": "test", "outcome": "error", "final_text": "hi",
                "events": [], "requests": [], "workspace": {}}),
    );
    let run = |trace: &Path| {
        Command::new(CHECK)
            .arg(&scenario)
            .arg(trace)
            .output()
            .unwrap()
    };
    let out = run(&good);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    let out = run(&bad);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(stdout.contains("outcome: expected \"done\", got \"error\""));
    assert!(stdout.contains("request_count: expected 1, got 0"));
    let out = run(&dir.path().join("missing.json"));
    assert_eq!(out.status.code(), Some(2));
}

/// Every scenario the project and the shared folder hold parses, validates and is named after
/// its file.
#[test]
fn scenario_files_load() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dirs = [
        manifest.join("conformance/scenarios"),
        manifest.join("../../shared/conformance/scenarios"),
    ];
    let files = scenario_files(&dirs).unwrap();
    assert!(!files.is_empty(), "no scenario found in {dirs:?}");
    for file in files {
        let s = Scenario::load(&file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            Some(s.name.as_str()),
            file.file_stem().and_then(|s| s.to_str()),
            "{}",
            file.display()
        );
    }
}
