//! `bash`: run one shell command in the root directory, in its own process group.
//!
//! The combined stdout and stderr is the result (cut in the middle past 30000 characters, with
//! metadata); the exit code is in the metadata. A timeout (default 120 s, at most 600 s) or a
//! cancelled turn kills the whole process group, and so does the command's end: nothing it
//! started in the background outlives it (use `run_in_background` for that, when the client has
//! background shells). The command runs in the client's sandbox (`crate::sandbox`): an
//! allowlisted environment that never holds the variables the host marks secret or the model API
//! keys, its own session, and where the kernel offers them Landlock and seccomp.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::process::{exit_metadata, pump, spawn, Capture};
use super::shells::BackgroundShells;
use super::{opt_bool, opt_u64, str_arg};
use crate::sandbox::Sandbox;
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The timeout when none is given.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The longest timeout a call may ask for.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// How long output is still read after the command ended (for pipes held by stray processes).
const DRAIN: Duration = Duration::from_millis(500);

pub(crate) struct Bash {
    shells: Option<BackgroundShells>,
    sandbox: Arc<Sandbox>,
}

impl Bash {
    pub fn new(shells: Option<BackgroundShells>, sandbox: Arc<Sandbox>) -> Self {
        Bash { shells, sandbox }
    }

    /// The key of this variant's shared spec: background shells or not, and what the sandbox
    /// description says.
    pub fn spec_key(&self) -> String {
        format!(
            "bash{}{}",
            if self.shells.is_some() {
                "+background"
            } else {
                ""
            },
            self.sandbox.description()
        )
    }
}

#[async_trait]
impl Tool for Bash {
    fn spec(&self) -> ToolSpec {
        let mut description = String::from(
            "Run a shell command (bash) in the working directory and return its combined \
             stdout and stderr; the exit code is in the metadata. Each call runs in a fresh \
             shell: `cd` and variables do not carry over. Times out after `timeout_ms` \
             (default 120000, at most 600000); the command and everything it started are then \
             killed, as they are when the command ends. Output longer than 30000 characters is \
             cut in the middle (the metadata says how much). Stdin is closed: commands must not \
             wait for input. Prefer the `read`, `grep`, `glob`, `edit` tools over cat, grep, \
             find and sed.",
        );
        description.push_str(&self.sandbox.description());
        let mut properties = json!({
            "command": {"type": "string", "description": "The command to run."},
            "timeout_ms": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS, "description": "Timeout in milliseconds (default 120000, at most 600000)."},
            "description": {"type": "string", "description": "What the command does, in a few words."}
        });
        if self.shells.is_some() {
            description.push_str(
                " With `run_in_background`, the command keeps running after the call returns \
                 (for servers and long builds): the result is a shell id; read its new output \
                 with `bash_output` and stop it with `kill_shell`.",
            );
            properties["run_in_background"] = json!({
                "type": "boolean",
                "description": "Run in the background and return a shell id at once (default false)."
            });
        }
        // A shell command may do anything: mutating and destructive, and open-world unless
        // the sandbox has cut the network (the design sets hints on every builtin, so a gate
        // written from it treats bash as what it is).
        ToolSpec::new(
            "bash",
            description,
            json!({
                "type": "object",
                "properties": properties,
                "required": ["command"],
                "additionalProperties": false
            }),
        )
        .with_hints(Hints {
            read_only: Some(false),
            destructive: Some(true),
            open_world: Some(self.sandbox.has_network()),
        })
    }

    fn source(&self) -> Source {
        Source::Builtin
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let command = str_arg(&args, "command")?;
        if command.trim().is_empty() {
            return Err("command is empty".into());
        }
        let timeout_ms = opt_u64(&args, "timeout_ms")?.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout_ms == 0 || timeout_ms > MAX_TIMEOUT_MS {
            return Err(format!(
                "timeout_ms must be between 1 and {MAX_TIMEOUT_MS} (got {timeout_ms})"
            )
            .into());
        }
        if opt_bool(&args, "run_in_background") {
            let Some(shells) = &self.shells else {
                return Err(
                    "run_in_background needs background shells, which this client does not have"
                        .into(),
                );
            };
            let id = shells
                .start(
                    command,
                    ctx.root(),
                    &self.sandbox,
                    &ctx.secret_env,
                    ctx.cancel.clone(),
                )
                .map_err(|e| format!("cannot start the command: {e}"))?;
            return Ok(ToolOutput::text(format!(
                "Started in the background as shell {id}. Read its output with bash_output \
                 (shell_id {id:?}); stop it with kill_shell."
            ))
            .with_metadata(json!({"shellId": id})));
        }
        run_foreground(command, timeout_ms, &self.sandbox, &ctx).await
    }
}

/// Run a command to its end, its timeout, or the turn's cancel.
pub(crate) async fn run_foreground(
    command: &str,
    timeout_ms: u64,
    sandbox: &Sandbox,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let spawned = spawn(command, ctx.root(), sandbox, &ctx.secret_env)
        .map_err(|e| format!("cannot start the command: {e}"))?;
    let mut child = spawned.child;
    let guard = spawned.guard;
    let capture = Arc::new(Mutex::new(Capture::default()));
    let pumping = pump(spawned.output, capture.clone());
    tokio::pin!(pumping);
    let mut pumped = false;
    let sleep = tokio::time::sleep(Duration::from_millis(timeout_ms));
    tokio::pin!(sleep);
    enum End {
        Exited(std::io::Result<std::process::ExitStatus>),
        TimedOut,
        Cancelled,
    }
    let end = loop {
        tokio::select! {
            status = child.wait() => break End::Exited(status),
            _ = &mut pumping, if !pumped => pumped = true,
            _ = &mut sleep => break End::TimedOut,
            _ = ctx.cancel.cancelled() => break End::Cancelled,
        }
    };
    // Whatever happened, nothing of the group survives the call.
    guard.kill();
    let (status, timed_out) = match end {
        End::Exited(status) => (status, false),
        End::TimedOut => (child.wait().await, true),
        End::Cancelled => {
            let _ = child.wait().await;
            return Err("cancelled".into());
        }
    };
    let status = status.map_err(|e| format!("waiting for the command: {e}"))?;
    if !pumped {
        let _ = tokio::time::timeout(DRAIN, &mut pumping).await;
    }
    let captured = std::mem::take(&mut *capture.lock());
    let (text, cut) = captured.finish();
    let mut meta = exit_metadata(&status);
    if let Some(Value::Object(cut)) = cut {
        for (k, v) in cut {
            meta[k] = v;
        }
    }
    if timed_out {
        meta["timedOut"] = json!(true);
        meta["timeoutMs"] = json!(timeout_ms);
        return Ok(ToolOutput {
            content: Value::String(text),
            is_error: true,
            metadata: Some(meta),
            images: Vec::new(),
        });
    }
    Ok(ToolOutput::text(text).with_metadata(meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(root: &std::path::Path) -> ToolContext {
        ToolContext::detached(root, "bash")
    }

    async fn bash(root: &std::path::Path, args: Value) -> Result<ToolOutput, ToolError> {
        Bash::new(None, Arc::default()).call(args, ctx(root)).await
    }

    #[test]
    fn hints_say_destructive_and_open_world_unless_the_network_is_cut() {
        let open = Bash::new(None, Arc::default()).spec();
        assert_eq!(
            open.hints,
            Hints {
                read_only: Some(false),
                destructive: Some(true),
                open_world: Some(true),
            }
        );
        let config = crate::sandbox::SandboxConfig {
            network: false,
            ..Default::default()
        };
        let sandbox = Sandbox::new(config.clone(), Vec::new());
        let closed = Bash::new(None, Arc::new(sandbox)).spec();
        // Open-world stays true where this kernel cannot cut the network (no seccomp).
        let cut = !crate::sandbox::status_for(&config).network;
        assert_eq!(closed.hints.open_world, Some(!cut));
        assert_eq!(closed.hints.destructive, Some(true));
    }

    #[tokio::test]
    async fn output_exit_code_and_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let out = bash(&root, json!({"command": "pwd; echo err >&2; exit 3"}))
            .await
            .unwrap();
        assert_eq!(out.content_text(), format!("{}\nerr\n", root.display()));
        assert_eq!(out.metadata.unwrap()["exitCode"], 3);
        assert!(!out.is_error);
        let out = bash(&root, json!({"command": "true"})).await.unwrap();
        assert_eq!(out.content_text(), "");
        assert_eq!(out.metadata.unwrap()["exitCode"], 0);
    }

    #[tokio::test]
    async fn long_output_is_cut_in_the_middle() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(dir.path(), json!({"command": "seq 1 20000"}))
            .await
            .unwrap();
        let text = out.content_text();
        assert!(text.starts_with("1\n2\n3\n"));
        assert!(text.ends_with("19999\n20000\n"));
        assert_eq!(text.chars().count(), 30_000);
        let meta = out.metadata.unwrap();
        assert_eq!(meta["truncated"], true);
        assert_eq!(meta["exitCode"], 0);
        let total: usize = (1..=20000).map(|n: u32| n.to_string().len() + 1).sum();
        assert_eq!(meta["total"], total);
    }

    #[tokio::test]
    async fn timeout_is_an_error_with_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let start = std::time::Instant::now();
        let out = bash(
            dir.path(),
            json!({"command": "echo before; sleep 30", "timeout_ms": 300}),
        )
        .await
        .unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(out.is_error);
        assert_eq!(out.content_text(), "before\n");
        let meta = out.metadata.unwrap();
        assert_eq!(meta["timedOut"], true);
        assert_eq!(meta["signal"], 9);
    }

    #[tokio::test]
    async fn the_environment_is_an_allowlist() {
        let dir = tempfile::tempdir().unwrap();
        // Set in this process only for the child to inherit; the names are unique to this test.
        std::env::set_var("CONTENOX_TEST_SECRET_XYZ", "s3cret");
        std::env::set_var("CONTENOX_TEST_PLAIN_XYZ", "plain");
        std::env::set_var("CONTENOX_TEST_PASSED_XYZ", "passed");
        let mut c = ctx(dir.path());
        c.secret_env = Arc::new(vec!["CONTENOX_TEST_SECRET_XYZ".into()]);
        let sandbox = Sandbox::new(
            Default::default(),
            vec![
                "CONTENOX_TEST_PASSED_XYZ".into(),
                "CONTENOX_TEST_SECRET_XYZ".into(),
                "CONTENOX_SET=set here".into(),
            ],
        );
        let out = Bash::new(None, Arc::new(sandbox))
            .call(
                json!({"command": "echo \"[$CONTENOX_TEST_SECRET_XYZ][$CONTENOX_TEST_PLAIN_XYZ][$CONTENOX_TEST_PASSED_XYZ][$CONTENOX_SET][${PATH:+path}]\""}),
                c,
            )
            .await
            .unwrap();
        assert_eq!(out.content_text(), "[][][passed][set here][path]\n");
    }

    #[tokio::test]
    async fn bad_arguments() {
        let dir = tempfile::tempdir().unwrap();
        assert!(bash(dir.path(), json!({})).await.is_err());
        assert!(bash(dir.path(), json!({"command": "  "})).await.is_err());
        assert!(
            bash(dir.path(), json!({"command": "true", "timeout_ms": 600001}))
                .await
                .is_err()
        );
        let err = bash(
            dir.path(),
            json!({"command": "true", "run_in_background": true}),
        )
        .await
        .unwrap_err();
        assert!(err.message.contains("background"), "{}", err.message);
    }
}
