//! The HTML's sweep part: the capacity answer on the first screen, and the charts across the
//! sweep (rate curves of the open-loop benchmarks against their offered rate, probes as their
//! own markers at their measured rate, SLO bounds, knee and capacity as reference lines), for
//! one run or several overlaid by rate.

use std::fmt::Write as _;

use bench_core::{Interval, SloMetric};

use crate::figures::capacity::{open_loop, slo_metric};
use crate::figures::capacity_interval::{knee_interval, slo_interval};
use crate::figures::model::{BenchmarkReport, RunReport};
use crate::figures::options::Metric;
use crate::views::common::esc;
use crate::views::common::{crossing_words, refinement_words};
use crate::views::svg::{line_chart, Axes, Mark, Series, PALETTE};

/// The capacity answer as the page's first lines.
pub(crate) fn capacity_box(h: &mut String, run: &RunReport) {
    let Some(c) = &run.capacity else { return };
    let (before, after) = crate::views::common::lower_bound_words(c);
    let _ = write!(
        h,
        "<div class=\"answer\" id=\"capacity\"><p><b>Capacity: {before}{:.2} req/s{}{}</b> sustained (measured by {}{}).</p>",
        c.max_requests_per_s,
        crate::figures::capacity_interval::capacity_interval(run).map_or(String::new(), |iv| format!(
            " (95% interval {:.2} to {:.2})",
            iv.low, iv.high
        )),
        crate::views::common::output_tokens_words(c, "output tokens/s"),
        esc(&c.max_measured_by),
        esc(after)
    );
    if let Some(r) = &c.max_refinement {
        let _ = write!(
            h,
            "<p>Capacity's precision: {}.</p>",
            esc(&refinement_words(r))
        );
    }
    let _ = write!(
        h,
        "<p>Knee: {}.</p>",
        c.knee_requests_per_s
            .map_or("not found within the swept rates".into(), |k| format!(
                "{k:.2} req/s offered{} (median TTFT leaves its low-load plateau above it)",
                crossing_words(knee_interval(run, c))
            ))
    );
    if let (Some(slo), Some(b)) = (&c.slo, &c.slo_bracket) {
        let sure = crossing_words(slo_interval(run, c));
        let text = match (c.slo_limit, b.low, b.high) {
            (Some(bench_core::SloLimit::Capacity), _, _) => format!(
                "<b>{:.2} req/s</b>{sure} ({})",
                c.slo_max_requests_per_s.unwrap_or(c.max_requests_per_s),
                crate::views::capacity_view::CAPACITY_FIRST
            ),
            (_, Some(l), Some(hi)) => format!(
                "<b>{l:.2} req/s</b>{sure} (met at {l:.2}, missed at {hi:.2}; {} refinement step(s))",
                b.steps
            ),
            (_, Some(l), None) => {
                format!("<b>{l:.2} req/s or more</b>{sure} (every rate met it)")
            }
            (_, None, _) => "<b>no rate met it</b>".into(),
        };
        let _ = write!(h, "<p>With {}: {text}.</p>", esc(&slo.to_string()));
        if let Some(r) = &b.refinement {
            let _ = write!(
                h,
                "<p>SLO answer's precision: {}.</p>",
                esc(&refinement_words(r))
            );
        }
    }
    if let Some(t) = crate::views::common::trace_multiples_text(c) {
        let _ = write!(h, "<p id=\"trace-multiple\">Trace: {}.</p>", esc(&t));
    }
    h.push_str("</div>\n");
}

/// One run on the charts, with its name (empty for a single run) and its colour index.
pub(crate) struct Drawn<'a> {
    pub run: &'a RunReport,
    pub name: String,
}

fn x_of(b: &BenchmarkReport) -> f64 {
    b.strategy.target_rate().unwrap_or(b.rates.requests_per_s)
}

fn probes(run: &RunReport) -> Vec<&BenchmarkReport> {
    let mut v: Vec<&BenchmarkReport> = run
        .benchmarks
        .iter()
        .filter(|b| !b.is_open_loop())
        .collect();
    v.sort_by(|a, b| x_of(a).total_cmp(&x_of(b)));
    v
}

/// A figure of a benchmark and its 95% interval (drawn as an error bar).
type Figure<'a> = (
    &'a dyn Fn(&BenchmarkReport) -> Option<f64>,
    &'a dyn Fn(&BenchmarkReport) -> Option<Interval>,
);

/// A curve of figure `f` over the open-loop benchmarks and, unless `no_probes`, the probes'
/// markers, each point with its interval's error bar where it has one.
fn series_of(
    d: &Drawn,
    name: &str,
    color: &'static str,
    (f, bar): Figure,
    dashed: bool,
    no_probes: bool,
) -> Vec<Series> {
    let label = |n: &str| {
        if d.name.is_empty() {
            n.to_string()
        } else {
            format!("{} {n}", d.name)
        }
    };
    let (points, (notes, bars)) = open_loop(d.run)
        .into_iter()
        .filter_map(|(r, b)| Some(((r, f(b)?), (b.label.clone(), bar(b)))))
        .unzip();
    let mut out = vec![Series {
        notes,
        bars,
        dashed,
        ..Series::line(label(name), color, points)
    }];
    if !no_probes {
        let (points, (notes, bars)) = probes(d.run)
            .into_iter()
            .filter_map(|b| Some(((x_of(b), f(b)?), (b.label.clone(), bar(b)))))
            .unzip();
        out.push(Series {
            notes,
            bars,
            markers_only: true,
            ..Series::line(label(&format!("{name} probes")), color, points)
        });
    }
    out
}

fn suffix(d: &Drawn) -> String {
    if d.name.is_empty() {
        String::new()
    } else {
        format!(" ({})", d.name)
    }
}

/// Knee and capacity lines (vertical, on the rate axis) of a run.
fn rate_marks(d: &Drawn) -> Vec<Mark> {
    let Some(c) = &d.run.capacity else {
        return Vec::new();
    };
    let mut m = vec![Mark {
        vertical: true,
        value: c.max_requests_per_s,
        label: format!("capacity {:.1}{}", c.max_requests_per_s, suffix(d)),
        class: "capacity",
    }];
    if let Some(k) = c.knee_requests_per_s {
        m.push(Mark {
            vertical: true,
            value: k,
            label: format!("knee {k:.1}{}", suffix(d)),
            class: "knee",
        });
    }
    if let Some(s) = c.slo_max_requests_per_s {
        m.push(Mark {
            vertical: true,
            value: s,
            label: format!("SLO max {s:.1}{}", suffix(d)),
            class: "slo",
        });
    }
    m
}

/// SLO bounds drawn on the chart of `metric` (the `_from_scheduled` variants on their base).
fn slo_marks(d: &Drawn, metric: Metric) -> Vec<Mark> {
    let Some(slo) = d.run.capacity.as_ref().and_then(|c| c.slo.as_ref()) else {
        return Vec::new();
    };
    let base = |m: SloMetric| match m {
        SloMetric::TtftFromScheduled => Metric::Ttft,
        SloMetric::E2elFromScheduled => Metric::E2el,
        other => slo_metric(other),
    };
    slo.bounds
        .iter()
        .filter(|b| base(b.metric) == metric)
        .map(|b| Mark {
            vertical: false,
            value: b.max_ms,
            label: format!("SLO {} ≤ {} ms{}", b.key(), b.max_ms, suffix(d)),
            class: "slo",
        })
        .collect()
}

const X_LABEL: &str = "request rate, req/s (offered for rates; measured for probes)";

fn latency_chart(ds: &[Drawn], metric: Metric, title: &str) -> String {
    let one = ds.len() == 1;
    let mut series = Vec::new();
    let mut marks = Vec::new();
    for (i, d) in ds.iter().enumerate() {
        let pcts: &[(f64, &str)] = if one {
            &[(50.0, "p50"), (90.0, "p90"), (99.0, "p99")]
        } else {
            &[(50.0, "p50"), (99.0, "p99")]
        };
        for (j, (p, name)) in pcts.iter().enumerate() {
            let color = PALETTE[if one { j } else { i } % PALETTE.len()];
            let f = |b: &BenchmarkReport| b.percentile_ms(metric, *p);
            let bar = |b: &BenchmarkReport| b.intervals.as_ref()?.percentile(metric, *p);
            series.extend(series_of(
                d,
                name,
                color,
                (&f, &bar),
                !one && j == 0,
                !one && j == 0,
            ));
        }
        marks.extend(slo_marks(d, metric));
        marks.extend(rate_marks(d));
    }
    let axes = Axes {
        title: format!("{title} vs request rate"),
        x_label: X_LABEL.into(),
        y_label: "ms".into(),
        x_ticks: None,
        marks,
    };
    line_chart(&axes, &series)
}

fn throughput_chart(ds: &[Drawn]) -> String {
    let mut series = Vec::new();
    let mut marks = Vec::new();
    for (i, d) in ds.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let f = |b: &BenchmarkReport| Some(b.rates.output_tokens_per_s);
        let bar = |b: &BenchmarkReport| Some(b.intervals.as_ref()?.output_tokens_per_s);
        series.extend(series_of(
            d,
            "output tok/s",
            color,
            (&f, &bar),
            false,
            false,
        ));
        if let Some(c) = &d.run.capacity {
            marks.push(Mark {
                vertical: false,
                value: c.max_output_tokens_per_s,
                label: format!(
                    "capacity {:.0} tok/s{}",
                    c.max_output_tokens_per_s,
                    suffix(d)
                ),
                class: "capacity",
            });
        }
        marks.extend(rate_marks(d).into_iter().filter(|m| m.class == "knee"));
    }
    let axes = Axes {
        title: "Output token throughput vs request rate".into(),
        x_label: X_LABEL.into(),
        y_label: "tokens/s".into(),
        x_ticks: None,
        marks,
    };
    line_chart(&axes, &series)
}

fn concurrency_chart(ds: &[Drawn]) -> String {
    let mut series = Vec::new();
    for (i, d) in ds.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let f = |b: &BenchmarkReport| Some(b.rates.concurrency);
        let none = |_: &BenchmarkReport| None;
        series.extend(series_of(
            d,
            "mean in flight",
            color,
            (&f, &none),
            false,
            false,
        ));
    }
    let axes = Axes {
        title: "Concurrency vs request rate".into(),
        x_label: X_LABEL.into(),
        y_label: "requests in flight".into(),
        x_ticks: None,
        marks: Vec::new(),
    };
    line_chart(&axes, &series)
}

/// The charts across the sweep of one run or of several overlaid by rate.
pub(crate) fn sweep_charts(h: &mut String, ds: &[Drawn]) {
    h.push_str("<h2>Across the sweep</h2>\n<div class=\"charts\">\n");
    for (metric, title) in [
        (Metric::Ttft, "Time to first token"),
        (Metric::Itl, "Inter-token latency"),
        (Metric::Tpot, "Time per output token"),
        (Metric::E2el, "End-to-end latency"),
    ] {
        h.push_str(&latency_chart(ds, metric, title));
        h.push('\n');
    }
    h.push_str(&throughput_chart(ds));
    h.push('\n');
    h.push_str(&concurrency_chart(ds));
    h.push_str("\n</div>\n<p class=\"meta\">Lines join the open-loop rates at their offered rate; hollow markers are probes (synchronous, concurrency ladder, throughput) at the rate they measured. Dashed lines: SLO bounds (red), knee (purple), capacity (green). Vertical bars with caps: 95% intervals (batch means, docs/metrics.md \"Intervals\"), where the benchmark has one.</p>\n");
}
