//! HTML to Markdown for `web_fetch`, safe on hostile pages.
//!
//! htmd (a maintained html5ever-based converter) does the conversion, but it recurses once per
//! level of the tree and html5ever's parser does work proportional to the open elements for
//! many tags, so a page of 100,000 nested `<span>` overflowed the stack and aborted the host.
//! Here the page is parsed through a bounding filter ([`bound`]), the tree is flattened to a
//! fixed depth ([`flatten`]), and htmd runs on a thread of its own with a stack sized far above
//! what that depth needs ([`STACK_BYTES`]). Every stage is linear in the page, and the caller
//! can stop the parse (a deadline, a cancel).

mod bound;
mod flatten;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Elements whose contents are not converted (scripts, styles, the head, ...).
pub(crate) const SKIPPED_TAGS: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "head", "iframe",
];

/// The converting thread's stack. htmd takes at most a few KiB per level in debug builds
/// (measured: 128 nested tables, 512 levels, fit in 2 MiB), and the tree is at most
/// [`flatten::MAX_DEPTH`] levels deep when it runs.
pub const STACK_BYTES: usize = 8 * 1024 * 1024;

/// Convert `html` to Markdown on the current thread; the stack must be [`STACK_BYTES`] or
/// more. `stop` cuts the parse short (what was parsed so far is converted).
fn convert_here(html: &[u8], stop: &AtomicBool) -> String {
    let document = bound::parse(html, stop);
    flatten::flatten(&document);
    converter().tree_to_markdown(&document)
}

fn converter() -> htmd::HtmlToMarkdown {
    htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED_TAGS.to_vec())
        .build()
}

/// Convert HTML bytes (invalid UTF-8 becomes U+FFFD) to Markdown, on a thread of its own.
/// Whatever the bytes, this returns: the entry point for fuzzing the conversion.
#[doc(hidden)]
pub fn html_to_markdown(html: &[u8]) -> Result<String, String> {
    let html = html.to_vec();
    let stop = AtomicBool::new(false);
    std::thread::Builder::new()
        .name("contenox-html".into())
        .stack_size(STACK_BYTES)
        .spawn(move || convert_here(&html, &stop))
        .map_err(|e| format!("cannot start the HTML conversion: {e}"))?
        .join()
        .map_err(|_| "the HTML conversion failed".to_string())
}

/// Convert on a thread of its own and wait for it without blocking the runtime, until
/// `deadline`. When the wait ends early (the deadline, or the caller dropped this future on a
/// cancel) the thread is told to stop parsing and finishes on its own soon after.
pub(crate) async fn convert(
    html: Vec<u8>,
    deadline: tokio::time::Instant,
) -> Result<String, String> {
    /// Sets the stop flag when the wait is over, however it ends.
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let _stop_on_drop = StopOnDrop(stop.clone());
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("contenox-html".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let _ = tx.send(convert_here(&html, &stop));
        })
        .map_err(|e| format!("cannot start the HTML conversion: {e}"))?;
    match tokio::time::timeout_at(deadline, rx).await {
        Ok(Ok(markdown)) => Ok(markdown),
        Ok(Err(_)) => Err("the HTML conversion failed".into()),
        Err(_) => Err("converting the page took too long".into()),
    }
}

#[cfg(test)]
mod tests;
