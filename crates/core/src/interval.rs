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

/// What a rate's intervals say of it against a limit (docs/metrics.md, "Intervals").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sure {
    /// Every figure's interval lies within its limit.
    Pass,
    /// Some interval straddles its limit, or is missing.
    Unsure,
    /// Some figure's interval lies wholly beyond its limit (or the figure is missing, as it
    /// fails without intervals too).
    Fail,
}

impl Sure {
    /// The verdicts of several limits on one rate: a failure wins, then doubt.
    pub fn all(verdicts: impl IntoIterator<Item = Sure>) -> Sure {
        verdicts.into_iter().fold(Sure::Pass, |a, v| match (a, v) {
            (Sure::Fail, _) | (_, Sure::Fail) => Sure::Fail,
            (Sure::Unsure, _) | (_, Sure::Unsure) => Sure::Unsure,
            _ => Sure::Pass,
        })
    }
}

/// The crossing from the verdicts of the rates, ascending: above the last of the sure passes
/// from the lowest rate (0 when the lowest is not one), below the lowest sure failure. The
/// report's intervals and the sweep's refinement of its answer both judge by this rule.
pub fn crossing(rates: &[(f64, Sure)]) -> CrossingInterval {
    let low = rates
        .iter()
        .take_while(|(_, s)| *s == Sure::Pass)
        .last()
        .map_or(0.0, |r| r.0);
    let high = rates.iter().find(|(_, s)| *s == Sure::Fail).map(|r| r.0);
    CrossingInterval { low, high }
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

/// Student's t quantile at 0.975 for `df` degrees of freedom: exact to 3 decimals for 1 to
/// 30 (the batches, the trials, the in-flight trend's batches), the Cornish-Fisher expansion beyond (within 0.001).
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if (1..=30).contains(&df) {
        return T[df - 1];
    }
    let (z, n): (f64, f64) = (1.959_964, df.max(1) as f64);
    z + (z.powi(3) + z) / (4.0 * n)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
}
