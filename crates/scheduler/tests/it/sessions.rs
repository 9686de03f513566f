//! Sessions on tokio's paused clock: users running sessions back to back, think time excluded
//! from latency, `--max-requests` counting turns, sessions cut by the end of a benchmark or
//! ended by an error, and the history growing turn by turn.

use crate::support;

use std::sync::Arc;

use bench_core::{
    Clock, ConversationSpec, RequestRecord, RequestSpec, SessionCounts, Strategy, ThinkTime,
};
use bench_profile::Limits;
use bench_scheduler::{
    BenchmarkOutcome, BenchmarkSetup, Pacing, Phase, Scheduler, SchedulerOptions, StopReason, Work,
};
use support::Fake;

const MS: u64 = 1_000_000;

/// Endless three-turn conversations: user messages of 5 tokens, 4 output tokens each.
fn sessions() -> impl Iterator<Item = Work> + Send + 'static {
    let turn = RequestSpec {
        prompt: "hello".into(),
        prompt_tokens: 5,
        output_tokens: Some(4),
        at: None,
        batch: Vec::new(),
        images: Vec::new(),
    };
    let conv = Arc::new(ConversationSpec {
        system: "sys".into(),
        system_tokens: 2,
        turns: vec![turn.clone(), turn.clone(), turn],
        tools: None,
    });
    std::iter::repeat_with(move || Work::Session(conv.clone()))
}

async fn run(
    fake: Arc<Fake>,
    strategy: Strategy,
    max_seconds: Option<f64>,
    max_requests: Option<u64>,
) -> (BenchmarkOutcome, Vec<(RequestRecord, Phase)>) {
    let opts = SchedulerOptions {
        pacing: Pacing::Runtime,
        think_time: ThinkTime::Fixed { seconds: 1.0 },
        ..SchedulerOptions::default()
    };
    let plan = BenchmarkSetup {
        strategy,
        limits: Limits {
            max_seconds,
            max_requests,
            ..Limits::default()
        },
        warmup: None,
        cooldown: None,
    };
    let sched = Scheduler::new(fake, Clock::start(), opts);
    let mut recs = Vec::new();
    let (out, _) = sched
        .run_benchmark(0, 1, &plan, sessions(), |r, p| recs.push((r, p)))
        .await
        .expect("valid plan");
    recs.sort_by_key(|(r, _)| r.id);
    (out, recs)
}

fn counts(started: u64, completed: u64, cut: u64, errored: u64) -> Option<SessionCounts> {
    Some(SessionCounts {
        started,
        completed,
        cut,
        errored,
    })
}

#[tokio::test(start_paused = true)]
async fn concurrent_users_run_sessions_back_to_back_with_think_time_outside_latency() {
    // Each turn takes 100 + 3 x 10 = 130 ms; a session 3 x 130 + 2 x 1000 = 2390 ms.
    let fake = Arc::new(Fake::new(100, 10, 4));
    let (out, recs) = run(
        fake.clone(),
        Strategy::Concurrent { streams: 2 },
        None,
        Some(12),
    )
    .await;
    assert_eq!(out.sent, 12);
    assert_eq!(out.sessions, counts(4, 4, 0, 0));
    assert!(fake.max_in_flight() <= 2);
    for (r, _) in &recs {
        // Latency runs from the intended send time, which is the end of the pause.
        assert_eq!(r.end - r.scheduled, 130 * MS, "{r:?}");
        assert_eq!(r.dispatched, r.scheduled);
    }
    // Dispatch times: both users at 0, 1130 and 2260 ms, then their second sessions at 2390.
    let mut at: Vec<u64> = fake.log().iter().map(|l| l.3 / MS).collect();
    at.sort_unstable();
    assert_eq!(
        at,
        vec![0, 0, 1130, 1130, 2260, 2260, 2390, 2390, 3520, 3520, 4650, 4650]
    );
    // The history grows: turn k's prompt counts the system prompt, k + 1 user messages and k
    // replies of 4 tokens.
    let mut prompts: Vec<u32> = recs.iter().map(|(r, _)| r.prompt_tokens).collect();
    prompts.sort_unstable();
    prompts.dedup();
    assert_eq!(prompts, vec![2 + 5, 2 + 5 + 4 + 5, 2 + 5 + 4 + 5 + 4 + 5]);
    // Every record knows its session and turn; each session's turns share the first turn's
    // dispatch as the session start, and turn k has the prompt of turn k.
    let mut seen = std::collections::BTreeMap::<u64, Vec<(u32, u64)>>::new();
    for (r, _) in &recs {
        let s = r.session.expect("a session turn");
        assert_eq!(s.turns, 3);
        assert_eq!(r.prompt_tokens, 2 + 5 * s.turn + 4 * (s.turn - 1), "{r:?}");
        seen.entry(s.session)
            .or_default()
            .push((s.turn, s.start / MS));
    }
    let starts: Vec<u64> = seen.values().map(|v| v[0].1).collect();
    assert_eq!(seen.len(), 4);
    assert_eq!(starts, vec![0, 0, 2390, 2390]);
    for turns in seen.values() {
        assert_eq!(turns.iter().map(|t| t.0).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert!(turns.iter().all(|t| t.1 == turns[0].1));
    }
}

#[tokio::test(start_paused = true)]
async fn max_requests_counts_turns_and_cuts_the_sessions_it_ends() {
    let fake = Arc::new(Fake::new(100, 10, 4));
    let (out, recs) = run(fake, Strategy::Concurrent { streams: 2 }, None, Some(10)).await;
    assert_eq!((out.sent, recs.len()), (10, 10));
    assert_eq!(out.stop_reason, StopReason::RequestsDone);
    // Sessions 1 and 2 complete (6 turns); 3 and 4 send 2 turns each, then the count is used.
    assert_eq!(out.sessions, counts(4, 2, 2, 0));
}

#[tokio::test(start_paused = true)]
async fn sessions_running_at_the_deadline_are_cut() {
    // One new session per second for 2.5 s: the first completes at 2.39 s, the second is in
    // its second pause, the third in its first.
    let fake = Arc::new(Fake::new(100, 10, 4));
    let (out, recs) = run(
        fake,
        Strategy::Constant {
            rate: 1.0,
            max_concurrency: None,
        },
        Some(2.5),
        None,
    )
    .await;
    assert_eq!(out.stop_reason, StopReason::MaxSeconds);
    assert_eq!(out.sessions, counts(3, 1, 2, 0));
    assert_eq!(recs.len(), 3 + 2 + 1);
}

#[tokio::test(start_paused = true)]
async fn a_failed_turn_ends_its_session_as_errored() {
    let mut fake = Fake::new(100, 10, 4);
    fake.fail = |id| id == 1;
    let (out, recs) = run(
        Arc::new(fake),
        Strategy::Concurrent { streams: 1 },
        None,
        Some(4),
    )
    .await;
    // Turn ids 0, 1 (fails: the session ends), then a new session: 2, 3.
    assert_eq!(out.sent, 4);
    let turns: Vec<(u64, u32)> = recs
        .iter()
        .map(|(r, _)| r.session.map(|s| (s.session, s.turn)).expect("a turn"))
        .collect();
    assert_eq!(turns, vec![(0, 1), (0, 2), (1, 1), (1, 2)]);
    assert_eq!(out.sessions, counts(2, 0, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn single_requests_report_no_sessions() {
    let fake = Arc::new(Fake::new(10, 1, 2));
    let sched = Scheduler::new(
        fake,
        Clock::start(),
        SchedulerOptions {
            pacing: Pacing::Runtime,
            ..SchedulerOptions::default()
        },
    );
    let plan = BenchmarkSetup {
        strategy: Strategy::Concurrent { streams: 1 },
        limits: Limits {
            max_requests: Some(3),
            ..Limits::default()
        },
        warmup: None,
        cooldown: None,
    };
    let (out, _) = sched
        .run_benchmark(0, 1, &plan, support::specs(), |_, _| {})
        .await
        .expect("plan");
    assert_eq!((out.sent, out.sessions), (3, None));
}
