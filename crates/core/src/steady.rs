//! The steady state of a benchmark: which measured requests its latency figures take
//! ([`Steady::of`]), beside the window rule ([`crate::Window`]) that its counts and rates use.
//!
//! A server that starts a benchmark empty takes at least one request latency to fill: until
//! then the requests in flight are fewer than the load will hold, and the requests sent in that
//! ramp see a lighter server. When the sending stops, the requests still in flight drain with
//! no new ones beside them, and see a lighter server too. Both ends flatter latency under load:
//! in a 5 s open-loop benchmark with 1.4 s latencies they are more than half of the data. The
//! rule (docs/metrics.md, "Steady state"): the fill time `F` is the later of the 90th
//! percentile (nearest rank) of the end-to-end latencies of the measured completed requests and
//! the time the in-flight count settles ([`crate::settle_time`]: on a server whose steps slow
//! with its batch the count goes on climbing for about a second latency); a measured request is
//! *steady* when it was sent at or after `open + F` and ended at or before `close`, the
//! window's closing, when the sending stopped. An explicit warmup replaces the fill (`F = 0`:
//! the user's window opens after their own ramp); an explicit cooldown keeps the load on after
//! the closing, so no measured request drains. The rule is for loads that build up to a steady
//! state, open loops (constant, poisson, trace) and closed loops of several streams
//! (concurrent); synchronous, throughput and burst benchmarks keep every measured request: one
//! stream has no ramp, and loads due all at once are a transient by design.

use serde::{Deserialize, Serialize};

use crate::{Nanos, Release, Strategy, Window};

/// The quantile of the measured latencies taken as the fill time.
pub const FILL_QUANTILE: f64 = 0.9;

/// The fewest steady completed requests latency figures are taken from: with fewer, a
/// benchmark is too short for a steady state, and its figures take every measured request
/// (said on the output), which says more than a handful would.
pub const MIN_STEADY_REQUESTS: usize = 10;

/// The steady part of a benchmark, for its latency figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Steady {
    /// Requests sent before this ran during the fill ramp.
    pub from: Nanos,
    /// Requests that ended after this ran into the drain; `None` when a cooldown kept the load
    /// on after the window closed.
    pub to: Option<Nanos>,
}

impl Steady {
    /// The steady part of a benchmark of load `strategy` that started at `start`, with
    /// measurement `window` and `latencies` the end-to-end latencies of its measured completed
    /// requests (reordered). `None` when every measured request counts: the load has no ramp
    /// (synchronous, throughput, burst), the user set both a warmup and a cooldown, or there
    /// is no latency. `settle` is when the load settled after the opening
    /// ([`crate::settle_time`]; 0 when unknown): the fill is the later of it and the
    /// latency quantile.
    pub fn of(
        strategy: &Strategy,
        start: Nanos,
        window: &Window,
        latencies: &mut [Nanos],
        settle: Nanos,
    ) -> Option<Steady> {
        let ramps = match strategy.release() {
            Release::Scheduled => true,
            Release::ClosedLoop => strategy.closed_loop_streams().is_some_and(|n| n > 1),
            Release::AtStart => false,
        };
        if !ramps {
            return None;
        }
        let warmup = window.open > start;
        if (warmup && window.cooldown) || latencies.is_empty() {
            return None;
        }
        let fill = if warmup {
            0
        } else {
            Self::fill(latencies).max(settle)
        };
        Some(Steady {
            from: window.open.saturating_add(fill),
            to: (!window.cooldown).then_some(window.close),
        })
    }

    /// The fill time of a benchmark whose measured completed requests took `latencies`
    /// (reordered; not empty): their [`FILL_QUANTILE`] by nearest rank.
    pub fn fill(latencies: &mut [Nanos]) -> Nanos {
        nearest_rank(latencies, FILL_QUANTILE)
    }

    /// Whether a request sent at `dispatched` that ended at `end` is steady.
    #[inline]
    pub fn holds(&self, dispatched: Nanos, end: Nanos) -> bool {
        dispatched >= self.from && self.to.is_none_or(|to| end <= to)
    }
}

/// The `q` quantile of `values` by nearest rank (`values` is reordered; not empty).
fn nearest_rank(values: &mut [Nanos], q: f64) -> Nanos {
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    *values.select_nth_unstable(rank - 1).1
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    fn window(open: Nanos, close: Nanos, cooldown: bool) -> Window {
        Window {
            open,
            close,
            cooldown,
        }
    }

    fn constant() -> Strategy {
        Strategy::Constant {
            rate: 10.0,
            max_concurrency: None,
        }
    }

    #[test]
    fn the_fill_is_the_90th_percentile_latency_and_the_drain_is_cut_at_the_closing() {
        let mut lat: Vec<Nanos> = (1..=10).map(|i| i * S / 10).collect();
        let s = Steady::of(&constant(), 0, &window(0, 5 * S, false), &mut lat, 0).expect("steady");
        assert_eq!(
            s,
            Steady {
                from: 9 * S / 10,
                to: Some(5 * S)
            }
        );
        assert!(!s.holds(S / 2, S));
        assert!(s.holds(S, 2 * S));
        assert!(s.holds(S, 5 * S));
        assert!(!s.holds(4 * S, 5 * S + 1));
    }

    #[test]
    fn the_fill_waits_for_the_count_to_settle_when_it_settles_later() {
        let mut lat = vec![S; 4];
        let w = window(0, 5 * S, false);
        let late = Steady::of(&constant(), 0, &w, &mut lat, 2 * S).expect("steady");
        assert_eq!(late.from, 2 * S);
        let early = Steady::of(&constant(), 0, &w, &mut lat, S / 2).expect("steady");
        assert_eq!(early.from, S);
        let warm = window(S, 5 * S, false);
        assert_eq!(
            Steady::of(&constant(), 0, &warm, &mut lat, 3 * S).map(|s| s.from),
            Some(S)
        );
    }

    #[test]
    fn an_explicit_warmup_replaces_the_fill_and_a_cooldown_the_drain() {
        let mut lat = vec![S; 4];
        let warm =
            Steady::of(&constant(), 0, &window(2 * S, 5 * S, false), &mut lat, 0).expect("steady");
        assert_eq!(
            warm,
            Steady {
                from: 2 * S,
                to: Some(5 * S)
            }
        );
        let cool =
            Steady::of(&constant(), 0, &window(0, 5 * S, true), &mut lat, 0).expect("steady");
        assert_eq!(cool, Steady { from: S, to: None });
        assert_eq!(
            Steady::of(&constant(), 0, &window(S, 5 * S, true), &mut lat, 0),
            None
        );
    }

    #[test]
    fn loads_without_a_ramp_and_empty_benchmarks_keep_every_request() {
        let w = window(0, 5 * S, false);
        assert_eq!(Steady::of(&Strategy::Synchronous, 0, &w, &mut [S], 0), None);
        assert_eq!(
            Steady::of(&Strategy::Burst { count: 3 }, 0, &w, &mut [S], 0),
            None
        );
        let all_at_once = Strategy::Throughput { max_concurrency: 8 };
        assert_eq!(Steady::of(&all_at_once, 0, &w, &mut [S], 0), None);
        assert_eq!(Steady::of(&constant(), 0, &w, &mut [], 0), None);
        let closed = Strategy::Concurrent { streams: 4 };
        assert!(Steady::of(&closed, 0, &w, &mut [S], 0).is_some());
    }
}
