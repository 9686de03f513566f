//! "Kept up" means a steady state was reached (docs/metrics.md, "Sustained"), on a server that
//! admits every request: the simulator's `vllm-cpu` regime (a large batch, chunked prefill
//! with decodes first, CPU-like costs; docs/simulator.md, "Preset: vllm-cpu"), at ten times its
//! speed and half its batch (`examples/simulator/vllm-cpu-fast.yaml`).
//!
//! Closed form (times in ms; `b` step base, `q` per sequence, `O` the prefill overhead of a step
//! that carries prompt tokens, `L / ρ` a prompt's prefill time, `n` output tokens, `B` the
//! batch): a request holds its slot for `n` steps, so with the batch full `B / n` requests leave
//! and enter it each step, whose length is `S_B = b + O + q B + (B / n) L / ρ`; the capacity is
//! `(B / n) / S_B`. Here `(128 / 32) / (2.5 + 3 + 6.4 + 4 × 6.4) = 4 / 37.5 ms = 106.7 req/s`.
//! Below it, at `λ` req/ms, `S = (b + O) / (1 - λ (q n + L / ρ))`, every token one step apart:
//! the inter-token latency reaches `X` at `λ = (1 - (b + O) / X) / (q n + L / ρ)`.
//!
//! Past the capacity the queue beyond the batch grows for as long as the load lasts; when the
//! sending stops, steps lose their prefill and run four times faster, so the drained requests'
//! departures read close to the rate sent. The judgement reads the loaded span instead.

use crate::common;

use serde_json::Value;

use common::{f, fresh, mock_report, read_log, write_sim};

const FAST: &str = include_str!("../../examples/simulator/vllm-cpu-fast.yaml");
const DATA: &str = "prompt_tokens=64,output_tokens=32";

/// `(B / n) / S_B`, req/s.
fn capacity() -> f64 {
    let (b, o, q, l_rho, n, batch) = (2.5, 3.0, 0.05, 6.4, 32.0, 128.0);
    (batch / n) / (b + o + q * batch + (batch / n) * l_rho) * 1e3
}

/// The lowest rate a test may require a verdict other than "kept up" for. "Kept up" means
/// departing at least `KEPT_UP` (95%) of the arrivals, so any rate up to `capacity / 0.95`
/// (5.3% over it) is truly kept up; 2% more leaves room for the simulator's steps against the
/// closed form (the sweep reads the capacity 0.5% high). A sweep once ran 112.15 req/s, 5.1%
/// over the capacity, for 16 s and judged it kept up with 108.7 req/s departing (97%): right,
/// and a test that called any rate 5% over the capacity "not kept up" failed on it.
fn past_keeping_up() -> f64 {
    1.02 * capacity() / bench_core::KEPT_UP
}

/// The rate (req/s) up to which a constant rate's ITL median is the step with one prompt
/// (about 15 ms), past which it is the step with two (about 20 ms): where half the steps carry
/// a second prompt, `λ S = 1.5` with the mean step `S = 5.5 ms / (1 - λ (1.6 ms + 6.4 ms))`
/// (docs/simulator.md, "Preset: vllm-cpu"; on the paused clock,
/// `engine::median_tests::a_constant_rates_itl_median_jumps_where_half_the_steps_carry_two_prompts`).
/// An SLO on the median between the two steps holds up to this rate.
fn median_jump_rate() -> f64 {
    1.5 / (5.5 + 1.5 * (0.05 * 32.0 + 6.4)) * 1e3
}

fn verdict(b: &Value) -> &str {
    b["rates"]["sustained"]["verdict"]
        .as_str()
        .unwrap_or("none")
}

/// One constant-rate benchmark of `secs` against the fast preset, logging every request.
fn constant(name: &str, rate: f64, secs: &str) -> (Value, Vec<Value>) {
    let dir = fresh("sustained", name);
    let log = dir.join("log.jsonl");
    let cfg = write_sim(&dir, FAST, Some(&log));
    let r = format!("{rate:.3}");
    let args = [
        "--rate-type",
        "constant",
        "--rate",
        &r,
        "--max-seconds",
        secs,
        "--data",
        DATA,
    ];
    let v = mock_report("run", name, &dir, Some(&cfg), &args);
    (v["benchmarks"][0].clone(), read_log(&log))
}

/// The first and last arrival of a simulator's request log (Unix ns).
fn arrival_span(log: &[Value]) -> (u64, u64) {
    let arrivals = log
        .iter()
        .map(|e| e["arrival_unix_ns"].as_u64().expect("time"));
    let first = arrivals.clone().min().expect("log");
    (first, arrivals.max().expect("log"))
}

/// Requests the engine finished per second over the second half of the sending (its own
/// clock: first to last arrival), and its in-flight count at the quarter and at the end.
fn engine_while_loaded(log: &[Value]) -> (f64, u64, u64) {
    let t = |e: &Value, k: &str| e[k].as_u64().expect("time");
    let (first, last) = arrival_span(log);
    let mid = first + (last - first) / 2;
    let done = log
        .iter()
        .filter(|e| (mid..=last).contains(&t(e, "last_token_unix_ns")))
        .count();
    let in_flight = |at: u64| {
        log.iter()
            .filter(|e| t(e, "arrival_unix_ns") <= at && t(e, "last_token_unix_ns") > at)
            .count() as u64
    };
    let quarter = first + (last - first) / 4;
    (
        done as f64 / ((last - mid) as f64 / 1e9),
        in_flight(quarter),
        in_flight(last),
    )
}

#[test]
fn a_rate_past_the_capacity_is_surely_not_kept_up_and_reads_the_engines_departures() {
    let _one = common::serial();
    let cap = capacity();
    let offered = 1.3 * cap;
    let (b, log) = constant("over", offered, "8");
    let (engine, early, late) = engine_while_loaded(&log);
    let got = f(&b, &["rates", "requests_per_s"]);
    eprintln!(
        "offered {offered:.1}, capacity {cap:.1}: bench {got:.1} ({}), engine {engine:.1} while loaded, in flight {early} -> {late}",
        b["rates"]["sustained"]
    );
    assert!(late > early + 50, "the queue grew: {early} -> {late}");
    assert_eq!(verdict(&b), "not_kept_up", "{}", b["rates"]);
    assert!((got - cap).abs() <= 0.1 * cap, "{got} vs capacity {cap}");
    assert!(
        (got - engine).abs() <= 0.1 * engine,
        "{got} vs engine {engine}"
    );
    assert!(
        f(&b, &["rates", "sustained", "departures_interval", "high"]) < 0.95 * offered,
        "{}",
        b["rates"]
    );
}

#[test]
fn a_rate_below_the_capacity_is_kept_up_and_reads_the_rate_sent() {
    let _one = common::serial();
    let offered = 0.6 * capacity();
    let (b, log) = constant("under", offered, "6");
    let (_, early, late) = engine_while_loaded(&log);
    let got = f(&b, &["rates", "requests_per_s"]);
    eprintln!(
        "offered {offered:.1}: bench {got:.2}, in flight {early} -> {late}; {}",
        b["rates"]
    );
    assert_ne!(verdict(&b), "not_kept_up", "{}", b["rates"]);
    assert!(
        (got - offered).abs() <= 0.02 * offered,
        "{got} vs {offered}"
    );
}

/// The sweep against the fast preset: the capacity within 5% of the closed form, no rate past
/// it called sustained, the ladder up to the batch, and the SLO search's answer for a median
/// ITL between the two steps a constant rate alternates (18 ms) at the rate where the median
/// jumps ([`median_jump_rate`], 85.71 req/s): its interval holds it, and its point (the
/// highest rate measured to meet the SLO) lies within the search's 4% tolerance under it.
#[test]
fn the_sweep_states_the_capacity_of_a_server_that_admits_everything() {
    let _one = common::serial();
    let dir = fresh("sustained", "sweep");
    let cfg = write_sim(&dir, FAST, None);
    let x_ms = 18.0;
    let slo = format!("itl_p50={x_ms}");
    let args = [
        "--max-seconds",
        "4",
        "--data",
        DATA,
        "--slo",
        &slo,
        "--slo-tolerance",
        "0.04",
    ];
    let v = mock_report("sweep", "sweep", &dir, Some(&cfg), &args);
    let c = &v["capacity"];
    let (cap, got) = (capacity(), f(c, &["max_requests_per_s"]));
    let rows: Vec<String> = v["benchmarks"]
        .as_array()
        .expect("benchmarks")
        .iter()
        .map(|b| {
            format!(
                "{} {:.0}s: {:.1} req/s, {}",
                b["label"].as_str().unwrap_or("?"),
                f(b, &["duration_s"]),
                f(b, &["rates", "requests_per_s"]),
                verdict(b)
            )
        })
        .collect();
    eprintln!("capacity {got:.1} vs {cap:.1}; {c}\n{}", rows.join("\n"));
    assert!((got - cap).abs() <= 0.05 * cap, "capacity {got} vs {cap}");
    assert_eq!(c["max_is_lower_bound"], false, "{c}");
    for b in v["benchmarks"].as_array().expect("benchmarks") {
        let Some(rate) = b["rates"]["target_rate"].as_f64() else {
            continue;
        };
        if rate > past_keeping_up() {
            assert_ne!(verdict(b), "kept_up", "{rate}: {}", b["rates"]);
            assert!(
                f(b, &["rates", "requests_per_s"]) < 0.95 * rate,
                "{}",
                b["rates"]
            );
        }
    }
    let ladder_top = v["benchmarks"]
        .as_array()
        .expect("benchmarks")
        .iter()
        .filter_map(|b| b["strategy"]["streams"].as_u64())
        .max()
        .unwrap_or(0);
    assert!(
        ladder_top >= 128,
        "the ladder reached the batch: {ladder_top}"
    );
    // The SLO rate. (With `itl_p50=20`, the median's upper step itself, the answer was
    // ill-posed: the median is 20.0 ms from 85.8 to 87.4 req/s on the engine's schedule, so a
    // client reading it a hair high fails there; against the mean's closed form, 90.63, it
    // "read low" by 1-5%.)
    let want = median_jump_rate();
    let slo_rate = f(c, &["slo_max_requests_per_s"]);
    let iv = &c["intervals"]["slo_max_requests_per_s"];
    eprintln!("SLO rate {slo_rate:.2} ({iv}) vs the median's jump at {want:.2}");
    assert!(
        slo_rate <= 1.01 * want && slo_rate >= 0.95 * want,
        "SLO rate {slo_rate} vs {want}"
    );
    let low = iv["low"].as_f64().expect("interval");
    let high = iv["high"].as_f64().unwrap_or(f64::INFINITY);
    assert!(low <= want && want <= high, "{iv} misses {want}");
}

/// The trace sweep against the fast preset: a trace of 64/32-token requests 50 ms apart
/// (recorded rate 20 req/s), each prompt its own (no prefix sharing): the capacity it states as
/// a multiple of the trace is the closed form's (106.7 / 20 = 5.33x) within 5%, and no
/// speed-up past it is called sustained.
#[test]
fn the_trace_sweep_states_the_capacity_of_a_server_that_admits_everything() {
    let _one = common::serial();
    let dir = fresh("sustained", "trace");
    let rows = 6000u64;
    let body: String = (0..rows)
        .map(|i| {
            format!(
                "{{\"timestamp\": {}, \"input_length\": 64, \"output_length\": 32, \"hash_ids\": [{i}]}}\n",
                i * 50
            )
        })
        .collect();
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, body).expect("write trace");
    let cfg = write_sim(&dir, FAST, None);
    let data = format!("trace={},block_size=64", trace.display());
    let v = mock_report(
        "sweep",
        "trace",
        &dir,
        Some(&cfg),
        &["--data", &data, "--max-seconds", "4"],
    );
    let c = &v["capacity"];
    let recorded = (rows - 1) as f64 / ((rows - 1) * 50) as f64 * 1e3;
    let want = capacity() / recorded;
    let got = f(c, &["trace", "max_multiple"]);
    eprintln!("multiple {got:.3} vs {want:.3}; {c}");
    assert!(
        (got - want).abs() <= 0.05 * want,
        "multiple {got} vs {want}"
    );
    for b in v["benchmarks"].as_array().expect("benchmarks") {
        let Some(speedup) = b["strategy"]["speedup"].as_f64() else {
            continue;
        };
        if speedup * recorded > past_keeping_up() {
            assert_ne!(verdict(b), "kept_up", "{speedup}x: {}", b["rates"]);
        }
    }
}

/// The engine's requests/s in a closed loop that keeps the batch full with `k` prompts a
/// prefill step on average (docs/simulator.md, "Preset: vllm-cpu"): every step gives each of
/// the `B` slots a token, so `R` requests of `n` tokens take `n R / B` steps of `b + q B`, plus
/// the overhead `O` on the `R / k` steps that carry prompts and `L / ρ` a prompt. The
/// capacity's closed form is `k = B / n` (4 here, 106.7 req/s); the step budget allows at most
/// 32 prompts of 64 tokens a step (114.7 req/s).
fn rate_for_prompts_per_step(k: f64) -> f64 {
    let (b, o, q, l_rho, n, batch) = (2.5, 3.0, 0.05, 6.4, 32.0, 128.0);
    1e3 / ((n / batch) * (b + q * batch) + o / k + l_rho)
}

/// The engine's own departure rate in a closed loop from its log, by Little's law on the
/// server's timestamps over `[first arrival + skip, last arrival]`: the mean number of
/// requests in the server (arrival to last token, clipped to the span) over the mean time
/// one spends there (of those that arrived in the span before the first that outlasted it).
/// Counting departures instead is at the mercy of the cohorts' phase: a closed loop's requests
/// leave and re-enter in waves about one latency apart, so a span of two waves reads 104.7 to
/// 114.3 req/s by where it starts (one run's log, five starts half a second apart).
fn engine_little(log: &[Value], skip_ns: u64) -> f64 {
    let t = |e: &Value, k: &str| e[k].as_u64().expect("time");
    let (first, b) = arrival_span(log);
    let a = first + skip_ns;
    let busy: u64 = log
        .iter()
        .map(|e| {
            let (s, end) = (
                t(e, "arrival_unix_ns").max(a),
                t(e, "last_token_unix_ns").min(b),
            );
            end.saturating_sub(s)
        })
        .sum();
    let cut = log
        .iter()
        .filter(|e| t(e, "arrival_unix_ns") >= a && t(e, "last_token_unix_ns") > b)
        .map(|e| t(e, "arrival_unix_ns"))
        .min()
        .unwrap_or(b);
    let held: Vec<u64> = log
        .iter()
        .filter(|e| (a..cut).contains(&t(e, "arrival_unix_ns")))
        .map(|e| t(e, "last_token_unix_ns") - t(e, "arrival_unix_ns"))
        .collect();
    let in_system = busy as f64 / (b - a) as f64;
    let time_in = held.iter().sum::<u64>() as f64 / held.len() as f64 / 1e9;
    in_system / time_in
}

/// Issue 37's open point: closed loops on the fast preset read more than the closed form
/// (108.82 req/s under `--precision`, its interval excluding 106.7; a sweep's rungs once
/// 114.8). The engine does run that fast: a closed loop's requests leave and re-enter in
/// cohorts, so its prompts share steps and fewer steps pay the prefill overhead (counted
/// exactly on the paused clock: `engine::tests::a_closed_loop_runs_as_fast_as_its_prompts_share_steps`,
/// 25.5 prompts a prefill step, 114.34 req/s against the model's 114.38). Here, in real time,
/// bench's reading is the engine's own rate by its log (Little's law on the server's
/// timestamps, [`engine_little`]) within 2%, and the engine's lies between the uniform closed
/// form and the budget's bound. The log's departures counted over the run's second half
/// (`engine_while_loaded`) once read 103.09 and 106.40 req/s here in CI: the cohorts' phase
/// (docs/performance.md, "The knee under --precision").
#[test]
fn a_closed_loop_reads_the_engines_own_rate_which_its_cohorts_set() {
    let _one = common::serial();
    let dir = fresh("sustained", "closed");
    let log = dir.join("log.jsonl");
    let cfg = write_sim(&dir, FAST, Some(&log));
    let args = [
        "--rate-type",
        "concurrent",
        "--rate",
        "256",
        "--max-seconds",
        "8",
        "--data",
        DATA,
    ];
    let v = mock_report("run", "closed", &dir, Some(&cfg), &args);
    // Past the first wave (the 256 requests sent at once, about 2.2 s each).
    let engine = engine_little(&read_log(&log), 2_500_000_000);
    let _ = std::fs::remove_dir_all(&dir);
    let got = f(&v["benchmarks"][0], &["rates", "requests_per_s"]);
    let (low, high) = (capacity(), rate_for_prompts_per_step(32.0));
    eprintln!(
        "bench {got:.2} req/s, engine {engine:.2} by its log; between {low:.2} and {high:.2}"
    );
    assert!(
        (got - engine).abs() <= 0.02 * engine,
        "bench {got} vs engine {engine}"
    );
    assert!(
        0.99 * low <= engine && engine <= 1.01 * high,
        "engine {engine} outside {low}-{high}"
    );
}
