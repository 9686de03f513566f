//! Exact scheduler behaviour on tokio's paused clock with a fake backend.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use bench_core::{Clock, Nanos, RequestRecord, Status};
use bench_profile::{
    capacity_rates, sweep_rates, Limits, OpenLoop, OverSaturation, Profile, Strategy, SweepMode,
    SweepRole, SweepSpec, Transient, DEFAULT_SLO_TOLERANCE,
};
use bench_scheduler::{
    BenchmarkOutcome, BenchmarkSetup, Observer, Pacing, Phase, Scheduler, SchedulerOptions,
    StopReason,
};
use support::{specs, Fake};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn opts() -> SchedulerOptions {
    SchedulerOptions {
        pacing: Pacing::Runtime,
        cancel_grace: Duration::from_secs(2),
        progress_interval: Duration::from_millis(250),
        ..SchedulerOptions::default()
    }
}

fn plan(strategy: Strategy, max_seconds: Option<f64>, max_requests: Option<u64>) -> BenchmarkSetup {
    BenchmarkSetup {
        strategy,
        limits: Limits {
            max_seconds,
            max_requests,
            ..Limits::default()
        },
        warmup: None,
        cooldown: None,
    }
}

async fn run(
    fake: Arc<Fake>,
    plan: &BenchmarkSetup,
) -> (BenchmarkOutcome, Vec<(RequestRecord, Phase)>) {
    let sched = Scheduler::new(fake, Clock::start(), opts());
    let mut recs = Vec::new();
    let (out, _) = sched
        .run_benchmark(0, 1, plan, specs(), |r, p| recs.push((r, p)))
        .await
        .expect("valid plan");
    recs.sort_by_key(|(r, _)| r.id);
    (out, recs)
}

fn constant(rate: f64, cap: Option<u32>) -> Strategy {
    Strategy::Constant {
        rate,
        max_concurrency: cap,
    }
}

#[tokio::test(start_paused = true)]
async fn constant_rate_sends_rate_times_duration_at_exact_instants() {
    let fake = Arc::new(Fake::new(30, 5, 4));
    let (out, recs) = run(fake.clone(), &plan(constant(10.0, None), Some(3.0), None)).await;
    assert_eq!(out.sent, 30);
    assert_eq!(recs.len(), 30);
    assert_eq!(out.stop_reason, StopReason::MaxSeconds);
    let t0 = out.start;
    for (i, (r, _)) in recs.iter().enumerate() {
        let want = t0 + i as u64 * 100 * MS;
        assert_eq!(r.scheduled, want, "request {i}");
        assert_eq!(r.dispatched, want, "request {i} dispatched late");
        assert_eq!(r.slot, want);
        assert_eq!(r.status(), Status::Completed);
    }
    assert_eq!(out.end - out.start, 3 * S);
    assert_eq!(out.completed_rate, 10.0);
    assert_eq!(out.not_sent, 0);
    // Never more than one in flight: 45 ms per request, 100 ms apart.
    assert_eq!(fake.max_in_flight(), 1);
}

#[tokio::test(start_paused = true)]
async fn constant_rate_count_is_rate_times_duration_for_odd_rates() {
    for (rate, secs) in [(7.0, 2.0), (3.3, 3.0), (123.0, 1.5)] {
        let fake = Arc::new(Fake::new(1, 1, 1));
        let (out, _) = run(fake, &plan(constant(rate, None), Some(secs), None)).await;
        let want = rate * secs;
        assert!(
            (out.sent as f64 - want).abs() <= 1.0,
            "rate {rate} for {secs}s sent {}",
            out.sent
        );
    }
}

fn gaps_moments(recs: &[(RequestRecord, Phase)]) -> (f64, f64) {
    let g: Vec<f64> = recs
        .windows(2)
        .map(|w| (w[1].0.scheduled - w[0].0.scheduled) as f64 / S as f64)
        .collect();
    let n = g.len() as f64;
    let m = g.iter().sum::<f64>() / n;
    let v = g.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, v)
}

#[tokio::test(start_paused = true)]
async fn poisson_and_gamma_gaps_have_the_right_moments() {
    for (b, seed) in [(1.0, 1u64), (0.25, 2)] {
        let mut means = Vec::new();
        let mut vars = Vec::new();
        // Several seeded runs, as a user would repeat them.
        for run_seed in 0..4 {
            let fake = Arc::new(Fake::new(1, 1, 1));
            let strat = Strategy::Poisson {
                rate: 50.0,
                burstiness: b,
                seed: seed * 100 + run_seed,
                max_concurrency: None,
            };
            let (_, recs) = run(fake, &plan(strat, None, Some(3000))).await;
            assert_eq!(recs.len(), 3000);
            for (r, _) in &recs {
                // The paused clock's timers fire on whole milliseconds.
                assert!(r.dispatched >= r.scheduled && r.dispatched - r.scheduled < MS);
            }
            let (m, v) = gaps_moments(&recs);
            means.push(m);
            vars.push(v);
        }
        let m = means.iter().sum::<f64>() / 4.0;
        let v = vars.iter().sum::<f64>() / 4.0;
        // Mean 1/rate = 0.02 s; variance 1 / (rate^2 b).
        let want_v = 1.0 / (2500.0 * b);
        assert!((m - 0.02).abs() < 0.02 * 0.03, "b={b}: mean {m}");
        assert!(
            (v - want_v).abs() < want_v * 0.12,
            "b={b}: variance {v} vs {want_v}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn burst_sends_n_at_once_and_waits_for_all() {
    let fake = Arc::new(Fake::new(100, 10, 8));
    let (out, recs) = run(
        fake.clone(),
        &plan(Strategy::Burst { count: 64 }, None, None),
    )
    .await;
    assert_eq!(recs.len(), 64);
    assert_eq!(fake.max_in_flight(), 64);
    for (r, _) in &recs {
        assert_eq!(r.dispatched, out.start);
        assert_eq!(r.status(), Status::Completed);
    }
    assert_eq!(out.stop_reason, StopReason::RequestsDone);
    assert_eq!(out.end - out.start, 170 * MS);
}

#[tokio::test(start_paused = true)]
async fn concurrent_never_exceeds_n_and_keeps_n_busy() {
    let fake = Arc::new(Fake::new(37, 3, 5));
    let (out, recs) = run(
        fake.clone(),
        &plan(Strategy::Concurrent { streams: 4 }, Some(2.0), None),
    )
    .await;
    assert_eq!(fake.max_in_flight(), 4);
    // Each stream does back-to-back 49 ms requests: 2 s / 49 ms = 40.8, so 41 per stream,
    // the last one in flight at the deadline and drained to its end.
    assert_eq!(out.sent, 4 * 41);
    assert_eq!(out.completed, 4 * 41);
    assert_eq!(out.incomplete, 0);
    assert_eq!(out.sending_end - out.start, 2 * S);
    assert_eq!(out.end - out.start, 41 * 49 * MS);
    // Closed loop: intended time is when the slot freed.
    for (r, _) in &recs {
        assert_eq!(r.scheduled, r.slot);
    }
}

/// A fake server that answers every request `429` with `Retry-After: 1` after 10 ms.
fn rate_limited() -> Arc<Fake> {
    let mut f = Fake::new(10, 1, 1);
    f.fail = |_| true;
    f.retry_after_ms = Some(1000);
    Arc::new(f)
}

#[tokio::test(start_paused = true)]
async fn closed_loop_streams_wait_as_retry_after_asks() {
    let fake = rate_limited();
    let (out, recs) = run(
        fake.clone(),
        &plan(Strategy::Concurrent { streams: 2 }, Some(3.5), None),
    )
    .await;
    // Each stream: a 10 ms request, then a 1 s pause, from 0, 1.01, 2.02 and 3.03 s; the pause
    // after the last one is cut at the 3.5 s deadline. (Without the pause: 350 per stream.)
    assert_eq!(out.sent, 2 * 4);
    assert_eq!(out.errored, 8);
    let mut starts: Vec<Nanos> = recs.iter().map(|(r, _)| r.dispatched).collect();
    starts.sort_unstable();
    let want: Vec<Nanos> = [0, 0, 1010, 1010, 2020, 2020, 3030, 3030]
        .iter()
        .map(|ms| out.start + ms * MS)
        .collect();
    assert_eq!(starts, want);
    assert!(out.end - out.start <= 3500 * MS, "{}", out.end - out.start);
}

#[tokio::test(start_paused = true)]
async fn open_loop_schedules_ignore_retry_after() {
    let (out, recs) = run(rate_limited(), &plan(constant(10.0, None), Some(1.0), None)).await;
    assert_eq!(out.sent, 10);
    for (i, (r, _)) in recs.iter().enumerate() {
        assert_eq!(r.dispatched, out.start + i as u64 * 100 * MS);
    }
}

#[tokio::test(start_paused = true)]
async fn synchronous_is_one_at_a_time_back_to_back() {
    let fake = Arc::new(Fake::new(20, 5, 5));
    let (out, recs) = run(fake.clone(), &plan(Strategy::Synchronous, None, Some(10))).await;
    assert_eq!(fake.max_in_flight(), 1);
    assert_eq!(out.sent, 10);
    for w in recs.windows(2) {
        assert_eq!(w[1].0.dispatched, w[0].0.end);
    }
    assert_eq!(out.end - out.start, 10 * 40 * MS);
    // The steady state of one stream, Little's law: one request per 40 ms latency. (The
    // token rate, counted from the first token at 20 ms, would read 10 requests over 380 ms.)
    assert!(
        (out.completed_rate - 25.0).abs() < 1e-9,
        "{}",
        out.completed_rate
    );
}

#[tokio::test(start_paused = true)]
async fn throughput_caps_in_flight_and_records_queue_time() {
    let fake = Arc::new(Fake::new(10, 0, 1));
    let strat = Strategy::Throughput { max_concurrency: 8 };
    let (out, recs) = run(fake.clone(), &plan(strat, None, Some(40))).await;
    assert_eq!(fake.max_in_flight(), 8);
    assert_eq!(out.sent, 40);
    for (r, _) in &recs {
        assert_eq!(r.scheduled, out.start, "all due at t0");
        // Wave k (ids 8k..8k+8) gets its slot after k waves of 10 ms.
        assert_eq!(r.slot - r.scheduled, (r.id / 8) * 10 * MS);
    }
}

#[tokio::test(start_paused = true)]
async fn open_loop_cap_queues_and_counts_what_it_could_not_send() {
    // 100 req/s into 2 slots of 100 ms: 20 req/s can be served. Nothing is dropped silently:
    // every due request is either sent (with its queue time) or counted as not sent.
    let fake = Arc::new(Fake::new(100, 0, 1));
    let (out, recs) = run(
        fake.clone(),
        &plan(constant(100.0, Some(2)), Some(1.0), None),
    )
    .await;
    assert_eq!(fake.max_in_flight(), 2);
    assert_eq!(out.sent + out.not_sent, 100);
    assert_eq!(out.sent, 20);
    for (r, _) in &recs {
        assert_eq!(
            r.scheduled,
            out.start + r.id * 10 * MS,
            "intended times kept"
        );
        assert!(r.slot >= r.scheduled);
    }
    assert!(recs.iter().any(|(r, _)| r.slot > r.scheduled));
}

#[tokio::test(start_paused = true)]
async fn time_warmup_and_cooldown_exclude_exactly_their_requests() {
    let fake = Arc::new(Fake::new(10, 0, 1));
    let mut p = plan(constant(10.0, None), Some(10.0), None);
    p.warmup = Some(Transient::Seconds(2.0));
    p.cooldown = Some(Transient::Fraction(0.3));
    let (out, recs) = run(fake, &p).await;
    assert_eq!(recs.len(), 100);
    // Warmup: ended before 2 s (ids 0..20, the last ends at 1.91 s). Cooldown: sent after
    // 7 s (ids 71..100; id 70 is sent at exactly 7 s and counts).
    for (r, ph) in &recs {
        let want = match r.id {
            0..20 => Phase::Warmup,
            20..=70 => Phase::Measured,
            _ => Phase::Cooldown,
        };
        assert_eq!(*ph, want, "request {}", r.id);
    }
    assert_eq!(out.measured, 51);
    assert_eq!(out.warmup_secs(), 2.0);
    assert_eq!(out.cooldown_secs(), 3.0);
    assert_eq!(out.completed_rate, 10.0);
}

#[tokio::test(start_paused = true)]
async fn count_warmup_and_cooldown_exclude_exactly_their_requests() {
    let fake = Arc::new(Fake::new(30, 0, 1));
    let mut p = plan(Strategy::Concurrent { streams: 3 }, None, Some(100));
    p.warmup = Some(Transient::Requests(10));
    p.cooldown = Some(Transient::Requests(20));
    let (out, recs) = run(fake, &p).await;
    assert_eq!(recs.len(), 100);
    // The window opens at request 10's slot and closes at request 80's.
    let slot = |id| recs.iter().find(|(r, _)| r.id == id).map(|(r, _)| r.slot);
    assert_eq!(Some(out.window.open), slot(10));
    assert_eq!(Some(out.window.close), slot(80));
    // Three streams in waves of 30 ms: request 10 starts at 90 ms, request 80 at 780 ms.
    assert_eq!(out.window.open - out.start, 90 * MS);
    assert_eq!(out.window.close - out.start, 780 * MS);
    for (r, ph) in &recs {
        let want = if r.end < out.window.open {
            Phase::Warmup
        } else if r.dispatched > out.window.close {
            Phase::Cooldown
        } else {
            Phase::Measured
        };
        assert_eq!(*ph, want, "request {}", r.id);
    }
    // Warmup: the two waves that ended before 90 ms; cooldown: waves from 810 ms on.
    let count = |ph| recs.iter().filter(|(_, p)| *p == ph).count();
    assert_eq!(count(Phase::Warmup), 6);
    assert_eq!(count(Phase::Cooldown), 19);
    assert_eq!(count(Phase::Measured), 75);
}

#[tokio::test(start_paused = true)]
async fn in_flight_requests_are_cancelled_at_the_end_with_what_they_had() {
    // 10 tokens, one every 100 ms: none can finish in 0.52 s.
    let fake = Arc::new(Fake::new(50, 100, 10));
    let mut p = plan(constant(4.0, None), Some(0.52), None);
    p.limits.drain_timeout = Some(0.0);
    let (out, recs) = run(fake, &p).await;
    assert_eq!(out.sent, 3);
    assert_eq!(out.incomplete, 3);
    assert_eq!(out.abandoned, 0);
    assert_eq!(out.end - out.start, 520 * MS);
    // Request 0 started at 0: tokens at 50, 150, ..., 450 ms -> 5 arrived.
    let r0 = &recs[0].0;
    assert_eq!(r0.status(), Status::Incomplete);
    assert_eq!(r0.chunks.len(), 5);
    assert_eq!(r0.end - out.start, 520 * MS);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_ignores_cancellation_cannot_hang_the_run() {
    let mut f = Fake::new(50, 100, 1000);
    f.ignore_cancel = true;
    let fake = Arc::new(f);
    let mut p = plan(Strategy::Concurrent { streams: 5 }, Some(1.0), None);
    p.limits.drain_timeout = Some(0.0);
    let (out, recs) = run(fake, &p).await;
    assert_eq!(out.sent, 5);
    assert_eq!(out.abandoned, 5);
    assert_eq!(recs.len(), 5, "every request still has a record");
    for (r, _) in &recs {
        assert_eq!(r.status(), Status::Incomplete);
        // Abandoned at stop + grace.
        assert_eq!(r.end - out.start, 3 * S);
    }
}

#[tokio::test(start_paused = true)]
async fn error_limit_stops_the_benchmark() {
    let mut f = Fake::new(10, 0, 1);
    f.fail = |id| id % 2 == 1;
    let mut p = plan(Strategy::Synchronous, Some(100.0), None);
    p.limits.max_errors = Some(5);
    let (out, recs) = run(Arc::new(f), &p).await;
    assert_eq!(out.stop_reason, StopReason::ErrorLimit);
    assert_eq!(out.errored, 5);
    assert_eq!(out.completed, 5);
    // The next synchronous request may already be on its way when the 5th error arrives;
    // it is cancelled, not lost.
    assert!((10..=11).contains(&recs.len()));
    assert_eq!(out.incomplete as usize, recs.len() - 10);
}

#[tokio::test(start_paused = true)]
async fn over_saturation_stops_an_open_loop_benchmark() {
    // Server serves 4 at a time for 100 ms: 40 req/s; asked for 100 req/s.
    let mut f = Fake::new(100, 0, 1);
    f.capacity = Some(Arc::new(tokio::sync::Semaphore::new(4)));
    let mut p = plan(constant(100.0, None), Some(60.0), None);
    p.limits.over_saturation = Some(OverSaturation {
        min_seconds: 3.0,
        window_seconds: 2.0,
        tolerance: 0.1,
    });
    let (out, _) = run(Arc::new(f), &p).await;
    assert_eq!(out.stop_reason, StopReason::OverSaturated);
    let d = out.end - out.start;
    assert!((3 * S..=6 * S).contains(&d), "stopped after {d} ns");

    // The same rule leaves a server that keeps up alone.
    let mut f = Fake::new(100, 0, 1);
    f.capacity = Some(Arc::new(tokio::sync::Semaphore::new(40)));
    let (out, _) = run(Arc::new(f), &p).await;
    assert_eq!(out.stop_reason, StopReason::MaxSeconds);
}

#[derive(Default)]
struct Collect {
    started: Vec<String>,
    records: Vec<usize>,
    finished: Vec<BenchmarkOutcome>,
}

impl Observer for Collect {
    fn benchmark_started(&mut self, _index: usize, _total: usize, plan: &BenchmarkSetup) {
        self.started.push(plan.strategy.label());
    }
    fn record(&mut self, index: usize, _record: RequestRecord, _phase: Phase) {
        self.records.push(index);
    }
    fn benchmark_finished(&mut self, _index: usize, outcome: &BenchmarkOutcome) {
        self.finished.push(outcome.clone());
    }
}

#[tokio::test(start_paused = true)]
async fn sweep_rates_follow_linspace_of_the_measured_probes() {
    let mut f = Fake::new(40, 10, 7); // 100 ms per request
    f.capacity = Some(Arc::new(tokio::sync::Semaphore::new(6)));
    let sched = Scheduler::new(Arc::new(f), Clock::start(), opts());
    let profile = Profile::Sweep(SweepSpec {
        size: 6,
        mode: SweepMode::Guidellm,
        throughput_concurrency: 32,
        open_loop: OpenLoop::Constant,
        max_concurrency: None,
        slo: None,
        slo_tolerance: DEFAULT_SLO_TOLERANCE,
        slo_precision: None,
        capacity_precision: None,
        server_batch: None,
    });
    let limits = Limits {
        max_seconds: Some(2.05),
        ..Limits::default()
    };
    let mut obs = Collect::default();
    let (run, _) = sched
        .run_profile(&profile, &limits, &None, &None, specs(), &mut obs)
        .await
        .expect("runs");
    assert_eq!(run.benchmarks.len(), 6);
    assert!(!run.interrupted);
    let r_sync = run.benchmarks[0].completed_rate;
    let r_thr = run.benchmarks[1].completed_rate;
    // 100 ms per request: 10 req/s synchronous (Little's law: one stream, one request per
    // 100 ms); 6 at a time on the server: 60.
    assert!((r_sync - 10.0).abs() < 1e-9, "{r_sync}");
    assert!((r_thr - 60.0).abs() < 60.0 * 0.03, "{r_thr}");
    let rates: Vec<f64> = run.benchmarks[2..]
        .iter()
        .filter_map(|b| b.strategy.target_rate())
        .collect();
    assert_eq!(rates, sweep_rates(r_sync, r_thr, 6));
    let mut labels = vec!["synchronous".to_string(), "throughput".to_string()];
    labels.extend(rates.iter().map(|r| format!("constant@{r:.2}")));
    assert_eq!(obs.started, labels);
    assert_eq!(obs.finished.len(), 6);
    let sent: u64 = run.benchmarks.iter().map(|b| b.sent).sum();
    assert_eq!(obs.records.len() as u64, sent);
}

#[tokio::test(start_paused = true)]
async fn graceful_stop_closes_the_current_benchmark_as_partial() {
    let fake = Arc::new(Fake::new(50, 50, 10));
    let sched = Scheduler::new(fake, Clock::start(), opts());
    let stop = sched.stop_handle();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(3550)).await;
        stop.stop();
    });
    let profile = Profile::Fixed {
        benchmarks: vec![
            constant(5.0, None),
            constant(10.0, None),
            constant(20.0, None),
        ],
    };
    let limits = Limits {
        max_seconds: Some(2.0),
        ..Limits::default()
    };
    let mut obs = Collect::default();
    let (run, _) = sched
        .run_profile(&profile, &limits, &None, &None, specs(), &mut obs)
        .await
        .expect("runs");
    assert!(run.interrupted);
    assert_eq!(run.benchmarks.len(), 2);
    assert_eq!(run.benchmarks[0].stop_reason, StopReason::MaxSeconds);
    // The first drained its last request (500 ms long) after its 2 s.
    let first = &run.benchmarks[0];
    assert_eq!(first.sending_end - first.start, 2 * S);
    assert_eq!(first.incomplete, 0);
    let partial = &run.benchmarks[1];
    assert!(partial.is_partial());
    // Ctrl-C cancels at once, no drain: it ends at the stop, 3.55 s on the run clock.
    assert_eq!(partial.end, 3550 * MS);
    assert_eq!(partial.sending_end, 3550 * MS);
    // 10 req/s from its start (0-based: the request due at the stop instant was not sent).
    let ms = (partial.end - partial.start) / MS;
    assert_eq!(partial.sent, ms.div_ceil(100));
    assert_eq!(
        obs.finished.len(),
        2,
        "the partial benchmark was handed over"
    );
}

#[tokio::test(start_paused = true)]
async fn progress_snapshots_describe_the_running_benchmark() {
    let fake = Arc::new(Fake::new(100, 50, 5));
    let sched = Scheduler::new(fake, Clock::start(), opts());
    let mut rx = sched.progress();
    let mut p = plan(constant(10.0, None), Some(4.0), None);
    p.warmup = Some(Transient::Seconds(1.0));
    let watcher = tokio::spawn(async move {
        let mut seen = Vec::new();
        while rx.changed().await.is_ok() {
            let snap = rx.borrow_and_update().clone();
            if let Some(s) = snap {
                let done = s.finished;
                seen.push(s);
                if done {
                    break;
                }
            }
        }
        seen
    });
    let (out, _) = sched
        .run_benchmark(0, 1, &p, specs(), |_, _| {})
        .await
        .expect("runs");
    let seen = watcher.await.expect("watcher");
    assert!(seen
        .iter()
        .any(|s| s.phase == bench_scheduler::ProgressPhase::Warmup));
    assert!(seen
        .iter()
        .any(|s| s.phase == bench_scheduler::ProgressPhase::Measuring));
    let last = seen.last().expect("snapshots");
    assert!(last.finished);
    assert_eq!(last.label, "constant@10.00");
    assert_eq!(last.completed, out.completed);
    let mid = seen
        .iter()
        .find(|s| s.elapsed == Duration::from_millis(2250))
        .expect("a 2.25 s snapshot");
    assert_eq!(mid.in_flight, 3, "requests of 300 ms at 10/s");
    assert_eq!(mid.remaining, Some(Duration::from_millis(1750)));
    let ttft = last.mean_ttft.expect("ttft");
    assert!((ttft - 0.1).abs() < 1e-9);
    let itl = last.mean_itl.expect("itl");
    assert!((itl - 0.05).abs() < 1e-9);
}

#[test]
fn plans_that_cannot_work_are_rejected() {
    let fake = Arc::new(Fake::new(1, 1, 1));
    let _ = fake;
    let bad = [
        plan(constant(10.0, None), None, None), // never ends
        {
            let mut p = plan(constant(10.0, None), None, Some(100));
            p.cooldown = Some(Transient::Seconds(5.0)); // end unknown in advance
            p
        },
        {
            let mut p = plan(constant(10.0, None), Some(10.0), None);
            p.warmup = Some(Transient::Seconds(6.0));
            p.cooldown = Some(Transient::Seconds(4.0)); // nothing left
            p
        },
        {
            let mut p = plan(Strategy::Burst { count: 10 }, None, None);
            p.warmup = Some(Transient::Requests(10));
            p
        },
    ];
    for p in bad {
        let profile = Profile::Fixed {
            benchmarks: vec![p.strategy.clone()],
        };
        assert!(
            Scheduler::<Fake>::validate_profile(&profile, &p.limits, &p.warmup, &p.cooldown)
                .is_err(),
            "{p:?}"
        );
    }
}

/// An observer that judges the SLO as the CLI's report does: here, met at offered rates up to
/// `limit` (and by every probe).
struct Judge {
    limit: f64,
    rates: Vec<Option<f64>>,
}

impl Observer for Judge {
    fn benchmark_started(&mut self, _index: usize, _total: usize, plan: &BenchmarkSetup) {
        self.rates.push(plan.strategy.target_rate());
    }
    fn record(&mut self, _index: usize, _record: RequestRecord, _phase: Phase) {}
    fn slo_met(&mut self, index: usize) -> Option<bool> {
        Some(self.rates[index].is_none_or(|r| r <= self.limit))
    }
}

#[tokio::test(start_paused = true)]
async fn slo_search_bisects_on_the_observers_verdicts() {
    let sched = Scheduler::new(Arc::new(Fake::new(10, 0, 1)), Clock::start(), opts());
    let profile = Profile::Sweep(SweepSpec {
        size: 5,
        mode: SweepMode::Adaptive,
        throughput_concurrency: 4,
        open_loop: OpenLoop::Constant,
        max_concurrency: None,
        slo: Some("ttft_p99=100".parse().expect("slo")),
        slo_tolerance: 0.02,
        slo_precision: None,
        capacity_precision: None,
        server_batch: None,
    });
    let limits = Limits {
        max_seconds: Some(0.5),
        ..Limits::default()
    };
    let mut judge = Judge {
        limit: 150.0,
        rates: Vec::new(),
    };
    let (run, _) = sched
        .run_profile(&profile, &limits, &None, &None, specs(), &mut judge)
        .await
        .expect("runs");
    let cap = run.capacity.expect("answer");
    let b = cap.slo_bracket.expect("bracket");
    let (low, high) = (b.low.expect("low"), b.high.expect("high"));
    assert!(low <= 150.0 && 150.0 < high, "{b:?}");
    assert!(high - low <= 0.02 * low, "{b:?}");
    assert_eq!(cap.slo_max_requests_per_s, Some(low));
    let refine = run
        .roles
        .iter()
        .filter(|r| **r == SweepRole::Refine)
        .count();
    assert_eq!(refine as u32, b.steps);
    assert!(b.steps > 0);
}

#[tokio::test(start_paused = true)]
async fn adaptive_sweep_climbs_the_ladder_and_places_rates_around_the_capacity() {
    let mut f = Fake::new(40, 10, 7); // 100 ms per request, 6 at a time on the server
    f.capacity = Some(Arc::new(tokio::sync::Semaphore::new(6)));
    let sched = Scheduler::new(Arc::new(f), Clock::start(), opts());
    let profile = Profile::Sweep(SweepSpec {
        size: 6,
        mode: SweepMode::Adaptive,
        throughput_concurrency: 512,
        open_loop: OpenLoop::Constant,
        max_concurrency: None,
        slo: None,
        slo_tolerance: DEFAULT_SLO_TOLERANCE,
        slo_precision: None,
        capacity_precision: None,
        server_batch: None,
    });
    let limits = Limits {
        max_seconds: Some(4.05),
        ..Limits::default()
    };
    let mut obs = Collect::default();
    let (run, _) = sched
        .run_profile(&profile, &limits, &None, &None, specs(), &mut obs)
        .await
        .expect("runs");
    let labels: Vec<String> = run.benchmarks.iter().map(|b| b.strategy.label()).collect();
    assert_eq!(
        &labels[..5],
        [
            "synchronous",
            "concurrent@2",
            "concurrent@4",
            "concurrent@8",
            "concurrent@16"
        ],
        "{labels:?}"
    );
    assert_eq!(run.roles[1..5], [SweepRole::Ladder; 4]);
    // Rungs last a quarter of the benchmark length.
    let len = |i: usize| (run.benchmarks[i].end - run.benchmarks[i].start) as f64 / 1e9;
    assert!((len(1) - 4.05 / 4.0).abs() < 0.15, "{}", len(1));
    let cap = run.capacity.clone().expect("an answer");
    // 6 slots of 100 ms: 60 req/s at 8 streams and more; the first rung that reaches it wins.
    assert_eq!(cap.max_measured_by, "concurrent@8");
    assert!((cap.max_requests_per_s - 60.0).abs() < 6.0, "{cap:?}");
    let r_sync = run.benchmarks[0].rates.requests_per_s;
    let rates: Vec<f64> = run.benchmarks[5..]
        .iter()
        .filter_map(|b| b.strategy.target_rate())
        .collect();
    assert_eq!(rates, capacity_rates(r_sync, cap.max_requests_per_s, 4));
    assert!(rates.windows(2).all(|w| w[1] > w[0]));
    assert_eq!(obs.finished.len(), 9);
}

#[tokio::test(start_paused = true)]
async fn the_drain_follows_requests_to_their_end_up_to_its_bound() {
    // 10 tokens 100 ms apart after 50 ms: each request lasts 950 ms.
    let p = plan(constant(4.0, None), Some(0.52), None);
    let (out, recs) = run(Arc::new(Fake::new(50, 100, 10)), &p).await;
    assert_eq!((out.sent, out.completed, out.incomplete), (3, 3, 0));
    assert_eq!(out.sending_end - out.start, 520 * MS);
    // The last, sent at 500 ms, ends at 1450 ms.
    assert_eq!(out.end - out.start, 1450 * MS);
    assert!(recs.iter().all(|(_, ph)| *ph == Phase::Measured));
    // Every request followed to its end: the window's rate is the rate sent.
    assert!(
        (out.completed_rate - 4.0).abs() < 1e-9,
        "{}",
        out.completed_rate
    );

    // A bound of 0.7 s: the requests sent at 0 and 250 ms finish (950, 1200 ms), the one
    // sent at 500 ms is cancelled at 1220 ms with what it had: incomplete, not failed.
    let mut p = plan(constant(4.0, None), Some(0.52), None);
    p.limits.drain_timeout = Some(0.7);
    let (out, recs) = run(Arc::new(Fake::new(50, 100, 10)), &p).await;
    assert_eq!((out.completed, out.incomplete, out.errored), (2, 1, 0));
    assert_eq!(out.end - out.start, 1220 * MS);
    let last = &recs[2].0;
    assert_eq!(last.status(), Status::Incomplete);
    assert_eq!(last.chunks.len(), 7, "tokens at 550, 650, ..., 1150 ms");
}

#[tokio::test(start_paused = true)]
async fn ctrl_c_during_the_drain_cancels_at_once() {
    let sched = Scheduler::new(Arc::new(Fake::new(50, 100, 10)), Clock::start(), opts());
    let stop = sched.stop_handle();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        stop.stop();
    });
    let p = plan(constant(4.0, None), Some(0.52), None);
    let (out, _) = sched
        .run_benchmark(0, 1, &p, specs(), |_, _| {})
        .await
        .expect("valid plan");
    assert_eq!(out.stop_reason, StopReason::Interrupted);
    assert_eq!(out.end, 700 * MS);
    assert_eq!(out.sending_end, 520 * MS);
    assert_eq!((out.completed, out.incomplete), (0, 3));
}

/// Ends the first benchmark as precise at the 10th record, as of that record's end.
struct Precise {
    stop: bench_scheduler::StopHandle,
    seen: usize,
    at: Nanos,
    finished: Vec<BenchmarkOutcome>,
}

impl Observer for Precise {
    fn record(&mut self, index: usize, record: RequestRecord, _phase: Phase) {
        self.seen += 1;
        if index == 0 && self.seen == 10 {
            self.at = record.end;
            self.stop.precise(index, record.end);
        }
    }
    fn benchmark_finished(&mut self, _index: usize, outcome: &BenchmarkOutcome) {
        self.finished.push(outcome.clone());
    }
}

#[tokio::test(start_paused = true)]
async fn a_precise_stop_ends_one_benchmark_at_its_instant_and_the_run_goes_on() {
    let sched = Scheduler::new(Arc::new(Fake::new(30, 5, 4)), Clock::start(), opts());
    let limits = Limits {
        max_seconds: Some(1.0),
        precision: Some(bench_core::Precision {
            target: 0.05,
            budget_s: 10.0,
        }),
        ..Limits::default()
    };
    let profile = Profile::Fixed {
        benchmarks: vec![constant(10.0, None), constant(10.0, None)],
    };
    let mut obs = Precise {
        stop: sched.stop_handle(),
        seen: 0,
        at: 0,
        finished: Vec::new(),
    };
    let (out, _) = sched
        .run_profile(&profile, &limits, &None, &None, specs(), &mut obs)
        .await
        .expect("valid");
    assert!(!out.interrupted);
    let [first, second] = &obs.finished[..] else {
        panic!("{} benchmarks", obs.finished.len())
    };
    assert_eq!(first.stop_reason, StopReason::Precise);
    assert_eq!(
        first.sending_end, obs.at,
        "the window closes at the stated instant"
    );
    assert_eq!(first.window.close, obs.at);
    // 10 requests 100 ms apart, the 10th ended 45 ms after its send: long before the budget.
    assert_eq!(first.sent, 10);
    // The second is not stopped by the first's call: it runs to its budget, not its least
    // length (max_seconds).
    assert_eq!(second.stop_reason, StopReason::MaxSeconds);
    assert_eq!(second.end - second.start, 10 * S);
}
