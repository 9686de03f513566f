//! Latency distributions: an HdrHistogram in microseconds (3 significant figures) plus exact
//! count, mean, standard deviation, minimum and maximum.

use std::collections::BTreeMap;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::figures::options::percentile_key;
use crate::Error;

/// Significant figures of every histogram.
pub const SIGNIFICANT_FIGURES: u8 = 3;

/// One latency distribution. Values are recorded in microseconds (fractions kept in the exact
/// moments, rounded to the nearest microsecond in the histogram).
#[derive(Debug, Clone)]
pub struct Dist {
    hist: Histogram<u64>,
    count: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
}

impl Default for Dist {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for Dist {
    fn eq(&self, other: &Self) -> bool {
        self.hist == other.hist
            && self.count == other.count
            && self.min == other.min
            && self.max == other.max
    }
}

fn new_hist() -> Histogram<u64> {
    // Auto-resizing from 1 µs up; only sigfig > 5 can fail, and 3 is a constant.
    Histogram::new(SIGNIFICANT_FIGURES).expect("3 significant figures is a valid precision")
}

impl Dist {
    /// An empty distribution.
    pub fn new() -> Self {
        Self {
            hist: new_hist(),
            count: 0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    /// Records `value_us` (microseconds) `weight` times. Negative and non-finite values are
    /// clamped to 0 (they cannot come from a monotonic clock).
    pub fn record_n(&mut self, value_us: f64, weight: u64) {
        if weight == 0 {
            return;
        }
        let v = if value_us.is_finite() && value_us > 0.0 {
            value_us
        } else {
            0.0
        };
        let _ = self.hist.record_n(v.round() as u64, weight);
        // Weighted Welford update.
        let n0 = self.count as f64;
        let w = weight as f64;
        let n = n0 + w;
        let delta = v - self.mean;
        self.mean += delta * w / n;
        self.m2 += delta * delta * n0 * w / n;
        self.count += weight;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Records `value_us` once.
    pub fn record(&mut self, value_us: f64) {
        self.record_n(value_us, 1);
    }

    /// Adds every value of `other` (equal to having recorded them all here).
    pub fn merge(&mut self, other: &Dist) {
        if other.count == 0 {
            return;
        }
        let _ = self.hist.add(&other.hist);
        let n0 = self.count as f64;
        let n1 = other.count as f64;
        let n = n0 + n1;
        let delta = other.mean - self.mean;
        self.mean += delta * n1 / n;
        self.m2 += other.m2 + delta * delta * n0 * n1 / n;
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The histogram (microseconds).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// Percentile `p` (0..=100) in microseconds from the histogram, clamped to the exact
    /// minimum and maximum (so a single value, the minimum and the maximum are exact).
    pub fn percentile_us(&self, p: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let q = (p / 100.0).clamp(0.0, 1.0);
        let v = self.hist.value_at_quantile(q) as f64;
        Some(v.clamp(self.min, self.max))
    }

    /// The summary in milliseconds, with the median and `percentiles`.
    pub fn summary(&self, percentiles: &[f64]) -> MetricSummary {
        if self.count == 0 {
            return MetricSummary::default();
        }
        let ms = |us: f64| us / 1000.0;
        let mut ps = BTreeMap::new();
        for &p in percentiles {
            if let Some(v) = self.percentile_us(p) {
                ps.insert(percentile_key(p), ms(v));
            }
        }
        let var = (self.m2 / self.count as f64).max(0.0);
        MetricSummary {
            count: self.count,
            mean: ms(self.mean),
            median: self.percentile_us(50.0).map(ms).unwrap_or(0.0),
            min: ms(self.min),
            max: ms(self.max),
            stdev: ms(var.sqrt()),
            percentiles: ps,
        }
    }

    /// The histogram as base64 of HdrHistogram's compressed V2 encoding (what
    /// `HistogramLogWriter` and every HdrHistogram implementation read).
    pub fn encode(&self) -> String {
        let mut buf = Vec::new();
        // Serializing into a Vec cannot fail for histograms of this size.
        if V2DeflateSerializer::new()
            .serialize(&self.hist, &mut buf)
            .is_err()
        {
            return String::new();
        }
        base64::engine::general_purpose::STANDARD.encode(buf)
    }

    /// Rebuilds a distribution from a saved summary and its encoded histogram, so saved runs
    /// can be merged and cut at other percentiles.
    pub fn decode(summary: &MetricSummary, encoded: &str) -> Result<Dist, Error> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|e| Error::Histogram(format!("base64: {e}")))?;
        let hist: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| Error::Histogram(format!("{e:?}")))?;
        let count = hist.len();
        let mut d = Dist::new();
        let _ = d.hist.add(&hist);
        if count == 0 {
            return Ok(d);
        }
        d.count = count;
        d.mean = summary.mean * 1000.0;
        let sd = summary.stdev * 1000.0;
        d.m2 = sd * sd * count as f64;
        d.min = summary.min * 1000.0;
        d.max = summary.max * 1000.0;
        Ok(d)
    }
}

/// Summary of one latency metric, in milliseconds. `stdev` is the population standard
/// deviation; `mean`, `min`, `max` and `stdev` are exact, the median and percentiles come
/// from the histogram (within 0.1 %) clamped to `[min, max]`. Empty when `count` is 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricSummary {
    /// Values recorded.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// 50th percentile.
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Population standard deviation.
    pub stdev: f64,
    /// Percentiles by key (`p50`, `p99`, `p99.9`).
    pub percentiles: BTreeMap<String, f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Nearest-rank percentile of a sorted vector: the smallest value with at least `p`% of
    /// values at or below it.
    fn oracle(sorted: &[u64], p: f64) -> u64 {
        let n = sorted.len();
        let rank = ((p / 100.0) * n as f64).ceil().max(1.0) as usize;
        sorted[rank.min(n) - 1]
    }

    proptest! {
        #[test]
        fn percentiles_match_sorted_oracle(
            values in proptest::collection::vec(0u64..50_000_000, 1..400),
            p in 0.1f64..100.0,
        ) {
            let mut d = Dist::new();
            for &v in &values {
                d.record(v as f64);
            }
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let exact = oracle(&sorted, p) as f64;
            let got = d.percentile_us(p).expect("non-empty");
            // 3 significant figures: within 0.1% (plus the 1 µs unit).
            let tol = exact * 0.001 + 1.0;
            prop_assert!((got - exact).abs() <= tol, "p{} got {} exact {}", p, got, exact);
            let s = d.summary(&[]);
            let mean = values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64;
            prop_assert!((s.mean * 1000.0 - mean).abs() <= 1e-6 * mean.max(1.0));
            prop_assert!((s.min * 1000.0 - sorted[0] as f64).abs() < 1e-6);
            prop_assert!((s.max * 1000.0 - sorted[sorted.len() - 1] as f64).abs() < 1e-6);
            let var = values.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>()
                / values.len() as f64;
            prop_assert!((s.stdev * 1000.0 - var.sqrt()).abs() <= 1e-6 * var.sqrt().max(1.0));
        }

        #[test]
        fn merge_equals_single_recording(
            a in proptest::collection::vec(0u64..10_000_000, 0..200),
            b in proptest::collection::vec(0u64..10_000_000, 0..200),
        ) {
            let mut one = Dist::new();
            let mut da = Dist::new();
            let mut db = Dist::new();
            for &v in &a { one.record(v as f64); da.record(v as f64); }
            for &v in &b { one.record(v as f64); db.record(v as f64); }
            da.merge(&db);
            prop_assert_eq!(da.histogram(), one.histogram());
            let (x, y) = (da.summary(&[50.0, 90.0, 99.0]), one.summary(&[50.0, 90.0, 99.0]));
            prop_assert_eq!(x.count, y.count);
            prop_assert_eq!(&x.percentiles, &y.percentiles);
            prop_assert_eq!(x.median, y.median);
            prop_assert_eq!(x.min, y.min);
            prop_assert_eq!(x.max, y.max);
            prop_assert!((x.mean - y.mean).abs() <= 1e-9 * y.mean.abs().max(1.0));
            prop_assert!((x.stdev - y.stdev).abs() <= 1e-6 * y.stdev.abs().max(1.0));
        }
    }

    #[test]
    fn weighted_recording_equals_repeats() {
        let mut a = Dist::new();
        let mut b = Dist::new();
        a.record_n(1500.0, 3);
        a.record_n(10.0, 2);
        for v in [1500.0, 1500.0, 1500.0, 10.0, 10.0] {
            b.record(v);
        }
        assert_eq!(a, b);
        assert_eq!(a.summary(&[99.0]), b.summary(&[99.0]));
    }

    #[test]
    fn encode_decode_round_trip() {
        let mut d = Dist::new();
        for v in [5.0, 123_480.0, 7_000_000.0, 42.0] {
            d.record(v);
        }
        let s = d.summary(&[50.0, 99.0]);
        let back = Dist::decode(&s, &d.encode()).expect("decodes");
        assert_eq!(back.histogram(), d.histogram());
        assert_eq!(back.summary(&[50.0, 99.0]).percentiles, s.percentiles);
        assert!(Dist::decode(&s, "not base64!").is_err());
        assert!(Dist::decode(&s, "aGVsbG8=").is_err());
    }

    #[test]
    fn single_value_is_exact() {
        let mut d = Dist::new();
        d.record(123_480.0);
        let s = d.summary(&[99.0]);
        assert_eq!(s.median, 123.48);
        assert_eq!(s.percentiles["p99"], 123.48);
        assert_eq!(s.stdev, 0.0);
    }
}
