//! Steady-state latency (docs/metrics.md, "Steady state") against the simulator's engine model
//! (docs/simulator.md), with its default timings and 256/128-token requests: issue 22's case,
//! where 5 s open-loop benchmarks read ITL medians about 4% low and the SLO search stated 8%
//! too high a rate, because a third of their requests ran while the server filled or drained;
//! and the in-flight count's settling, which takes about two latencies here (a fill of one
//! latency left 5 s benchmarks 0.5-1.8% low, and the SLO answer up to 4% high).
//!
//! Closed form, open loop at `λ` below capacity (`b` = 8 ms step base, `q` = 0.1 ms per held
//! slot, `P` = 2 ms + 256 / 10,000 s = 27.6 ms prefill, `n` = 128 tokens): a request holds its
//! slot `P + (n - 1/2) S` (its prefill, half a step to the next boundary, then `n - 1` steps),
//! Little's law gives the slots held `r = λ (P + (n - 1/2) S)`, and every step lasts
//! `S = b + q r`; so `S = (b + q λ P) / (1 - q λ (n - 1/2))`. The inter-token gaps are the
//! steps, so the ITL median is `S`, and the highest rate whose ITL median meets a bound `X` is
//! `λ = (X - b) / (q (P + (n - 1/2) X))`.

use crate::common;

const B: f64 = 8e-3;
const Q: f64 = 0.1e-3;
const P: f64 = 2e-3 + 256.0 / 10_000.0;
const N: f64 = 128.0;

/// The step length (seconds) at open-loop rate `rate`.
fn step(rate: f64) -> f64 {
    (B + Q * rate * P) / (1.0 - Q * rate * (N - 0.5))
}

/// The highest rate whose step (ITL median) is at most `x` seconds, for requests of `n` output
/// tokens.
fn slo_rate(x: f64, n: f64) -> f64 {
    (x - B) / (Q * (P + (n - 0.5) * x))
}

/// The engine's own inter-token gaps (from the simulator's token log) of the requests that
/// arrived at or after `from` and ended by `to` (Unix ns): the steady requests whose gaps the
/// client's ITL takes, so that both weigh each step by the same sequences (every sequence
/// decoding in a step shares its length; taking every request's gaps in the span instead
/// weighs the early steps by the requests sent in the fill, and read the engine 0.2-1.4% below
/// the client while the step still lengthened a little), sorted.
fn engine_gaps(log: &[serde_json::Value], from: u64, to: u64) -> Vec<f64> {
    let time = |e: &serde_json::Value, k: &str| e[k].as_u64().expect("log time");
    let mut gaps: Vec<f64> = log
        .iter()
        .filter(|e| time(e, "arrival_unix_ns") >= from && time(e, "last_token_unix_ns") <= to)
        .flat_map(|e| {
            let times: Vec<u64> = e["token_unix_ns"]
                .as_array()
                .expect("token times")
                .iter()
                .filter_map(|t| t.as_u64())
                .collect();
            times
                .windows(2)
                .filter(|w| w[0] >= from && w[1] <= to)
                .map(|w| (w[1] - w[0]) as f64 / 1e6)
                .collect::<Vec<_>>()
        })
        .collect();
    gaps.sort_by(f64::total_cmp);
    gaps
}

/// The mean count of requests the simulator held (arrival to last token, from its log) over
/// `[from, to]` (Unix ns), sampled every millisecond.
fn held(log: &[serde_json::Value], from: u64, to: u64) -> f64 {
    let spans: Vec<(u64, u64)> = log
        .iter()
        .filter_map(|e| {
            Some((
                e["arrival_unix_ns"].as_u64()?,
                e["last_token_unix_ns"].as_u64()?,
            ))
        })
        .collect();
    let ticks: Vec<u64> = (from..to).step_by(1_000_000).collect();
    let total: usize = ticks
        .iter()
        .map(|&t| spans.iter().filter(|&&(a, b)| a <= t && t < b).count())
        .sum();
    total as f64 / ticks.len() as f64
}

/// A 5 s benchmark at 22.4 req/s ends about when the simulator's in-flight count settles (3.0 to
/// 4.2 s in, docs/metrics.md): requests sent while it filled saw short steps and ended early, so
/// the count climbs for about two latencies. Whichever label the benchmark takes, the
/// simulator's log must bear it out: `settling`, the count at its steady start (the latency
/// fill) more than a slot below its level over the last second; `steady`, the count over the
/// half second from its steady start within a slot of that level. On a quiet machine it is
/// `settling` (28.7 held at the fill against 32.9); with the cores busy, MSER found the count
/// settled at 3.06 s, leaving just over 10 steady requests, and the label was `steady` (a
/// fresh-clone CI run): the label follows the run, the log checks it.
#[test]
fn a_5s_benchmark_near_capacity_labels_its_count_as_the_simulators_log_shows_it() {
    let _one = common::serial();
    let dir = common::fresh("steady", "settling");
    let log = dir.join("log.jsonl");
    let cfg = common::write_sim(&dir, "", Some(&log));
    let args = [
        "--rate-type",
        "constant",
        "--rate",
        "22.4",
        "--max-seconds",
        "5",
    ];
    let run = common::mock_report("run", "settling", &dir, Some(&cfg), &args);
    let b = &run["benchmarks"][0];
    let scope = b["latency_scope"].as_str().expect("latency_scope");
    let log = common::read_log(&log);
    let (at, end) = unix_clock(b, &log);
    let from = at("steady_start_ns");
    let (fill, after, last) = (
        held(&log, from - 50_000_000, from + 50_000_000),
        held(&log, from, from + 500_000_000),
        held(&log, end - 1_000_000_000, end),
    );
    eprintln!(
        "{scope}: held {fill:.2} at the steady start, {after:.2} over the half second after it, \
         {last:.2} over the last second ({})",
        b["timeline"]
    );
    match scope {
        "settling" => assert!(
            fill + 1.0 < last,
            "settling, yet {fill:.2} held at the fill against {last:.2}"
        ),
        "steady" => assert!(
            after + 1.0 >= last,
            "steady, yet {after:.2} held after its start against {last:.2}"
        ),
        other => panic!(
            "a 5 s benchmark at 22.4 req/s is {other}: {}",
            b["timeline"]
        ),
    }
}

fn held_at_fill_and_end(b: &serde_json::Value, log: &[serde_json::Value]) -> (f64, f64) {
    let (at, end) = unix_clock(b, log);
    let fill = at("steady_start_ns");
    (
        held(log, fill - 50_000_000, fill + 50_000_000),
        held(log, end - 1_000_000_000, end),
    )
}

/// The Unix-ns time of a benchmark's timeline key (from the simulator's first arrival), and
/// the closing of its window.
fn unix_clock<'a>(
    b: &'a serde_json::Value,
    log: &[serde_json::Value],
) -> (impl Fn(&str) -> u64 + 'a, u64) {
    let tl = |k: &str| common::f(b, &["timeline", k]) as u64;
    let first = log
        .iter()
        .filter_map(|e| e["arrival_unix_ns"].as_u64())
        .min()
        .expect("arrivals");
    let at = move |k: &str| first + tl(k) - tl("start_ns");
    let end = at("measure_end_ns");
    (at, end)
}

/// The ITL median of open-loop benchmarks: within 2% of the engine's own steady-state gaps
/// (its token log, the ground truth of the run: the closed form's mean held count is continuous,
/// the engine's is a whole number of slots, and the gaps are weighted by the sequences in each
/// step), and within 3% of the closed form (the SLO search's tolerance). 2%, not 1%: on a quiet
/// machine the client read +0.01% to +0.58% over the engine, but in fresh-clone CI runs, with
/// the rest of the suite beside it at nice 19, +1.10% and +1.36% (the client's reads of 33
/// sequences' chunks written each step fall later when the cores are busy); issue 22's defect,
/// which this guards, read 4% low.
#[test]
fn the_itl_median_of_a_steady_open_loop_benchmark_is_the_engine_models_step_within_2pct() {
    let _one = common::serial();
    // 22.4 req/s needs 8 s: its in-flight count settles about 3 s in (docs/metrics.md).
    for (rate, secs) in [(13.0, 5), (22.4, 8)] {
        let dir = common::fresh("steady", &format!("itl-{rate}"));
        let log = dir.join("log.jsonl");
        let cfg = common::write_sim(&dir, "log_token_times: true\n", Some(&log));
        let run = common::mock_report(
            "run",
            "itl",
            &dir,
            Some(&cfg),
            &[
                "--rate-type",
                "constant",
                "--rate",
                &rate.to_string(),
                "--max-seconds",
                &secs.to_string(),
            ],
        );
        let b = &run["benchmarks"][0];
        assert_eq!(b["latency_scope"], "steady", "{}", b["requests"]);
        assert!(common::f(b, &["requests", "excluded_unsteady"]) > 0.0);
        let log = common::read_log(&log);
        let (at, _) = unix_clock(b, &log);
        let (fill, last) = held_at_fill_and_end(b, &log);
        // At 22.4 req/s the fill waited for the count (about 3.8 s in); at 13 req/s the count
        // was about 1.2 short at the latency fill and within a request on average after it,
        // under the rule's threshold (bench_core::SETTLE_SHORTFALL), so the fill is the latency.
        eprintln!("{rate} req/s: held {fill:.2} at the fill, {last:.2} over the last second");
        assert!(
            secs < 8 || (fill - last).abs() <= 1.0,
            "{rate} req/s: held {fill} at the fill, {last} over the last second"
        );
        let gaps = engine_gaps(&log, at("steady_start_ns"), at("steady_end_ns"));
        let engine = gaps[gaps.len() / 2];
        let (got, model) = (
            common::f(b, &["metrics", "itl_ms", "median"]),
            step(rate) * 1e3,
        );
        eprintln!("{rate} req/s: ITL median {got:.3} ms, engine {engine:.3} ms, closed form {model:.3} ms");
        assert!(
            (got - engine).abs() <= 0.02 * engine,
            "{rate} req/s: ITL median {got} ms vs the engine's {engine} ms"
        );
        assert!(
            (got - model).abs() <= 0.03 * model,
            "{rate} req/s: ITL median {got} ms vs closed form {model} ms"
        );
    }
}

/// The SLO answer of a sweep against the engine model: its 95% interval holds the model's rate
/// (its upper end once raised by the client's bias under load, below), and its point value is
/// within 6%. Not 3%: the SLO rate moves about 2.7 times as much as the
/// ITL median it is read by (`dλ/λ = (S / (S - b) - (n - 1/2) S / (P + (n - 1/2) S)) dS/S`, 2.7
/// at `S` = 11 ms), and beside two timed tests in CI the client reads the ITL median up to 1.4%
/// over the engine's steps (the ITL test above, which runs alone): 3.8%. And the point is the
/// bracket's lower end, the highest rate measured to meet the SLO, below the crossing by up to
/// the search's 2% tolerance by construction: 5.8% in all. Issue 22's defect, which this
/// guards, read 8% high.
///
/// Issue 22's case was 5 s rungs of 128-token requests (1.1-7 s each); this sweep keeps the
/// ratio of rung length to request length that made the answer right (8 s rungs of 128-token
/// requests, 5.6 latencies of 1.43 s at the SLO rate) at half the wall time: 4 s rungs of
/// 64-token requests, 5.5 latencies of 0.73 s at its SLO rate (41.3 req/s, the same token rate,
/// 2,640 a second, as 20.98 req/s of 128 tokens). 8 s rungs of 128 tokens read 20.96 req/s
/// (20.67-22.43) against 20.98 in 179 s, and in CI runs 20.06 (17.72-22.41) and 19.82
/// (19.82-22.48), -4.4% and -5.5%.
#[test]
fn the_slo_answer_of_a_sweep_holds_the_engine_model() {
    let _one = common::serial();
    let dir = common::fresh("steady", "slo");
    let run = common::mock_report(
        "sweep",
        "slo sweep",
        &dir,
        None,
        &[
            "--max-seconds",
            "4",
            "--data",
            "prompt_tokens=256,output_tokens=64",
            "--slo",
            "itl_p50=11",
        ],
    );
    let (got, want) = (
        common::f(&run, &["capacity", "slo_max_requests_per_s"]),
        slo_rate(11e-3, 64.0),
    );
    let iv = &run["capacity"]["intervals"]["slo_max_requests_per_s"];
    eprintln!("SLO rate {got:.2} req/s ({iv}), engine model {want:.2} req/s");
    assert!(
        (got - want).abs() <= 0.06 * want,
        "SLO rate {got} vs engine model {want}: {}",
        run["capacity"]
    );
    // The interval states the sampling doubt of the rates near the crossing, not the client's
    // bias beside two timed tests (the ITL median read up to 1.4% over the engine's steps, so
    // rates up to 3.8% low, above): a rate just below the model's can read as a sure failure.
    // 2664b8e's CI run: the upper end 41.26 req/s against the model's 41.32 (-0.14%). So the
    // upper end holds the model once raised by that bias; the lower end, which the bias only
    // lowers further, holds it as stated.
    const CLIENT_BIAS: f64 = 0.038;
    let low = iv["low"].as_f64().expect("interval");
    let high = iv["high"].as_f64().unwrap_or(f64::INFINITY);
    assert!(
        low <= want && want <= high * (1.0 + CLIENT_BIAS),
        "the interval {iv} misses the engine model {want}"
    );
}
