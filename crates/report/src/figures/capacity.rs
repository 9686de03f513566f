//! The capacity answer's figures: SLO figures of a benchmark, the knee of a sweep and the
//! benchmarks it is read from. Definitions: docs/profiles.md; the console blocks are
//! [`crate::views::capacity_view`]'s.

use bench_core::{kept_up, Slo, SloMetric, SloStat};

use crate::figures::model::{BenchmarkReport, RunReport};
use crate::figures::options::Metric;

/// The knee is the highest offered rate below the first whose median TTFT exceeds this many
/// times its value at the lowest offered rate, plus [`KNEE_SLACK_MS`].
pub const KNEE_FACTOR: f64 = 2.0;
/// Allowance for timer and scheduling jitter in the knee's threshold, milliseconds.
pub const KNEE_SLACK_MS: f64 = 10.0;

/// The report metric an SLO metric names.
pub fn slo_metric(m: SloMetric) -> Metric {
    match m {
        SloMetric::Ttft => Metric::Ttft,
        SloMetric::Ttfo => Metric::Ttfo,
        SloMetric::Itl => Metric::Itl,
        SloMetric::Tpot => Metric::Tpot,
        SloMetric::E2el => Metric::E2el,
        SloMetric::TokenLatency => Metric::TokenLatency,
        SloMetric::TtftFromScheduled => Metric::TtftFromScheduled,
        SloMetric::E2elFromScheduled => Metric::E2elFromScheduled,
    }
}

impl BenchmarkReport {
    /// The figure an SLO bound names, in milliseconds (`None`: no request to measure).
    pub fn slo_value(&self, metric: SloMetric, stat: SloStat) -> Option<f64> {
        let m = slo_metric(metric);
        match stat.percentile() {
            None => Some(self.metric(m)).filter(|s| s.count > 0).map(|s| s.mean),
            Some(p) => self.percentile_ms(m, p),
        }
    }

    /// Whether this benchmark meets every bound of `slo`.
    pub fn meets(&self, slo: &Slo) -> bool {
        slo.is_met(|m, s| self.slo_value(m, s))
    }

    /// Whether the benchmark is an open-loop rate (drawn as a curve), not a probe.
    pub fn is_open_loop(&self) -> bool {
        self.strategy.target_rate().is_some()
    }
}

/// The open-loop benchmarks of `run` as (offered rate, benchmark), ascending; of a load the
/// sweep ran again longer (docs/profiles.md, "Kept up"), only the last run, which judges it.
pub fn open_loop(run: &RunReport) -> Vec<(f64, &BenchmarkReport)> {
    let bs = &run.benchmarks;
    let mut v: Vec<(f64, &BenchmarkReport)> = bs
        .iter()
        .enumerate()
        .filter(|(i, b)| !bs[i + 1..].iter().any(|l| l.strategy == b.strategy))
        .filter_map(|(_, b)| Some((b.strategy.target_rate()?, b)))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// The knee of a sweep: the highest offered rate below the first one whose median TTFT exceeds
/// `KNEE_FACTOR x (median TTFT at the lowest offered rate) + KNEE_SLACK_MS`, or that did not
/// keep up ([`bench_core::kept_up`]): requests have started to queue there (latency has left
/// its low-load plateau), or the rate was past what the server completes (a short benchmark
/// can end before the queue of a rate just past capacity has doubled the median TTFT). The median, not a tail
/// percentile, so that one slow request does not move it; past capacity the queue grows
/// through the whole benchmark and the median with it. `None` without open-loop rates or TTFT
/// at the lowest, or when no rate left the plateau (the knee lies above the sweep).
pub fn knee(run: &RunReport) -> Option<f64> {
    let rates = open_loop(run);
    let base = rates.first()?.1.percentile_ms(Metric::Ttft, 50.0)?;
    let threshold = knee_threshold_ms(base);
    let mut last = None;
    for (rate, b) in &rates {
        match b.percentile_ms(Metric::Ttft, 50.0) {
            Some(v) if v <= threshold && kept_up(*rate, b.rates.requests_per_s) => {
                last = Some(*rate)
            }
            _ => return last,
        }
    }
    None
}

/// The median TTFT above which a rate is past the knee, given the low-load median.
pub fn knee_threshold_ms(base_ms: f64) -> f64 {
    KNEE_FACTOR * base_ms + KNEE_SLACK_MS
}
