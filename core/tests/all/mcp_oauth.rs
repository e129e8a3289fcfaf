//! MCP OAuth against a real authorization server: tests/mcp/oauth_server.py, the Python SDK's
//! own auth parts (authorization server with dynamic registration, PKCE and refresh, and a
//! protected streamable HTTP server). The test's `McpAuth` is the host: an in-memory token
//! store, and a "browser" that follows the authorization URL and hands back the redirect.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::mcp_util::*;
use contenox::mcp::{load_mcp, load_mcp_with, McpAuth, McpConfig, McpSource, ServerState};
use contenox::{async_trait, Client, HostError, ScriptEntry};
use serde_json::{json, Value};

#[derive(Default)]
struct Host {
    store: Mutex<HashMap<String, String>>,
    authorizations: Mutex<Vec<String>>,
}

#[async_trait]
impl McpAuth for Host {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:9/callback".into()
    }

    async fn authorize(&self, server: &str, url: &str) -> Result<String, HostError> {
        self.authorizations
            .lock()
            .unwrap()
            .push(format!("{server} {url}"));
        // The browser: the authorization server approves at once and redirects.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let resp = client.get(url).send().await.map_err(|e| e.to_string())?;
        let location = resp
            .headers()
            .get("location")
            .ok_or_else(|| format!("no redirect: HTTP {}", resp.status()))?;
        Ok(location.to_str().unwrap().to_string())
    }

    async fn load(&self, key: &str) -> Result<Option<String>, HostError> {
        Ok(self.store.lock().unwrap().get(key).cloned())
    }

    async fn save(&self, key: &str, value: &str) -> Result<(), HostError> {
        self.store.lock().unwrap().insert(key.into(), value.into());
        Ok(())
    }
}

impl Host {
    /// Every token value the host has been given.
    fn tokens(&self) -> Vec<String> {
        let mut out = Vec::new();
        for v in self.store.lock().unwrap().values() {
            let v: Value = serde_json::from_str(v).unwrap();
            for key in ["access_token", "refresh_token"] {
                if let Some(t) = v[key].as_str() {
                    out.push(t.to_string());
                }
            }
        }
        out
    }
}

async fn load(http: &HttpServer, host: &Arc<Host>) -> (McpSource, Vec<(String, ServerState)>) {
    let config = McpConfig::from_value(
        json!({"mcpServers": {"vault": {"type": "http", "url": http.url()}}}),
    )
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let auth: Arc<dyn McpAuth> = host.clone();
    let source = load_mcp_with(config, Some(auth), move |name, state| {
        sink.lock().unwrap().push((name.to_string(), state.clone()));
    })
    .await;
    let seen = seen.lock().unwrap().clone();
    (source, seen)
}

fn stats(http: &HttpServer) -> Value {
    let url = format!("http://127.0.0.1:{}/_test/stats", http.port);
    tokio::task::block_in_place(|| {
        let body = std::process::Command::new("curl")
            .args(["-s", &url])
            .output()
            .unwrap()
            .stdout;
        serde_json::from_slice(&body).unwrap()
    })
}

async fn post(http: &HttpServer, path: &str) {
    let url = format!("http://127.0.0.1:{}{path}", http.port);
    reqwest::Client::new().post(url).send().await.unwrap();
}

/// Run one call of vault__vault_sum; its result text, and every event as JSON text.
async fn sum(source: &McpSource) -> (String, String) {
    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", "vault__vault_sum", json!({"a": 40, "b": 2})),
            ScriptEntry::text("done"),
        ])
        .builtins(Vec::<String>::new())
        .build()
        .unwrap();
    for tool in source.tools() {
        client.register(tool).unwrap();
    }
    let events = events(client.stream("add").unwrap()).await;
    let shown = format!(
        "{}{}",
        serde_json::to_string(&events).unwrap(),
        client.transcript().to_json()
    );
    let results = results(&events);
    assert_eq!(results.len(), 1, "{events:?}");
    (results[0].1.clone(), shown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_load_after_the_authorization_and_tokens_never_show() {
    let http = tokio::task::spawn_blocking(|| HttpServer::oauth(3600))
        .await
        .unwrap();
    let host = Arc::new(Host::default());
    let (source, seen) = load(&http, &host).await;
    assert!(
        matches!(seen[0].1, ServerState::Ready { tools: 1 }),
        "{seen:?}"
    );
    let asked = host.authorizations.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    for part in [
        "vault ",
        "response_type=code",
        "code_challenge_method=S256",
        "resource=",
    ] {
        assert!(asked[0].contains(part), "{part} in {}", asked[0]);
    }
    let (result, shown) = sum(&source).await;
    assert!(result.contains("vault says 42"), "{result}");
    let tokens = host.tokens();
    assert_eq!(tokens.len(), 2, "an access and a refresh token were kept");
    let debug = format!("{:?}{:?}", source.servers(), seen);
    for t in &tokens {
        assert!(
            !shown.contains(t.as_str()) && !debug.contains(t.as_str()),
            "a token showed"
        );
    }
    assert_eq!(stats(&http)["registrations"], 1);
    // A second load finds the saved token: no new authorization.
    source.close().await;
    let (again, _) = load(&http, &host).await;
    assert_eq!(host.authorizations.lock().unwrap().len(), 1);
    assert!(sum(&again).await.0.contains("vault says 42"));
    again.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_refreshed_and_a_revoked_one_authorized_again() {
    let http = tokio::task::spawn_blocking(|| HttpServer::oauth(3600))
        .await
        .unwrap();
    let host = Arc::new(Host::default());
    let (source, _) = load(&http, &host).await;
    assert!(sum(&source).await.0.contains("vault says 42"));
    let first = host.tokens();

    post(&http, "/_test/expire").await;
    let (result, _) = sum(&source).await;
    assert!(result.contains("vault says 42"), "after expiry: {result}");
    let s = stats(&http);
    assert_eq!(
        (s["refreshes"].as_u64(), s["authorizations"].as_u64()),
        (Some(1), Some(1)),
        "{s}"
    );
    let refreshed = host.tokens();
    assert_ne!(first, refreshed, "the refresh saved new tokens");

    post(&http, "/_test/revoke").await;
    let (result, shown) = sum(&source).await;
    assert!(
        result.contains("vault says 42"),
        "after revocation: {result}"
    );
    assert_eq!(stats(&http)["authorizations"], 2);
    assert_eq!(host.authorizations.lock().unwrap().len(), 2);
    for t in first.iter().chain(&refreshed).chain(&host.tokens()) {
        assert!(!shown.contains(t.as_str()), "a token showed");
    }
    source.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_mcp_auth_the_server_fails_saying_why() {
    let http = tokio::task::spawn_blocking(|| HttpServer::oauth(3600))
        .await
        .unwrap();
    let config = McpConfig::from_value(
        json!({"mcpServers": {"vault": {"type": "http", "url": http.url()}}}),
    )
    .unwrap();
    let source = load_mcp(config, |_, _| {}).await;
    let state = &source.servers()[0].1;
    assert!(
        matches!(state, ServerState::Failed { error } if error.contains("needs OAuth authorization")),
        "{state:?}"
    );
}
