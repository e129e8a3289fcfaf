//! `contenox run "prompt"` and `contenox run --chain FILE --input TEXT`: one turn (or one chain)
//! of a client rooted in the current directory, its answer streamed to stdout, everything else
//! on stderr, approvals asked in the terminal.
//!
//! Ctrl-C cancels the turn: the engine ends the running tool (its process group) and the
//! conversation stays valid, so `--transcript` saves it and a later run continues it. A second
//! Ctrl-C closes the client (background shells, MCP servers) and exits at once. While an MCP
//! server's question is open, Ctrl-C cancels that question only.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use contenox::{Chain, ClientBuilder, McpAuth, McpConfig, Outcome, Transcript};

use crate::args::RunArgs;
use crate::error::{CliError, CliResult, EXIT_FAILED, EXIT_INTERRUPTED};
use crate::gate::TerminalGate;
use crate::mcp_auth::{CliAuth, TokenFile};
use crate::printer::Printer;
use crate::setup::{client_config, plain, read_text, selected_hooks, write_atomically, Sources};

/// Run; `Ok` is the exit code (0 done, 1 the turn failed or stopped, 130 cancelled).
pub async fn run(db: &Path, args: RunArgs) -> CliResult<i32> {
    let root = std::env::current_dir()
        .map_err(|e| CliError::failed(format!("the current directory: {e}")))?;
    // Everything the command line names is read and checked before anything starts.
    let config = client_config(&args.client, &root)?;
    let chain = args
        .chain
        .as_deref()
        .map(|path| {
            let text = read_text(path, "--chain")?;
            Chain::from_json(&text)
                .map_err(|e| CliError::usage(format!("--chain {}: {}", path.display(), plain(&e))))
        })
        .transpose()?;
    let input = match (&chain, &args.input, &args.prompt) {
        (Some(_), Some(i), None) | (Some(_), None, Some(i)) => i.clone(),
        (Some(_), None, None) => String::new(),
        (Some(_), Some(_), Some(_)) => {
            return Err(CliError::usage(
                "give the chain's input once: as --input or as the prompt",
            ))
        }
        (None, _, Some(p)) => p.clone(),
        (None, _, None) => {
            return Err(CliError::usage(
                "contenox run needs a prompt (or --chain FILE [--input TEXT])",
            ))
        }
    };
    let transcript = match &args.transcript {
        Some(path) if path.exists() => {
            let text = read_text(path, "--transcript")?;
            Some(Transcript::from_json(&text).map_err(|e| {
                CliError::usage(format!("--transcript {}: {}", path.display(), plain(&e)))
            })?)
        }
        _ => None,
    };
    let mcp_config = args
        .mcp
        .as_deref()
        .map(|path| {
            let text = read_text(path, "--mcp")?;
            McpConfig::from_json(&text)
                .map_err(|e| CliError::usage(format!("--mcp {}: {}", path.display(), plain(&e))))
        })
        .transpose()?;
    // A chain names its hooks itself (execute_config.hooks): by default it may use them all.
    let default_hooks = if chain.is_some() { "*" } else { "" };
    let hooks = selected_hooks(db, args.hooks.as_deref().unwrap_or(default_hooks))?;

    let printer = Arc::new(Printer::new());
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if args.client.gate.auto {
        printer.note("[gate] --auto: every call the policy asks about is approved without asking");
    }
    let gate = Arc::new(TerminalGate::new(
        args.client.gate.auto,
        interactive,
        root.clone(),
        printer.clone(),
    ));
    let client = ClientBuilder::from_config(config)
        .wait_for(gate.clone())
        .build()
        .map_err(|e| CliError::usage(plain(&e)))?;
    if let Some(t) = transcript {
        client
            .set_transcript(t)
            .map_err(|e| CliError::usage(format!("--transcript: {}", plain(&e))))?;
    }
    let p = printer.clone();
    let note = Arc::new(move |line: String| p.note(&line));
    // OAuth-protected HTTP servers: the browser step and the owner-only token file.
    let auth = match crate::mcp_auth::default_dir() {
        Some(dir) => {
            let n = note.clone();
            let auth: Arc<dyn McpAuth> = Arc::new(CliAuth::new(
                TokenFile::new(dir),
                Arc::new(move |line: String| n(line)),
            ));
            Some(auth)
        }
        None => None,
    };
    let sources = Sources::start(&client, hooks, mcp_config, auth, note).await;
    let sources = match sources {
        Ok(s) => s,
        Err(e) => {
            client.close();
            return Err(e);
        }
    };

    let started = match &chain {
        Some(c) => client.stream_chain(c, input),
        None => client.stream(input),
    };
    let mut run = match started {
        Ok(r) => r,
        Err(e) => {
            sources.close().await;
            client.close();
            return Err(CliError::failed(plain(&e)));
        }
    };
    let mut interrupted = false;
    let mut stdout_gone = false;
    loop {
        tokio::select! {
            event = run.next_event() => match event {
                Some(e) => {
                    printer.event(&e);
                    // Nobody reads the answer any more (`contenox run ... | head -1`): stop.
                    if crate::stdout::closed() && !stdout_gone {
                        stdout_gone = true;
                        run.cancel();
                    }
                }
                None => break,
            },
            _ = tokio::signal::ctrl_c() => {
                if gate.interrupt_form() {
                    // Ctrl-C in an MCP server's form cancels that question, not the turn.
                    continue;
                }
                if interrupted {
                    // The second Ctrl-C: stop waiting for the turn to wind down.
                    printer.note("interrupted");
                    client.close();
                    save_transcript(args.transcript.as_deref(), &client.transcript(), &printer);
                    sources.close().await;
                    return Ok(EXIT_INTERRUPTED);
                }
                interrupted = true;
                printer.note("cancelling (press Ctrl-C again to quit now)");
                run.cancel();
            }
        }
    }
    printer.finish();
    let result = run.result().await;
    sources.close().await;
    client.close();
    let result = result.map_err(|e| CliError::failed(plain(&e)))?;
    save_transcript(args.transcript.as_deref(), &result.transcript, &printer);
    if crate::stdout::closed() {
        return Ok(crate::stdout::EXIT_CLOSED_STDOUT);
    }
    Ok(match result.outcome {
        Outcome::Done => 0,
        Outcome::Cancelled => EXIT_INTERRUPTED,
        _ => EXIT_FAILED,
    })
}

/// Write the transcript atomically (a crash mid-write leaves the old one). A failure is
/// reported, not fatal: the turn already happened.
fn save_transcript(path: Option<&Path>, transcript: &Transcript, printer: &Printer) {
    let Some(path) = path else { return };
    if let Err(e) = write_atomically(path, transcript.to_json().as_bytes()) {
        printer.note(&format!(
            "error: the transcript could not be saved to {}: {e}",
            path.display()
        ));
    }
}
