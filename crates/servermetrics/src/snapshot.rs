//! One scrape, folded: every metric name maps to one value (or one histogram), whatever labels
//! its series carried.
//!
//! Folding rule (documented in `docs/metrics.md`): series of one name that differ only in
//! labels (`model_name`, `engine`, ...) are **summed** (counters, histograms by bucket,
//! gauges), except ratio gauges (KV usage, hit rates, DCGM's `_UTIL` and `_ACTIVE`, names ending `_perc`, `_ratio`, `_usage`,
//! `_rate`), which are **averaged**. Histogram buckets are keyed by `le`. Counters' `_created`
//! samples and summaries' quantile samples are dropped; a summary keeps `_sum` and `_count` as
//! counters. NaN samples are skipped. A series carrying a label of [`KEPT_LABELS`] (`position`)
//! is folded apart under `name{position="0"}`: its values are different figures, not copies of
//! one.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::names::{is_ratio_gauge, KEPT_LABELS};
use crate::parse::{Exposition, Kind};

/// One scrape on the run clock (the summaries' input).
#[derive(Debug, Clone)]
pub struct Timed {
    /// When it was taken.
    pub at: bench_core::Nanos,
    /// What it read.
    pub snap: Snapshot,
    /// Taken at a benchmark's end (after the drain) rather than on the interval; used for
    /// counter deltas, not for gauge means.
    pub boundary: bool,
}

/// A folded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Folded {
    Gauge { value: f64, series: u32 },
    Counter { value: f64, series: u32 },
    Histogram(Hist),
}

/// A cumulative histogram: `(le, count of values <= le)` ascending, the last `le` = +Inf.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hist {
    pub buckets: Vec<(f64, f64)>,
    pub sum: f64,
    pub count: f64,
}

/// Every metric of one scrape.
pub type Snapshot = BTreeMap<String, Folded>;

/// Folds a parsed exposition.
pub fn fold(e: &Exposition) -> Snapshot {
    let mut out = Snapshot::new();
    let mut ratio_series: BTreeMap<String, u32> = BTreeMap::new();
    let mut hists: BTreeMap<String, (BTreeMap<OrdF64, f64>, f64, f64)> = BTreeMap::new();
    for s in &e.samples {
        if s.value.is_nan() {
            continue;
        }
        let (kind, family) = e.kind_of(&s.name);
        match kind {
            Kind::Histogram => {
                let h = hists.entry(family.to_string()).or_default();
                if s.name.ends_with("_bucket") {
                    let Some(le) = s.labels.iter().find(|(k, _)| k == "le") else {
                        continue;
                    };
                    let Some(le) = le_value(&le.1) else { continue };
                    *h.0.entry(OrdF64(le)).or_default() += s.value;
                } else if s.name.ends_with("_sum") {
                    h.1 += s.value;
                } else if s.name.ends_with("_count") {
                    h.2 += s.value;
                }
            }
            Kind::Counter | Kind::Summary => {
                if s.name.ends_with("_created") || s.labels.iter().any(|(k, _)| k == "quantile") {
                    continue;
                }
                add(&mut out, &key(&s.name, &s.labels), s.value, true);
            }
            Kind::Gauge | Kind::Untyped => {
                let key = key(&s.name, &s.labels);
                if is_ratio_gauge(&s.name) {
                    *ratio_series.entry(key.to_string()).or_default() += 1;
                }
                add(&mut out, &key, s.value, false);
            }
        }
    }
    for (name, n) in ratio_series {
        if let Some(Folded::Gauge { value, .. }) = out.get_mut(&name) {
            *value /= f64::from(n);
        }
    }
    for (name, (buckets, sum, count)) in hists {
        let buckets: Vec<(f64, f64)> = buckets.into_iter().map(|(k, v)| (k.0, v)).collect();
        if buckets.is_empty() {
            continue;
        }
        out.insert(
            name,
            Folded::Histogram(Hist {
                buckets,
                sum,
                count,
            }),
        );
    }
    out
}

/// The name a series is folded under: its metric name, followed by its [`KEPT_LABELS`] as in
/// Prometheus' text (`name{position="0"}`) when it carries any.
fn key<'a>(name: &'a str, labels: &[(String, String)]) -> Cow<'a, str> {
    let kept: Vec<String> = KEPT_LABELS
        .iter()
        .filter_map(|k| {
            let (_, v) = labels.iter().find(|(l, _)| l == k)?;
            let v = v.replace('\\', "\\\\").replace('"', "\\\"");
            Some(format!("{k}=\"{v}\""))
        })
        .collect();
    if kept.is_empty() {
        Cow::Borrowed(name)
    } else {
        Cow::Owned(format!("{name}{{{}}}", kept.join(",")))
    }
}

fn add(out: &mut Snapshot, name: &str, v: f64, counter: bool) {
    let e = out.entry(name.to_string()).or_insert(if counter {
        Folded::Counter {
            value: 0.0,
            series: 0,
        }
    } else {
        Folded::Gauge {
            value: 0.0,
            series: 0,
        }
    });
    match e {
        Folded::Gauge { value, series } | Folded::Counter { value, series } => {
            *value += v;
            *series += 1;
        }
        Folded::Histogram(_) => {}
    }
}

fn le_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "inf" | "+inf" => Some(f64::INFINITY),
        _ => s.parse().ok().filter(|v: &f64| !v.is_nan()),
    }
}

/// A float with a total order (for bucket keys; NaN never gets here).
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    #[test]
    fn folds_labels_as_documented() {
        let e = parse(
            "# TYPE vllm:num_requests_running gauge\n\
             vllm:num_requests_running{engine=\"0\"} 3\nvllm:num_requests_running{engine=\"1\"} 4\n\
             # TYPE vllm:kv_cache_usage_perc gauge\n\
             vllm:kv_cache_usage_perc{engine=\"0\"} 0.2\nvllm:kv_cache_usage_perc{engine=\"1\"} 0.4\n\
             # TYPE c counter\nc_total{a=\"x\"} 5\nc_total{a=\"y\"} 6\nc_created 1e9\n\
             # TYPE h histogram\n\
             h_bucket{le=\"1\",a=\"x\"} 1\nh_bucket{le=\"1\",a=\"y\"} 2\n\
             h_bucket{le=\"+Inf\",a=\"x\"} 3\nh_bucket{le=\"+Inf\",a=\"y\"} 4\n\
             h_sum{a=\"x\"} 1.5\nh_sum{a=\"y\"} 2.5\nh_count{a=\"x\"} 3\nh_count{a=\"y\"} 4\n\
             # TYPE s summary\ns{quantile=\"0.5\"} 9\ns_sum 2\ns_count 1\n\
             odd 7\n",
        )
        .expect("valid");
        let f = fold(&e);
        assert_eq!(
            f["vllm:num_requests_running"],
            Folded::Gauge {
                value: 7.0,
                series: 2
            }
        );
        match &f["vllm:kv_cache_usage_perc"] {
            Folded::Gauge { value, .. } => assert!((value - 0.3).abs() < 1e-12),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            f["c_total"],
            Folded::Counter {
                value: 11.0,
                series: 2
            }
        );
        assert!(!f.contains_key("c_created"));
        assert_eq!(
            f["h"],
            Folded::Histogram(Hist {
                buckets: vec![(1.0, 3.0), (f64::INFINITY, 7.0)],
                sum: 4.0,
                count: 7.0
            })
        );
        assert!(!f.contains_key("s"));
        assert!(matches!(f["s_sum"], Folded::Counter { value, .. } if value == 2.0));
        assert!(matches!(f["odd"], Folded::Gauge { value, .. } if value == 7.0));
    }

    /// vLLM's accepted tokens per draft position: one counter name, a `position` label per
    /// figure, other labels (engines) summed within each position.
    #[test]
    fn kept_labels_fold_apart() {
        let e = parse(
            "# TYPE p counter\n\
             p_total{engine=\"0\",position=\"0\"} 5\np_total{engine=\"1\",position=\"0\"} 2\n\
             p_total{engine=\"0\",position=\"1\"} 3\n\
             # TYPE sglang:spec_accept_length gauge\n\
             sglang:spec_accept_length{tp_rank=\"0\"} 3\nsglang:spec_accept_length{tp_rank=\"1\"} 2\n",
        )
        .expect("valid");
        let f = fold(&e);
        let c = |v: f64, series: u32| Folded::Counter { value: v, series };
        assert_eq!(f["p_total{position=\"0\"}"], c(7.0, 2));
        assert_eq!(f["p_total{position=\"1\"}"], c(3.0, 1));
        assert!(!f.contains_key("p_total"));
        assert_eq!(
            f["sglang:spec_accept_length"],
            Folded::Gauge {
                value: 2.5,
                series: 2
            },
            "a mean per rank, averaged"
        );
    }
}
