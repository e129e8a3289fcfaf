//! `contenox run "prompt"` and `contenox run --chain FILE --input TEXT`: one turn (or one chain)
//! of a client rooted in the current directory, its answer streamed to stdout, everything else
//! on stderr, approvals asked in the terminal.
//!
//! Ctrl-C cancels the turn: the engine ends the running tool (its process group) and the
//! conversation stays valid, so `--transcript` saves it and a later run continues it. A second
//! Ctrl-C closes the client (background shells, MCP servers) and exits at once.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use contenox::remote::{load_remote, HookState, RemoteSource};
use contenox::{
    load_mcp, Allowlist, Chain, Client, ClientBuilder, Config, McpConfig, McpSource, Outcome,
    ServerState, Spelling, Transcript,
};
use serde_json::{json, Map, Value};

use crate::args::RunArgs;
use crate::db::{Access, Registry};
use crate::error::{CliError, CliResult, EXIT_FAILED, EXIT_INTERRUPTED};
use crate::gate::TerminalGate;
use crate::printer::Printer;
use crate::terminal::{clean_line, cut_chars};

/// The largest file `--script`, `--chain`, `--mcp` and `--transcript` read.
const MAX_INPUT_FILE: u64 = 16 << 20;

/// Run; `Ok` is the exit code (0 done, 1 the turn failed or stopped, 130 cancelled).
pub async fn run(db: &Path, args: RunArgs) -> CliResult<i32> {
    let root = std::env::current_dir()
        .map_err(|e| CliError::failed(format!("the current directory: {e}")))?;
    // Everything the command line names is read and checked before anything starts.
    let config = client_config(&args, &root)?;
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
    if args.auto {
        printer.note("[gate] --auto: every tool call is approved without asking");
    }
    let gate = Arc::new(TerminalGate::new(
        args.auto,
        interactive,
        root.clone(),
        printer.clone(),
    ));
    let client = ClientBuilder::from_config(config)
        .hooks(gate.clone())
        .wait_for(gate)
        .build()
        .map_err(|e| CliError::usage(plain(&e)))?;
    if let Some(t) = transcript {
        client
            .set_transcript(t)
            .map_err(|e| CliError::usage(format!("--transcript: {}", plain(&e))))?;
    }
    let sources = Sources::start(&client, hooks, mcp_config, &printer).await;
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

/// The client's config from the flags; checked whole by the engine.
fn client_config(args: &RunArgs, root: &Path) -> CliResult<Config> {
    let mut config = Map::new();
    config.insert("root".into(), json!(root));
    if let Some(path) = &args.script {
        let text = read_text(path, "--script")?;
        let entries: Value = serde_json::from_str(&text)
            .map_err(|e| CliError::usage(format!("--script {}: not JSON: {e}", path.display())))?;
        config.insert("style".into(), json!("scripted"));
        config.insert("script".into(), entries);
    } else {
        let style = args.style.as_deref().unwrap_or("openai").trim();
        config.insert("style".into(), json!(style));
        if let Some(url) = &args.base_url {
            config.insert("base_url".into(), json!(url));
        }
        match &args.model {
            Some(m) => config.insert("model".into(), json!(m)),
            None => {
                return Err(CliError::usage(
                    "give the model with --model (or CONTENOX_MODEL), or run offline with \
                     --script FILE",
                ))
            }
        };
    }
    if let Some(list) = &args.builtins {
        let names: Vec<&str> = match list.trim() {
            "none" | "" => Vec::new(),
            l => l
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .collect(),
        };
        config.insert("builtins".into(), json!(names));
    }
    if let Some(system) = &args.system {
        config.insert("system".into(), json!(system));
    }
    if let Some(n) = args.max_turns {
        config.insert("max_turns".into(), json!(n));
    }
    Config::from_value(&Value::Object(config), Spelling::default())
        .map_err(|e| CliError::usage(plain(&e)))
}

/// The registered hooks `--hooks` selects (an allowlist over hook names). A plain name that is
/// not registered is an error: a typo would otherwise run without the hook.
fn selected_hooks(db: &Path, list: &str) -> CliResult<Vec<contenox::RemoteHook>> {
    let patterns: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if patterns.is_empty() {
        return Ok(Vec::new());
    }
    // Only exclusions ("!x") mean every hook but those.
    let mut patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
    if patterns.iter().all(|p| p.starts_with('!')) {
        patterns.insert(0, "*".into());
    }
    let allow = Allowlist::new(&patterns)
        .map_err(|e| CliError::usage(format!("--hooks: {}", plain(&e))))?;
    let stored = match Registry::open(db, Access::Read)? {
        Some(registry) => registry.list()?,
        None => Vec::new(),
    };
    for p in &patterns {
        let literal = !p.starts_with('!') && !p.contains(['*', '?', '[', '{']);
        if literal && !stored.iter().any(|s| &s.hook.name == p) {
            return Err(CliError::usage(format!(
                "--hooks: no hook named {:?} is registered (see `contenox hook list`)",
                clean_line(&cut_chars(p, 70))
            )));
        }
    }
    Ok(stored
        .into_iter()
        .map(|s| s.hook)
        .filter(|h| allow.allows(&h.name))
        .collect())
}

/// The tool sources a run started; closed before the command returns.
struct Sources {
    remote: Option<RemoteSource>,
    mcp: Option<McpSource>,
}

impl Sources {
    async fn start(
        client: &Client,
        hooks: Vec<contenox::RemoteHook>,
        mcp: Option<McpConfig>,
        printer: &Arc<Printer>,
    ) -> CliResult<Sources> {
        let mut sources = Sources {
            remote: None,
            mcp: None,
        };
        if !hooks.is_empty() {
            let p = printer.clone();
            let remote = load_remote(hooks, move |name, state| match state {
                HookState::Ready { tools } => p.note(&format!("[hook] {name}: {tools} tool(s)")),
                HookState::Unavailable { error } => p.note(&format!(
                    "[hook] {name}: not reachable ({}); probed again before the turn",
                    clean_line(&cut_chars(error, 200))
                )),
            })
            .await
            .map_err(|e| CliError::usage(plain(&e)))?;
            let registered = remote.register_into(client);
            sources.remote = Some(remote);
            if let Err(e) = registered {
                sources.close().await;
                return Err(CliError::usage(plain(&e)));
            }
        }
        if let Some(config) = mcp {
            let p = printer.clone();
            let source = load_mcp(config, move |name, state| match state {
                ServerState::Ready { tools } => p.note(&format!("[mcp] {name}: {tools} tool(s)")),
                ServerState::Failed { error } => p.note(&format!(
                    "[mcp] {name}: failed: {}",
                    clean_line(&cut_chars(error, 300))
                )),
            })
            .await;
            let registered = source.register_into(client);
            sources.mcp = Some(source);
            if let Err(e) = registered {
                sources.close().await;
                return Err(CliError::usage(plain(&e)));
            }
        }
        Ok(sources)
    }

    async fn close(&self) {
        if let Some(r) = &self.remote {
            r.close().await;
        }
        if let Some(m) = &self.mcp {
            m.close().await;
        }
    }
}

/// Write the transcript next to its place and rename it over (a crash mid-write leaves the old
/// one). A failure is reported, not fatal: the turn already happened.
fn save_transcript(path: Option<&Path>, transcript: &Transcript, printer: &Printer) {
    let Some(path) = path else { return };
    let tmp = sibling(path, ".contenox-tmp");
    let saved =
        std::fs::write(&tmp, transcript.to_json()).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = saved {
        let _ = std::fs::remove_file(&tmp);
        printer.note(&format!(
            "error: the transcript could not be saved to {}: {e}",
            path.display()
        ));
    }
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// A file a flag names, as UTF-8 text, at most [`MAX_INPUT_FILE`] bytes.
fn read_text(path: &Path, flag: &str) -> CliResult<String> {
    let bad = |why: String| CliError::usage(format!("{flag} {}: {why}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(e.to_string()))?;
    if bytes.len() as u64 > MAX_INPUT_FILE {
        return Err(bad(format!("larger than {MAX_INPUT_FILE} bytes")));
    }
    String::from_utf8(bytes).map_err(|_| bad("not UTF-8 text".into()))
}

/// An engine error without its kind's prefix ("invalid configuration: ").
fn plain(e: &contenox::Error) -> String {
    let text = e.to_string();
    text.strip_prefix("invalid configuration: ")
        .unwrap_or(&text)
        .to_string()
}
