//! Waiting for a [`CancellationToken`] on the request path without locking its list of waiters
//! at every poll.
//!
//! `token.cancelled()` registers the task with the token's waiters (one list per benchmark,
//! behind one mutex that every request in flight shares) and, as tokio's `Notified` does,
//! takes that mutex again at each later poll to refresh the waker. A request's task is polled
//! at every piece of its answer, on two threads, so those locks were a hot, contended spot.
//! [`CancelWait`] polls the registration once, then, while the task's waker is the one
//! registered, reads the token's flag instead: the registered waker still wakes the task when
//! the token is cancelled, and the flag then says so.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Completes when `token` is cancelled, like the `token.cancelled()` it wraps (pinned by the
/// caller), which it polls only to register a new waker.
pub struct CancelWait<'a, 'p> {
    token: &'a CancellationToken,
    wait: Pin<&'p mut WaitForCancellationFuture<'a>>,
    /// The waker the registration holds, once it was polled.
    waker: Option<Waker>,
}

impl<'a, 'p> CancelWait<'a, 'p> {
    /// Waits for `token` through `wait`, which must be `token.cancelled()`.
    pub fn new(
        token: &'a CancellationToken,
        wait: Pin<&'p mut WaitForCancellationFuture<'a>>,
    ) -> Self {
        Self {
            token,
            wait,
            waker: None,
        }
    }
}

impl std::fmt::Debug for CancelWait<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelWait")
            .field("cancelled", &self.token.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Future for CancelWait<'_, '_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.token.is_cancelled() {
            return Poll::Ready(());
        }
        if self.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            return Poll::Pending;
        }
        match self.wait.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(()),
            Poll::Pending => {
                self.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn completes_when_cancelled_before_and_while_waiting() {
        let token = CancellationToken::new();
        token.cancel();
        let wait = token.cancelled();
        tokio::pin!(wait);
        CancelWait::new(&token, wait).await;

        // Cancelled from another task while this one waits, polled again and again meanwhile
        // (the select's other branch wakes it every millisecond).
        let token = CancellationToken::new();
        let other = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            other.cancel();
        });
        let wait = token.cancelled();
        tokio::pin!(wait);
        let mut w = CancelWait::new(&token, wait);
        let mut ticks = 0u32;
        loop {
            tokio::select! {
                biased;
                () = &mut w => break,
                () = tokio::time::sleep(Duration::from_millis(1)) => ticks += 1,
            }
        }
        assert!(token.is_cancelled());
        assert!(ticks > 0, "it waited");
    }

    /// Polled from a task other than the one that registered (a future moved between tasks):
    /// the registration is refreshed with the new task's waker, so the new task is woken.
    #[tokio::test]
    async fn a_new_task_registers_again() {
        let token = CancellationToken::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let t = token.clone();
        let waiter = tokio::spawn(async move {
            let wait = t.cancelled();
            tokio::pin!(wait);
            let mut w = CancelWait::new(&t, wait);
            // First polled under a throwaway waker, as if by another task.
            let noop = Waker::noop();
            assert!(Pin::new(&mut w)
                .poll(&mut Context::from_waker(noop))
                .is_pending());
            let _ = tx.send(());
            // Then awaited here: only a fresh registration can wake this task.
            (&mut w).await;
        });
        rx.await.expect("registered");
        token.cancel();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken by the cancellation")
            .expect("the task ran");
    }
}
