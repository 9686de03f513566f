//! The measurement window of a benchmark: the one rule that places a request relative to it
//! ([`Window::phase`]), and a count over it as a rate ([`Window::per_s`]). The scheduler
//! (progress, stop and sweep decisions) and the report both use this module, so a request is
//! never measured by one and excluded by the other. The steady-state rates over the window,
//! and a benchmark's outcome, are `rates.rs`'s, above the settling and sustain rules that read
//! the window.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Nanos;

/// Which part of the benchmark a record belongs to. Only [`Phase::Measured`] records enter the
/// per-request statistics; the others ran but are excluded.
///
/// The rule (guidellm's), applied by [`Window::classify`]: a request is warmup when it *ended
/// before* the measurement window opened, cooldown when it was *sent after* the window closed
/// (only when a cooldown was configured), measured otherwise (so a request that overlaps the
/// window counts). A time warmup of `w` opens the window at `t0 + w`; a count warmup of `n`
/// opens it when request `n` (0-based, dispatch order) gets its slot; cooldowns close it at
/// `t0 + max_seconds - c` or when request `max_requests - c` gets its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Ended before the measurement window opened.
    Warmup,
    /// Overlaps the window.
    Measured,
    /// Sent after the window closed.
    Cooldown,
}

/// Why a benchmark ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `max_seconds` elapsed.
    MaxSeconds,
    /// Every request it was to send (`max_requests`, burst size) has finished.
    RequestsDone,
    /// The data source ran out.
    DataExhausted,
    /// The error count or error rate limit was reached.
    ErrorLimit,
    /// The over-saturation rule fired.
    OverSaturated,
    /// The user interrupted the run (graceful stop); the benchmark is partial.
    Interrupted,
    /// Its key figures met the `--precision` target (docs/metrics.md, "Precision").
    Precise,
}

impl StopReason {
    /// Stable snake_case name.
    pub fn name(&self) -> &'static str {
        match self {
            StopReason::MaxSeconds => "max_seconds",
            StopReason::RequestsDone => "requests_done",
            StopReason::DataExhausted => "data_exhausted",
            StopReason::ErrorLimit => "error_limit",
            StopReason::OverSaturated => "over_saturated",
            StopReason::Interrupted => "interrupted",
            StopReason::Precise => "precise",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The measurement window of one benchmark, in run-clock nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// Opens (the end of the warmup; the benchmark's start without one).
    pub open: Nanos,
    /// Closes (the start of the cooldown; the end of sending without one). Rates are taken
    /// over `[open, close]`.
    pub close: Nanos,
    /// Whether a cooldown closed the window. Without one no request is cooldown, whenever it
    /// was sent.
    pub cooldown: bool,
}

impl Window {
    /// The rule, for a window that may still be moving (the scheduler classifies records as
    /// they arrive): `open` is `Nanos::MAX` while a count warmup has not opened it, `close`
    /// `None` when no cooldown closes it (or not yet).
    #[inline]
    pub fn classify(open: Nanos, close: Option<Nanos>, dispatched: Nanos, end: Nanos) -> Phase {
        if end < open {
            Phase::Warmup
        } else if close.is_some_and(|c| dispatched > c) {
            Phase::Cooldown
        } else {
            Phase::Measured
        }
    }

    /// The phase of a request sent at `dispatched` that ended at `end`.
    #[inline]
    pub fn phase(&self, dispatched: Nanos, end: Nanos) -> Phase {
        Self::classify(
            self.open,
            self.cooldown.then_some(self.close),
            dispatched,
            end,
        )
    }

    /// Whether instant `t` falls inside `[open, close]`.
    #[inline]
    pub fn contains(&self, t: Nanos) -> bool {
        t >= self.open && t <= self.close
    }

    /// The part of `[start, end]` inside the window, if they meet.
    #[inline]
    pub fn clip(&self, start: Nanos, end: Nanos) -> Option<(Nanos, Nanos)> {
        let (a, b) = (start.max(self.open), end.min(self.close));
        (b >= a).then_some((a, b))
    }

    /// Length in nanoseconds.
    pub fn nanos(&self) -> Nanos {
        self.close.saturating_sub(self.open)
    }

    /// Length in seconds.
    pub fn secs(&self) -> f64 {
        self.nanos() as f64 / 1e9
    }

    /// `count` per second of the window (0 for an empty window).
    pub fn per_s(&self, count: f64) -> f64 {
        if self.nanos() > 0 {
            count / self.secs()
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_places_requests() {
        let w = Window {
            open: 100,
            close: 200,
            cooldown: true,
        };
        assert_eq!(w.phase(0, 99), Phase::Warmup);
        assert_eq!(w.phase(0, 100), Phase::Measured);
        assert_eq!(w.phase(200, 300), Phase::Measured);
        assert_eq!(w.phase(201, 300), Phase::Cooldown);
    }

    #[test]
    fn without_a_cooldown_nothing_is_cooldown() {
        // A request that got its slot before the deadline but was written just after it is
        // measured, not "excluded_cooldown" (issue 13, defect 8).
        let w = Window {
            open: 0,
            close: 200,
            cooldown: false,
        };
        assert_eq!(w.phase(201, 300), Phase::Measured);
        assert_eq!(Window::classify(Nanos::MAX, None, 0, 5), Phase::Warmup);
    }
}
