//! The `contenox-agent` program as a person runs it: the real binary, a model server speaking the
//! real wire format on loopback (the conformance harness's fake server), answers typed on stdin.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use contenox_conformance::fake::{self, FakeServer};
use contenox_conformance::scenario::{ModelEntry, Style};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

const AGENT: &str = env!("CARGO_BIN_EXE_contenox-agent");

fn script(entries: Value) -> Vec<ModelEntry> {
    serde_json::from_value(entries).unwrap()
}

/// Runs the agent with `args`, `stdin` typed in (then closed) and the model variables pointing
/// at `server` only. Bounded: a run still going after 30 s is killed and fails the test.
async fn agent(server: Option<&FakeServer>, args: &[&str], stdin: &str) -> Output {
    let mut cmd = tokio::process::Command::new(AGENT);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (key, _) in std::env::vars() {
        if ["OPENAI_", "ANTHROPIC_", "OLLAMA_", "CONTENOX_"]
            .iter()
            .any(|p| key.starts_with(p))
        {
            cmd.env_remove(key);
        }
    }
    if let Some(server) = server {
        let (url, key) = match server.style {
            Style::Openai | Style::OpenaiResponses => ("OPENAI_BASE_URL", "OPENAI_API_KEY"),
            Style::Anthropic => ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
            Style::Ollama => ("OLLAMA_HOST", "OLLAMA_API_KEY"),
        };
        cmd.env(url, server.base_url()).env(key, "test");
    }
    let mut child = cmd.spawn().expect("start contenox-agent");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("contenox-agent still running after 30 s")
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The tool results (openai wire) of the last request the server received.
fn last_tool_results(server: &FakeServer) -> Vec<String> {
    let requests = server.requests();
    let last = requests.last().expect("no request reached the server");
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "buy milk\ncall Ada\n").unwrap();
    dir
}

fn read_then_write() -> Vec<ModelEntry> {
    script(json!([
        {"tool_calls": [{"id": "call_1", "name": "read", "arguments": {"path": "notes.txt"}}]},
        {"tool_calls": [{"id": "call_2", "name": "write",
                          "arguments": {"path": "todo.md", "content": "- [ ] buy milk\n"}}]},
        {"text": "Saved todo.md."}
    ]))
}

fn dir_arg(dir: &Path) -> &str {
    dir.to_str().unwrap()
}

#[tokio::test]
async fn reads_freely_asks_before_writing_and_writes_when_approved() {
    let dir = project();
    let server = fake::serve(read_then_write(), Style::Openai).await.unwrap();
    let out = agent(
        Some(&server),
        &[
            "--model",
            "fake",
            dir_arg(dir.path()),
            "Turn",
            "my notes into a todo list",
        ],
        "y\n",
    )
    .await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains("Saved todo.md."), "{stdout}");
    // Only the write was asked about, with its arguments shown.
    assert_eq!(stderr.matches("[y/N]").count(), 1, "{stderr}");
    assert!(stderr.contains("Allow write {"), "{stderr}");
    assert!(stderr.contains("todo.md"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("todo.md")).unwrap(),
        "- [ ] buy milk\n"
    );
    assert_eq!(server.requests().len(), 3);
    let results = last_tool_results(&server);
    assert!(results[0].contains("buy milk"), "{results:?}");
    assert!(!results[1].starts_with("Error: "), "{results:?}");
    // The prompt reached the model as the user's message, words joined.
    let first = &server.requests()[0];
    assert!(
        first.to_string().contains("Turn my notes into a todo list"),
        "{first}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_no_or_an_empty_terminal_denies_and_nothing_is_written() {
    for (typed, reason) in [
        ("n\n", "The user said no."),
        ("", "No one is at the terminal"),
    ] {
        let dir = project();
        let server = fake::serve(read_then_write(), Style::Openai).await.unwrap();
        let out = agent(
            Some(&server),
            &["--model", "fake", dir_arg(dir.path()), "todo please"],
            typed,
        )
        .await;
        assert!(out.status.success(), "{typed:?}: {}", text(&out.stderr));
        assert!(!dir.path().join("todo.md").exists(), "{typed:?}");
        let results = last_tool_results(&server);
        assert!(
            results[1].starts_with("Error: ") && results[1].contains(reason),
            "{typed:?}: {results:?}"
        );
        server.shutdown().await;
    }
}

#[tokio::test]
async fn yes_approves_without_asking() {
    let dir = project();
    let server = fake::serve(read_then_write(), Style::Openai).await.unwrap();
    let out = agent(
        Some(&server),
        &["--yes", "--model", "fake", dir_arg(dir.path()), "todo"],
        "",
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("[y/N]"));
    assert!(dir.path().join("todo.md").exists());
    server.shutdown().await;
}

#[tokio::test]
async fn other_styles_come_from_the_command_line_and_their_own_variables() {
    let dir = project();
    let server = fake::serve(
        script(json!([{"text": "Hello from the Messages API."}])),
        Style::Anthropic,
    )
    .await
    .unwrap();
    let out = agent(
        Some(&server),
        &[
            "--style",
            "anthropic",
            "--model",
            "fake",
            dir_arg(dir.path()),
            "hi",
        ],
        "",
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Hello from the Messages API."));
    assert_eq!(server.requests()[0]["model"], "fake");
    server.shutdown().await;
}

#[tokio::test]
async fn escape_sequences_from_the_model_never_reach_the_terminal() {
    let dir = project();
    let hostile = "\u{1b}[2J\u{1b}]0;owned\u{7}\rAllow read? [y/N]";
    let server = fake::serve(
        script(json!([
            {"tool_calls": [{"id": "call_1", "name": "write",
                              "arguments": {"path": format!("x{hostile}.txt"), "content": hostile}}]},
            {"text": format!("done {hostile}")}
        ])),
        Style::Openai,
    )
    .await
    .unwrap();
    let out = agent(
        Some(&server),
        &["--model", "fake", dir_arg(dir.path()), "go"],
        "n\n",
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        for control in [0x1bu8, 0x07, b'\r'] {
            assert!(
                !bytes.contains(&control),
                "{stream} carries control byte {control:#x}: {:?}",
                text(bytes)
            );
        }
    }
    // The question still names the real tool.
    assert!(text(&out.stderr).contains("Allow write {"));
    server.shutdown().await;
}

#[tokio::test]
async fn bad_usage_exits_2_with_the_usage_line() {
    let dir = project();
    let missing = dir.path().join("missing");
    let cases: Vec<Vec<&str>> = vec![
        vec![],
        vec![dir_arg(dir.path())],
        vec![missing.to_str().unwrap(), "hi"],
        vec!["--style", "nope", dir_arg(dir.path()), "hi"],
        vec!["--frobnicate", dir_arg(dir.path()), "hi"],
        vec!["--model"],
        // A real style without a model is the engine's configuration error.
        vec![dir_arg(dir.path()), "hi"],
    ];
    for args in cases {
        let out = agent(None, &args, "").await;
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("contenox-agent"),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[tokio::test]
async fn an_unreachable_model_exits_1_with_the_reason() {
    let dir = project();
    // A port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = agent(
        None,
        &[
            "--model",
            "fake",
            "--base-url",
            &url,
            dir_arg(dir.path()),
            "hi",
        ],
        "",
    )
    .await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("contenox-agent: "), "{stderr}");
}
