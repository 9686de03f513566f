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
    let r = capacity_rates(1.0, 40.0, 8);
    assert_eq!(r.len(), 8);
    assert!((r[0] - 1.0).abs() < 1e-9, "starts at the synchronous rate");
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

fn drive(spec: &SweepSpec, batch: u32, slo_limit: f64) -> (Vec<SweepStep>, SweepPlanner) {
    let srv = server(batch, 50.0);
    let mut p = SweepPlanner::new(spec);
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
        let refine = steps.iter().filter(|s| s.role == SweepRole::Refine).count();
        assert_eq!(refine as u32, b.steps);
    }
    // Every rate meets it: no refinement, open bracket.
    let s = spec(SweepMode::Adaptive, Some("ttft_p99=100"));
    let (steps, p) = drive(&s, 16, 1e9);
    assert!(steps.iter().all(|s| s.role != SweepRole::Refine));
    let b = p.answer().expect("answer").slo_bracket.expect("bracket");
    assert_eq!((b.low, b.high), (Some(9.6), None));
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
    let mut q = SweepPlanner::new(&s);
    assert_eq!(q.expected_len(), 10);
    let first = q.next_step().expect("plans").expect("a step");
    assert_eq!(q.expected_len(), 10, "a step handed out still counts");
    q.record(
        first,
        Reading {
            requests_per_s: 1.0,
            output_tokens_per_s: None,
            slo_met: None,
        },
    );
    assert_eq!(q.expected_len(), 10);
}

#[test]
fn bracket_ignores_passes_above_a_failure() {
    let b = slo_bracket(&[(1.0, true), (2.0, false), (3.0, true)], 0.05, 0);
    assert_eq!((b.low, b.high), (Some(1.0), Some(2.0)));
    assert_eq!(slo_next_rate(&b), Some(1.5));
    let b = slo_bracket(&[(1.0, true), (1.04, false)], 0.05, 1);
    assert_eq!(slo_next_rate(&b), None);
}
