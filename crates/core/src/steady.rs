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

/// Which measured requests the latency distributions take, as [`Steady::find`] found it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyScope {
    /// Every measured request: the load has no fill ramp (synchronous, burst), or the user's
    /// warmup and cooldown set the window (or a report older than the rule).
    #[default]
    Window,
    /// The steady state: requests sent during the fill ramp or ending in the drain are left
    /// out (`requests.excluded_unsteady`).
    Steady,
    /// The steady state after one fill (the 90th percentile latency), though the in-flight
    /// count was still climbing after it: it settled too late to leave
    /// [`MIN_STEADY_REQUESTS`] steady requests, or never (a benchmark shorter than about three
    /// request latencies on a server whose steps slow with its batch, or a load near or over
    /// capacity). The figures flatter latency under load a little.
    Settling,
    /// The rule applies but fewer than [`MIN_STEADY_REQUESTS`] completed requests lie in the
    /// steady state (a benchmark shorter than about two request latencies or than a few
    /// requests, or a load over capacity whose latencies grow through it): every measured
    /// request, and the figures flatter latency under load.
    TooShort,
}

/// What [`Steady::find`] found: the scope of the latency figures, the steady part they take
/// (`None`: every measured request), and the latency fill ([`Steady::fill`]; `None` without a
/// completed measured request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub scope: LatencyScope,
    pub steady: Option<Steady>,
    pub fill: Option<Nanos>,
}

impl Steady {
    /// The whole rule for a benchmark of load `strategy` that started at `start`, with
    /// measurement `window`: `latencies` are the end-to-end latencies of its measured completed
    /// requests (reordered), `spans` gives the (dispatched, end) times of every request (for
    /// [`crate::settle_time`]; called only for an open loop: a closed loop holds its streams in
    /// flight from the start, so its count says nothing), and `steady_count` counts the
    /// measured completed requests a steady part holds.
    ///
    /// The fill waits for the in-flight count to settle when at least [`MIN_STEADY_REQUESTS`]
    /// are left after it (`Steady`); else it is the latency quantile alone (`Settling`);
    /// `TooShort` (and no steady part) when fewer lie in either.
    pub fn find<I>(
        strategy: &Strategy,
        start: Nanos,
        window: &Window,
        latencies: &mut [Nanos],
        spans: impl FnOnce() -> I,
        steady_count: impl Fn(&Steady) -> usize,
    ) -> Found
    where
        I: IntoIterator<Item = (Nanos, Nanos)>,
    {
        let fill = (!latencies.is_empty()).then(|| Self::fill(latencies));
        let found = |scope, steady| Found {
            scope,
            steady,
            fill,
        };
        let Some(lat_fill) = fill else {
            return found(LatencyScope::Window, None);
        };
        let of = |settle| Self::of(strategy, start, window, lat_fill, settle);
        let Some(first) = of(0) else {
            return found(LatencyScope::Window, None);
        };
        let enough = |s: &Steady| steady_count(s) >= MIN_STEADY_REQUESTS;
        let settle = if strategy.release() == Release::Scheduled {
            crate::settle_time(window, spans(), lat_fill)
        } else {
            Some(0)
        };
        if let Some(settled) = settle.and_then(of).filter(|s| enough(s)) {
            return found(LatencyScope::Steady, Some(settled));
        }
        if enough(&first) {
            found(LatencyScope::Settling, Some(first))
        } else {
            found(LatencyScope::TooShort, None)
        }
    }

    /// The steady part of a benchmark of load `strategy` that started at `start`, with
    /// measurement `window`, whose latency fill is `fill` ([`Steady::fill`]). `None` when
    /// every measured request counts: the load has no ramp (synchronous, throughput, burst),
    /// or the user set both a warmup and a cooldown. `settle` is when the load settled after
    /// the opening ([`crate::settle_time`]; 0 when unknown): the fill is the later of it and
    /// the latency quantile.
    pub fn of(
        strategy: &Strategy,
        start: Nanos,
        window: &Window,
        fill: Nanos,
        settle: Nanos,
    ) -> Option<Steady> {
        let ramps = match strategy.release() {
            Release::Scheduled => true,
            Release::ClosedLoop => strategy.closed_loop_streams().is_some_and(|n| n > 1),
            Release::AtStart => false,
        };
        let warmup = window.open > start;
        if !ramps || (warmup && window.cooldown) {
            return None;
        }
        let fill = if warmup { 0 } else { fill.max(settle) };
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
pub(crate) fn nearest_rank(values: &mut [Nanos], q: f64) -> Nanos {
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
        let fill = Steady::fill(&mut lat);
        assert_eq!(fill, 9 * S / 10);
        let s = Steady::of(&constant(), 0, &window(0, 5 * S, false), fill, 0).expect("steady");
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
        let w = window(0, 5 * S, false);
        let late = Steady::of(&constant(), 0, &w, S, 2 * S).expect("steady");
        assert_eq!(late.from, 2 * S);
        let early = Steady::of(&constant(), 0, &w, S, S / 2).expect("steady");
        assert_eq!(early.from, S);
        let warm = window(S, 5 * S, false);
        assert_eq!(
            Steady::of(&constant(), 0, &warm, S, 3 * S).map(|s| s.from),
            Some(S)
        );
    }

    #[test]
    fn an_explicit_warmup_replaces_the_fill_and_a_cooldown_the_drain() {
        let warm = Steady::of(&constant(), 0, &window(2 * S, 5 * S, false), S, 0).expect("steady");
        assert_eq!(
            warm,
            Steady {
                from: 2 * S,
                to: Some(5 * S)
            }
        );
        let cool = Steady::of(&constant(), 0, &window(0, 5 * S, true), S, 0).expect("steady");
        assert_eq!(cool, Steady { from: S, to: None });
        assert_eq!(
            Steady::of(&constant(), 0, &window(S, 5 * S, true), S, 0),
            None
        );
    }

    #[test]
    fn loads_without_a_ramp_keep_every_request() {
        let w = window(0, 5 * S, false);
        assert_eq!(Steady::of(&Strategy::Synchronous, 0, &w, S, 0), None);
        assert_eq!(Steady::of(&Strategy::Burst { count: 3 }, 0, &w, S, 0), None);
        let all_at_once = Strategy::Throughput { max_concurrency: 8 };
        assert_eq!(Steady::of(&all_at_once, 0, &w, S, 0), None);
        let closed = Strategy::Concurrent { streams: 4 };
        assert!(Steady::of(&closed, 0, &w, S, 0).is_some());
    }

    /// What `find` gives for 1,000 requests of 1 s latency sent every 10 ms over a 10 s
    /// window, of which those `sent` keeps are counted as steady candidates, when the
    /// requests' (dispatched, end) times are `spans` (the in-flight count the rule reads).
    fn find_with(
        strategy: &Strategy,
        spans: Vec<(Nanos, Nanos)>,
        sent: impl Fn(Nanos) -> bool,
    ) -> Found {
        let mut lat = vec![S; 1000];
        let w = window(0, 10 * S, false);
        let count = |st: &Steady| {
            (0..1000)
                .map(|i| i * S / 100)
                .filter(|&t| sent(t) && st.holds(t, t + S))
                .count()
        };
        Steady::find(strategy, 0, &w, &mut lat, || spans, count)
    }

    #[test]
    fn find_waits_for_the_count_to_settle_or_says_it_is_still_settling() {
        // A count that climbs from 0 to 10 over 4 s and holds: the fill waits for it.
        let ramp: Vec<(Nanos, Nanos)> = (0..1000)
            .map(|i| i * S / 100)
            .map(|t| (t, t + S + t.min(4 * S) * 3 / 4))
            .collect();
        let settled = find_with(&constant(), ramp.clone(), |_| true);
        assert_eq!(settled.scope, LatencyScope::Steady);
        assert_eq!(settled.fill, Some(S));
        assert!(settled.steady.expect("steady").from > 2 * S);
        // The same, with too few requests left after the settling: the latency fill alone.
        let few = find_with(&constant(), ramp, |t| t < 2 * S || t % (S / 2) == 0);
        assert_eq!(few.scope, LatencyScope::Settling);
        assert_eq!(few.steady.expect("steady").from, S);
        // Fewer than the minimum in either: every request.
        let none = find_with(&constant(), vec![(0, S)], |t| t < S);
        assert_eq!((none.scope, none.steady), (LatencyScope::TooShort, None));
    }

    #[test]
    fn find_keeps_every_request_without_a_ramp_or_a_latency_and_reads_no_count_of_a_closed_loop() {
        let mut lat = vec![S; 4];
        let w = window(0, 5 * S, false);
        let never = || -> Vec<(Nanos, Nanos)> { panic!("a closed loop's count was read") };
        let closed = Steady::find(
            &Strategy::Concurrent { streams: 4 },
            0,
            &w,
            &mut lat,
            never,
            |_| 10,
        );
        assert_eq!(
            (closed.scope, closed.steady.map(|s| s.from)),
            (LatencyScope::Steady, Some(S))
        );
        let sync = Steady::find(&Strategy::Synchronous, 0, &w, &mut lat, never, |_| 10);
        assert_eq!(
            (sync.scope, sync.steady, sync.fill),
            (LatencyScope::Window, None, Some(S))
        );
        let empty = Steady::find(&constant(), 0, &w, &mut [], never, |_| 10);
        assert_eq!(
            (empty.scope, empty.steady, empty.fill),
            (LatencyScope::Window, None, None)
        );
    }
}
