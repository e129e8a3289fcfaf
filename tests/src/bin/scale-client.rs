//! `scale-client --base-url URL --mode messages --transcript FILE --turns K [--warmup W]`
//! `scale-client --base-url URL --mode clients --clients C --turns K [--warmup W]`
//!
//! The Rust side of the scale curve (bench/scale/run.sh), written against the public crate API
//! as a user would. A turn is the echo workload: prompt -> one `echo` tool call -> final text,
//! against a `fake-model-server --by-turn-step` over loopback HTTP.
//!
//! - `messages`: one client; before each turn the conversation is restored to the transcript in
//!   FILE (N messages), so every timed turn renders a request of N (+1..3) messages.
//! - `clients`: C clients in one process, each running K turns one after another in its own
//!   tokio task, all C at once (after W untimed warm-up turns each, also all at once).
//!
//! Prints one JSON line (the figures) and exits 0 only when every turn answered as scripted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use contenox::{tool_fn, Client, Style, ToolOutput, ToolSpec, Transcript};
use serde_json::{json, Value};

/// The fake server's final text for every turn (bench/scale/scenario.json).
const FINAL_TEXT: &str = "done";

struct Args {
    base_url: String,
    mode: String,
    transcript: Option<String>,
    clients: usize,
    turns: usize,
    warmup: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        base_url: String::new(),
        mode: String::new(),
        transcript: None,
        clients: 1,
        turns: 10,
        warmup: 2,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |v: String| v.parse::<usize>().map_err(|e| format!("{v}: {e}"));
        match flag.as_str() {
            "--base-url" => a.base_url = value()?,
            "--mode" => a.mode = value()?,
            "--transcript" => a.transcript = Some(value()?),
            "--clients" => a.clients = num(value()?)?,
            "--turns" => a.turns = num(value()?)?,
            "--warmup" => a.warmup = num(value()?)?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.base_url.is_empty() || a.turns == 0 || a.clients == 0 {
        return Err("--base-url, --turns >= 1 and --clients >= 1 are required".into());
    }
    Ok(a)
}

/// (current, peak) resident set in MB, from /proc/self/status (VmRSS, VmHWM): the same source
/// the Python and Node clients read.
fn rss_mb() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// CPU seconds (user + system) this process has used.
fn cpu_s() -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn make_client(base_url: &str) -> Client {
    let echo = tool_fn(
        ToolSpec::new(
            "echo",
            "Echo the given text back.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ),
        |args, _ctx| async move {
            Ok(ToolOutput::text(
                args["text"].as_str().unwrap_or("").to_string(),
            ))
        },
    );
    Client::builder()
        .style(Style::Openai)
        .base_url(base_url)
        .model("gpt-4o-mini")
        .api_key("sk-dummy")
        .system("You are a benchmark agent. Use the echo tool.")
        .builtins(Vec::<String>::new())
        .tool(Arc::new(echo))
        .build()
        .expect("client")
}

/// One turn; its latency, or why it was not the scripted one.
async fn turn(client: &Client, i: usize) -> Result<Duration, String> {
    let t = Instant::now();
    let r = client
        .run(format!("turn {i}"))
        .await
        .map_err(|e| e.to_string())?;
    let took = t.elapsed();
    if r.final_text.trim() != FINAL_TEXT {
        return Err(format!("turn {i}: {:?} {:?}", r.outcome, r.final_text));
    }
    Ok(took)
}

fn median_ms(v: &mut [Duration]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort();
    let m = v.len() / 2;
    let d = if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2
    };
    d.as_secs_f64() * 1000.0
}

async fn messages(a: &Args) -> Result<Value, String> {
    let path = a.transcript.as_deref().ok_or("--transcript is required")?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let restored = Transcript::from_json(&text).map_err(|e| e.to_string())?;
    let n = restored.messages.len();
    let client = make_client(&a.base_url);
    let mut lat = Vec::new();
    let mut restores = Vec::new();
    let cpu0 = cpu_s();
    for i in 0..a.warmup + a.turns {
        let t = Instant::now();
        client
            .set_transcript(restored.clone())
            .map_err(|e| e.to_string())?;
        let restore = t.elapsed();
        let took = turn(&client, i + 1).await?;
        let grown = client.transcript().messages.len();
        if grown != n + 4 {
            return Err(format!(
                "turn {}: {n} messages became {grown}, not {}",
                i + 1,
                n + 4
            ));
        }
        if i >= a.warmup {
            lat.push(took);
            restores.push(restore);
        }
    }
    let cpu = cpu_s() - cpu0;
    let (rss, peak) = rss_mb();
    Ok(json!({
        "messages": n, "turns": a.turns, "warmup": a.warmup,
        "per_turn_ms": median_ms(&mut lat), "restore_ms": median_ms(&mut restores),
        "cpu_ms_per_turn": cpu * 1000.0 / (a.warmup + a.turns) as f64,
        "rss_mb": rss, "peak_rss_mb": peak,
    }))
}

/// Every client runs `turns` turns (numbered from `first`) one after another, each client in its
/// own task, all at once; the latencies of every turn.
async fn all_turns(
    all: &[Arc<Client>],
    first: usize,
    turns: usize,
) -> Result<Vec<Duration>, String> {
    let tasks: Vec<_> = all
        .iter()
        .cloned()
        .map(|client| {
            tokio::spawn(async move {
                let mut lat = Vec::with_capacity(turns);
                for i in first..first + turns {
                    lat.push(turn(&client, i).await?);
                }
                Ok::<_, String>(lat)
            })
        })
        .collect();
    let mut lat = Vec::with_capacity(all.len() * turns);
    for t in tasks {
        lat.extend(t.await.map_err(|e| e.to_string())??);
    }
    Ok(lat)
}

async fn clients(a: &Args) -> Result<Value, String> {
    let (base_rss, _) = rss_mb();
    let all: Vec<Arc<Client>> = (0..a.clients)
        .map(|_| Arc::new(make_client(&a.base_url)))
        .collect();
    let (created_rss, _) = rss_mb();
    // Warm-up turns, all clients at once and untimed: connections open, lazy setup done.
    for w in 0..a.warmup {
        all_turns(&all, w + 1, 1).await?;
    }
    let cpu0 = cpu_s();
    let t0 = Instant::now();
    let mut lat = all_turns(&all, a.warmup + 1, a.turns).await?;
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_s() - cpu0;
    let expected = 4 * (a.warmup + a.turns);
    for client in &all {
        let len = client.transcript().messages.len();
        if len != expected {
            return Err(format!("a client holds {len} messages, not {expected}"));
        }
    }
    let (rss, peak) = rss_mb();
    let total = a.clients * a.turns;
    Ok(json!({
        "clients": a.clients, "turns": a.turns, "warmup": a.warmup, "total_turns": total,
        "wall_s": wall,
        "per_turn_ms": wall * 1000.0 / total as f64, "latency_median_ms": median_ms(&mut lat),
        "cpu_ms_per_turn": cpu * 1000.0 / total as f64,
        "rss_mb": rss, "peak_rss_mb": peak, "base_rss_mb": base_rss,
        "rss_per_client_kb": (peak - base_rss) * 1024.0 / a.clients as f64,
        // What creating a client costs before it runs anything (the rest is its conversation,
        // connection and the turns' working memory).
        "created_rss_per_client_kb": (created_rss - base_rss) * 1024.0 / a.clients as f64,
    }))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("scale-client: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let result = match a.mode.as_str() {
        "messages" => messages(&a).await,
        "clients" => clients(&a).await,
        other => Err(format!("--mode messages|clients, not {other:?}")),
    };
    match result {
        Ok(mut v) => {
            v["lang"] = json!("rust");
            v["mode"] = json!(a.mode);
            println!("{v}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("scale-client: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
