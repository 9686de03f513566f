//! Waiting for an instant of the run clock more precisely than tokio's timers allow.

use std::time::Duration;

use bench_core::{Clock, Nanos};
use tokio::time::Instant;

/// Below this much remaining time the pacer spins on the CPU instead of yielding to the
/// runtime (a yield can cost tens of microseconds when other tasks are ready).
const HOT_SPIN: Duration = Duration::from_micros(40);

/// Waits until `due` on `clock`.
///
/// tokio's timer wheel has a 1 ms resolution and rounds up, so `sleep_until` alone lands up to
/// about a millisecond late. With a non-zero `spin`, this sleeps on the timer only until `spin`
/// before `due`, then yields to the runtime in a loop (other tasks keep running) and, for the
/// last few microseconds, spins. Deadlines in the past return at once. `spin = 0` is a plain
/// `sleep_until`, which is exact on tokio's paused clock.
pub async fn wait_until(clock: &Clock, due: Nanos, spin: Duration) {
    let target = clock.instant(due);
    if spin.is_zero() {
        tokio::time::sleep_until(target).await;
        return;
    }
    let now = Instant::now();
    if now >= target {
        return;
    }
    if target - now > spin {
        tokio::time::sleep_until(target - spin).await;
    }
    loop {
        let now = Instant::now();
        if now >= target {
            return;
        }
        if target - now > HOT_SPIN {
            tokio::task::yield_now().await;
        } else {
            std::hint::spin_loop();
        }
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
        wait_until(&clock, 7_000_000, Duration::ZERO).await;
        assert_eq!(clock.now(), 7_000_000);
        wait_until(&clock, 8_234_567, Duration::ZERO).await;
        assert_eq!(clock.now(), 9_000_000);
        // In the past: no wait.
        wait_until(&clock, 1_000, Duration::ZERO).await;
        assert_eq!(clock.now(), 9_000_000);
    }

    #[tokio::test]
    async fn never_early_with_spin() {
        // Real clock: the wait must never end before the instant (lateness is a benchmark's
        // business, not a test's).
        let clock = Clock::start();
        for i in 1..=5u64 {
            let due = clock.now() + i * 300_000;
            wait_until(&clock, due, Duration::from_millis(2)).await;
            assert!(clock.now() >= due);
        }
    }
}
