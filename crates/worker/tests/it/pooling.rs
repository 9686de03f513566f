//! Embeddings and rerank (`openai-embeddings`, `rerank`, `cohere-rerank`): the exact bodies
//! and paths sent (capture server), bad replies as `bad_reply` outcomes, and records against
//! the simulator's closed form and request log.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::Arc;

use bench_core::{
    Backend, CancellationToken, Clock, Dispatch, Outcome, RequestRecord, RequestSpec, TokenSource,
};
use bench_mock::{MockConfig, MockServer};
use bench_tokenizer::Tokenizer;
use bench_worker::{BackendKind, Worker, WorkerConfig};
use common::Script;

fn spec(inputs: &[&str], tokens: u32) -> RequestSpec {
    RequestSpec {
        prompt: inputs[0].into(),
        prompt_tokens: tokens,
        output_tokens: Some(7),
        at: None,
        batch: inputs[1..].iter().map(|s| Arc::from(*s)).collect(),
        images: Vec::new(),
    }
}

fn config(target: String, backend: BackendKind) -> WorkerConfig {
    WorkerConfig {
        target,
        backend,
        model: Some("m".into()),
        ..WorkerConfig::default()
    }
}

async fn send(w: &Worker, id: u64, s: RequestSpec) -> RequestRecord {
    let clock = Clock::start();
    let d = Dispatch {
        id,
        clock,
        scheduled: clock.now(),
        slot: clock.now(),
    };
    w.send(s, d, CancellationToken::new()).await
}

const EMB_OK: &str = r#"{"object":"list","data":[{"index":0,"embedding":[0.1,0.2]},{"index":1,"embedding":[0.3,0.4]},{"index":2,"embedding":[0.5,0.6]}],"usage":{"prompt_tokens":9,"total_tokens":9}}"#;
const RERANK_OK: &str = r#"{"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.2}],"usage":{"total_tokens":11}}"#;

#[tokio::test]
async fn the_bodies_and_paths_of_each_pooling_backend() {
    let srv = common::start(|s| {
        if s.path_and_query.contains("embeddings") {
            Script::status(200, EMB_OK)
        } else {
            Script::status(200, RERANK_OK)
        }
    })
    .await;
    let s = spec(&["a b", "c", "d e f"], 6);
    for backend in [
        BackendKind::OpenAiEmbeddings,
        BackendKind::Rerank,
        BackendKind::CohereRerank,
    ] {
        let w = Worker::new(config(srv.url(), backend)).await.unwrap();
        let r = send(&w, 0, s.clone()).await;
        assert_eq!(r.outcome, Outcome::Completed, "{backend}");
        assert!(r.chunks.is_empty(), "nothing streamed: no first token");
        assert_eq!(
            (r.output_tokens, r.output_tokens_source),
            (0, TokenSource::Usage)
        );
        let want = if backend == BackendKind::OpenAiEmbeddings {
            9
        } else {
            11
        };
        assert_eq!(
            (r.prompt_tokens, r.prompt_tokens_source),
            (want, TokenSource::Usage)
        );
    }
    let seen = srv.seen.lock().unwrap().clone();
    let paths: Vec<&str> = seen.iter().map(|s| s.path_and_query.as_str()).collect();
    assert_eq!(paths, ["/v1/embeddings", "/v1/rerank", "/v2/rerank"]);
    let bodies: Vec<serde_json::Value> = seen
        .iter()
        .map(|s| serde_json::from_slice(&s.body).unwrap())
        .collect();
    assert_eq!(
        bodies[0],
        serde_json::json!({"model": "m", "input": ["a b", "c", "d e f"]})
    );
    let rerank = serde_json::json!({"model": "m", "query": "a b", "documents": ["c", "d e f"]});
    assert_eq!(bodies[1], rerank);
    assert_eq!(bodies[2], rerank);
    assert_eq!(seen[0].headers["accept"], "application/json");
}

#[tokio::test]
async fn bad_replies_are_bad_reply_outcomes_naming_the_fault() {
    let cases: [(BackendKind, &str, usize, &str); 6] = [
        (
            BackendKind::OpenAiEmbeddings,
            r#"{"object":"list","usage":{"prompt_tokens":3}}"#,
            3,
            "no `data` list",
        ),
        (
            BackendKind::OpenAiEmbeddings,
            r#"{"data":[{"index":0}]}"#,
            1,
            "item 0 has no vector",
        ),
        (
            BackendKind::OpenAiEmbeddings,
            EMB_OK,
            2,
            "3 vectors for 2 inputs",
        ),
        (
            BackendKind::OpenAiEmbeddings,
            EMB_OK,
            4,
            "3 vectors for 4 inputs",
        ),
        (
            BackendKind::Rerank,
            r#"{"id":"x","usage":{"total_tokens":3}}"#,
            3,
            "no `results`",
        ),
        (
            BackendKind::CohereRerank,
            r#"{"results":[]}"#,
            3,
            "no `results`",
        ),
    ];
    for (backend, body, inputs, says) in cases {
        let body = body.to_owned();
        let srv = common::start(move |_| Script::status(200, &body)).await;
        let w = Worker::new(config(srv.url(), backend)).await.unwrap();
        let texts: Vec<&str> = ["a", "b", "c", "d"][..inputs].to_vec();
        let r = send(&w, 0, spec(&texts, inputs as u32)).await;
        assert_eq!(
            r.outcome.kind_name(),
            "bad_reply",
            "{backend}: {:?}",
            r.outcome
        );
        let msg = r.outcome.message().unwrap();
        assert!(msg.contains(says), "{backend}: {msg}");
    }
}

/// Against the simulator: the input tokens are the simulator's count (its log), the inputs
/// its log saw are the batch sent, and the latency covers the closed-form service time
/// `pool_base_ms + pool_per_input_ms * inputs + 1000 * tokens / pool_token_rate` (a lower
/// bound that holds on any machine), and the reply written after it.
#[tokio::test]
async fn records_agree_with_the_simulator_closed_form_and_log() {
    let cfg = MockConfig {
        record_requests: true,
        pool_base_ms: 5.0,
        pool_per_input_ms: 2.0,
        pool_token_rate: 1000.0,
        ..MockConfig::default()
    };
    let srv = MockServer::start(cfg.clone()).await.unwrap();
    let tok = Tokenizer::builtin();
    let texts = [
        "the quick brown fox",
        "jumps over",
        "the lazy dog today",
        "and more",
    ];
    let loader_count: u32 = texts.iter().map(|t| tok.count(t) as u32).sum();
    let mut recs = Vec::new();
    for (i, backend) in [
        BackendKind::OpenAiEmbeddings,
        BackendKind::Rerank,
        BackendKind::CohereRerank,
    ]
    .into_iter()
    .enumerate()
    {
        let mut c = config(srv.url(), backend);
        c.model = Some(srv.model().to_owned());
        let w = Worker::new(c).await.unwrap();
        recs.push((
            backend,
            send(&w, i as u64, spec(&texts, loader_count)).await,
        ));
    }
    let mut log = srv.request_log();
    log.sort_by_key(|e| e.id);
    assert_eq!(log.len(), 3);
    let q = tok.count(texts[0]) as u32;
    let docs: u32 = texts[1..].iter().map(|t| tok.count(t) as u32).sum();
    let want_tokens = [loader_count, 3 * q + docs, 3 * q + docs];
    let want_inputs = [4, 3, 3];
    for (k, ((backend, r), e)) in recs.iter().zip(&log).enumerate() {
        assert_eq!(r.outcome, Outcome::Completed, "{backend}");
        assert_eq!(e.status, 200);
        assert_eq!(e.inputs, want_inputs[k], "{backend}");
        assert_eq!(e.prompt_tokens, want_tokens[k], "{backend}");
        // Cohere's reply carries no token count: the record keeps the loader's.
        if *backend == BackendKind::CohereRerank {
            assert_eq!(
                (r.prompt_tokens, r.prompt_tokens_source),
                (loader_count, TokenSource::Tokenizer)
            );
        } else {
            assert_eq!(
                (r.prompt_tokens, r.prompt_tokens_source),
                (e.prompt_tokens, TokenSource::Usage)
            );
        }
        let service = cfg.pool_service(e.inputs, e.prompt_tokens);
        let e2el = r.end - r.dispatched;
        assert!(
            e2el >= service.as_nanos() as u64,
            "{backend}: {e2el} ns < {service:?}"
        );
        let reply = e.reply_unix_ns.unwrap();
        assert!(
            reply - e.arrival_unix_ns >= service.as_nanos() as u64,
            "{backend}"
        );
    }
    srv.shutdown().await;
}
