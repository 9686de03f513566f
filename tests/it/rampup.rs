//! Ramp-up end to end (docs/metrics.md, "Ramp-up"; docs/cli.md): the simulator's log shows the
//! requests arriving as the ramp's closed form sends them, the window opens when the ramp ends,
//! the report records the rate changes, and vLLM's and AIPerf's spellings run the same load.
//! Pacing to the nanosecond is tested on the paused clock (`crates/scheduler`, `ramp::`); here
//! the arrivals are checked to the client's and simulator's own delays.

use crate::common;

use serde_json::Value;

/// Runs `bench run --mock` with a request log; returns the report's only benchmark and the
/// log's arrival times (seconds after the first), in arrival order.
fn run_logged(name: &str, args: &[&str]) -> (Value, Vec<f64>) {
    let dir = common::fresh("rampup", name);
    let log = dir.join("log.jsonl");
    let cfg = common::write_sim(&dir, "step_base_ms: 1\n", Some(&log));
    let run = common::mock_report(
        "run",
        name,
        &dir,
        Some(&cfg),
        &[&["--data", "prompt_tokens=8,output_tokens=2"], args].concat(),
    );
    let mut at: Vec<u64> = common::read_log(&log)
        .iter()
        .map(|e| e["arrival_unix_ns"].as_u64().expect("arrival"))
        .collect();
    at.sort_unstable();
    let first = at[0];
    let secs = at.iter().map(|t| (t - first) as f64 / 1e9).collect();
    let _ = std::fs::remove_dir_all(&dir);
    (run["benchmarks"][0].clone(), secs)
}

/// A linear ramp from 0 to 20 req/s over 2 s (Λ(t) = 5 t²) sends request i at √(i / 5) s (20 in the
/// ramp), then one every 50 ms: the simulator received each within 30 ms of that (the
/// client's and the simulator's own delays, the same for every request bar noise), the window
/// opened at 2 s, and the report lists the changes to 1 .. 20 req/s.
#[test]
fn a_linear_ramp_arrives_as_its_closed_form_and_stays_out_of_the_window() {
    let _one = common::serial();
    let (b, at) = run_logged(
        "linear",
        &[
            "--rate-type",
            "constant",
            "--rate",
            "20",
            "--rampup",
            "2s",
            "--max-seconds",
            "3",
        ],
    );
    // 20 in the ramp, 20 in the last second.
    assert_eq!(at.len(), 40, "{at:?}");
    for (i, t) in at.iter().enumerate() {
        let want = if i <= 20 {
            (i as f64 / 5.0).sqrt()
        } else {
            2.0 + (i as f64 - 20.0) / 20.0
        };
        assert!(
            (t - want).abs() < 0.03,
            "request {i} arrived at {t:.3} s, due {want:.3}: {at:?}"
        );
    }
    assert_eq!(common::f(&b, &["warmup_s"]), 2.0);
    assert_eq!(common::f(&b, &["requests", "excluded_warmup"]), 20.0);
    let r = &b["ramp"];
    assert_eq!(r["shape"], "linear");
    assert_eq!(r["over"]["seconds"], 2.0);
    assert_eq!(r["in_window"], false);
    assert_eq!(r["to"], 20.0);
    let levels: Vec<f64> = r["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| c["rate"].as_f64().expect("rate"))
        .collect();
    assert_eq!(levels, (1..=20).map(f64::from).collect::<Vec<_>>());
    // The measured rate is the full one's, not the ramp's average.
    let rate = common::f(&b, &["rates", "requests_per_s"]);
    assert!((rate - 20.0).abs() < 1.0, "{rate} req/s");
}

/// vLLM's spelling: a ramp by request index over `--num-prompts`, a Poisson load (vLLM's)
/// from 5 to 40 req/s, the whole benchmark the ramp; the gaps shrink as the rate climbs: the
/// first 10 requests take longer than the last 10, by the ratio of the mean gaps (about 3.5
/// for these rates; at least 1.5 with Poisson noise), and AIPerf's duration spelling is
/// `--rampup`.
#[test]
fn vllms_ramp_by_request_and_aiperfs_spelling_run() {
    let _one = common::serial();
    let (b, at) = run_logged(
        "vllm",
        &[
            "--ramp-up-strategy",
            "linear",
            "--ramp-up-start-rps",
            "5",
            "--ramp-up-end-rps",
            "40",
            "--num-prompts",
            "60",
        ],
    );
    assert_eq!(at.len(), 60);
    assert_eq!(b["strategy"]["kind"], "poisson", "{}", b["strategy"]);
    assert_eq!(b["ramp"]["over"], "requests");
    assert_eq!(b["ramp"]["in_window"], true);
    let early = at[10] - at[0];
    let late = at[59] - at[49];
    assert!(
        early > 1.5 * late,
        "first 10 in {early:.3} s, last 10 in {late:.3} s"
    );
    let (b, at) = run_logged(
        "aiperf",
        &[
            "--rate-type",
            "concurrent",
            "--rate",
            "3",
            "--concurrency-ramp-duration",
            "1s",
            "--max-seconds",
            "2",
        ],
    );
    assert!(!at.is_empty());
    let changes: Vec<(f64, f64)> = b["ramp"]["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            (
                c["at_s"].as_f64().expect("at"),
                c["rate"].as_f64().expect("rate"),
            )
        })
        .collect();
    assert_eq!(changes.len(), 3, "{changes:?}");
    assert_eq!(changes[2].1, 3.0);
    assert!((changes[1].0 - 0.5).abs() < 0.05 && (changes[2].0 - 1.0).abs() < 0.05);
}

/// Bad ramp-ups are one-line usage errors naming the flag, exit 2 (a ramp by request from 0
/// req/s would take its first gap at 0 req/s: never).
#[test]
fn bad_ramp_ups_are_usage_errors() {
    for (args, says) in [
        (
            vec!["--rate-type", "constant", "--rate", "5", "--rampup", "soon"],
            "--rampup: `soon`",
        ),
        (
            vec![
                "--rate-type",
                "constant",
                "--rate",
                "5",
                "--rampup",
                "2s",
                "--ramp-up-strategy",
                "exponential",
            ],
            "start rate above 0",
        ),
        (
            vec!["--rate-type", "throughput", "--rampup", "2s"],
            "not throughput",
        ),
        (
            vec![
                "--rate-type",
                "constant",
                "--rate",
                "5",
                "--rampup",
                "10s",
                "--max-seconds",
                "5",
            ],
            "leaves no measurement window",
        ),
        (
            vec![
                "--ramp-up-strategy",
                "linear",
                "--ramp-up-start-rps",
                "5",
                "--ramp-up-end-rps",
                "2",
                "--num-prompts",
                "10",
            ],
            "above the rate it climbs to",
        ),
        (
            vec![
                "--ramp-up-strategy",
                "linear",
                "--ramp-up-start-rps",
                "0",
                "--ramp-up-end-rps",
                "5",
                "--num-prompts",
                "10",
            ],
            "a ramp by request needs a start rate above 0",
        ),
        (
            vec!["--ramp-up-strategy", "linear", "--ramp-up-end-rps", "2"],
            "give --ramp-up-start-rps and --ramp-up-end-rps",
        ),
        (
            vec![
                "--rate-type",
                "constant",
                "--rate",
                "5",
                "--ramp-up-start-rps",
                "1",
            ],
            "need --rampup",
        ),
    ] {
        let out = common::bench(&[&["run", "--mock", "--quiet"], args.as_slice()].concat());
        common::usage_error(&out, says, &format!("{args:?}"));
    }
}
