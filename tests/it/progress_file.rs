//! `--progress-file` and `--progress-interval` (docs/reports.md, "Progress file"): a sweep of
//! the simulator writes lines that each parse and fit docs/progress-schema.json, whose ticks
//! never count back, whose finished lines are the result file's benchmarks, and whose last
//! line names the result file; bad values are one-line usage errors; `--live` without a
//! terminal says so once and shows the progress line.

use crate::common;

use std::path::Path;

use common::{bench, bench_command, fresh, text};
use serde_json::Value;

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("progress file")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/progress-schema.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("schema")).expect("json");
    jsonschema::validator_for(&schema).expect("valid JSON Schema")
}

fn of<'a>(all: &'a [Value], event: &str) -> Vec<&'a Value> {
    all.iter().filter(|l| l["event"] == event).collect()
}

#[test]
fn a_sweep_writes_lines_that_follow_the_run_and_end_with_the_result_file() {
    let dir = fresh("progress", "sweep");
    let (json, progress) = (dir.join("run.json"), dir.join("progress.jsonl"));
    let out = bench_command()
        .args(["sweep", "--mock", "--max-seconds", "1", "--sweep-size", "3"])
        .args([
            "--max-concurrency",
            "8",
            "--data",
            "prompt_tokens=32,output_tokens=8",
        ])
        .args(["--console", "none", "--progress-interval", "0.25"])
        .arg("--output")
        .arg(&json)
        .arg("--progress-file")
        .arg(&progress)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run bench");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let all = lines(&progress);
    let validator = schema();
    for l in &all {
        let errors: Vec<String> = validator.iter_errors(l).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{l}: {errors:?}");
    }
    assert_eq!(all[0]["event"], "start");
    assert_eq!(all[0]["command"], "sweep");

    // Within each benchmark the ticks' counts never go down, and each ends finished.
    let ticks = of(&all, "progress");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("run.json")).expect("json");
    let benchmarks = report["benchmarks"].as_array().expect("benchmarks");
    // (A benchmark's snapshots may coalesce when it is short: each has one at least.)
    let mut compared = 0;
    for (i, b) in benchmarks.iter().enumerate() {
        let mine: Vec<&&Value> = ticks.iter().filter(|t| t["index"] == i).collect();
        assert!(!mine.is_empty(), "benchmark {i}: no tick");
        compared += mine.len() - 1;
        for w in mine.windows(2) {
            for k in ["completed", "errored", "incomplete", "sent"] {
                assert!(w[1][k].as_u64() >= w[0][k].as_u64(), "{k} went down: {w:?}");
            }
        }
        let last = mine.last().expect("a tick");
        assert_eq!(last["finished"], true, "{last}");
        assert_eq!(last["label"], b["label"]);
    }
    assert!(compared >= benchmarks.len(), "{compared} pairs of ticks");

    // The finished lines are the result file's benchmarks, figure for figure.
    let finished = of(&all, "benchmark");
    assert_eq!(finished.len(), benchmarks.len());
    for (line, b) in finished.iter().zip(benchmarks) {
        assert_eq!(line["label"], b["label"]);
        assert_eq!(line["completed"], b["requests"]["completed"]);
        assert_eq!(line["errored"], b["requests"]["errored"]);
        assert_eq!(line["requests_per_s"], b["rates"]["requests_per_s"]);
        assert_eq!(
            line["output_tokens_per_s"],
            b["rates"]["output_tokens_per_s"]
        );
        assert_eq!(line["ttft_p50_ms"], b["metrics"]["ttft_ms"]["median"]);
        assert_eq!(
            line["itl_p99_ms"],
            b["metrics"]["itl_ms"]["percentiles"]["p99"]
        );
    }
    let capacity = of(&all, "capacity");
    assert_eq!(capacity.len(), 1);
    assert_eq!(
        capacity[0]["max_requests_per_s"],
        report["capacity"]["max_requests_per_s"]
    );

    let end = all.last().expect("lines");
    assert_eq!(end["event"], "end", "{end}");
    assert_eq!(end["result"], json.display().to_string());
    assert!(end.get("error").is_none(), "{end}");
}

#[test]
fn bad_values_are_one_line_usage_errors() {
    let dir = fresh("progress", "bad");
    let missing = dir.join("no-such-folder").join("p.jsonl");
    let missing = missing.to_str().expect("utf8");
    for (args, culprit) in [
        (&["--progress-interval", "0"][..], "--progress-interval 0:"),
        (
            &["--progress-interval", "soon"][..],
            "--progress-interval soon:",
        ),
        (
            &["--progress-interval", "0.1"][..],
            "--progress-interval 0.1:",
        ),
        (
            &["--progress-file", missing][..],
            "no-such-folder does not exist",
        ),
    ] {
        let mut all = vec!["sweep", "--mock", "--max-seconds", "1", "--no-output"];
        all.extend_from_slice(args);
        let out = bench(&all);
        common::usage_error(&out, culprit, &format!("{args:?}"));
    }
    assert!(!dir.join("no-such-folder").exists());
}

#[test]
fn live_without_a_terminal_says_so_once_and_shows_the_progress_line() {
    let dir = fresh("progress", "live-pipe");
    let out = bench_command()
        .args(["run", "--mock", "--rate-type", "constant", "--rate", "5"])
        .args(["--max-seconds", "1", "--console", "none", "--live"])
        .arg("--output")
        .arg(dir.join("run.json"))
        .env("RUST_LOG", "warn")
        .output()
        .expect("run bench");
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let said = "--live: stderr is not a terminal; showing the progress line instead";
    assert_eq!(err.matches(said).count(), 1, "{err}");
    assert!(err.contains("[1/1] constant@5.00"), "{err}");
    assert!(dir.join("run.json").is_file());
}

#[test]
fn a_plan_writes_one_file_each_sweep_appending_its_lines_and_ends_with_the_plan() {
    let dir = fresh("progress", "plan");
    let sim = dir.join("sim.yaml");
    std::fs::write(
        &sim,
        "max_batch: 16\nstep_base_ms: 5\nprefill_overhead_ms: 5\nprefill_rate: 0\nignore_eos: true\n",
    )
    .expect("sim config");
    let serve = format!(
        "{} mock-server --port {{port}} --config {} --step-per-seq-ms={{q}}",
        env!("CARGO_BIN_EXE_bench"),
        sim.display()
    );
    let progress = dir.join("progress.jsonl");
    let out = bench_command()
        .args([
            "plan", "--serve", &serve, "--params", "q=0.5,1", "--demand", "50",
        ])
        .arg("--plan-dir")
        .arg(dir.join("plan"))
        .args(["--max-seconds", "1", "--sweep-size", "3", "--quiet"])
        .args([
            "--data",
            "prompt_tokens=16,output_tokens=16",
            "--console",
            "none",
        ])
        .arg("--progress-file")
        .arg(&progress)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run bench plan");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let all = lines(&progress);
    let validator = schema();
    assert!(all.iter().all(|l| validator.is_valid(l)));
    assert_eq!(all[0]["command"], "plan");
    assert!(all[0].get("config").is_none());
    for (config, folder) in [("q=0.5", "q-0.5"), ("q=1", "q-1")] {
        let mine: Vec<&Value> = all.iter().filter(|l| l["config"] == config).collect();
        assert_eq!(mine[0]["event"], "start", "{config}");
        let end = mine.last().expect("lines");
        let run_file = dir.join("plan").join(folder).join("run.json");
        assert_eq!(end["event"], "end", "{config}");
        assert_eq!(end["result"], run_file.display().to_string());
        let run: Value =
            serde_json::from_str(&std::fs::read_to_string(&run_file).expect("run")).expect("json");
        let labels: Vec<&Value> = run["benchmarks"]
            .as_array()
            .expect("benchmarks")
            .iter()
            .map(|b| &b["label"])
            .collect();
        let finished: Vec<&Value> = mine
            .iter()
            .filter(|l| l["event"] == "benchmark")
            .map(|l| &l["label"])
            .collect();
        assert_eq!(finished, labels, "{config}");
        assert_eq!(
            of(&mine.into_iter().cloned().collect::<Vec<_>>(), "capacity").len(),
            1
        );
    }
    let last = all.last().expect("lines");
    assert_eq!(last["event"], "end");
    assert_eq!(
        last["result"],
        dir.join("plan").join("plan.json").display().to_string()
    );
}
