//! The asks of a terminal run: the approval policy (`--policy`, the `default` preset unless
//! given) decides every call; what it asks about is asked in the terminal (`Approve write on
//! "src/main.rs"? [y/N]`, with a diff for write / edit / multi_edit), or denied when there is
//! no terminal to ask in. `--auto` approves every ask; what the policy denies stays denied.
//!
//! The answer is read as a line from stdin in the terminal's normal (cooked) mode, not key by
//! key in raw mode as prompt crates do (dialoguer, inquire): in raw mode Ctrl-C is a key the
//! prompt swallows, here it stays the signal that cancels the turn while a question is open.
//!
//! An MCP server's question (kind `elicitation`) is a form ([`crate::elicit_form`]), asked even
//! with `--auto` (it wants the person's input, not an approval) and declined without a
//! terminal; Ctrl-C while it is open cancels the question only ([`TerminalGate::interrupt_form`]).

use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use contenox::mcp::{Elicitation, ELICITATION_KIND};
use contenox::{async_trait, Answer, CancellationToken, HostError, PendingRequest, WaitFor};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::elicit_form::{self, Filled};
use crate::preview::{preview, question};
use crate::printer::Printer;

/// The denial when no terminal can be asked.
pub const NO_TERMINAL_DENIAL: &str =
    "Not approved: contenox runs without a terminal to ask in, so calls that need approval are \
     denied (--auto approves every call).";

/// The decline of an MCP server's question when no terminal can be asked.
pub const NO_TERMINAL_ELICITATION: &str =
    "Declined: contenox runs without a terminal to ask the MCP server's question in.";

/// Lines typed on stdin, read by one thread for the whole run (a blocking read cannot be
/// cancelled; the thread ends with the process).
struct Lines {
    rx: UnboundedReceiver<Option<String>>,
}

impl Lines {
    fn start() -> Lines {
        let (tx, rx) = unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                match line {
                    Ok(l) => {
                        if tx.send(Some(l)).is_err() {
                            return;
                        }
                    }
                    Err(_) => break,
                }
            }
            let _ = tx.send(None);
        });
        Lines { rx }
    }
}

/// The run's `wait_for`.
pub struct TerminalGate {
    auto: bool,
    interactive: bool,
    root: PathBuf,
    printer: Arc<Printer>,
    lines: tokio::sync::Mutex<Option<Lines>>,
    /// One question at a time (calls run one after the other, but be sure).
    asking: Mutex<()>,
    /// Cancelled by Ctrl-C while an MCP server's form is open.
    form: Mutex<Option<CancellationToken>>,
}

impl TerminalGate {
    /// A gate for the working directory `root`; `interactive` when stdin and stderr are a
    /// terminal.
    pub fn new(auto: bool, interactive: bool, root: PathBuf, printer: Arc<Printer>) -> Self {
        TerminalGate {
            auto,
            interactive,
            root,
            printer,
            lines: tokio::sync::Mutex::new(None),
            asking: Mutex::new(()),
            form: Mutex::new(None),
        }
    }

    /// Ctrl-C: cancel the MCP server's form that is open, if one is (`true`); else the caller
    /// cancels the turn.
    pub fn interrupt_form(&self) -> bool {
        match self.form.lock().as_ref() {
            Some(open) => {
                open.cancel();
                true
            }
            None => false,
        }
    }

    /// An MCP server's question, asked as a form.
    async fn elicit(
        &self,
        request: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        let Some(asked) = Elicitation::from_request(&request) else {
            return Ok(Answer::deny("Declined: the question carries no form."));
        };
        if !self.interactive {
            return Ok(Answer::deny(NO_TERMINAL_ELICITATION));
        }
        let form = match elicit_form::fields(&asked.requested_schema) {
            Ok(f) => f,
            Err(why) => {
                let why = format!(
                    "the MCP server {}'s question cannot be asked in the terminal: {why}; declined",
                    crate::terminal::clean_line(&asked.server)
                );
                self.printer.note(&format!("error: {why}"));
                return Ok(Answer::deny(
                    "Declined: the question cannot be asked in the terminal.",
                ));
            }
        };
        tokio::select! {
            _ = self.printer.pending_shown(&request.call_id) => {}
            _ = cancel.cancelled() => return Err(HostError::new("cancelled")),
        }
        let mut lines = self.lines.lock().await;
        let lines = lines.get_or_insert_with(Lines::start);
        while lines.rx.try_recv().is_ok() {}
        let interrupt = CancellationToken::new();
        let mut open = FormOpen::new(self, interrupt.clone());
        let filled = elicit_form::ask(
            &asked,
            &form,
            &self.printer,
            &mut lines.rx,
            &cancel,
            &interrupt,
        )
        .await;
        open.done = true;
        drop(open);
        match filled {
            Filled::Accept(content) => Ok(Answer::result(content)),
            Filled::Decline => Ok(Answer::Deny(None)),
            Filled::Cancel => {
                self.printer.note("");
                self.printer.note("[mcp] question cancelled");
                Err(HostError::new("the person cancelled the question"))
            }
            Filled::Closed => Ok(Answer::deny(
                "Declined: stdin closed before an answer came.",
            )),
            Filled::TurnCancelled => {
                self.printer.note("");
                Err(HostError::new("cancelled"))
            }
        }
    }
}

/// While a form is open: Ctrl-C reaches it. Dropped unfinished (the engine stopped waiting:
/// the question timed out), it says so, and Ctrl-C cancels the turn again either way.
struct FormOpen<'a> {
    gate: &'a TerminalGate,
    done: bool,
}

impl<'a> FormOpen<'a> {
    fn new(gate: &'a TerminalGate, interrupt: CancellationToken) -> Self {
        *gate.form.lock() = Some(interrupt);
        FormOpen { gate, done: false }
    }
}

impl Drop for FormOpen<'_> {
    fn drop(&mut self) {
        *self.gate.form.lock() = None;
        if !self.done {
            self.gate.printer.note("");
            self.gate
                .printer
                .note("[mcp] the question is no longer asked (it timed out); declined");
        }
    }
}

#[async_trait]
impl WaitFor for TerminalGate {
    async fn wait_for(
        &self,
        request: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        if request.kind == ELICITATION_KIND {
            return self.elicit(request, cancel).await;
        }
        if self.auto {
            return Ok(Answer::approve());
        }
        if !self.interactive {
            return Ok(Answer::deny(NO_TERMINAL_DENIAL));
        }
        // Everything the run printed before this ask is on screen before the question.
        tokio::select! {
            _ = self.printer.pending_shown(&request.call_id) => {}
            _ = cancel.cancelled() => return Err(HostError::new("cancelled")),
        }
        let mut lines = self.lines.lock().await;
        let lines = lines.get_or_insert_with(Lines::start);
        // A line typed before the question was shown is no answer to it.
        while lines.rx.try_recv().is_ok() {}
        let shown = preview(&self.root, &request.name, &request.arguments);
        // The policy's own prompt repeats the arguments and the diff shown above: the short
        // question goes with the preview; a host hook's prompt is shown as it was written.
        let from_policy = request
            .data
            .as_ref()
            .is_some_and(|d| d.get("policy").is_some());
        let question = match &request.prompt {
            Some(p) if !from_policy => p.clone(),
            _ => question(&request.name, &request.arguments),
        };
        {
            let _one = self.asking.lock();
            self.printer.prompt(&format!("{shown}{question} [y/N] "));
        }
        tokio::select! {
            line = lines.rx.recv() => match line {
                Some(Some(l)) if matches!(l.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
                    Ok(Answer::approve())
                }
                Some(Some(_)) => Ok(Answer::Deny(None)),
                _ => Ok(Answer::deny("Not approved: stdin closed before an answer came.")),
            },
            _ = cancel.cancelled() => {
                self.printer.note("");
                Err(HostError::new("cancelled"))
            }
        }
    }
}
