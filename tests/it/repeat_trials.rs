//! Repeated trials (`--repeat N`, docs/metrics.md, "Repeated trials") against the simulator:
//! the pooled benchmark holds exactly the trials' requests (their counts add up to the
//! simulator's request log) and its percentiles are those of the union of the trials'
//! histograms; the across-trial interval of the throughput is Student's t over the trials and
//! contains the closed-form rate; every trial sends fresh prompts (the simulator's prefix
//! cache sees no hit across trials, where resent prompts do hit); file data read on from trial
//! to trial; `--repeat-until` stops only when its target is met.

use crate::common;

use bench_report::{Metric, RunReport};

/// The report of `bench run --mock` with the simulator logging every request to
/// `dir/log.jsonl` (with `sim` as its configuration), and the log's lines.
fn logged_run(name: &str, sim: &str, args: &[&str]) -> (RunReport, Vec<serde_json::Value>) {
    let dir = common::fresh("repeat", name);
    let log = dir.join("log.jsonl");
    let cfg = common::write_sim(&dir, sim, Some(&log));
    common::mock_report("run", name, &dir, Some(&cfg), args);
    let run = bench_report::read_run(&dir.join("run.json")).expect("report");
    let entries = common::read_log(&log);
    let _ = std::fs::remove_dir_all(&dir);
    (run, entries)
}

/// Student's t at 0.975 for 3 degrees of freedom (4 trials).
const T3: f64 = 3.182;

#[test]
fn trials_pool_exactly_and_the_throughput_interval_covers_the_offered_rate() {
    let _one = common::serial();
    // Poisson arrivals at 20 req/s, seeded 1000 to 1003 in the four trials: deterministic
    // arrivals (19.5, 23.0, 19.5 and 22.5 req/s measured), so the coverage below does not
    // depend on luck or on the machine.
    let (run, log) = logged_run(
        "pool",
        "",
        &[
            "--rate-type",
            "poisson",
            "--rate",
            "20",
            "--seed",
            "1000",
            "--max-seconds",
            "2",
            "--data",
            "prompt_tokens=32,output_tokens=4",
            "--repeat",
            "4",
        ],
    );
    let trials = run.trials.as_ref().expect("trials");
    assert_eq!(trials.runs.len(), 4);
    assert_eq!(trials.stop_reason, "all trials ran");
    let pooled = &run.benchmarks[0];
    let parts: Vec<_> = trials.runs.iter().map(|t| &t.benchmarks[0]).collect();
    // Counts: the pool is the sum of the trials, and the trials are what the server received.
    let sum = |f: fn(&bench_report::RequestCounts) -> u64| {
        parts.iter().map(|b| f(&b.requests)).sum::<u64>()
    };
    assert_eq!(pooled.requests.completed, sum(|r| r.completed));
    assert_eq!(pooled.requests.total, sum(|r| r.total));
    assert_eq!(
        pooled.requests.excluded_unsteady,
        sum(|r| r.excluded_unsteady)
    );
    let sent = sum(|r| r.total + r.excluded_warmup + r.excluded_cooldown);
    assert_eq!(sent, log.len() as u64, "the simulator's request log");
    // Percentiles: those of the union of the trials' histograms.
    for m in [Metric::Ttft, Metric::Itl, Metric::Tpot, Metric::E2el] {
        let mut union = bench_report::Dist::new();
        for b in &parts {
            union.merge(&b.distribution(m).expect("histogram"));
        }
        assert_eq!(pooled.metric(m).count, union.count(), "{m:?} count");
        for p in [50.0, 90.0, 99.0] {
            let want = union.percentile_us(p).expect("values") / 1000.0;
            let got = pooled.percentile_ms(m, p).expect("pooled");
            assert!((got - want).abs() < 1e-9, "{m:?} p{p}: {got} vs {want}");
        }
    }
    // The interval: Student's t over the four trial rates, around their mean.
    let rates: Vec<f64> = parts.iter().map(|b| b.rates.requests_per_s).collect();
    let mean = rates.iter().sum::<f64>() / 4.0;
    let sd = (rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
    let iv = pooled.intervals.as_ref().expect("intervals");
    assert_eq!((iv.method.as_str(), iv.batches), ("trials", 4));
    assert!((pooled.rates.requests_per_s - mean).abs() < 1e-9);
    let half = T3 * sd / 2.0;
    assert!(
        (iv.requests_per_s.low - (mean - half)).abs() < 1e-9,
        "{iv:?}"
    );
    assert!(
        (iv.requests_per_s.high - (mean + half)).abs() < 1e-9,
        "{iv:?}"
    );
    // The closed form: below capacity every request sent completes, so the long-run
    // completion rate is the arrival rate, 20 req/s.
    assert!(
        iv.requests_per_s.low <= 20.0 && 20.0 <= iv.requests_per_s.high,
        "trial rates {rates:?}: interval {:?} misses 20 req/s",
        iv.requests_per_s
    );
    assert!(half > 0.0 && half < 10.0, "{half}");
}

/// Prefix cache on (4-token blocks), synchronous requests of 64-token prompts.
const CACHE: &str = "prefix_cache_blocks: 4096\nblock_size: 4\n";

#[test]
fn every_trial_sends_fresh_prompts() {
    let _one = common::serial();
    let args = |data: &'static str, n: &'static str, repeat: &'static str| {
        vec![
            "--rate-type",
            "synchronous",
            "--max-requests",
            n,
            "--data",
            data,
            "--repeat",
            repeat,
        ]
    };
    // The control: the same prompts sent again hit the cache.
    let (_, again) = logged_run(
        "again",
        CACHE,
        &args("prompt_tokens=64,output_tokens=2,samples=4", "8", "1"),
    );
    let hits = |log: &[serde_json::Value]| {
        log.iter()
            .filter(|e| e["cached_tokens"].as_u64().unwrap_or(0) > 0)
            .count()
    };
    assert_eq!((again.len(), hits(&again)), (8, 4), "the control");
    // Three trials of four requests, the data starting over after four: no hit.
    let (run, log) = logged_run(
        "fresh",
        CACHE,
        &args("prompt_tokens=64,output_tokens=2,samples=4", "4", "3"),
    );
    assert_eq!((log.len(), hits(&log)), (12, 0), "a trial resent prompts");
    let seeds: Vec<Option<u64>> = run
        .trials
        .as_ref()
        .expect("trials")
        .runs
        .iter()
        .map(|t| t.data_seed)
        .collect();
    assert!(seeds.iter().all(Option::is_some), "{seeds:?}");
    assert!(seeds[0] != seeds[1] && seeds[1] != seeds[2], "{seeds:?}");
    // Even with the seed given: trial i draws with seed + i.
    let (_, log) = logged_run(
        "seeded",
        CACHE,
        &args(
            "prompt_tokens=64,output_tokens=2,samples=4,seed=5",
            "4",
            "2",
        ),
    );
    assert_eq!(
        (log.len(), hits(&log)),
        (8, 0),
        "a seeded trial resent prompts"
    );
}

#[test]
fn file_data_read_on_from_trial_to_trial() {
    let _one = common::serial();
    let dir = common::fresh("repeat", "file-data");
    // Row i holds i + 1 words, so the server's prompt token counts tell the rows apart.
    let rows: String = (0..9)
        .map(|i| {
            let words = vec!["word"; i + 1].join(" ");
            format!("{{\"prompt\": \"{words}\"}}\n")
        })
        .collect();
    let data = dir.join("rows.jsonl");
    std::fs::write(&data, rows).expect("write");
    let data = format!("path={},output_tokens=2", data.display());
    let (_, log) = logged_run(
        "file",
        "",
        &[
            "--rate-type",
            "synchronous",
            "--max-requests",
            "3",
            "--data",
            &data,
            "--repeat",
            "3",
        ],
    );
    let tokens: Vec<u64> = log
        .iter()
        .map(|e| e["prompt_tokens"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(tokens.len(), 9);
    let mut distinct = tokens.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 9, "a trial read rows again: {tokens:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn repeat_until_stops_only_when_every_key_figure_is_within_its_target() {
    let _one = common::serial();
    let (run, _) = logged_run(
        "until",
        "",
        &[
            "--rate-type",
            "synchronous",
            "--max-requests",
            "6",
            "--data",
            "prompt_tokens=16,output_tokens=4",
            "--repeat",
            "5",
            "--repeat-until",
            "60%",
        ],
    );
    let t = run.trials.as_ref().expect("trials");
    let ran = t.runs.len();
    assert!((3..=5).contains(&ran), "{ran} trials");
    let b = &run.benchmarks[0];
    let iv = b.intervals.as_ref().expect("intervals");
    let within = |v: f64, i: bench_report::Interval| (i.high - i.low) / 2.0 <= 0.6 * v.abs();
    let mut all = within(b.rates.requests_per_s, iv.requests_per_s)
        && within(b.rates.output_tokens_per_s, iv.output_tokens_per_s);
    for m in [Metric::Ttft, Metric::Itl, Metric::Tpot, Metric::E2el] {
        let i = iv.metrics[m.json_key()].median.expect("median interval");
        all &= within(b.percentile_ms(m, 50.0).expect("median"), i);
    }
    if t.stop_reason.starts_with("converged") {
        assert!(all, "stopped at {ran} with a figure outside 60%: {iv:?}");
        assert_eq!(
            bench_report::not_converged(&run, 0.6),
            None,
            "{}",
            t.stop_reason
        );
    } else {
        assert_eq!(ran, 5, "{}", t.stop_reason);
        assert!(
            !all,
            "every figure was within 60%, yet it ran on: {}",
            t.stop_reason
        );
    }
    // Stopping after two trials is never allowed.
    assert!(ran >= bench_report::MIN_TRIALS_TO_STOP);
}

/// The trials of `json` written so far, and their stop reason.
fn written_trials(json: &std::path::Path) -> Option<(Vec<serde_json::Value>, String)> {
    let text = std::fs::read_to_string(json).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let runs = v["trials"]["runs"].as_array()?.clone();
    let why = v["trials"]["stop_reason"].as_str()?.to_string();
    Some((runs, why))
}

#[test]
fn an_interrupted_repeat_keeps_every_finished_trial() {
    let _one = common::serial();
    let dir = common::fresh("repeat", "interrupt");
    let json = dir.join("run.json");
    let child = common::bench_command()
        .args([
            "run",
            "--mock",
            "--quiet",
            "--console",
            "none",
            "--rate-type",
            "constant",
            "--rate",
            "10",
            "--max-seconds",
            "1",
            "--data",
            "prompt_tokens=16,output_tokens=4",
            "--repeat",
            "50",
            "--output",
            json.to_str().expect("utf8"),
        ])
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn bench");
    // Wait until the first trial's benchmark is on disk, then interrupt.
    let t0 = std::time::Instant::now();
    while written_trials(&json).is_none_or(|(runs, _)| runs.len() < 2) {
        assert!(t0.elapsed().as_secs() < 120, "no trial written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let ok = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(ok.success());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        common::text(&out.stderr)
    );
    let (runs, why) = written_trials(&json).expect("report");
    assert_eq!(why, "interrupted");
    assert!(runs.len() >= 2 && runs.len() < 50, "{} trials", runs.len());
    // Every trial but the interrupted one is whole; the run pools them all.
    for t in &runs[..runs.len() - 1] {
        let b = &t["benchmarks"][0];
        assert_eq!(b["stop_reason"], "max_seconds", "{}", t["index"]);
    }
    let run = bench_report::read_run(&json).expect("report");
    let pooled: u64 = runs
        .iter()
        .filter_map(|t| t["benchmarks"][0]["requests"]["total"].as_u64())
        .sum();
    assert_eq!(run.benchmarks[0].requests.total, pooled);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_repeated_sweep_states_the_capacity_and_slo_answers_with_across_trial_intervals() {
    let _one = common::serial();
    let dir = common::fresh("repeat", "sweep");
    let json = dir.join("run.json");
    let out = common::bench(&[
        "sweep",
        "--mock",
        "--quiet",
        "--max-seconds",
        "1",
        "--sweep-size",
        "4",
        "--max-concurrency",
        "16",
        "--data",
        "prompt_tokens=16,output_tokens=4",
        "--slo",
        "ttft_p50=1000",
        "--repeat",
        "2",
        "--console",
        "guidellm",
        "--output",
        json.to_str().expect("utf8"),
    ]);
    let stdout = common::text(&out.stdout);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let run = bench_report::read_run(&json).expect("report");
    let t = run.trials.as_ref().expect("trials");
    assert_eq!(t.runs.len(), 2);
    let caps: Vec<f64> = t
        .runs
        .iter()
        .map(|r| r.capacity.as_ref().expect("capacity").max_requests_per_s)
        .collect();
    let cap = t.capacity.as_ref().expect("capacity interval");
    assert_eq!(cap.values, caps);
    // Two trials: t(0.975, 1) = 12.706, sd = |a - b| / sqrt(2).
    let mean = (caps[0] + caps[1]) / 2.0;
    let half = 12.706 * ((caps[0] - caps[1]).abs() / 2f64.sqrt()) / 2f64.sqrt();
    assert!((cap.mean - mean).abs() < 1e-9 && (cap.high - (mean + half)).abs() < 1e-6);
    let c = run.capacity.as_ref().expect("pooled capacity");
    assert!((c.max_requests_per_s - mean).abs() < 1e-9);
    // A generous SLO every rate meets: every trial has an answer, and so has the run.
    let slos: Vec<f64> = t
        .runs
        .iter()
        .filter_map(|r| r.capacity.as_ref()?.slo_max_requests_per_s)
        .collect();
    assert_eq!(t.slo.as_ref().map(|s| s.values.clone()), Some(slos));
    // The consoles: the capacity with the across-trial interval, then the trials' block.
    let line = format!("(95% interval {:.2} to {:.2})", cap.low, cap.high);
    assert!(stdout.contains(&line), "{line} not in:\n{stdout}");
    assert!(
        stdout.contains("Trials: 2 of 2 ran (all trials ran)"),
        "{stdout}"
    );
    assert!(stdout.contains("  capacity req/s: "), "{stdout}");
    // The pooled benchmarks are the labels every trial ran, synchronous first.
    assert_eq!(run.benchmarks[0].label, "synchronous");
    for b in &run.benchmarks {
        for r in &t.runs {
            assert!(
                r.benchmarks.iter().any(|x| x.label == b.label),
                "{}",
                b.label
            );
        }
    }
    assert_ne!(t.runs[0].data_seed, t.runs[1].data_seed);
    // `bench report` prints the saved run's trials' block too.
    let again = common::bench(&["report", json.to_str().expect("utf8")]);
    assert!(again.status.success(), "{}", common::text(&again.stderr));
    let text = common::text(&again.stdout);
    assert!(
        text.contains("Trials: 2 of 2 ran (all trials ran)"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_repeated_trace_replay_states_its_fidelity_against_every_replay() {
    let _one = common::serial();
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/traces/mooncake.jsonl"
    );
    let data = format!("trace={trace}");
    let out = common::bench(&[
        "run",
        "--mock",
        "--quiet",
        "--data",
        &data,
        "--speedup",
        "40",
        "--repeat",
        "2",
    ]);
    let stdout = common::text(&out.stdout);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    // The example trace has 60 rows: two replays pooled sent 120 of 2 x 60.
    assert!(
        stdout.contains("trace fidelity trace@40.00x (2 trials pooled): 120 of 120 rows sent"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Trials: 2 of 2 ran (all trials ran)"),
        "{stdout}"
    );
}
