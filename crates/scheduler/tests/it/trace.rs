//! Trace replay on tokio's paused clock: every request is dispatched at its recorded offset
//! over the speed-up, exactly; the window limits cut a long trace.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use bench_core::{Clock, RequestSpec};
use bench_profile::{Limits, Strategy};
use bench_scheduler::{BenchmarkSetup, Pacing, Scheduler, SchedulerOptions, StopReason};
use support::Fake;

const MS: u64 = 1_000_000;

/// A bursty recorded schedule (ms): gaps of 0, 1, 250, 3, 1,000 ms, ...
const OFFSETS_MS: [u64; 8] = [0, 0, 1, 251, 254, 1254, 1254, 4000];

fn rows() -> Vec<RequestSpec> {
    OFFSETS_MS
        .iter()
        .map(|&ms| RequestSpec {
            prompt: "hello".into(),
            prompt_tokens: 5,
            output_tokens: Some(2),
            at: Some(ms * MS),
            batch: Vec::new(),
            images: Vec::new(),
        })
        .collect()
}

fn plan(speedup: f64, max_seconds: Option<f64>, max_requests: Option<u64>) -> BenchmarkSetup {
    BenchmarkSetup {
        strategy: Strategy::Trace {
            speedup,
            max_concurrency: None,
            recorded_rate: None,
        },
        limits: Limits {
            max_seconds,
            max_requests,
            ..Limits::default()
        },
        warmup: None,
        cooldown: None,
    }
}

async fn replay(plan: &BenchmarkSetup) -> (bench_core::BenchmarkOutcome, Vec<(u64, u64, u64)>) {
    let fake = Arc::new(Fake::new(20, 5, 2));
    let opts = SchedulerOptions {
        pacing: Pacing::Runtime,
        cancel_grace: Duration::from_secs(2),
        ..SchedulerOptions::default()
    };
    let sched = Scheduler::new(fake.clone(), Clock::start(), opts);
    let (out, _) = sched
        .run_benchmark(0, 1, plan, rows().into_iter(), |_, _| {})
        .await
        .expect("valid plan");
    let log = fake
        .log()
        .into_iter()
        .map(|(id, scheduled, _slot, dispatched)| {
            (id, scheduled - out.start, dispatched - out.start)
        })
        .collect();
    (out, log)
}

#[tokio::test(start_paused = true)]
async fn dispatch_follows_the_recorded_offsets_scaled_by_the_speedup() {
    for speedup in [1.0, 2.0, 0.5] {
        let (out, log) = replay(&plan(speedup, None, None)).await;
        assert_eq!(out.sent, OFFSETS_MS.len() as u64, "speedup {speedup}");
        assert_eq!(out.stop_reason, StopReason::DataExhausted);
        for (id, scheduled, dispatched) in log {
            let want = (OFFSETS_MS[id as usize] as f64 * MS as f64 / speedup).round() as u64;
            assert_eq!(scheduled, want, "speedup {speedup}, row {id}: schedule");
            // Whole-millisecond instants are exact on the paused clock; 0.5x and 2x of these
            // offsets give half-millisecond ones, which tokio's timer rounds up by < 1 ms.
            assert!(
                dispatched >= want && dispatched - want < MS,
                "row {id}: {dispatched} vs {want}"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn max_seconds_and_max_requests_cut_a_window() {
    // 1.3 s of the trace: rows due at 0, 0, 1, 251, 254, 1254, 1254 ms.
    let (out, log) = replay(&plan(1.0, Some(1.3), None)).await;
    assert_eq!(out.sent, 7);
    assert_eq!(log.len(), 7);
    // At 2x, 1.3 s covers the rows recorded up to 2.6 s: the same seven.
    let (out, _) = replay(&plan(2.0, Some(1.3), None)).await;
    assert_eq!(out.sent, 7);
    // At 4x the last row (4 s recorded, due at 1 s) fits too.
    let (out, _) = replay(&plan(4.0, Some(1.3), None)).await;
    assert_eq!(out.sent, 8);
    let (out, log) = replay(&plan(1.0, None, Some(3))).await;
    assert_eq!(out.sent, 3);
    assert_eq!(log.iter().map(|l| l.1).collect::<Vec<_>>(), vec![0, 0, MS]);
}

#[tokio::test(start_paused = true)]
async fn a_concurrency_cap_queues_rows_but_keeps_their_schedule() {
    let fake = Arc::new(Fake::new(20, 5, 2));
    let opts = SchedulerOptions {
        pacing: Pacing::Runtime,
        ..SchedulerOptions::default()
    };
    let mut p = plan(1.0, None, None);
    p.strategy = Strategy::Trace {
        speedup: 1.0,
        max_concurrency: Some(1),
        recorded_rate: None,
    };
    let sched = Scheduler::new(fake.clone(), Clock::start(), opts);
    let (out, _) = sched
        .run_benchmark(0, 1, &p, rows().into_iter(), |_, _| {})
        .await
        .expect("valid plan");
    assert_eq!(out.sent, OFFSETS_MS.len() as u64);
    assert_eq!(fake.max_in_flight(), 1);
    let log = fake.log();
    for (id, scheduled, slot, _) in &log {
        assert_eq!(scheduled - out.start, OFFSETS_MS[*id as usize] * MS);
        assert!(slot >= scheduled);
    }
    // Row 1 (due with row 0) waited for row 0's 25 ms.
    let (_, s1, slot1, _) = log[1];
    assert_eq!(slot1 - s1, 25 * MS);
}
