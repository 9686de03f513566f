//! The server's side in the consoles: a "Server Metrics" table after guidellm's stats and a
//! "Server metrics" section in each vLLM-style block, from `benchmarks[i].server_metrics`
//! (running and waiting requests, KV usage, prefix-cache hit rate, preemptions, and the
//! server's TTFT beside the client's). Nothing is printed for runs without server metrics.

use std::fmt::Write as _;

use bench_servermetrics::GaugeSummary;

use crate::figures::model::{BenchmarkReport, RunReport};
use crate::figures::options::Metric;
use crate::views::common::{render, Spec};

fn gauge(g: Option<&GaugeSummary>, scale: f64, digits: usize) -> [String; 2] {
    match g {
        Some(g) => [
            format!("{:.*}", digits, g.mean * scale),
            format!("{:.*}", digits, g.max * scale),
        ],
        None => ["-".into(), "-".into()],
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// The guidellm-style table, or `None` when no benchmark has server metrics.
pub(crate) fn server_table(run: &RunReport, width: Option<u16>) -> Option<String> {
    if run.benchmarks.iter().all(|b| b.server_metrics.is_none()) {
        return None;
    }
    const MM: &[&str] = &["mean", "max"];
    const P: &[&str] = &["p50", "p99"];
    let mut spec = Spec {
        groups: vec![
            ("Metadata", &["Benchmark"]),
            ("Running", MM),
            ("Waiting", MM),
            ("KV Usage (%)", MM),
            ("Prefix Hit", &["(%)"]),
            ("Preempt", &["total"]),
            ("Server TTFT (ms)", P),
            ("Client TTFT (ms)", P),
        ],
        rows: Vec::new(),
    };
    for b in &run.benchmarks {
        let Some(m) = &b.server_metrics else {
            continue;
        };
        let s = &m.summary;
        let mut row = vec![b.label.clone()];
        row.extend(gauge(s.running.as_ref(), 1.0, 1));
        row.extend(gauge(s.waiting.as_ref(), 1.0, 1));
        row.extend(gauge(s.kv_usage.as_ref(), 100.0, 1));
        row.push(opt(s.prefix_cache_hit_rate.map(|r| r * 100.0), 1));
        row.push(opt(s.preemptions.map(|p| p.delta), 0));
        row.push(opt(s.ttft_ms.as_ref().map(|t| t.p50), 1));
        row.push(opt(s.ttft_ms.as_ref().map(|t| t.p99), 1));
        let client = |p| b.percentile_ms(Metric::Ttft, p);
        row.push(opt(s.ttft_ms.as_ref().and(client(50.0)), 1));
        row.push(opt(s.ttft_ms.as_ref().and(client(99.0)), 1));
        spec.rows.push(row);
    }
    Some(render(&spec, width))
}

/// The vLLM-style section (`{:<40} {:<10}` lines), empty without server metrics.
pub(crate) fn vllm_section(b: &BenchmarkReport, centered: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    let Some(m) = &b.server_metrics else {
        return out;
    };
    let s = &m.summary;
    let _ = writeln!(out, "{}", centered(" Server metrics "));
    let mut line = |label: &str, v: f64| {
        let _ = writeln!(out, "{label:<40} {:<10}", format!("{v:.2}"));
    };
    let gauges = [
        ("running requests", &s.running, 1.0, ""),
        ("waiting requests", &s.waiting, 1.0, ""),
        ("KV cache usage", &s.kv_usage, 100.0, " (%)"),
    ];
    for (name, g, scale, unit) in gauges {
        if let Some(g) = g {
            line(&format!("Mean {name}{unit}:"), g.mean * scale);
            line(&format!("Max {name}{unit}:"), g.max * scale);
        }
    }
    if let Some(r) = s.prefix_cache_hit_rate {
        line("Prefix cache hit rate (%):", r * 100.0);
    }
    if let Some(p) = s.preemptions {
        line("Preemptions:", p.delta);
    }
    if let Some(t) = s.generation_tokens {
        line("Server generation tokens:", t.delta);
    }
    if let Some(t) = &s.ttft_ms {
        line("Mean server TTFT (ms):", t.mean);
        line("P99 server TTFT (ms):", t.p99);
    }
    out
}
