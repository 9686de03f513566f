//! `--precision` against the simulator (docs/metrics.md, "Precision"): a loose target stops a
//! benchmark early, as precise, with every key figure's 95% interval in the JSON within the
//! target; a target no benchmark can meet runs it to its budget and says so; a sweep stretches
//! every benchmark; bad values are one-line usage errors naming the flag.
//!
//! Nothing is timed: the assertions read the report's intervals, its verdict and stop reason,
//! and compare durations with the budget the run was given (generous, so that a slow machine
//! only makes the run longer). 4-token answers keep the simulator's work small.

use crate::common;

use serde_json::Value;

/// The relative half-width `(high - low) / (high + low)` of the interval at `path`.
fn relative(b: &Value, path: &[&str]) -> f64 {
    let mut iv = &b["intervals"];
    for p in path {
        iv = &iv[*p];
    }
    let (low, high) = (common::f(iv, &["low"]), common::f(iv, &["high"]));
    if high <= low {
        return 0.0;
    }
    (high - low) / (high + low)
}

/// The key figures' relative half-widths, read from the benchmark's `intervals`.
fn key_half_widths(b: &Value) -> [f64; 4] {
    [
        relative(b, &["requests_per_s"]),
        relative(b, &["output_tokens_per_s"]),
        relative(b, &["metrics", "ttft_ms", "median"]),
        relative(b, &["metrics", "itl_ms", "median"]),
    ]
}

fn run(name: &str, precision: &str, budget: &str) -> Value {
    let dir = common::fresh("precision", name);
    let run = common::mock_report(
        "run",
        name,
        &dir,
        None,
        &[
            "--rate-type",
            "constant",
            "--rate",
            "25",
            "--max-seconds",
            "1",
            "--precision",
            precision,
            "--precision-budget",
            budget,
            "--data",
            "prompt_tokens=32,output_tokens=4",
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    run
}

#[test]
fn a_loose_target_stops_the_benchmark_early_with_its_intervals_within_it() {
    let _one = common::serial();
    let run = run("loose", "30%", "120");
    let b = &run["benchmarks"][0];
    let p = &b["precision"];
    assert_eq!(b["stop_reason"], "precise", "{p}");
    assert_eq!(p["met"], true, "{p}");
    assert_eq!(common::f(p, &["target"]), 0.3);
    assert_eq!(common::f(p, &["budget_s"]), 120.0);
    // Stopped by the target, not the budget: well before it.
    assert!(common::f(b, &["duration_s"]) < 60.0, "{}", b["duration_s"]);
    let from_intervals = key_half_widths(b);
    for (key, h) in [
        "requests_per_s",
        "output_tokens_per_s",
        "ttft_median",
        "itl_median",
    ]
    .iter()
    .zip(from_intervals)
    {
        assert!(
            h <= 0.3,
            "{key}: the interval is ±{:.1}%: {}",
            h * 100.0,
            b["intervals"]
        );
        let stated = common::f(p, &["half_widths", key]);
        assert!(
            (stated - h).abs() < 1e-9,
            "{key}: stated {stated}, intervals {h}"
        );
    }
}

#[test]
fn a_target_out_of_reach_runs_to_the_budget_and_says_so() {
    let _one = common::serial();
    let run = run("tight", "0.01%", "3");
    let b = &run["benchmarks"][0];
    let p = &b["precision"];
    assert_eq!(b["stop_reason"], "max_seconds", "{p}");
    assert_eq!(p["met"], false, "{p}");
    // The window ran the whole budget, not the least length (1 s).
    assert!(
        (common::f(b, &["duration_s"]) - 3.0).abs() < 0.01,
        "{}",
        b["duration_s"]
    );
    // The intervals it reached are stated, and wider than the target.
    let widest = key_half_widths(b).into_iter().fold(0.0, f64::max);
    assert!(widest > 0.0001, "{}", b["intervals"]);
    assert!(common::f(p, &["half_widths", "requests_per_s"]) >= 0.0);
}

#[test]
fn bad_precision_values_are_one_line_usage_errors() {
    for (args, culprit) in [
        (vec!["--precision", "0"], "--precision"),
        (vec!["--precision", "abc"], "--precision"),
        (vec!["--precision", "150%"], "--precision"),
        (
            vec!["--precision", "5%", "--precision-budget", "0.5"],
            "--precision-budget",
        ),
        (vec!["--precision-budget", "10"], "--precision-budget"),
        (vec!["--precision", "5%", "--cooldown", "0.1"], "--cooldown"),
        // The maximum's precision narrows a sweep's answer: a constant rate has none.
        (vec!["--capacity-precision", "5%"], "--capacity-precision"),
    ] {
        let mut all = vec![
            "run",
            "--mock",
            "--rate-type",
            "constant",
            "--rate",
            "5",
            "--max-seconds",
            "1",
        ];
        all.extend(&args);
        let out = common::bench(&all);
        let err = common::text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(lines[0].contains(culprit), "{args:?}: {err}");
    }
    for bad in ["0", "150%", "much"] {
        let out = common::bench(&["sweep", "--mock", "--capacity-precision", bad]);
        common::usage_error(&out, "--capacity-precision", bad);
    }
    // Shards would each stop on their own share.
    let out = common::bench(&[
        "run",
        "--mock",
        "--rate-type",
        "constant",
        "--rate",
        "5",
        "--precision",
        "5%",
        "--shard",
        "0/2",
        "--start-at",
        "2030-01-01T00:00:00Z",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", common::text(&out.stderr));
    assert!(common::text(&out.stderr).contains("--precision"));
    // A benchmark that ends by count has no time to lengthen.
    let out = common::bench(&[
        "run",
        "--mock",
        "--rate-type",
        "burst",
        "--rate",
        "5",
        "--precision",
        "5%",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::text(&out.stderr).contains("--precision"));
}

/// The profile keys resolve like the flags (and `--show-config` writes them back).
#[test]
fn the_profile_keys_set_the_target_and_the_budget() {
    let dir = common::fresh("precision", "profile");
    let p = dir.join("p.yaml");
    std::fs::write(
        &p,
        "mock: true\nrate_type: constant\nrate: 5\nmax_seconds: 2\nprecision: 5%\nprecision_budget: 30\n",
    )
    .expect("write");
    let out = common::bench(&[
        "run",
        "--profile",
        p.to_str().expect("utf8"),
        "--show-config",
    ]);
    let text = common::text(&out.stdout);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    assert!(text.contains("precision: 5%"), "{text}");
    assert!(text.contains("precision_budget: 30"), "{text}");
    // Default budget: four times --max-seconds.
    std::fs::write(
        &p,
        "mock: true\nrate_type: constant\nrate: 5\nmax_seconds: 2\nprecision: 0.1\n",
    )
    .expect("write");
    let out = common::bench(&[
        "run",
        "--profile",
        p.to_str().expect("utf8"),
        "--show-config",
    ]);
    let text = common::text(&out.stdout);
    assert!(text.contains("precision: 10%"), "{text}");
    assert!(text.contains("precision_budget: 8"), "{text}");
    // A sweep's capacity precision, written back as given.
    std::fs::write(
        &p,
        "mock: true\nrate_type: sweep\nmax_seconds: 2\ncapacity_precision: 0.03\n",
    )
    .expect("write");
    let out = common::bench(&[
        "sweep",
        "--profile",
        p.to_str().expect("utf8"),
        "--show-config",
    ]);
    let text = common::text(&out.stdout);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    assert!(text.contains("capacity_precision: 3%"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A sweep runs every benchmark, probes, rungs and rates, to the target or the budget: each
/// says which, and none outlasts the budget.
#[test]
fn a_sweep_runs_every_benchmark_to_the_target_or_the_budget() {
    let _one = common::serial();
    let dir = common::fresh("precision", "sweep");
    let run = common::mock_report(
        "sweep",
        "sweep",
        &dir,
        None,
        &[
            "--max-seconds",
            "1",
            "--precision",
            "30%",
            "--precision-budget",
            "4",
            "--sweep-size",
            "4",
            "--data",
            "prompt_tokens=32,output_tokens=4",
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    let benchmarks = run["benchmarks"].as_array().expect("benchmarks");
    assert!(benchmarks.len() >= 4, "{}", benchmarks.len());
    let mut precise = 0;
    for b in benchmarks {
        let p = &b["precision"];
        let (label, reason) = (&b["label"], &b["stop_reason"]);
        let span = common::f(b, &["duration_s"]) + common::f(b, &["warmup_s"]);
        assert!(span <= 4.0 + 1e-6, "{label}: {span} s past the budget");
        match reason.as_str() {
            // The stop is the running estimate's, the verdict the final intervals'
            // (docs/metrics.md, "Precision"): they can disagree, rarely, when the requests
            // drained after the stop move the fill (one run in about six: a rung near the
            // capacity whose final report held too few batches for any interval). The report
            // then says `met: false`, which is the contract; a met verdict must hold.
            Some("precise") => {
                if p["met"] == true {
                    precise += 1;
                    assert!(key_half_widths(b).iter().all(|&h| h <= 0.3), "{label}: {p}");
                } else {
                    eprintln!("{label}: stopped as precise, final intervals not met: {p}");
                }
            }
            Some("max_seconds") => {
                assert!((span - 4.0).abs() < 0.01, "{label}: {span} s");
            }
            other => panic!("{label}: stopped by {other:?}"),
        }
    }
    assert!(precise >= 1, "no benchmark met a 30% target");
    assert!(run["capacity"]["max_requests_per_s"].as_f64().is_some());
}

/// A precise stop stops the sending and drains (docs/metrics.md, "Precision"): no request is
/// cut, and an open-loop rate below the capacity reads the rate sent within 2%, its interval
/// containing it. Cancelling the requests in flight instead read 13 req/s as 12.12 (95%:
/// 11.80-12.43) on the default simulator: "surely not kept up". The simulator is the small one
/// of the knee test (capacity 33.33 req/s, 24 output tokens): the default one (128 tokens a
/// request, 2,900 SSE events/s of a debug build at 22.4 req/s) starved beside two other timed
/// tests in a CI run, its ITL medians' half-widths 32-35% and TTFT's 13-88% at the 15 s budget,
/// so no benchmark could stop precise.
/// A small simulator: 8 slots, 6 + 0.5 ms per held slot a step, 2 ms prefill; at 16/24 tokens
/// its capacity is 8 / (24 x 10 ms) = 33.33 req/s.
const SMALL_SIM: &str = "max_batch: 8\nstep_base_ms: 6\nstep_per_seq_ms: 0.5\nprefill_overhead_ms: 2\nprefill_rate: 0\nignore_eos: true\n";

#[test]
fn a_precise_stop_drains_and_open_loop_rates_read_the_rate_sent() {
    let _one = common::serial();
    let dir = common::fresh("precision", "drain");
    let cfg = common::write_sim(&dir, SMALL_SIM, None);
    let run = common::mock_report(
        "run",
        "drain",
        &dir,
        Some(&cfg),
        &[
            "--data",
            "prompt_tokens=16,output_tokens=24",
            "--rate-type",
            "constant",
            "--rate",
            "13,22.4",
            "--max-seconds",
            "3",
            "--precision",
            "8%",
            "--precision-budget",
            "15",
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    let mut precise = 0;
    for b in run["benchmarks"].as_array().expect("benchmarks") {
        let label = &b["label"];
        let offered = common::f(b, &["rates", "target_rate"]);
        let got = common::f(b, &["rates", "requests_per_s"]);
        eprintln!(
            "{label}: {got:.2} ({}), {} after {:.1} s; {}",
            b["intervals"]["requests_per_s"],
            b["stop_reason"],
            common::f(b, &["duration_s"]),
            b["precision"]
        );
        precise += usize::from(b["stop_reason"] == "precise");
        assert_eq!(common::f(b, &["requests", "incomplete"]), 0.0, "{label}");
        assert!(
            (got - offered).abs() <= 0.02 * offered,
            "{label}: {got} vs {offered}"
        );
        let iv = &b["intervals"]["requests_per_s"];
        let (low, high) = (common::f(iv, &["low"]), common::f(iv, &["high"]));
        assert!(
            low <= offered && offered <= high,
            "{label}: {offered} outside {iv}"
        );
        assert_ne!(b["rates"]["sustained"]["verdict"], "not_kept_up", "{label}");
    }
    assert!(precise >= 1, "no benchmark stopped as precise");
}

/// Issue 37, point 3: the knee a sweep states under `--precision` is the knee it states
/// without it. A small simulator (8 slots, 6 + 0.5 ms per held slot a step, 2 ms prefill,
/// 16/24 tokens: capacity 8 / (24 x 10 ms) = 33.33 req/s) under a constant load queues only
/// past its capacity, so its median TTFT leaves the plateau there: the engine's knee is its
/// capacity. Each sweep's knee is one of its own rungs (the last that passed), and the rungs
/// differ (each sweep spaces them from its own probes), so "equal" means equal within their
/// intervals: the intervals meet. The rung at the measured capacity decides by a hair (a
/// precise probe read 33.75, and that rung's queue doubled its TTFT; the plain one read 33.31
/// and passed), so a knee may fall one rung below the capacity: six open-loop rungs put it at
/// 80% or more. Before issue 37's fix a precise sweep stated the synchronous rate (19% here):
/// every precise stop cancelled its requests in flight and read 7-11% low.
#[test]
fn the_knee_under_precision_is_the_knee_without_it() {
    let _one = common::serial();
    let capacity = 8.0 / (24.0 * 0.010);
    let sweep = |name: &str, extra: &[&str]| {
        let dir = common::fresh("precision", name);
        let cfg = common::write_sim(&dir, SMALL_SIM, None);
        let args = [
            &[
                "--max-seconds",
                "2",
                "--warmup",
                "0.2",
                "--sweep-size",
                "8",
                "--data",
                "prompt_tokens=16,output_tokens=24",
            ],
            extra,
        ]
        .concat();
        let run = common::mock_report("sweep", name, &dir, Some(&cfg), &args);
        let _ = std::fs::remove_dir_all(&dir);
        let cap = &run["capacity"];
        let knee = cap["knee_requests_per_s"].as_f64().expect("a knee");
        let iv = &cap["intervals"]["knee_requests_per_s"];
        let low = iv["low"].as_f64().expect("knee interval");
        let high = iv["high"].as_f64().unwrap_or(f64::INFINITY);
        let rungs: Vec<String> = run["benchmarks"]
            .as_array()
            .expect("benchmarks")
            .iter()
            .map(|b| format!("{} ({})", b["label"], b["stop_reason"]))
            .collect();
        eprintln!(
            "{name}: knee {knee:.2} ({low:.2}-{high:.2}); {}",
            rungs.join(", ")
        );
        assert!(low <= knee && knee <= high, "{name}: {knee} outside {iv}");
        assert!(
            knee >= 0.78 * capacity && knee <= 1.05 * capacity,
            "{name}: knee {knee:.2} against the engine's {capacity:.2}"
        );
        (low, high)
    };
    let plain = sweep("knee-plain", &[]);
    let precise = sweep(
        "knee-precise",
        &["--precision", "10%", "--precision-budget", "6"],
    );
    assert!(
        plain.0.max(precise.0) <= plain.1.min(precise.1),
        "the knees' intervals do not meet: {plain:?} without --precision, {precise:?} with it"
    );
}

/// `--capacity-precision` (docs/metrics.md, "The capacity's precision"): the benchmark that
/// measured the maximum runs again longer until the maximum's 95% interval spans at most
/// `2 x P` of its lower end, or that benchmark is at its longest. On the small simulator
/// (capacity 33.33 req/s by its closed form), 1 s benchmarks: the report's interval is as
/// narrow as the sweep says it made it, the refinement's benchmarks are in the run, and the
/// point and its interval stand near the closed form. Without the flag nothing is refined.
#[test]
fn capacity_precision_narrows_the_maximums_interval_to_the_target() {
    let _one = common::serial();
    let capacity = 8.0 / (24.0 * 0.010);
    let sweep = |name: &str, extra: &[&str]| {
        let dir = common::fresh("precision", name);
        let cfg = common::write_sim(&dir, SMALL_SIM, None);
        let args = [
            &[
                "--max-seconds",
                "1",
                "--sweep-size",
                "3",
                "--data",
                "prompt_tokens=16,output_tokens=24",
            ],
            extra,
        ]
        .concat();
        let run = common::mock_report("sweep", name, &dir, Some(&cfg), &args);
        let _ = std::fs::remove_dir_all(&dir);
        run
    };
    let plain = sweep("max-plain", &[]);
    assert!(plain["capacity"].get("max_refinement").is_none());
    let run = sweep("max-precise", &["--capacity-precision", "1%"]);
    let cap = &run["capacity"];
    let r = &cap["max_refinement"];
    let labels: Vec<&str> = run["benchmarks"]
        .as_array()
        .expect("benchmarks")
        .iter()
        .map(|b| b["label"].as_str().expect("label"))
        .collect();
    let iv = &cap["intervals"]["max_requests_per_s"];
    let (low, high) = (common::f(iv, &["low"]), common::f(iv, &["high"]));
    let point = common::f(cap, &["max_requests_per_s"]);
    eprintln!(
        "{point:.2} ({low:.2}-{high:.2}) by {}; {r}; {labels:?}",
        cap["max_measured_by"]
    );
    assert_eq!(common::f(r, &["precision"]), 0.01);
    let n = r["benchmarks"].as_u64().expect("benchmarks");
    let met = r["met"].as_bool().expect("met");
    assert!(labels.len() as u64 >= 3 + n, "{labels:?}");
    if n == 0 {
        // The first run was narrow enough already (a rate past the capacity, read by its
        // departures, often is).
        assert!(met, "{r}");
    } else {
        // A benchmark ran again: a label appears twice.
        let mut seen = std::collections::HashSet::new();
        assert!(!labels.iter().all(|l| seen.insert(*l)), "{labels:?}");
    }
    assert_eq!(met, high - low <= 0.02 * low + 1e-9, "{r} vs {low}-{high}");
    assert!(low <= point && point <= high);
    // The interval meets the engine's closed form within 3%: the closed form leaves out the
    // 2 ms each prefill adds to its step, and a narrow interval misses one time in twenty by
    // design (its coverage is tested in crates/report/tests/it/interval_coverage.rs). Runs read
    // 32.92 (32.45-33.38), 33.35 (33.28-33.42) and 33.53 (33.41-33.65) against 33.33.
    assert!(
        low <= 1.03 * capacity && high >= 0.97 * capacity,
        "{point:.2} ({low:.2}-{high:.2}) against the closed form {capacity:.2}"
    );
}
