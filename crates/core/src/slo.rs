//! Service-level objectives of the capacity search (`--slo "ttft_p99=500,itl_p50=50"`) and the
//! capacity answer a sweep states.
//!
//! An [`Slo`] is a list of bounds `<metric>_<stat> = milliseconds`; a benchmark meets it when
//! every bound holds (`value <= bound`). The statistics themselves are computed by the report
//! (which owns metric definitions); this module only names them, parses the form once, and
//! judges a benchmark given a way to look its figures up.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A latency metric an SLO can bound (the names of `--percentile-metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SloMetric {
    /// Time to first token.
    Ttft,
    /// Time to first output (answer) token: the first chunk that is not reasoning.
    Ttfo,
    /// Inter-token latency (every gap, pooled).
    Itl,
    /// Time per output token (per request).
    Tpot,
    /// End-to-end latency.
    E2el,
    /// End-to-end latency divided by output tokens.
    TokenLatency,
    /// Time to first token from the intended send time.
    TtftFromScheduled,
    /// End-to-end latency from the intended send time.
    E2elFromScheduled,
}

impl SloMetric {
    /// Every metric, longest names first (so `ttft_from_scheduled_p99` is not read as `ttft`).
    pub const ALL: [SloMetric; 8] = [
        SloMetric::TtftFromScheduled,
        SloMetric::E2elFromScheduled,
        SloMetric::TokenLatency,
        SloMetric::Ttft,
        SloMetric::Ttfo,
        SloMetric::Itl,
        SloMetric::Tpot,
        SloMetric::E2el,
    ];

    /// The name in SLO keys and `--percentile-metrics`.
    pub fn name(self) -> &'static str {
        match self {
            SloMetric::Ttft => "ttft",
            SloMetric::Ttfo => "ttfo",
            SloMetric::Itl => "itl",
            SloMetric::Tpot => "tpot",
            SloMetric::E2el => "e2el",
            SloMetric::TokenLatency => "token_latency",
            SloMetric::TtftFromScheduled => "ttft_from_scheduled",
            SloMetric::E2elFromScheduled => "e2el_from_scheduled",
        }
    }
}

/// The statistic of a bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SloStat {
    /// The mean.
    Mean,
    /// The median (p50).
    Median,
    /// Percentile `p` (0 < p < 100).
    Percentile(f64),
}

impl SloStat {
    /// The percentile this statistic is, if it is one (the median is 50).
    pub fn percentile(self) -> Option<f64> {
        match self {
            SloStat::Mean => None,
            SloStat::Median => Some(50.0),
            SloStat::Percentile(p) => Some(p),
        }
    }
}

impl fmt::Display for SloStat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SloStat::Mean => f.write_str("mean"),
            SloStat::Median => f.write_str("median"),
            SloStat::Percentile(p) => write!(f, "p{p}"),
        }
    }
}

/// One bound: `metric`'s `stat` must be at most `max_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SloBound {
    /// The metric.
    pub metric: SloMetric,
    /// Its statistic.
    pub stat: SloStat,
    /// The bound, milliseconds.
    pub max_ms: f64,
}

impl SloBound {
    /// The key, e.g. `ttft_p99`.
    pub fn key(&self) -> String {
        format!("{}_{}", self.metric.name(), self.stat)
    }
}

/// A set of bounds every one of which a benchmark must meet. Parsed once from
/// `"ttft_p99=500,itl_p50=50"`; serialized back in the same form.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// The bounds, in the order given.
    pub bounds: Vec<SloBound>,
}

/// A malformed SLO; the message names the offending key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SloError(pub String);

impl fmt::Display for SloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SloError {}

const FORM: &str = "expected KEY=MILLISECONDS pairs such as ttft_p99=500,itl_p50=50 (KEY is <metric>_<stat>; metric: ttft, ttfo, itl, tpot, e2el, token_latency, ttft_from_scheduled, e2el_from_scheduled; stat: mean, median or pNN)";

fn parse_key(key: &str) -> Result<(SloMetric, SloStat), SloError> {
    metric_key(key).map_err(|why| SloError(format!("slo: `{key}`: {why}; {FORM}")))
}

/// Reads a latency figure's key, `<metric>_<stat>` (`ttft_p99`, `itl_median`, `e2el_mean`), the
/// one vocabulary of SLO bounds and of other rules that name a latency figure (the regression
/// gate of `bench report --fail-on`). The error says what is wrong with the key, without it.
pub fn metric_key(key: &str) -> Result<(SloMetric, SloStat), &'static str> {
    let metric = SloMetric::ALL
        .into_iter()
        .find(|m| {
            key.strip_prefix(m.name())
                .is_some_and(|rest| rest.starts_with('_'))
        })
        .ok_or("unknown metric")?;
    let stat = match &key[metric.name().len() + 1..] {
        "mean" => SloStat::Mean,
        "median" => SloStat::Median,
        s => {
            let p: f64 = s
                .strip_prefix('p')
                .and_then(|n| n.parse().ok())
                .ok_or("unknown statistic")?;
            if !(p > 0.0 && p < 100.0) {
                return Err("the percentile must be above 0 and below 100");
            }
            if p == 50.0 {
                SloStat::Median
            } else {
                SloStat::Percentile(p)
            }
        }
    };
    Ok((metric, stat))
}

impl FromStr for Slo {
    type Err = SloError;

    fn from_str(s: &str) -> Result<Self, SloError> {
        let mut bounds: Vec<SloBound> = Vec::new();
        for pair in s
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|p| !p.is_empty())
        {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| SloError(format!("slo: `{pair}` has no `=`; {FORM}")))?;
            let (metric, stat) = parse_key(key.trim())?;
            let max_ms: f64 = value.trim().parse().map_err(|_| {
                SloError(format!(
                    "slo: `{key}`: `{value}` is not a number of milliseconds"
                ))
            })?;
            if !(max_ms.is_finite() && max_ms > 0.0) {
                return Err(SloError(format!(
                    "slo: `{key}`: the bound must be a positive number of milliseconds, got {value}"
                )));
            }
            let b = SloBound {
                metric,
                stat,
                max_ms,
            };
            if bounds.iter().any(|o| o.key() == b.key()) {
                return Err(SloError(format!("slo: `{key}` is given twice")));
            }
            bounds.push(b);
        }
        if bounds.is_empty() {
            return Err(SloError(format!("slo: no bound given; {FORM}")));
        }
        Ok(Slo { bounds })
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .bounds
            .iter()
            .map(|b| format!("{}={}", b.key(), b.max_ms))
            .collect();
        f.write_str(&parts.join(","))
    }
}

impl Serialize for Slo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Slo {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl Slo {
    /// Whether a benchmark meets every bound, given `value(metric, stat)` in milliseconds.
    /// A figure that is missing (no request completed) does not meet its bound.
    pub fn is_met(&self, mut value: impl FnMut(SloMetric, SloStat) -> Option<f64>) -> bool {
        self.bounds
            .iter()
            .all(|b| value(b.metric, b.stat).is_some_and(|v| v <= b.max_ms))
    }
}

/// The bracket of the SLO search: the highest rate measured to meet every bound and the lowest
/// measured not to (requests/s, offered).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SloBracket {
    /// Highest offered rate that met every bound (`None`: none did).
    pub low: Option<f64>,
    /// Lowest offered rate above `low` that did not (`None`: every rate met the SLO).
    pub high: Option<f64>,
    /// The relative width the search aimed for, `(high - low) / low`.
    pub tolerance: f64,
    /// Benchmarks the refinement ran after the sweep.
    pub steps: u32,
    /// With `--slo-precision`: what narrowing the SLO rate's interval cost, and whether it
    /// reached the width asked for (docs/metrics.md, "The SLO answer's precision").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refinement: Option<Refinement>,
}

/// The benchmarks the sweep ran to narrow one of its answers' 95% interval to the precision
/// asked: the SLO rate's (`--slo-precision`: rates between the interval's ends run again
/// longer, or new rates between them) or the maximum's (`--capacity-precision`: the benchmark
/// that measured it runs again longer).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Refinement {
    /// The precision asked for: the interval's width at most `2 x precision` of its lower end.
    pub precision: f64,
    /// Benchmarks run for it.
    pub benchmarks: u32,
    /// Their length, benchmark-seconds (warmup and drain included).
    pub seconds: f64,
    /// Whether the interval reached the width.
    pub met: bool,
    /// Why it did not (`None` when it did, and in files written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<NotNarrowed>,
}

/// Why the sweep could not narrow an answer's interval to the precision asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotNarrowed {
    /// The benchmark that must run longer already ran at its longest (4 benchmark lengths).
    AtLongest,
    /// The narrowing ran its most benchmarks (24).
    OutOfSteps,
    /// No rate met the SLO, so there is no answer to narrow.
    NoAnswer,
    /// The benchmarks it rests on have no interval (too short for three batches, or a bound's
    /// statistic without an interval method).
    NoInterval,
}

impl std::fmt::Display for NotNarrowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotNarrowed::AtLongest => "the benchmark it rests on ran at its longest (4 lengths)",
            NotNarrowed::OutOfSteps => "it ran its most benchmarks (24)",
            NotNarrowed::NoAnswer => "no rate met the SLO",
            NotNarrowed::NoInterval => "its benchmarks have no interval",
        })
    }
}

/// What limits a sweep's SLO answer: the SLO (a rate the server kept up missed a bound), or
/// the capacity (every rate the server kept up met the SLO; the answer is then the capacity,
/// with its interval). A rate the server did not keep up meets no SLO (docs/metrics.md, "The
/// SLO answer").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloLimit {
    /// A bound stops holding below the capacity.
    Slo,
    /// The capacity limits first.
    Capacity,
}

/// Whether a benchmark that offered `offered` requests/s and completed `completed` kept up.
pub fn kept_up(offered: f64, completed: f64) -> bool {
    offered > 0.0 && completed >= crate::sustain::KEPT_UP * offered
}

/// Whether an open-loop rate was served, the one rule by which the sweep, its SLO answer and
/// the knee count a rate as kept up: it kept up by its point figure ([`kept_up`]) and its
/// in-flight judgement says so (`verdict` is [`crate::Verdict::KeptUp`]). A rate judged
/// unsure, not kept up, or not judged at all (`None`: too few arrivals, [`crate::Unjudged`])
/// was not served, and a rate that was not served meets no SLO, whatever its latencies
/// (docs/metrics.md, "Sustained" and "The SLO answer").
pub fn served(offered: f64, completed: f64, verdict: Option<crate::Verdict>) -> bool {
    served_sure(offered, completed, verdict) == crate::Sure::Pass
}

/// [`served`] as a three-way verdict: `Pass` when served, `Fail` when the rate surely was not
/// (its completions under 95% of the offer, or judged not kept up), `Unsure` when its
/// judgement is unsure or it was not judged (too few arrivals): the SLO search and the
/// intervals count such a rate neither as meeting the SLO nor as failing it.
pub fn served_sure(offered: f64, completed: f64, verdict: Option<crate::Verdict>) -> crate::Sure {
    use crate::{Sure, Verdict};
    match verdict {
        _ if !kept_up(offered, completed) => Sure::Fail,
        Some(Verdict::KeptUp) => Sure::Pass,
        Some(Verdict::NotKeptUp) => Sure::Fail,
        Some(Verdict::Unsure) | None => Sure::Unsure,
    }
}

/// The capacity answer of a sweep: what the deployment sustains, where its latency leaves the
/// low-load plateau, and what it sustains under the SLO. Definitions: docs/profiles.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// Steady-state completed requests/s of the best probe (the sustainable maximum).
    pub max_requests_per_s: f64,
    /// Steady-state output tokens/s of the same probe.
    pub max_output_tokens_per_s: f64,
    /// The benchmark that measured them: a probe, a ladder rung, or an open-loop rate that
    /// kept up (e.g. `concurrent@64`, `constant@0.42`).
    pub max_measured_by: String,
    /// Whether the highest open-loop rate offered kept up with its rate: no rate crossed the
    /// capacity, which is then at least `max_requests_per_s`.
    #[serde(default)]
    pub max_is_lower_bound: bool,
    /// The highest offered rate whose latency stayed on its low-load plateau (`None`: not
    /// determined, e.g. no open-loop rate ran).
    #[serde(default)]
    pub knee_requests_per_s: Option<f64>,
    /// The SLO searched for, if any.
    #[serde(default)]
    pub slo: Option<Slo>,
    /// The SLO answer: the highest offered rate measured to meet every bound while served
    /// ([`served`]), never above `max_requests_per_s`; the maximum itself when the capacity
    /// limits first (`slo_limit`). `None` without `--slo`, or when no rate met it.
    #[serde(default)]
    pub slo_max_requests_per_s: Option<f64>,
    /// What limits the SLO answer (`None` without `--slo`, when no rate met it, and in files
    /// written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_limit: Option<SloLimit>,
    /// The search's bracket (`None` without `--slo`).
    #[serde(default)]
    pub slo_bracket: Option<SloBracket>,
    /// A sweep over a trace: the answer as multiples of the trace's recorded traffic (`None`
    /// for other sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceCapacity>,
    /// The 95% intervals of the maximum, the knee and the SLO-limited rate (docs/metrics.md,
    /// "Intervals"), set with the knee by the report; absent when none could be computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<crate::CapacityIntervals>,
    /// With `--capacity-precision`: what narrowing the maximum's interval cost, and whether it
    /// reached the width asked for (docs/metrics.md, "The capacity's precision").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_refinement: Option<Refinement>,
    /// The benchmark-seconds each answer cost (docs/metrics.md, "Benchmark-seconds per
    /// answer"); absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent: Option<Spent>,
}

/// The benchmark-seconds a sweep spent on each answer, each benchmark's from its first send to
/// its last reply (warmup and drain included), charged by its part of the sweep: the maximum
/// takes the probes, the ladder and the benchmarks that narrowed it (`--capacity-precision`);
/// the knee takes the open-loop rates (their runs again longer included), which also show
/// whether the maximum is kept up; the SLO answer takes its search and the benchmarks that
/// narrowed it (`--slo-precision`). They add up to every benchmark of the sweep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// On the maximum sustained throughput.
    pub capacity_s: f64,
    /// On the knee (the open-loop rates).
    pub knee_s: f64,
    /// On the SLO answer (absent without `--slo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_s: Option<f64>,
}

impl Spent {
    /// Every benchmark-second of the sweep.
    pub fn total(&self) -> f64 {
        self.capacity_s + self.knee_s + self.slo_s.unwrap_or(0.0)
    }
}

/// A trace sweep's capacity answer as multiples of the trace's recorded mean request rate:
/// "this deployment carries 2.7x the trace; its SLO holds up to 2.1x" (docs/metrics.md,
/// "Trace sweep"). Each multiple is the matching rate of [`Capacity`] divided by
/// `recorded_requests_per_s`, which is also the speed-up the trace replays at to offer it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TraceCapacity {
    /// The trace's recorded mean rate: `(rows - 1) / duration` (req/s at speed-up 1).
    pub recorded_requests_per_s: f64,
    /// `max_requests_per_s / recorded_requests_per_s`.
    pub max_multiple: f64,
    /// `knee_requests_per_s / recorded_requests_per_s`.
    #[serde(default)]
    pub knee_multiple: Option<f64>,
    /// `slo_max_requests_per_s / recorded_requests_per_s`.
    #[serde(default)]
    pub slo_max_multiple: Option<f64>,
}

impl Capacity {
    /// A maximum of `max` req/s and `tokens` output tok/s measured by the benchmark `by`,
    /// kept up to, with nothing else yet: the sweep (and a test) sets the knee, the SLO
    /// answer, the trace multiples, the intervals and the refinement it has.
    pub fn measured(max: f64, tokens: f64, by: String) -> Self {
        Self {
            max_requests_per_s: max,
            max_output_tokens_per_s: tokens,
            max_measured_by: by,
            max_is_lower_bound: false,
            knee_requests_per_s: None,
            slo: None,
            slo_max_requests_per_s: None,
            slo_limit: None,
            slo_bracket: None,
            trace: None,
            intervals: None,
            max_refinement: None,
            spent: None,
        }
    }

    /// Sets the trace multiples from the answer's current rates and the trace's recorded mean
    /// rate `recorded` (req/s); call again after the knee is found.
    pub fn set_trace_multiples(&mut self, recorded: f64) {
        let of = |r: f64| r / recorded;
        self.trace = Some(TraceCapacity {
            recorded_requests_per_s: recorded,
            max_multiple: of(self.max_requests_per_s),
            knee_multiple: self.knee_requests_per_s.map(of),
            slo_max_multiple: self.slo_max_requests_per_s.map(of),
        });
    }

    /// Recomputes the trace multiples (after the knee was set), when the answer has them.
    pub fn refresh_trace_multiples(&mut self) {
        if let Some(t) = self.trace {
            self.set_trace_multiples(t.recorded_requests_per_s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_keys_stats_and_round_trips() {
        let s: Slo = "ttft_p99=500,itl_p50=50 e2el_from_scheduled_mean=2000"
            .parse()
            .expect("valid");
        assert_eq!(s.bounds.len(), 3);
        assert_eq!(s.bounds[0].metric, SloMetric::Ttft);
        assert_eq!(s.bounds[0].stat, SloStat::Percentile(99.0));
        assert_eq!(s.bounds[1].stat, SloStat::Median, "p50 is the median");
        assert_eq!(s.bounds[2].metric, SloMetric::E2elFromScheduled);
        assert_eq!(s.bounds[2].stat, SloStat::Mean);
        assert_eq!(
            s.to_string(),
            "ttft_p99=500,itl_median=50,e2el_from_scheduled_mean=2000"
        );
        assert_eq!(s.to_string().parse::<Slo>(), Ok(s.clone()));
        let t: Slo = "token_latency_p99.9=3,ttft_from_scheduled_median=1,tpot_p90=2"
            .parse()
            .expect("valid");
        assert_eq!(t.bounds[0].stat, SloStat::Percentile(99.9));
        assert_eq!(t.bounds[1].metric, SloMetric::TtftFromScheduled);
        let o: Slo = "ttfo_p99=800,ttft_p99=200".parse().expect("valid");
        assert_eq!(
            o.bounds[0].metric,
            SloMetric::Ttfo,
            "ttfo is not read as ttft"
        );
        assert_eq!(o.to_string(), "ttfo_p99=800,ttft_p99=200");
        let json = serde_json::to_string(&t).expect("serialize");
        assert_eq!(json, format!("\"{t}\""));
        assert_eq!(serde_json::from_str::<Slo>(&json).expect("parse"), t);
        assert!(serde_json::from_str::<Slo>("\"ttft_p99\"").is_err());
    }

    #[test]
    fn bad_forms_name_the_key() {
        for (bad, culprit) in [
            ("ttft_p99", "ttft_p99"),
            ("ttfx_p99=5", "ttfx_p99"),
            ("ttft_p100=5", "ttft_p100"),
            ("ttft_p0=5", "ttft_p0"),
            ("ttft_q9=5", "ttft_q9"),
            ("ttft=5", "ttft"),
            ("itl_p50=fast", "itl_p50"),
            ("itl_p50=-1", "itl_p50"),
            ("itl_p50=1,itl_median=2", "itl_median"),
            ("", "no bound"),
        ] {
            let e = bad.parse::<Slo>().expect_err(bad);
            assert!(e.0.contains(culprit), "{bad}: {e}");
            assert!(!e.0.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn judges_every_bound_and_missing_figures() {
        let s: Slo = "ttft_p99=500,itl_mean=50".parse().expect("valid");
        let fig = |ttft: f64, itl: Option<f64>| {
            move |m: SloMetric, st: SloStat| match (m, st) {
                (SloMetric::Ttft, SloStat::Percentile(99.0)) => Some(ttft),
                (SloMetric::Itl, SloStat::Mean) => itl,
                _ => None,
            }
        };
        assert!(s.is_met(fig(500.0, Some(50.0))));
        assert!(!s.is_met(fig(500.1, Some(1.0))));
        assert!(!s.is_met(fig(1.0, Some(50.5))));
        assert!(!s.is_met(fig(1.0, None)), "no figure, not met");
    }
}
