//! The server's side in the HTML report: across the sweep, queue depth, KV usage and the
//! server's TTFT against the completed request rate (beside the client's curves); per
//! benchmark, the server figures, their time series over the benchmark, and every scraped
//! metric. Nothing is added for runs without server metrics.

use std::fmt::Write as _;

use bench_servermetrics::{MetricSummary, ServerMetrics};

use crate::figures::model::{BenchmarkReport, RunReport};
use crate::figures::options::Metric;
use crate::views::common::esc;
use crate::views::svg::{line_chart, Axes, Series, PALETTE};

fn series(
    bs: &[(&BenchmarkReport, &ServerMetrics)],
    name: &str,
    color: usize,
    f: &dyn Fn(&BenchmarkReport, &ServerMetrics) -> Option<f64>,
) -> Option<Series> {
    let mut s = Series::line(name, PALETTE[color % PALETTE.len()], Vec::new());
    for (b, m) in bs {
        if let Some(v) = f(b, m) {
            s.points.push((b.rates.requests_per_s, v));
            s.notes.push(b.label.clone());
        }
    }
    (!s.points.is_empty()).then_some(s)
}

fn axes(title: &str, x: &str, y: &str) -> Axes {
    Axes {
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
        x_ticks: None,
        marks: Vec::new(),
    }
}

/// Charts across the sweep, against completed requests/s.
pub(crate) fn sweep_charts(h: &mut String, run: &RunReport) {
    let mut bs: Vec<(&BenchmarkReport, &ServerMetrics)> = run
        .benchmarks
        .iter()
        .filter_map(|b| b.server_metrics.as_ref().map(|m| (b, m)))
        .collect();
    if bs.is_empty() {
        return;
    }
    bs.sort_by(|a, b| {
        a.0.rates
            .requests_per_s
            .total_cmp(&b.0.rates.requests_per_s)
    });
    h.push_str("<h3>Server side (its own /metrics)</h3>\n<div class=\"charts\">\n");
    let queue: Vec<Series> = [
        series(&bs, "running (mean)", 0, &|_, m| {
            m.summary.running.map(|g| g.mean)
        }),
        series(&bs, "waiting (mean)", 1, &|_, m| {
            m.summary.waiting.map(|g| g.mean)
        }),
        series(&bs, "waiting (max)", 2, &|_, m| {
            m.summary.waiting.map(|g| g.max)
        }),
        series(&bs, "client concurrency", 3, &|b, _| {
            Some(b.rates.concurrency)
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    let x = "completed requests/s";
    h.push_str(&line_chart(
        &axes("Server queue vs request rate", x, "requests"),
        &queue,
    ));
    let kv: Vec<Series> = [
        series(&bs, "KV usage (mean)", 0, &|_, m| {
            m.summary.kv_usage.map(|g| g.mean * 100.0)
        }),
        series(&bs, "KV usage (max)", 1, &|_, m| {
            m.summary.kv_usage.map(|g| g.max * 100.0)
        }),
        series(&bs, "prefix-cache hit rate", 2, &|_, m| {
            m.summary.prefix_cache_hit_rate.map(|r| r * 100.0)
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !kv.is_empty() {
        h.push_str(&line_chart(&axes("KV cache vs request rate", x, "%"), &kv));
    }
    let ttft: Vec<Series> = [
        series(&bs, "server p50", 0, &|_, m| {
            m.summary.ttft_ms.as_ref().map(|t| t.p50)
        }),
        series(&bs, "server p99", 1, &|_, m| {
            m.summary.ttft_ms.as_ref().map(|t| t.p99)
        }),
        series(&bs, "client p50", 2, &|b, m| {
            m.summary.ttft_ms.as_ref()?;
            b.percentile_ms(Metric::Ttft, 50.0)
        }),
        series(&bs, "client p99", 3, &|b, m| {
            m.summary.ttft_ms.as_ref()?;
            b.percentile_ms(Metric::Ttft, 99.0)
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !ttft.is_empty() {
        h.push_str(&line_chart(&axes("TTFT: server vs client", x, "ms"), &ttft));
    }
    h.push_str("\n</div>\n");
}

fn cell(v: Option<f64>, scale: f64) -> String {
    v.map_or("-".into(), |v| format!("{:.2}", v * scale))
}

/// One benchmark's server figures, time series and raw metrics.
pub(crate) fn benchmark_section(h: &mut String, b: &BenchmarkReport) {
    let Some(m) = &b.server_metrics else {
        return;
    };
    let s = &m.summary;
    let _ = writeln!(
        h,
        "<h3>Server ({}, {} scrapes every {} s of {})</h3>",
        esc(m.server.as_deref().unwrap_or("unknown server")),
        m.scrapes,
        m.interval_s,
        esc(&m.url)
    );
    h.push_str("<table>\n<tr><th>Figure</th><th>mean</th><th>max</th><th>last</th></tr>\n");
    for (name, g, scale) in [
        ("running requests", &s.running, 1.0),
        ("waiting requests", &s.waiting, 1.0),
        ("KV usage (%)", &s.kv_usage, 100.0),
    ] {
        let _ = writeln!(
            h,
            "<tr><td>{name}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            cell(g.map(|g| g.mean), scale),
            cell(g.map(|g| g.max), scale),
            cell(g.map(|g| g.last), scale)
        );
    }
    h.push_str("</table>\n<table>\n<tr><th>Figure</th><th>over the benchmark</th><th>per second</th></tr>\n");
    for (name, c) in [
        ("prompt tokens", s.prompt_tokens),
        ("generation tokens", s.generation_tokens),
        ("preemptions", s.preemptions),
    ] {
        let _ = writeln!(
            h,
            "<tr><td>{name}</td><td>{}</td><td>{}</td></tr>",
            cell(c.map(|c| c.delta), 1.0),
            cell(c.map(|c| c.rate_per_s), 1.0)
        );
    }
    let _ = writeln!(
        h,
        "<tr><td>prefix-cache hit rate (%)</td><td>{}</td><td>-</td></tr>\n</table>",
        cell(s.prefix_cache_hit_rate, 100.0)
    );
    latency_table(h, b, m);
    time_series(h, b, m);
    raw_metrics(h, m);
}

fn latency_table(h: &mut String, b: &BenchmarkReport, m: &ServerMetrics) {
    let s = &m.summary;
    let rows = [
        ("TTFT", &s.ttft_ms, Some(Metric::Ttft)),
        ("ITL", &s.itl_ms, Some(Metric::Itl)),
        ("E2E", &s.e2e_ms, Some(Metric::E2el)),
    ];
    if rows.iter().all(|r| r.1.is_none()) {
        return;
    }
    h.push_str("<table>\n<tr><th>Latency (ms)</th><th>server mean</th><th>server p50</th><th>server p99</th><th>client mean</th><th>client p50</th><th>client p99</th></tr>\n");
    for (name, l, metric) in rows {
        let Some(l) = l else { continue };
        let c = metric.map(|m| {
            (
                b.metric(m).mean,
                b.percentile_ms(m, 50.0),
                b.percentile_ms(m, 99.0),
            )
        });
        let _ = writeln!(
            h,
            "<tr><td>{name}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            l.mean,
            l.p50,
            l.p99,
            cell(c.map(|c| c.0), 1.0),
            cell(c.and_then(|c| c.1), 1.0),
            cell(c.and_then(|c| c.2), 1.0)
        );
    }
    h.push_str("</table>\n<p class=\"meta\">Server percentiles are estimated from its histogram buckets (linear inside a bucket); the client's are exact to 0.1 %. Client minus server is network and client time.</p>\n");
}

fn time_series(h: &mut String, b: &BenchmarkReport, m: &ServerMetrics) {
    if m.series.is_empty() {
        return;
    }
    let pick =
        |name: &str, i: usize, f: &dyn Fn(&bench_servermetrics::SeriesPoint) -> Option<f64>| {
            let points: Vec<(f64, f64)> = m
                .series
                .iter()
                .filter_map(|p| Some((p.t_s, f(p)?)))
                .collect();
            (!points.is_empty()).then(|| Series {
                notes: points.iter().map(|p| format!("t = {:.2} s", p.0)).collect(),
                ..Series::line(name, PALETTE[i], points)
            })
        };
    h.push_str("<div class=\"charts\">\n");
    let queue: Vec<Series> = [
        pick("running", 0, &|p| p.running),
        pick("waiting", 1, &|p| p.waiting),
    ]
    .into_iter()
    .flatten()
    .collect();
    let title = format!("{}: server queue over the benchmark", b.label);
    h.push_str(&line_chart(
        &axes(&title, "seconds from start", "requests"),
        &queue,
    ));
    if let Some(kv) = pick("KV usage", 2, &|p| p.kv_usage.map(|v| v * 100.0)) {
        let title = format!("{}: KV usage over the benchmark", b.label);
        h.push_str(&line_chart(&axes(&title, "seconds from start", "%"), &[kv]));
    }
    h.push_str("\n</div>\n");
}

fn raw_metrics(h: &mut String, m: &ServerMetrics) {
    let _ = writeln!(
        h,
        "<details>\n<summary>All {} scraped metrics (labels folded)</summary>\n<div class=\"scroll\"><table>\n<tr><th>Metric</th><th>Type</th><th>Summary</th></tr>",
        m.metrics.len()
    );
    for (name, s) in &m.metrics {
        let (kind, text) = match s {
            MetricSummary::Gauge {
                mean,
                max,
                last,
                samples,
            } => (
                "gauge",
                format!("mean {mean:.4}, max {max:.4}, last {last:.4} ({samples} samples)"),
            ),
            MetricSummary::Counter {
                delta,
                rate_per_s,
                reset,
            } => (
                "counter",
                if *reset {
                    "reset during the benchmark".into()
                } else {
                    format!("delta {}, {} /s", cell(*delta, 1.0), cell(*rate_per_s, 1.0))
                },
            ),
            MetricSummary::Histogram {
                count,
                mean,
                percentiles,
                ..
            } => (
                "histogram",
                format!(
                    "count {count}, mean {}, {}",
                    cell(*mean, 1.0),
                    percentiles
                        .iter()
                        .map(|(k, v)| format!("{k} {v:.4}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        };
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td>{kind}</td><td>{}</td></tr>",
            esc(name),
            esc(&text)
        );
    }
    h.push_str("</table></div>\n</details>\n");
}
