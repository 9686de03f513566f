//! Side-by-side comparison of saved runs (`bench report A.json B.json`), each figure of a later
//! run marked against the same benchmark of the first: beyond the 95% intervals, within noise,
//! or without an interval to judge by (docs/metrics.md, "Intervals").

use bench_core::{Capacity, Interval};

use crate::figures::model::{BenchmarkReport, RunReport};
use crate::figures::options::Metric;
use crate::views::common::{render, Spec};

type Getter = fn(&BenchmarkReport) -> Option<f64>;
type IntervalOf = fn(&BenchmarkReport) -> Option<Interval>;

/// Where a compared figure comes from.
#[derive(Clone, Copy)]
enum Source {
    /// A rate or count, with its 95% interval where it has one.
    Rate {
        get: Getter,
        interval: Option<IntervalOf>,
    },
    /// A latency percentile (ms), with its interval.
    Latency(Metric, f64),
}

/// A compared figure: its title, digits and source.
pub(crate) struct Figure {
    pub title: &'static str,
    pub digits: usize,
    source: Source,
}

impl Figure {
    const fn rate(
        title: &'static str,
        digits: usize,
        get: Getter,
        interval: Option<IntervalOf>,
    ) -> Self {
        Self {
            title,
            digits,
            source: Source::Rate { get, interval },
        }
    }

    const fn latency(title: &'static str, m: Metric, p: f64) -> Self {
        Self {
            title,
            digits: 1,
            source: Source::Latency(m, p),
        }
    }

    /// The figure in `b`.
    pub(crate) fn value(&self, b: &BenchmarkReport) -> Option<f64> {
        match self.source {
            Source::Rate { get, .. } => get(b),
            Source::Latency(m, p) => b.percentile_ms(m, p),
        }
    }

    /// Its 95% interval in `b` (`None` without an interval method or without intervals).
    fn interval(&self, b: &BenchmarkReport) -> Option<Interval> {
        match self.source {
            Source::Rate { interval, .. } => interval.and_then(|iv| iv(b)),
            Source::Latency(m, p) => b.intervals.as_ref()?.percentile(m, p),
        }
    }
}

/// The compared figures.
pub(crate) const FIGURES: &[Figure] = &[
    Figure::rate(
        "Req/s",
        2,
        |b| Some(b.rates.requests_per_s),
        Some(|b| Some(b.intervals.as_ref()?.requests_per_s)),
    ),
    Figure::rate(
        "Out Tok/s",
        1,
        |b| Some(b.rates.output_tokens_per_s),
        Some(|b| Some(b.intervals.as_ref()?.output_tokens_per_s)),
    ),
    Figure::rate("Concurrency", 2, |b| Some(b.rates.concurrency), None),
    Figure::rate("Errored", 0, |b| Some(b.requests.errored as f64), None),
    Figure::latency("TTFT p50 (ms)", Metric::Ttft, 50.0),
    Figure::latency("TTFT p99 (ms)", Metric::Ttft, 99.0),
    Figure::latency("ITL p50 (ms)", Metric::Itl, 50.0),
    Figure::latency("ITL p99 (ms)", Metric::Itl, 99.0),
    Figure::latency("TPOT p50 (ms)", Metric::Tpot, 50.0),
    Figure::latency("E2EL p50 (ms)", Metric::E2el, 50.0),
    Figure::latency("E2EL p99 (ms)", Metric::E2el, 99.0),
];

/// How a figure of a later run compares with the same benchmark's in the first run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The two 95% intervals do not overlap.
    Beyond,
    /// They overlap.
    Noise,
    /// A figure has no interval (no method for it, or too short a benchmark).
    Unjudged,
}

impl Change {
    /// The mark after the figure: `*`, `~` or `?`.
    pub fn mark(self) -> &'static str {
        match self {
            Change::Beyond => "*",
            Change::Noise => "~",
            Change::Unjudged => "?",
        }
    }

    /// In words, as the legend and the HTML say it.
    pub fn words(self) -> &'static str {
        match self {
            Change::Beyond => "beyond the intervals",
            Change::Noise => "within noise",
            Change::Unjudged => "no interval",
        }
    }
}

/// The legend of the marks, for runs compared against `reference`.
pub fn legend(reference: &str) -> String {
    format!(
        "Marks on a figure of a later run, against the benchmark of the same label in {reference}: * beyond the 95% intervals (they do not overlap), ~ within noise (they overlap), ? no interval to judge by (not a significant change); unmarked: {reference}'s own rows and benchmarks it does not have."
    )
}

/// Whether two intervals are apart.
pub fn change(a: Option<Interval>, b: Option<Interval>) -> Change {
    match (a, b) {
        (Some(a), Some(b)) if a.high < b.low || b.high < a.low => Change::Beyond,
        (Some(_), Some(_)) => Change::Noise,
        _ => Change::Unjudged,
    }
}

/// The benchmark of `reference` with `b`'s label (its last, as a re-run replaces).
pub(crate) fn counterpart<'a>(
    reference: &'a RunReport,
    b: &BenchmarkReport,
) -> Option<&'a BenchmarkReport> {
    reference
        .benchmarks
        .iter()
        .rev()
        .find(|r| r.label == b.label)
}

/// How figure `f` of `b` compares with `a`'s.
pub(crate) fn figure_change(f: &Figure, a: &BenchmarkReport, b: &BenchmarkReport) -> Change {
    change(f.interval(a), f.interval(b))
}

/// The rate a benchmark sits at when runs are overlaid: its offered rate (open loop), else the
/// completed requests/s it measured (probes).
fn rate_of(b: &BenchmarkReport) -> f64 {
    b.strategy.target_rate().unwrap_or(b.rates.requests_per_s)
}

/// Overlays `runs` by rate: one row per benchmark of every run, ordered by rate (offered for
/// open-loop rates, measured for probes), with the run it belongs to, so that runs whose sweeps
/// derived different rates still line up; then each run's capacity answer, and the change of
/// each answer from the first run to the second when there are exactly two. `names` label the
/// runs (e.g. file stems).
pub fn render_comparison(runs: &[RunReport], names: &[String], width: Option<u16>) -> String {
    let cols: Vec<String> = (0..runs.len())
        .map(|i| {
            names
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("run {}", i + 1))
        })
        .collect();
    let mut rows_by_rate: Vec<(f64, usize, &BenchmarkReport)> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.benchmarks.iter().map(move |b| (rate_of(b), i, b)))
        .collect();
    rows_by_rate.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut groups: Vec<(&str, &[&str])> = vec![("Benchmark", &["rate req/s", "run", "label"])];
    for f in FIGURES {
        groups.push((f.title, &["value"]));
    }
    let rows = rows_by_rate
        .iter()
        .map(|(rate, i, b)| {
            let mut row = vec![format!("{rate:.2}"), cols[*i].clone(), b.label.clone()];
            let reference = (*i > 0)
                .then(|| runs.first().and_then(|r| counterpart(r, b)))
                .flatten();
            for f in FIGURES {
                let mark = reference.map_or("", |a| figure_change(f, a, b).mark());
                row.push(
                    f.value(b)
                        .map_or("-".into(), |v| format!("{v:.*}{mark}", f.digits)),
                );
            }
            row
        })
        .collect();
    let mut out = String::from("Runs compared:\n");
    for (i, r) in runs.iter().enumerate() {
        out.push_str(&format!(
            "    {}: run {} created {} ({} against {})\n",
            cols[i],
            r.run_id,
            r.created,
            bench_core::escape_controls(&r.environment.model),
            r.environment.target
        ));
    }
    out.push('\n');
    out.push_str(&render(&Spec { groups, rows }, width));
    out.push('\n');
    if runs.len() > 1 {
        out.push_str(&legend(&cols[0]));
        out.push('\n');
    }
    out.push_str(&capacities(runs, &cols));
    out
}

/// A capacity figure's 95% interval in a run (an open upper end as infinity).
type CapacityInterval = fn(&RunReport, &Capacity) -> Option<Interval>;

fn crossing(iv: Option<bench_core::CrossingInterval>) -> Option<Interval> {
    iv.map(|i| Interval {
        low: i.low,
        high: i.high.unwrap_or(f64::INFINITY),
    })
}

/// Each run's capacity answer side by side (nothing when no run has one); with exactly two
/// runs each change is marked beyond the intervals, within noise, or no interval (the
/// maximum's output tokens/s has none).
fn capacities(runs: &[RunReport], cols: &[String]) -> String {
    if runs.iter().all(|r| r.capacity.is_none()) {
        return String::new();
    }
    type Get = fn(&Capacity) -> Option<f64>;
    let figures: [(&str, Get, CapacityInterval); 4] = [
        (
            "max req/s",
            |c| Some(c.max_requests_per_s),
            crate::figures::capacity_interval::max_interval,
        ),
        (
            "max output tok/s",
            |c| Some(c.max_output_tokens_per_s),
            |_, _| None,
        ),
        (
            "knee req/s",
            |c| c.knee_requests_per_s,
            |r, c| crossing(crate::figures::capacity_interval::knee_interval(r, c)),
        ),
        (
            "SLO max req/s",
            |c| c.slo_max_requests_per_s,
            |r, c| crossing(crate::figures::capacity_interval::slo_interval(r, c)),
        ),
    ];
    let mut out = String::from("\nCapacity:\n");
    for (name, get, interval) in figures {
        let vals: Vec<Option<f64>> = runs
            .iter()
            .map(|r| r.capacity.as_ref().and_then(get))
            .collect();
        let cells: Vec<String> = vals
            .iter()
            .zip(cols)
            .map(|(v, c)| format!("{c} {}", v.map_or("-".into(), |v| format!("{v:.2}"))))
            .collect();
        let delta = match vals.as_slice() {
            [Some(a), Some(b)] if *a != 0.0 => {
                let of = |r: &RunReport| interval(r, r.capacity.as_ref()?);
                let c = change(of(&runs[0]), of(&runs[1]));
                format!(" ({:+.1} %, {})", (b - a) / a * 100.0, c.words())
            }
            _ => String::new(),
        };
        out.push_str(&format!("  {name:<18} {}{delta}\n", cells.join("  |  ")));
    }
    out
}
