//! The gate's asks in the editor: every call the approval policy asks about becomes a
//! `session/request_permission` (after its `tool_call` update, same id) with the options allow
//! once, reject once, and allow / reject always. The agent remembers an "always" for the rest
//! of the session: per tool, or for bash per command prefix (`git status`, `ls`), so the next
//! matching call is answered without asking.
//!
//! A remembered allow admits a bash line only when the line is plain (literal commands joined
//! by `;`, `&&`, `||`, `|`: no substitution, redirection into a file, subshell) and every one of
//! its commands has an allowed prefix; a remembered reject refuses a line in which any command
//! (nested ones included) has a rejected prefix. A line that is not plain cannot be allowed
//! always: the option is not offered for it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
#[cfg(test)]
use std::time::Duration;

use parking_lot::Mutex;

use contenox::policy::shell::{self, SimpleCommand};
use contenox::{async_trait, Answer, CancellationToken, HostError, PendingRequest, WaitFor};
use serde_json::{json, Value};
use tokio::sync::watch;

use super::updates::tool_call;
use super::wire::Peer;

/// The denial when the person rejected a call in the editor.
pub const REJECTED: &str = "The user rejected this call in the editor. Ask what they want \
                            instead, or try a different, less destructive approach.";
/// The denial of a call the person rejected always, earlier in the session.
pub const REJECTED_ALWAYS: &str = "The user chose earlier in this session to always reject \
                                   this kind of call. Try a different approach.";

/// What an "always" answer is remembered as.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Scope {
    /// Every call of this tool.
    Tool(String),
    /// bash command lines whose commands start with these words.
    Command(Vec<String>),
}

impl Scope {
    fn describe(&self) -> String {
        match self {
            Scope::Tool(t) => format!("every {t} call"),
            Scope::Command(words) => format!("`{}` commands", words.join(" ")),
        }
    }
}

/// Programs whose first argument names what they do (`git status`, `cargo test`): a bash
/// command of one of these is remembered with that subcommand; any other by its name alone.
const SUBCOMMAND_TOOLS: &[&str] = &[
    "apt",
    "apt-get",
    "brew",
    "bun",
    "cargo",
    "deno",
    "docker",
    "dotnet",
    "gh",
    "git",
    "go",
    "gradle",
    "helm",
    "kubectl",
    "make",
    "mvn",
    "npm",
    "npx",
    "pip",
    "pip3",
    "pnpm",
    "poetry",
    "rustup",
    "systemctl",
    "terraform",
    "uv",
    "yarn",
];

/// The words a bash command is remembered by: its name, and for the programs of
/// [`SUBCOMMAND_TOOLS`] its first argument too (`git status`; `ls -la` is `ls`).
fn prefix(c: &SimpleCommand) -> Vec<String> {
    let name = c.basename().to_string();
    let sub = c
        .words
        .get(1)
        .filter(|w| SUBCOMMAND_TOOLS.contains(&name.as_str()) && !w.starts_with('-'));
    match sub {
        Some(s) => vec![name, s.clone()],
        None => vec![name],
    }
}

fn starts_with(c: &SimpleCommand, words: &[String]) -> bool {
    let mine = prefix(c);
    mine.len() >= words.len() && mine[..words.len()] == *words
}

/// The scopes an "always" for this call would remember; `None` when it cannot be remembered
/// safely (a bash line that is not plain).
fn scopes_for(name: &str, args: &Value) -> Option<Vec<Scope>> {
    if name != "bash" {
        return Some(vec![Scope::Tool(name.to_string())]);
    }
    let line = args.get("command").and_then(Value::as_str)?;
    let reading = shell::read(line).ok()?;
    if !reading.plain() {
        return None;
    }
    let mut scopes: Vec<Scope> = Vec::new();
    for c in &reading.commands {
        let s = Scope::Command(prefix(c));
        if !scopes.contains(&s) {
            scopes.push(s);
        }
    }
    Some(scopes)
}

/// A reject remembers the prefix of every command of the line, even a line that is not plain.
fn reject_scopes(name: &str, args: &Value) -> Vec<Scope> {
    if name != "bash" {
        return vec![Scope::Tool(name.to_string())];
    }
    let line = args.get("command").and_then(Value::as_str).unwrap_or("");
    match shell::read(line) {
        Ok(r) => r
            .commands
            .iter()
            .map(|c| Scope::Command(prefix(c)))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// What the person chose "always" for, in one session.
#[derive(Default)]
pub struct Remembered {
    allowed: HashSet<Scope>,
    rejected: HashSet<Scope>,
}

impl Remembered {
    /// The remembered answer to a call, if any (a reject wins over an allow).
    pub fn answer(&self, name: &str, args: &Value) -> Option<Answer> {
        if name != "bash" {
            let s = Scope::Tool(name.to_string());
            if self.rejected.contains(&s) {
                return Some(Answer::deny(REJECTED_ALWAYS));
            }
            return self.allowed.contains(&s).then(Answer::approve);
        }
        let line = args.get("command").and_then(Value::as_str)?;
        let reading = shell::read(line).ok()?;
        let rejected = reading.commands.iter().any(|c| {
            self.rejected
                .iter()
                .any(|s| matches!(s, Scope::Command(w) if starts_with(c, w)))
        });
        if rejected {
            return Some(Answer::deny(REJECTED_ALWAYS));
        }
        let allowed = reading.plain()
            && reading.commands.iter().all(|c| {
                self.allowed
                    .iter()
                    .any(|s| matches!(s, Scope::Command(w) if starts_with(c, w)))
            });
        allowed.then(Answer::approve)
    }
}

/// The session's `wait_for`: remembered answers first, then the editor.
pub struct EditorGate {
    peer: Arc<Peer>,
    session_id: String,
    root: PathBuf,
    auto: bool,
    remembered: Mutex<Remembered>,
    /// The call ids whose `tool_call` update went out (the request must come after it).
    shown: watch::Sender<HashSet<String>>,
}

impl EditorGate {
    /// The gate of session `session_id`, rooted at `root`; `auto` approves every ask.
    pub fn new(peer: Arc<Peer>, session_id: String, root: PathBuf, auto: bool) -> EditorGate {
        EditorGate {
            peer,
            session_id,
            root,
            auto,
            remembered: Mutex::new(Remembered::default()),
            shown: watch::channel(HashSet::new()).0,
        }
    }

    /// Note that every update up to the `pending` event of `call_id` was sent.
    pub fn shown(&self, call_id: &str) {
        self.shown.send_modify(|s| {
            s.insert(call_id.to_string());
        });
    }

    /// Forget the calls of a finished turn.
    pub fn turn_ended(&self) {
        self.shown.send_modify(HashSet::clear);
    }

    fn remember(&self, scopes: Vec<Scope>, allow: bool) {
        let mut r = self.remembered.lock();
        for s in scopes {
            if allow {
                r.allowed.insert(s);
            } else {
                r.rejected.insert(s);
            }
        }
    }

    fn options(&self, name: &str, args: &Value) -> Vec<Value> {
        let mut options =
            vec![json!({"optionId": "allow_once", "name": "Allow", "kind": "allow_once"})];
        if let Some(scopes) = scopes_for(name, args) {
            let what: Vec<String> = scopes.iter().map(Scope::describe).collect();
            options.push(json!({
                "optionId": "allow_always",
                "name": format!("Always allow {} in this session", what.join(", ")),
                "kind": "allow_always",
            }));
        }
        options.push(json!({"optionId": "reject_once", "name": "Reject", "kind": "reject_once"}));
        let what: Vec<String> = reject_scopes(name, args)
            .iter()
            .map(Scope::describe)
            .collect();
        if !what.is_empty() {
            options.push(json!({
                "optionId": "reject_always",
                "name": format!("Always reject {} in this session", what.join(", ")),
                "kind": "reject_always",
            }));
        }
        options
    }

    /// Ask the editor; `Err` when the turn was cancelled meanwhile.
    async fn ask(
        &self,
        request: &PendingRequest,
        cancel: &CancellationToken,
    ) -> Result<Answer, HostError> {
        let cancelled = || HostError::new("cancelled");
        let mut shown = self.shown.subscribe();
        tokio::select! {
            r = shown.wait_for(|s| s.contains(&request.call_id)) => {
                if r.is_err() {
                    return Err(cancelled());
                }
            }
            _ = cancel.cancelled() => return Err(cancelled()),
        }
        let mut call = tool_call(
            &self.root,
            &request.call_id,
            &request.name,
            &request.arguments,
        );
        if let Some(m) = call.as_object_mut() {
            m.remove("sessionUpdate");
        }
        let options = self.options(&request.name, &request.arguments);
        let params = json!({"sessionId": self.session_id, "toolCall": call, "options": options});
        let (id, answer) = self
            .peer
            .request("session/request_permission", params)
            .await;
        let answer = tokio::select! {
            a = answer => a,
            _ = cancel.cancelled() => {
                self.peer.forget(id);
                return Err(cancelled());
            }
            _ = self.peer.gone().cancelled() => {
                self.peer.forget(id);
                return Err(HostError::new("the editor went away"));
            }
        };
        let outcome =
            match answer {
                Ok(Ok(v)) => v,
                Ok(Err(_)) | Err(_) => return Ok(Answer::deny(
                    "The editor could not ask for approval (it answered with an error); the call \
                     was not run.",
                )),
            };
        let chosen = outcome.pointer("/outcome/outcome").and_then(Value::as_str);
        let option = outcome.pointer("/outcome/optionId").and_then(Value::as_str);
        Ok(match (chosen, option) {
            (Some("selected"), Some("allow_once")) => Answer::approve(),
            (Some("selected"), Some("allow_always")) => {
                if let Some(scopes) = scopes_for(&request.name, &request.arguments) {
                    self.remember(scopes, true);
                }
                Answer::approve()
            }
            (Some("selected"), Some("reject_always")) => {
                self.remember(reject_scopes(&request.name, &request.arguments), false);
                Answer::deny(REJECTED)
            }
            (Some("selected"), Some("reject_once")) => Answer::deny(REJECTED),
            (Some("cancelled"), _) => Answer::deny(
                "The permission request was cancelled in the editor; the call was not run.",
            ),
            _ => Answer::deny("The editor's answer named no offered option; the call was not run."),
        })
    }
}

#[async_trait]
impl WaitFor for EditorGate {
    async fn wait_for(
        &self,
        request: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        if self.auto {
            return Ok(Answer::approve());
        }
        let remembered = self
            .remembered
            .lock()
            .answer(&request.name, &request.arguments);
        if let Some(answer) = remembered {
            return Ok(answer);
        }
        self.ask(&request, &cancel).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remember(r: &mut Remembered, name: &str, args: Value, allow: bool) {
        let scopes = if allow {
            scopes_for(name, &args).unwrap()
        } else {
            reject_scopes(name, &args)
        };
        for s in scopes {
            if allow {
                r.allowed.insert(s);
            } else {
                r.rejected.insert(s);
            }
        }
    }

    fn bash(r: &Remembered, line: &str) -> Option<Answer> {
        r.answer("bash", &json!({"command": line}))
    }

    #[test]
    fn bash_prefixes_only_admit_plain_lines_of_known_commands() {
        let mut r = Remembered::default();
        remember(
            &mut r,
            "bash",
            json!({"command": "git status --short"}),
            true,
        );
        assert_eq!(bash(&r, "git status"), Some(Answer::approve()));
        assert_eq!(
            bash(&r, "git status && git status -s"),
            Some(Answer::approve())
        );
        assert_eq!(bash(&r, "git push"), None);
        assert_eq!(bash(&r, "git status; rm -rf /"), None);
        assert_eq!(bash(&r, "git status $(rm -rf /)"), None);
        assert_eq!(bash(&r, "git status > /etc/passwd"), None);
        remember(&mut r, "bash", json!({"command": "ls -la"}), true);
        assert_eq!(bash(&r, "ls /tmp | git status"), Some(Answer::approve()));
        // A compound line cannot be allowed always.
        assert!(scopes_for("bash", &json!({"command": "ls $(pwd)"})).is_none());
    }

    #[test]
    fn a_rejected_prefix_refuses_any_line_that_runs_it() {
        let mut r = Remembered::default();
        remember(&mut r, "bash", json!({"command": "rm -rf build"}), false);
        remember(&mut r, "bash", json!({"command": "ls"}), true);
        assert_eq!(bash(&r, "ls; rm x"), Some(Answer::deny(REJECTED_ALWAYS)));
        assert_eq!(bash(&r, "ls $(rm x)"), Some(Answer::deny(REJECTED_ALWAYS)));
        assert_eq!(bash(&r, "ls"), Some(Answer::approve()));
    }

    #[test]
    fn other_tools_are_remembered_by_name() {
        let mut r = Remembered::default();
        remember(&mut r, "write", json!({"path": "a"}), true);
        remember(&mut r, "edit", json!({"path": "a"}), false);
        assert_eq!(
            r.answer("write", &json!({"path": "b"})),
            Some(Answer::approve())
        );
        assert_eq!(
            r.answer("edit", &json!({})),
            Some(Answer::deny(REJECTED_ALWAYS))
        );
        assert_eq!(r.answer("multi_edit", &json!({})), None);
    }
}

#[cfg(test)]
mod gate_tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, BufReader};

    fn request(id: &str, name: &str, args: Value) -> PendingRequest {
        PendingRequest {
            kind: "approval".into(),
            call_id: id.into(),
            name: name.into(),
            arguments: args,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn asks_after_the_tool_call_is_shown_and_remembers_always() {
        let (editor_end, agent_end) = tokio::io::duplex(1 << 16);
        let peer = Peer::start(agent_end);
        let mut lines = BufReader::new(editor_end).lines();
        let dir = tempfile::tempdir().unwrap();
        let gate = Arc::new(EditorGate::new(
            peer.clone(),
            "s1".into(),
            dir.path().to_path_buf(),
            false,
        ));
        let g = gate.clone();
        let first = tokio::spawn(async move {
            g.wait_for(
                request("c1", "write", json!({"path": "a.txt", "content": "x"})),
                CancellationToken::new(),
            )
            .await
        });
        // Nothing goes out before the session's updates up to the call's `pending` were sent.
        let early = tokio::time::timeout(Duration::from_millis(200), lines.next_line()).await;
        assert!(
            early.is_err(),
            "asked before the tool call was shown: {early:?}"
        );
        gate.shown("c1");
        let line = lines.next_line().await.unwrap().unwrap();
        let asked: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(asked["method"], "session/request_permission");
        assert_eq!(asked["params"]["toolCall"]["toolCallId"], "c1");
        assert!(peer.deliver(
            &asked["id"],
            Ok(json!({"outcome": {"outcome": "selected", "optionId": "allow_always"}}))
        ));
        assert_eq!(first.await.unwrap().unwrap(), Answer::approve());
        // Remembered: the next write is approved without a request.
        let again = gate
            .wait_for(
                request("c2", "write", json!({"path": "b.txt", "content": "y"})),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(again, Answer::approve());
        // A cancelled wait stops at once, and a late answer to it is not delivered.
        let cancel = CancellationToken::new();
        let g = gate.clone();
        let c = cancel.clone();
        let third = tokio::spawn(async move {
            g.wait_for(request("c3", "edit", json!({"path": "a.txt"})), c)
                .await
        });
        gate.shown("c3");
        let line = lines.next_line().await.unwrap().unwrap();
        let asked: Value = serde_json::from_str(&line).unwrap();
        cancel.cancel();
        assert!(third.await.unwrap().is_err());
        assert!(!peer.deliver(
            &asked["id"],
            Ok(json!({"outcome": {"outcome": "cancelled"}}))
        ));
    }
}
