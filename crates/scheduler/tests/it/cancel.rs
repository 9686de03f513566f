//! The client's own cancellations on tokio's paused clock (docs/metrics.md, "Cancellation"):
//! exactly the share asked, evenly spread, each cancelled at its send plus the delay unless it
//! ended first, with what had arrived, as its own outcome.

use crate::support;

use std::sync::Arc;

use bench_core::{Cancellation, Clock, Outcome, RequestRecord, Status};
use bench_profile::{Limits, Strategy};
use bench_scheduler::{BenchmarkOutcome, BenchmarkSetup, Pacing, Scheduler, SchedulerOptions};
use support::{specs, Fake};

const MS: u64 = 1_000_000;

/// 40 requests at 10 req/s against a server that answers 10 tokens, the first after 10 ms and
/// one every 100 ms after it (910 ms each).
async fn run(c: Cancellation) -> (BenchmarkOutcome, Vec<RequestRecord>) {
    let opts = SchedulerOptions {
        pacing: Pacing::Runtime,
        cancellation: Some(c),
        ..SchedulerOptions::default()
    };
    let sched = Scheduler::new(Arc::new(Fake::new(10, 100, 10)), Clock::start(), opts);
    let plan = BenchmarkSetup {
        strategy: Strategy::Constant {
            rate: 10.0,
            max_concurrency: None,
        },
        limits: Limits {
            max_seconds: Some(4.0),
            drain_timeout: Some(5.0),
            ..Limits::default()
        },
        warmup: None,
        cooldown: None,
    };
    let mut recs = Vec::new();
    let (out, _) = sched
        .run_benchmark(0, 1, &plan, specs(), |r, _| recs.push(r))
        .await
        .expect("valid plan");
    recs.sort_by_key(|r| r.id);
    (out, recs)
}

#[tokio::test(start_paused = true)]
async fn a_quarter_is_cancelled_300ms_after_its_send_with_what_had_arrived() {
    let (out, recs) = run(Cancellation::new(0.25, 0.3).expect("valid")).await;
    assert_eq!(recs.len(), 40);
    for r in &recs {
        if r.id % 4 == 3 {
            assert_eq!(r.outcome, Outcome::ClientCancelled, "{}", r.id);
            assert_eq!(r.status(), Status::Cancelled);
            assert_eq!(r.end - r.dispatched, 300 * MS, "{}", r.id);
            // Tokens at 10, 110 and 210 ms; the fourth was due at 310.
            assert_eq!(r.output_tokens, 3, "{}", r.id);
        } else {
            assert_eq!(r.outcome, Outcome::Completed, "{}", r.id);
            assert_eq!(r.end - r.dispatched, 910 * MS, "{}", r.id);
        }
    }
    assert_eq!((out.cancelled, out.completed, out.incomplete), (10, 30, 0));
    assert_eq!(
        out.cancellation,
        Some(Cancellation::new(0.25, 0.3).expect("valid"))
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_that_ends_before_its_delay_is_not_cancelled() {
    let (out, recs) = run(Cancellation::new(0.5, 2.0).expect("valid")).await;
    assert!(recs.iter().all(|r| r.outcome == Outcome::Completed));
    assert_eq!((out.cancelled, out.completed), (0, 40));
}

#[tokio::test(start_paused = true)]
async fn every_request_is_cancelled_at_a_share_of_one_and_a_delay_of_zero() {
    let (out, recs) = run(Cancellation::new(1.0, 0.0).expect("valid")).await;
    assert!(recs.iter().all(|r| r.outcome == Outcome::ClientCancelled
        && r.end == r.dispatched
        && r.chunks.is_empty()));
    assert_eq!((out.cancelled, out.completed), (40, 0));
}
