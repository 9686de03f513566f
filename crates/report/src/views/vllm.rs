//! The vLLM console: one "Serving Benchmark Result" block per benchmark, as
//! `vllm bench serve` / `benchmark_serving.py` print it (Python's `{:<40} {:<10}` layout).

use std::fmt::Write as _;

use crate::figures::model::{BenchmarkReport, RunReport};
use crate::figures::options::percentile_word;
use crate::views::options::{VllmConsoleOptions, VllmLayout};

/// Renders every benchmark of `run` as vLLM's result block, blocks separated by a blank line.
pub fn render_vllm(run: &RunReport, opts: &VllmConsoleOptions) -> String {
    let blocks: Vec<String> = run
        .benchmarks
        .iter()
        .map(|b| render_vllm_benchmark(b, opts))
        .collect();
    let mut out = blocks.join("\n");
    if run.capacity.is_some() {
        out.push('\n');
        out.push_str(&crate::views::capacity_view::render_capacity_vllm(run));
    }
    out
}

fn line_int(out: &mut String, label: &str, v: u64) {
    let _ = writeln!(out, "{label:<40} {v:<10}");
}

fn line_f(out: &mut String, label: &str, v: f64) {
    let _ = writeln!(out, "{label:<40} {:<10}", format!("{v:.2}"));
}

/// A metric line: its value, or `-` when the metric has no sample.
fn line_opt(out: &mut String, label: &str, v: Option<f64>) {
    match v {
        Some(v) => line_f(out, label, v),
        None => {
            let _ = writeln!(out, "{label:<40} {:<10}", "-");
        }
    }
}

fn centered(title: &str, fill: char) -> String {
    // Python's "{s:{c}^{n}}" with n = 50: the extra fill char goes to the right.
    let len = title.chars().count();
    if len >= 50 {
        return title.to_string();
    }
    let pad = 50 - len;
    let left = pad / 2;
    let right = pad - left;
    let f = |n: usize| std::iter::repeat_n(fill, n).collect::<String>();
    format!("{}{title}{}", f(left), f(right))
}

/// The three lines `vllm bench serve` prints before it starts a benchmark (traffic request
/// rate, burstiness, concurrency cap), with Python's formatting (`4.0`, `inf`, `None`). A
/// constant rate is the limit of infinite burstiness and says so.
pub fn render_vllm_preamble(b: &BenchmarkReport) -> String {
    use bench_core::Strategy;
    let (rate, burst) = match &b.strategy {
        Strategy::Poisson {
            rate, burstiness, ..
        } => (*rate, format!("{burstiness:?}")),
        Strategy::Constant { rate, .. } => (*rate, "inf".to_string()),
        _ => (f64::INFINITY, "1.0".to_string()),
    };
    let kind = match burst.as_str() {
        "1.0" => "Poisson process",
        "inf" => "constant rate",
        _ => "Gamma distribution",
    };
    let cap = crate::views::common::max_concurrency(&b.strategy)
        .map_or_else(|| "None".to_string(), |c| c.to_string());
    format!(
        "Traffic request rate: {rate:?}\nBurstiness factor: {burst} ({kind})\nMaximum request concurrency: {cap}\n"
    )
}

/// Renders one benchmark's block after its preamble lines (both layouts: vLLM prints them
/// before every run, `benchmark_serving.py` as in seed `vllm-poisson-rate4-sharegpt.txt` too).
pub fn render_vllm_benchmark(b: &BenchmarkReport, opts: &VllmConsoleOptions) -> String {
    let mut out = render_vllm_preamble(b);
    let _ = writeln!(out, "{}", centered(" Serving Benchmark Result ", '='));
    totals_lines(&mut out, b, opts.layout == VllmLayout::Current);
    percentile_lines(&mut out, b, opts);
    out.push_str(&crate::views::reasoning_view::vllm_section(b, opts, |t| {
        centered(t, '-')
    }));
    out.push_str(&crate::views::turns_view::vllm_section(b, |t| {
        centered(t, '-')
    }));
    out.push_str(&crate::views::images_view::vllm_section(b, |t| {
        centered(t, '-')
    }));
    out.push_str(&crate::views::server::vllm_section(b, |t| centered(t, '-')));
    out.push_str(&crate::views::spec_view::vllm_section(b, |t| {
        centered(t, '-')
    }));
    out.push_str(&crate::views::models_view::vllm_section(b, |t| {
        centered(t, '-')
    }));
    out.push_str(&crate::views::gpu_view::vllm_section(b, |t| {
        centered(t, '-')
    }));
    let _ = writeln!(out, "{}", "=".repeat(50));
    if let Some(line) = crate::views::steady_view::vllm_line(b) {
        out.push_str(&line);
    }
    out
}

/// The block's counts, duration, token totals and throughputs (the current layout adds the
/// failures, the configuration and the peaks).
fn totals_lines(out: &mut String, b: &BenchmarkReport, current: bool) {
    line_int(out, "Successful requests:", b.requests.completed);
    if current {
        // Failed counts errors only; requests cut off unfinished (drain timeout, Ctrl-C) get a
        // line of their own, shown whenever there are any.
        line_int(out, "Failed requests:", b.requests.errored);
        if b.requests.incomplete > 0 {
            line_int(out, "Incomplete requests:", b.requests.incomplete);
        }
        // Cancelled on purpose by the client (`--cancel-rate`), shown whenever there are any.
        if b.requests.cancelled > 0 {
            line_int(out, "Cancelled requests:", b.requests.cancelled);
        }
        if let Some(c) = crate::views::common::max_concurrency(&b.strategy) {
            line_int(out, "Maximum request concurrency:", c as u64);
        }
        if let Some(r) = b.rates.target_rate {
            line_f(out, "Request rate configured (RPS):", r);
        }
    }
    line_f(out, "Benchmark duration (s):", b.duration_s);
    line_int(out, "Total input tokens:", b.tokens.prompt.completed.total);
    line_int(
        out,
        "Total generated tokens:",
        b.tokens.output.completed.total,
    );
    line_f(out, "Request throughput (req/s):", b.rates.requests_per_s);
    if generated_nothing(b) {
        // Embeddings and rerank: the input is the work.
        line_f(
            out,
            "Input token throughput (tok/s):",
            b.rates.input_tokens_per_s,
        );
    }
    if let Some(g) = &b.goodput {
        line_f(out, "Request goodput (req/s):", g.per_s);
    }
    line_f(
        out,
        "Output token throughput (tok/s):",
        b.rates.output_tokens_per_s,
    );
    if current {
        line_f(
            out,
            "Peak output token throughput (tok/s):",
            b.rates.peak_output_tokens_per_s,
        );
        line_f(
            out,
            "Peak concurrent requests:",
            b.rates.peak_concurrency as f64,
        );
    }
    line_f(
        out,
        "Total Token throughput (tok/s):",
        b.rates.total_tokens_per_s,
    );
}

/// A benchmark that completed requests with input but generated no token (embeddings,
/// rerank): its console shows the input token throughput.
fn generated_nothing(b: &BenchmarkReport) -> bool {
    b.tokens.output.completed.total == 0 && b.tokens.prompt.completed.total > 0
}

/// A section per metric of `--percentile-metrics`: its mean, median and each percentile.
fn percentile_lines(out: &mut String, b: &BenchmarkReport, opts: &VllmConsoleOptions) {
    for &m in &opts.percentile_metrics {
        let s = b.metric(m);
        let name = m.vllm_name();
        let _ = writeln!(out, "{}", centered(m.vllm_header(), '-'));
        let some = |v: f64| (s.count > 0).then_some(v);
        line_opt(out, &format!("Mean {name} (ms):"), some(s.mean));
        line_opt(out, &format!("Median {name} (ms):"), some(s.median));
        for &p in &opts.metric_percentiles {
            let v = b.percentile_ms(m, p).and_then(some);
            line_opt(out, &format!("P{} {name} (ms):", percentile_word(p)), v);
        }
    }
}
