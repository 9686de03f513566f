//! The shapes of a 95% interval (docs/metrics.md, "Intervals"). The report computes them; the
//! capacity answer, which lives here, carries them.

use serde::{Deserialize, Serialize};

/// A two-sided interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

/// The interval of a rate at which a figure crosses its limit (the knee, the SLO-limited
/// rate), requests/s offered: the highest swept rate surely below the crossing and the lowest
/// surely above it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CrossingInterval {
    /// Lower end: 0 when not even the lowest rate swept is surely below the crossing.
    pub low: f64,
    /// Upper end: `None` when no rate swept is surely above it (the crossing may lie above
    /// the sweep).
    pub high: Option<f64>,
}

/// The 95% intervals of a sweep's capacity answer, each absent when the benchmarks it rests on
/// have none (or, for the SLO, when a bound's statistic has no interval method).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CapacityIntervals {
    /// Of `max_requests_per_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests_per_s: Option<Interval>,
    /// Of the rate where median TTFT leaves its plateau (`knee_requests_per_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee_requests_per_s: Option<CrossingInterval>,
    /// Of the rate where the SLO stops holding (`slo_max_requests_per_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_max_requests_per_s: Option<CrossingInterval>,
}
