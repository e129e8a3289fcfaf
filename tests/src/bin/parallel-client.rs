//! The Rust client of bench/parallel_tools (issue 27): turns against a model server that answers
//! each `turn i` with tool calls to `nap` (a read-only host tool that sleeps `--ms`) and `echo`,
//! then `done`. A fresh client per turn (built outside the timed part), so every turn starts
//! from an empty conversation. Prints one JSON line: the per-turn wall times.
//!
//!   parallel-client --base-url http://127.0.0.1:PORT/v1 --turns 5 --ms 300 [--sequential]
//!     [--no-stream-tools] [--style openai|anthropic]

use std::sync::Arc;
use std::time::{Duration, Instant};

use contenox::{tool_fn, Client, Hints, Style, ToolConcurrency, ToolOutput, ToolSpec};
use serde_json::json;

struct Args {
    base_url: String,
    style: Style,
    turns: usize,
    ms: u64,
    sequential: bool,
    stream_tools: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        base_url: String::new(),
        style: Style::Openai,
        turns: 5,
        ms: 300,
        sequential: false,
        stream_tools: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--base-url" => a.base_url = value()?,
            "--style" => {
                a.style = serde_json::from_value(json!(value()?)).map_err(|e| e.to_string())?
            }
            "--turns" => a.turns = value()?.parse().map_err(|e| format!("--turns: {e}"))?,
            "--ms" => a.ms = value()?.parse().map_err(|e| format!("--ms: {e}"))?,
            "--sequential" => a.sequential = true,
            "--no-stream-tools" => a.stream_tools = false,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.base_url.is_empty() || a.turns == 0 {
        return Err("--base-url and --turns >= 1 are required".into());
    }
    Ok(a)
}

fn client(a: &Args) -> Client {
    let ms = a.ms;
    let nap = tool_fn(
        ToolSpec::new("nap", "Wait a moment.", json!({"type": "object"}))
            .with_hints(Hints::read_only()),
        move |_args, _ctx| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(ToolOutput::text("rested"))
        },
    );
    let echo = tool_fn(
        ToolSpec::new("echo", "Echo the arguments.", json!({"type": "object"}))
            .with_hints(Hints::read_only()),
        |args, _ctx| async move { Ok(ToolOutput::text(args.to_string())) },
    );
    let mode = if a.sequential {
        ToolConcurrency::Sequential
    } else {
        ToolConcurrency::ReadOnly
    };
    Client::builder()
        .style(a.style)
        .base_url(a.base_url.clone())
        .model("fake")
        .api_key("sk-dummy")
        .builtins(Vec::<String>::new())
        .tool_concurrency(mode)
        .stream_tools(a.stream_tools)
        .tool(Arc::new(nap))
        .tool(Arc::new(echo))
        .build()
        .expect("client")
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("parallel-client: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let mut turn_ms = Vec::with_capacity(a.turns);
    let mut ok = true;
    for i in 1..=a.turns {
        let c = client(&a);
        let t = Instant::now();
        let r = c.run(format!("turn {i}")).await;
        turn_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        match r {
            Ok(r) if r.final_text == "done" => {}
            Ok(r) => {
                eprintln!("turn {i}: {:?} {:?} {:?}", r.outcome, r.final_text, r.error);
                ok = false;
            }
            Err(e) => {
                eprintln!("turn {i}: {e}");
                ok = false;
            }
        }
        c.close();
    }
    println!(
        "{}",
        json!({"sdk": "contenox-rust", "turn_ms": turn_ms, "ok": ok})
    );
    if ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
