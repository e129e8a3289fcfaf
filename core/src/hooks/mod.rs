//! Lifecycle hooks: the host's (the lifecycle methods of [`crate::Hooks`]) and a hooks file's
//! (config `hooks_file`, the shape Claude Code, codex and goose share: [`HooksFile`]), called at each
//! point of a turn. The file's command hooks run first, then the host's; a block by either wins.
//! Every point has a fallback when a hook fails (raises, panics, times out, answers what cannot
//! be read): it is logged and the point goes on as if the hook had said nothing, as Claude Code
//! treats a non-blocking error. `docs/hooks.md` has the table.

mod command;
mod file;
mod reply;

pub use command::MAX_HOOK_OUTPUT_BYTES;
pub use file::{
    claude_tool_name, CommandHook, HookEvent, HooksFile, DEFAULT_HOOK_TIMEOUT,
    MAX_HOOKS_FILE_BYTES, MAX_HOOK_TIMEOUT_S,
};

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use crate::event::CompactTrigger;
use crate::gate::{Decision, Hooks, PendingRequest, ToolCallEvent};
use crate::lifecycle::{
    CompactAction, CompactRequest, Notification, PromptAction, StopAction, TurnEndInfo,
};
use crate::sandbox::Sandbox;
use crate::tool_output::{HostError, ToolOutput};
use crate::tool_spec::Source;
use reply::Reply;

/// How long a host's lifecycle hook may take when the builder sets nothing.
pub const DEFAULT_LIFECYCLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A hooks file made ready to run: its commands run in `root`, in a sandbox like bash's.
pub(crate) struct FileHooks {
    file: HooksFile,
    root: Arc<PathBuf>,
    sandbox: Sandbox,
    secret_env: Arc<Vec<String>>,
    /// The `session_id` every hook of this client sees.
    session_id: String,
    /// SessionStart fired (at the client's first turn).
    started: AtomicBool,
}

/// The prompt as the hooks left it.
#[derive(Debug, Default)]
pub(crate) struct PromptVerdict {
    /// Refused, with the reason.
    pub refused: Option<String>,
    /// The text replacing the prompt's (host hook only).
    pub replace: Option<String>,
    /// Texts added after the prompt.
    pub context: Vec<String>,
}

impl FileHooks {
    pub fn new(
        file: HooksFile,
        root: Arc<PathBuf>,
        sandbox: Sandbox,
        secret_env: Arc<Vec<String>>,
    ) -> Self {
        FileHooks {
            file,
            root,
            sandbox,
            secret_env,
            session_id: format!("contenox-{:016x}", rand::random::<u64>()),
            started: AtomicBool::new(false),
        }
    }

    /// The fields every event's input has, then `fields`.
    fn input(&self, event: HookEvent, fields: Value) -> Vec<u8> {
        let mut m = Map::new();
        m.insert("session_id".into(), json!(self.session_id));
        m.insert("transcript_path".into(), Value::Null);
        m.insert("cwd".into(), json!(self.root.display().to_string()));
        m.insert("permission_mode".into(), json!("default"));
        m.insert("hook_event_name".into(), json!(event.name()));
        if let Value::Object(f) = fields {
            m.extend(f);
        }
        // Cannot fail: a map of strings and JSON values always serializes.
        serde_json::to_vec(&Value::Object(m)).expect("JSON object")
    }

    /// Run every hook of `event` matching `subjects` side by side; their replies in file order.
    /// Failures are logged here (the non-blocking errors).
    async fn fire(
        &self,
        event: HookEvent,
        subjects: &[&str],
        fields: Value,
        cancel: &CancellationToken,
    ) -> Vec<Reply> {
        let hooks = self.file.commands(event, subjects);
        if hooks.is_empty() {
            return Vec::new();
        }
        let input = self.input(event, fields);
        let runs = hooks.iter().map(|h| async {
            let ran = command::run(
                &h.command,
                &input,
                &self.root,
                &self.sandbox,
                &self.secret_env,
                h.timeout,
                cancel,
            )
            .await;
            reply::read(event, &h.command, &ran)
        });
        let replies = futures::future::join_all(runs).await;
        for r in &replies {
            if let Some(e) = &r.error {
                tracing::warn!(target: "contenox::hooks", "{} hook failed, going on: {e}", event.name());
            }
        }
        replies
    }

    /// The subjects a tool call's matcher is tried against, and its `tool_name`.
    fn tool_names(call: &ToolCallEvent) -> (Vec<String>, String) {
        let mut names = vec![call.name.clone()];
        let claude = match (call.source, &call.server) {
            (Source::Builtin, _) => claude_tool_name(&call.name).map(str::to_string),
            (Source::Mcp, Some(server)) => Some(format!("mcp__{server}__{}", call.name)),
            _ => None,
        };
        let shown = claude.clone().unwrap_or_else(|| call.name.clone());
        names.extend(claude);
        (names, shown)
    }

    /// The call's arguments, with Claude Code's `file_path` (absolute) beside `path` for the file
    /// builtins, so scripts reading `.tool_input.file_path` work.
    fn tool_input(&self, call: &ToolCallEvent) -> Value {
        let mut input = call.arguments.clone();
        if call.source == Source::Builtin
            && matches!(
                call.name.as_str(),
                "read" | "write" | "edit" | "multi_edit" | "notebook_edit"
            )
        {
            if let Some(p) = input.get("path").and_then(Value::as_str) {
                let abs = self.root.join(p).display().to_string();
                input["file_path"] = json!(abs);
            }
        }
        input
    }

    async fn pre_tool(&self, call: &ToolCallEvent, cancel: &CancellationToken) -> Option<Decision> {
        if !self.file.has(HookEvent::PreToolUse) {
            return None;
        }
        let (names, shown) = Self::tool_names(call);
        let subjects: Vec<&str> = names.iter().map(String::as_str).collect();
        let fields = json!({
            "tool_name": shown,
            "tool_input": self.tool_input(call),
            "tool_use_id": call.call_id,
        });
        let replies = self
            .fire(HookEvent::PreToolUse, &subjects, fields, cancel)
            .await;
        if let Some(why) = replies
            .iter()
            .find_map(|r| r.block.clone().or_else(|| r.halt.clone()))
        {
            return Some(Decision::deny(why));
        }
        if replies.iter().any(|r| r.updated_input) {
            // Running the call unchanged would skip what the hook meant to fix.
            return Some(Decision::deny(
                "a PreToolUse hook answered with updatedInput, which contenox does not apply; \
                 the call was not run",
            ));
        }
        if let Some(why) = replies.iter().find_map(|r| r.ask.clone()) {
            return Some(Decision::Ask(PendingRequest::new("approval", why)));
        }
        None
    }

    /// PostToolUse (or PostToolUseFailure for an error result): text the hooks have for the
    /// model, added to the result.
    async fn post_tool(
        &self,
        call: &ToolCallEvent,
        output: &ToolOutput,
        cancel: &CancellationToken,
    ) -> Option<ToolOutput> {
        let event = if output.is_error {
            HookEvent::PostToolUseFailure
        } else {
            HookEvent::PostToolUse
        };
        if !self.file.has(event) {
            return None;
        }
        let (names, shown) = Self::tool_names(call);
        let subjects: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut fields = json!({
            "tool_name": shown,
            "tool_input": self.tool_input(call),
            "tool_use_id": call.call_id,
        });
        if output.is_error {
            fields["error"] = json!(output.content_text());
        } else {
            fields["tool_response"] = output.content.clone();
        }
        let replies = self.fire(event, &subjects, fields, cancel).await;
        let notes: Vec<String> = replies
            .into_iter()
            .flat_map(|r| [r.block, r.halt, r.context])
            .flatten()
            .collect();
        if notes.is_empty() {
            return None;
        }
        let mut out = output.clone();
        let mut text = out.content_text();
        for n in notes {
            text.push_str(&format!("\n\n[{} hook] {n}", event.name()));
        }
        out.content = Value::String(text);
        Some(out)
    }

    async fn prompt(&self, prompt: &str, cancel: &CancellationToken) -> PromptVerdict {
        let mut verdict = PromptVerdict::default();
        if !self.started.swap(true, Ordering::Relaxed) {
            let replies = self
                .fire(
                    HookEvent::SessionStart,
                    &["startup"],
                    json!({"source": "startup"}),
                    cancel,
                )
                .await;
            verdict
                .context
                .extend(replies.into_iter().filter_map(|r| r.context));
        }
        let replies = self
            .fire(
                HookEvent::UserPromptSubmit,
                &[],
                json!({"prompt": prompt}),
                cancel,
            )
            .await;
        for r in replies {
            verdict.refused = verdict.refused.or(r.block).or(r.halt);
            verdict.context.extend(r.context);
        }
        verdict
    }

    async fn stop(
        &self,
        final_text: &str,
        active: bool,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let fields = json!({"stop_hook_active": active, "last_assistant_message": final_text});
        let replies = self.fire(HookEvent::Stop, &[], fields, cancel).await;
        // `continue: false` from any of them: the turn ends, whatever the others asked.
        if replies.iter().any(|r| r.halt.is_some()) {
            return None;
        }
        replies.into_iter().find_map(|r| r.block)
    }

    async fn pre_compact(
        &self,
        request: &CompactRequest,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let trigger = match request.trigger {
            CompactTrigger::Auto => "auto",
            CompactTrigger::Manual => "manual",
        };
        let fields = json!({"trigger": trigger, "custom_instructions": request.instructions.clone().unwrap_or_default()});
        let replies = self
            .fire(HookEvent::PreCompact, &[trigger], fields, cancel)
            .await;
        replies.into_iter().find_map(|r| r.block.or(r.halt))
    }

    async fn notification(&self, n: &Notification, cancel: &CancellationToken) {
        let kind = n.kind.as_str();
        let fields = json!({"message": n.message, "notification_type": kind});
        self.fire(HookEvent::Notification, &[kind], fields, cancel)
            .await;
    }

    /// SessionEnd, when the client is closed (bounded by the hooks' own timeouts).
    pub async fn session_end(&self) {
        if self.file.has(HookEvent::SessionEnd) {
            let never = CancellationToken::new();
            self.fire(
                HookEvent::SessionEnd,
                &["other"],
                json!({"reason": "other"}),
                &never,
            )
            .await;
        }
    }
}

/// Every lifecycle hook of one client: its hooks file's, then the host's.
pub(crate) struct Lifecycle {
    pub file: Option<Arc<FileHooks>>,
    pub host: Option<Arc<dyn Hooks>>,
    /// How long a host lifecycle hook may take.
    pub timeout: Duration,
}

impl Lifecycle {
    /// Call a host hook: its answer, or `None` when it failed (logged: the point's fallback) or
    /// the turn was cancelled.
    async fn host<'a, T, F>(
        &'a self,
        point: &str,
        cancel: &CancellationToken,
        call: impl FnOnce(&'a dyn Hooks) -> F,
    ) -> Option<T>
    where
        F: Future<Output = Result<T, HostError>> + Send + 'a,
    {
        let hooks = self.host.as_deref()?;
        let hook = AssertUnwindSafe(call(hooks)).catch_unwind();
        let why = tokio::select! {
            biased;
            _ = cancel.cancelled() => return None,
            r = tokio::time::timeout(self.timeout, hook) => match r {
                Ok(Ok(Ok(v))) => return Some(v),
                Ok(Ok(Err(e))) => format!("failed: {e}"),
                Ok(Err(_)) => "panicked".to_string(),
                Err(_) => format!("gave no answer within {} ms", self.timeout.as_millis()),
            },
        };
        tracing::warn!(target: "contenox::hooks", "{point} {why}; going on without it");
        None
    }

    /// `before_tool`'s point for the hooks file: its decision, or `None` (no opinion; the
    /// host's `before_tool` decides).
    pub async fn file_pre_tool(
        &self,
        call: &ToolCallEvent,
        cancel: &CancellationToken,
    ) -> Option<Decision> {
        self.file.as_ref()?.pre_tool(call, cancel).await
    }

    /// After a call ran (and `after_tool`): the hooks file's notes, then `on_tool_error` for an
    /// error result. `Some` replaces the result.
    pub async fn after_tool(
        &self,
        call: &ToolCallEvent,
        output: &ToolOutput,
        cancel: &CancellationToken,
    ) -> Option<ToolOutput> {
        let changed = match &self.file {
            Some(f) => f.post_tool(call, output, cancel).await,
            None => None,
        };
        if output.is_error {
            let seen = changed.as_ref().unwrap_or(output);
            self.host("on_tool_error", cancel, |h| h.on_tool_error(call, seen))
                .await;
        }
        changed
    }

    pub async fn turn_start(&self, prompt: &str, cancel: &CancellationToken) {
        self.host("on_turn_start", cancel, |h| h.on_turn_start(prompt))
            .await;
    }

    pub async fn turn_end(&self, end: &TurnEndInfo, cancel: &CancellationToken) {
        self.host("on_turn_end", cancel, |h| h.on_turn_end(end))
            .await;
    }

    pub async fn prompt(&self, prompt: &str, cancel: &CancellationToken) -> PromptVerdict {
        let mut verdict = match &self.file {
            Some(f) => f.prompt(prompt, cancel).await,
            None => PromptVerdict::default(),
        };
        if verdict.refused.is_some() {
            return verdict;
        }
        match self
            .host("on_prompt", cancel, |h| h.on_prompt(prompt))
            .await
        {
            Some(PromptAction::Refuse(why)) => verdict.refused = Some(why),
            Some(PromptAction::Replace(text)) => verdict.replace = Some(text),
            Some(PromptAction::AddContext(text)) => verdict.context.push(text),
            Some(PromptAction::Continue) | None => {}
        }
        verdict
    }

    /// The message sending the model back to work, if a hook has one.
    pub async fn stop(
        &self,
        final_text: &str,
        active: bool,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if let Some(f) = &self.file {
            if let Some(why) = f.stop(final_text, active, cancel).await {
                return Some(why);
            }
        }
        match self
            .host("on_stop", cancel, |h| h.on_stop(final_text))
            .await
        {
            Some(StopAction::Continue(message)) => Some(message),
            _ => None,
        }
    }

    pub async fn before_compact(
        &self,
        request: &CompactRequest,
        cancel: &CancellationToken,
    ) -> CompactAction {
        if let Some(f) = &self.file {
            if let Some(why) = f.pre_compact(request, cancel).await {
                return CompactAction::Veto(why);
            }
        }
        self.host("before_compact", cancel, |h| h.before_compact(request))
            .await
            .unwrap_or(CompactAction::Proceed)
    }

    pub async fn notify(&self, n: &Notification, cancel: &CancellationToken) {
        if let Some(f) = &self.file {
            f.notification(n, cancel).await;
        }
        self.host("on_notification", cancel, |h| h.on_notification(n))
            .await;
    }
}
