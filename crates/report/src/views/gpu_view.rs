//! The GPUs in every output (docs/metrics.md, "GPU telemetry and energy"): a "GPU Metrics"
//! table after guidellm's stats, a "GPU metrics" section in each vLLM-style block, a table in
//! the HTML's benchmark section and six CSV columns, from `benchmarks[i].gpu_metrics`. Nothing
//! is printed for runs without `--gpu-metrics`.

use std::fmt::Write as _;

use bench_servermetrics::gpu::GpuMetrics;

use crate::figures::model::{BenchmarkReport, RunReport};
use crate::views::common::{render, Spec};

/// The CSV's GPU columns (empty cells without GPU figures).
pub(crate) const CSV_COLUMNS: [&str; 6] = [
    "gpu_power_w_mean",
    "gpu_utilization_pct_mean",
    "gpu_memory_used_mib_mean",
    "gpu_energy_j",
    "gpu_j_per_output_token",
    "gpu_j_per_request",
];

/// The figures in [`CSV_COLUMNS`]' order.
fn figures(g: &GpuMetrics) -> [Option<f64>; 6] {
    [
        g.power_w_mean,
        g.utilization_pct_mean,
        g.memory_used_mib_mean,
        g.energy_j,
        g.j_per_output_token,
        g.j_per_request,
    ]
}

/// The cells of [`CSV_COLUMNS`].
pub(crate) fn csv_cells(b: &BenchmarkReport, num: fn(f64) -> String) -> [String; 6] {
    let f = b.gpu_metrics.as_ref().map(figures).unwrap_or_default();
    f.map(|v| v.map(num).unwrap_or_default())
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// Joules per token in millijoules (a token costs a fraction of a joule on any GPU).
fn mj(v: Option<f64>) -> Option<f64> {
    v.map(|j| j * 1e3)
}

/// The guidellm-style table, or `None` when no benchmark has GPU figures.
pub(crate) fn gpu_table(run: &RunReport, width: Option<u16>) -> Option<String> {
    if run.benchmarks.iter().all(|b| b.gpu_metrics.is_none()) {
        return None;
    }
    let mut spec = Spec {
        groups: vec![
            ("Metadata", &["Benchmark", "GPUs"]),
            ("Power (W)", &["mean"]),
            ("Util (%)", &["mean"]),
            ("Memory (MiB)", &["mean"]),
            ("Energy", &["(J)", "mJ/tok", "J/req"]),
        ],
        rows: Vec::new(),
    };
    for b in &run.benchmarks {
        let Some(g) = &b.gpu_metrics else {
            continue;
        };
        spec.rows.push(vec![
            b.label.clone(),
            g.gpus.to_string(),
            opt(g.power_w_mean, 1),
            opt(g.utilization_pct_mean, 1),
            opt(g.memory_used_mib_mean, 0),
            opt(g.energy_j, 1),
            opt(mj(g.j_per_output_token), 2),
            opt(g.j_per_request, 2),
        ]);
    }
    Some(render(&spec, width))
}

/// The vLLM-style section (`{:<40} {:<10}` lines), empty without GPU figures.
pub(crate) fn vllm_section(b: &BenchmarkReport, centered: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    let Some(g) = &b.gpu_metrics else {
        return out;
    };
    let _ = writeln!(out, "{}", centered(" GPU metrics "));
    let _ = writeln!(out, "{:<40} {:<10}", "GPUs:", g.gpus);
    let lines = [
        ("Mean GPU power (W):", g.power_w_mean),
        ("Mean GPU utilization (%):", g.utilization_pct_mean),
        ("Mean GPU memory used (MiB):", g.memory_used_mib_mean),
        ("GPU energy (J):", g.energy_j),
        ("Energy per output token (mJ):", mj(g.j_per_output_token)),
        ("Energy per request (J):", g.j_per_request),
    ];
    for (label, v) in lines {
        if let Some(v) = v {
            let _ = writeln!(out, "{label:<40} {:<10}", format!("{v:.2}"));
        }
    }
    out
}

/// The HTML's GPU table of one benchmark: the totals, then each node's mean and max.
pub(crate) fn html_section(h: &mut String, b: &BenchmarkReport) {
    let Some(g) = &b.gpu_metrics else {
        return;
    };
    let _ = writeln!(
        h,
        "<h3>GPUs ({} over {} exporter{})</h3>",
        g.gpus,
        g.nodes.len(),
        if g.nodes.len() == 1 { "" } else { "s" }
    );
    h.push_str("<table>\n<tr><th>Power mean (W)</th><th>Utilization mean (%)</th><th>Memory mean (MiB)</th><th>Energy (J)</th><th>Energy per output token (mJ)</th><th>Energy per request (J)</th></tr>\n<tr>");
    for (v, digits) in figures(g).into_iter().zip([1, 1, 0, 1, 3, 2]) {
        let v = if digits == 3 { mj(v) } else { v };
        let _ = write!(h, "<td>{}</td>", opt(v, digits));
    }
    h.push_str("</tr>\n</table>\n");
    h.push_str("<table>\n<tr><th>Exporter</th><th>GPUs</th><th>Power mean / max (W)</th><th>Utilization mean / max (%)</th><th>Memory mean / max (MiB)</th><th>Energy (J)</th></tr>\n");
    for n in &g.nodes {
        let mm = |s: Option<bench_servermetrics::GaugeSummary>, d: usize| {
            s.map_or("-".into(), |s| format!("{:.d$} / {:.d$}", s.mean, s.max))
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            crate::views::common::esc(&n.url),
            n.gpus,
            mm(n.power_w, 1),
            mm(n.utilization_pct, 1),
            mm(n.memory_used_mib, 0),
            opt(n.energy_j, 1)
        );
    }
    h.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use bench_servermetrics::gpu::{combine, GpuNode};
    use bench_servermetrics::GaugeSummary;

    use super::*;
    use crate::test_support::open_loop;

    fn with_gpus() -> BenchmarkReport {
        let mut b = open_loop(|_| 100);
        let g = |mean: f64| {
            Some(GaugeSummary {
                mean,
                max: mean * 1.5,
                last: mean,
            })
        };
        b.gpu_metrics = combine(
            vec![GpuNode {
                url: "http://gpu-node:9400/metrics".into(),
                gpus: 8,
                power_w: g(3200.0),
                utilization_pct: g(87.5),
                memory_used_mib: g(600_000.0),
                energy_j: Some(32_000.0),
            }],
            64_000,
            500,
        );
        b
    }

    #[test]
    fn every_output_shows_the_gpus_and_none_without_them() {
        let b = with_gpus();
        let mut run = RunReport::new("id", "2026-01-01T00:00:00Z");
        run.benchmarks.push(open_loop(|_| 100));
        assert_eq!(gpu_table(&run, Some(200)), None);
        assert_eq!(vllm_section(&run.benchmarks[0], |t| t.to_string()), "");
        run.benchmarks[0] = b.clone();
        let table = gpu_table(&run, Some(200)).expect("table");
        for cell in ["3200.0", "87.5", "600000", "32000.0", "500.00", "64.00"] {
            assert!(table.contains(cell), "{cell} in {table}");
        }
        let section = vllm_section(&b, |t| t.to_string());
        for (label, v) in [
            ("Energy per output token (mJ):", "500.00"),
            ("Energy per request (J):", "64.00"),
        ] {
            let line = format!("{label:<40} {v:<10}");
            assert!(section.contains(&line), "{line} in {section}");
        }
        let mut h = String::new();
        html_section(&mut h, &b);
        assert!(h.contains("<h3>GPUs (8 over 1 exporter)</h3>"), "{h}");
        assert!(h.contains("<td>3200.0 / 4800.0</td>"), "{h}");
        let cells = csv_cells(&b, |v| format!("{v}"));
        assert_eq!(
            cells,
            ["3200", "87.5", "600000", "32000", "0.5", "64"].map(String::from)
        );
    }
}
