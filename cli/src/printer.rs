//! How a run shows up: the model's text streams to stdout; tool calls, gate verdicts, chain
//! steps and progress go to stderr, one line each, with what a model or service wrote made
//! safe for a terminal.

use std::io::{IsTerminal, Write};

use parking_lot::Mutex;

use contenox::{Answer, Event, GateVerdict, Outcome};
use serde_json::Value;
use tokio::sync::watch;

use crate::terminal::{clean, clean_line, cut_chars};

/// Write to stdout; a closed stdout is remembered ([`crate::stdout::closed`]) and ends the run,
/// other failures are dropped (nothing else can be told).
fn stdout_write(text: &str) {
    let _ = crate::stdout::write(text);
}

/// Prints a run's events.
pub struct Printer {
    stdout_tty: bool,
    /// Whether the last thing on stdout left a line open.
    mid_line: Mutex<bool>,
    /// The call id of the last `pending` event printed: an approval prompt waits for it, so
    /// every line before the ask is on screen first.
    shown_pending: watch::Sender<Option<String>>,
}

impl Default for Printer {
    fn default() -> Self {
        Printer::new()
    }
}

impl Printer {
    /// A printer for this process's stdout and stderr.
    pub fn new() -> Printer {
        Printer {
            stdout_tty: std::io::stdout().is_terminal(),
            mid_line: Mutex::new(false),
            shown_pending: watch::channel(None).0,
        }
    }

    /// Wait until the `pending` event of `call_id` was printed.
    pub async fn pending_shown(&self, call_id: &str) {
        let mut rx = self.shown_pending.subscribe();
        let _ = rx.wait_for(|shown| shown.as_deref() == Some(call_id)).await;
    }

    /// One line on stderr (after closing a line the model's text left open on a terminal).
    pub fn note(&self, line: &str) {
        self.close_line();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
    }

    /// Text on stderr without a newline (a prompt).
    pub fn prompt(&self, text: &str) {
        self.close_line();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{text}");
        let _ = err.flush();
    }

    fn close_line(&self) {
        let mut mid = self.mid_line.lock();
        if *mid && self.stdout_tty {
            stdout_write("\n");
            *mid = false;
        }
    }

    fn text(&self, text: &str) {
        let shown = if self.stdout_tty {
            clean(text)
        } else {
            text.to_string()
        };
        stdout_write(&shown);
        if !text.is_empty() {
            *self.mid_line.lock() = !text.ends_with('\n');
        }
    }

    /// End the answer's line on stdout when the model's text left it open.
    pub fn finish(&self) {
        let mut mid = self.mid_line.lock();
        if *mid {
            stdout_write("\n");
            *mid = false;
        }
    }

    /// Show one event.
    pub fn event(&self, event: &Event) {
        match event {
            // A subagent's answer is its tool result, shown as such; only the turn's own text
            // streams to stdout.
            Event::TextDelta { text, agent } if agent.is_empty() => self.text(text),
            Event::Text { .. } => {
                let mut mid = self.mid_line.lock();
                if *mid {
                    stdout_write("\n");
                    *mid = false;
                }
            }
            Event::ToolCall {
                name, arguments, ..
            } => {
                let args = match arguments {
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                self.note(&format!(
                    "[tool] {name} {}",
                    clean_line(&cut_chars(&args, 200))
                ));
            }
            Event::Gate {
                name,
                decision,
                message,
                ..
            } => match decision {
                GateVerdict::Allow => self.note(&format!("[gate] {name}: allow")),
                GateVerdict::Deny => self.note(&format!(
                    "[gate] {name}: deny: {}",
                    clean_line(&cut_chars(message.as_deref().unwrap_or(""), 200))
                )),
                // The approval prompt (or the denial without a terminal) says the rest.
                GateVerdict::Ask => {}
            },
            Event::Pending { call_id, .. } => {
                self.shown_pending.send_replace(Some(call_id.clone()));
            }
            Event::Answer { name, answer, .. } => match answer {
                Answer::Approve => self.note(&format!("[gate] {name}: approved")),
                Answer::Deny(message) => self.note(&format!(
                    "[gate] {name}: denied{}",
                    message
                        .as_deref()
                        .map(|m| format!(": {}", clean_line(&cut_chars(m, 200))))
                        .unwrap_or_default()
                )),
                Answer::Result(_) => self.note(&format!("[gate] {name}: answered")),
                Answer::Suspend => self.note(&format!("[gate] {name}: suspended")),
            },
            Event::ToolResult {
                name,
                content,
                is_error,
                ..
            } => {
                let first = content.lines().next().unwrap_or("");
                let more = content.lines().count().saturating_sub(1);
                let more = if more > 0 {
                    format!(" (+{more} lines)")
                } else {
                    String::new()
                };
                let kind = if *is_error { "error" } else { "ok" };
                self.note(&format!(
                    "[tool] {name}: {kind}: {}{more}",
                    clean_line(&cut_chars(first, 160))
                ));
            }
            Event::Progress { name, data, .. } => {
                let text = match data {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                self.note(&format!(
                    "[tool] {name}: {}",
                    clean_line(&cut_chars(&text, 160))
                ));
            }
            Event::Todos { todos, .. } => {
                for t in todos.as_array().into_iter().flatten() {
                    let status = t.get("status").and_then(Value::as_str).unwrap_or("");
                    let mark = match status {
                        "completed" => "[x]",
                        "in_progress" => "[~]",
                        _ => "[ ]",
                    };
                    let content = t.get("content").and_then(Value::as_str).unwrap_or("");
                    self.note(&format!(
                        "[todo] {mark} {}",
                        clean_line(&cut_chars(content, 160))
                    ));
                }
            }
            Event::Retry {
                status,
                error,
                wait_ms,
                ..
            } => self.note(&format!(
                "[model] retrying in {wait_ms} ms ({}{})",
                status.map(|s| format!("HTTP {s}: ")).unwrap_or_default(),
                clean_line(&cut_chars(error, 160))
            )),
            Event::Fallback {
                from_model,
                to_model,
                status,
                error,
                ..
            } => self.note(&format!(
                "[model] {} failed ({}{}); falling back to {}",
                clean_line(from_model),
                status.map(|s| format!("HTTP {s}: ")).unwrap_or_default(),
                clean_line(&cut_chars(error, 160)),
                clean_line(to_model)
            )),
            Event::Compact {
                pre_tokens,
                post_tokens,
                ..
            } => self.note(&format!(
                "[compact] the older conversation was summarised ({pre_tokens} -> {post_tokens} tokens)"
            )),
            Event::ChainTaskStart { task_id, handler } => {
                self.note(&format!("[chain] {task_id} ({handler})"))
            }
            Event::ChainTaskEnd {
                task_id,
                value,
                next,
                error,
                ..
            } => {
                let next = next.as_deref().unwrap_or("end");
                match (error, value) {
                    (Some(e), _) => self.note(&format!(
                        "[chain] {task_id} failed: {} -> {next}",
                        clean_line(&cut_chars(e, 200))
                    )),
                    (None, Some(v)) => self.note(&format!(
                        "[chain] {task_id} -> {next} ({})",
                        clean_line(&cut_chars(v, 60))
                    )),
                    (None, None) => self.note(&format!("[chain] {task_id} -> {next}")),
                }
            }
            Event::TurnEnd { outcome, error, .. } => match outcome {
                Outcome::Done => {}
                // A closed stdout cancelled the run: the command ends quietly.
                Outcome::Cancelled if crate::stdout::closed() => {}
                Outcome::Cancelled => self.note("cancelled"),
                Outcome::MaxTurns => self.note("stopped: max_turns reached"),
                Outcome::Budget => self.note(&format!(
                    "stopped: {}",
                    clean_line(error.as_deref().unwrap_or("a budget ceiling was reached"))
                )),
                Outcome::Error => self.note(&format!(
                    "error: {}",
                    clean_line(error.as_deref().unwrap_or("the turn failed"))
                )),
                Outcome::OutputInvalid => self.note(&format!(
                    "output_invalid: {}",
                    clean_line(error.as_deref().unwrap_or("the answer did not match"))
                )),
                // The CLI's own gate never answers suspend; a library host's may.
                Outcome::Suspended => self.note("suspended: waiting for an answer"),
            },
            _ => {}
        }
    }
}
