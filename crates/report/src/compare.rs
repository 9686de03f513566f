//! Side-by-side comparison of saved runs (`bench report A.json B.json`).

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

/// Puts `runs` side by side: one row per benchmark label (in order of first appearance),
/// one column per run for each figure, plus the change from the first run to the second
/// (`Δ%`) when there are exactly two. `names` label the runs (e.g. file stems).
pub fn render_comparison(runs: &[RunReport], names: &[String], width: Option<u16>) -> String {
    let mut labels: Vec<&str> = Vec::new();
    for r in runs {
        for b in &r.benchmarks {
            if !labels.contains(&b.label.as_str()) {
                labels.push(&b.label);
            }
        }
    }
    let mut cols: Vec<String> = (0..runs.len())
        .map(|i| {
            names
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("run {}", i + 1))
        })
        .collect();
    let two = runs.len() == 2;
    if two {
        cols.push("Δ%".into());
    }
    let col_refs: Vec<&str> = cols.iter().map(String::as_str).collect();
    let mut groups: Vec<(&str, &[&str])> = vec![("Benchmark", &["label"])];
    for (title, _, _) in FIGURES {
        groups.push((title, &col_refs));
    }
    let mut rows = Vec::new();
    for label in &labels {
        let mut row = vec![label.to_string()];
        for (_, get, digits) in FIGURES {
            let vals: Vec<Option<f64>> = runs
                .iter()
                .map(|r| {
                    r.benchmarks
                        .iter()
                        .find(|b| b.label == *label)
                        .and_then(get)
                })
                .collect();
            for v in &vals {
                row.push(v.map_or("-".into(), |v| format!("{v:.*}", digits)));
            }
            if two {
                row.push(match (vals[0], vals[1]) {
                    (Some(a), Some(b)) if a != 0.0 => format!("{:+.1}", (b - a) / a * 100.0),
                    _ => "-".into(),
                });
            }
        }
        rows.push(row);
    }
    let mut out = String::from("Runs compared:\n");
    for (i, r) in runs.iter().enumerate() {
        out.push_str(&format!(
            "    {}: run {} created {} ({} against {})\n",
            cols.get(i).map_or("", String::as_str),
            r.run_id,
            r.created,
            r.environment.model,
            r.environment.target
        ));
    }
    out.push('\n');
    out.push_str(&render(&Spec { groups, rows }, width));
    out.push('\n');
    out
}
