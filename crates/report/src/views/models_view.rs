//! A model mix in every output (docs/metrics.md, "Models"): a "Model Stats" table after
//! guidellm's stats, a "Per model" section in each vLLM-style block, a table in the HTML's
//! benchmark section and one CSV column holding the rows as JSON, from
//! `benchmarks[i].models`. Nothing is printed for runs of one model.

use std::fmt::Write as _;

use crate::figures::model::{BenchmarkReport, RunReport};
use crate::figures::models::ModelFigures;
use crate::views::common::{esc, render_labelled, Spec};

/// The CSV's model column: every row as a JSON array (empty without a mix), so that the
/// header is the same for every run and CSVs of several runs still line up.
pub(crate) const CSV_COLUMNS: [&str; 1] = ["models_json"];

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// A row's figures as the CSV cell's JSON object holds them (no histograms).
fn json_row(m: &ModelFigures) -> serde_json::Value {
    serde_json::json!({
        "name": m.name,
        "requests": m.requests,
        "completed": m.completed,
        "errored": m.errored,
        "incomplete": m.incomplete,
        "cancelled": m.cancelled,
        "output_tokens": m.output_tokens,
        "requests_per_s": m.requests_per_s,
        "output_tokens_per_s": m.output_tokens_per_s,
        "ttft_ms_median": m.median("ttft_ms"),
        "ttft_ms_p99": m.p99("ttft_ms"),
        "itl_ms_median": m.median("itl_ms"),
        "itl_ms_p99": m.p99("itl_ms"),
        "e2el_ms_median": m.median("e2el_ms"),
        "e2el_ms_p99": m.p99("e2el_ms"),
    })
}

/// The cell of [`CSV_COLUMNS`], unquoted (the CSV writer quotes it).
pub(crate) fn csv_cells(b: &BenchmarkReport) -> [String; 1] {
    [b.models.as_ref().map_or_else(String::new, |rows| {
        serde_json::Value::Array(rows.iter().map(json_row).collect()).to_string()
    })]
}

/// The guidellm-style table, a row per model of each benchmark, or `None` without a mix.
pub(crate) fn guidellm_table(run: &RunReport, width: Option<u16>) -> Option<String> {
    if run.benchmarks.iter().all(|b| b.models.is_none()) {
        return None;
    }
    let mut spec = Spec {
        groups: vec![
            ("Metadata", &["Benchmark", "Model"]),
            ("Requests", &["Comp", "Err", "Inc"]),
            ("Rates", &["Req/s", "Out Tok/s"]),
            ("TTFT (ms)", &["mdn", "p99"]),
            ("ITL (ms)", &["mdn", "p99"]),
            ("E2EL (s)", &["mdn", "p99"]),
        ],
        rows: Vec::new(),
    };
    let s = |v: Option<f64>| v.map(|ms| ms / 1000.0);
    for b in &run.benchmarks {
        for m in b.models.iter().flatten() {
            spec.rows.push(vec![
                b.label.clone(),
                m.name.clone(),
                m.completed.to_string(),
                m.errored.to_string(),
                m.incomplete.to_string(),
                format!("{:.2}", m.requests_per_s),
                format!("{:.1}", m.output_tokens_per_s),
                opt(m.median("ttft_ms"), 1),
                opt(m.p99("ttft_ms"), 1),
                opt(m.median("itl_ms"), 1),
                opt(m.p99("itl_ms"), 1),
                opt(s(m.median("e2el_ms")), 2),
                opt(s(m.p99("e2el_ms")), 2),
            ]);
        }
    }
    Some(render_labelled(&spec, width, 2))
}

/// The vLLM-style section (`{:<40} {:<10}` lines, a block per model), empty without a mix.
pub(crate) fn vllm_section(b: &BenchmarkReport, centered: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    let Some(rows) = &b.models else {
        return out;
    };
    let _ = writeln!(out, "{}", centered(" Per model "));
    for m in rows {
        let pair = |k: &str| format!("{} / {}", opt(m.median(k), 2), opt(m.p99(k), 2));
        let lines = [
            ("Model:".to_string(), m.name.clone()),
            (
                "  Successful / failed requests:".into(),
                format!("{} / {}", m.completed, m.errored),
            ),
            (
                "  Request throughput (req/s):".into(),
                format!("{:.2}", m.requests_per_s),
            ),
            (
                "  Output token throughput (tok/s):".into(),
                format!("{:.2}", m.output_tokens_per_s),
            ),
            ("  Median / P99 TTFT (ms):".into(), pair("ttft_ms")),
            ("  Median / P99 ITL (ms):".into(), pair("itl_ms")),
            ("  Median / P99 E2EL (ms):".into(), pair("e2el_ms")),
        ];
        for (label, v) in lines {
            let _ = writeln!(out, "{label:<40} {v:<10}");
        }
    }
    out
}

/// The HTML's table of one benchmark's models.
pub(crate) fn html_section(h: &mut String, b: &BenchmarkReport) {
    let Some(rows) = &b.models else {
        return;
    };
    h.push_str("<h3>Models</h3>\n<table>\n<tr><th>Model</th><th>Requests</th><th>Completed</th><th>Errored</th><th>Incomplete</th><th>Output tokens</th><th>Req/s</th><th>Output tok/s</th><th>TTFT median / p99 (ms)</th><th>ITL median / p99 (ms)</th><th>E2EL median / p99 (ms)</th></tr>\n");
    for m in rows {
        let pair = |k: &str| format!("{} / {}", opt(m.median(k), 2), opt(m.p99(k), 2));
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&m.name),
            m.requests,
            m.completed,
            m.errored,
            m.incomplete,
            m.output_tokens,
            m.requests_per_s,
            m.output_tokens_per_s,
            pair("ttft_ms"),
            pair("itl_ms"),
            pair("e2el_ms"),
        );
    }
    h.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::hist::Dist;
    use crate::test_support::open_loop;

    fn row(name: &str, ttft_ms: f64) -> ModelFigures {
        let mut d = Dist::new();
        d.record(ttft_ms * 1000.0);
        ModelFigures {
            name: name.into(),
            requests: 4,
            completed: 3,
            errored: 1,
            output_tokens: 30,
            requests_per_s: 1.5,
            output_tokens_per_s: 15.0,
            ttft_ms: d.summary(&crate::figures::models::MODEL_PERCENTILES),
            ..ModelFigures::default()
        }
    }

    #[test]
    fn every_output_shows_the_models_and_none_without_a_mix() {
        let mut run = RunReport::new("id", "2026-01-01T00:00:00Z");
        run.benchmarks.push(open_loop(|_| 100));
        assert_eq!(guidellm_table(&run, Some(200)), None);
        assert_eq!(vllm_section(&run.benchmarks[0], |t| t.to_string()), "");
        assert_eq!(csv_cells(&run.benchmarks[0]), [String::new()]);
        run.benchmarks[0].models = Some(vec![row("base", 12.5), row("lora-<a>", 40.0)]);
        let table = guidellm_table(&run, Some(200)).expect("table");
        for cell in ["base", "lora-<a>", "12.5", "40.0", "1.50", "15.0"] {
            assert!(table.contains(cell), "{cell} in {table}");
        }
        let b = &run.benchmarks[0];
        let section = vllm_section(b, |t| t.to_string());
        let line = format!(
            "{:<40} {:<10}",
            "  Median / P99 TTFT (ms):", "40.00 / 40.00"
        );
        assert!(section.contains(&line), "{line} in {section}");
        let mut h = String::new();
        html_section(&mut h, b);
        assert!(h.contains("<td>lora-&lt;a&gt;</td>"), "{h}");
        let cell = &csv_cells(b)[0];
        let v: serde_json::Value = serde_json::from_str(cell).expect("json");
        assert_eq!(v[1]["name"], "lora-<a>");
        assert_eq!(v[0]["ttft_ms_p99"], 12.5);
        assert_eq!(v[0]["itl_ms_median"], serde_json::Value::Null);
    }
}
