//! The secret-grep test: a client configured with marker secrets everywhere a secret can be
//! given (API key, a custom header, a base URL with userinfo and a secret query parameter, a
//! `secret_env` variable set in this process, an MCP server's header and injected parameter, an
//! MCP stdio server's `env` values) runs turns with retries, errors and tool calls; no marker may
//! appear in any event, any `TurnResult` (error, transcript), any request body the model server
//! received, any span exported over OTLP (contents included; the exporter's own secret header
//! only in its headers), any error of `list_models` or of a failing MCP server, or the `Debug` print of any
//! config type (which also holds a `shell_env` `NAME=value` entry: given to bash on purpose, so
//! only its printing is checked).
//!
//! Needs the MCP test servers (tests/mcp/install.sh).

use std::time::Duration;

use contenox::mcp::McpConfig;
use contenox::{list_models, Client, Config, Event, Outcome, TurnResult};
use contenox_conformance::fake;
use contenox_conformance::mcp_support;
use contenox_conformance::otlp::OtlpReceiver;
use contenox_conformance::scenario::{ModelEntry, Style};
use serde_json::{json, Value};

const API_KEY: &str = "sk-APIKEY-MARKER-0001";
const HEADER: &str = "HEADER-MARKER-0002";
const USERINFO_USER: &str = "USER-MARKER-0003";
const USERINFO_PASSWORD: &str = "PASSWORD-MARKER-0004";
const QUERY: &str = "QUERY-MARKER-0005";
const ENV_VALUE: &str = "ENV-MARKER-0006";
const MCP_HEADER: &str = "MCP-HEADER-MARKER-0007";
const INJECTED: &str = "INJECTED-MARKER-0008";
const MCP_URL_QUERY: &str = "MCP-URL-MARKER-0009";
const SHELL_ENV_VALUE: &str = "SHELL-ENV-MARKER-0010";
const MCP_ENV: &str = "MCP-ENV-MARKER-0011";
const OAUTH_ACCESS: &str = "OAUTH-ACCESS-MARKER-0012";
const OAUTH_REFRESH: &str = "OAUTH-REFRESH-MARKER-0013";
const OAUTH_SECRET: &str = "OAUTH-SECRET-MARKER-0014";
const TELEMETRY_HEADER: &str = "TELEMETRY-HEADER-MARKER-0015";

const MARKERS: &[&str] = &[
    API_KEY,
    HEADER,
    USERINFO_USER,
    USERINFO_PASSWORD,
    QUERY,
    ENV_VALUE,
    MCP_HEADER,
    INJECTED,
    MCP_URL_QUERY,
    SHELL_ENV_VALUE,
    MCP_ENV,
    OAUTH_ACCESS,
    OAUTH_REFRESH,
    OAUTH_SECRET,
    TELEMETRY_HEADER,
];

const ENV_NAME: &str = "CONTENOX_SECRETS_TEST_VALUE";
const HANG: Duration = Duration::from_secs(120);

/// A base URL for `root` (`http://127.0.0.1:PORT`) with userinfo and a secret query.
fn secret_base(style: Style, root: &str) -> String {
    let with_userinfo = root.replacen(
        "http://",
        &format!("http://{USERINFO_USER}:{USERINFO_PASSWORD}@"),
        1,
    );
    format!(
        "{}?api-version=2024-06-01&key={QUERY}",
        style.base_url(&with_userinfo)
    )
}

fn config(style: Style, base_url: &str, builtins: &[&str]) -> Config {
    serde_json::from_value(json!({
        "style": style.as_str(),
        "base_url": base_url,
        "model": "fake",
        "api_key": API_KEY,
        "headers": {"X-Custom-Secret": HEADER},
        "secret_env": [ENV_NAME],
        "builtins": builtins,
        "root": std::env::temp_dir(),
        "retry": {"max_retries": 2, "initial_backoff_ms": 1, "max_backoff_ms": 2}
    }))
    .unwrap()
}

fn entries(v: Value) -> Vec<ModelEntry> {
    serde_json::from_value(v).unwrap()
}

/// Run one turn, keeping every event.
async fn turn(client: &Client, prompt: &str) -> (Vec<Event>, TurnResult) {
    let mut run = client.stream(prompt).unwrap();
    let events = tokio::time::timeout(HANG, async {
        let mut events = Vec::new();
        while let Some(e) = run.next_event().await {
            events.push(e);
        }
        events
    })
    .await
    .expect("the turn hung");
    (events, run.result().await.unwrap())
}

/// Everything a host or a model could see of one turn, as text.
fn seen(events: &[Event], result: &TurnResult) -> String {
    format!(
        "{}\n{:?}\n{}\n{:?}",
        serde_json::to_string(events).unwrap(),
        events,
        serde_json::to_string(&result.transcript).unwrap(),
        result
    )
}

fn assert_no_marker(what: &str, text: &str) {
    for m in MARKERS {
        assert!(!text.contains(m), "{what} holds the marker {m}:\n{text}");
    }
}

fn count(events: &[Event], kind: &str) -> usize {
    events.iter().filter(|e| e.kind() == kind).count()
}

/// The MCP servers of the test: a header and an injected value over HTTP, `env` over stdio.
fn mcp_config() -> Value {
    json!({"mcp": {"servers": {
        "fast": {
            "server": "fast", "transport": "http",
            "headers": {"X-Api-Key": MCP_HEADER},
            "inject": {"tenant": INJECTED}
        },
        "local": {"server": "fast", "transport": "stdio", "env": {"LOCAL_TOKEN": MCP_ENV}}
    }}})
}

/// Answers every ask with one answer.
struct Answering(contenox::Answer);
#[contenox::async_trait]
impl contenox::WaitFor for Answering {
    async fn wait_for(
        &self,
        _request: contenox::PendingRequest,
        _cancel: contenox::CancellationToken,
    ) -> Result<contenox::Answer, contenox::HostError> {
        Ok(self.0.clone())
    }
}

async fn suspended_checkpoint_holds_no_marker(mcp: &Value) {
    let script = entries(json!([
        {"tool_calls": [
            {"id": "call_1", "name": "fast__secrets_check", "arguments": {"user": "ann"}},
            {"id": "call_2", "name": "bash", "arguments": {"command": format!("echo \"v=${ENV_NAME}\"")}},
            {"id": "call_3", "name": "local__refuse", "arguments": {"reason": "asked"}}
        ]},
        {"text": "resumed"}
    ]));
    let server = fake::serve(script, Style::Openai).await.unwrap();
    let cfg = config(
        Style::Openai,
        &secret_base(Style::Openai, &server.root_url()),
        &["bash"],
    );
    let policy = contenox::Policy::from_value(&json!({
        "default_action": "allow",
        "rules": [{"tool": "local__refuse", "action": "approve", "timeout_s": 600}]
    }))
    .unwrap();
    let build = |answer: contenox::Answer| {
        contenox::ClientBuilder::from_config(cfg.clone())
            .policy(policy.clone())
            .wait_for(std::sync::Arc::new(Answering(answer)))
            .build()
            .unwrap()
    };
    let a = build(contenox::Answer::Suspend);
    let sources = mcp_support::setup(mcp.as_object().unwrap())
        .await
        .expect("the MCP test server (tests/mcp/install.sh)")
        .unwrap();
    sources.register_into(&a).unwrap();
    let (events, result) = turn(&a, "Check, then ask.").await;
    assert_eq!(result.outcome, Outcome::Suspended, "{:?}", result.error);
    assert_eq!(
        count(&events, "tool_result"),
        2,
        "the MCP call and bash ran"
    );
    let checkpoint = result.checkpoint.clone().unwrap();
    assert!(
        checkpoint.contains("tenant_sha="),
        "the MCP result is recorded"
    );
    assert_no_marker("a checkpoint", &checkpoint);
    assert_no_marker("a suspended turn", &seen(&events, &result));
    assert_eq!(result.pending[0].call_id, "call_3");

    let b = build(contenox::Answer::deny("not asked again"));
    sources.register_into(&b).unwrap();
    let answers =
        contenox::durable::Answers::from([("call_3".to_string(), contenox::Answer::Approve)]);
    let mut run = b.resume_stream(&checkpoint, answers).unwrap();
    let mut events = Vec::new();
    while let Some(e) = run.next_event().await {
        events.push(e);
    }
    let result = run.result().await.unwrap();
    assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
    assert_eq!(result.final_text, "resumed");
    assert_eq!(count(&events, "tool_result"), 1, "only the asked call ran");
    assert_no_marker("a resumed turn", &seen(&events, &result));
    assert_no_marker(
        "the model request bodies of a suspended and resumed turn",
        &serde_json::to_string(&server.requests()).unwrap(),
    );
    assert_eq!(server.requests().len(), 2, "each step asked the model once");
    sources.close().await;
    a.close();
    b.close();
    server.shutdown().await;
}

#[test]
fn no_marker_reaches_an_event_a_result_a_request_or_an_error() {
    crate::alone::run("secrets::no_marker_reaches_an_event_a_result_a_request_or_an_error_alone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by no_marker_reaches_an_event_a_result_a_request_or_an_error, alone in a process of its own (it sets environment variables)"]
async fn no_marker_reaches_an_event_a_result_a_request_or_an_error_alone() {
    if !crate::alone::here(
        "secrets::no_marker_reaches_an_event_a_result_a_request_or_an_error_alone",
    ) {
        return;
    }
    // SAFETY (edition 2021: safe): this test runs alone in its process (`crate::alone`), and
    // sets the variable before it starts any thread that reads the environment.
    std::env::set_var(ENV_NAME, ENV_VALUE);

    // Turn 1 (openai): a 503 (retried), then an MCP call with an injected value and a header,
    // and a bash call that tries to print the secret variable, then the answer.
    // Turn 2: a 401 whose body echoes the key, the header and the query (a proxy that repeats
    // what it got): not retried, outcome error.
    let script = entries(json!([
        {"error": {"status": 503, "body": format!("overloaded; your key {API_KEY} and ?key={QUERY}")}},
        {"tool_calls": [
            {"id": "call_1", "name": "fast__secrets_check", "arguments": {"user": "ann"}},
            {"id": "call_2", "name": "bash", "arguments": {"command": format!("env; echo \"v=${ENV_NAME}\"")}},
            {"id": "call_3", "name": "fast__refuse", "arguments": {"reason": "no"}},
            {"id": "call_4", "name": "local__refuse", "arguments": {"reason": "no"}}
        ]},
        {"text": "done"},
        {"error": {"status": 401, "body": format!("invalid key {API_KEY} (header {HEADER}) for {USERINFO_USER}:{USERINFO_PASSWORD} ?key={QUERY}")}}
    ]));
    let server = fake::serve(script, Style::Openai).await.unwrap();
    let cfg = config(
        Style::Openai,
        &secret_base(Style::Openai, &server.root_url()),
        &["bash"],
    );
    // Spans too, contents included, posted to a receiver with a secret header of their own.
    let collector = OtlpReceiver::start();
    let mut cfg = cfg;
    cfg.telemetry = Some(
        serde_json::from_value(json!({
            "endpoint": collector.url,
            "include_contents": true,
            "headers": {"authorization": TELEMETRY_HEADER},
        }))
        .unwrap(),
    );
    let client = Client::from_config(cfg).unwrap();
    let mcp = mcp_config();
    let mcp = mcp_support::setup(mcp.as_object().unwrap())
        .await
        .expect("the MCP test server (tests/mcp/install.sh)")
        .unwrap();
    mcp.register_into(&client).unwrap();

    let (events, result) = turn(&client, "Check.").await;
    assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
    assert_eq!(count(&events, "retry"), 1);
    assert_eq!(count(&events, "tool_result"), 4);
    assert_no_marker("turn 1", &seen(&events, &result));
    // The secrets did their work: the injected value and the header reached the MCP server
    // (their digests are not those of empty strings), the variable did not reach bash.
    let empty_sha = "e3b0c44298fc";
    let check = events
        .iter()
        .find_map(|e| match e {
            Event::ToolResult { name, content, .. } if name == "fast__secrets_check" => {
                Some(content.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(
        check.contains("tenant_sha=") && check.contains("header_sha="),
        "{check}"
    );
    assert!(
        !check.contains(&format!("tenant_sha={empty_sha}")),
        "{check}"
    );
    assert!(
        !check.contains(&format!("header_sha={empty_sha}")),
        "{check}"
    );
    let bash_out = events
        .iter()
        .find_map(|e| match e {
            Event::ToolResult { name, content, .. } if name == "bash" => Some(content.clone()),
            _ => None,
        })
        .unwrap();
    // It ran (and printed the variable empty: the marker check above covers its output).
    assert!(bash_out.contains("v="), "{bash_out}");

    let (events, result) = turn(&client, "Again.").await;
    assert_eq!(result.outcome, Outcome::Error);
    let error = result.error.clone().unwrap();
    assert!(
        error.contains("HTTP 401") && error.contains("[redacted]"),
        "{error}"
    );
    assert_no_marker("turn 2", &seen(&events, &result));

    // What the model server received: no MCP header, no injected value, no env value in any
    // body (the API key and headers travel in headers, not bodies).
    let bodies = serde_json::to_string(&server.requests()).unwrap();
    assert_no_marker("the model request bodies", &bodies);
    assert_eq!(server.requests().len(), 4);
    mcp.close().await;
    let client = tokio::task::spawn_blocking(move || {
        client.close();
        client
    })
    .await
    .unwrap();
    server.shutdown().await;
    // Every span of both turns reached the receiver (close flushed them), none with a marker.
    let exports = collector.exports();
    let spans = collector.spans();
    assert_eq!(
        spans.iter().filter(|s| s["name"] == "invoke_agent").count(),
        2,
        "{spans:?}"
    );
    assert_eq!(
        client.telemetry_stats().unwrap().exported,
        spans.len() as u64
    );
    assert!(exports.iter().all(|e| e
        .headers
        .contains(&("authorization".to_string(), TELEMETRY_HEADER.to_string()))));
    let bodies: Vec<String> = exports.iter().map(|e| e.body.to_string()).collect();
    // Contents were exported (the check below reads what a model and its tools saw).
    assert!(bodies.iter().any(|b| b.contains("gen_ai.tool.call.result")));
    assert_no_marker("the exported spans", &bodies.join("\n"));

    // A turn suspended at an ask, after an MCP call with the injected value and header and a
    // bash call that read the secret variable ran: its checkpoint and pending requests hold no
    // marker, nor does the turn resumed from it in another client with the same config.
    suspended_checkpoint_holds_no_marker(&mcp_config()).await;

    // An MCP stdio server that prints its `env` values to stderr and dies: its failure names
    // its stderr, with the values redacted.
    let broken = json!({"mcp": {"servers": {"broken": {"server": "fast", "env": {
        "LOCAL_TOKEN": MCP_ENV,
        "FAIL_AT_START": format!("cannot use the token {MCP_ENV}")
    }}}}});
    let failure = match mcp_support::setup(broken.as_object().unwrap()).await {
        Err(e) => e,
        Ok(_) => panic!("a server that exits at start loaded"),
    };
    assert!(
        failure.contains("server stderr") && failure.contains("[redacted]"),
        "{failure}"
    );
    assert_no_marker("a failed MCP server", &failure);

    // Every style, against a port nobody listens on: reqwest's errors name the URL.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    for style in [Style::Openai, Style::Anthropic, Style::Ollama] {
        let base = secret_base(style, &format!("http://127.0.0.1:{port}"));
        let cfg = config(style, &base, &[]);
        let client = Client::from_config(cfg.clone()).unwrap();
        let (events, result) = turn(&client, "Hi.").await;
        assert_eq!(result.outcome, Outcome::Error, "{style:?}");
        assert_eq!(count(&events, "retry"), 2, "{style:?}");
        assert_no_marker(&format!("{style:?} unreachable"), &seen(&events, &result));
        let err = list_models(&cfg).await.unwrap_err();
        assert_no_marker(
            &format!("{style:?} list_models"),
            &format!("{err}\n{err:?}"),
        );
    }
    crate::alone::done();
}

#[test]
fn debug_prints_of_every_config_type_hold_no_marker() {
    let mut cfg = config(
        Style::Openai,
        &secret_base(Style::Openai, "http://127.0.0.1:1"),
        &["bash"],
    );
    cfg.shell_env = vec!["LANG".into(), format!("DEPLOY_TOKEN={SHELL_ENV_VALUE}")];
    cfg.telemetry = Some(
        serde_json::from_value(json!({
            "endpoint": format!("https://{USERINFO_USER}:{USERINFO_PASSWORD}@collector.example/v1/traces?key={QUERY}"),
            "headers": {"authorization": TELEMETRY_HEADER},
        }))
        .unwrap(),
    );
    let mcp = McpConfig::from_value(json!({"mcpServers": {
        "web": {"type": "http",
                "url": format!("https://{USERINFO_USER}:{USERINFO_PASSWORD}@mcp.example/mcp?token={MCP_URL_QUERY}"),
                "headers": {"X-Api-Key": MCP_HEADER},
                "oauth": {"client_id": "contenox", "client_secret": OAUTH_SECRET},
                "inject": {"tenant": INJECTED}},
        "local": {"command": "server", "args": ["--stdio"], "env": {"TOKEN": ENV_VALUE, "LOCAL_TOKEN": MCP_ENV},
                  "inject": {"tenant": INJECTED}}
    }}))
    .unwrap();
    let mut prints = vec![
        ("Config", format!("{cfg:?}"), format!("{cfg:#?}")),
        ("RetryPolicy", format!("{:?}", cfg.retry), String::new()),
        ("McpConfig", format!("{mcp:?}"), format!("{mcp:#?}")),
    ];
    for (name, server) in &mcp.servers {
        prints.push((
            "ServerConfig",
            format!("{name}: {server:?}"),
            format!("{server:#?}"),
        ));
        prints.push((
            "Transport",
            format!("{:?}", server.transport),
            format!("{:#?}", server.transport),
        ));
    }
    for (what, plain, pretty) in prints {
        assert_no_marker(&format!("Debug of {what}"), &plain);
        assert_no_marker(&format!("pretty Debug of {what}"), &pretty);
    }
}

/// A host whose token store holds planted OAuth tokens (and whose browser step fails).
struct PlantedAuth;

#[contenox::async_trait]
impl contenox::McpAuth for PlantedAuth {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:9/callback".into()
    }
    async fn authorize(&self, _server: &str, _url: &str) -> Result<String, contenox::HostError> {
        Err("the person closed the browser".into())
    }
    async fn load(&self, _key: &str) -> Result<Option<String>, contenox::HostError> {
        Ok(Some(
            json!({"client_id": "contenox", "client_secret": OAUTH_SECRET,
                   "token_endpoint": "http://127.0.0.1:9/token",
                   "access_token": OAUTH_ACCESS, "refresh_token": OAUTH_REFRESH,
                   "expires_at": 1})
            .to_string(),
        ))
    }
    async fn save(&self, _key: &str, _value: &str) -> Result<(), contenox::HostError> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_oauth_tokens_never_reach_an_error_or_a_state() {
    // An OAuth server that cannot be reached, with an expired token to refresh at an
    // unreachable token endpoint: every failure is reported, none shows a token.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let config = McpConfig::from_value(json!({"mcpServers": {
        "vault": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp"), "timeout_ms": 2000}
    }}))
    .unwrap();
    let auth: std::sync::Arc<dyn contenox::McpAuth> = std::sync::Arc::new(PlantedAuth);
    let source = contenox::load_mcp_with(config, Some(auth), |_, _| {}).await;
    let states = format!("{:?}", source.servers());
    assert!(states.contains("Failed"), "{states}");
    assert_no_marker("an OAuth server's failure", &states);
}
