//! The HTML report: one self-contained page (inline CSS and SVG charts, no script, no
//! external style, font or image), so it renders offline and keeps working for years.

use std::fmt::Write as _;

use crate::figures::model::{BenchmarkReport, RunReport};
use crate::figures::options::Metric;
use crate::views::common::esc;
use crate::views::svg::{line_chart, Axes, Series, PALETTE};
use crate::views::sweep_html::{capacity_box, sweep_charts, Drawn};

pub const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1d232a;background:#fff}\
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #dde;padding-bottom:4px}\
h3{font-size:15px;margin:18px 0 6px}.meta{color:#555;margin:0 0 12px}\
table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:13px;margin:6px 0}\
th,td{border:1px solid #d7dbe0;padding:3px 8px;text-align:right}th{background:#f3f5f8}\
th:first-child,td:first-child{text-align:left}\
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:14px;width:100%}\
svg.chart{border:1px solid #e3e6ea;background:#fff;width:100%;height:auto}\
svg .title{font-size:15px;font-weight:600;fill:#1d232a}svg .tick{font-size:12px;fill:#444}\
svg .label{font-size:13px;fill:#333}svg .legend{font-size:12px;fill:#333}svg .empty{font-size:13px;fill:#888}\
svg .mark line{stroke-width:1.5}svg .mark text{font-size:11px;font-weight:600}\
svg .slo line{stroke:#c0392b}svg .slo text{fill:#c0392b}svg .knee line{stroke:#6c3483}svg .knee text{fill:#6c3483}\
svg .capacity line{stroke:#1e8449}svg .capacity text{fill:#1e8449}\
.answer{border:2px solid #1e8449;border-radius:6px;padding:10px 16px;margin:12px 0;background:#f4fbf6;font-size:15px}\
.answer b{font-size:17px}.answer p{margin:4px 0}\
svg .grid{stroke:#eceff2;stroke-width:1}svg .axis{stroke:#888;stroke-width:1}\
pre{background:#f6f8fa;padding:8px;font-size:12px;overflow:auto;max-height:320px}\
details{margin:8px 0}summary{cursor:pointer;font-weight:600}\
.kv td{text-align:left}.scroll{overflow-x:auto}\
.changes td{white-space:nowrap}.changes td:nth-child(2){text-align:left}.changes td.beyond{background:#fdecea;font-weight:600}.changes td.noise{color:#555}.changes td.unjudged{color:#999}";

/// Renders `run` as one self-contained HTML page: run metadata, a summary table, charts of
/// latency percentiles and throughput against request rate across the sweep, and per
/// benchmark its figures and the distributions of its latencies.
pub fn render_html(run: &RunReport) -> String {
    let mut h = String::new();
    let env = &run.environment;
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>bench report {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(&run.run_id)
    );
    let _ = writeln!(
        h,
        "<h1>bench report</h1>\n<p class=\"meta\">Run <code>{}</code>, created {}, schema version {}.</p>",
        esc(&run.run_id),
        esc(&run.created),
        run.schema_version
    );
    capacity_box(&mut h, run);
    let trials = crate::views::runs_view::render_trials(run);
    if !trials.is_empty() {
        // Repeated trials: the consoles' block, the across-trial intervals.
        let _ = writeln!(h, "<pre id=\"trials\">{}</pre>", esc(&trials));
    }
    h.push_str("<table class=\"kv\">\n");
    for (k, v) in [
        ("Target", env.target.as_str()),
        ("Model", env.model.as_str()),
        ("Backend", env.backend.as_str()),
        ("Processor", env.processor.as_deref().unwrap_or("-")),
        ("bench version", env.tool_version.as_str()),
        ("Client host", env.host.as_str()),
        ("Client OS", env.os.as_str()),
    ] {
        let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    let _ = writeln!(
        h,
        "<tr><th>Client CPUs</th><td>{}</td></tr>\n</table>",
        env.cpus
    );

    h.push_str("<h2>Summary</h2>\n");
    summary_table(&mut h, run);
    sweep_charts(
        &mut h,
        &[Drawn {
            run,
            name: String::new(),
        }],
    );
    crate::views::html_server::sweep_charts(&mut h, run);
    h.push_str("<h2>Benchmarks</h2>\n");
    for b in &run.benchmarks {
        benchmark_section(&mut h, b);
    }
    let config = serde_json::to_string_pretty(&run.config).unwrap_or_default();
    let _ = write!(
        h,
        "<h2>Configuration</h2>\n<pre>{}</pre>\n<p class=\"meta\">Metric definitions: docs/metrics.md of bench. Latencies in milliseconds; rates over each benchmark's measurement window.</p>\n</body>\n</html>\n",
        esc(&config)
    );
    h
}

/// Renders several runs on one page: each run's capacity answer and summary, and the charts
/// across the sweep with every run overlaid by rate (one colour per run; p99 solid, p50
/// dashed). `names` label the runs.
pub fn render_comparison_html(runs: &[RunReport], names: &[String]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>bench comparison</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>bench comparison of {} runs</h1>\n",
        runs.len()
    );
    let name = |i: usize| {
        names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("run {}", i + 1))
    };
    for (i, run) in runs.iter().enumerate() {
        let _ = writeln!(
            h,
            "<h2>{}</h2>\n<p class=\"meta\">Run <code>{}</code>, created {}, {} against {}.</p>",
            esc(&name(i)),
            esc(&run.run_id),
            esc(&run.created),
            esc(&run.environment.model),
            esc(&run.environment.target)
        );
        capacity_box(&mut h, run);
    }
    let drawn: Vec<Drawn> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| Drawn { run, name: name(i) })
        .collect();
    sweep_charts(&mut h, &drawn);
    let names: Vec<String> = (0..runs.len()).map(name).collect();
    crate::views::compare_html::changes(&mut h, runs, &names);
    for (i, run) in runs.iter().enumerate() {
        let _ = writeln!(h, "<h2>Summary: {}</h2>", esc(&name(i)));
        summary_table(&mut h, run);
    }
    h.push_str("</body>\n</html>\n");
    h
}

fn pct(b: &BenchmarkReport, m: Metric, p: f64) -> String {
    b.percentile_ms(m, p)
        .map_or("-".into(), |v| format!("{v:.1}"))
}

fn summary_table(h: &mut String, run: &RunReport) {
    // A Cancelled column only when the client cancelled requests on purpose (`--cancel-rate`).
    let cancels = run.benchmarks.iter().any(|b| b.cancellation.is_some());
    let cancelled = |b: &BenchmarkReport| {
        if cancels {
            format!("<td>{}</td>", b.requests.cancelled)
        } else {
            String::new()
        }
    };
    h.push_str("<div class=\"scroll\"><table>\n<tr><th>Benchmark</th><th>Completed</th><th>Incomplete</th><th>Errored</th>");
    if cancels {
        h.push_str("<th>Cancelled</th>");
    }
    h.push_str("<th>Target rate</th><th>Req/s</th><th>Concurrency</th><th>Out tok/s</th><th>Total tok/s</th><th>TTFT p50</th><th>TTFT p99</th><th>ITL p50</th><th>ITL p99</th><th>TPOT p50</th><th>E2EL p50</th><th>E2EL p99</th><th>Goodput/s</th></tr>\n");
    for b in &run.benchmarks {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}<td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&b.label),
            b.requests.completed,
            b.requests.incomplete,
            b.requests.errored,
            cancelled(b),
            b.rates.target_rate.map_or("-".into(), |r| format!("{r:.2}")),
            b.rates.requests_per_s,
            b.rates.concurrency,
            b.rates.output_tokens_per_s,
            b.rates.total_tokens_per_s,
            pct(b, Metric::Ttft, 50.0),
            pct(b, Metric::Ttft, 99.0),
            pct(b, Metric::Itl, 50.0),
            pct(b, Metric::Itl, 99.0),
            pct(b, Metric::Tpot, 50.0),
            pct(b, Metric::E2el, 50.0),
            pct(b, Metric::E2el, 99.0),
            b.goodput
                .as_ref()
                .map_or("-".into(), |g| format!("{:.2}", g.per_s)),
        );
    }
    h.push_str("</table></div>\n<p class=\"meta\">Latencies in milliseconds.</p>\n");
}

/// Percentile positions of the distribution charts: x = -log10(1 - q), so the tail is
/// spread out (HdrHistogram's percentile plot).
const DIST_QS: &[f64] = &[
    0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 75.0, 80.0, 85.0, 90.0, 92.5, 95.0, 97.0, 98.0,
    99.0, 99.5, 99.9, 99.95, 99.99,
];

fn dist_x(q: f64) -> f64 {
    -(1.0 - q / 100.0).max(1e-9).log10()
}

fn distribution_chart(b: &BenchmarkReport, metrics: &[(Metric, &str)], title: &str) -> String {
    let series: Vec<Series> = metrics
        .iter()
        .enumerate()
        .map(|(i, (m, name))| {
            let d = b.distribution(*m).ok().filter(|d| d.count() > 0);
            let bar = |q: f64| b.intervals.as_ref()?.percentile(*m, q);
            let (points, (notes, bars)) = match d {
                Some(d) => DIST_QS
                    .iter()
                    .filter_map(|&q| {
                        d.percentile_us(q)
                            .map(|us| ((dist_x(q), us / 1000.0), (format!("p{q}"), bar(q))))
                    })
                    .unzip(),
                None => (Vec::new(), (Vec::new(), Vec::new())),
            };
            Series {
                notes,
                bars,
                ..Series::line(*name, PALETTE[i % PALETTE.len()], points)
            }
        })
        .collect();
    let ticks = [
        (0.0, "p0"),
        (dist_x(50.0), "p50"),
        (1.0, "p90"),
        (2.0, "p99"),
        (3.0, "p99.9"),
        (4.0, "p99.99"),
    ]
    .iter()
    .map(|(v, l)| (*v, (*l).to_string()))
    .collect();
    let axes = Axes {
        title: title.into(),
        x_label: "percentile".into(),
        y_label: "ms".into(),
        x_ticks: Some(ticks),
        marks: Vec::new(),
    };
    line_chart(&axes, &series)
}

fn benchmark_section(h: &mut String, b: &BenchmarkReport) {
    benchmark_summary(h, b);
    counts_tables(h, b);
    rates_table(h, b);
    metrics_table(h, b);
    h.push_str(&crate::views::reasoning_view::html_tokens(b));
    distribution_charts(h, b);
    crate::views::turns_view::html_section(h, b);
    crate::views::html_server::benchmark_section(h, b);
    crate::views::spec_view::html_section(h, b);
    crate::views::gpu_view::html_section(h, b);
    crate::views::models_view::html_section(h, b);
    h.push_str("</details>\n");
}

/// Opens the benchmark's `<details>` with its one-line summary: label, times, window.
fn benchmark_summary(h: &mut String, b: &BenchmarkReport) {
    let _ = writeln!(
        h,
        "<details open>\n<summary>{} &mdash; {} &rarr; {}, window {:.1} s (warmup {:.1} s, cooldown {:.1} s){}</summary>",
        esc(&b.label),
        esc(&b.start),
        esc(&b.end),
        b.duration_s,
        b.warmup_s,
        b.cooldown_s,
        if b.stop_reason.is_empty() {
            String::new()
        } else {
            format!(", stopped by {}", esc(&b.stop_reason))
        }
    );
}

/// The request and token counts by outcome, then the errors by kind when there are any.
fn counts_tables(h: &mut String, b: &BenchmarkReport) {
    if b.requests.cancelled > 0 {
        let _ = writeln!(
            h,
            "<p>Cancelled by the client on purpose (<code>--cancel-rate</code>): {} of {} requests, neither errors nor incomplete (docs/metrics.md, \"Cancellation\").</p>",
            b.requests.cancelled, b.requests.total
        );
    }
    h.push_str("<table>\n<tr><th>Requests</th><th>Completed</th><th>Incomplete</th><th>Errored</th><th>Excluded (warmup / cooldown)</th></tr>\n");
    let r = &b.requests;
    let _ = writeln!(
        h,
        "<tr><td>count</td><td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td></tr>",
        r.completed, r.incomplete, r.errored, r.excluded_warmup, r.excluded_cooldown
    );
    for (name, t) in [
        ("prompt tokens", &b.tokens.prompt),
        ("output tokens", &b.tokens.output),
    ] {
        let _ = writeln!(
            h,
            "<tr><td>{name} (total / per request)</td><td>{} / {:.1}</td><td>{} / {:.1}</td><td>{} / {:.1}</td><td>sources: {}</td></tr>",
            t.completed.total,
            t.completed.per_request,
            t.incomplete.total,
            t.incomplete.per_request,
            t.errored.total,
            t.errored.per_request,
            esc(&t
                .sources
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "))
        );
    }
    crate::views::steady_view::html_row(h, b);
    h.push_str("</table>\n");
    if !b.errors.is_empty() {
        h.push_str("<table>\n<tr><th>Error</th><th>Count</th></tr>\n");
        for (k, v) in &b.errors {
            let _ = writeln!(h, "<tr><td>{}</td><td>{v}</td></tr>", esc(k));
        }
        h.push_str("</table>\n");
    }
}

/// The window's rates, concurrency and goodput.
fn rates_table(h: &mut String, b: &BenchmarkReport) {
    let rt = &b.rates;
    let _ = writeln!(
        h,
        "<table>\n<tr><th>Rates</th><th>Req/s</th><th>Sent/s</th><th>Target/s</th><th>Out tok/s</th><th>Total tok/s</th><th>Peak out tok/s</th><th>Concurrency</th><th>Peak concurrency</th><th>Goodput/s</th><th>Goodput fraction</th></tr>\n<tr><td>window</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n</table>",
        rt.requests_per_s,
        rt.achieved_rate,
        rt.target_rate.map_or("-".into(), |r| format!("{r:.2}")),
        rt.output_tokens_per_s,
        rt.total_tokens_per_s,
        rt.peak_output_tokens_per_s,
        rt.concurrency,
        rt.peak_concurrency,
        b.goodput.as_ref().map_or("-".into(), |g| format!("{:.2}", g.per_s)),
        b.goodput.as_ref().map_or("-".into(), |g| format!("{:.1} %", g.fraction * 100.0)),
    );
}

/// Every metric's count, mean, spread and percentiles.
fn metrics_table(h: &mut String, b: &BenchmarkReport) {
    h.push_str("<table>\n<tr><th>Metric (ms)</th><th>count</th><th>mean</th><th>stdev</th><th>min</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th></tr>\n");
    let reasoning = b.tokens.saw_reasoning();
    for m in Metric::ALL {
        if !reasoning && Metric::REASONING.contains(&m) {
            continue;
        }
        let s = b.metric(m);
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td></tr>",
            m.json_key(),
            s.count,
            s.mean,
            s.stdev,
            s.min,
            pct(b, m, 50.0),
            pct(b, m, 90.0),
            pct(b, m, 95.0),
            pct(b, m, 99.0),
            s.max
        );
    }
    h.push_str("</table>\n");
}

/// The TTFT, ITL/TPOT and end-to-end latency distributions, side by side.
fn distribution_charts(h: &mut String, b: &BenchmarkReport) {
    h.push_str("<div class=\"charts\">\n");
    h.push_str(&distribution_chart(
        b,
        &[
            (Metric::Ttft, "TTFT"),
            (Metric::TtftFromScheduled, "TTFT from intended send"),
        ],
        &format!("{}: TTFT distribution", b.label),
    ));
    h.push_str(&distribution_chart(
        b,
        &[
            (Metric::Itl, "ITL (every gap)"),
            (Metric::Tpot, "TPOT (per request)"),
        ],
        &format!("{}: ITL and TPOT distribution", b.label),
    ));
    h.push_str(&distribution_chart(
        b,
        &[
            (Metric::E2el, "E2EL"),
            (Metric::E2elFromScheduled, "E2EL from intended send"),
        ],
        &format!("{}: end-to-end latency distribution", b.label),
    ));
    h.push_str("\n</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn empty_run_renders_a_valid_page() {
        let run = RunReport::new("id<script>", "now");
        let h = render_html(&run);
        assert!(h.starts_with("<!DOCTYPE html>") && h.trim_end().ends_with("</html>"));
        assert!(!h.contains("<script"));
        assert!(h.contains("no data"));
    }
}
