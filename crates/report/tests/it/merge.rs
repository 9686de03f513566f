//! The exact merge (docs/distributed.md): a run's records split between shards as
//! `--shard` splits them (record i to shard i mod N), each shard summarised alone and merged,
//! equals the summary of all the records at once in every count, sum and histogram; the
//! merged run validates against the published schema and renders in every format.

use crate::common;

use std::path::PathBuf;

use bench_report::{
    merge_shards, render_clocks, render_guidellm, render_vllm, write_outputs, Metric, RunReport,
    ShardClock, ShardFile, StatsOptions, VllmConsoleOptions,
};

fn opts() -> StatsOptions {
    StatsOptions {
        keep_records: true,
        ..StatsOptions::default()
    }
}

/// The whole run re-summarised, and its `count` shards (record i to shard i mod count).
fn split(count: u32) -> (RunReport, Vec<ShardFile>) {
    let base = common::sample_run(&opts());
    common::split_into_shards(&base, count, |j, _| Some(j as u32 % count))
}

#[test]
fn merged_shards_equal_the_whole_run_in_every_count_sum_and_histogram() {
    for count in [1, 2, 3] {
        let (whole, files) = split(count);
        let merged = merge_shards(files, 1.0).expect("merge");
        assert_eq!(merged.merged.as_ref().map(|m| m.count), Some(count));
        for (m, w) in merged.benchmarks.iter().zip(&whole.benchmarks) {
            assert_eq!(m.requests, w.requests, "{}", w.label);
            assert_eq!(m.errors, w.errors, "{}", w.label);
            assert_eq!(
                m.tokens.output.completed.total,
                w.tokens.output.completed.total
            );
            assert_eq!(m.tokens.prompt.errored.total, w.tokens.prompt.errored.total);
            assert_eq!(m.tokens.output.sources, w.tokens.output.sources);
            for metric in Metric::ALL {
                let (a, b) = (m.metric(metric), w.metric(metric));
                assert_eq!(a.count, b.count, "{} {metric:?}", w.label);
                assert_eq!(a.percentiles, b.percentiles, "{} {metric:?}", w.label);
                assert_eq!(a.median, b.median, "{} {metric:?}", w.label);
                assert_eq!((a.min, a.max), (b.min, b.max), "{} {metric:?}", w.label);
                assert!((a.mean - b.mean).abs() <= 1e-9 * b.mean.abs().max(1.0));
                assert!((a.stdev - b.stdev).abs() <= 1e-6 * b.stdev.abs().max(1.0));
                let (da, db) = (m.distribution(metric), w.distribution(metric));
                if let (Ok(da), Ok(db)) = (da, db) {
                    assert_eq!(da.histogram(), db.histogram(), "{} {metric:?}", w.label);
                }
            }
        }
    }
}

#[test]
fn merged_run_validates_and_renders_in_every_format() {
    let validator = common::schema_validator();
    let (_, files) = split(2);
    let shard = serde_json::to_value(&files[0].run).expect("json");
    assert!(
        validator.is_valid(&shard),
        "a shard's result fits the schema"
    );
    let merged = merge_shards(files, 1.0).expect("merge");
    let v = serde_json::to_value(&merged).expect("json");
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let dir = bench_test_support::kept(env!("CARGO_TARGET_TMPDIR"), "merge");
    let outs: Vec<PathBuf> = ["m.json", "m.yaml", "m.csv", "m.html"]
        .iter()
        .map(|n| dir.join(n))
        .collect();
    write_outputs(&merged, &outs).expect("every format");
    assert_eq!(bench_report::read_run(&outs[0]).expect("json"), merged);
    assert_eq!(bench_report::read_run(&outs[1]).expect("yaml"), merged);
    assert!(render_guidellm(&merged, None).contains("constant@"));
    assert!(!render_vllm(&merged, &VllmConsoleOptions::default()).is_empty());
}

/// `run`'s benchmarks split into `count` shard files by session (session s to shard
/// s mod count, as `--shard` splits them), each summarised alone; with the whole re-summarised.
fn split_sessions(run: &RunReport, count: u32) -> (RunReport, Vec<ShardFile>) {
    common::split_into_shards(run, count, |_, r| {
        r.session.map(|t| (t.session % u64::from(count)) as u32)
    })
}

#[test]
fn session_figures_of_shards_merge_to_those_of_every_session() {
    let run = common::session_run(&opts());
    for count in [2, 3] {
        let (whole, files) = split_sessions(&run, count);
        let merged = merge_shards(files, 1.0).expect("sessions merge");
        let (m, w) = (
            merged.benchmarks[0]
                .sessions
                .as_ref()
                .expect("merged sessions"),
            whole.benchmarks[0].sessions.as_ref().expect("sessions"),
        );
        assert_eq!(m.duration_ms.count, w.duration_ms.count);
        assert_eq!(m.duration_ms.percentiles, w.duration_ms.percentiles);
        assert_eq!(
            (m.duration_ms.min, m.duration_ms.max),
            (w.duration_ms.min, w.duration_ms.max)
        );
        assert_eq!(m.turns.len(), w.turns.len());
        for (a, b) in m.turns.iter().zip(&w.turns) {
            assert_eq!(a.requests, b.requests, "turn {}", b.turn);
            assert_eq!(a.prompt_tokens.total, b.prompt_tokens.total);
            assert_eq!(
                (a.prompt_tokens.min, a.prompt_tokens.max),
                (b.prompt_tokens.min, b.prompt_tokens.max)
            );
            assert_eq!(a.output_tokens.count, b.output_tokens.count);
            for (x, y) in [
                (&a.ttft_ms, &b.ttft_ms),
                (&a.itl_ms, &b.itl_ms),
                (&a.e2el_ms, &b.e2el_ms),
            ] {
                assert_eq!(x.count, y.count, "turn {}", b.turn);
                assert_eq!(x.percentiles, y.percentiles, "turn {}", b.turn);
                assert_eq!(x.median, y.median, "turn {}", b.turn);
                assert_eq!((x.min, x.max), (y.min, y.max), "turn {}", b.turn);
                assert!((x.mean - y.mean).abs() <= 1e-9 * y.mean.abs().max(1.0));
            }
        }
    }
}

#[test]
fn clocks_proven_apart_by_the_targets_date_are_refused() {
    let (_, mut files) = split(3);
    let bounds = [[-500.0, 500.0], [200.0, 1200.0], [2100.0, 3100.0]];
    for (f, b) in files.iter_mut().zip(bounds) {
        if let Some(s) = f.run.shard.as_mut() {
            s.clock = Some(ShardClock {
                wall_minus_run_start_ms: 0.001,
                wall_minus_run_end_ms: Some(0.002),
                server_offset_ms: Some(b),
            });
        }
    }
    // Shard 2's clock is at least 2100 - 500 ms ahead of shard 0's.
    let e = merge_shards(files.clone(), 1.0)
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("shard-2.json and shard-0.json") && e.contains("at least 1.600 s"),
        "{e}"
    );
    let merged = merge_shards(files, 2.0).expect("within 2 s");
    let m = merged.merged.as_ref().expect("merged");
    assert_eq!(m.min_clock_skew_ms, Some(1600.0));
    assert_eq!(
        m.shards[2].clock.and_then(|c| c.server_offset_ms),
        Some([2100.0, 3100.0])
    );
    let text = render_clocks(m);
    assert!(text.contains("clocks at least 1600.0 ms apart"), "{text}");
    assert!(
        text.contains("wall - target clock in [2100, 3100] ms"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 4, "{text}");
    let validator = common::schema_validator();
    let v = serde_json::to_value(&merged).expect("json");
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

/// The trials of a repeated run (docs/metrics.md, "Repeated trials"): the sample run's
/// records split into three trials, pooled, equal the whole run in every count and histogram;
/// rates are the trials' means with Student's interval across them; the capacity too; the
/// pooled run fits the schema and renders in every format.
#[test]
fn pooled_trials_equal_the_whole_run_and_state_across_trial_intervals() {
    let (whole, files) = split(3);
    let mut run = whole.clone();
    run.benchmarks.clear();
    let runs: Vec<bench_report::Trial> = files
        .into_iter()
        .enumerate()
        .map(|(i, f)| bench_report::Trial {
            index: i as u32,
            data_seed: Some(7 + i as u64),
            benchmarks: f.run.benchmarks,
            capacity: Some(common::swept_capacity(10.0 + 2.0 * i as f64)),
        })
        .collect();
    run.trials = Some(bench_report::Trials {
        requested: 3,
        stop_reason: "all trials ran".into(),
        runs,
        ..Default::default()
    });
    bench_report::pool(&mut run).expect("pool");
    assert_eq!(run.benchmarks.len(), whole.benchmarks.len());
    let t = run.trials.clone().expect("trials");
    for (k, (p, w)) in run.benchmarks.iter().zip(&whole.benchmarks).enumerate() {
        assert_eq!(p.requests, w.requests, "{}", w.label);
        for metric in Metric::ALL {
            assert_eq!(p.metric(metric).count, w.metric(metric).count);
            assert_eq!(p.metric(metric).percentiles, w.metric(metric).percentiles);
        }
        let rates: Vec<f64> = t
            .runs
            .iter()
            .map(|r| r.benchmarks[k].rates.requests_per_s)
            .collect();
        let mean = rates.iter().sum::<f64>() / 3.0;
        let sd = (rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((p.rates.requests_per_s - mean).abs() < 1e-9, "{}", w.label);
        let iv = p.intervals.as_ref().expect("intervals");
        assert_eq!((iv.method.as_str(), iv.batches), ("trials", 3));
        let half = 4.303 * sd / 3f64.sqrt();
        assert!((iv.requests_per_s.high - (mean + half)).abs() < 1e-9);
    }
    // Capacities 10, 12, 14: mean 12, sd 2, half-width 4.303 * 2 / sqrt(3).
    let cap = t.capacity.as_ref().expect("capacity interval");
    let half = 4.303 * 2.0 / 3f64.sqrt();
    assert!((cap.mean - 12.0).abs() < 1e-12 && (cap.high - (12.0 + half)).abs() < 1e-9);
    assert_eq!(
        t.slo.as_ref().map(|s| s.values.clone()),
        Some(vec![8.0, 10.0, 12.0])
    );
    let c = run.capacity.as_ref().expect("pooled capacity");
    assert_eq!(
        (c.max_requests_per_s, c.slo_max_requests_per_s),
        (12.0, Some(10.0))
    );
    let iv = bench_report::capacity_interval(&run).expect("interval");
    assert!((iv.low - cap.low).abs() < 1e-12);
    // Fits the schema and renders.
    let validator = common::schema_validator();
    let v = serde_json::to_value(&run).expect("json");
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let dir = bench_test_support::kept(env!("CARGO_TARGET_TMPDIR"), "trials");
    let outs: Vec<PathBuf> = ["t.json", "t.yaml", "t.csv", "t.html"]
        .iter()
        .map(|n| dir.join(n))
        .collect();
    write_outputs(&run, &outs).expect("every format");
    assert_eq!(bench_report::read_run(&outs[0]).expect("json"), run);
    assert_eq!(bench_report::read_run(&outs[1]).expect("yaml"), run);
    let html = std::fs::read_to_string(&outs[3]).expect("html");
    assert!(
        html.contains("<pre id=\"trials\">Trials: 3 of 3 ran"),
        "the HTML's trials block"
    );
    let text = bench_report::render_trials(&run);
    assert!(
        text.starts_with("Trials: 3 of 3 ran (all trials ran)"),
        "{text}"
    );
    assert!(text.contains("capacity req/s: 12.00 ("), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
