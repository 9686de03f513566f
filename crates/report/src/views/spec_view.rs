//! Speculative decoding in every output (docs/metrics.md, "Speculative decoding"): a
//! "Speculative Decoding" table after guidellm's server table, vLLM's own "Speculative
//! Decoding" section in each vLLM-style block, a table in the HTML's benchmark section and six
//! CSV columns, from `benchmarks[i].server_metrics.summary.spec_decode`. Nothing is printed
//! for a server that does not draft.

use std::fmt::Write as _;

use bench_servermetrics::SpecDecodeSummary;

use crate::figures::model::{BenchmarkReport, RunReport};
use crate::views::common::{render, Spec};

/// The CSV's speculative-decoding columns (empty cells without the figures);
/// `spec_per_position` holds each position's rate (0-1), `;`-separated.
pub(crate) const CSV_COLUMNS: [&str; 6] = [
    "spec_acceptance_rate",
    "spec_acceptance_length",
    "spec_drafts",
    "spec_draft_tokens",
    "spec_accepted_tokens",
    "spec_per_position",
];

fn spec(b: &BenchmarkReport) -> Option<&SpecDecodeSummary> {
    b.server_metrics.as_ref()?.summary.spec_decode.as_ref()
}

/// The cells of [`CSV_COLUMNS`].
pub(crate) fn csv_cells(b: &BenchmarkReport, num: fn(f64) -> String) -> [String; 6] {
    let Some(s) = spec(b) else {
        return Default::default();
    };
    let cell = |v: Option<f64>| v.map(num).unwrap_or_default();
    let positions: Vec<String> = s.per_position.iter().map(|&r| num(r)).collect();
    [
        cell(s.acceptance_rate),
        cell(s.acceptance_length),
        cell(s.drafts),
        cell(s.draft_tokens),
        cell(s.accepted_tokens),
        positions.join(";"),
    ]
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// Each position's rate in percent, space-separated.
fn positions(s: &SpecDecodeSummary) -> String {
    if s.per_position.is_empty() {
        return "-".into();
    }
    let p: Vec<String> = s
        .per_position
        .iter()
        .map(|r| format!("{:.1}", r * 100.0))
        .collect();
    p.join(" ")
}

/// The guidellm-style table, or `None` when no benchmark has the figures.
pub(crate) fn guidellm_table(run: &RunReport, width: Option<u16>) -> Option<String> {
    if run.benchmarks.iter().all(|b| spec(b).is_none()) {
        return None;
    }
    let mut table = Spec {
        groups: vec![
            ("Metadata", &["Benchmark"]),
            ("Acceptance", &["rate (%)", "length"]),
            ("Counts", &["drafts", "draft tok", "accepted tok"]),
            ("Per Position", &["(%)"]),
        ],
        rows: Vec::new(),
    };
    for b in &run.benchmarks {
        let Some(s) = spec(b) else {
            continue;
        };
        table.rows.push(vec![
            b.label.clone(),
            opt(s.acceptance_rate.map(|r| r * 100.0), 2),
            opt(s.acceptance_length, 2),
            opt(s.drafts, 0),
            opt(s.draft_tokens, 0),
            opt(s.accepted_tokens, 0),
            positions(s),
        ]);
    }
    Some(render(&table, width))
}

/// vLLM's own section (`vllm bench serve` prints it from the server's counters), empty
/// without the figures.
pub(crate) fn vllm_section(b: &BenchmarkReport, centered: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    let Some(s) = spec(b) else {
        return out;
    };
    let _ = writeln!(out, "{}", centered("Speculative Decoding"));
    let mut line = |label: &str, v: String| {
        let _ = writeln!(out, "{label:<40} {v:<10}");
    };
    if let Some(r) = s.acceptance_rate {
        line("Acceptance rate (%):", format!("{:.2}", r * 100.0));
    }
    if let Some(l) = s.acceptance_length {
        line("Acceptance length:", format!("{l:.2}"));
    }
    for (label, v) in [
        ("Drafts:", s.drafts),
        ("Draft tokens:", s.draft_tokens),
        ("Accepted tokens:", s.accepted_tokens),
    ] {
        if let Some(v) = v {
            line(label, format!("{v:.0}"));
        }
    }
    if !s.per_position.is_empty() {
        let _ = writeln!(out, "Per-position acceptance (%):");
        for (i, r) in s.per_position.iter().enumerate() {
            let label = format!("  Position {i}:");
            let _ = writeln!(out, "{label:<40} {:<10}", format!("{:.2}", r * 100.0));
        }
    }
    out
}

/// The HTML's table of one benchmark: the acceptance, the counts and what they span.
pub(crate) fn html_section(h: &mut String, b: &BenchmarkReport) {
    let Some(s) = spec(b) else {
        return;
    };
    h.push_str("<h3>Speculative decoding (server)</h3>\n<table>\n<tr><th>Acceptance rate (%)</th><th>Acceptance length</th><th>Drafts</th><th>Draft tokens</th><th>Accepted tokens</th><th>Per-position acceptance (%)</th><th>Counted over</th></tr>\n<tr>");
    let over = match s.span_s {
        Some(t) => format!("{} ({t:.1} s)", s.counted_over),
        None => s.counted_over.clone(),
    };
    for cell in [
        opt(s.acceptance_rate.map(|r| r * 100.0), 2),
        opt(s.acceptance_length, 2),
        opt(s.drafts, 0),
        opt(s.draft_tokens, 0),
        opt(s.accepted_tokens, 0),
        positions(s),
        over,
    ] {
        let _ = write!(h, "<td>{}</td>", crate::views::common::esc(&cell));
    }
    h.push_str("</tr>\n</table>\n");
}

#[cfg(test)]
mod tests {
    use bench_servermetrics::{ServerMetrics, ServerSummary};

    use super::*;
    use crate::test_support::open_loop;

    fn with_spec() -> BenchmarkReport {
        let mut b = open_loop(|_| 100);
        b.server_metrics = Some(ServerMetrics {
            url: "http://s/metrics".into(),
            server: Some("vllm".into()),
            interval_s: 1.0,
            scrapes: 5,
            duration_s: 6.0,
            summary: ServerSummary {
                spec_decode: Some(SpecDecodeSummary {
                    acceptance_rate: Some(0.5),
                    acceptance_length: Some(2.5),
                    drafts: Some(1000.0),
                    draft_tokens: Some(3000.0),
                    accepted_tokens: Some(1500.0),
                    per_position: vec![0.75, 0.5, 0.25],
                    span_s: Some(4.0),
                    counted_over: "window".into(),
                }),
                ..ServerSummary::default()
            },
            metrics: Default::default(),
            series: Vec::new(),
        });
        b
    }

    #[test]
    fn every_output_shows_the_acceptance_and_none_without_it() {
        let b = with_spec();
        let mut run = RunReport::new("id", "2026-01-01T00:00:00Z");
        run.benchmarks.push(open_loop(|_| 100));
        assert_eq!(guidellm_table(&run, Some(200)), None);
        assert_eq!(vllm_section(&run.benchmarks[0], |t| t.to_string()), "");
        assert_eq!(
            csv_cells(&run.benchmarks[0], |v| format!("{v}")),
            <[String; 6]>::default()
        );
        run.benchmarks[0] = b.clone();
        let table = guidellm_table(&run, Some(200)).expect("table");
        for cell in ["50.00", "2.50", "1000", "3000", "1500", "75.0 50.0 25.0"] {
            assert!(table.contains(cell), "{cell} in {table}");
        }
        let section = vllm_section(&b, |t| t.to_string());
        for (label, v) in [
            ("Acceptance rate (%):", "50.00"),
            ("Acceptance length:", "2.50"),
            ("Drafts:", "1000"),
            ("Accepted tokens:", "1500"),
            ("  Position 2:", "25.00"),
        ] {
            let line = format!("{label:<40} {v:<10}");
            assert!(section.contains(&line), "{line} in {section}");
        }
        let mut h = String::new();
        html_section(&mut h, &b);
        assert!(h.contains("<td>window (4.0 s)</td>"), "{h}");
        assert_eq!(
            csv_cells(&b, |v| format!("{v}")),
            ["0.5", "2.5", "1000", "3000", "1500", "0.75;0.5;0.25"].map(String::from)
        );
    }
}
