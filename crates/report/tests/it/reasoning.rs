//! The reasoning figures (docs/metrics.md, "Reasoning") against the closed form of a fixed
//! record set, in every output: JSON (against the schema), YAML, CSV, HTML and both consoles,
//! which show them only when a benchmark saw reasoning.

use crate::common;

use bench_core::{SloMetric, SloStat};
use bench_report::{
    parse_percentile_metrics, read_run, render_csv, render_guidellm, render_html, render_json,
    render_vllm, write_outputs, Metric, StatsOptions, VllmConsoleOptions, VllmLayout,
};
use common::{A_GAP, A_TOKENS, MS, R_GAP, R_SWITCH, R_TOKENS, R_TTFT};

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Within the histogram's 3 significant figures.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= b.abs() * 1e-3 + 1e-9
}

#[test]
fn reasoning_figures_equal_the_closed_form() {
    let run = common::reasoning_run(&StatsOptions::default());
    let b = &run.benchmarks[0];
    assert_eq!(b.requests.completed, 10);
    let ttfo = R_TTFT + (R_TOKENS as u64 - 1) * R_GAP + R_SWITCH;
    let m = |metric: Metric| b.metric(metric).clone();
    assert!(
        close(m(Metric::Ttft).mean, ms(R_TTFT)),
        "TTFT keeps its definition"
    );
    assert_eq!(m(Metric::Ttfo).count, 10);
    assert!(
        close(m(Metric::Ttfo).mean, ms(ttfo)),
        "{:?}",
        m(Metric::Ttfo)
    );
    assert!(close(m(Metric::Ttfo).max, ms(ttfo)));
    assert!(close(m(Metric::ReasoningTime).mean, ms(ttfo - R_TTFT)));
    // Phase ITLs pool the gaps inside each phase; the switch gap is in neither.
    assert_eq!(m(Metric::ReasoningItl).count, 10 * (R_TOKENS as u64 - 1));
    assert!(close(m(Metric::ReasoningItl).mean, ms(R_GAP)));
    assert_eq!(m(Metric::AnswerItl).count, 10 * (A_TOKENS as u64 - 1));
    assert!(close(m(Metric::AnswerItl).mean, ms(A_GAP)));
    assert_eq!(
        m(Metric::Itl).count,
        10 * (R_TOKENS + A_TOKENS - 1) as u64,
        "ITL keeps every gap"
    );
    let r = b.tokens.reasoning.as_ref().expect("reasoning tokens");
    let a = b.tokens.answer.as_ref().expect("answer tokens");
    assert_eq!(r.completed.total, 10 * R_TOKENS as u64);
    assert_eq!(r.completed.per_request, R_TOKENS as f64);
    assert_eq!(a.completed.total, 10 * A_TOKENS as u64);
    assert_eq!(r.sources.get("usage"), Some(&10));
    // The SLO vocabulary.
    let v = b.slo_value(SloMetric::Ttfo, SloStat::Percentile(99.0));
    assert!(v.is_some_and(|v| close(v, ms(ttfo))), "{v:?}");
    assert!(b.meets(&"ttfo_p99=100".parse().expect("slo")));
    assert!(!b.meets(&"ttfo_p99=50".parse().expect("slo")));
}

#[test]
fn a_run_without_reasoning_has_ttfo_equal_to_ttft_and_no_reasoning_tokens() {
    let run = common::sample_run(&StatsOptions::default());
    for b in &run.benchmarks {
        assert!(b.tokens.reasoning.is_none() && b.tokens.answer.is_none());
        assert_eq!(b.metric(Metric::Ttfo).count, b.metric(Metric::Ttft).count);
        assert_eq!(b.metric(Metric::Ttfo).mean, b.metric(Metric::Ttft).mean);
        assert_eq!(b.metric(Metric::ReasoningTime).count, 0);
        assert_eq!(b.metric(Metric::ReasoningItl).count, 0);
        assert_eq!(
            b.metric(Metric::AnswerItl).count,
            b.metric(Metric::Itl).count
        );
    }
}

#[test]
fn every_output_carries_the_reasoning_figures() {
    let opts = StatsOptions {
        keep_records: true,
        ..StatsOptions::default()
    };
    let run = common::reasoning_run(&opts);
    let validator = common::schema_validator();
    let value: serde_json::Value =
        serde_json::from_str(&render_json(&run).expect("json")).expect("parse");
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        value["benchmarks"][0]["records"][0]["reasoning"]["source"],
        "usage"
    );
    let dir = bench_test_support::kept(env!("CARGO_TARGET_TMPDIR"), "reasoning");
    let (json, yaml) = (dir.join("r.json"), dir.join("r.yaml"));
    write_outputs(&run, &[json.clone(), yaml.clone()]).expect("write");
    assert_eq!(read_run(&json).expect("json"), run);
    assert_eq!(read_run(&yaml).expect("yaml"), run);
    let _ = std::fs::remove_dir_all(&dir);

    let csv = render_csv(&run);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().expect("header").clone();
    let row = reader.records().next().expect("row").expect("valid row");
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    let ttfo_ms = ms(R_TTFT + (R_TOKENS as u64 - 1) * R_GAP + R_SWITCH);
    let cell: f64 = row[col("ttfo_ms_mean")].parse().expect("number");
    assert!(close(cell, ttfo_ms), "{cell}");
    assert_eq!(&row[col("reasoning_tokens_completed")], "60");
    assert_eq!(&row[col("answer_tokens_completed")], "40");

    let html = render_html(&run);
    assert!(html.contains("ttfo_ms") && html.contains("Reasoning tokens"));

    let g = render_guidellm(&run, Some(120));
    assert!(g.contains("TTFO"), "{g}");
    assert!(g.contains("Reasoning"), "{g}");
    let v = render_vllm(
        &run,
        &VllmConsoleOptions {
            percentile_metrics: parse_percentile_metrics("ttft,tpot,itl").expect("metrics"),
            metric_percentiles: vec![99.0],
            layout: VllmLayout::Current,
        },
    );
    assert!(v.contains("Mean TTFO (ms):"), "{v}");
    assert!(v.contains("Reasoning tokens:"), "{v}");
    let _ = MS;
}

#[test]
fn consoles_and_html_of_a_run_without_reasoning_do_not_mention_it() {
    let run = common::sample_run(&StatsOptions::default());
    let g = render_guidellm(&run, Some(120));
    assert!(!g.contains("TTFO") && !g.contains("Reasoning"), "{g}");
    let v = render_vllm(
        &run,
        &VllmConsoleOptions {
            percentile_metrics: parse_percentile_metrics("ttft,tpot,itl").expect("metrics"),
            metric_percentiles: vec![99.0],
            layout: VllmLayout::Current,
        },
    );
    assert!(!v.contains("TTFO") && !v.contains("Reasoning"), "{v}");
    let html = render_html(&run);
    assert!(!html.contains("Reasoning tokens"));
    assert!(!html.contains("reasoning_itl_ms"));
}
