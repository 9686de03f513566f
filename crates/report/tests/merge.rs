//! The exact merge (docs/distributed.md): a run's records split between shards as
//! `--shard` splits them (record i to shard i mod N), each shard summarised alone and merged,
//! equals the summary of all the records at once in every count, sum and histogram; the
//! merged run validates against the published schema and renders in every format.

mod common;

use std::path::PathBuf;

use bench_core::{RequestRecord, Window};
use bench_report::{
    merge_shards, render_guidellm, render_vllm, write_outputs, Accumulator, BenchmarkMeta,
    BenchmarkReport, Metric, RunReport, ShardFile, ShardRun, StatsOptions, VllmConsoleOptions,
};

fn opts() -> StatsOptions {
    StatsOptions {
        keep_records: true,
        ..StatsOptions::default()
    }
}

/// `b` summarised again from `records` over the same benchmark bounds and window.
fn summarise(b: &BenchmarkReport, records: &[RequestRecord]) -> BenchmarkReport {
    let mut acc = Accumulator::new(&opts());
    for r in records {
        acc.add(r.clone());
    }
    let wall = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_747_328_368);
    let mut meta = BenchmarkMeta::new(
        b.strategy.clone(),
        b.timeline.start_ns,
        b.timeline.end_ns,
        wall,
    );
    meta.window = Window {
        open: b.timeline.measure_start_ns,
        close: b.timeline.measure_end_ns,
        cooldown: b.cooldown_s > 0.0,
    };
    meta.stop_reason = b.stop_reason.clone();
    acc.finish(meta)
}

/// The whole run re-summarised, and its `count` shards (record i to shard i mod count).
fn split(count: u32) -> (RunReport, Vec<ShardFile>) {
    let base = common::sample_run(&opts());
    let mut whole = base.clone();
    let mut shards: Vec<RunReport> = (0..count).map(|_| base.clone()).collect();
    for (k, b) in base.benchmarks.iter().enumerate() {
        let all = b.records.clone().expect("records kept");
        whole.benchmarks[k] = summarise(b, &all);
        for (i, s) in shards.iter_mut().enumerate() {
            let mine: Vec<RequestRecord> = all
                .iter()
                .enumerate()
                .filter(|(j, _)| *j as u32 % count == i as u32)
                .map(|(_, r)| r.clone())
                .collect();
            s.benchmarks[k] = summarise(b, &mine);
        }
    }
    let files = shards
        .into_iter()
        .enumerate()
        .map(|(i, mut run)| {
            run.shard = Some(ShardRun {
                index: i as u32,
                count,
                start_at: Some("2025-05-15T16:59:28Z".into()),
                start_late_ms: Some(0.5),
            });
            ShardFile {
                name: format!("shard-{i}.json"),
                run,
            }
        })
        .collect();
    (whole, files)
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
    let schema_path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/report-schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&schema_path).expect("schema file"))
            .expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("valid JSON Schema");
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
    let dir = std::env::temp_dir().join(format!("bench-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
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
