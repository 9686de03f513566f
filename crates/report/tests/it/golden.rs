//! Every output of the committed sample runs, byte for byte: the saved run
//! (`tests/data/sample-run.json`) and the fixed record sets of `tests/common` (plain, with
//! goodput, with server metrics, sessions, reasoning, a capacity sweep with intervals, a merged
//! run of shards and pooled trials), each rendered as both consoles at several widths and
//! layouts, CSV, JSON, YAML, HTML, the capacity and trials blocks, the vLLM result files and the
//! comparisons. The expected files under `tests/golden/` were written before the report crate
//! was reshaped into figures and views (issue 34) and prove it changed no output. Set `BLESS=1`
//! to rewrite them after an intended change (then review the diff).

use crate::common;

use std::path::PathBuf;

use bench_report::{
    merge_shards, parse_metric_percentiles, parse_percentile_metrics, precision_notes, read_run,
    render_capacity, render_capacity_vllm, render_clocks, render_comparison,
    render_comparison_html, render_csv, render_guidellm, render_html, render_json, render_trials,
    render_vllm, render_vllm_benchmark, render_vllm_preamble, render_yaml, vllm_result,
    vllm_result_filename, Goodput, Metric, RunReport, ShardFile, StatsOptions, VllmConsoleOptions,
    VllmLayout, VllmResultMeta,
};

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares `actual` with `tests/golden/<name>` (or writes it under `BLESS`); returns a
/// difference's description instead of panicking, so one run reports every file that differs.
fn check(name: &str, actual: &str, failures: &mut Vec<String>) {
    let path = golden_dir().join(name);
    if std::env::var_os("BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("golden dir");
        std::fs::write(&path, actual).expect("write golden file");
        return;
    }
    match std::fs::read_to_string(&path) {
        Err(e) => failures.push(format!("{}: {e} (run with BLESS=1)", path.display())),
        Ok(expected) if expected != actual => {
            let line = expected
                .lines()
                .zip(actual.lines())
                .position(|(a, b)| a != b)
                .map_or(expected.lines().count().min(actual.lines().count()), |i| i);
            failures.push(format!("{name} differs from line {}", line + 1));
        }
        Ok(_) => {}
    }
}

fn opts() -> StatsOptions {
    StatsOptions {
        keep_records: true,
        ..StatsOptions::default()
    }
}

fn goodput_opts() -> StatsOptions {
    StatsOptions {
        goodput: Some(Goodput::parse("ttft:500 tpot:50 e2el:2000").expect("valid")),
        ..StatsOptions::default()
    }
}

/// The sample run's records split between `count` shards (record i to shard i mod count).
fn shards(count: u32) -> Vec<ShardFile> {
    let base = common::sample_run(&opts());
    common::split_into_shards(&base, count, |j, _| Some(j as u32 % count)).1
}

/// Three trials of the sample run's records, pooled.
fn pooled_trials() -> RunReport {
    let mut run = common::sample_run(&opts());
    run.benchmarks.clear();
    let runs: Vec<bench_report::Trial> = shards(3)
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
    run
}

/// Every sample run, by name.
fn runs() -> Vec<(&'static str, RunReport)> {
    let saved = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sample-run.json");
    let d = StatsOptions::default();
    vec![
        ("saved", read_run(&saved).expect("sample-run.json")),
        ("sample", common::sample_run(&d)),
        ("goodput", common::sample_run(&goodput_opts())),
        (
            "server",
            common::with_server_metrics(common::sample_run(&d)),
        ),
        ("sessions", common::session_run(&d)),
        ("reasoning", common::reasoning_run(&d)),
        ("capacity", common::capacity_sweep()),
        ("merged", merge_shards(shards(2), 1.0).expect("merge")),
        ("trials", pooled_trials()),
    ]
}

fn vllm_layouts() -> Vec<(&'static str, VllmConsoleOptions)> {
    let all = VllmConsoleOptions {
        percentile_metrics: parse_percentile_metrics(
            "ttft,tpot,itl,e2el,token_latency,ttfo,reasoning_itl,answer_itl",
        )
        .expect("metrics"),
        metric_percentiles: parse_metric_percentiles("50,90,99,99.9").expect("percentiles"),
        layout: VllmLayout::Current,
    };
    let classic = VllmConsoleOptions {
        layout: VllmLayout::Classic,
        ..all.clone()
    };
    vec![
        ("default", VllmConsoleOptions::default()),
        ("all", all),
        ("classic", classic),
    ]
}

fn result_meta(opts: &VllmConsoleOptions) -> VllmResultMeta {
    VllmResultMeta {
        backend: "openai".into(),
        label: Some("golden".into()),
        model_id: "example_model".into(),
        tokenizer_id: "example_tokenizer".into(),
        num_prompts: Some(100),
        metadata: [("k".to_string(), "v".to_string())].into_iter().collect(),
        percentile_metrics: opts.percentile_metrics.clone(),
        metric_percentiles: opts.metric_percentiles.clone(),
        date: "20250515-165928".into(),
    }
}

/// The consoles of one run: guidellm piped and at three widths, vLLM in three layouts.
fn consoles(name: &str, run: &RunReport, failures: &mut Vec<String>) {
    check(
        &format!("{name}/guidellm.txt"),
        &render_guidellm(run, None),
        failures,
    );
    for w in [160, 120, 80] {
        check(
            &format!("{name}/guidellm-w{w}.txt"),
            &render_guidellm(run, Some(w)),
            failures,
        );
    }
    for (layout, o) in vllm_layouts() {
        check(
            &format!("{name}/vllm-{layout}.txt"),
            &render_vllm(run, &o),
            failures,
        );
        let mut parts = String::new();
        for (i, b) in run.benchmarks.iter().enumerate() {
            parts.push_str(&format!("== {i}\n{}", render_vllm_preamble(b)));
            parts.push_str(&render_vllm_benchmark(b, &o));
            let meta = result_meta(&o);
            parts.push_str(&format!("\n{}\n", vllm_result_filename(b, &meta)));
            let v = vllm_result(b, &meta);
            parts.push_str(&serde_json::to_string_pretty(&v).expect("json"));
            parts.push('\n');
        }
        check(
            &format!("{name}/vllm-{layout}-benchmarks.txt"),
            &parts,
            failures,
        );
    }
}

/// The files and blocks of one run: CSV, JSON, YAML, HTML, capacity, trials, clocks, notes.
fn files(name: &str, run: &RunReport, failures: &mut Vec<String>) {
    check(&format!("{name}/run.csv"), &render_csv(run), failures);
    let json = render_json(run).expect("json");
    check(&format!("{name}/run.json"), &json, failures);
    let yaml = render_yaml(run).expect("yaml");
    check(&format!("{name}/run.yaml"), &yaml, failures);
    check(&format!("{name}/run.html"), &render_html(run), failures);
    let mut blocks = String::new();
    blocks.push_str(&format!("-- capacity\n{}", render_capacity(run)));
    blocks.push_str(&format!("-- capacity vllm\n{}", render_capacity_vllm(run)));
    blocks.push_str(&format!("-- trials\n{}", render_trials(run)));
    if let Some(m) = &run.merged {
        blocks.push_str(&format!("-- clocks\n{}", render_clocks(m)));
    }
    blocks.push_str("-- precision notes\n");
    for n in precision_notes(run) {
        blocks.push_str(&n);
        blocks.push('\n');
    }
    check(&format!("{name}/blocks.txt"), &blocks, failures);
}

/// Comparisons of pairs and a triple of runs, console at two widths and HTML.
fn comparisons(all: &[(&str, RunReport)], failures: &mut Vec<String>) {
    let by = |n: &str| all.iter().find(|(k, _)| *k == n).expect("run").1.clone();
    let sets: [&[&str]; 5] = [
        &["sample", "goodput"],
        &["saved", "sample"],
        &["capacity", "sample", "server"],
        &["merged", "trials"],
        &["sessions", "reasoning"],
    ];
    for set in sets {
        let runs: Vec<RunReport> = set.iter().map(|n| by(n)).collect();
        let names: Vec<String> = set.iter().map(|n| format!("{n}.json")).collect();
        let key = set.join("-");
        for w in [None, Some(120), Some(80)] {
            let suffix = w.map_or("piped".to_string(), |w| format!("w{w}"));
            check(
                &format!("compare/{key}-{suffix}.txt"),
                &render_comparison(&runs, &names, w),
                failures,
            );
        }
        check(
            &format!("compare/{key}.html"),
            &render_comparison_html(&runs, &names),
            failures,
        );
    }
}

#[test]
fn every_output_of_every_sample_run_is_as_committed() {
    let all = runs();
    let mut failures = Vec::new();
    for (name, run) in &all {
        consoles(name, run, &mut failures);
        files(name, run, &mut failures);
    }
    comparisons(&all, &mut failures);
    assert!(
        failures.is_empty(),
        "{} golden files differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn metric_names_are_as_committed() {
    // The metric vocabulary the outputs are keyed by (a rename would change every file).
    let names: Vec<String> = Metric::ALL.iter().map(|m| format!("{m:?}")).collect();
    let mut failures = Vec::new();
    check("metrics.txt", &(names.join("\n") + "\n"), &mut failures);
    assert!(failures.is_empty(), "{failures:?}");
}
