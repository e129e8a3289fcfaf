//! `fake-model-server --scenario FILE [--style openai|openai-responses|anthropic|ollama] [--repeat | --by-turn-step]`
//! `fake-model-server --replay FILE [--style openai|openai-responses|anthropic|ollama]`
//! `fake-model-server --replay FILE --expect`
//!
//! `--replay` serves a recorded stream (one JSON chunk per line, as the Vercel AI SDK's
//! `*.chunks.txt` fixtures) as the first answer, in the framing of its style (read from the
//! chunks unless `--style` gives it), then answers `replay over` (the request after its calls).
//! With `--expect` it serves nothing: it prints what a reader must get out of the recording
//! (`{"style", "replies": [{"text", "reasoning", "calls": [[name, arguments]], "stop",
//! "error"}]}`, read the plain way, independently of the engine) and exits, so a binding's tests
//! can replay recordings and compare.
//!
//! `--repeat` cycles through the script forever and records no bodies: a zero-latency model
//! for benchmarks. `--by-turn-step` does the same but answers each request with the entry at its
//! step within its turn (model replies since the user's prompt), so concurrent clients that
//! interleave their requests each get the script in order (bench/scale).
//!
//! Binds 127.0.0.1:0, prints the port alone on the first stdout line, then serves the
//! scenario's `model` script. Exits when its stdin reaches EOF, so it never outlives the
//! process that started it (start it with a piped stdin; close the pipe to stop it).

use std::io::{Read, Write};
use std::process::ExitCode;

use contenox_conformance::fake::{self, Repeat};
use contenox_conformance::recorded;
use contenox_conformance::scenario::{ModelEntry, Scenario, Style};

const USAGE: &str = "usage: fake-model-server --scenario FILE [--style openai|openai-responses|anthropic|ollama] [--repeat | --by-turn-step]
       fake-model-server --replay FILE [--style openai|openai-responses|anthropic|ollama] [--expect]";

/// What to serve: a scenario's script, or a recorded stream.
enum Source {
    Scenario(String),
    Replay(String),
}

fn parse_args() -> Result<(Source, Option<Style>, Option<Repeat>, bool), String> {
    let mut expect = false;
    let mut scenario = None;
    let mut replay = None;
    let mut repeat = None;
    let mut style = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match key.as_str() {
            "--scenario" => scenario = Some(value("--scenario")?),
            "--replay" => replay = Some(value("--replay")?),
            "--style" => style = Some(value("--style")?.parse::<Style>()?),
            "--repeat" => repeat = Some(Repeat::Cycle),
            "--by-turn-step" => repeat = Some(Repeat::ByTurnStep),
            "--expect" => expect = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let source = match (scenario, replay) {
        (Some(s), None) => Source::Scenario(s),
        (None, Some(r)) if repeat.is_none() => Source::Replay(r),
        (None, Some(_)) => return Err("--replay does not repeat".into()),
        (Some(_), Some(_)) => return Err("--scenario and --replay exclude each other".into()),
        (None, None) => return Err("--scenario or --replay is required".into()),
    };
    if expect && !matches!(source, Source::Replay(_)) {
        return Err("--expect goes with --replay".into());
    }
    Ok((source, style, repeat, expect))
}

/// The script and style a source asks for.
fn load(source: &Source, style: Option<Style>) -> Result<(Vec<ModelEntry>, Style), String> {
    match source {
        Source::Scenario(path) => {
            let scenario = Scenario::load(path).map_err(|e| e.to_string())?;
            Ok((scenario.model, style.unwrap_or(scenario.style)))
        }
        Source::Replay(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("read {path}: {e}"))?;
            let lines = recorded::lines(&text);
            let style = style
                .or_else(|| recorded::style_of(&lines))
                .ok_or_else(|| {
                    format!("{path}: not a stream of a style contenox speaks (give --style)")
                })?;
            let recording = recorded::Recording { style, lines };
            Ok((recorded::script(&recording), style))
        }
    }
}

/// What `--expect` prints for `path`.
fn expectation(path: &str, style: Option<Style>) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("read {path}: {e}"))?;
    let lines = recorded::lines(&text);
    let style = style
        .or_else(|| recorded::style_of(&lines))
        .ok_or_else(|| format!("{path}: not a stream of a style contenox speaks (give --style)"))?;
    let recording = recorded::Recording { style, lines };
    let replies: Vec<serde_json::Value> = recorded::expected(&recording)
        .into_iter()
        .map(|e| {
            serde_json::json!({
                "text": e.text,
                "reasoning": e.reasoning,
                "calls": e.calls,
                "stop": e.stop,
                "error": e.error,
            })
        })
        .collect();
    Ok(serde_json::json!({"style": style.as_str(), "replies": replies}))
}

fn main() -> ExitCode {
    let (source, style, repeat, expect) = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("fake-model-server: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let (true, Source::Replay(path)) = (expect, &source) {
        return match expectation(path, style) {
            Ok(v) => {
                println!("{v}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("fake-model-server: {e}");
                ExitCode::from(2)
            }
        };
    }
    let (script, style) = match load(&source, style) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake-model-server: {e}");
            return ExitCode::from(2);
        }
    };

    // Stdin EOF (or a read error) ends the process, whatever the server is doing.
    std::thread::spawn(|| {
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 256];
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        std::process::exit(0);
    });

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fake-model-server: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(async move {
        let started = match repeat {
            Some(by) => fake::serve_repeating_by(script, style, by).await,
            None => fake::serve(script, style).await,
        };
        let server = match started {
            Ok(s) => s,
            Err(e) => {
                eprintln!("fake-model-server: bind: {e}");
                return ExitCode::from(1);
            }
        };
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{}", server.addr.port())
            .and_then(|()| out.flush())
            .is_err()
        {
            return ExitCode::from(1);
        }
        drop(out);
        // Serve until stdin closes (the thread above exits the process).
        std::future::pending::<()>().await;
        ExitCode::SUCCESS
    })
}
