//! Side-by-side comparison of saved runs (`bench report A.json B.json`).

use bench_core::Capacity;

use crate::guidellm::{render, Spec};
use crate::model::{BenchmarkReport, RunReport};
use crate::options::Metric;

type Getter = fn(&BenchmarkReport) -> Option<f64>;

/// The compared figures: (title, getter, digits).
const FIGURES: &[(&str, Getter, usize)] = &[
    ("Req/s", |b| Some(b.rates.requests_per_s), 2),
    ("Out Tok/s", |b| Some(b.rates.output_tokens_per_s), 1),
    ("Concurrency", |b| Some(b.rates.concurrency), 2),
    ("Errored", |b| Some(b.requests.errored as f64), 0),
    ("TTFT p50 (ms)", |b| b.percentile_ms(Metric::Ttft, 50.0), 1),
    ("TTFT p99 (ms)", |b| b.percentile_ms(Metric::Ttft, 99.0), 1),
    ("ITL p50 (ms)", |b| b.percentile_ms(Metric::Itl, 50.0), 1),
    ("ITL p99 (ms)", |b| b.percentile_ms(Metric::Itl, 99.0), 1),
    ("TPOT p50 (ms)", |b| b.percentile_ms(Metric::Tpot, 50.0), 1),
    ("E2EL p50 (ms)", |b| b.percentile_ms(Metric::E2el, 50.0), 1),
    ("E2EL p99 (ms)", |b| b.percentile_ms(Metric::E2el, 99.0), 1),
];

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
    for (title, _, _) in FIGURES {
        groups.push((title, &["value"]));
    }
    let rows = rows_by_rate
        .iter()
        .map(|(rate, i, b)| {
            let mut row = vec![format!("{rate:.2}"), cols[*i].clone(), b.label.clone()];
            for (_, get, digits) in FIGURES {
                row.push(get(b).map_or("-".into(), |v| format!("{v:.*}", digits)));
            }
            row
        })
        .collect();
    let mut out = String::from("Runs compared:\n");
    for (i, r) in runs.iter().enumerate() {
        out.push_str(&format!(
            "    {}: run {} created {} ({} against {})\n",
            cols[i], r.run_id, r.created, r.environment.model, r.environment.target
        ));
    }
    out.push('\n');
    out.push_str(&render(&Spec { groups, rows }, width));
    out.push('\n');
    out.push_str(&capacities(runs, &cols));
    out
}

/// Each run's capacity answer side by side (nothing when no run has one).
fn capacities(runs: &[RunReport], cols: &[String]) -> String {
    if runs.iter().all(|r| r.capacity.is_none()) {
        return String::new();
    }
    type Get = fn(&Capacity) -> Option<f64>;
    let figures: [(&str, Get); 4] = [
        ("max req/s", |c| Some(c.max_requests_per_s)),
        ("max output tok/s", |c| Some(c.max_output_tokens_per_s)),
        ("knee req/s", |c| c.knee_requests_per_s),
        ("SLO max req/s", |c| c.slo_max_requests_per_s),
    ];
    let mut out = String::from("\nCapacity:\n");
    for (name, get) in figures {
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
                let sure = if name == "max req/s" {
                    significance(runs)
                } else {
                    ""
                };
                format!(" ({:+.1} %{sure})", (b - a) / a * 100.0)
            }
            _ => String::new(),
        };
        out.push_str(&format!("  {name:<18} {}{delta}\n", cells.join("  |  ")));
    }
    out
}

/// Whether two runs' capacities differ beyond their 95% intervals (docs/metrics.md,
/// "Intervals"): `, beyond the intervals` when the intervals do not overlap, `, within noise`
/// when they do, nothing when a run has no interval.
fn significance(runs: &[RunReport]) -> &'static str {
    match (
        runs.first().and_then(crate::capacity::capacity_interval),
        runs.get(1).and_then(crate::capacity::capacity_interval),
    ) {
        (Some(a), Some(b)) if a.high < b.low || b.high < a.low => ", beyond the intervals",
        (Some(_), Some(_)) => ", within noise",
        _ => "",
    }
}
