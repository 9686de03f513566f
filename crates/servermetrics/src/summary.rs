//! Per-benchmark summaries of timestamped scrapes (the report's `server_metrics`).
//!
//! - **Gauges**: over the span's window `[open, close]` (the benchmark's steady state when its
//!   latency figures have one, else its measurement window), the periodic scrapes inside it:
//!   their time-weighted mean, each scrape standing for the part of the window nearer to it
//!   than to its neighbours (so one that raced the first requests, a 0 taken as the load
//!   began, weighs the half interval it stands for, not one sample in five, and none at all
//!   when the window is the steady state), their max and their last. The time series
//!   (`series`) covers the whole benchmark, drain included.
//! - **Counters**: the delta from the *base* scrape (the last one at or before `start`) to the
//!   *end* scrape (the first one at or after `end`; bench takes one when each benchmark ends,
//!   after its drain), and that delta over `end - start` as a rate.
//! - **Histograms**: bucket deltas between the same two scrapes, their count, sum, mean, and
//!   percentiles estimated like Prometheus' `histogram_quantile` (linear inside a bucket).
//!
//! A counter or histogram that went down (the server restarted) has no delta; its entry says
//! `reset`.

use std::collections::BTreeMap;

use bench_core::Nanos;
use serde::{Deserialize, Serialize};

use crate::names::{Role, Source, SERVERS};
pub use crate::snapshot::Timed;
use crate::snapshot::{Folded, Hist};
use crate::spec::SpecDecodeSummary;

/// The server's own view of one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerMetrics {
    /// The scraped URL (without credentials).
    pub url: String,
    /// The known server whose names were found (`vllm`, `sglang`, `tgi`, `llamacpp`).
    pub server: Option<String>,
    /// Scrape interval, seconds.
    pub interval_s: f64,
    /// Periodic scrapes inside the measurement window (the gauges' sample count).
    pub scrapes: u32,
    /// Seconds from the benchmark's start to its end (the rates' denominator).
    pub duration_s: f64,
    /// The common figures, resolved through the name table.
    pub summary: ServerSummary,
    /// Every metric, keyed by its Prometheus name (labels folded).
    pub metrics: BTreeMap<String, MetricSummary>,
    /// Running / waiting / KV usage at each periodic scrape, for charts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<SeriesPoint>,
}

/// The figures every server is asked for (absent when the server does not expose them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSummary {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<GaugeSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<GaugeSummary>,
    /// Fraction 0..1 of the KV cache in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_usage: Option<GaugeSummary>,
    /// Fraction 0..1: hits / queries over the benchmark, or the mean of a hit-rate gauge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache_hit_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions: Option<CounterSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<CounterSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tokens: Option<CounterSummary>,
    /// Server-side latency distributions in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<LatencySummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_ms: Option<LatencySummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_ms: Option<LatencySummary>,
    /// Speculative decoding's acceptance over the benchmark's steady window (`crate::spec`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<SpecDecodeSummary>,
    /// Which metric each figure came from (figure key -> Prometheus name(s)).
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GaugeSummary {
    pub mean: f64,
    pub max: f64,
    pub last: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CounterSummary {
    pub delta: f64,
    pub rate_per_s: f64,
}

/// A server histogram over the benchmark, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
}

/// One metric over one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum MetricSummary {
    Gauge {
        mean: f64,
        max: f64,
        last: f64,
        samples: u32,
    },
    Counter {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rate_per_s: Option<f64>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        reset: bool,
    },
    Histogram {
        count: f64,
        sum: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mean: Option<f64>,
        /// `le` (as the server wrote it, `+Inf` last) -> observations in the benchmark.
        buckets: Vec<BucketDelta>,
        /// `p50`, `p90`, `p95`, `p99` estimated from the buckets (the metric's unit).
        percentiles: BTreeMap<String, f64>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        reset: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketDelta {
    pub le: String,
    pub count: f64,
}

/// Running, waiting and KV usage at one periodic scrape; `t_s` from the benchmark's start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    pub t_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_usage: Option<f64>,
}

const PERCENTILES: [(&str, f64); 4] = [("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)];

/// The times a summary needs, on the run clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The benchmark's first request.
    pub start: Nanos,
    /// Its end, drain included.
    pub end: Nanos,
    /// The window gauges are summarized over: the benchmark's steady state
    /// (`bench_core::Steady`) when its latency figures have one, else its measurement window.
    pub open: Nanos,
    pub close: Nanos,
}

impl Span {
    /// A benchmark without warmup or cooldown: the window is `[start, end]`.
    pub fn whole(start: Nanos, end: Nanos) -> Self {
        Self {
            start,
            end,
            open: start,
            close: end,
        }
    }
}

/// Summarizes one benchmark from the run's scrapes (in time order). `None` when no scrape
/// precedes the benchmark's end.
pub fn summarize(
    scrapes: &[Timed],
    span: Span,
    url: &str,
    interval_s: f64,
) -> Option<ServerMetrics> {
    let Span {
        start,
        end,
        open,
        close,
    } = span;
    let base = scrapes
        .iter()
        .rev()
        .find(|s| s.at <= start)
        .or_else(|| scrapes.iter().find(|s| s.at >= start && s.at <= end))?;
    let last = scrapes
        .iter()
        .find(|s| s.at >= end)
        .or_else(|| scrapes.last())?;
    let periodic = |lo: Nanos, hi: Nanos| -> Vec<&Timed> {
        scrapes
            .iter()
            .filter(|s| !s.boundary && s.at >= lo && s.at <= hi)
            .collect()
    };
    let inside = periodic(open, close);
    let whole = periodic(start, end);
    let duration_s = end.saturating_sub(start) as f64 / 1e9;
    let mut metrics = BTreeMap::new();
    for (name, v) in &last.snap {
        let m = match v {
            Folded::Gauge { .. } => gauge(name, &whole, open, close),
            Folded::Counter { value, .. } => Some(counter(base.snap.get(name), *value, duration_s)),
            Folded::Histogram(h) => Some(histogram(base.snap.get(name), h)),
        };
        if let Some(m) = m {
            metrics.insert(name.clone(), m);
        }
    }
    let server = SERVERS
        .iter()
        .find(|s| s.sources.iter().any(|(_, src)| present(&metrics, src)));
    let mut summary = server
        .map(|s| resolve(s, &metrics, duration_s))
        .unwrap_or_default();
    if let Some((spec, names)) = server
        .and_then(|s| crate::spec::summarize(s, &inside, base, last, |n| gauge_mean(&metrics, n)))
    {
        summary.spec_decode = Some(spec);
        summary.sources.insert("spec_decode".into(), names);
    }
    let series = series(server, &whole, start, &metrics);
    Some(ServerMetrics {
        url: url.to_string(),
        server: server.map(|s| s.name.to_string()),
        interval_s,
        scrapes: inside.len() as u32,
        duration_s,
        summary,
        metrics,
        series,
    })
}

/// A gauge over `[lo, hi]` from the benchmark's periodic scrapes (see the module's doc).
fn gauge(name: &str, scrapes: &[&Timed], lo: Nanos, hi: Nanos) -> Option<MetricSummary> {
    let inside: Vec<(Nanos, f64)> = scrapes
        .iter()
        .filter(|s| s.at >= lo && s.at <= hi)
        .filter_map(|s| match s.snap.get(name) {
            Some(Folded::Gauge { value, .. }) => Some((s.at, *value)),
            _ => None,
        })
        .collect();
    let &(_, last) = inside.last()?;
    Some(MetricSummary::Gauge {
        mean: time_weighted_mean(&inside, lo, hi),
        max: inside
            .iter()
            .map(|&(_, v)| v)
            .fold(f64::NEG_INFINITY, f64::max),
        last,
        samples: inside.len() as u32,
    })
}

/// The mean over `[lo, hi]` of `points` (in time order, inside it, not empty), each standing
/// for the part of the window nearer to it than to its neighbours; the plain mean when the
/// window has no length.
fn time_weighted_mean(points: &[(Nanos, f64)], lo: Nanos, hi: Nanos) -> f64 {
    if hi <= lo {
        return points.iter().map(|&(_, v)| v).sum::<f64>() / points.len() as f64;
    }
    let mid = |i: usize| -> f64 {
        match (points.get(i), points.get(i + 1)) {
            (Some(&(a, _)), Some(&(b, _))) => (a as f64 + b as f64) / 2.0,
            _ => hi as f64,
        }
    };
    let mut from = lo as f64;
    let mut area = 0.0;
    for (i, &(_, v)) in points.iter().enumerate() {
        let to = mid(i);
        area += v * (to - from);
        from = to;
    }
    area / (hi - lo) as f64
}

fn counter(base: Option<&Folded>, end: f64, duration_s: f64) -> MetricSummary {
    let before = match base {
        Some(Folded::Counter { value, .. }) => *value,
        _ => 0.0,
    };
    let delta = end - before;
    if delta < 0.0 {
        return MetricSummary::Counter {
            delta: None,
            rate_per_s: None,
            reset: true,
        };
    }
    MetricSummary::Counter {
        delta: Some(delta),
        rate_per_s: (duration_s > 0.0).then(|| delta / duration_s),
        reset: false,
    }
}

fn histogram(base: Option<&Folded>, end: &Hist) -> MetricSummary {
    let empty = Hist::default();
    let base = match base {
        Some(Folded::Histogram(h)) => h,
        _ => &empty,
    };
    let before = |le: f64| {
        base.buckets
            .iter()
            .find(|(l, _)| *l == le)
            .map_or(0.0, |(_, c)| *c)
    };
    let cumulative: Vec<(f64, f64)> = end
        .buckets
        .iter()
        .map(|&(le, c)| (le, c - before(le)))
        .collect();
    let count = end.count - base.count;
    let sum = end.sum - base.sum;
    let reset = count < 0.0 || cumulative.iter().any(|&(_, c)| c < 0.0);
    let mut buckets = Vec::with_capacity(cumulative.len());
    let mut prev = 0.0;
    for &(le, c) in &cumulative {
        buckets.push(BucketDelta {
            le: if le.is_infinite() {
                "+Inf".to_string()
            } else {
                format!("{le}")
            },
            count: (c - prev).max(0.0),
        });
        prev = c;
    }
    let percentiles = if reset {
        BTreeMap::new()
    } else {
        PERCENTILES
            .iter()
            .filter_map(|&(k, q)| quantile(q, &cumulative).map(|v| (k.to_string(), v)))
            .collect()
    };
    MetricSummary::Histogram {
        count: count.max(0.0),
        sum: sum.max(0.0),
        mean: (count > 0.0 && !reset).then(|| sum / count),
        buckets,
        percentiles,
        reset,
    }
}

/// Prometheus' `histogram_quantile` on cumulative `(le, count)` buckets: linear interpolation
/// inside the bucket holding rank `q * total` (from 0 for the first bucket); a rank in the
/// `+Inf` bucket gives the highest finite bound.
pub fn quantile(q: f64, cumulative: &[(f64, f64)]) -> Option<f64> {
    let total = cumulative.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut lower = (0.0, 0.0);
    for &(le, c) in cumulative {
        if c >= rank {
            if le.is_infinite() {
                return Some(lower.0);
            }
            let lo = if lower.0 == 0.0 && le < 0.0 {
                le
            } else {
                lower.0
            };
            let width = c - lower.1;
            return Some(if width > 0.0 {
                lo + (le - lo) * (rank - lower.1) / width
            } else {
                le
            });
        }
        lower = (le, c);
    }
    Some(lower.0)
}

fn present(metrics: &BTreeMap<String, MetricSummary>, src: &Source) -> bool {
    src.names().iter().all(|n| metrics.contains_key(*n))
}

/// The figures of `server`, from the first of its sources present for each role.
fn resolve(
    server: &crate::names::Server,
    m: &BTreeMap<String, MetricSummary>,
    duration_s: f64,
) -> ServerSummary {
    let mut out = ServerSummary::default();
    for role in Role::ALL {
        let Some(src) = server
            .sources
            .iter()
            .filter(|(r, _)| *r == role)
            .map(|(_, s)| s)
            .find(|s| present(m, s))
        else {
            continue;
        };
        let found = fill(&mut out, role, src, m, duration_s);
        if found {
            out.sources
                .insert(role.key().to_string(), src.names().join(" / "));
        }
    }
    out
}

fn fill(
    out: &mut ServerSummary,
    role: Role,
    src: &Source,
    m: &BTreeMap<String, MetricSummary>,
    duration_s: f64,
) -> bool {
    let delta = |n: &str| counter_of(n, m);
    match (role, *src) {
        (Role::Running, Source::Gauge(n)) => out.running = gauge_of(n, m),
        (Role::Waiting, Source::Gauge(n)) => out.waiting = gauge_of(n, m),
        (Role::KvUsage, Source::Gauge(n)) => out.kv_usage = gauge_of(n, m),
        (Role::PrefixHitRate, Source::Gauge(_) | Source::Ratio(..) | Source::Share(..)) => {
            out.prefix_cache_hit_rate = hit_rate(src, m)
        }
        (Role::PromptTokens, Source::CounterSum(a, b)) => {
            out.prompt_tokens = match (delta(a), delta(b)) {
                (Some(a), Some(b)) => Some(CounterSummary {
                    delta: a.delta + b.delta,
                    rate_per_s: a.rate_per_s + b.rate_per_s,
                }),
                _ => None,
            }
        }
        (Role::Preemptions, Source::Counter(n)) => out.preemptions = delta(n),
        (Role::PromptTokens, Source::Counter(n)) => out.prompt_tokens = delta(n),
        (Role::GenerationTokens, Source::Counter(n)) => out.generation_tokens = delta(n),
        (Role::PromptTokens | Role::GenerationTokens, Source::HistogramSum(n)) => {
            let c = histogram_total(n, m, duration_s);
            if role == Role::PromptTokens {
                out.prompt_tokens = c;
            } else {
                out.generation_tokens = c;
            }
        }
        (Role::Ttft, Source::Histogram(n)) => out.ttft_ms = latency(n, m),
        (Role::Itl, Source::Histogram(n)) => out.itl_ms = latency(n, m),
        (Role::E2e, Source::Histogram(n)) => out.e2e_ms = latency(n, m),
        _ => return false,
    }
    true
}

/// A gauge's mean, maximum and last value.
pub(crate) fn gauge_of(name: &str, m: &BTreeMap<String, MetricSummary>) -> Option<GaugeSummary> {
    match m.get(name) {
        Some(MetricSummary::Gauge {
            mean, max, last, ..
        }) => Some(GaugeSummary {
            mean: *mean,
            max: *max,
            last: *last,
        }),
        _ => None,
    }
}

/// A counter's increase over the benchmark and its rate.
pub(crate) fn counter_of(
    name: &str,
    m: &BTreeMap<String, MetricSummary>,
) -> Option<CounterSummary> {
    match m.get(name) {
        Some(MetricSummary::Counter {
            delta: Some(d),
            rate_per_s,
            ..
        }) => Some(CounterSummary {
            delta: *d,
            rate_per_s: rate_per_s.unwrap_or(0.0),
        }),
        _ => None,
    }
}

/// A histogram's sum (tokens) over the benchmark, as a counter over `duration_s`; `None`
/// when the histogram was reset during it.
fn histogram_total(
    name: &str,
    m: &BTreeMap<String, MetricSummary>,
    duration_s: f64,
) -> Option<CounterSummary> {
    match m.get(name) {
        Some(MetricSummary::Histogram {
            sum, reset: false, ..
        }) => Some(CounterSummary {
            delta: *sum,
            rate_per_s: if duration_s > 0.0 {
                *sum / duration_s
            } else {
                0.0
            },
        }),
        _ => None,
    }
}

/// The prefix-cache hit rate from a gauge, hits over queries, or hits over hits + misses.
fn hit_rate(src: &Source, m: &BTreeMap<String, MetricSummary>) -> Option<f64> {
    let delta = |n: &str| counter_of(n, m);
    match *src {
        Source::Gauge(n) => gauge_of(n, m).map(|g| g.mean),
        Source::Ratio(h, q) => match (delta(h), delta(q)) {
            (Some(h), Some(q)) if q.delta > 0.0 => Some(h.delta / q.delta),
            _ => None,
        },
        Source::Share(h, o) => match (delta(h), delta(o)) {
            (Some(h), Some(o)) if h.delta + o.delta > 0.0 => Some(h.delta / (h.delta + o.delta)),
            _ => None,
        },
        _ => None,
    }
}

/// A latency histogram's summary in milliseconds (the name table's histograms are seconds).
fn latency(name: &str, m: &BTreeMap<String, MetricSummary>) -> Option<LatencySummary> {
    let Some(MetricSummary::Histogram {
        count,
        mean: Some(mean),
        percentiles,
        ..
    }) = m.get(name)
    else {
        return None;
    };
    Some(LatencySummary {
        count: *count,
        mean: mean * 1e3,
        p50: percentiles.get("p50")? * 1e3,
        p90: percentiles.get("p90")? * 1e3,
        p99: percentiles.get("p99")? * 1e3,
    })
}

fn series(
    server: Option<&crate::names::Server>,
    inside: &[&Timed],
    start: Nanos,
    m: &BTreeMap<String, MetricSummary>,
) -> Vec<SeriesPoint> {
    let Some(server) = server else {
        return Vec::new();
    };
    let name = |role: Role| {
        server.sources.iter().find_map(|(r, s)| match s {
            Source::Gauge(n) if *r == role && m.contains_key(*n) => Some(*n),
            _ => None,
        })
    };
    let (run, wait, kv) = (
        name(Role::Running),
        name(Role::Waiting),
        name(Role::KvUsage),
    );
    let value = |s: &Timed, n: Option<&str>| match s.snap.get(n?) {
        Some(Folded::Gauge { value, .. }) => Some(*value),
        _ => None,
    };
    inside
        .iter()
        .map(|s| SeriesPoint {
            t_s: s.at.saturating_sub(start) as f64 / 1e9,
            running: value(s, run),
            waiting: value(s, wait),
            kv_usage: value(s, kv),
        })
        .collect()
}

/// The mean of the gauge `name` over the benchmark, when it is one.
fn gauge_mean(metrics: &BTreeMap<String, MetricSummary>, name: &str) -> Option<f64> {
    match metrics.get(name) {
        Some(MetricSummary::Gauge { mean, .. }) => Some(*mean),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse::parse, snapshot::fold};

    fn at(t: Nanos, text: &str, boundary: bool) -> Timed {
        Timed {
            at: t,
            snap: fold(&parse(text).expect("valid")),
            boundary,
        }
    }

    const S: Nanos = 1_000_000_000;

    #[test]
    fn counters_span_base_to_end_scrape_and_gauges_the_window() {
        let g = |t, run: u32, tok: u32, b| {
            at(
                t,
                &format!(
                    "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running {run}\n\
                     # TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total {tok}\n"
                ),
                b,
            )
        };
        let scrapes = [
            g(0, 0, 100, true),  // base: before the benchmark
            g(S, 2, 150, false), // warmup: not in the window
            g(2 * S, 4, 200, false),
            g(3 * S, 6, 300, false),
            g(4 * S, 8, 400, false), // drain: after the window, before the end
            g(5 * S, 0, 500, true),  // end scrape
            g(6 * S, 9, 900, false), // next benchmark
        ];
        let span = Span {
            start: S / 2,
            end: 4 * S + S / 2,
            open: 3 * S / 2,
            close: 3 * S + S / 2,
        };
        let m = summarize(&scrapes, span, "u", 1.0).expect("summary");
        assert_eq!(m.scrapes, 2);
        assert_eq!(
            m.summary.running,
            Some(GaugeSummary {
                mean: 5.0,
                max: 6.0,
                last: 6.0
            })
        );
        assert_eq!(
            m.summary.generation_tokens,
            Some(CounterSummary {
                delta: 400.0,
                rate_per_s: 100.0
            })
        );
        assert_eq!(m.series.len(), 4, "the series covers the whole benchmark");
        assert_eq!(m.server.as_deref(), Some("vllm"));
    }

    /// Issue 22's case: `concurrent@16` scraped every second, one scrape racing the first
    /// requests (0). Over the steady state (from 1.3 s) the mean is 16; over the whole window
    /// the 0 weighs the half second it stands for, not one sample in five.
    #[test]
    fn gauge_means_are_time_weighted_over_the_window() {
        let g = |t, run: u32| {
            at(
                t,
                &format!(
                    "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running {run}\n"
                ),
                false,
            )
        };
        let scrapes = [g(0, 0), g(S, 16), g(2 * S, 16), g(3 * S, 16), g(4 * S, 16)];
        let running = |open, close| {
            let span = Span {
                start: 0,
                end: 5 * S,
                open,
                close,
            };
            summarize(&scrapes, span, "u", 1.0)
                .and_then(|m| m.summary.running)
                .expect("running")
        };
        assert_eq!(running(13 * S / 10, 5 * S).mean, 16.0);
        let whole = running(0, 5 * S);
        assert!((whole.mean - 4.5 * 16.0 / 5.0).abs() < 1e-9, "{whole:?}");
        assert_eq!((whole.max, whole.last), (16.0, 16.0));
    }

    #[test]
    fn a_counter_that_went_down_has_no_delta() {
        let c = |t, v| at(t, &format!("# TYPE c counter\nc_total {v}\n"), true);
        let m = summarize(&[c(0, 10), c(S, 3)], Span::whole(0, S), "u", 1.0).expect("summary");
        assert_eq!(
            m.metrics["c_total"],
            MetricSummary::Counter {
                delta: None,
                rate_per_s: None,
                reset: true
            }
        );
    }

    #[test]
    fn hit_rates_from_counter_pairs() {
        let v = |t, h, q| {
            at(
                t,
                &format!(
                    "# TYPE vllm:prefix_cache_hits counter\nvllm:prefix_cache_hits_total {h}\n\
                     # TYPE vllm:prefix_cache_queries counter\nvllm:prefix_cache_queries_total {q}\n"
                ),
                true,
            )
        };
        let m =
            summarize(&[v(0, 10, 20), v(S, 40, 80)], Span::whole(0, S), "u", 1.0).expect("summary");
        assert_eq!(m.summary.prefix_cache_hit_rate, Some(0.5));
        let l = |t, cached, processed| {
            at(
                t,
                &format!(
                    "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total {processed}\n\
                     # TYPE llamacpp:prompt_tokens_cached_total counter\nllamacpp:prompt_tokens_cached_total {cached}\n"
                ),
                true,
            )
        };
        let m =
            summarize(&[l(0, 0, 0), l(S, 30, 90)], Span::whole(0, S), "u", 1.0).expect("summary");
        assert_eq!(m.server.as_deref(), Some("llamacpp"));
        assert_eq!(m.summary.prefix_cache_hit_rate, Some(0.25));
        assert_eq!(m.summary.prompt_tokens.map(|c| c.delta), Some(120.0));
    }

    #[test]
    fn nothing_before_the_end_means_no_summary() {
        assert!(summarize(&[], Span::whole(0, S), "u", 1.0).is_none());
        let late = at(2 * S, "m 1\n", false);
        assert!(summarize(&[late], Span::whole(0, S), "u", 1.0).is_none());
    }
}
