//! Client CPU cost of the worker.
//!
//! - `record/*`: the per-chunk hot path alone (SSE parse + JSON interpretation + chunk record),
//!   one body frame per event as a server flushing every token sends it. Pure client CPU.
//!   `per_chunk` is the worker's path (JSON scanner with serde_json fallback),
//!   `per_chunk_serde` the serde_json-only reference path.
//! - `request/*`: one whole `Worker::send` against the zero-delay simulator (`bench-mock`) in
//!   the same process (`1` or `256` output tokens, chat, HTTP/1.1 and HTTP/2). This is a round
//!   trip: it includes the simulator's and the kernel's share, so it is an upper bound of the
//!   client's cost per request.
//!
//! Run: `cargo bench -p bench-worker --bench worker`

#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use bench_core::{Backend, CancellationToken, Clock, Dispatch, RequestSpec};
use bench_worker::{BackendKind, Progress, StreamRecorder, Worker, WorkerConfig};
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const N: usize = 256;

fn events(backend: BackendKind, n: usize) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(n + 2);
    for i in 0..n {
        let s = match backend {
            BackendKind::OpenAiCompletions => format!(
                "data: {{\"id\":\"cmpl-8f1b2c\",\"object\":\"text_completion\",\"created\":1732250000,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{{\"index\":0,\"text\":\" token{i}\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}}]}}\n\n"
            ),
            BackendKind::OpenAiChat => format!(
                "data: {{\"id\":\"chatcmpl-8f1b2c\",\"object\":\"chat.completion.chunk\",\"created\":1732250000,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" token{i}\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
            ),
            // Not measured here (see `record`).
            BackendKind::OpenAiResponses
            | BackendKind::AnthropicMessages
            | BackendKind::OpenAiEmbeddings
            | BackendKind::Rerank
            | BackendKind::CohereRerank => break,
            BackendKind::Tgi => format!(
                "data:{{\"index\":{i},\"token\":{{\"id\":{i},\"text\":\" token{i}\",\"logprob\":-0.25,\"special\":false}},\"generated_text\":null,\"details\":null,\"top_tokens\":null}}\n\n"
            ),
        };
        out.push(Bytes::from(s));
    }
    match backend {
        BackendKind::Tgi => out.push(Bytes::from(format!(
            "data:{{\"index\":{n},\"token\":{{\"id\":2,\"text\":\"\",\"logprob\":-0.1,\"special\":true}},\"generated_text\":\"...\",\"details\":{{\"finish_reason\":\"length\",\"generated_tokens\":{n},\"seed\":null}}}}\n\n"
        ))),
        _ => {
            out.push(Bytes::from(format!(
                "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":128,\"completion_tokens\":{n},\"total_tokens\":{}}}}}\n\n",
                n + 128
            )));
            out.push(Bytes::from_static(b"data: [DONE]\n\n"));
        }
    }
    out
}

fn record(c: &mut Criterion) {
    let mut g = c.benchmark_group("record");
    g.throughput(Throughput::Elements(N as u64));
    // The streamed backends: pooling replies (embeddings, rerank) have no event stream.
    // The backends measured in docs/performance.md.
    for backend in [
        BackendKind::OpenAiCompletions,
        BackendKind::OpenAiChat,
        BackendKind::Tgi,
    ] {
        let evs = events(backend, N);
        // `per_chunk`: as the worker runs it (JSON scanner, serde_json fallback);
        // `per_chunk_serde`: every event through serde_json, the reference path.
        for (name, fast) in [("per_chunk", true), ("per_chunk_serde", false)] {
            g.bench_function(BenchmarkId::new(name, backend.name()), |b| {
                b.iter(|| {
                    let mut r = StreamRecorder::new(backend, false, false).with_fast_path(fast);
                    for (i, e) in evs.iter().enumerate() {
                        if r.on_data(e.clone(), i as u64) != Progress::More {
                            break;
                        }
                    }
                    assert_eq!(r.chunks().len(), N);
                    assert_eq!(r.scanned_events() > 0, fast);
                    r
                })
            });
        }
    }
    g.finish();
}

fn request(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("request");
    g.measurement_time(Duration::from_secs(4));
    for chunks in [1usize, N] {
        for http2 in [false, true] {
            let (srv, w) = rt.block_on(async {
                let srv = bench_mock::MockServer::start(bench_mock::MockConfig::zero_delay())
                    .await
                    .unwrap();
                let w = Worker::new(WorkerConfig {
                    target: srv.url(),
                    backend: BackendKind::OpenAiChat,
                    model: Some(srv.model().to_owned()),
                    http2,
                    ..WorkerConfig::default()
                })
                .await
                .unwrap();
                (srv, w)
            });
            let clock = Clock::start();
            let spec = RequestSpec {
                prompt: "x ".repeat(128).into(),
                prompt_tokens: 128,
                output_tokens: Some(chunks as u32),
                at: None,
                batch: Vec::new(),
                images: Vec::new(),
            };
            let proto = if http2 { "h2" } else { "h1" };
            g.bench_function(BenchmarkId::new(format!("chat_{proto}"), chunks), |b| {
                b.to_async(&rt).iter(|| {
                    let d = Dispatch {
                        id: 0,
                        clock,
                        scheduled: 0,
                        slot: 0,
                    };
                    let w = &w;
                    let spec = spec.clone();
                    async move {
                        let r = w.send(spec, d, CancellationToken::new()).await;
                        assert_eq!(r.chunks.len(), chunks);
                        r
                    }
                })
            });
            rt.block_on(srv.shutdown());
        }
    }
    g.finish();
}

criterion_group!(benches, record, request);
criterion_main!(benches);
