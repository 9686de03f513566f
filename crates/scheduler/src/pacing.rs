//! Waiting for an instant of the run clock, and where the pacer runs while it waits.
//!
//! tokio's timer wheel has a 1 ms resolution and rounds up, so a pacer that only awaits tokio
//! timers lands up to about a millisecond late, and one that spins on a runtime worker burns
//! that worker. The production pacer therefore runs on its own OS thread: it sleeps on the
//! kernel's high-resolution timer (with the thread's timer slack lowered to 1 ns, so the
//! kernel does not batch its wake-ups up to 50 µs late), busy-waits only the last few
//! microseconds, and hands each request to the caller's runtime. Between requests it costs a
//! wake-up, not a core.

use std::time::Duration;

use bench_core::{CancellationToken, Clock, Nanos};

/// Where the pacer runs and how it waits for each request's intended send time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// A task on the caller's runtime that waits on tokio's timers: exact on tokio's paused
    /// clock (tests), up to about a millisecond late on a real clock.
    Runtime,
    /// A dedicated OS thread that sleeps on the kernel's high-resolution timer until `spin`
    /// before each due instant and busy-waits the rest. Requests still run on the caller's
    /// runtime.
    Thread {
        /// The final busy-wait before each due instant (covers the kernel's wake-up latency).
        spin: Duration,
    },
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing::Thread {
            spin: Duration::from_micros(20),
        }
    }
}

/// Longest blocking sleep of the thread pacer: above it the pacer awaits tokio's timer
/// instead, so a stop request is seen within this long.
const COARSE: Duration = Duration::from_millis(2);

/// Waits until `due` on `clock` on tokio's timers (`Pacing::Runtime`).
pub async fn wait_until(clock: &Clock, due: Nanos) {
    tokio::time::sleep_until(clock.instant(due)).await;
}

/// Pauses a closed-loop stream or a session as a server's `Retry-After` asked
/// ([`Outcome::retry_after`](bench_core::Outcome::retry_after), already bounded), never past
/// `deadline` and not once `stop` fires.
pub(crate) async fn retry_pause(
    clock: &Clock,
    wait: Duration,
    deadline: Option<Nanos>,
    stop: &CancellationToken,
) {
    let until = clock.now().saturating_add(wait.as_nanos() as u64);
    let until = deadline.map_or(until, |d| d.min(until));
    tokio::select! {
        biased;
        _ = stop.cancelled() => {}
        _ = wait_until(clock, until) => {}
    }
}

/// Waits until `due` on `clock` precisely (`Pacing::Thread`): tokio's timer for all but the
/// last 1-2 ms, then a blocking high-resolution sleep until `spin` before `due`, then a
/// busy-wait. Blocks its thread for up to [`COARSE`] at a time, so it must only run on the
/// pacer's own thread. Never returns before `due`; deadlines in the past return at once.
pub(crate) async fn wait_precise(clock: &Clock, due: Nanos, spin: Duration) {
    let target = clock.instant(due).into_std();
    loop {
        let now = std::time::Instant::now();
        let Some(left) = target.checked_duration_since(now).filter(|d| !d.is_zero()) else {
            return;
        };
        if left > COARSE {
            tokio::time::sleep_until((target - COARSE).into()).await;
        } else if left > spin {
            std::thread::sleep(left - spin);
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Lowers the calling thread's timer slack to 1 ns so its sleeps end when asked (Linux; the
/// default slack of 50 µs lets the kernel batch wake-ups that much later). Best effort.
pub(crate) fn lower_timer_slack() {
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_timerslack(1) {
        tracing::debug!(error = %e, "could not lower the pacer thread's timer slack");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn exact_on_paused_clock() {
        // tokio's timer wheel (paused or not) fires on whole milliseconds: whole-millisecond
        // instants are exact, others land on the next millisecond.
        let clock = Clock::start();
        wait_until(&clock, 7_000_000).await;
        assert_eq!(clock.now(), 7_000_000);
        wait_until(&clock, 8_234_567).await;
        assert_eq!(clock.now(), 9_000_000);
        // In the past: no wait.
        wait_until(&clock, 1_000).await;
        assert_eq!(clock.now(), 9_000_000);
    }

    #[test]
    fn precise_wait_is_never_early() {
        // Real clock, on a thread of its own as in production: the wait must never end before
        // the instant (lateness is a benchmark's business, not a test's).
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        rt.block_on(async {
            lower_timer_slack();
            let clock = Clock::start();
            for i in 1..=6u64 {
                // Both branches: beyond COARSE (tokio timer first) and within it.
                let due = clock.now() + i * 700_000;
                wait_precise(&clock, due, Duration::from_micros(20)).await;
                assert!(clock.now() >= due);
            }
            // In the past: returns at once.
            wait_precise(&clock, 0, Duration::from_micros(20)).await;
        });
    }
}
