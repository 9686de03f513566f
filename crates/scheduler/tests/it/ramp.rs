//! Ramp-up pacing on tokio's paused clock (docs/metrics.md, "Ramp-up"): every request at the
//! instant the ramp's closed form gives, closed-loop streams opening on schedule, and the rate
//! changes recorded as sent.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use bench_core::{Clock, Ramp, RampOver, RampShape, RequestRecord};
use bench_profile::{Limits, Strategy, Transient};
use bench_scheduler::{
    BenchmarkOutcome, BenchmarkSetup, Pacing, Phase, Scheduler, SchedulerOptions,
};
use support::{specs, Fake};

const S: f64 = 1e9;

fn by_time(shape: RampShape, d: f64, from: f64) -> Ramp {
    Ramp {
        shape,
        over: RampOver::Seconds(d),
        from_rps: from,
        in_window: false,
    }
}

async fn run(
    fake: Arc<Fake>,
    ramp: Ramp,
    strategy: Strategy,
    limits: Limits,
    warmup: Option<Transient>,
) -> (BenchmarkOutcome, Vec<(RequestRecord, Phase)>) {
    let opts = SchedulerOptions {
        pacing: Pacing::Runtime,
        cancel_grace: Duration::from_secs(2),
        ramp: Some(ramp),
        ..SchedulerOptions::default()
    };
    let sched = Scheduler::new(fake, Clock::start(), opts);
    let plan = BenchmarkSetup {
        strategy,
        limits,
        warmup,
        cooldown: None,
    };
    let mut recs = Vec::new();
    let (out, _) = sched
        .run_benchmark(0, 1, &plan, specs(), |r, p| recs.push((r, p)))
        .await
        .expect("valid plan");
    recs.sort_by_key(|(r, _)| r.id);
    (out, recs)
}

fn seconds(max: f64) -> Limits {
    Limits {
        max_seconds: Some(max),
        ..Limits::default()
    }
}

#[tokio::test(start_paused = true)]
async fn a_linear_ramp_sends_each_request_when_the_ramps_count_reaches_it() {
    // 0 to 20 req/s over 10 s: Λ(t) = t², so request i at √i s up to 100; then one every
    // 50 ms until 12 s: 140 requests. The window opens at the ramp's end (the warmup the CLI
    // sets), so the measured ones are the 40 sent at the full rate.
    let fake = Arc::new(Fake::new(10, 5, 4));
    let strategy = Strategy::Constant {
        rate: 20.0,
        max_concurrency: None,
    };
    let (out, recs) = run(
        fake,
        by_time(RampShape::Linear, 10.0, 0.0),
        strategy,
        seconds(12.0),
        Some(Transient::Seconds(10.0)),
    )
    .await;
    assert_eq!(out.sent, 140);
    for (i, (r, phase)) in recs.iter().enumerate() {
        let want = if i <= 100 {
            (i as f64).sqrt()
        } else {
            10.0 + (i as f64 - 100.0) / 20.0
        };
        let at = (r.scheduled - out.start) as f64 / S;
        assert!(
            (at - want).abs() < 1e-9,
            "request {i} at {at} s, want {want}"
        );
        // tokio's timers wake on whole milliseconds.
        let late = r.dispatched - r.scheduled;
        assert!(late < 1_000_000, "request {i} {late} ns late");
        assert_eq!(
            *phase == Phase::Measured,
            i >= 100,
            "request {i}: {phase:?}"
        );
    }
    // The changes: the first request at each whole rate, 1 to 20 req/s (rate 2√i at √i s).
    let ramp = out.ramp.expect("the ramp's record");
    assert_eq!(ramp.to, 20.0);
    let levels: Vec<f64> = ramp.changes.iter().map(|c| c.rate).collect();
    assert_eq!(levels, (1..=20).map(f64::from).collect::<Vec<_>>());
    for c in &ramp.changes {
        let i = (c.rate / 2.0).powi(2).ceil();
        assert!((c.at_s - i.sqrt()).abs() < 1e-9, "{c:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_exponential_ramp_sends_by_its_closed_form() {
    // 1 to 16 req/s over 4 s: Λ(t) = 4 / ln 16 × (16^(t/4) - 1); request i at
    // t = 4 / ln 16 × ln(1 + i ln 16 / 4) while Λ(4) = 15 / ln 16 × 4 = 21.64 holds it.
    let fake = Arc::new(Fake::new(10, 5, 4));
    let strategy = Strategy::Constant {
        rate: 16.0,
        max_concurrency: None,
    };
    let (out, recs) = run(
        fake,
        by_time(RampShape::Exponential, 4.0, 1.0),
        strategy,
        seconds(5.0),
        None,
    )
    .await;
    let lq = 16f64.ln();
    let in_ramp = 4.0 * 15.0 / lq;
    for (i, (r, _)) in recs.iter().enumerate() {
        let s = i as f64;
        let want = if s <= in_ramp {
            4.0 / lq * (1.0 + s * lq / 4.0).ln()
        } else {
            4.0 + (s - in_ramp) / 16.0
        };
        let at = (r.scheduled - out.start) as f64 / S;
        assert!(
            (at - want).abs() < 1e-8,
            "request {i} at {at} s, want {want}"
        );
    }
    // 21.64 in the ramp, then 16 a second for 1 s: 38 requests due before 5 s.
    assert_eq!(out.sent, 38);
}

#[tokio::test(start_paused = true)]
async fn a_ramp_by_request_takes_each_gap_at_its_requests_rate() {
    // vLLM's rule over 5 requests from 1 to 5 req/s: gaps 1, 1/2, 1/3, 1/4 s.
    let fake = Arc::new(Fake::new(10, 5, 4));
    let ramp = Ramp {
        shape: RampShape::Linear,
        over: RampOver::Requests,
        from_rps: 1.0,
        in_window: true,
    };
    let strategy = Strategy::Constant {
        rate: 5.0,
        max_concurrency: None,
    };
    let limits = Limits {
        max_requests: Some(5),
        ..Limits::default()
    };
    let (out, recs) = run(fake, ramp, strategy, limits, None).await;
    let at: Vec<f64> = recs
        .iter()
        .map(|(r, _)| (r.scheduled - out.start) as f64 / S)
        .collect();
    let want = [0.0, 1.0, 1.5, 1.5 + 1.0 / 3.0, 1.5 + 1.0 / 3.0 + 0.25];
    for (a, w) in at.iter().zip(want) {
        assert!((a - w).abs() < 1e-9, "{at:?}");
    }
    let levels: Vec<f64> = out
        .ramp
        .expect("record")
        .changes
        .iter()
        .map(|c| c.rate)
        .collect();
    assert_eq!(levels, vec![2.0, 3.0, 4.0, 5.0]);
}

#[tokio::test(start_paused = true)]
async fn a_closed_loop_opens_its_streams_evenly_over_the_ramp() {
    // 4 streams over 3 s: stream j opens at j s. Requests take 1 s (ttft 200 ms + 8 x 100 ms),
    // so the in-flight count is 1, 2, 3, 4 in the seconds 0-1, 1-2, 2-3, 3-4.
    let fake = Arc::new(Fake::new(200, 100, 9));
    let (out, recs) = run(
        fake.clone(),
        by_time(RampShape::Linear, 3.0, 0.0),
        Strategy::Concurrent { streams: 4 },
        seconds(5.0),
        Some(Transient::Seconds(3.0)),
    )
    .await;
    let in_flight_at = |t: f64| {
        let t = out.start + (t * S) as u64;
        recs.iter()
            .filter(|(r, _)| r.dispatched <= t && r.end > t)
            .count()
    };
    for (t, n) in [(0.5, 1), (1.5, 2), (2.5, 3), (3.5, 4), (4.5, 4)] {
        assert_eq!(in_flight_at(t), n, "in flight at {t} s");
    }
    assert_eq!(fake.max_in_flight(), 4);
    let ramp = out.ramp.expect("record");
    let changes: Vec<(f64, f64)> = ramp.changes.iter().map(|c| (c.at_s, c.rate)).collect();
    assert_eq!(
        changes,
        vec![(0.0, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 4.0)]
    );
}
