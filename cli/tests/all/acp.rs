//! `contenox acp` as a real process with a registered hook: the registry from `--db`, the
//! hooks `--hooks` selects loaded into every session beside the builtins, and the approval
//! policy asking before a hook call (the editor approves). The protocol itself is tested with
//! real ACP clients in tests/acp (scripts/test.sh acp); this is the CLI's side: flags, registry,
//! stdout that carries nothing but JSON-RPC, a clean exit when stdin closes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::{both, contenox, Service, BIN};

#[test]
fn a_registered_hook_is_a_tool_of_every_session() {
    let service = Service::start("quickstart", &[]);
    let work = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(work.path()).unwrap();
    let db = root.join(".contenox/local.db");
    let out = contenox(&db)
        .args(["hook", "add", "myapp", "--url", &service.url])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let script = root.join("script.json");
    std::fs::write(
        &script,
        json!([
            {"tool_calls": [{"id": "c1", "name": "summarize_text",
                "arguments": {"text": "contenox registers internal APIs as tools once", "max_words": 3}}]},
            {"text": "Summarized."}
        ])
        .to_string(),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .current_dir(&root)
        .env_remove("CONTENOX_DB")
        .args([
            "--db",
            db.to_str().unwrap(),
            "acp",
            "--hooks",
            "myapp",
            "--builtins",
            "none",
        ])
        .args(["--script", script.to_str().unwrap()])
        .args(["--data-dir", root.join("data").to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |m: Value| writeln!(stdin, "{m}").unwrap();
    let mut next = || -> Value {
        let line = lines.next().expect("a line").unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"))
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    assert_eq!(next()["result"]["protocolVersion"], 1);
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                "params": {"cwd": root, "mcpServers": []}}));
    let sid = next()["result"]["sessionId"].as_str().unwrap().to_string();
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "summarize"}]}}),
    );
    let mut seen = Vec::new();
    let answer = loop {
        let m = next();
        if m["method"] == "session/request_permission" {
            // The default preset asks before a hook call; the editor allows it.
            assert_eq!(m["params"]["toolCall"]["toolCallId"], "c1");
            send(json!({"jsonrpc": "2.0", "id": m["id"],
                        "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}));
            continue;
        }
        if m["id"] == 2 {
            break m;
        }
        seen.push(m["params"]["update"].clone());
    };
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let done = seen
        .iter()
        .rfind(|u| u["toolCallId"] == "c1")
        .expect("an update of the hook call");
    assert_eq!(done["status"], "completed", "{seen:?}");
    assert!(
        done.to_string().contains("contenox registers internal"),
        "{done}"
    );
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("[hook] myapp: 1 tool(s)"));
}
