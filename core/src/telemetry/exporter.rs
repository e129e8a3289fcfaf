//! The OTLP/HTTP exporter: finished spans wait in a bounded queue (full: dropped and counted,
//! never blocking a turn) and a thread of its own posts them in batches, so the turn's path
//! only pushes to a queue and a collector that is down costs a turn nothing.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};

use super::otlp_json::export_request;
use super::settings::Resolved;
use super::span::SpanRecord;

/// Counts of what happened to the spans given to an exporter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Spans the collector accepted (a 2xx answer).
    pub exported: u64,
    /// Spans dropped because the queue was full.
    pub dropped: u64,
    /// Spans lost in failed exports (the collector down, or answering an error).
    pub failed: u64,
}

#[derive(Default)]
struct Queue {
    spans: VecDeque<SpanRecord>,
    /// Set when the exporter is dropped: the thread sends what is left and ends.
    closing: bool,
    /// Flushes asked for, and done (a flush waits until every span queued before it went).
    flush_asked: u64,
    flush_done: u64,
}

struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the thread: a full batch, a flush, closing.
    wake: Condvar,
    /// Wakes flushers.
    flushed: Condvar,
    exported: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
    max_queue: usize,
    max_batch: usize,
    delay: Duration,
}

/// Posts spans to an OTLP/HTTP JSON endpoint.
pub(crate) struct Exporter {
    shared: Arc<Shared>,
}

impl Shared {
    fn new(settings: &Resolved) -> Arc<Shared> {
        Arc::new(Shared {
            queue: Mutex::default(),
            wake: Condvar::new(),
            flushed: Condvar::new(),
            exported: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            max_queue: settings.max_queue,
            max_batch: settings.max_batch,
            delay: settings.delay,
        })
    }
}

/// The export request's headers, after checking the endpoint and the configured headers (a
/// host's own tracer provider takes the spans then, but a bad option is refused all the same).
/// `Err` names what is wrong.
pub(crate) fn checked_headers(settings: &Resolved) -> Result<HeaderMap, String> {
    let url = url::Url::parse(&settings.endpoint)
        .map_err(|e| format!("the endpoint is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("the endpoint must be an http:// or https:// URL".into());
    }
    let mut headers = HeaderMap::new();
    for (k, v) in &settings.headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("header {k:?} is not a valid HTTP header name"))?;
        let mut value = HeaderValue::from_str(v)
            .map_err(|_| format!("the value of header {k:?} is not a valid HTTP header value"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(headers)
}

impl Exporter {
    /// Check the endpoint and headers, and start the export thread. `Err` names what is wrong
    /// (the caller makes it a configuration error).
    pub(crate) fn start(settings: &Resolved) -> Result<Exporter, String> {
        let headers = checked_headers(settings)?;
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| format!("cannot build the HTTP client ({e})"))?;
        let shared = Shared::new(settings);
        let thread = shared.clone();
        let endpoint = settings.endpoint.clone();
        let resource = settings.resource.clone();
        std::thread::Builder::new()
            .name("contenox-otlp".into())
            .spawn(move || run(thread, http, endpoint, resource))
            .map_err(|e| format!("cannot start the export thread ({e})"))?;
        Ok(Exporter { shared })
    }

    /// Queue a finished span; when the queue is full it is dropped and counted.
    pub(crate) fn push(&self, span: SpanRecord) {
        let mut queue = self.shared.queue.lock();
        if queue.spans.len() >= self.shared.max_queue {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        queue.spans.push_back(span);
        if queue.spans.len() >= self.shared.max_batch {
            self.shared.wake.notify_one();
        }
    }

    /// Send every span queued so far, waiting at most `timeout`; false when it ran out.
    pub(crate) fn flush(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut queue = self.shared.queue.lock();
        queue.flush_asked += 1;
        let target = queue.flush_asked;
        self.shared.wake.notify_one();
        while queue.flush_done < target {
            if self
                .shared
                .flushed
                .wait_until(&mut queue, deadline)
                .timed_out()
            {
                return queue.flush_done >= target;
            }
        }
        true
    }

    pub(crate) fn stats(&self) -> ExportStats {
        ExportStats {
            exported: self.shared.exported.load(Ordering::Relaxed),
            dropped: self.shared.dropped.load(Ordering::Relaxed),
            failed: self.shared.failed.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        // The thread sends what is queued, then ends; nobody waits for it here.
        self.shared.queue.lock().closing = true;
        self.shared.wake.notify_one();
    }
}

fn run(
    shared: Arc<Shared>,
    http: reqwest::Client,
    endpoint: String,
    resource: Vec<(String, String)>,
) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    loop {
        let (batch, flush, closing) = {
            let mut queue = shared.queue.lock();
            let deadline = Instant::now() + shared.delay;
            while queue.spans.len() < shared.max_batch
                && !queue.closing
                && queue.flush_asked == queue.flush_done
                && !shared.wake.wait_until(&mut queue, deadline).timed_out()
            {}
            let n = queue.spans.len().min(shared.max_batch);
            let batch: Vec<SpanRecord> = queue.spans.drain(..n).collect();
            (batch, queue.flush_asked, queue.closing)
        };
        if !batch.is_empty() {
            let body = export_request(&resource, &batch);
            let sent = runtime.block_on(async {
                match http.post(&endpoint).body(body).send().await {
                    Ok(r) => r.status().is_success(),
                    Err(_) => false,
                }
            });
            let counter = if sent {
                &shared.exported
            } else {
                &shared.failed
            };
            counter.fetch_add(batch.len() as u64, Ordering::Relaxed);
        }
        let mut queue = shared.queue.lock();
        if queue.spans.is_empty() {
            queue.flush_done = flush;
            shared.flushed.notify_all();
            if closing {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::settings::TelemetrySettings;
    use crate::telemetry::span::{SpanKind, SpanStatus};

    fn span(i: u64) -> SpanRecord {
        SpanRecord {
            trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            span_id: format!("{i:016x}"),
            parent_span_id: None,
            name: "s".into(),
            kind: SpanKind::Internal,
            start_time_unix_nano: i,
            end_time_unix_nano: i,
            attributes: Vec::new(),
            events: Vec::new(),
            status: SpanStatus::Unset,
            status_message: None,
        }
    }

    #[test]
    fn a_full_queue_drops_and_counts_instead_of_growing() {
        let mut settings = Resolved::new(&TelemetrySettings::default());
        settings.max_queue = 3;
        // No export thread: nothing drains the queue.
        let exporter = Exporter {
            shared: Shared::new(&settings),
        };
        for i in 0..10 {
            exporter.push(span(i));
        }
        assert_eq!(exporter.shared.queue.lock().spans.len(), 3);
        assert_eq!(exporter.stats().dropped, 7);
        // With no thread a flush cannot finish: it gives up at its deadline.
        assert!(!exporter.flush(Duration::from_millis(10)));
    }
}
