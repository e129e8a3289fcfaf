//! Compaction: a long conversation's older part replaced by one summary, with a notice.
//!
//! With the option `compaction` (`{threshold_tokens, keep_recent, instructions}`), before each
//! model request the engine measures the context: the server's last reported input tokens
//! (cached ones included) plus an estimate of what was appended since, and never less than an
//! estimate of the whole request. Over `threshold_tokens`, it asks the same model, without
//! tools, for a summary of the older messages and replaces them by one user message starting
//! with [`SUMMARY_HEADER`]; the system prompt and the `keep_recent` most recent messages stay
//! (more, when the cut would separate a tool call from its result). A server refusing a request
//! as over its context length gets the conversation compacted once and the request again.
//! [`crate::Client::compact`] does it on demand.
//!
//! Every compaction emits a `compact` event (`trigger`, `pre_tokens`, `post_tokens`, `summary`,
//! `usage`) and tells the host's [`Compactor::on_compact`]. A host may also replace the
//! engine's summary with its own [`Compactor::compact`] (transcript in, transcript out; an
//! invalid result is refused). When the summary request fails, or the host's compactor does,
//! the conversation stays as it was and the turn ends with outcome `error` saying why.
//!
//! ```
//! use contenox::{Client, CompactionConfig, ScriptEntry};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let client = Client::builder()
//!     .script(vec![
//!         ScriptEntry::text("It is 4."),
//!         ScriptEntry::text("The user asked what 2 + 2 is; it is 4."), // the summary
//!         ScriptEntry::text("Yes, 4."),
//!     ])
//!     .builtins(Vec::<String>::new())
//!     .compaction(CompactionConfig { keep_recent: 1, ..CompactionConfig::new(100_000) })
//!     .build()
//!     .unwrap();
//! client.run("What is 2 + 2?").await.unwrap();
//! let notice = client.compact().await.unwrap().expect("there was something to compact");
//! assert_eq!(notice.summary.as_deref(), Some("The user asked what 2 + 2 is; it is 4."));
//! let result = client.run("Sure?").await.unwrap();
//! assert_eq!(result.final_text, "Yes, 4.");
//! # });
//! ```

mod measure;
mod split;
mod summary;

pub use split::SUMMARY_HEADER;

pub(crate) use measure::{estimate_message, estimate_request, ContextMeasure};

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use parking_lot::Mutex;

use async_trait::async_trait;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::config::{CompactionConfig, RetryPolicy};
use crate::event::{CompactTrigger, Event, Usage};
use crate::hooks::Lifecycle;
use crate::lifecycle::{CompactAction, CompactRequest};
use crate::model::{complete_with_retry, Backend, ModelRequest, ModelResponse, RequestFailed};
use crate::tool::{EventSink, HostError, ToolSpec};
use crate::transcript::{Message, Transcript};

/// What one compaction did: the `compact` event's content, also given to
/// [`Compactor::on_compact`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactNotice {
    /// `auto` or `manual`.
    pub trigger: CompactTrigger,
    /// The context's size before, in tokens (measured as the next request would be).
    pub pre_tokens: u64,
    /// The context's size after, in tokens (estimated).
    pub post_tokens: u64,
    /// The summary that replaced the older messages; `None` when a host compactor did it.
    pub summary: Option<String>,
    /// What the summary request cost (zero for a host compactor); counted in the turn's usage.
    pub usage: Usage,
}

/// The host's part in compaction. Both methods have defaults: implement `on_compact` to be told
/// (a UI showing "conversation compacted"), `compact` to compact in your own way.
#[async_trait]
pub trait Compactor: Send + Sync + 'static {
    /// Replace the conversation by a shorter one. Return `None` to let the engine summarise the
    /// older part with the model (the default). The result must be a valid transcript (every
    /// tool call with its result) and not empty; otherwise, or on `Err`, the conversation stays
    /// as it was and the turn ends with `error`.
    async fn compact(
        &self,
        transcript: &Transcript,
        cancel: CancellationToken,
    ) -> Result<Option<Transcript>, HostError> {
        let _ = (transcript, cancel);
        Ok(None)
    }

    /// Told after every compaction, with what the `compact` event says. A failure here is
    /// ignored (the compaction stands).
    async fn on_compact(&self, notice: &CompactNotice) -> Result<(), HostError> {
        let _ = notice;
        Ok(())
    }
}

/// A [`Compactor`] that only hears about compactions: what [`crate::ClientBuilder::on_compact`]
/// installs.
pub struct OnCompact<F>(pub F);

#[async_trait]
impl<F> Compactor for OnCompact<F>
where
    F: Fn(&CompactNotice) + Send + Sync + 'static,
{
    async fn on_compact(&self, notice: &CompactNotice) -> Result<(), HostError> {
        (self.0)(notice);
        Ok(())
    }
}

/// Why a compaction did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CompactFailed {
    /// The turn (or the client) was cancelled meanwhile.
    Cancelled,
    /// The summary request or the host's compactor failed; the message says why.
    Failed(String),
}

/// Everything one compaction reads and writes, borrowed from the client and the turn (so this
/// module needs nothing of either).
pub(crate) struct Compaction<'a> {
    pub backend: &'a dyn Backend,
    /// The client's model settings (a summary request offers no tools, so no tool choice
    /// reaches it).
    pub model_settings: &'a crate::settings::ModelSettings,
    pub retry: &'a RetryPolicy,
    /// `keep_recent` and `instructions` (the defaults when the option is not set).
    pub settings: &'a CompactionConfig,
    pub compactor: Option<&'a Arc<dyn Compactor>>,
    pub conversation: &'a Mutex<Transcript>,
    pub context: &'a Mutex<ContextMeasure>,
    /// The system prompt and tools of the next request (for the measure after).
    pub system: Option<&'a str>,
    pub tools: &'a [Arc<ToolSpec>],
    pub sink: &'a EventSink,
    pub cancel: &'a CancellationToken,
    /// The client's lifecycle hooks (`before_compact`).
    pub lifecycle: &'a Lifecycle,
    /// In a turn stepped by its host, where the summary request goes instead of straight to
    /// the model (it is an action there: `crate::step`'s `summary_request`).
    pub route: Option<&'a dyn SummaryRoute>,
}

/// A summary request's way out other than the model: what a stepped turn's seam implements
/// (defined here so that compaction needs nothing of the engine above it).
pub(crate) trait SummaryRoute: Send + Sync {
    /// Hand the summary request `body` out; `perform` sends it to the model when the host asks
    /// the engine to.
    fn summary<'a>(
        &'a self,
        body: &'a [u8],
        perform: BoxFuture<'a, Result<ModelResponse, RequestFailed>>,
    ) -> BoxFuture<'a, Result<ModelResponse, RequestFailed>>;
}

impl Compaction<'_> {
    /// The size of the next request as it stands.
    pub fn measure(&self) -> u64 {
        let conv = self.conversation.lock();
        self.context
            .lock()
            .measure(self.system, &conv.messages, self.tools)
    }

    /// Compact now. `Ok(None)` when there is nothing older to summarise. On `Err` the
    /// conversation is unchanged.
    pub async fn run(
        &self,
        trigger: CompactTrigger,
        pre_tokens: u64,
    ) -> Result<Option<CompactNotice>, CompactFailed> {
        let request = CompactRequest {
            trigger,
            pre_tokens,
            instructions: self.settings.instructions.clone(),
        };
        let instructions = match self.lifecycle.before_compact(&request, self.cancel).await {
            CompactAction::Proceed => request.instructions,
            CompactAction::Instructions(i) => Some(i),
            CompactAction::Veto(why) => {
                tracing::info!(target: "contenox::hooks", "compaction vetoed by a hook: {why}");
                return Ok(None);
            }
        };
        // Its span (telemetry on) starts here; the `compact` event ends it.
        if let Some(trace) = self.sink.trace() {
            trace.compaction_starts();
        }
        let current = self.conversation.lock().clone();
        let (messages, summary, usage) = match self.host_compaction(&current).await? {
            Some(t) => (t.messages, None, Usage::default()),
            None => {
                let at = split::split_point(&current.messages, self.settings.keep_recent);
                let (older, kept) = current.messages.split_at(at);
                if !split::worth_compacting(older) {
                    return Ok(None);
                }
                let (summary, usage) = self.summarise(older, instructions.as_deref()).await?;
                let mut messages = Vec::with_capacity(kept.len() + 1);
                messages.push(split::summary_message(&summary));
                messages.extend_from_slice(kept);
                (messages, Some(summary), usage)
            }
        };
        let post_tokens = estimate_request(self.system, &messages, self.tools);
        self.conversation.lock().messages = messages;
        self.context.lock().reset();
        let notice = CompactNotice {
            trigger,
            pre_tokens,
            post_tokens,
            summary,
            usage,
        };
        self.sink.emit(Event::Compact {
            trigger,
            pre_tokens,
            post_tokens,
            summary: notice.summary.clone(),
            usage,
            agent: Vec::new(),
        });
        if let Some(c) = self.compactor {
            let told = AssertUnwindSafe(c.on_compact(&notice)).catch_unwind();
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {}
                r = told => {
                    if !matches!(r, Ok(Ok(()))) {
                        tracing::warn!("on_compact failed; the compaction stands");
                    }
                }
            }
        }
        Ok(Some(notice))
    }

    /// The host compactor's transcript, when it gives one (checked).
    async fn host_compaction(
        &self,
        current: &Transcript,
    ) -> Result<Option<Transcript>, CompactFailed> {
        let Some(c) = self.compactor else {
            return Ok(None);
        };
        let token = self.cancel.child_token();
        let asked = AssertUnwindSafe(c.compact(current, token.clone())).catch_unwind();
        let answer = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(CompactFailed::Cancelled),
            a = asked => a,
        };
        token.cancel();
        let transcript = match answer {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                return Err(CompactFailed::Failed(format!(
                    "compaction failed: the compactor failed: {e}"
                )))
            }
            Err(_) => {
                return Err(CompactFailed::Failed(
                    "compaction failed: the compactor panicked".into(),
                ))
            }
        };
        let Some(t) = transcript else {
            return Ok(None);
        };
        if t.messages.is_empty() && !current.messages.is_empty() {
            return Err(CompactFailed::Failed(
                "compaction failed: the compactor returned an empty transcript".into(),
            ));
        }
        t.validate().map_err(|e| {
            CompactFailed::Failed(format!(
                "compaction failed: the compactor returned an invalid transcript ({e})"
            ))
        })?;
        Ok(Some(t))
    }

    /// Ask the model for a summary of `older`.
    async fn summarise(
        &self,
        older: &[Message],
        instructions: Option<&str>,
    ) -> Result<(String, Usage), CompactFailed> {
        let system = summary::system_prompt(instructions);
        let messages = [Message::user(summary::request_text(older))];
        let body = self.backend.body(&ModelRequest {
            system: Some(&system),
            // The client's model: a chain task's own model is for its answers only.
            model: None,
            messages: &messages,
            tools: &[],
            settings: self.model_settings,
            images: None,
            output: None,
        });
        // The summary's own text and requests are not the turn's: only the compact event
        // reports it.
        let quiet = EventSink::discard();
        let request = complete_with_retry(self.backend, &body, self.retry, &quiet, 0, None);
        let request = async {
            match self.route {
                Some(route) => route.summary(&body, Box::pin(request)).await,
                None => request.await,
            }
        };
        let response = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(CompactFailed::Cancelled),
            r = request => r,
        };
        let response = response.map_err(|f| {
            CompactFailed::Failed(format!(
                "compaction failed: the summary request failed: {}",
                f.message
            ))
        })?;
        let summary = response.text.trim().to_string();
        if summary.is_empty() {
            return Err(CompactFailed::Failed(
                "compaction failed: the model returned an empty summary".into(),
            ));
        }
        Ok((summary, response.usage))
    }
}
