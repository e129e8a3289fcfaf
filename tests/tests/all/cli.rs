//! The binaries: `fake-model-server` (port line, stdin EOF exit), `fake-remote-service` (its
//! JSON line, control endpoints, stdin EOF exit) and `conformance-check` (exit codes), plus the
//! scenario files themselves.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use contenox_conformance::scenario::{scenario_files, Scenario};
use serde_json::json;

const SERVER: &str = env!("CARGO_BIN_EXE_fake-model-server");
const CHECK: &str = env!("CARGO_BIN_EXE_conformance-check");
const REMOTE: &str = env!("CARGO_BIN_EXE_fake-remote-service");

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
fn remote_service_prints_hooks_serves_and_exits_on_stdin_eof() {
    let dir = tempfile::tempdir().unwrap();
    // Written as text: the document's path order (/b before /a) must survive.
    let scenario = dir.path().join("r.json");
    std::fs::write(
        &scenario,
        r#"{"name": "r", "style": "openai", "prompt": "p", "model": [{"text": "hi"}],
            "remote": [
              {"name": "api", "headers": {"X-Key": "k"},
               "openapi": {"openapi": "3.1.0", "paths": {"/b": {"get": {}}, "/a": {"get": {}}}},
               "answers": [{"match": "GET /b", "json": {"ok": true}}]},
              {"name": "late", "unreachable": true, "protocol": "langserve",
               "tool": {"input_schema": {"type": "object"}},
               "answers": [{"match": "POST /", "text": "up"}]}]}"#,
    )
    .unwrap();
    let mut child = Command::new(REMOTE)
        .args(["--scenario", scenario.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let info: serde_json::Value = serde_json::from_str(&line).expect("one JSON line");
    let control = info["control"].as_u64().unwrap();
    let api = info["services"]["api"]["url"].as_str().unwrap().to_string();
    let late = info["services"]["late"]["url"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        info["hooks"],
        json!([{"name": "api", "url": api, "protocol": "openapi", "headers": {"X-Key": "k"}},
               {"name": "late", "url": late, "protocol": "langserve",
                "tool": {"input_schema": {"type": "object"}}}])
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let http = reqwest::Client::new();
        let doc = http
            .get(format!("{api}/openapi.json"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            doc.find("\"/b\"").unwrap() < doc.find("\"/a\"").unwrap(),
            "{doc}"
        );
        let answer = http.get(format!("{api}/b?x=1")).send().await.unwrap();
        assert_eq!(answer.text().await.unwrap(), r#"{"ok":true}"#);
        assert!(
            http.post(&late).send().await.is_err(),
            "down until /_fake/up"
        );
        let up = http
            .post(format!("http://127.0.0.1:{control}/_fake/up"))
            .send()
            .await
            .unwrap();
        assert!(up.status().is_success());
        let answer = http.post(&late).body("{}").send().await.unwrap();
        assert_eq!(answer.text().await.unwrap(), "up");
        let log: serde_json::Value = http
            .get(format!("http://127.0.0.1:{control}/_fake/remote_requests"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(log.as_array().unwrap().len(), 2, "{log}");
        assert_eq!(log[0]["service"], "api");
        assert_eq!(log[0]["query"], json!({"x": "1"}));
        assert_eq!(log[1]["service"], "late");
        assert_eq!(log[1]["body"], "{}");
    });
    drop(child.stdin.take());
    let status = wait_exit(&mut child, Duration::from_secs(5));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    let no_remote = write(
        dir.path(),
        "n.json",
        &json!({"name": "n", "style": "openai", "prompt": "p"}),
    );
    let out = Command::new(REMOTE)
        .args(["--scenario", no_remote.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no \"remote\""));
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
fn server_replays_a_recorded_stream_in_its_style() {
    let recording = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/recorded/anthropic-thinking-tool.chunks.txt"
    );
    let mut child = Command::new(SERVER)
        .args(["--replay", recording])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim_end().parse().expect("the first line is the port");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let post = |n: u8| {
        rt.block_on(async {
            reqwest::Client::new()
                .post(format!("http://127.0.0.1:{port}/v1/messages"))
                .json(&json!({"model": "fake", "stream": true, "max_tokens": n,
                              "messages": [{"role": "user", "content": "hi"}]}))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
    };
    // The style came from the chunks: anthropic's named events, each line as its data.
    let first = post(1);
    let lines = std::fs::read_to_string(recording).unwrap();
    let want: String = lines
        .lines()
        .map(|l| {
            let kind = serde_json::from_str::<serde_json::Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string();
            format!("event: {kind}\ndata: {l}\n\n")
        })
        .collect();
    assert_eq!(first, want);
    // Then the answer after the replay (streamed a word per delta).
    let second = post(2);
    assert!(second.contains(r#""text":"replay ""#) && second.contains(r#""text":"over""#));
    drop(child.stdin.take());
    let status = wait_exit(&mut child, Duration::from_secs(5));
    if status.is_none() {
        child.kill().unwrap();
    }
    assert!(status.expect("still running after stdin EOF").success());
    // A stream of a wire contenox has no style for is refused, naming the file.
    let dir = tempfile::tempdir().unwrap();
    let gemini = dir.path().join("g.chunks.txt");
    std::fs::write(
        &gemini,
        r#"{"candidates":[{"content":{"parts":[{"text":"x"}]}}]}"#,
    )
    .unwrap();
    let out = Command::new(SERVER)
        .args(["--replay", gemini.to_str().unwrap()])
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("g.chunks.txt"));
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
