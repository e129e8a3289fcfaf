//! Remote tools against a real OpenAPI service: FastAPI + uvicorn (tests/remote/app.py, installed
//! by tests/remote/install.sh), started by each test on 127.0.0.1 and killed (and reaped) at its
//! end. The model is the fake model server, so the test reads every request body the model got.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use contenox::remote::{load_remote, HookState, RemoteHook, RemoteSource};
use contenox::{Client, Outcome};
use contenox_conformance::fake;
use contenox_conformance::scenario::{ModelEntry, Style};
use serde_json::{json, Value};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

/// The Python with FastAPI and uvicorn: $CONTENOX_REMOTE_PYTHON, else the project's venv
/// ($CONTENOX_VENV, else .venv; tests/remote/install.sh fills it).
fn python() -> String {
    if let Ok(p) = std::env::var("CONTENOX_REMOTE_PYTHON") {
        return p;
    }
    let venv = std::env::var("CONTENOX_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join(".venv"));
    let p = venv.join("bin/python");
    assert!(
        p.exists(),
        "FastAPI venv not found at {}: run tests/remote/install.sh first",
        p.display()
    );
    p.to_string_lossy().into_owned()
}

/// A FastAPI app running under uvicorn, killed and reaped when dropped.
struct Service {
    child: Option<std::process::Child>,
    url: String,
}

impl Service {
    fn start(args: &[&str]) -> Service {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let app = repo_root().join("tests/remote/app.py");
        let mut cmd = std::process::Command::new(python());
        cmd.arg(app)
            .arg(args[0])
            .arg(port.to_string())
            .args(&args[1..]);
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start uvicorn");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "uvicorn did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Service {
            child: Some(child),
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Kill the server and check the process is gone.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = child.id();
            let _ = child.kill();
            child.wait().expect("reap uvicorn");
            assert!(
                !PathBuf::from(format!("/proc/{pid}")).exists(),
                "uvicorn {pid} is still there"
            );
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

async fn load(hooks: Value) -> RemoteSource {
    let hooks = RemoteHook::list_from_value(hooks).unwrap();
    load_remote(hooks, |_, _| {}).await.unwrap()
}

fn entries(v: Value) -> Vec<ModelEntry> {
    serde_json::from_value(v).unwrap()
}

fn client_for(server: &fake::FakeServer) -> Client {
    Client::from_config(
        serde_json::from_value(json!({
            "style": "openai", "base_url": server.base_url(), "model": "fake",
            "api_key": "test", "builtins": [], "root": std::env::temp_dir()
        }))
        .unwrap(),
    )
    .unwrap()
}

/// The tool results the model was sent in the last request (openai wire).
fn results(server: &fake::FakeServer) -> Vec<String> {
    let last = server.requests().pop().expect("a request");
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn has_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| k == "$ref" || has_ref(v)),
        Value::Array(a) => a.iter().any(has_ref),
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickstart_is_one_tool_that_answers() {
    let mut svc = Service::start(&["quickstart"]);
    let source = load(json!([{"name": "summarizer", "url": svc.url}])).await;
    assert_eq!(source.hooks()[0].1, HookState::Ready { tools: 1 });
    let specs: Vec<_> = source.tools().iter().map(|t| t.spec()).collect();
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].name, "summarize_text");
    assert_eq!(specs[0].hints.read_only, Some(true));
    assert!(specs[0].description.contains("Summarise a text"));
    assert_eq!(specs[0].input_schema["required"], json!(["text"]));

    let model = fake::serve(
        entries(json!([
            {"tool_calls": [{"id": "call_1", "name": "summarize_text",
                             "arguments": {"text": "one two three four", "max_words": 2}}]},
            {"text": "done"}
        ])),
        Style::Openai,
    )
    .await
    .unwrap();
    let client = client_for(&model);
    source.register_into(&client).unwrap();
    let result = client.run("Summarise.").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    assert_eq!(
        results(&model),
        vec![r#"{"summary":"one two"}"#.to_string()]
    );
    source.close().await;
    svc.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tickets_parameters_model_tenant_and_auth() {
    let token = "fastapi-token-5150";
    let mut svc = Service::start(&["tickets", token]);
    let source = load(json!([
        {"name": "tickets", "url": svc.url,
         "headers": {"Authorization": format!("Bearer {token}")},
         "inject": {"tenant_id": "tenant-acme-31"}},
        {"name": "anonymous", "url": svc.url}
    ]))
    .await;
    assert_eq!(source.hooks()[0].1, HookState::Ready { tools: 3 });
    let specs: Vec<_> = source.tools().iter().map(|t| t.spec()).collect();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    // The second hook has the same operations: its names get _2.
    assert_eq!(
        names,
        vec![
            "create_ticket",
            "get_ticket",
            "delete_ticket",
            "create_ticket_2",
            "get_ticket_2",
            "delete_ticket_2"
        ]
    );
    let create = &specs[0];
    assert_eq!(
        create.description,
        "Create a ticket\n\nCreates a ticket in a project."
    );
    assert!(create.hints.is_empty());
    assert_eq!(specs[2].hints.destructive, Some(true));
    let props = create.input_schema["properties"].as_object().unwrap();
    let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        vec![
            "assignee",
            "dry_run",
            "labels",
            "priority",
            "project_id",
            "title",
            "x-request-id"
        ]
    );
    assert!(!has_ref(&create.input_schema), "{}", create.input_schema);
    // The $ref'd pydantic model, resolved: Optional[Person] is Person or null.
    assert_eq!(
        props["assignee"]["anyOf"][0]["properties"]["name"]["type"],
        "string"
    );
    assert_eq!(props["assignee"]["anyOf"][1]["type"], "null");
    let mut required: Vec<&str> = create.input_schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort();
    assert_eq!(required, vec!["project_id", "title"]);

    let model = fake::serve(
        entries(json!([
            {"tool_calls": [
                {"id": "call_1", "name": "create_ticket", "arguments": {
                    "project_id": "ops eu", "title": "Disk <full>", "labels": ["disk", "p1"],
                    "assignee": {"name": "Ann"}, "x-request-id": "req-9", "dry_run": true}},
                {"id": "call_2", "name": "get_ticket", "arguments": {
                    "project_id": "ops", "ticket_id": 12, "fields": ["title", "labels"]}},
                {"id": "call_3", "name": "delete_ticket", "arguments": {"project_id": "ops", "ticket_id": 12}},
                {"id": "call_4", "name": "get_ticket_2", "arguments": {"project_id": "ops", "ticket_id": 1, "tenant_id": "t1"}},
                {"id": "call_5", "name": "create_ticket", "arguments": {"project_id": "ops", "title": 5}}
            ]},
            {"text": "done"}
        ])),
        Style::Openai,
    )
    .await
    .unwrap();
    let client = client_for(&model);
    source.register_into(&client).unwrap();
    let result = client.run("Work the tickets.").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    let got = results(&model);
    // The service echoes what it received; the injected tenant it echoes back is replaced by
    // <redacted> before the model sees it (which proves it arrived exactly).
    let created: Value = serde_json::from_str(&got[0]).unwrap();
    assert_eq!(
        created,
        json!({"project_id": "ops eu", "tenant_id": "<redacted>", "dry_run": true,
               "request_id": "req-9",
               "ticket": {"title": "Disk <full>", "priority": 3, "labels": ["disk", "p1"],
                          "assignee": {"name": "Ann", "email": null}}})
    );
    let fetched: Value = serde_json::from_str(&got[1]).unwrap();
    assert_eq!(
        fetched,
        json!({"project_id": "ops", "ticket_id": 12, "tenant_id": "<redacted>",
               "fields": ["title", "labels"]})
    );
    assert_eq!(got[2], "(no content)");
    // The hook without the token: FastAPI refuses it.
    assert_eq!(
        got[3],
        r#"Error: HTTP 401: {"detail":"bad or missing token"}"#
    );
    // The engine's schema check stops a wrong type before the service sees it.
    assert!(
        got[4].contains("do not match its input schema"),
        "{}",
        got[4]
    );
    // No request the model got carries the token or the tenant.
    for body in model.requests() {
        let text = body.to_string();
        assert!(!text.contains(token), "{text}");
        assert!(!text.contains("tenant-acme-31"), "{text}");
    }
    // The hook that injects the tenant does not declare it; the other one does.
    for spec in &specs[..3] {
        assert!(
            spec.input_schema["properties"].get("tenant_id").is_none(),
            "{}",
            spec.name
        );
    }
    assert!(specs[4].input_schema["properties"]
        .get("tenant_id")
        .is_some());
    // Nor do the events or the transcript.
    let transcript = serde_json::to_string(&result.transcript).unwrap();
    assert!(!transcript.contains(token) && !transcript.contains("tenant-acme-31"));
    source.close().await;
    svc.stop();
}
