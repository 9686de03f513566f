//! How sure a benchmark's headline figures are: 95% intervals by batch means over time
//! (docs/metrics.md, "Intervals").
//!
//! The requests of a benchmark are not independent: a slow step slows every sequence in it, a
//! burst queues the requests after it. Batch means handle that: the span the figures describe
//! (the steady state, else the measurement window) is cut into `k` equal batches, each at least
//! one fill time long so that neighbouring batches share little; a figure is computed in every
//! batch, and the spread of the `k` batch values gives its standard error. The interval is the
//! figure `± t(0.975, k - 1) × sd / √k`, Student's t for the few batches. Requests are
//! placed in batches by when they ended (throughput) or were sent (latencies, whose `k` batches
//! span the span less its last fill time: a request sent later has mostly not ended when the
//! span closes, so its batch would hold only the fast ones). A percentile
//! `p` gets an interval only when every batch holds at least `2 / (1 - p)` values, so that a
//! batch's percentile is more than its maximum.

use serde::{Deserialize, Serialize};

pub use bench_core::Interval;
use bench_core::Nanos;

use crate::figures::hist::Dist;
use crate::figures::options::Metric;

/// Most batches.
pub const MAX_BATCHES: usize = 10;
/// Fewest batches an interval is computed from.
pub const MIN_BATCHES: usize = 3;
/// The confidence level.
pub const LEVEL: f64 = 0.95;

/// The latency metrics with intervals, and the statistics given one.
pub const METRICS: [Metric; 4] = [Metric::Ttft, Metric::Itl, Metric::Tpot, Metric::E2el];
/// `(name, percentile)`: the statistics of each metric given an interval.
pub const STATS: [(&str, f64); 3] = [("median", 50.0), ("p90", 90.0), ("p99", 99.0)];

/// A metric's intervals (milliseconds), each absent when too few values fell in a batch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricIntervals {
    /// Of the median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median: Option<Interval>,
    /// Of the 90th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<Interval>,
    /// Of the 99th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<Interval>,
}

/// The 95% intervals of one benchmark's headline figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Intervals {
    /// `batch_means`.
    pub method: String,
    /// The confidence level, 0.95.
    pub level: f64,
    /// How many batches.
    pub batches: u32,
    /// Each batch's length, seconds.
    pub batch_s: f64,
    /// Of `rates.requests_per_s`.
    pub requests_per_s: Interval,
    /// Of `rates.output_tokens_per_s`.
    pub output_tokens_per_s: Interval,
    /// Of `ttft_ms`, `itl_ms`, `tpot_ms` and `e2el_ms`, by their JSON key.
    pub metrics: std::collections::BTreeMap<String, MetricIntervals>,
}

impl MetricIntervals {
    /// The interval of percentile `p` (50, 90 or 99), if it has one.
    pub fn of(&self, p: f64) -> Option<Interval> {
        let [median, p90, p99] = STATS.map(|(_, q)| q == p);
        if median {
            self.median
        } else if p90 {
            self.p90
        } else if p99 {
            self.p99
        } else {
            None
        }
    }
}

impl Intervals {
    /// The interval of percentile `p` of metric `m` (ms), if it has one.
    pub fn percentile(&self, m: Metric, p: f64) -> Option<Interval> {
        self.metrics.get(m.json_key())?.of(p)
    }
}

/// Whether percentile `p` of metric `m` is one the method gives an interval ([`METRICS`] x
/// [`STATS`]).
pub fn has_method(m: Metric, p: f64) -> bool {
    METRICS.contains(&m) && STATS.iter().any(|&(_, q)| q == p)
}

pub(crate) use bench_core::t975;

/// The fewest values a batch needs for an interval of percentile `p`: `2 / (1 - p)`.
pub(crate) fn needs(p: f64) -> u64 {
    (2.0 / (1.0 - p / 100.0) - 1e-9).ceil() as u64
}

/// `point ± t × sd(values) / √k`, the lower end at least 0 (every figure given an interval is a
/// rate or a latency, never negative).
pub(crate) fn around(point: f64, values: &[f64]) -> Interval {
    widened(point, values, 0.0)
}

/// [`around`] with the standard error's square widened by `resolution`: the variance a figure
/// has whatever its batches say. A rate counted over a span is known only to one request in
/// it (where the count's edges fall: a uniform error of variance `1 / 12` request squared),
/// and batches that all held the same count, as regular arrivals on a steady server give,
/// would otherwise state an interval of zero width.
pub(crate) fn widened(point: f64, values: &[f64], resolution: f64) -> Interval {
    let k = values.len() as f64;
    let mean = values.iter().sum::<f64>() / k;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1.0);
    let half = t975(values.len() - 1) * (var / k + resolution).sqrt();
    Interval {
        low: (point - half).max(0.0),
        high: point + half,
    }
}

/// The batches of one benchmark, filled request by request.
#[derive(Debug)]
pub(crate) struct Batches {
    from: Nanos,
    width: Nanos,
    /// The latencies' batch length: their span ends one fill time before the end (a request
    /// sent later has mostly not ended by then, and only its fast fellows would count).
    sent_width: Nanos,
    /// Per batch: completed requests that ended in it, their output tokens.
    ended: Vec<(f64, f64)>,
    /// Per batch and metric of [`METRICS`]: the values of the requests sent in it.
    dists: Vec<[Dist; 4]>,
    /// Per latency batch (by send time), Little's law's terms for a closed loop: the time
    /// spent in flight within the batch (ns, clipped to it), and of the requests sent in it
    /// the completed ones, their output tokens, and the latencies (s) of every finished one.
    little: Vec<Little>,
    /// How many times the values an interval needs ([`needs`]) a latency batch must hold: 1
    /// for a report; more for `--precision`'s confirmation ([`Batches::spare`]).
    need_factor: f64,
}

/// Little's law's terms of one batch ([`Batches::sent`], [`Batches::in_flight`]).
#[derive(Debug, Clone, Copy, Default)]
struct Little {
    busy_ns: f64,
    completed: f64,
    tokens: f64,
    latency_s: f64,
}

impl Little {
    /// `L × completed / latency`, `L` the mean in flight over a batch of `width` ns: the
    /// closed loop's completion rate over the batch, as [`bench_core::Window::steady_rates`]
    /// reads it over the window (`None` with nothing finished).
    fn rate(&self, width: Nanos) -> Option<f64> {
        let in_flight = self.busy_ns / width as f64;
        (self.latency_s > 0.0 && self.completed > 0.0)
            .then(|| in_flight * self.completed / self.latency_s)
    }
}

impl Batches {
    /// Batches over `[from, to]`, each at least `fill` long (at most [`MAX_BATCHES`]); `None`
    /// when fewer than [`MIN_BATCHES`] fit.
    pub(crate) fn new(from: Nanos, to: Nanos, fill: Nanos) -> Option<Self> {
        let span = to.checked_sub(from).filter(|&s| s > 0)?;
        let k = (span / fill.max(1)).min(MAX_BATCHES as u64) as usize;
        (k >= MIN_BATCHES).then(|| Self {
            from,
            width: span / k as u64,
            sent_width: (span.saturating_sub(fill) / k as u64).max(1),
            ended: vec![(0.0, 0.0); k],
            dists: (0..k).map(|_| Default::default()).collect(),
            little: vec![Little::default(); k],
            need_factor: 1.0,
        })
    }

    /// These batches asking each latency batch for `factor` times the values an interval
    /// needs (at least 1): a confirmation's margin against the drain's moving the batches.
    pub(crate) fn spare(mut self, factor: f64) -> Self {
        self.need_factor = factor.max(1.0);
        self
    }

    fn index(&self, t: Nanos, width: Nanos) -> Option<usize> {
        let i = (t.checked_sub(self.from)? / width) as usize;
        (i < self.ended.len()).then_some(i)
    }

    /// A completed request that ended at `end` with `tokens` output tokens.
    pub(crate) fn ended(&mut self, end: Nanos, tokens: u32) {
        if let Some(i) = self.index(end, self.width) {
            self.ended[i].0 += 1.0;
            self.ended[i].1 += f64::from(tokens);
        }
    }

    /// A measured request, completed or not, in flight from `sent` to `end` with `tokens`
    /// output tokens: Little's law's terms of the batch it was sent in, and its time in flight
    /// within each batch.
    pub(crate) fn sent(&mut self, sent: Nanos, end: Nanos, completed: bool, tokens: u32) {
        let w = self.sent_width;
        if let Some(i) = self.index(sent, w) {
            let l = &mut self.little[i];
            l.latency_s += end.saturating_sub(sent) as f64 / 1e9;
            if completed {
                l.completed += 1.0;
                l.tokens += f64::from(tokens);
            }
        }
        let (from, k) = (self.from, self.little.len() as u64);
        let first = sent.saturating_sub(from) / w;
        let last = (end.saturating_sub(from) / w).min(k.saturating_sub(1));
        for i in first..=last {
            let (a, b) = (from + i * w, from + (i + 1) * w);
            let (lo, hi) = (sent.max(a), end.min(b));
            if hi > lo {
                self.little[i as usize].busy_ns += (hi - lo) as f64;
            }
        }
    }

    /// A value (microseconds) of metric `m` of a request sent at `sent`.
    pub(crate) fn value(&mut self, sent: Nanos, m: Metric, us: f64) {
        let Some(j) = METRICS.iter().position(|&x| x == m) else {
            return;
        };
        if let Some(i) = self.index(sent, self.sent_width) {
            self.dists[i][j].record_n(us, 1);
        }
    }

    /// The throughputs' batch values: per batch, Little's law's completion rate and its
    /// output tokens per second when `little` (a closed loop read by Little's law), else the
    /// completions that ended in it and their tokens, per second.
    fn throughputs(&self, little: bool) -> (Vec<f64>, Vec<f64>, bool) {
        if little {
            let rates: Option<Vec<(f64, f64)>> = self
                .little
                .iter()
                .map(|l| {
                    let r = l.rate(self.sent_width)?;
                    Some((r, r * l.tokens / l.completed))
                })
                .collect();
            if let Some(rates) = rates {
                let (r, t) = rates.into_iter().unzip();
                return (r, t, false);
            }
        }
        let secs = self.width as f64 / 1e9;
        let (r, t) = self.ended.iter().map(|b| (b.0 / secs, b.1 / secs)).unzip();
        (r, t, true)
    }

    /// The intervals around the pooled figures: `rates` (requests/s, output tokens/s, and
    /// whether they are a closed loop's Little's-law rates) and `pooled`, the percentile (ms)
    /// of a metric of [`METRICS`] over every request.
    pub(crate) fn finish(
        &self,
        rates: (f64, f64, bool),
        pooled: impl Fn(Metric, f64) -> Option<f64>,
    ) -> Intervals {
        let secs = self.width as f64 / 1e9;
        let (requests, tokens, counted) = self.throughputs(rates.2);
        // A counted rate's resolution: one request over the batches' span (and its tokens).
        let span = secs * self.ended.len() as f64;
        let per_request = if rates.0 > 0.0 {
            rates.1 / rates.0
        } else {
            0.0
        };
        let resolution = |size: f64| {
            if counted {
                (size / span).powi(2) / 12.0
            } else {
                0.0
            }
        };
        let mut metrics = std::collections::BTreeMap::new();
        for (j, &m) in METRICS.iter().enumerate() {
            let stat = |p: f64| -> Option<Interval> {
                let need = (needs(p) as f64 * self.need_factor).ceil() as u64;
                let per_batch: Option<Vec<f64>> = self
                    .dists
                    .iter()
                    .map(|d| {
                        let d = &d[j];
                        (d.count() >= need).then(|| d.percentile_us(p).map(|v| v / 1e3))?
                    })
                    .collect();
                Some(around(pooled(m, p)?, &per_batch?))
            };
            let [median, p90, p99] = STATS.map(|(_, p)| stat(p));
            metrics.insert(
                m.json_key().to_string(),
                MetricIntervals { median, p90, p99 },
            );
        }
        Intervals {
            method: "batch_means".into(),
            level: LEVEL,
            batches: self.ended.len() as u32,
            batch_s: secs,
            requests_per_s: widened(rates.0, &requests, resolution(1.0)),
            output_tokens_per_s: widened(rates.1, &tokens, resolution(per_request)),
            metrics,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn t_quantiles_match_the_table_and_the_expansion_joins_it() {
        assert_eq!(t975(1), 12.706);
        assert_eq!(t975(9), 2.262);
        assert!((t975(31) - 2.040).abs() < 1e-3, "{}", t975(31));
        assert!((t975(120) - 1.980).abs() < 1e-3, "{}", t975(120));
    }

    #[test]
    fn batches_are_at_least_a_fill_long_and_at_least_three() {
        assert!(Batches::new(0, 5 * S, 2 * S).is_none());
        let b = Batches::new(0, 30 * S, 2 * S).expect("batches");
        assert_eq!(
            (b.ended.len(), b.width, b.sent_width),
            (10, 3 * S, 28 * S / 10)
        );
        let b = Batches::new(S, 7 * S, 2 * S).expect("batches");
        assert_eq!(
            (b.ended.len(), b.width, b.sent_width),
            (3, 2 * S, 4 * S / 3)
        );
    }

    #[test]
    fn the_interval_is_students_around_the_pooled_figure() {
        let mut b = Batches::new(0, 4 * S, S).expect("batches");
        // 10, 12, 8, 10 completions per 1 s batch: mean 10, sd 1.633, se 0.816, t(3) 3.182.
        for (i, n) in [10u64, 12, 8, 10].into_iter().enumerate() {
            for _ in 0..n {
                b.ended(i as u64 * S + S / 2, 2);
            }
        }
        let iv = b.finish((10.0, 20.0, false), |_, _| None);
        // Widened by the count's resolution: one request over the 4 s span, 2 tokens each.
        let half = 3.182 * (8.0f64 / 3.0 / 4.0 + 1.0 / 16.0 / 12.0).sqrt();
        assert!(
            (iv.requests_per_s.low - (10.0 - half)).abs() < 1e-9,
            "{iv:?}"
        );
        assert!((iv.output_tokens_per_s.high - (20.0 + 2.0 * half)).abs() < 1e-9);
        // Batches that all held the same count still state the count's resolution.
        let mut b = Batches::new(0, 4 * S, S).expect("batches");
        for i in 0..4u64 {
            for _ in 0..10 {
                b.ended(i * S + S / 2, 2);
            }
        }
        let iv = b.finish((10.0, 20.0, false), |_, _| None);
        let half = 3.182 * (1.0f64 / 16.0 / 12.0).sqrt();
        assert!(
            (iv.requests_per_s.high - (10.0 + half)).abs() < 1e-9,
            "{iv:?}"
        );
        assert_eq!(iv.metrics["ttft_ms"].median, None);
    }

    #[test]
    fn a_percentile_needs_enough_values_in_every_batch() {
        // Latencies by when they were sent, over [0, 3 s - 1 s]: batches of 2/3 s.
        let mut b = Batches::new(0, 3 * S, S).expect("batches");
        for i in 0..3u64 {
            for v in 0..20u64 {
                b.value(
                    i * S * 2 / 3 + 1,
                    Metric::Ttft,
                    1000.0 * (10 + v + i) as f64,
                );
            }
        }
        // Sent in the last fill time: in no batch.
        b.value(2 * S + 1, Metric::Ttft, 1e9);
        let iv = b.finish((0.0, 0.0, false), |_, p| {
            Some(if p == 50.0 { 20.0 } else { 28.0 })
        });
        let ttft = &iv.metrics["ttft_ms"];
        assert!(ttft.median.is_some() && ttft.p90.is_some(), "{ttft:?}");
        assert_eq!(ttft.p99, None, "20 values a batch are too few for a p99");
        let m = ttft.median.expect("median");
        assert!(m.low < 20.0 && m.high > 20.0);
    }

    #[test]
    fn a_spare_factor_asks_each_batch_for_more_values() {
        // Four TTFTs a batch: a median's minimum; a confirmation asking 1.25 times it (5)
        // states no median interval.
        let fill = |spare: f64| {
            let mut b = Batches::new(0, 3 * S, S).expect("batches").spare(spare);
            for i in 0..3u64 {
                for v in 0..4u64 {
                    b.value(i * S * 2 / 3 + 1, Metric::Ttft, 1000.0 * (10 + v) as f64);
                }
            }
            b.finish((0.0, 0.0, false), |_, _| Some(11.5)).metrics["ttft_ms"].median
        };
        assert!(fill(1.0).is_some());
        assert!(fill(0.5).is_some(), "a factor under 1 is 1");
        assert_eq!(fill(1.25), None);
    }
}
