//! Reasoning responses against the simulator, whose chat responses spend their first
//! `reasoning_tokens` output tokens in `reasoning_content`: which chunks the worker marks as
//! reasoning, its reasoning-token count and where it came from, and the phase boundary
//! against the simulator's log of when it wrote each token.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use bench_core::{
    Backend, CancellationToken, Clock, Dispatch, Outcome, ReasoningTokens, RequestRecord,
    RequestSpec, TokenSource,
};
use bench_mock::{MockConfig, MockServer, RequestLogEntry};
use bench_worker::{BackendKind, Worker, WorkerConfig};

const REASONING: u32 = 5;

async fn server(reasoning_tokens: u32, timed: bool) -> MockServer {
    let base = if timed {
        MockConfig {
            log_token_times: true,
            step_base_ms: 4.0,
            step_per_seq_ms: 0.0,
            prefill_overhead_ms: 10.0,
            prefill_rate: 0.0,
            ..MockConfig::default()
        }
    } else {
        MockConfig::zero_delay()
    };
    MockServer::start(MockConfig {
        record_requests: true,
        reasoning_tokens,
        ..base
    })
    .await
    .unwrap()
}

async fn worker(srv: &MockServer, backend: BackendKind, include_usage: bool) -> Worker {
    Worker::new(WorkerConfig {
        target: srv.url(),
        backend,
        include_usage,
        model: Some(srv.model().to_owned()),
        ..WorkerConfig::default()
    })
    .await
    .unwrap()
}

async fn send(w: &Worker, clock: Clock, id: u64, out: u32) -> RequestRecord {
    let spec = RequestSpec {
        prompt: "The quick brown fox jumps over the lazy dog".into(),
        prompt_tokens: 9,
        at: None,
        batch: Vec::new(),
        images: Vec::new(),
        output_tokens: Some(out),
    };
    let d = Dispatch {
        id,
        clock,
        scheduled: clock.now(),
        slot: clock.now(),
    };
    w.send(spec, d, CancellationToken::new()).await
}

fn log(srv: &MockServer) -> Vec<RequestLogEntry> {
    let mut log = srv.request_log();
    log.sort_by_key(|e| e.id);
    log
}

/// The closed form: of `n` output tokens the first `min(R, n)` are reasoning chunks, the rest
/// answer chunks; usage says `min(R, n)` reasoning tokens and the log agrees.
#[tokio::test]
async fn reasoning_chunks_and_tokens_equal_the_closed_form() {
    let srv = server(REASONING, false).await;
    let w = worker(&srv, BackendKind::OpenAiChat, true).await;
    let clock = Clock::start();
    let outs = [16u32, 5, 3, 1];
    let mut recs = Vec::new();
    for (i, &n) in outs.iter().enumerate() {
        recs.push(send(&w, clock, i as u64, n).await);
    }
    for ((r, e), &n) in recs.iter().zip(log(&srv)).zip(&outs) {
        let reasoning = REASONING.min(n);
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!(e.reasoning_tokens, reasoning, "the log");
        assert_eq!(r.chunks.len() as u32, n);
        let flags: Vec<bool> = r.chunks.iter().map(|c| c.reasoning).collect();
        let want: Vec<bool> = (0..n).map(|i| i < reasoning).collect();
        assert_eq!(flags, want, "n={n}");
        assert_eq!(
            r.reasoning,
            Some(ReasoningTokens {
                tokens: reasoning,
                source: TokenSource::Usage
            })
        );
        assert_eq!(r.output_tokens, n);
        assert_eq!(r.answer_tokens(), n - reasoning);
        let first_answer = r.chunks.get(reasoning as usize).map(|c| c.at);
        assert_eq!(r.first_answer(), first_answer, "TTFO's end, n={n}");
    }
    srv.shutdown().await;
}

/// Without usage, the reasoning count comes from the tokenizer when there is one (each
/// simulator word is one token) and from the reasoning chunks otherwise, and says so.
#[tokio::test]
async fn without_usage_reasoning_is_counted_and_says_how() {
    let srv = server(REASONING, false).await;
    let plain = worker(&srv, BackendKind::OpenAiChat, false).await;
    let tk = bench_tokenizer::Tokenizer::builtin();
    let counting = worker(&srv, BackendKind::OpenAiChat, false)
        .await
        .with_output_counter(Arc::new(move |t: &str| tk.count(t)));
    let clock = Clock::start();
    let r = send(&plain, clock, 0, 12).await;
    assert_eq!(
        r.reasoning,
        Some(ReasoningTokens {
            tokens: REASONING,
            source: TokenSource::Chunks
        })
    );
    assert_eq!((r.output_tokens, r.answer_tokens()), (12, 7));
    let r = send(&counting, clock, 1, 12).await;
    assert_eq!(
        r.reasoning,
        Some(ReasoningTokens {
            tokens: REASONING,
            source: TokenSource::Tokenizer
        })
    );
    assert_eq!(r.output_tokens_source, TokenSource::Tokenizer);
    assert_eq!((r.output_tokens, r.answer_tokens()), (12, 7));
    srv.shutdown().await;
}

/// Completions and a chat server that does not reason: no reasoning, every chunk an answer.
#[tokio::test]
async fn responses_without_reasoning_have_none() {
    let srv = server(REASONING, false).await;
    let w = worker(&srv, BackendKind::OpenAiCompletions, true).await;
    let r = send(&w, Clock::start(), 0, 8).await;
    assert_eq!(r.reasoning, None);
    assert!(r.chunks.iter().all(|c| !c.reasoning));
    assert_eq!(r.first_answer(), r.first_token());
    srv.shutdown().await;
    let srv = server(0, false).await;
    let w = worker(&srv, BackendKind::OpenAiChat, true).await;
    let r = send(&w, Clock::start(), 0, 8).await;
    assert_eq!(r.reasoning, None);
    assert_eq!(r.answer_tokens(), 8);
    srv.shutdown().await;
}

/// Timed mode: the reasoning phase's length as the worker saw it (first answer chunk minus
/// first chunk) against the simulator's log of when it wrote token `R` and token 0. The bound
/// is generous because the test machine is shared; the closed form (`R` decode steps of 4 ms)
/// is what the log shows.
#[tokio::test]
async fn the_phase_boundary_agrees_with_the_simulator_log() {
    let _timing = crate::common::timing_lock().await;
    let srv = server(REASONING, true).await;
    let w = worker(&srv, BackendKind::OpenAiChat, true).await;
    let clock = Clock::start();
    let mut recs = Vec::new();
    for id in 0..3 {
        recs.push(send(&w, clock, id, 12).await);
    }
    for (r, e) in recs.iter().zip(log(&srv)) {
        assert_eq!(r.outcome, Outcome::Completed);
        let k = REASONING as usize;
        assert_eq!(e.token_unix_ns.len(), 12);
        let logged = (e.token_unix_ns[k] - e.token_unix_ns[0]) as f64 / 1e6;
        let seen = (r.first_answer().unwrap() - r.first_token().unwrap()) as f64 / 1e6;
        assert!(
            (seen - logged).abs() < 15.0,
            "seen {seen} ms, logged {logged} ms"
        );
        // The simulator's own closed form: one 4 ms decode step per token.
        assert!((logged - 4.0 * REASONING as f64).abs() < 15.0, "{logged}");
    }
    srv.shutdown().await;
}

/// A session's history carries the answer only: the reply handed back for the next turn holds
/// the `n - R` answer words (one token each), not the reasoning.
#[tokio::test]
async fn a_session_reply_is_the_answer_without_the_reasoning() {
    let srv = server(REASONING, false).await;
    let w = worker(&srv, BackendKind::OpenAiChat, true).await;
    let tk = bench_tokenizer::Tokenizer::builtin();
    let conversation = Arc::new(bench_core::ConversationSpec {
        system: "".into(),
        system_tokens: 0,
        turns: vec![RequestSpec {
            prompt: " tell me".into(),
            prompt_tokens: tk.count(" tell me") as u32,
            at: None,
            batch: Vec::new(),
            images: Vec::new(),
            output_tokens: Some(12),
        }],
        tools: None,
    });
    let turn = bench_core::TurnRequest {
        session: 0,
        conversation,
        replies: Vec::new(),
        calls: Vec::new(),
    };
    let clock = Clock::start();
    let d = Dispatch {
        id: 0,
        clock,
        scheduled: 0,
        slot: 0,
    };
    let (rec, reply) = w.send_turn(turn, d, CancellationToken::new()).await;
    assert_eq!(rec.outcome, Outcome::Completed);
    let reply = reply.expect("kept for sessions").text;
    assert_eq!(tk.count(&reply), 12 - REASONING as usize, "{reply:?}");
    assert_eq!(rec.answer_tokens(), 12 - REASONING);
    srv.shutdown().await;
}
