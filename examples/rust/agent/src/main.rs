//! `contenox-agent`: an agent that works in one directory and asks on the terminal before it
//! changes anything. A small, complete program on the `contenox` crate: a model from the command
//! line and the environment, the builtins confined to the directory, a gate, answers read from
//! stdin, the turn's events printed as they arrive, Ctrl-C cancelling the turn.
//!
//! ```text
//! contenox-agent [--style openai|anthropic|ollama] [--model NAME] [--base-url URL] [--yes] DIR PROMPT...
//! ```
//!
//! The API key and, when `--base-url` is not given, the base URL come from the style's usual
//! environment variables (`OPENAI_API_KEY` / `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY` /
//! `ANTHROPIC_BASE_URL`, `OLLAMA_HOST`); `CONTENOX_STYLE` and `CONTENOX_MODEL` stand in for
//! `--style` and `--model`. The answer streams to stdout; tool activity and questions go to
//! stderr. Exit status: 0 done, 1 the model could not be reached or answered badly, 2 bad usage,
//! 3 `max_turns` reached, 130 cancelled.
//!
//! ```text
//! cargo run -p contenox-agent-example -- . "What does this project do?"
//! ```

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use contenox::{
    async_trait, Answer, CancellationToken, Client, Decision, Event, Hooks, HostError, Outcome,
    PendingRequest, Style, ToolCallEvent, WaitFor,
};
use tokio::sync::{mpsc, Mutex};

const USAGE: &str = "usage: contenox-agent [--style openai|anthropic|ollama] [--model NAME] \
                     [--base-url URL] [--yes] DIR PROMPT...";

/// What the command line asked for.
struct Args {
    style: Style,
    model: Option<String>,
    base_url: Option<String>,
    yes: bool,
    root: PathBuf,
    prompt: String,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut style = std::env::var("CONTENOX_STYLE").ok();
    let mut model = std::env::var("CONTENOX_MODEL").ok();
    let mut base_url = None;
    let mut yes = false;
    let mut positional = Vec::new();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "--style" => style = Some(value("--style")?),
            "--model" => model = Some(value("--model")?),
            "--base-url" => base_url = Some(value("--base-url")?),
            "--yes" | "-y" => yes = true,
            "--help" | "-h" => return Err(String::new()),
            "--" => positional.extend(args.by_ref()),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            _ => positional.push(arg),
        }
    }
    let style = match style.as_deref().unwrap_or("openai") {
        "openai" => Style::Openai,
        "openai-responses" => Style::OpenaiResponses,
        "anthropic" => Style::Anthropic,
        "ollama" => Style::Ollama,
        other => {
            return Err(format!(
                "unknown style {other:?}: openai, openai-responses, anthropic or ollama"
            ))
        }
    };
    let mut positional = positional.into_iter();
    let dir = positional.next().ok_or("DIR is missing")?;
    let prompt = positional.collect::<Vec<_>>().join(" ");
    if prompt.trim().is_empty() {
        return Err("PROMPT is missing".into());
    }
    let root = std::fs::canonicalize(&dir)
        .ok()
        .filter(|p| p.is_dir())
        .ok_or(format!("{dir} is not a directory"))?;
    Ok(Args {
        style,
        model,
        base_url,
        yes,
        root,
        prompt,
    })
}

/// Text from the model, made safe for a terminal: control characters (escape sequences could
/// rewrite what the person sees, for example the question below) become U+FFFD.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}

/// One line about a call: the tool and its arguments as JSON (which escapes every control
/// character), cut to a readable length.
fn describe(name: &str, arguments: &serde_json::Value) -> String {
    let mut args = arguments.to_string();
    if args.chars().count() > 300 {
        args = args.chars().take(300).collect::<String>() + "…";
    }
    format!("{} {args}", printable(name))
}

/// The gate: read-only tools run; everything else (writes, edits, bash, tools whose hints are
/// unknown) asks first, unless `--yes` was given.
struct AskBeforeChanges {
    yes: bool,
}

#[async_trait]
impl Hooks for AskBeforeChanges {
    async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
        if self.yes || call.hints.read_only == Some(true) {
            return Ok(Decision::Allow);
        }
        Ok(Decision::Ask(PendingRequest::new(
            "approval",
            format!("Allow {}?", describe(&call.name, &call.arguments)),
        )))
    }
}

/// Answers asks from the terminal: `y` or `yes` approves; anything else, or the end of stdin,
/// denies. Stdin is read on its own thread (a blocking read cannot be cancelled), so a cancelled
/// turn stops waiting at once.
struct TerminalAnswers {
    lines: Mutex<mpsc::Receiver<String>>,
}

impl TerminalAnswers {
    fn new() -> Self {
        let (tx, rx) = mpsc::channel(1);
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        });
        TerminalAnswers {
            lines: Mutex::new(rx),
        }
    }
}

#[async_trait]
impl WaitFor for TerminalAnswers {
    async fn wait_for(
        &self,
        request: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        eprint!("{} [y/N] ", request.prompt.as_deref().unwrap_or("Allow?"));
        let _ = std::io::stderr().flush();
        let mut lines = self.lines.lock().await;
        let line = tokio::select! {
            line = lines.recv() => line,
            _ = cancel.cancelled() => return Ok(Answer::deny("cancelled")),
        };
        Ok(match line.as_deref().map(str::trim) {
            Some("y" | "Y" | "yes") => Answer::approve(),
            Some(_) => Answer::deny("The user said no."),
            None => {
                eprintln!();
                Answer::deny("No one is at the terminal to approve this.")
            }
        })
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("contenox-agent: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };

    let mut builder = Client::builder()
        .style(args.style)
        .root(&args.root)
        .hooks(Arc::new(AskBeforeChanges { yes: args.yes }))
        .wait_for(Arc::new(TerminalAnswers::new()))
        .system("You work in the user's project directory. Read before you change anything.");
    if let Some(model) = args.model {
        builder = builder.model(model);
    }
    if let Some(url) = args.base_url {
        builder = builder.base_url(url);
    }
    let client = match builder.build() {
        Ok(client) => client,
        Err(e) => {
            eprintln!("contenox-agent: {e}");
            return ExitCode::from(2);
        }
    };

    let mut run = match client.stream(args.prompt) {
        Ok(run) => run,
        Err(e) => {
            eprintln!("contenox-agent: {e}");
            return ExitCode::from(2);
        }
    };
    // Ctrl-C cancels the turn; the engine stops the model stream, the pending question and any
    // running tool, and the turn still ends with its turn_end.
    let cancel = run.cancel_token();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });

    let mut stdout = std::io::stdout();
    while let Some(event) = run.next_event().await {
        match event {
            Event::TextDelta { text, .. } => {
                let _ = write!(stdout, "{}", printable(&text));
                let _ = stdout.flush();
            }
            Event::Text { .. } => {
                let _ = writeln!(stdout);
            }
            Event::ToolStart { name, .. } => eprintln!("  > {}", printable(&name)),
            Event::ToolResult {
                name,
                content,
                is_error,
                ..
            } => {
                let first = content.lines().next().unwrap_or("");
                let first: String = first.chars().take(120).collect();
                let mark = if is_error { " (error)" } else { "" };
                eprintln!("  < {}{mark}: {}", printable(&name), printable(&first));
            }
            Event::Retry { error, wait_ms, .. } => {
                eprintln!("  retrying in {wait_ms} ms: {}", printable(&error))
            }
            _ => {}
        }
    }
    let result = match run.result().await {
        Ok(result) => result,
        Err(e) => {
            eprintln!("contenox-agent: {e}");
            return ExitCode::from(1);
        }
    };
    match result.outcome {
        Outcome::Done => ExitCode::SUCCESS,
        Outcome::Cancelled => {
            eprintln!("contenox-agent: cancelled");
            ExitCode::from(130)
        }
        Outcome::MaxTurns => {
            eprintln!("contenox-agent: the model used every turn it had");
            ExitCode::from(3)
        }
        _ => {
            let error = result.error.unwrap_or_default();
            eprintln!("contenox-agent: {}", printable(&error));
            ExitCode::from(1)
        }
    }
}
