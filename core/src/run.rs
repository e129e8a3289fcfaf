//! A running turn as the host holds it: [`Run`] (its events, its cancel, its result), and the
//! [`RunOptions`] a turn starts with.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::{FutureExt, Stream};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::event::{Event, TurnResult};
use crate::settings::ModelSettings;
use crate::tool::Allowlist;

/// Options of one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// An allowlist for this run only, intersected with the client's: it can only narrow.
    pub allow: Option<Allowlist>,
    /// An outside token that cancels the run.
    pub cancel: Option<CancellationToken>,
    /// Model responses for this run instead of the client's `max_turns` (a policy's
    /// `compute.maxTurns` still lowers it).
    pub max_turns: Option<u32>,
    /// Model settings for this run: each one given replaces the client's for this run only
    /// (checked against the client's style when the run starts).
    pub settings: Option<ModelSettings>,
    /// A JSON Schema this run's final answer must match, instead of the client's
    /// `output_schema` (checked when the run starts; see [`crate::OutputSchema`]).
    pub output_schema: Option<serde_json::Value>,
    /// Corrections of an answer that does not match, instead of the client's
    /// `output_retries`.
    pub output_retries: Option<u32>,
    /// The host's current span as a W3C `traceparent` (`00-TRACE-SPAN-FLAGS`): with telemetry
    /// on, the turn's span is its child. One that does not parse starts a new trace.
    pub traceparent: Option<String>,
}

impl RunOptions {
    /// Narrow this run to the tools `patterns` allow (allowlist grammar).
    pub fn allow<S: AsRef<str>>(mut self, patterns: &[S]) -> Result<Self> {
        self.allow = Some(Allowlist::new(patterns)?);
        Ok(self)
    }

    /// Cancel the run when `token` is cancelled.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// At most `n` model responses in this run.
    pub fn max_turns(mut self, n: u32) -> Self {
        self.max_turns = Some(n);
        self
    }

    /// Model settings for this run (each one given replaces the client's).
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// A JSON Schema this run's final answer must match (replaces the client's).
    pub fn output_schema(mut self, schema: serde_json::Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// How many times an answer that does not match is sent back (replaces the client's).
    pub fn output_retries(mut self, n: u32) -> Self {
        self.output_retries = Some(n);
        self
    }
}

/// A running turn: its events, its cancel, its result. Dropping it before the turn ended cancels
/// the turn.
///
/// Rust code reads events one at a time ([`Run::next_event`], or as a [`Stream`]). Bindings and
/// other shared holders use the `&self` methods: [`Run::next_batch`] / [`Run::try_batch`] hand
/// out every event that is ready in one call (one boundary crossing for many events), and
/// [`Run::result`] may be awaited by any number of parties, any number of times, while events
/// are still being read. `Run` is `Send + Sync`, so a binding keeps it in an `Arc`.
///
/// # Examples
///
/// Read the events of a turn as they come, then its result:
///
/// ```
/// use contenox::{Client, Event, Outcome, ScriptEntry};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let client = Client::builder()
///     .script(vec![ScriptEntry::text("Hello!")])
///     .build()
///     .unwrap();
/// let mut run = client.stream("Say hello").unwrap();
/// let mut kinds = Vec::new();
/// while let Some(event) = run.next_event().await {
///     if let Event::TextDelta { text, .. } = &event {
///         print!("{text}");
///     }
///     kinds.push(event.kind());
/// }
/// assert_eq!(kinds.first(), Some(&"turn_start"));
/// assert_eq!(kinds.last(), Some(&"turn_end"));
/// let result = run.result().await.unwrap();
/// assert_eq!(result.outcome, Outcome::Done);
/// assert_eq!(result.final_text, "Hello!");
/// # });
/// ```
///
/// Cancel it (the result says so; the transcript stays valid):
///
/// ```
/// use contenox::{Client, Outcome, ScriptEntry};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let client = Client::builder()
///     .script(vec![ScriptEntry { stall: true, ..Default::default() }])
///     .build()
///     .unwrap();
/// let run = client.stream("Wait forever").unwrap();
/// run.cancel();
/// assert_eq!(run.result().await.unwrap().outcome, Outcome::Cancelled);
/// # });
/// ```
pub struct Run {
    events: tokio::sync::Mutex<UnboundedReceiver<Event>>,
    /// Set once `turn_end` was handed out (or the stream closed): the stream ends there even if
    /// a tool kept a clone of the turn's event sink alive.
    ended: AtomicBool,
    cancel: CancellationToken,
    finished: watch::Receiver<Option<Finished>>,
}

/// How the turn's task ended: its result, or why there is none (a panic).
type Finished = std::result::Result<Arc<TurnResult>, Arc<str>>;

impl Run {
    /// Spawn `turn` on the current tokio runtime; `events` is the receiving end of its sink.
    pub(crate) fn spawn<F>(
        turn: F,
        events: UnboundedReceiver<Event>,
        cancel: CancellationToken,
    ) -> Run
    where
        F: Future<Output = TurnResult> + Send + 'static,
    {
        let (done, finished) = watch::channel(None);
        tokio::spawn(async move {
            let outcome = AssertUnwindSafe(turn)
                .catch_unwind()
                .await
                .map(Arc::new)
                .map_err(|panic| Arc::from(panic_text(&*panic)));
            done.send_replace(Some(outcome));
        });
        Run {
            events: tokio::sync::Mutex::new(events),
            ended: AtomicBool::new(false),
            cancel,
            finished,
        }
    }

    /// The next event; `None` after `turn_end`.
    pub async fn next_event(&mut self) -> Option<Event> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        if self.ended.load(Ordering::Acquire) {
            return Poll::Ready(None);
        }
        let polled = self.events.get_mut().poll_recv(cx);
        if let Poll::Ready(None | Some(Event::TurnEnd { .. })) = &polled {
            self.ended.store(true, Ordering::Release);
        }
        polled
    }

    /// Wait for the next event, then return it with every event already behind it, in order.
    /// An empty batch means the stream ended (after `turn_end`). Cancel-safe: dropping the
    /// future loses no event. Concurrent callers each get their own, distinct events.
    pub async fn next_batch(&self) -> Vec<Event> {
        let mut events = self.events.lock().await;
        let mut batch = Vec::new();
        if self.ended.load(Ordering::Acquire) {
            return batch;
        }
        match events.recv().await {
            Some(first) => self.push(&mut batch, first),
            None => self.ended.store(true, Ordering::Release),
        }
        self.drain(&mut events, &mut batch);
        batch
    }

    /// The events ready now, without waiting: `None` when there is none yet (or another caller
    /// is reading), `Some(empty)` once the stream ended.
    pub fn try_batch(&self) -> Option<Vec<Event>> {
        let mut events = self.events.try_lock().ok()?;
        let mut batch = Vec::new();
        self.drain(&mut events, &mut batch);
        (!batch.is_empty() || self.ended.load(Ordering::Acquire)).then_some(batch)
    }

    fn push(&self, batch: &mut Vec<Event>, event: Event) {
        if matches!(event, Event::TurnEnd { .. }) {
            self.ended.store(true, Ordering::Release);
        }
        batch.push(event);
    }

    /// Move every ready event into `batch`, stopping after `turn_end`.
    fn drain(&self, events: &mut UnboundedReceiver<Event>, batch: &mut Vec<Event>) {
        while !self.ended.load(Ordering::Acquire) {
            match events.try_recv() {
                Ok(event) => self.push(batch, event),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => self.ended.store(true, Ordering::Release),
            }
        }
    }

    /// Cancel the turn. It ends with outcome `cancelled` and a valid transcript.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The turn's cancel token.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Whether the turn has ended and its result is there.
    pub fn is_finished(&self) -> bool {
        self.finished.borrow().is_some()
    }

    /// Wait for the turn to end and return its result. May be awaited any number of times, by
    /// several parties at once, also while events are being read (events not read stay
    /// readable). `Err` only when the turn's task failed ([`Error::Internal`]).
    pub async fn result(&self) -> Result<TurnResult> {
        let mut finished = self.finished.clone();
        let outcome = match finished.wait_for(Option::is_some).await {
            // Cannot fail: `wait_for` returns once the value is Some.
            Ok(done) => done.clone().expect("waited for Some"),
            Err(_) => Err(Arc::from(
                "the turn's task ended without a result (its runtime shut down)",
            )),
        };
        outcome
            .map(|r| TurnResult::clone(&r))
            .map_err(|why| Error::Internal(why.to_string()))
    }
}

/// The message of a caught panic.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(s), _) => format!("the turn panicked: {s}"),
        (_, Some(s)) => format!("the turn panicked: {s}"),
        _ => "the turn panicked".to_string(),
    }
}

impl Stream for Run {
    type Item = Event;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.poll_event(cx)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if !self.is_finished() {
            self.cancel.cancel();
        }
    }
}
