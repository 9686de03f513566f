//! `--no-stream`: the exact bodies sent (capture server), and records against the simulator's
//! request log: no chunk (so no TTFT), tokens from usage, reasoning tokens from usage, the
//! request's latency from dispatch to the end of the reply.

#![allow(clippy::unwrap_used)]

use crate::common;

use bench_core::{
    Backend, CancellationToken, Clock, Dispatch, Outcome, ReasoningTokens, RequestRecord,
    RequestSpec, TokenSource,
};
use bench_mock::{MockConfig, MockServer};
use bench_worker::{BackendKind, Error, Worker, WorkerConfig};
use common::Script;

fn spec(out: u32) -> RequestSpec {
    common::request("Say hi", 2, Some(out))
}

fn config(target: String, backend: BackendKind) -> WorkerConfig {
    WorkerConfig {
        target,
        backend,
        stream: false,
        model: Some("m".into()),
        ..WorkerConfig::default()
    }
}

async fn send(w: &Worker, id: u64, out: u32) -> RequestRecord {
    let clock = Clock::start();
    let d = Dispatch {
        id,
        clock,
        scheduled: clock.now(),
        slot: clock.now(),
    };
    w.send(spec(out), d, CancellationToken::new()).await
}

#[tokio::test]
async fn the_bodies_ask_for_no_stream_and_no_stream_options() {
    let srv = common::start(|_| {
        Script::status(
            200,
            r#"{"choices":[{"index":0,"text":" hi","message":{"role":"assistant","content":" hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}"#,
        )
    })
    .await;
    for backend in [BackendKind::OpenAiCompletions, BackendKind::OpenAiChat] {
        let w = Worker::new(config(srv.url(), backend)).await.unwrap();
        let r = send(&w, 0, 4).await;
        assert_eq!(r.outcome, Outcome::Completed, "{backend}");
        assert!(
            r.chunks.is_empty(),
            "no first token to time: {:?}",
            r.chunks
        );
        assert_eq!(r.first_token(), None);
        assert_eq!(
            (r.output_tokens, r.output_tokens_source),
            (1, TokenSource::Usage)
        );
    }
    let seen = srv.seen.lock().unwrap().clone();
    let bodies: Vec<serde_json::Value> = seen
        .iter()
        .map(|s| serde_json::from_slice(&s.body).unwrap())
        .collect();
    assert_eq!(
        bodies[0],
        serde_json::json!({"model": "m", "prompt": "Say hi", "max_tokens": 4, "stream": false,
                           "ignore_eos": true, "min_tokens": 4})
    );
    assert_eq!(
        bodies[1],
        serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "Say hi"}],
                           "max_completion_tokens": 4, "stream": false,
                           "ignore_eos": true, "min_tokens": 4})
    );
}

#[tokio::test]
async fn tgi_has_no_unstreamed_mode() {
    let Err(e) = Worker::new(config("http://127.0.0.1:1".into(), BackendKind::Tgi)).await else {
        panic!("TGI without a stream was accepted");
    };
    assert!(matches!(e, Error::NoStream { .. }), "{e}");
    assert!(e.to_string().contains("--no-stream"), "{e}");
}

/// Against the simulator: the reply's tokens equal the log's, reasoning tokens come from the
/// usage the simulator sends (`min(R, n)`), and the request's latency covers the simulator's
/// whole answer (arrival to the body's write).
#[tokio::test]
async fn records_agree_with_the_simulator_log() {
    let srv = MockServer::start(MockConfig {
        record_requests: true,
        reasoning_tokens: 3,
        step_base_ms: 2.0,
        step_per_seq_ms: 0.0,
        prefill_overhead_ms: 1.0,
        prefill_rate: 0.0,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let mut recs = Vec::new();
    for (i, backend) in [BackendKind::OpenAiCompletions, BackendKind::OpenAiChat]
        .into_iter()
        .enumerate()
    {
        let mut cfg = config(srv.url(), backend);
        cfg.model = Some(srv.model().to_owned());
        let w = Worker::new(cfg).await.unwrap();
        recs.push((backend, send(&w, i as u64, 10).await));
    }
    let mut log = srv.request_log();
    log.sort_by_key(|e| e.id);
    for ((backend, r), e) in recs.iter().zip(&log) {
        assert!(!e.stream, "{backend}: the simulator answered unstreamed");
        assert_eq!(r.outcome, Outcome::Completed);
        assert!(r.chunks.is_empty());
        assert_eq!(r.output_tokens, e.planned_tokens);
        assert_eq!(r.output_tokens, 10);
        assert_eq!(r.prompt_tokens, e.prompt_tokens);
        let want = (*backend == BackendKind::OpenAiChat).then_some(ReasoningTokens {
            tokens: 3,
            source: TokenSource::Usage,
        });
        assert_eq!(r.reasoning, want, "{backend}");
        assert_eq!(e.reasoning_tokens, want.map_or(0, |w| w.tokens));
        // The simulator decodes 10 tokens of 2 ms before it writes the body: the latency
        // includes them (a lower bound that holds on any machine).
        assert!(r.end - r.dispatched >= 20_000_000, "{r:?}");
    }
    srv.shutdown().await;
}
