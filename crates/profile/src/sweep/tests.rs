use super::*;
use crate::{BuildOptions, Profile, RateType};
use proptest::prelude::{prop_assert, proptest};

fn spec(mode: SweepMode, slo: Option<&str>) -> SweepSpec {
    let o = BuildOptions {
        sweep_mode: mode,
        slo: slo.map(|s| s.parse().expect("slo")),
        ..BuildOptions::default()
    };
    match Profile::build(RateType::Sweep, &[], &o).expect("valid") {
        Profile::Sweep(s) => s,
        Profile::Fixed { .. } => panic!("a sweep"),
    }
}

#[test]
fn rates_ascend_from_near_sync_to_above_capacity_denser_near_it() {
    let r = capacity_rates(12.0, 40.0, 8);
    assert_eq!(r.len(), 8);
    assert!((r[0] - 12.0).abs() < 1e-9, "starts at the synchronous rate");
    // A synchronous rate below a quarter of the capacity: start at the quarter.
    assert!((capacity_rates(1.0, 40.0, 8)[0] - 10.0).abs() < 1e-9);
    assert!((r[5] - 40.0).abs() < 1e-9, "the capacity itself");
    assert!((r[6] - 44.0).abs() < 1e-9 && (r[7] - 48.0).abs() < 1e-9);
    let gaps: Vec<f64> = r[..6].windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.windows(2).all(|g| g[1] < g[0]), "{gaps:?}");
    // A server that does not batch (sync close to the capacity): start at half the capacity.
    let r = capacity_rates(9.5, 10.0, 5);
    assert!((r[0] - 5.0).abs() < 1e-9, "{r:?}");
    assert_eq!(capacity_rates(1.0, 10.0, 1), vec![12.0]);
    assert_eq!(capacity_rates(1.0, 10.0, 2), vec![10.0, 12.0]);
    assert!(capacity_rates(1.0, 10.0, 0).is_empty());
}

proptest! {
    #[test]
    fn rates_always_ascend_and_reach_120_percent(
        sync in 0.01f64..100.0, ratio in 1.0f64..200.0, n in 1u32..40
    ) {
        let cap = sync * ratio;
        let r = capacity_rates(sync, cap, n);
        prop_assert!(r.len() == n as usize);
        prop_assert!(r.windows(2).all(|w| w[1] >= w[0]));
        prop_assert!((r[r.len() - 1] - 1.2 * cap).abs() <= 1e-9 * cap);
        prop_assert!(r[0] <= sync.max(0.5 * cap) + 1e-9 * cap || n <= 2);
    }
}

/// A batching server: `batch` slots, each producing `tok` output tokens/s, 100 tokens a request.
fn server(batch: u32, tok: f64) -> impl Fn(&Strategy) -> (f64, f64) {
    move |s| {
        let c = match s {
            Strategy::Synchronous => 1.0,
            Strategy::Concurrent { streams } => f64::from(*streams),
            Strategy::Throughput { max_concurrency } => f64::from(*max_concurrency),
            _ => f64::INFINITY,
        };
        let cap = f64::from(batch) * tok;
        let t = match s.target_rate() {
            Some(r) => (r * 100.0).min(cap),
            None => c.min(f64::from(batch)) * tok,
        };
        (t / 100.0, t)
    }
}

fn seconds(s: f64) -> Limits {
    Limits {
        max_seconds: Some(s),
        ..Limits::default()
    }
}

fn drive(spec: &SweepSpec, batch: u32, slo_limit: f64) -> (Vec<SweepStep>, SweepPlanner) {
    drive_with(spec, &seconds(60.0), server(batch, 50.0), slo_limit)
}

fn drive_with(
    spec: &SweepSpec,
    limits: &Limits,
    srv: impl Fn(&Strategy) -> (f64, f64),
    slo_limit: f64,
) -> (Vec<SweepStep>, SweepPlanner) {
    let mut p = SweepPlanner::new(spec, limits);
    let mut steps = Vec::new();
    while let Some(step) = p.next_step().expect("plans") {
        let (rps, tok) = srv(&step.strategy);
        let slo_met = spec
            .slo
            .as_ref()
            .map(|_| step.strategy.target_rate().unwrap_or(0.0) <= slo_limit);
        p.record(
            step.clone(),
            Reading {
                requests_per_s: rps,
                output_tokens_per_s: Some(tok),
                slo_met,
                verdict: verdict_of(&step, rps),
                unjudged: None,
                slo_sure: None,
                rate_interval: None,
                seconds: 0.0,
            },
        );
        steps.push(step);
        assert!(steps.len() < 100, "the sweep ends");
    }
    (steps, p)
}

#[test]
fn ladder_finds_the_batch_and_rates_straddle_it() {
    let s = spec(SweepMode::Adaptive, None);
    let (steps, p) = drive(&s, 16, 0.0);
    let labels: Vec<String> = steps.iter().map(|s| s.strategy.label()).collect();
    assert_eq!(
        &labels[..6],
        [
            "synchronous",
            "concurrent@2",
            "concurrent@4",
            "concurrent@8",
            "concurrent@16",
            "concurrent@32"
        ]
    );
    assert!(steps[1..6].iter().all(|s| s.role == SweepRole::Ladder));
    assert!(steps[1..6].iter().all(|s| s.length == LADDER_LENGTH));
    let rates: Vec<f64> = steps[6..]
        .iter()
        .map(|s| s.strategy.target_rate().expect("open loop"))
        .collect();
    assert_eq!(rates, capacity_rates(0.5, 8.0, 8));
    let a = p.answer().expect("answer");
    assert_eq!(a.max_requests_per_s, 8.0);
    assert_eq!(a.max_output_tokens_per_s, 800.0);
    assert_eq!(a.max_measured_by, "concurrent@16");
    assert_eq!(a.slo_max_requests_per_s, None);
    assert!(a.slo_bracket.is_none());
    // Never below synchronous; a server without batching is synchronous.
    let (steps, p) = drive(&s, 1, 0.0);
    assert_eq!(steps[1].strategy.label(), "concurrent@2");
    assert_eq!(steps[2].role, SweepRole::Rate, "ladder stops at once");
    assert_eq!(p.answer().expect("answer").max_measured_by, "synchronous");
}

#[test]
fn ladder_is_capped() {
    let mut s = spec(SweepMode::Adaptive, None);
    s.throughput_concurrency = 6;
    let (steps, _) = drive(&s, 1000, 0.0);
    let ladder: Vec<String> = steps
        .iter()
        .filter(|s| s.role == SweepRole::Ladder)
        .map(|s| s.strategy.label())
        .collect();
    assert_eq!(ladder, ["concurrent@2", "concurrent@4", "concurrent@6"]);
    s.throughput_concurrency = 100_000;
    let (steps, _) = drive(&s, 100_000, 0.0);
    let n = steps.iter().filter(|s| s.role == SweepRole::Ladder).count();
    assert_eq!(n as u32, LADDER_MAX_RUNGS);
}

#[test]
fn slo_search_brackets_the_limit_within_the_tolerance() {
    for limit in [1.3, 3.7, 6.9, 7.9] {
        let s = spec(SweepMode::Adaptive, Some("ttft_p99=100"));
        let (steps, p) = drive(&s, 16, limit);
        let a = p.answer().expect("answer");
        let b = a.slo_bracket.expect("bracket");
        let (low, high) = (b.low.expect("low"), b.high.expect("high"));
        assert!(low <= limit && limit < high, "{limit}: {b:?}");
        assert!((high - low) <= s.slo_tolerance * low, "{b:?}");
        assert_eq!(a.slo_max_requests_per_s, Some(low));
        assert_eq!(a.slo_limit, Some(SloLimit::Slo), "{limit}");
        let refine = steps.iter().filter(|s| s.role == SweepRole::Refine).count();
        assert_eq!(refine as u32, b.steps);
    }
    // Every rate meets its bounds: the rates past the capacity (8.8 and 9.6, not kept up)
    // meet no SLO, the capacity limits first and is the answer; no refinement (the capacity
    // rate itself met it).
    let s = spec(SweepMode::Adaptive, Some("ttft_p99=100"));
    let (steps, p) = drive(&s, 16, 1e9);
    assert!(steps.iter().all(|s| s.role != SweepRole::Refine));
    let a = p.answer().expect("answer");
    let b = a.slo_bracket.expect("bracket");
    assert_eq!((b.low, b.high), (Some(8.0), Some(8.8)));
    assert_eq!(a.slo_max_requests_per_s, Some(a.max_requests_per_s));
    assert_eq!(a.slo_limit, Some(SloLimit::Capacity));
    // None meets it: the search halves down to its step limit and states no rate.
    let (_, p) = drive(&s, 16, 0.0);
    let a = p.answer().expect("answer");
    assert_eq!(a.slo_max_requests_per_s, None);
    assert_eq!(a.slo_bracket.expect("bracket").steps, MAX_REFINE_STEPS);
}

#[test]
fn guidellm_mode_keeps_the_throughput_probe_and_linspace() {
    let s = spec(SweepMode::Guidellm, None);
    let (steps, p) = drive(&s, 16, 0.0);
    assert_eq!(steps[1].strategy.label(), "throughput");
    let rates: Vec<f64> = steps[2..]
        .iter()
        .map(|s| s.strategy.target_rate().expect("rate"))
        .collect();
    assert_eq!(rates, sweep_rates(0.5, 8.0, 10));
    // The answer is the better probe (never below synchronous), measured by that probe.
    let a = p.answer().expect("answer");
    assert_eq!(a.max_requests_per_s, 8.0);
    assert_eq!(a.max_measured_by, "throughput");
    assert_eq!(steps.len(), 10);
    // Progress totals: known from the start in guidellm mode.
    let mut q = SweepPlanner::new(&s, &seconds(60.0));
    assert_eq!(q.expected_len(), 10);
    let first = q.next_step().expect("plans").expect("a step");
    assert_eq!(q.expected_len(), 10, "a step handed out still counts");
    q.record(
        first,
        Reading {
            requests_per_s: 1.0,
            output_tokens_per_s: None,
            slo_met: None,
            verdict: None,
            unjudged: None,
            slo_sure: None,
            rate_interval: None,
            seconds: 0.0,
        },
    );
    assert_eq!(q.expected_len(), 10);
}

/// An open loop's verdict by the kept-up rule alone (`None` for a closed loop).
fn verdict_of(step: &SweepStep, rps: f64) -> Option<Verdict> {
    step.strategy.target_rate().map(|r| {
        if bench_core::kept_up(r, rps) {
            Verdict::KeptUp
        } else {
            Verdict::NotKeptUp
        }
    })
}

/// guidellm mode states the better of its probes even when its top rate (`r_thr` itself) is
/// not kept up: the saturated open loop's departures are the adaptive sweep's rule, not
/// guidellm's (docs/profiles.md). A CI run on a loaded machine read `constant@188.23` departing
/// 140.69 req/s after a throughput probe of 188.23, and stated 140.69 measured by that rate.
#[test]
fn guidellm_mode_states_its_probe_when_its_top_rate_is_not_kept_up() {
    let s = spec(SweepMode::Guidellm, None);
    let mut p = SweepPlanner::new(&s, &seconds(10.0));
    while let Some(step) = p.next_step().expect("plans") {
        let rps = match step.strategy {
            Strategy::Synchronous => 0.5,
            Strategy::Throughput { .. } => 8.0,
            _ => step.strategy.target_rate().expect("a rate").min(6.0),
        };
        let verdict = verdict_of(&step, rps);
        let reading = Reading {
            requests_per_s: rps,
            output_tokens_per_s: None,
            slo_met: None,
            verdict,
            unjudged: None,
            slo_sure: None,
            rate_interval: None,
            seconds: 10.0,
        };
        p.record(step, reading);
    }
    let a = p.answer().expect("answer");
    assert_eq!(
        (a.max_requests_per_s, a.max_measured_by.as_str()),
        (8.0, "throughput")
    );
}

#[test]
fn bracket_ignores_passes_above_a_failure() {
    let b = slo_bracket(&[(1.0, true), (2.0, false), (3.0, true)], 0.05, 0);
    assert_eq!((b.low, b.high), (Some(1.0), Some(2.0)));
    assert_eq!(slo_next_rate(&b), Some(1.5));
    let b = slo_bracket(&[(1.0, true), (1.04, false)], 0.05, 1);
    assert_eq!(slo_next_rate(&b), None);
}

#[test]
fn rungs_hold_several_latencies_of_their_own() {
    // After synchronous alone (1 s a request), as if the server batched: 2 streams, 1 s.
    assert_eq!(rung_latency(&[(1, 1.0)], 2), Some(1.0));
    // Gaining 1.1x at the last rung (llama.cpp: 0.29 then 0.32 req/s): 4 streams at
    // 0.32 * 1.1 req/s.
    let r = rung_latency(&[(1, 0.29), (2, 0.32)], 4).expect("latency");
    assert!((r - 4.0 / (0.32 * 0.32 / 0.29)).abs() < 1e-9, "{r}");
    // No gain (or a loss): the latency doubles with the streams; nothing measured: none.
    assert_eq!(rung_latency(&[(1, 1.0), (2, 0.9)], 4), Some(4.0 / 0.9));
    assert_eq!(rung_latency(&[(1, 0.0)], 2), None);
    assert_eq!(rung_latency(&[], 2), None);
    // RUNG_LATENCIES (4) latencies of 12.5 s: 2.5 benchmarks of 20 s (at most MAX_LENGTH),
    // 0.5 of a 100 s one.
    assert!((rung_length(4, Some(12.5), &seconds(20.0)) - 2.5).abs() < 1e-9);
    assert_eq!(rung_length(4, Some(100.0), &seconds(20.0)), MAX_LENGTH);
    assert!((rung_length(4, Some(12.5), &seconds(100.0)) - 0.5).abs() < 1e-9);
    assert!((rung_length(4, Some(15.0), &seconds(100.0)) - 0.6).abs() < 1e-9);
    assert_eq!(rung_length(4, Some(0.01), &seconds(20.0)), LADDER_LENGTH);
    assert_eq!(
        rung_length(4, None, &seconds(20.0)),
        1.0,
        "nothing measured"
    );
    // Under a count, 4 requests a stream; both limits: the longer need.
    let count = Limits {
        max_requests: Some(160),
        ..Limits::default()
    };
    assert!((rung_length(32, Some(0.01), &count) - 0.8).abs() < 1e-9);
    let both = Limits {
        max_seconds: Some(20.0),
        ..count
    };
    assert_eq!(rung_length(32, Some(10.0), &both), 2.0);
    assert_eq!(rung_length(2, None, &Limits::default()), LADDER_LENGTH);
}

#[test]
fn a_slow_server_gets_long_rungs_and_the_ladder_climbs_while_it_gains() {
    // A 4-slot server whose requests take 3.4 s alone (llama.cpp at 256/64 tokens), 20 s
    // benchmarks: the rungs hold RUNG_LATENCIES predicted latencies each, far more than a
    // quarter.
    let slow = |s: &Strategy| {
        let c = match s {
            Strategy::Synchronous => 1.0,
            Strategy::Concurrent { streams } => f64::from(*streams),
            _ => return (0.4, 25.6),
        };
        let rps = 0.29 * c.min(1.4);
        (rps, rps * 64.0)
    };
    let s = spec(SweepMode::Adaptive, None);
    let (steps, _) = drive_with(&s, &seconds(20.0), slow, 0.0);
    let ladder: Vec<(String, f64)> = steps
        .iter()
        .filter(|s| s.role == SweepRole::Ladder)
        .map(|s| (s.strategy.label(), s.length))
        .collect();
    // concurrent@2: RUNG_LATENCIES latencies of 2 / (0.29 * 2) s; concurrent@4, after a gain
    // of 1.4x: of 4 / (0.406 * 1.4) s.
    let want = [2.0 / (0.29 * 2.0), 4.0 / (0.406 * 1.4)].map(|s| RUNG_LATENCIES * s / 20.0);
    assert_eq!(ladder.len(), 2, "{ladder:?}");
    for ((label, length), (c, want)) in ladder.iter().zip([(2, want[0]), (4, want[1])]) {
        assert_eq!(label, &format!("concurrent@{c}"));
        assert!((length - want).abs() < 1e-9, "{ladder:?}");
    }
    // A server that keeps gaining with 10 s requests (a large batch): no fixed top and no
    // time budget stops the ladder while it gains; each rung is at most MAX_LENGTH long.
    let gaining = |s: &Strategy| {
        let c = match s {
            Strategy::Synchronous => 1.0,
            Strategy::Concurrent { streams } => f64::from(*streams).min(256.0),
            // Open loops: the 25.6 req/s the full batch carries.
            s => {
                let r = s.target_rate().unwrap_or(0.0).min(25.6);
                return (r, 64.0 * r);
            }
        };
        (0.1 * c, 6.4 * c)
    };
    let (steps, p) = drive_with(&s, &seconds(20.0), gaining, 0.0);
    let ladder: Vec<&SweepStep> = steps
        .iter()
        .filter(|s| s.role == SweepRole::Ladder)
        .collect();
    assert!(ladder.iter().all(|s| s.length <= MAX_LENGTH), "{ladder:?}");
    let labels: Vec<String> = ladder.iter().map(|s| s.strategy.label()).collect();
    // 2, 4, ..., 256 gain; 512 gains nothing over 256 (the batch is full) and ends it.
    assert_eq!(
        labels.last().map(String::as_str),
        Some("concurrent@512"),
        "{labels:?}"
    );
    assert_eq!(labels.len(), 9, "{labels:?}");
    assert_eq!(
        p.answer().expect("answer").max_measured_by,
        "concurrent@256"
    );
}

#[test]
fn a_top_rate_that_kept_up_extends_the_sweep_and_raises_the_capacity() {
    // Closed loops read 0.33 req/s (streams in step), open loops carry 0.4 (llama.cpp).
    let lockstep = |s: &Strategy| {
        let rps = match s.target_rate() {
            Some(r) => r.min(0.4),
            None if *s == Strategy::Synchronous => 0.29,
            None => 0.33,
        };
        (rps, rps * 64.0)
    };
    let s = spec(SweepMode::Adaptive, None);
    let (steps, p) = drive_with(&s, &seconds(20.0), lockstep, 0.0);
    let rates: Vec<f64> = steps
        .iter()
        .filter(|s| s.role == SweepRole::Rate)
        .filter_map(|s| s.strategy.target_rate())
        .collect();
    let planned = capacity_rates(0.29, 0.33, 8);
    assert_eq!(&rates[..8], &planned[..]);
    // 1.2 x 0.33 = 0.396 kept up: one more rate at 1.2 x 0.396, which did not; no third.
    assert_eq!(rates.len(), 9, "{rates:?}");
    assert!((rates[8] - 1.2 * 0.396).abs() < 1e-9, "{rates:?}");
    let a = p.answer().expect("answer");
    assert!((a.max_requests_per_s - 0.396).abs() < 1e-9, "{a:?}");
    assert_eq!(a.max_measured_by, s.open_loop_at(0.396).label());
    assert!(
        !a.max_is_lower_bound,
        "0.475 did not keep up: the sweep crossed it"
    );
    // A server whose open loops keep up with everything: three extensions at most, and the
    // capacity is only a lower bound.
    let (steps, p) = drive_with(
        &s,
        &seconds(20.0),
        |st: &Strategy| {
            let rps = st.target_rate().unwrap_or(0.3);
            (rps, rps * 64.0)
        },
        0.0,
    );
    assert_eq!(
        steps.iter().filter(|s| s.role == SweepRole::Rate).count(),
        8 + MAX_EXTENSIONS as usize
    );
    assert!(p.answer().expect("answer").max_is_lower_bound);
    // A reading above the rate offered is evidence for the rate offered only.
    let (_, p) = drive_with(
        &s,
        &seconds(20.0),
        |st: &Strategy| {
            let rps = st.target_rate().map_or(0.3, |r| 1.05 * r);
            (rps, rps * 64.0)
        },
        0.0,
    );
    let a = p.answer().expect("answer");
    let top = 0.3 * 1.2 * 1.2f64.powi(MAX_EXTENSIONS as i32);
    assert!((a.max_requests_per_s - top).abs() < 1e-9, "{a:?} vs {top}");
    assert!((a.max_output_tokens_per_s - 64.0 * top).abs() < 1e-6);
}

#[test]
fn a_sweep_over_a_trace_offers_its_rates_as_speedups_and_states_multiples() {
    // A trace recorded at 0.5 req/s on the batching server of 8 req/s with an SLO met up to
    // 6 req/s: the same plan as the rate sweep, each rate a speed-up of the trace.
    let rate_spec = spec(SweepMode::Adaptive, Some("ttft_p99=500"));
    let trace_spec = rate_spec.over_trace(0.5);
    let (rate_steps, rate_plan) = drive(&rate_spec, 16, 6.0);
    let (trace_steps, trace_plan) = drive(&trace_spec, 16, 6.0);
    assert_eq!(rate_steps.len(), trace_steps.len());
    for (r, t) in rate_steps.iter().zip(&trace_steps) {
        assert_eq!(r.role, t.role);
        match (r.strategy.target_rate(), &t.strategy) {
            (Some(rate), Strategy::Trace { speedup, .. }) => {
                assert!((speedup * 0.5 - rate).abs() < 1e-9 * rate);
                assert_eq!(t.strategy.target_rate(), Some(speedup * 0.5));
            }
            (None, s) => assert_eq!(s, &r.strategy, "the probes are the rate sweep's"),
            (Some(_), s) => panic!("a rate became {s:?}"),
        }
    }
    let (a, b) = (
        rate_plan.answer().expect("answer"),
        trace_plan.answer().expect("answer"),
    );
    assert!(a.trace.is_none());
    let t = b.trace.expect("multiples");
    assert_eq!(t.recorded_requests_per_s, 0.5);
    assert_eq!(t.max_multiple, a.max_requests_per_s / 0.5);
    assert_eq!(
        t.slo_max_multiple,
        a.slo_max_requests_per_s.map(|r| r / 0.5)
    );
    assert!(t.slo_max_multiple.is_some());
}

#[test]
fn a_rate_that_cannot_be_judged_runs_again_longer_and_its_longest_run_judges_it() {
    // Capacity 16 req/s (batch 16 at 1 req/s a stream); the rates within 10% of it cannot be
    // judged until they run 4 times as long, when the ones above it are found not kept up.
    let s = spec(SweepMode::Adaptive, None);
    let srv = server(16, 100.0);
    let mut p = SweepPlanner::new(&s, &seconds(10.0));
    let mut steps = Vec::new();
    while let Some(step) = p.next_step().expect("plans") {
        let (rps, _) = srv(&step.strategy);
        let near = step
            .strategy
            .target_rate()
            .is_some_and(|r| (r / 16.0 - 1.0).abs() <= 0.11);
        let short = step.length < MAX_LENGTH;
        // Unjudged near the capacity it reads as if kept up (the drain's flattery).
        let rps = match step.strategy.target_rate() {
            Some(r) if near && short => r,
            _ => rps,
        };
        let reading = Reading {
            requests_per_s: rps,
            output_tokens_per_s: Some(rps * 100.0),
            slo_met: None,
            verdict: if near && short {
                Some(Verdict::Unsure)
            } else {
                verdict_of(&step, rps)
            },
            unjudged: None,
            slo_sure: None,
            rate_interval: None,
            seconds: 0.0,
        };
        p.record(step.clone(), reading);
        steps.push(step);
        assert!(steps.len() < 100, "the sweep ends");
    }
    let near: Vec<(String, f64)> = steps
        .iter()
        .filter(|s| {
            s.strategy
                .target_rate()
                .is_some_and(|r| r > 15.0 && r < 17.7)
        })
        .map(|s| (s.strategy.label(), s.length))
        .collect();
    // Each near rate ran at 1, 2 and 4 lengths, in a row.
    assert!(!near.is_empty());
    for w in near.chunks(3) {
        let lengths: Vec<f64> = w.iter().map(|x| x.1).collect();
        assert_eq!(lengths, [1.0, 2.0, 4.0], "{near:?}");
        assert!(w.iter().all(|x| x.0 == w[0].0), "{near:?}");
    }
    // The answer rests on the longest runs: 1.1x the capacity did not keep up there.
    let a = p.answer().expect("answer");
    assert!(a.max_requests_per_s <= 16.0 + 1e-9, "{a:?}");
    assert!(!a.max_is_lower_bound, "{a:?}");
}

#[test]
fn a_rate_below_what_the_closed_loops_carried_that_did_not_settle_runs_again_longer() {
    // Capacity 16 req/s; in a short window every rate from 8 req/s still fills (its in-flight
    // count climbing, judged not kept up) though the ladder carried 16: each runs again until
    // MAX_LENGTH, when the ones below the capacity are kept up.
    let s = spec(SweepMode::Adaptive, None);
    let srv = server(16, 100.0);
    let mut p = SweepPlanner::new(&s, &seconds(10.0));
    let mut runs: Vec<(f64, f64)> = Vec::new();
    while let Some(step) = p.next_step().expect("plans") {
        let (rps, _) = srv(&step.strategy);
        let rate = step.strategy.target_rate();
        let filling = rate.is_some_and(|r| r >= 8.0) && step.length < MAX_LENGTH;
        let over = rate.is_some_and(|r| r > 16.0);
        let verdict = rate.map(|_| match (filling, over) {
            (true, _) | (false, true) => Verdict::NotKeptUp,
            _ => Verdict::KeptUp,
        });
        let rps = if filling { 0.8 * rps } else { rps };
        if let Some(r) = rate {
            runs.push((r, step.length));
        }
        let reading = Reading {
            requests_per_s: rps,
            output_tokens_per_s: Some(rps * 100.0),
            slo_met: None,
            verdict,
            unjudged: None,
            slo_sure: None,
            rate_interval: None,
            seconds: 0.0,
        };
        p.record(step, reading);
        assert!(runs.len() < 100, "the sweep ends");
    }
    for &(r, _) in &runs {
        let lengths: Vec<f64> = runs.iter().filter(|x| x.0 == r).map(|x| x.1).collect();
        let want: &[f64] = if (8.0..0.95 * 16.0).contains(&r) {
            &[1.0, 2.0, 4.0]
        } else {
            &[1.0]
        };
        assert_eq!(lengths, want, "{r}: {runs:?}");
    }
    let a = p.answer().expect("answer");
    assert!((a.max_requests_per_s - 16.0).abs() < 1e-9, "{a:?}");
}

/// A sweep against a server whose closed loops read 114 req/s and whose open-loop rates each
/// read `open(rate)` (requests/s, verdict): its capacity answer, and the benchmarks it ran.
fn saturated_sweep(open: impl Fn(f64) -> (f64, Verdict)) -> (Capacity, Vec<String>) {
    saturated_sweep_with(&spec(SweepMode::Adaptive, None), open)
}

/// [`saturated_sweep`] of `s`; with an SLO every rate meets its bounds.
fn saturated_sweep_with(
    s: &SweepSpec,
    open: impl Fn(f64) -> (f64, Verdict),
) -> (Capacity, Vec<String>) {
    let mut p = SweepPlanner::new(s, &seconds(10.0));
    let mut labels = Vec::new();
    while let Some(step) = p.next_step().expect("plans") {
        let (rps, verdict) = match (&step.strategy, step.strategy.target_rate()) {
            (Strategy::Synchronous, _) => (10.0, None),
            (Strategy::Concurrent { streams }, _) => {
                ((10.0 * f64::from(*streams)).min(114.0), None)
            }
            (_, Some(r)) => {
                let (rps, v) = open(r);
                (rps, Some(v))
            }
            _ => unreachable!(),
        };
        labels.push(step.strategy.label());
        let reading = Reading {
            requests_per_s: rps,
            output_tokens_per_s: Some(rps * 32.0),
            slo_met: s.slo.as_ref().map(|_| true),
            verdict,
            unjudged: None,
            slo_sure: None,
            rate_interval: None,
            seconds: 0.0,
        };
        p.record(step, reading);
        assert!(labels.len() < 100, "the sweep ends");
    }
    (p.answer().expect("answer"), labels)
}

#[test]
fn departures_of_a_saturated_open_loop_set_the_capacity_when_closed_loops_read_above_them() {
    // Closed loops complete in waves and read 114 req/s; arrivals spread in time are carried
    // at 107 (the server departs 107 while loaded past it): the capacity is 107, measured by
    // the open-loop rate that departed the most. A reading below a rate kept up (cut short by
    // its window) is not taken.
    let (a, labels) = saturated_sweep(|r| match r {
        r if r <= 105.0 => (r, Verdict::KeptUp),
        r => (106.0 + (r - 105.0) / 100.0, Verdict::NotKeptUp),
    });
    assert!(
        (106.0..107.0).contains(&a.max_requests_per_s),
        "{a:?} {labels:?}"
    );
    assert!(a.max_measured_by.starts_with("constant@"), "{a:?}");
    assert!(!a.max_is_lower_bound);
}

#[test]
fn an_unsure_rate_past_the_capacity_does_not_raise_the_bar_of_the_saturated_reading() {
    // As above, but every rate up to 7% past what the server carries (107) is unsure and its
    // short window's completions match its arrivals (a queue growing a few requests a second
    // hides in 4 s): it is no evidence of keeping up, so the saturated open loop's 106 stays
    // the capacity rather than the closed loops' 114 (a `vllm-cpu-fast` sweep once stated 118).
    let (a, labels) = saturated_sweep(|r| match r {
        r if r <= 100.0 => (r, Verdict::KeptUp),
        r if r <= 1.07 * 107.0 => (r, Verdict::Unsure),
        r => (106.0 + (r - 105.0) / 100.0, Verdict::NotKeptUp),
    });
    assert!(
        (106.0..107.0).contains(&a.max_requests_per_s),
        "{a:?} {labels:?}"
    );
    assert!(a.max_measured_by.starts_with("constant@"), "{a:?}");
}

/// A sweep whose SLO verdicts are sure only away from the limit: an open-loop rate within
/// `0.15 / length` of `limit` (relative) is unsure, so that longer runs judge closer to it.
fn drive_sure(
    precision: Option<f64>,
    limit: f64,
    unsure_always: bool,
) -> (Vec<SweepStep>, SweepPlanner) {
    drive_sure_from(precision, limit, unsure_always, 1.0)
}

/// [`drive_sure`], every rate unsure (no intervals) when it runs shorter than `sure_from`.
fn drive_sure_from(
    precision: Option<f64>,
    limit: f64,
    unsure_always: bool,
    sure_from: f64,
) -> (Vec<SweepStep>, SweepPlanner) {
    let mut s = spec(SweepMode::Adaptive, Some("itl_p50=50"));
    s.slo_precision = precision;
    let mut p = SweepPlanner::new(&s, &seconds(10.0));
    let srv = server(16, 50.0);
    let mut steps = Vec::new();
    while let Some(step) = p.next_step().expect("plans") {
        let (rps, tok) = srv(&step.strategy);
        let rate = step.strategy.target_rate();
        let sure = rate.map(|r| {
            let near = (r - limit).abs() / limit < 0.15 / step.length || step.length < sure_from;
            match (
                near || unsure_always && (r - limit).abs() / limit < 0.1,
                r <= limit,
            ) {
                (true, _) => Sure::Unsure,
                (false, true) => Sure::Pass,
                (false, false) => Sure::Fail,
            }
        });
        let reading = Reading {
            requests_per_s: rps,
            output_tokens_per_s: Some(tok),
            slo_met: Some(rate.unwrap_or(0.0) <= limit),
            verdict: verdict_of(&step, rps),
            unjudged: None,
            slo_sure: sure,
            rate_interval: None,
            seconds: 10.0 * step.length,
        };
        p.record(step.clone(), reading);
        steps.push(step);
        assert!(steps.len() < 100, "the sweep ends");
    }
    (steps, p)
}

#[test]
fn slo_precision_lengthens_the_rates_between_the_ends_until_the_interval_is_narrow() {
    let limit = 5.0;
    let (_, p) = drive_sure(Some(0.05), limit, false);
    let b = p.answer().expect("answer").slo_bracket.expect("bracket");
    let r = b.refinement.expect("refinement");
    assert!(r.met, "{r:?}");
    assert!(
        r.benchmarks >= 1 && r.seconds >= 10.0 * f64::from(r.benchmarks),
        "{r:?}"
    );
    let (c, ok) = p.narrow_enough(0.05);
    assert!(ok);
    let high = c.high.expect("high");
    assert!(c.low <= limit && limit <= high, "{c:?}");
    assert!(high - c.low <= 0.1 * c.low, "{c:?}");
    // Without the flag nothing narrows and nothing is recorded.
    let (steps, q) = drive_sure(None, limit, false);
    assert!(q
        .answer()
        .expect("answer")
        .slo_bracket
        .expect("b")
        .refinement
        .is_none());
    assert!(steps
        .iter()
        .all(|s| s.length <= 1.0 || s.role == SweepRole::Ladder));
}

#[test]
fn slo_precision_gives_up_when_the_rates_stay_unsure_at_their_longest() {
    let (steps, p) = drive_sure(Some(0.01), 5.0, true);
    let r = p
        .answer()
        .expect("answer")
        .slo_bracket
        .expect("b")
        .refinement
        .expect("r");
    assert!(!r.met, "{r:?}");
    assert!(r.benchmarks <= MAX_ANSWER_STEPS, "{r:?}");
    assert!(steps.iter().all(|s| s.length <= MAX_LENGTH + 1e-9));
}

#[test]
fn slo_precision_lengthens_rates_too_short_for_intervals() {
    // At one benchmark length no rate has intervals (all unsure, no sure failure): the rates
    // that failed by their point figures bound the search, and longer runs make them sure.
    let (_, p) = drive_sure_from(Some(0.05), 5.0, false, 2.0);
    let r = p
        .answer()
        .expect("answer")
        .slo_bracket
        .expect("b")
        .refinement
        .expect("r");
    assert!(r.met, "{r:?}");
    let (c, _) = p.narrow_enough(0.05);
    assert!(c.low <= 5.0 && c.high.is_some_and(|h| h >= 5.0), "{c:?}");
}

/// A sweep of the batching server whose every reading's interval is `width / length` of its
/// rate wide (relative), and missing below `from` benchmark lengths. Equal maxima would take
/// turns: a benchmark run again longer moves after its equals, and the first of equals
/// measures the maximum.
fn drive_max_precision(
    precision: Option<f64>,
    width: f64,
    from: f64,
) -> (Vec<SweepStep>, SweepPlanner) {
    drive_answers(precision, None, width, from)
}

/// [`drive_max_precision`], with an SLO that every rate meets by its latencies when
/// `slo_precision` is given (asked at that precision).
fn drive_answers(
    precision: Option<f64>,
    slo_precision: Option<f64>,
    width: f64,
    from: f64,
) -> (Vec<SweepStep>, SweepPlanner) {
    let mut s = spec(SweepMode::Adaptive, slo_precision.map(|_| "itl_p50=50"));
    s.capacity_precision = precision;
    s.slo_precision = slo_precision;
    let mut p = SweepPlanner::new(&s, &seconds(10.0));
    let srv = server(16, 50.0);
    let mut steps = Vec::new();
    while let Some(step) = p.next_step().expect("plans") {
        let (rps, tok) = srv(&step.strategy);
        // Closed loops carry a little less the more streams they hold, and open-loop rates
        // read a little under what they offered, so that the maximum is one benchmark's (the
        // rung that saturates the batch), as with a real server.
        let loss = match step.strategy {
            Strategy::Concurrent { streams } => 1.0 - f64::from(streams) / 1000.0,
            _ if step.strategy.target_rate().is_some() => 0.998,
            _ => 1.0,
        };
        let (rps, tok) = (rps * loss, tok * loss);
        let half = rps * width / step.length / 2.0;
        let reading = Reading {
            requests_per_s: rps,
            output_tokens_per_s: Some(tok),
            slo_met: slo_precision.map(|_| true),
            verdict: verdict_of(&step, rps),
            unjudged: None,
            slo_sure: slo_precision.map(|_| Sure::Pass),
            rate_interval: (step.length >= from).then_some(Interval {
                low: rps - half,
                high: rps + half,
            }),
            seconds: 10.0 * step.length,
        };
        p.record(step.clone(), reading);
        steps.push(step);
        assert!(steps.len() < 100, "the sweep ends");
    }
    (steps, p)
}

#[test]
fn capacity_precision_lengthens_the_benchmark_that_measured_the_maximum() {
    // 37% wide at the rung's 0.81 lengths: two doublings make it 9.3% (within +-5%).
    let (steps, p) = drive_max_precision(Some(0.05), 0.3, 1.0);
    let c = p.answer().expect("answer");
    let r = c.max_refinement.expect("refinement");
    assert!(r.met, "{r:?}");
    assert_eq!(r.benchmarks, 2, "{steps:?}");
    let last = steps.last().expect("steps");
    assert_eq!(last.strategy.label(), c.max_measured_by);
    assert!((last.length - 4.0 * steps_len(&steps, &c.max_measured_by)).abs() < 1e-9);
    assert!((r.seconds - 10.0 * (2.0 + 4.0) * steps_len(&steps, &c.max_measured_by)).abs() < 1e-6);
    // Without the flag nothing runs again and nothing is recorded.
    let (plain, q) = drive_max_precision(None, 0.3, 1.0);
    assert!(q.answer().expect("answer").max_refinement.is_none());
    assert_eq!(plain.len() + 2, steps.len());
}

/// The length of the first run of the benchmark labelled `label`.
fn steps_len(steps: &[SweepStep], label: &str) -> f64 {
    steps
        .iter()
        .find(|s| s.strategy.label() == label)
        .map_or(f64::NAN, |s| s.length)
}

#[test]
fn capacity_precision_gets_an_interval_for_a_run_too_short_for_one_and_gives_up_at_max_length() {
    // No interval below two lengths: the maximum's benchmark runs again until it has one.
    let (_, p) = drive_max_precision(Some(0.2), 0.3, 2.0);
    let r = p.answer().expect("answer").max_refinement.expect("r");
    assert!(r.met && r.benchmarks >= 1, "{r:?}");
    // Too wide even at the longest: it stops there and says the precision was not met.
    let (steps, p) = drive_max_precision(Some(0.001), 0.3, 1.0);
    let r = p.answer().expect("answer").max_refinement.expect("r");
    assert!(!r.met, "{r:?}");
    assert!(r.benchmarks <= MAX_ANSWER_STEPS, "{r:?}");
    assert!(steps.iter().all(|s| s.length <= MAX_LENGTH + 1e-9));
}

/// An SLO that never binds (every rate meets its latency bounds; only the rates past the
/// capacity, which are not served, fail it): the SLO answer is the capacity, with the
/// capacity's interval, and `--slo-precision` narrows that interval (the benchmark that
/// measured the maximum runs again longer), or says why it could not.
#[test]
fn an_slo_that_never_binds_answers_the_capacity_and_narrows_its_interval() {
    let (steps, p) = drive_answers(None, Some(0.05), 0.3, 1.0);
    let c = p.answer().expect("answer");
    assert_eq!(c.slo_limit, Some(SloLimit::Capacity), "{c:?}");
    assert_eq!(c.slo_max_requests_per_s, Some(c.max_requests_per_s));
    let b = c.slo_bracket.as_ref().expect("bracket");
    assert!(b.high.is_some(), "a rate past the capacity fails: {b:?}");
    let r = b.refinement.expect("refinement");
    assert!(r.met && r.benchmarks == 2 && r.why_not.is_none(), "{r:?}");
    let last = steps.last().expect("steps");
    assert_eq!(last.strategy.label(), c.max_measured_by, "{steps:?}");
    // Too fine to reach: it stops at the longest run and says so.
    let (_, p) = drive_answers(None, Some(0.001), 0.3, 1.0);
    let r = p
        .answer()
        .expect("answer")
        .slo_bracket
        .expect("b")
        .refinement
        .expect("r");
    assert!(!r.met, "{r:?}");
    assert_eq!(r.why_not, Some(NotNarrowed::AtLongest), "{r:?}");
}

/// A rate kept up above the measured maximum that met the SLO (the maximum read from a rate
/// past the capacity by its departures, a little under it) does not lift the SLO answer above
/// the maximum.
#[test]
fn the_slo_answer_is_never_above_the_capacity() {
    let mut s = spec(SweepMode::Adaptive, Some("itl_p50=50"));
    s.slo_precision = None;
    let (a, labels) = saturated_sweep_with(&s, |r| match r {
        r if r <= 110.0 => (r, Verdict::KeptUp),
        r => (106.0 + (r - 105.0) / 100.0, Verdict::NotKeptUp),
    });
    let met_above = labels.iter().any(|l| {
        l.strip_prefix("constant@")
            .and_then(|r| r.parse::<f64>().ok())
            .is_some_and(|r| r > a.max_requests_per_s && r <= 110.0)
    });
    assert!(
        met_above,
        "a rate kept up above the maximum: {a:?} {labels:?}"
    );
    let slo = a.slo_max_requests_per_s.expect("an SLO answer");
    assert!(slo <= a.max_requests_per_s, "{a:?}");
    assert_eq!(a.slo_limit, Some(SloLimit::Capacity), "{a:?}");
}

/// A slow server (about one request a second, as llama.cpp on 2 cores): its open-loop rates'
/// loaded spans hold too few arrivals to be judged in one benchmark length. `judge_from` is
/// the length from which the model's verdicts come (`None`: never judged). Returns the
/// answer and every open-loop run as (rate, length).
fn slow_sweep(judge_from: Option<f64>) -> (Capacity, Vec<(f64, f64)>) {
    let s = spec(SweepMode::Adaptive, None);
    let mut p = SweepPlanner::new(&s, &seconds(15.0));
    let mut runs = Vec::new();
    while let Some(step) = p.next_step().expect("plans") {
        let rate = step.strategy.target_rate();
        // The server carries 0.93 req/s; its closed loops read up to 1.1.
        let carried = match step.strategy {
            Strategy::Synchronous => 0.9,
            _ => rate.map_or(1.1, |r| r.min(0.93)),
        };
        // The loaded span is half the window; the drain flatters an unjudged rate.
        let arrivals = rate.map_or(0, |r| (r * 7.5 * step.length) as u64);
        let judged = judge_from.is_some_and(|l| step.length >= l);
        let (rps, verdict, unjudged) = match rate {
            Some(r) if !judged => (
                r,
                None,
                Some(Unjudged {
                    arrivals,
                    needed: 10,
                    completed: arrivals,
                    span_s: 7.5 * step.length,
                }),
            ),
            Some(_) => (carried, verdict_of(&step, carried), None),
            None => (carried, None, None),
        };
        if let Some(r) = rate {
            runs.push((r, step.length));
        }
        let reading = Reading {
            requests_per_s: rps,
            output_tokens_per_s: Some(rps * 32.0),
            slo_met: None,
            verdict,
            unjudged,
            slo_sure: None,
            rate_interval: None,
            seconds: 15.0 * step.length,
        };
        p.record(step, reading);
        assert!(runs.len() < 100, "the sweep ends");
    }
    (p.answer().expect("answer"), runs)
}

#[test]
fn a_rate_too_few_arrivals_judge_runs_as_long_as_they_need_and_its_verdict_then_counts() {
    let (a, runs) = slow_sweep(Some(2.0));
    for &(r, _) in &runs {
        let lengths: Vec<f64> = runs.iter().filter(|x| x.0 == r).map(|x| x.1).collect();
        // 7.5 r arrivals in one length: 20 / that times longer, at least 2, at most 4. A rate
        // then judged not kept up below what the closed loops carried (still filling) runs a
        // third time, at the longest.
        let want = (20.0 / (r * 7.5).floor()).clamp(2.0, MAX_LENGTH);
        assert_eq!(lengths[..2], [1.0, want], "{r}: {runs:?}");
        assert!(
            lengths[2..].iter().all(|&l| l == MAX_LENGTH),
            "{r}: {runs:?}"
        );
        assert!(lengths.len() <= 3, "{r}: {runs:?}");
    }
    // Judged, the rates past 0.93 req/s are not kept up: the answer is what the server
    // carries, never a rate the drain flattered.
    assert!(a.max_requests_per_s <= 0.93 + 1e-9, "{a:?}");
    assert!(!a.max_is_lower_bound, "{a:?}");
}

#[test]
fn a_rate_never_judged_by_its_longest_run_never_counts_as_kept_up() {
    let (a, runs) = slow_sweep(None);
    assert!(runs.iter().any(|&(_, l)| l == MAX_LENGTH), "{runs:?}");
    assert!(runs.iter().all(|&(_, l)| l <= MAX_LENGTH), "{runs:?}");
    // No rate counts: the answer is the best closed loop, and the sweep does not claim its
    // top rate kept up.
    assert!(
        !a.max_measured_by.starts_with("constant"),
        "an unjudged rate set the capacity: {a:?}"
    );
    assert!(!a.max_is_lower_bound, "{a:?}");
}

/// The ladder with the batch the server said: it doubles up to twice the batch whatever each
/// rung gains (a rung that reads no gain, where the plain ladder stopped, does not stop it),
/// and the capacity is the best rung; past `2B` it doubles on only while a rung gains over
/// [`PAST_BATCH_GAIN`] (a server whose batch is larger than it said).
#[test]
fn the_batch_the_server_said_chooses_the_rungs() {
    let hinted = |batch: u32| SweepSpec {
        server_batch: Some(batch),
        ..spec(SweepMode::Adaptive, None)
    };
    let labels = |steps: &[SweepStep]| -> Vec<String> {
        steps
            .iter()
            .filter(|s| s.role != SweepRole::Rate)
            .map(|s| s.strategy.label())
            .collect()
    };
    let ladder = |top: u32| -> Vec<String> {
        std::iter::once("synchronous".to_string())
            .chain(
                (1..)
                    .map(|k| 1u32 << k)
                    .take_while(|&c| c <= top)
                    .map(|c| format!("concurrent@{c}")),
            )
            .collect()
    };
    // A server of 16 slots that says so: the plain ladder's rungs, up to 32.
    let (steps, p) = drive(&hinted(16), 16, 0.0);
    assert_eq!(labels(&steps), ladder(32));
    assert_eq!(p.answer().expect("answer").max_requests_per_s, 8.0);
    // One noisy rung: @2 reads below synchronous. The plain ladder stops there and states
    // synchronous; told the batch, it climbs past it and finds the capacity.
    let noisy = |s: &Strategy| match s {
        Strategy::Concurrent { streams: 2 } => (0.4, 40.0),
        _ => server(16, 50.0)(s),
    };
    let (steps, p) = drive_with(&spec(SweepMode::Adaptive, None), &seconds(60.0), noisy, 0.0);
    assert_eq!(labels(&steps), ladder(2));
    let plain = p.answer().expect("answer").max_requests_per_s;
    assert!(
        plain < 2.0,
        "the plain ladder understates the 8 req/s: {plain}"
    );
    let (steps, p) = drive_with(&hinted(16), &seconds(60.0), noisy, 0.0);
    assert_eq!(labels(&steps), ladder(32));
    assert_eq!(p.answer().expect("answer").max_measured_by, "concurrent@16");
    // A server that said 4 but batches 16: up to @8, then on while a rung doubles.
    let (steps, p) = drive(&hinted(4), 16, 0.0);
    assert_eq!(labels(&steps), ladder(32));
    assert_eq!(p.answer().expect("answer").max_requests_per_s, 8.0);
    // The cap bounds it.
    let capped = SweepSpec {
        throughput_concurrency: 24,
        ..hinted(16)
    };
    let (steps, _) = drive(&capped, 16, 0.0);
    assert_eq!(
        labels(&steps).last().map(String::as_str),
        Some("concurrent@24")
    );
    assert_eq!(hinted_top(16, 512), 32);
    assert_eq!(hinted_top(600, 512), 512);
}

/// A rung's predicted latency on a server of batch `B`: throughput grows with the streams up
/// to the batch, then stays (Little's law).
#[test]
fn a_rung_past_the_batch_is_predicted_to_queue() {
    // Synchronous read 1 req/s: 64 streams on a 64 batch take as long as one request.
    assert_eq!(batch_latency(&[(1, 1.0)], 64, 64), Some(1.0));
    // 64 streams read 32 req/s: 128 of them queue, 4 s each.
    assert_eq!(batch_latency(&[(1, 1.0), (64, 32.0)], 128, 64), Some(4.0));
    assert_eq!(batch_latency(&[], 8, 4), None);
}

/// Each benchmark's seconds are charged to the answer it ran for: the probe and the rungs to
/// the maximum, the rates to the knee, the SLO search to the SLO answer; they add up to every
/// benchmark's. Without an SLO there is no SLO share.
#[test]
fn benchmark_seconds_are_charged_to_the_answer_they_ran_for() {
    for slo in [None, Some("ttft_p99=100")] {
        let s = spec(SweepMode::Adaptive, slo);
        let srv = server(16, 50.0);
        let mut p = SweepPlanner::new(&s, &seconds(60.0));
        let mut by_role: Vec<(SweepRole, f64)> = Vec::new();
        let mut n = 0.0;
        while let Some(step) = p.next_step().expect("plans") {
            let (rps, tok) = srv(&step.strategy);
            // Seconds distinct per benchmark, so that a wrong charge shows.
            n += 1.0;
            by_role.push((step.role, n));
            let slo_met = s
                .slo
                .as_ref()
                .map(|_| step.strategy.target_rate().unwrap_or(0.0) <= 3.7);
            let reading = Reading {
                requests_per_s: rps,
                output_tokens_per_s: Some(tok),
                slo_met,
                verdict: verdict_of(&step, rps),
                unjudged: None,
                slo_sure: None,
                rate_interval: None,
                seconds: n,
            };
            p.record(step, reading);
        }
        let sp = p.answer().expect("answer").spent.expect("spent");
        let role = |r: SweepRole| -> f64 { by_role.iter().filter(|x| x.0 == r).map(|x| x.1).sum() };
        assert_eq!(
            sp.capacity_s,
            role(SweepRole::Probe) + role(SweepRole::Ladder)
        );
        assert_eq!(sp.knee_s, role(SweepRole::Rate));
        assert_eq!(sp.slo_s, slo.map(|_| role(SweepRole::Refine)));
        assert!(
            slo.is_none() || role(SweepRole::Refine) > 0.0,
            "an SLO search ran"
        );
        assert_eq!(sp.total(), n * (n + 1.0) / 2.0);
    }
}
