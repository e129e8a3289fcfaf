//! Run one builtin by hand, outside a turn, with the current directory as the root:
//!
//! ```text
//! cargo run --example tool -- grep '{"pattern": "fn main", "output_mode": "content"}'
//! cargo run --example tool -- read '{"path": "Cargo.toml", "limit": 5}'
//! cargo run --example tool -- --text glob '{"pattern": "**/*.rs", "limit": 0}'
//! ```
//!
//! Prints the result as JSON (`content`, `is_error`, `metadata`), or with `--text` the content
//! alone, as the tool returned it (for pipelines and benchmarks). The arguments are checked
//! against the tool's input schema first, as a turn does. Exit status 1 for an error result,
//! 2 for bad usage. Ctrl-C cancels the call (a running bash command's process group is killed).
//! The model API key variables are kept from commands that `bash` runs, as in a client.

use std::io::Write;
use std::process::ExitCode;

use contenox::builtin::{builtin, IMPLEMENTED_BUILTINS};
use contenox::{ToolContext, ToolOutput};
use serde_json::Value;

fn usage() -> ExitCode {
    eprintln!(
        "usage: tool [--text] <name> ['<json arguments>']\nbuiltins: {}\n(bash_output, \
         kill_shell and websearch need a client: background shells and a search provider)",
        IMPLEMENTED_BUILTINS.join(", ")
    );
    ExitCode::from(2)
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let text_only = match args.iter().position(|a| a == "--text") {
        Some(i) => {
            args.remove(i);
            true
        }
        None => false,
    };
    let (name, raw) = match args.as_slice() {
        [name] => (name.clone(), "{}".to_string()),
        [name, json] => (name.clone(), json.clone()),
        _ => return usage(),
    };
    let Some(tool) = builtin(&name) else {
        eprintln!("unknown builtin {name:?}");
        return usage();
    };
    let arguments: Value = match serde_json::from_str(&raw) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("the arguments are not JSON: {e}");
            return ExitCode::from(2);
        }
    };
    let spec = tool.spec();
    match jsonschema::validator_for(&spec.input_schema) {
        Ok(validator) => {
            let problems: Vec<String> = validator
                .iter_errors(&arguments)
                .map(|e| e.to_string())
                .collect();
            if !problems.is_empty() {
                eprintln!(
                    "the arguments do not match {name}'s schema: {}",
                    problems.join("; ")
                );
                return ExitCode::from(2);
            }
        }
        Err(e) => {
            eprintln!("{name}'s schema does not compile: {e}");
            return ExitCode::from(2);
        }
    }
    let root = match std::env::current_dir().and_then(std::fs::canonicalize) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot resolve the current directory: {e}");
            return ExitCode::from(2);
        }
    };
    let mut ctx = ToolContext::detached(root, name.clone());
    ctx.secret_env = std::sync::Arc::new(
        ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_KEY"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    );
    let cancel = ctx.cancel.clone();
    let output = tokio::select! {
        r = tool.call(arguments, ctx) => match r {
            Ok(out) => out,
            Err(e) => ToolOutput::error(e.message),
        },
        _ = tokio::signal::ctrl_c() => {
            cancel.cancel();
            ToolOutput::error("cancelled")
        }
    };
    let mut stdout = std::io::stdout().lock();
    let written = if text_only {
        stdout.write_all(output.content_text().as_bytes())
    } else {
        serde_json::to_writer_pretty(&mut stdout, &output)
            .map_err(std::io::Error::other)
            .and_then(|_| stdout.write_all(b"\n"))
    };
    if let Err(e) = written.and_then(|_| stdout.flush()) {
        eprintln!("cannot write the result: {e}");
        return ExitCode::from(2);
    }
    if output.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
