//! Reasoning in the consoles, the HTML and the CSV (docs/metrics.md, "Reasoning"): time to
//! first output token, reasoning duration, the ITL of each phase and the reasoning and answer
//! tokens. The consoles and the HTML show them only for benchmarks that saw reasoning; the CSV
//! always has the columns (empty without reasoning).

use std::fmt::Write as _;

use crate::figures::model::{BenchmarkReport, RunReport, TokenCounts};
use crate::figures::options::{percentile_word, Metric};
use crate::views::common::{mmp, render, Spec};
use crate::views::options::VllmConsoleOptions;

/// The CSV columns of reasoning tokens (the metrics' columns come with every metric).
pub(crate) const CSV_COLUMNS: &[&str] = &[
    "reasoning_tokens_completed",
    "answer_tokens_completed",
    "reasoning_tokens_sources",
];

/// `usage=10;tokenizer=2`: requests by where their reasoning count came from.
fn sources(t: &TokenCounts) -> String {
    t.sources
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// The [`CSV_COLUMNS`] cells of `b` (empty without reasoning).
pub(crate) fn csv_cells(b: &BenchmarkReport) -> Vec<String> {
    match (&b.tokens.reasoning, &b.tokens.answer) {
        (Some(r), Some(a)) => vec![
            r.completed.total.to_string(),
            a.completed.total.to_string(),
            sources(r),
        ],
        _ => vec![String::new(); CSV_COLUMNS.len()],
    }
}

/// The guidellm-style "Reasoning Stats" table (heading included), or `None` when no benchmark
/// saw reasoning.
pub(crate) fn guidellm_table(run: &RunReport, width: Option<u16>) -> Option<String> {
    let seen: Vec<&BenchmarkReport> = run
        .benchmarks
        .iter()
        .filter(|b| b.tokens.saw_reasoning())
        .collect();
    if seen.is_empty() {
        return None;
    }
    const MMP: &[&str] = &["mean", "median", "p99"];
    let mut spec = Spec {
        groups: vec![
            ("Metadata", &["Benchmark"]),
            ("Tok/Req (Comp)", &["Reasoning", "Answer"]),
            ("TTFO (ms)", MMP),
            ("Reasoning Time (ms)", MMP),
            ("Reasoning ITL (ms)", MMP),
            ("Answer ITL (ms)", MMP),
        ],
        rows: Vec::new(),
    };
    for b in seen {
        let per = |t: &Option<TokenCounts>| {
            t.as_ref()
                .map_or("-".into(), |t| format!("{:.1}", t.completed.per_request))
        };
        let mut row = vec![
            b.label.clone(),
            per(&b.tokens.reasoning),
            per(&b.tokens.answer),
        ];
        for m in Metric::REASONING {
            row.extend(mmp(b, m, 1.0, 1));
        }
        spec.rows.push(row);
    }
    Some(format!(
        "\nReasoning Stats (TTFO: first answer token; TTFT: first token, reasoning included):\n{}\n",
        render(&spec, width)
    ))
}

/// The vLLM-style reasoning section of one benchmark (empty without reasoning): the token
/// counts, then each reasoning metric not already printed by `--percentile-metrics`.
pub(crate) fn vllm_section(
    b: &BenchmarkReport,
    opts: &VllmConsoleOptions,
    centered: impl Fn(&str) -> String,
) -> String {
    let mut out = String::new();
    let (Some(r), Some(a)) = (&b.tokens.reasoning, &b.tokens.answer) else {
        return out;
    };
    let _ = writeln!(out, "{}", centered("Reasoning"));
    let _ = writeln!(out, "{:<40} {:<10}", "Reasoning tokens:", r.completed.total);
    let _ = writeln!(out, "{:<40} {:<10}", "Answer tokens:", a.completed.total);
    let _ = writeln!(out, "{:<40} {:<10}", "Reasoning tokens from:", sources(r));
    for m in Metric::REASONING {
        if opts.percentile_metrics.contains(&m) {
            continue;
        }
        let s = b.metric(m);
        let name = m.vllm_name();
        let mut line = |label: String, v: Option<f64>| {
            let v = v
                .filter(|_| s.count > 0)
                .map_or("-".into(), |v| format!("{v:.2}"));
            let _ = writeln!(out, "{label:<40} {v:<10}");
        };
        line(format!("Mean {name} (ms):"), Some(s.mean));
        line(format!("Median {name} (ms):"), Some(s.median));
        for &p in &opts.metric_percentiles {
            line(
                format!("P{} {name} (ms):", percentile_word(p)),
                b.percentile_ms(m, p),
            );
        }
    }
    out
}

/// The HTML paragraph of reasoning tokens (empty without reasoning).
pub(crate) fn html_tokens(b: &BenchmarkReport) -> String {
    match (&b.tokens.reasoning, &b.tokens.answer) {
        (Some(r), Some(a)) => format!(
            "<p>Reasoning tokens (completed): {} ({:.1} per request, from {}); answer tokens: {} ({:.1} per request). TTFO is the time to the first answer token; TTFT includes reasoning.</p>\n",
            r.completed.total,
            r.completed.per_request,
            crate::views::common::esc(&sources(r)),
            a.completed.total,
            a.completed.per_request,
        ),
        _ => String::new(),
    }
}
