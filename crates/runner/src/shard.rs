//! The runtime side of a distributed run (docs/distributed.md): the resolved share and shared
//! start ([`ShardPlan`]), waiting for that start, the clocks a shard's result states, and the
//! data salt every shard derives alike. The share itself is [`bench_core::Shard`]'s rule; the
//! flags are the caller's to resolve.

use std::time::{Duration, SystemTime};

use bench_core::Shard;

/// The resolved distributed settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardPlan {
    /// This process's share (`None`: the whole run).
    pub shard: Option<Shard>,
    /// The shared start and its RFC 3339 UTC form.
    pub start_at: Option<(SystemTime, String)>,
}

/// `at` as RFC 3339 UTC with nanoseconds.
pub fn rfc3339(at: SystemTime) -> String {
    time::OffsetDateTime::from(at)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Waits until `at` by the wall clock; returns how late the wake-up was (negative: `at` had
/// not come, which cannot happen after the wait; positive: it had passed, or the sleep
/// overshot), in milliseconds.
pub async fn wait_for(at: SystemTime) -> f64 {
    if let Ok(ahead) = at.duration_since(SystemTime::now()) {
        tokio::time::sleep(ahead).await;
    }
    late_ms(at, SystemTime::now())
}

/// `now - at` in milliseconds (negative when `now` is earlier).
pub fn late_ms(at: SystemTime, now: SystemTime) -> f64 {
    match now.duration_since(at) {
        Ok(d) => d.as_secs_f64() * 1000.0,
        Err(e) => -e.duration().as_secs_f64() * 1000.0,
    }
}

/// The wall clock minus the run clock now, milliseconds: the wall clock's offset at run-clock
/// time `clock.now()` is `clock.wall(now)`; both read back to back.
pub fn wall_minus_run_ms(clock: &bench_core::Clock) -> f64 {
    let run = clock.now();
    late_ms(clock.wall(run), SystemTime::now())
}

/// Bounds `[low, high]` (ms) on this machine's wall clock minus the server's, from one
/// `Date` reading: the server stamped the answer at some instant between the probe's send
/// and its arrival, when its clock read between `date` and `date + 1 s` (whole seconds).
pub fn server_offset_ms(d: bench_worker::ServerDate) -> [f64; 2] {
    [
        late_ms(d.date + Duration::from_secs(1), d.sent),
        late_ms(d.date, d.received),
    ]
}

/// A data salt every shard derives alike from the shared start, so that they draw one
/// sequence of prompts (and split it) without being given `seed=`: splitmix64 of its
/// nanoseconds, kept below 2^53 so that JSON readers hold it exactly.
pub fn shared_salt(at: SystemTime) -> u64 {
    let ns = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut z = ns.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) & ((1 << 53) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_date_header_bounds_the_offset_from_the_server() {
        let t = |ms: u64| SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
        // Sent at 100.2 s, answered at 100.5 s by this clock; the server said 99 s: its clock
        // read 99 s to just under 100 s at some instant in 100.2 to 100.5 s, so this clock is
        // ahead by more than 0.2 s (100.2 - 100) and at most 1.5 s (100.5 - 99).
        let d = bench_worker::ServerDate {
            sent: t(100_200),
            received: t(100_500),
            date: t(99_000),
        };
        assert_eq!(server_offset_ms(d), [200.0, 1500.0]);
        // The same clock: the bounds hold 0.
        let d = bench_worker::ServerDate {
            sent: t(100_200),
            received: t(100_210),
            date: t(100_000),
        };
        let [lo, hi] = server_offset_ms(d);
        assert!(lo <= 0.0 && hi >= 0.0, "{lo} {hi}");
    }

    #[test]
    fn lateness_is_signed_and_salt_is_shared() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        assert_eq!(late_ms(at, at + Duration::from_millis(5)), 5.0);
        assert_eq!(late_ms(at, at - Duration::from_millis(2)), -2.0);
        assert_eq!(shared_salt(at), shared_salt(at));
        assert_ne!(shared_salt(at), shared_salt(at + Duration::from_nanos(1)));
        assert!(shared_salt(at) < 1 << 53);
    }
}
