//! Tests of the session figures ([`crate::figures::turns`]) through the accumulator that
//! computes them (a module of its own: the accumulator imports the sessions' figures).

use std::time::SystemTime;

use bench_core::{
    Chunk, Outcome, RequestRecord, SessionCounts, SessionTurn, Strategy, TokenSource,
};

use crate::figures::options::StatsOptions;
use crate::figures::stats::{Accumulator, BenchmarkMeta};

use crate::figures::compact::Compact;
use crate::figures::model::{SessionReport, TURN_ROWS};

const MS: u64 = 1_000_000;

/// Turn `turn` of `turns` of session `session` (started at `start_ms`): dispatched at
/// `at_ms`, chunks every `gap_ms` after a TTFT of `ttft_ms`, `prompt` tokens.
#[allow(clippy::too_many_arguments)]
fn turn(
    session: u64,
    turn: u32,
    turns: u32,
    start_ms: u64,
    at_ms: u64,
    ttft_ms: u64,
    gap_ms: u64,
    n: u32,
    prompt: u32,
    outcome: Outcome,
) -> RequestRecord {
    let chunks: Vec<Chunk> = (0..n as u64)
        .map(|i| Chunk::answer((at_ms + ttft_ms + i * gap_ms) * MS, 1))
        .collect();
    let end = chunks.last().map_or(at_ms * MS, |c| c.at) + MS;
    RequestRecord {
        target: None,
        model: None,
        cached_tokens: None,
        reasoning: None,
        images: None,
        id: 0,
        scheduled: at_ms * MS,
        slot: at_ms * MS,
        dispatched: at_ms * MS,
        headers: None,
        chunks,
        end,
        prompt_tokens: prompt,
        prompt_tokens_source: TokenSource::Usage,
        output_tokens: n,
        output_tokens_source: TokenSource::Usage,
        requested_output_tokens: None,
        outcome,
        session: Some(SessionTurn {
            session,
            turn,
            turns,
            start: start_ms * MS,
            kind: bench_core::TurnKind::User,
            tool_call: false,
            replica: None,
        }),
    }
}

fn finish(recs: Vec<RequestRecord>, counts: Option<SessionCounts>) -> SessionReport {
    let mut acc = Accumulator::new(&StatsOptions::default());
    for r in recs {
        acc.add(r);
    }
    let mut meta = BenchmarkMeta::new(
        Strategy::Synchronous,
        0,
        100_000 * MS,
        SystemTime::UNIX_EPOCH,
    );
    meta.sessions = counts;
    acc.finish(meta).sessions.expect("sessions")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn figures_are_grouped_by_turn_from_hand_built_sessions() {
    let ok = || Outcome::Completed;
    let recs = vec![
        // Session 0: three turns, TTFT 100 / 20 / 30 ms, prompts 10 / 30 / 50.
        turn(0, 1, 3, 0, 0, 100, 10, 3, 10, ok()),
        turn(0, 2, 3, 0, 1000, 20, 10, 3, 30, ok()),
        turn(0, 3, 3, 0, 2000, 30, 10, 3, 50, ok()),
        // Session 1: turn 1 (TTFT 300 ms, gaps 20 ms), turn 2 errors: never completes.
        turn(1, 1, 3, 500, 500, 300, 20, 5, 12, ok()),
        turn(
            1,
            2,
            3,
            500,
            1500,
            0,
            0,
            0,
            40,
            Outcome::Http {
                status: 500,
                body: String::new(),
                retry_after_ms: None,
            },
        ),
    ];
    let counts = SessionCounts {
        started: 2,
        completed: 1,
        cut: 0,
        errored: 1,
    };
    let s = finish(recs, Some(counts));
    assert_eq!(s.counts, counts);
    assert_eq!(s.turns.len(), 3);
    let [t1, t2, t3] = [&s.turns[0], &s.turns[1], &s.turns[2]];
    assert_eq!((t1.turn, t2.turn, t3.turn), (1, 2, 3));
    assert!(!t3.and_later);
    assert_eq!((t1.requests.completed, t1.requests.total), (2, 2));
    assert_eq!((t2.requests.completed, t2.requests.errored), (1, 1));
    assert!(close(t1.ttft_ms.mean, 200.0) && close(t1.ttft_ms.max, 300.0));
    assert!(close(t2.ttft_ms.mean, 20.0) && t2.ttft_ms.count == 1);
    assert!(close(t3.ttft_ms.mean, 30.0));
    // Turn 1 pools the gaps: 2 of 10 ms, 4 of 20 ms; TPOT per request: 10 and 20 ms.
    assert_eq!(t1.itl_ms.count, 6);
    assert!(close(t1.itl_ms.mean, 100.0 / 6.0));
    assert!(close(t1.tpot_ms.mean, 15.0));
    // E2EL: TTFT + (n - 1) gaps + 1 ms.
    assert!(close(t1.e2el_ms.min, 121.0) && close(t1.e2el_ms.max, 381.0));
    // Prompt tokens of the completed requests only (the errored turn 2 is left out).
    assert_eq!(
        (
            t1.prompt_tokens.total,
            t1.prompt_tokens.min,
            t1.prompt_tokens.max
        ),
        (22, 10, 12)
    );
    assert!(close(t1.prompt_tokens.mean, 11.0));
    assert_eq!((t2.prompt_tokens.count, t2.prompt_tokens.total), (1, 30));
    assert_eq!(t1.output_tokens.total, 8);
    // Only session 0 completed: first dispatch 0, last turn's end 2000 + 30 + 20 + 1 ms.
    assert_eq!(s.duration_ms.count, 1);
    assert!(close(s.duration_ms.mean, 2051.0));
}

#[test]
fn turns_past_the_last_row_are_pooled_and_the_window_applies() {
    let mut recs = Vec::new();
    // One session of 12 turns, turn k dispatched at k s with a TTFT of k ms.
    for k in 1..=12u32 {
        let at = k as u64 * 1000;
        recs.push(turn(
            7,
            k,
            12,
            1000,
            at,
            k as u64,
            1,
            2,
            k,
            Outcome::Completed,
        ));
    }
    let mut acc = Accumulator::new(&StatsOptions::default());
    for r in recs {
        acc.add(r);
    }
    let mut meta = BenchmarkMeta::new(
        Strategy::Synchronous,
        0,
        20_000 * MS,
        SystemTime::UNIX_EPOCH,
    );
    // Turn 1 ends before the window opens (excluded by the one rule, Window::phase).
    meta.window.open = 1500 * MS;
    let s = acc
        .finish(meta)
        .sessions
        .expect("turns make a session section");
    // No scheduler counts given: zeros, the turn rows still come from the records.
    assert_eq!(s.counts, SessionCounts::default());
    assert_eq!(s.turns.len(), TURN_ROWS as usize);
    let first = &s.turns[0];
    assert_eq!(
        (first.requests.excluded_warmup, first.requests.total),
        (1, 0)
    );
    assert_eq!(first.ttft_ms.count, 0);
    let last = s.turns.last().expect("rows");
    assert_eq!(last.turn, TURN_ROWS);
    assert!(last.and_later);
    assert!(s.turns[..9].iter().all(|t| !t.and_later));
    // Turns 10, 11, 12 pooled: TTFT 10, 11, 12 ms.
    assert_eq!(last.requests.completed, 3);
    assert!(close(last.ttft_ms.mean, 11.0));
    assert_eq!(last.prompt_tokens.total, 33);
    // The session duration is not windowed: 1 s to 12 s + 12 + 1 + 1 ms.
    assert!(close(s.duration_ms.mean, 11_014.0));
}

#[test]
fn single_requests_have_no_session_section() {
    let mut r = turn(0, 1, 1, 0, 0, 5, 1, 2, 3, Outcome::Completed);
    r.session = None;
    let mut acc = Accumulator::new(&StatsOptions::default());
    acc.add(r);
    let b = acc.finish(BenchmarkMeta::new(
        Strategy::Synchronous,
        0,
        100 * MS,
        SystemTime::UNIX_EPOCH,
    ));
    assert!(b.sessions.is_none());
}

#[test]
fn the_compact_entry_does_not_grow() {
    // The turn index lives in the padding of the compact per-request entry.
    assert!(
        std::mem::size_of::<Compact>() <= 128,
        "{}",
        std::mem::size_of::<Compact>()
    );
}

/// A tool-result request has its own row after its turn's user row, and a session ends with
/// the tool result's reply when its last turn made a tool call; per session, the cached share
/// and the replicas named come from the completed requests.
#[test]
fn tool_result_rows_and_the_per_session_cache() {
    let ok = || Outcome::Completed;
    let with = |mut r: RequestRecord, kind, call, replica, cached| {
        if let Some(s) = &mut r.session {
            s.kind = kind;
            s.tool_call = call;
            s.replica = replica;
        }
        r.cached_tokens = Some(cached);
        r
    };
    use bench_core::TurnKind::{ToolResult, User};
    let recs = vec![
        // Session 0: turn 1, a tool call (prompt 10), its result (20), turn 2 (40); replica 0.
        with(
            turn(0, 1, 2, 0, 0, 10, 10, 3, 10, ok()),
            User,
            true,
            Some(0),
            0,
        ),
        with(
            turn(0, 1, 2, 0, 100, 10, 10, 3, 20, ok()),
            ToolResult,
            false,
            Some(0),
            10,
        ),
        with(
            turn(0, 2, 2, 0, 200, 10, 10, 3, 40, ok()),
            User,
            false,
            Some(0),
            20,
        ),
        // Session 1: turn 1 on replica 0, turn 2 (a tool call, then its result) on replica 1.
        with(
            turn(1, 1, 2, 0, 0, 10, 10, 3, 10, ok()),
            User,
            false,
            Some(0),
            0,
        ),
        with(
            turn(1, 2, 2, 0, 300, 10, 10, 3, 30, ok()),
            User,
            true,
            Some(1),
            0,
        ),
        with(
            turn(1, 2, 2, 0, 400, 10, 10, 3, 50, ok()),
            ToolResult,
            false,
            Some(1),
            10,
        ),
    ];
    let s = finish(recs, None);
    let rows: Vec<(u32, bench_core::TurnKind, u64)> = s
        .turns
        .iter()
        .map(|t| (t.turn, t.kind, t.requests.completed))
        .collect();
    assert_eq!(
        rows,
        [
            (1, User, 2),
            (1, ToolResult, 1),
            (2, User, 2),
            (2, ToolResult, 1)
        ]
    );
    assert_eq!(
        s.duration_ms.count, 2,
        "each session ends once, with its last reply"
    );
    let c = s.cache.expect("cache");
    assert_eq!((c.sessions, c.one_replica), (2, Some(1)));
    let row = |k: usize| {
        let r = &c.per_session[k];
        (
            r.session,
            r.requests,
            r.turns,
            r.prompt_tokens,
            r.cached_tokens,
            r.replicas,
        )
    };
    assert_eq!(row(0), (0, 3, 2, 70, 30, 1));
    assert_eq!(row(1), (1, 3, 2, 90, 10, 2));
    assert!(close(
        c.cached_share_mean,
        (30.0 / 70.0 + 10.0 / 90.0) / 2.0
    ));
    assert!(close(c.cached_share_overall, 40.0 / 160.0));
}
