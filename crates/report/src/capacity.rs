//! The capacity answer in the report: SLO figures of a benchmark, the knee of a sweep, and the
//! "Capacity" console blocks (guidellm and vLLM style). Definitions: docs/profiles.md.

use std::fmt::Write as _;

use bench_core::{kept_up, Capacity, Slo, SloMetric, SloStat};

use crate::capacity_interval::{capacity_interval, crossing_words, knee_interval, slo_interval};
use crate::model::{BenchmarkReport, RunReport};
use crate::options::Metric;

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
pub(crate) fn open_loop(run: &RunReport) -> Vec<(f64, &BenchmarkReport)> {
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

/// Said after the maximum when the sweep's highest rate kept up (no rate crossed it).
pub const LOWER_BOUND_NOTE: &str =
    "; the highest rate offered kept up: the server may sustain more";

/// The words around the maximum: "at least " before it and the note after it when it is a
/// lower bound, else nothing.
pub fn lower_bound_words(c: &Capacity) -> (&'static str, &'static str) {
    if c.max_is_lower_bound {
        ("at least ", LOWER_BOUND_NOTE)
    } else {
        ("", "")
    }
}

/// `, N <unit>` for the capacity's output tokens/s; nothing when the sweep measured none
/// (embeddings and rerank runs generate no token, so their capacity is in requests/s only).
pub(crate) fn output_tokens_words(c: &Capacity, unit: &str) -> String {
    if c.max_output_tokens_per_s.is_finite() {
        format!(", {:.1} {unit}", c.max_output_tokens_per_s)
    } else {
        String::new()
    }
}

fn rate(v: Option<f64>) -> String {
    v.map_or("-".into(), |r| format!("{r:.2} req/s"))
}

/// The answer of a sweep over a trace in words: "carries at least 2.70x the trace (recorded
/// 3.00 req/s); knee at 2.10x; its SLO holds up to 2.10x" (`None` for other sweeps).
pub fn trace_multiples_text(c: &Capacity) -> Option<String> {
    let t = c.trace.as_ref()?;
    let (before, _) = lower_bound_words(c);
    let mut s = format!(
        "this deployment carries {before}{:.2}x the trace (recorded mean rate {:.3} req/s)",
        t.max_multiple, t.recorded_requests_per_s
    );
    if let Some(k) = t.knee_multiple {
        let _ = write!(s, "; latency leaves its plateau above {k:.2}x");
    }
    if let Some(slo) = &c.slo {
        match (t.slo_max_multiple, c.slo_bracket.and_then(|b| b.high)) {
            (Some(m), Some(_)) => {
                let _ = write!(s, "; its {slo} SLO holds up to {m:.2}x");
            }
            (Some(m), None) => {
                let _ = write!(
                    s,
                    "; its {slo} SLO holds at every speed-up swept (up to {m:.2}x and more)"
                );
            }
            (None, _) => {
                let _ = write!(s, "; its {slo} SLO holds at no speed-up swept");
            }
        }
    }
    Some(s)
}

/// The lines of the answer, as (label, text).
fn lines(run: &RunReport, c: &Capacity) -> Vec<(String, String)> {
    let (before, after) = lower_bound_words(c);
    let sure = capacity_interval(run).map_or(String::new(), |iv| {
        format!(" (95% interval {:.2} to {:.2})", iv.low, iv.high)
    });
    let mut out = vec![
        (
            "Maximum sustained throughput".to_string(),
            format!(
                "{before}{:.2} req/s{sure}{} (measured by {}){after}",
                c.max_requests_per_s,
                output_tokens_words(c, "output tok/s"),
                c.max_measured_by
            ),
        ),
        (
            "Knee (latency leaves its plateau)".to_string(),
            match c.knee_requests_per_s {
                Some(k) => format!(
                    "{k:.2} req/s{} (median TTFT within {KNEE_FACTOR}x its low-load value + {KNEE_SLACK_MS} ms)",
                    crossing_words(knee_interval(run, c))
                ),
                None => "not found within the swept rates".into(),
            },
        ),
    ];
    if let (Some(slo), Some(b)) = (&c.slo, &c.slo_bracket) {
        let sure = crossing_words(slo_interval(run, c));
        let text = match (b.low, b.high) {
            (Some(l), Some(h)) => format!(
                "{l:.2} req/s{sure} (bracket {l:.2} to {h:.2} req/s, {} refinement step(s))",
                b.steps
            ),
            (Some(_), None) => format!("{} or more{sure} (every rate met it)", rate(b.low)),
            (None, _) => "no rate met it".into(),
        };
        out.push((format!("Max rate meeting {slo}"), text));
    }
    if let Some(t) = trace_multiples_text(c) {
        out.push(("Trace multiple".to_string(), t));
    }
    out
}

/// The "Capacity" block after guidellm's tables.
pub fn render_capacity(run: &RunReport) -> String {
    let Some(c) = &run.capacity else {
        return String::new();
    };
    let mut s = String::from("Capacity:\n");
    for (k, v) in lines(run, c) {
        let _ = writeln!(s, "  {k}: {v}");
    }
    s
}

/// The "Capacity" block after vLLM's blocks, in their `{:<40} {:<10}` layout.
pub fn render_capacity_vllm(run: &RunReport) -> String {
    let Some(c) = &run.capacity else {
        return String::new();
    };
    let mut s = format!("{:=^50}\n", " Capacity ");
    let _ = writeln!(
        s,
        "{:<40} {:<10}",
        "Max request throughput (req/s):",
        format!("{:.2}", c.max_requests_per_s)
    );
    let _ = writeln!(
        s,
        "{:<40} {:<10}",
        "Max output token throughput (tok/s):",
        format!("{:.2}", c.max_output_tokens_per_s)
    );
    if let Some(iv) = capacity_interval(run) {
        let _ = writeln!(
            s,
            "{:<40} {:<10}",
            "Max throughput 95% interval (req/s):",
            format!("{:.2} to {:.2}", iv.low, iv.high)
        );
    }
    let _ = writeln!(s, "{:<40} {:<10}", "Measured by:", c.max_measured_by);
    if c.max_is_lower_bound {
        let _ = writeln!(
            s,
            "{:<40} {:<10}",
            "Max is a lower bound:", "yes (the highest rate offered kept up)"
        );
    }
    let _ = writeln!(
        s,
        "{:<40} {:<10}",
        "Knee request rate (req/s):",
        c.knee_requests_per_s
            .map_or("-".into(), |k| format!("{k:.2}"))
    );
    interval_line(&mut s, "Knee 95% interval (req/s):", knee_interval(run, c));
    if let (Some(slo), Some(b)) = (&c.slo, &c.slo_bracket) {
        let _ = writeln!(s, "{:<40} {:<10}", "SLO:", slo.to_string());
        let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        let _ = writeln!(
            s,
            "{:<40} {:<10}",
            "Max rate meeting the SLO (req/s):",
            f(b.low)
        );
        interval_line(
            &mut s,
            "SLO rate 95% interval (req/s):",
            slo_interval(run, c),
        );
        let _ = writeln!(
            s,
            "{:<40} {:<10}",
            "Lowest rate failing the SLO (req/s):",
            f(b.high)
        );
    }
    if let Some(t) = &c.trace {
        let x = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}x"));
        for (k, v) in [
            (
                "Trace recorded rate (req/s):",
                format!("{:.3}", t.recorded_requests_per_s),
            ),
            ("Max trace multiple:", x(Some(t.max_multiple))),
            ("Knee trace multiple:", x(t.knee_multiple)),
            ("Max trace multiple meeting the SLO:", x(t.slo_max_multiple)),
        ]
        .into_iter()
        .filter(|(k, _)| c.slo.is_some() || !k.contains("SLO"))
        {
            let _ = writeln!(s, "{k:<40} {v:<10}");
        }
    }
    s.push_str(&"=".repeat(50));
    s.push('\n');
    s
}

/// A vLLM-style line of a crossing's interval (`L to H`, `L or more`); none without one.
fn interval_line(s: &mut String, key: &str, iv: Option<bench_core::CrossingInterval>) {
    let Some(iv) = iv else { return };
    let v = iv.high.map_or(format!("{:.2} or more", iv.low), |h| {
        format!("{:.2} to {h:.2}", iv.low)
    });
    let _ = writeln!(s, "{key:<40} {v:<10}");
}
