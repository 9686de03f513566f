//! Issue 10, end to end: the real `bench` binary against its in-process simulator (`--mock`),
//! its figures checked against the simulator's closed form (docs/simulator.md) and its request
//! log. Each benchmark is a few seconds long; the tolerances hold on a loaded 2-core machine.

use crate::common;

use std::path::PathBuf;

use common::{f, mock_report, read_log, serial, write_sim};
use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    common::tmp("honest", name)
}

/// A simulator configuration, as the keys of `--mock-config`.
#[derive(Clone, Copy, Debug)]
struct Sim {
    max_batch: u32,
    step_base_ms: f64,
    step_per_seq_ms: f64,
    prefill_overhead_ms: f64,
    prefill_rate: f64,
}

const DEFAULT_SIM: Sim = Sim {
    max_batch: 64,
    step_base_ms: 8.0,
    step_per_seq_ms: 0.1,
    prefill_overhead_ms: 2.0,
    prefill_rate: 10_000.0,
};

const SMALL_SIM: Sim = Sim {
    max_batch: 16,
    step_base_ms: 4.0,
    step_per_seq_ms: 0.25,
    prefill_overhead_ms: 1.0,
    prefill_rate: 20_000.0,
};

impl Sim {
    /// Closed-form requests/s with the batch always full (docs/simulator.md).
    fn capacity(&self, prompt: f64, n: f64) -> f64 {
        let s = self.step_base_ms + self.step_per_seq_ms * self.max_batch as f64;
        let p = self.prefill_overhead_ms + prompt / self.prefill_rate * 1000.0;
        let c = ((p / s).ceil() + n - 1.0) * s;
        self.max_batch as f64 / (c / 1000.0)
    }

    /// The configuration as `--mock-config` YAML.
    fn yaml(&self) -> String {
        format!(
            "max_batch: {}\nstep_base_ms: {}\nstep_per_seq_ms: {}\nprefill_overhead_ms: {}\nprefill_rate: {}\n",
            self.max_batch,
            self.step_base_ms,
            self.step_per_seq_ms,
            self.prefill_overhead_ms,
            self.prefill_rate
        )
    }
}

/// Runs `bench run --mock` with `args` and returns the first benchmark of its JSON report.
fn run(name: &str, sim: Sim, log: bool, args: &[&str]) -> (Value, Option<PathBuf>) {
    let dir = tmp(name);
    let log = log.then(|| dir.join("log.jsonl"));
    let cfg = write_sim(&dir, &sim.yaml(), log.as_deref());
    let v = mock_report("run", name, &dir, Some(&cfg), args);
    (v["benchmarks"][0].clone(), log)
}

fn throughput(name: &str, sim: Sim, secs: &str) -> (f64, f64) {
    let conc = (2 * sim.max_batch).to_string();
    let (b, _) = run(
        name,
        sim,
        false,
        &[
            "--rate-type",
            "throughput",
            "--max-concurrency",
            &conc,
            "--max-seconds",
            secs,
            "--data",
            "prompt_tokens=256,output_tokens=128",
        ],
    );
    assert_eq!(f(&b, &["requests", "incomplete"]), 0.0, "{b}");
    assert_eq!(f(&b, &["requests", "errored"]), 0.0);
    let want = sim.capacity(256.0, 128.0);
    (f(&b, &["rates", "requests_per_s"]), want)
}

#[test]
fn a_5s_throughput_benchmark_reads_the_closed_form_capacity_within_3_percent() {
    let _one = serial();
    for (name, sim) in [("default", DEFAULT_SIM), ("small", SMALL_SIM)] {
        // 128 streams' tokens (4,400 SSE events/s) through a debug build's simulator and
        // client: starved to a third of a core (two nice-0 busy loops beside it) the process
        // falls behind its own token stream and reads 3.7-8% high, so the lanes run it alone
        // (.ci/lanes.py). Quiet, 34.42-34.50 against 34.45 (docs/testing.md).
        let (got, want) = throughput(&format!("thr5-{name}"), sim, "5");
        eprintln!("throughput 5 s, {name} simulator: {got:.3} req/s, closed form {want:.3}");
        assert!(
            (got / want - 1.0).abs() < 0.03,
            "{name}: {got:.2} req/s vs the closed form's {want:.2}"
        );
    }
}

#[test]
fn a_30s_throughput_benchmark_reads_the_closed_form_capacity_within_1_percent() {
    let _one = serial();
    // The two configurations side by side (each is one core's work at most), to keep the
    // test's wall time near 30 s.
    let small = std::thread::spawn(|| throughput("thr30-small", SMALL_SIM, "30"));
    let default = throughput("thr30-default", DEFAULT_SIM, "30");
    let small = small.join().expect("small run");
    for (name, (got, want)) in [("default", default), ("small", small)] {
        eprintln!("throughput 30 s, {name} simulator: {got:.3} req/s, closed form {want:.3}");
        assert!(
            (got / want - 1.0).abs() < 0.01,
            "{name}: {got:.2} req/s vs the closed form's {want:.2}"
        );
    }
}

#[test]
fn an_open_loop_rate_the_server_sustains_is_reported_as_that_rate() {
    let _one = serial();
    for (rate, secs) in [("10", "3"), ("20", "4")] {
        let (b, _) = run(
            &format!("sustained-{rate}"),
            DEFAULT_SIM,
            false,
            &[
                "--rate-type",
                "constant",
                "--rate",
                rate,
                "--max-seconds",
                secs,
                "--data",
                "prompt_tokens=256,output_tokens=128",
            ],
        );
        let target: f64 = rate.parse().expect("number");
        let got = f(&b, &["rates", "requests_per_s"]);
        assert!(
            (got / target - 1.0).abs() < 0.02,
            "constant@{rate} for {secs}s reads {got:.3} req/s"
        );
        assert_eq!(f(&b, &["requests", "incomplete"]), 0.0, "drained: {b}");
        assert_eq!(f(&b, &["requests", "errored"]), 0.0);
        let sent = f(&b, &["requests", "total"]);
        assert_eq!(sent, target * secs.parse::<f64>().expect("number"));
    }
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[i.clamp(1, sorted.len()) - 1]
}

#[test]
fn the_overload_tail_covers_every_request_sent() {
    let _one = serial();
    // 1.75 x the default simulator's capacity for 4 s.
    let cap = DEFAULT_SIM.capacity(256.0, 128.0);
    let rate = format!("{:.2}", cap * 1.75);
    let (b, log) = run(
        "overload",
        DEFAULT_SIM,
        true,
        &[
            "--rate-type",
            "constant",
            "--rate",
            &rate,
            "--max-seconds",
            "4",
            "--data",
            "prompt_tokens=256,output_tokens=128",
        ],
    );
    let mut truth: Vec<f64> = Vec::new();
    for e in read_log(&log.expect("asked")) {
        let arrival = e["arrival_unix_ns"].as_f64().expect("arrival");
        let first = e["first_token_unix_ns"]
            .as_f64()
            .expect("every request got its first token");
        truth.push((first - arrival) / 1e6);
    }
    truth.sort_by(f64::total_cmp);
    let sent = f(&b, &["requests", "total"]);
    assert_eq!(
        truth.len() as f64,
        sent,
        "every request sent reached the server"
    );
    assert_eq!(
        f(&b, &["requests", "completed"]),
        sent,
        "every one followed to its end"
    );
    assert_eq!(f(&b, &["metrics", "ttft_ms", "count"]), sent);
    assert_eq!(f(&b, &["metrics", "e2el_ms", "count"]), sent);
    let ours = f(&b, &["metrics", "ttft_ms", "percentiles", "p99"]);
    let theirs = percentile(&truth, 99.0);
    assert!(
        ours >= 0.95 * theirs,
        "TTFT p99 {ours:.1} ms vs the simulator's {theirs:.1} ms over the same requests"
    );
    // Above capacity the rate reported is what the server completed, not what was sent
    // (near its capacity: the batch is only partly full while it fills and while it drains,
    // when the simulator's steps are shorter).
    let got = f(&b, &["rates", "requests_per_s"]);
    assert!(
        got < cap * 1.1 && got > cap * 0.9,
        "{got:.2} req/s vs capacity {cap:.2}"
    );
}

/// Runs a 3-request synchronous benchmark with `args`; returns the whole JSON report.
fn quick(name: &str, args: &[&str]) -> Value {
    let args = [&["--rate-type", "synchronous", "--max-requests", "3"], args].concat();
    mock_report("run", name, &tmp(name), None, &args)
}

#[test]
fn every_run_is_salted_and_records_its_seed() {
    let _one = common::serial();
    let data = "prompt_tokens=32,output_tokens=4";
    let a = quick("salt-a", &["--data", data]);
    let b = quick("salt-b", &["--data", data]);
    let seed = |v: &Value| v["environment"]["extra"]["data_seed"].clone();
    let (sa, sb) = (seed(&a), seed(&b));
    assert_eq!(sa["explicit"], Value::Bool(false), "{sa}");
    assert_ne!(sa["seed"], sb["seed"], "a repeated run is salted afresh");
    let given = quick("salt-given", &["--data", &format!("{data},seed=11")]);
    assert_eq!(seed(&given)["seed"], 11);
    assert_eq!(seed(&given)["explicit"], Value::Bool(true));
}

/// The Llama-3 tokenizer.json installed by `.ci/setup` (a failure under CI when missing).
fn llama3() -> Option<PathBuf> {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-assets/llama3/tokenizer.json");
    if p.is_file() {
        return Some(p);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must provide {} (.ci/setup installs it)",
        p.display()
    );
    eprintln!(
        "note: {} missing; run .ci/setup to test with it",
        p.display()
    );
    None
}

#[test]
fn the_in_process_simulator_counts_with_the_runs_tokenizer() {
    let _one = common::serial();
    let Some(tk) = llama3() else { return };
    let v = quick(
        "tokenizer",
        &[
            "--processor",
            tk.to_str().expect("utf8"),
            "--data",
            "prompt_tokens=256,output_tokens=8",
        ],
    );
    let prompt = &v["benchmarks"][0]["tokens"]["prompt"];
    // The simulator's usage block wins over the client's count: they must agree.
    assert_eq!(prompt["completed"]["per_request"], 256.0, "{prompt}");
    assert_eq!(prompt["sources"]["usage"], 3);
}

/// The quick start's sweep (`sweep --mock`, its 5 s default) states the simulator's capacity
/// within 3%, from one measurement: the test once took a second sweep when the first missed,
/// a retry that would hide the defect it exists to find (docs/testing.md, "Statistical tests").
#[test]
fn sweep_mock_finds_the_simulators_capacity_within_3_percent() {
    let _one = serial();
    let dir = tmp("sweep");
    // The 5 s default of `--mock`, the default (adaptive) sweep; the ladder's top capped at 128
    // in flight (2 x max_batch, the closed form's condition); three rates after the probes to
    // keep the test short.
    let args = [
        "--sweep-size",
        "3",
        "--max-concurrency",
        "128",
        "--data",
        "prompt_tokens=256,output_tokens=128",
    ];
    let v = mock_report("sweep", "sweep", &dir, None, &args);
    let cap = DEFAULT_SIM.capacity(256.0, 128.0);
    let c = f(&v["capacity"], &["max_requests_per_s"]);
    eprintln!("sweep: capacity {c:.3} req/s, closed form {cap:.3}");
    assert!((c / cap - 1.0).abs() < 0.03, "{c:.2} vs {cap:.2}");
    // Every benchmark ran the 5 s default (the ladder's rungs 2 request latencies of it), and the
    // open-loop rates ascend past the capacity the sweep states.
    let b = v["benchmarks"].as_array().expect("benchmarks");
    let rates: Vec<f64> = b
        .iter()
        .filter(|x| x["strategy"]["kind"] == "constant")
        .map(|x| f(x, &["strategy", "rate"]))
        .collect();
    assert!(rates.windows(2).all(|w| w[0] < w[1]), "{rates:?}");
    assert!(rates.last().is_some_and(|&top| top > c), "{rates:?} vs {c}");
}
