//! Memory: the heap an idle client holds, and the peak heap of 1,000 concurrent turns (each
//! parked in a host tool), counted by a global allocator that tracks live and peak bytes.
//!
//! `cargo bench -p contenox-conformance --bench memory`

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use contenox::{tool_fn, Client, ScriptEntry, ToolOutput, ToolSpec};
use serde_json::json;

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

fn main() {
    // criterion-style arguments (`--bench`) are accepted and ignored.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();

    // The first client also builds the builtins' specs, which every later client shares.
    let before = live();
    let first = Client::builder()
        .script(vec![ScriptEntry::text("hi")])
        .root(root.path())
        .build()
        .unwrap();
    println!(
        "first client (scripted, default builtins; includes the specs shared process-wide): {} bytes of heap",
        live() - before
    );

    // Idle clients: the default builtins, the scripted model, no turn yet.
    let n = 100;
    let before = live();
    let clients: Vec<Client> = (0..n)
        .map(|_| {
            Client::builder()
                .script(vec![ScriptEntry::text("hi")])
                .root(root.path())
                .build()
                .unwrap()
        })
        .collect();
    let per_client = (live() - before) / n;
    drop(clients);
    println!("idle client (scripted, default builtins): {per_client} bytes of heap");
    drop(first);

    let before = live();
    let clients: Vec<Client> = (0..n)
        .map(|_| {
            Client::from_config(
                serde_json::from_value(json!({
                    "style": "openai", "model": "m", "api_key": "k",
                    "base_url": "http://127.0.0.1:9/v1", "root": root.path()
                }))
                .unwrap(),
            )
            .unwrap()
        })
        .collect();
    let per_client = (live() - before) / n;
    drop(clients);
    println!("idle client (openai over HTTP, default builtins): {per_client} bytes of heap");

    // 1,000 concurrent turns, each holding in a host tool until released.
    let turns = 1000;
    let release = tokio_util::sync::CancellationToken::new();
    let base = live();
    PEAK.store(base, Ordering::Relaxed);
    let results = rt.block_on(async {
        let mut runs = Vec::with_capacity(turns);
        for _ in 0..turns {
            let release = release.clone();
            let wait = Arc::new(tool_fn(
                ToolSpec::new("wait", "Wait.", json!({"type": "object"})),
                move |_args, _ctx| {
                    let release = release.clone();
                    async move {
                        release.cancelled().await;
                        Ok(ToolOutput::text("released"))
                    }
                },
            ));
            let client = Client::builder()
                .script(vec![
                    ScriptEntry::tool_call("c1", "wait", json!({})),
                    ScriptEntry::text("done"),
                ])
                .root(root.path())
                .builtins(Vec::<String>::new())
                .tool(wait)
                .build()
                .unwrap();
            runs.push((client.stream("go").unwrap(), client));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let parked = live() - base;
        release.cancel();
        let mut done = 0;
        for (run, _client) in runs {
            if run.result().await.unwrap().outcome == contenox::Outcome::Done {
                done += 1;
            }
        }
        (parked, done)
    });
    let peak = PEAK.load(Ordering::Relaxed) - base;
    println!(
        "{turns} concurrent turns parked in a tool: {:.1} MiB live, {:.1} MiB peak, {} of {turns} done",
        results.0 as f64 / 1048576.0,
        peak as f64 / 1048576.0,
        results.1
    );
}
