//! A future raced against a cancellation token, with the token looked at first (what a
//! `tokio::select!` with `biased;` and `token.cancelled()` as its first branch does), without
//! its cost on every wake-up.
//!
//! The select polls `cancelled()` on each poll, and a `Notified` that waits takes its
//! `Notify`'s lock on every poll to check its waker; a model request is polled once per
//! streamed chunk, and a tool call that finishes at once still registered a waiter and took it
//! out again. Here the token is first read with `is_cancelled` (an atomic load); the wait is
//! registered only when the future is pending, and polled again only when the task's waker
//! changed. A cancel wakes that registered waker, and the next poll then sees `is_cancelled`.
//!
//! Not tokio-util's `CancellationToken::run_until_cancelled`: it polls the future before the
//! token once started (a cancelled token must win over a ready future here, as the turn's
//! `biased` selects had it) and polls the wait, and so takes the lock, on every pending poll.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use pin_project_lite::pin_project;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

pin_project! {
    /// `fut`, or `None` once `token` is cancelled (see [`until_cancelled`]).
    pub(crate) struct UntilCancelled<'a, F> {
        token: &'a CancellationToken,
        #[pin]
        wait: Option<WaitForCancellationFuture<'a>>,
        // The waker `wait` was last polled with.
        waker: Option<Waker>,
        #[pin]
        fut: F,
    }
}

/// `fut`'s output, or `None` when `token` is cancelled first. A token already cancelled wins
/// over a future that would be ready.
pub(crate) fn until_cancelled<F: Future>(
    token: &CancellationToken,
    fut: F,
) -> UntilCancelled<'_, F> {
    UntilCancelled {
        token,
        wait: None,
        waker: None,
        fut,
    }
}

impl<F: Future> Future for UntilCancelled<'_, F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if this.token.is_cancelled() {
            return Poll::Ready(None);
        }
        if let Poll::Ready(out) = this.fut.poll(cx) {
            return Poll::Ready(Some(out));
        }
        if this.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            return Poll::Pending;
        }
        if this.wait.is_none() {
            this.wait.set(Some(this.token.cancelled()));
        }
        if let Some(wait) = this.wait.as_pin_mut() {
            if wait.poll(cx).is_ready() {
                return Poll::Ready(None);
            }
        }
        *this.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_ready_future_gives_its_output_and_a_cancelled_token_wins() {
        let token = CancellationToken::new();
        assert_eq!(until_cancelled(&token, async { 7 }).await, Some(7));
        token.cancel();
        assert_eq!(until_cancelled(&token, async { 7 }).await, None);
    }

    #[tokio::test]
    async fn a_cancel_while_pending_ends_the_wait() {
        let token = CancellationToken::new();
        let canceller = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            canceller.cancel();
        });
        // Woken in between by a timer of its own (the registered waker is reused), then
        // cancelled; it must not wait for the hour.
        let pending = async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            tokio::time::sleep(Duration::from_secs(3600)).await;
        };
        let out = tokio::time::timeout(Duration::from_secs(60), until_cancelled(&token, pending))
            .await
            .expect("the cancel was missed");
        assert_eq!(out, None);
    }

    #[test]
    fn a_poll_with_another_waker_moves_the_registration_to_it() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;

        struct Flag(AtomicBool);
        impl futures::task::ArcWake for Flag {
            fn wake_by_ref(me: &Arc<Self>) {
                me.0.store(true, Ordering::SeqCst);
            }
        }
        let token = CancellationToken::new();
        let mut fut = Box::pin(until_cancelled(&token, std::future::pending::<()>()));
        let first = Arc::new(Flag(AtomicBool::new(false)));
        let second = Arc::new(Flag(AtomicBool::new(false)));
        let first_waker = futures::task::waker(first.clone());
        let second_waker = futures::task::waker(second.clone());
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&first_waker))
            .is_pending());
        // The future moved to another task: the cancel must wake that one.
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&second_waker))
            .is_pending());
        token.cancel();
        assert!(
            second.0.load(Ordering::SeqCst),
            "the new waker was not woken"
        );
        assert_eq!(
            fut.as_mut().poll(&mut Context::from_waker(&second_waker)),
            Poll::Ready(None)
        );
    }

    #[tokio::test]
    async fn a_parent_cancel_reaches_a_child_token_wait() {
        let parent = CancellationToken::new();
        let child = parent.child_token();
        let canceller = parent.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            canceller.cancel();
        });
        let out = tokio::time::timeout(
            Duration::from_secs(60),
            until_cancelled(&child, std::future::pending::<()>()),
        )
        .await
        .expect("the parent's cancel was missed");
        assert_eq!(out, None);
    }
}
