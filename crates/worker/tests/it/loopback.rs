//! The worker against small scripted loopback servers: body fields, headers, protocols, TLS,
//! every failure outcome, timeouts and cancellation.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use bench_core::{
    Backend, CancellationToken, Clock, Dispatch, Outcome, RequestRecord, RequestSpec, TimeoutPhase,
    TokenSource,
};
use bench_worker::{BackendKind, Error, Timeouts, Worker, WorkerConfig};
use bytes::Bytes;
use common::{Script, Step};

const COMPLETION_EVENTS: &[&str] = &[
    r#"{"choices":[{"index":0,"text":"Hello","finish_reason":null}]}"#,
    r#"{"choices":[{"index":0,"text":" there","finish_reason":null}]}"#,
    r#"{"choices":[{"index":0,"text":"!","finish_reason":"length"}]}"#,
    r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}"#,
    "[DONE]",
];

fn spec(out: Option<u32>) -> RequestSpec {
    common::request("Tell me a story", 4, out)
}

fn dispatch(id: u64) -> Dispatch {
    let clock = Clock::start();
    Dispatch {
        id,
        clock,
        scheduled: 0,
        slot: 0,
    }
}

fn config(url: String, backend: BackendKind) -> WorkerConfig {
    WorkerConfig {
        target: url,
        backend,
        model: Some("test-model".into()),
        ..WorkerConfig::default()
    }
}

async fn send(w: &Worker, out: Option<u32>) -> RequestRecord {
    w.send(spec(out), dispatch(1), CancellationToken::new())
        .await
}

/// One request (`out` output tokens asked) of a completions worker to `srv`.
async fn send_to(srv: &common::Server, out: Option<u32>) -> RequestRecord {
    let w = Worker::new(config(srv.url(), BackendKind::OpenAiCompletions))
        .await
        .unwrap();
    send(&w, out).await
}

/// A completions request (8 output tokens asked) to a loopback server that streams `events`.
async fn streamed(events: &'static [&'static str]) -> RequestRecord {
    let srv = common::start(move |_| Script::sse(events)).await;
    send_to(&srv, Some(8)).await
}

fn body_json(seen: &common::Seen) -> serde_json::Value {
    serde_json::from_slice(&seen.body).unwrap()
}

#[tokio::test]
async fn completions_http1_body_headers_chunks_and_usage() {
    let srv = common::start(|_| Script::sse(COMPLETION_EVENTS)).await;
    let mut cfg = config(format!("{}/v1", srv.url()), BackendKind::OpenAiCompletions);
    cfg.api_key = Some("sk-secret".into());
    cfg.headers = vec![("X-Team".into(), "infra".into())];
    let w = Worker::new(cfg).await.unwrap();
    let r = send(&w, Some(3)).await;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.chunks.len(), 3);
    assert_eq!(
        (r.output_tokens, r.output_tokens_source),
        (3, TokenSource::Usage)
    );
    assert_eq!(
        (r.prompt_tokens, r.prompt_tokens_source),
        (9, TokenSource::Usage)
    );
    assert_eq!(r.requested_output_tokens, Some(3));
    let h = r.headers.unwrap();
    assert!(r.dispatched <= h && h <= r.chunks[0].at && r.chunks[2].at <= r.end);
    assert!(r.chunks.windows(2).all(|p| p[0].at <= p[1].at));

    let seen = srv.seen.lock().unwrap()[0].clone();
    assert_eq!(seen.path_and_query, "/v1/completions");
    assert_eq!(seen.version, http::Version::HTTP_11);
    assert_eq!(seen.headers["authorization"], "Bearer sk-secret");
    assert_eq!(seen.headers["x-team"], "infra");
    let b = body_json(&seen);
    assert_eq!(b["model"], "test-model");
    assert_eq!(b["prompt"], "Tell me a story");
    assert_eq!(b["max_tokens"], 3);
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"]["include_usage"], true);
    assert_eq!(b["ignore_eos"], true);
    assert_eq!(b["min_tokens"], 3);
    // Secrets never in Debug output of the worker.
    assert!(!format!("{w:?}").contains("sk-secret"));
}

#[tokio::test]
async fn chat_role_only_chunk_does_not_end_ttft() {
    let srv = common::start(|_| Script {
        steps: vec![
            Step::Send(Bytes::from_static(
                b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
            )),
            Step::Sleep(Duration::from_millis(150)),
            Step::Send(Bytes::from_static(
                b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
            )),
        ],
        ..Script::sse(&[])
    })
    .await;
    let w = Worker::new(config(srv.url(), BackendKind::OpenAiChat))
        .await
        .unwrap();
    let r = send(&w, Some(1)).await;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.chunks.len(), 1);
    // The first (role-only) event came at once; TTFT ends at the content, >= 150 ms later.
    assert!(r.first_token().unwrap() - r.dispatched >= 140_000_000);
    // No usage, no tokenizer: counted from chunks, and said so.
    assert_eq!(
        (r.output_tokens, r.output_tokens_source),
        (1, TokenSource::Chunks)
    );
    assert_eq!(r.prompt_tokens_source, TokenSource::Tokenizer);
    let seen = srv.seen.lock().unwrap()[0].clone();
    assert_eq!(seen.path_and_query, "/v1/chat/completions");
    let b = body_json(&seen);
    assert_eq!(b["messages"][0]["content"], "Tell me a story");
    assert_eq!(b["max_completion_tokens"], 1);
}

#[tokio::test]
async fn tokenizer_fallback_counts_generated_text() {
    let srv = common::start(|_| {
        Script::sse(&[
            r#"{"choices":[{"text":"one two"}]}"#,
            r#"{"choices":[{"text":" three","finish_reason":"stop"}]}"#,
            "[DONE]",
        ])
    })
    .await;
    let w = Worker::new(config(srv.url(), BackendKind::OpenAiCompletions))
        .await
        .unwrap()
        .with_output_counter(Arc::new(|s: &str| s.split_whitespace().count()));
    let r = send(&w, None).await;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(
        (r.output_tokens, r.output_tokens_source),
        (3, TokenSource::Tokenizer)
    );
    assert_eq!(r.chunks.len(), 2);
    let b = body_json(&srv.seen.lock().unwrap()[0]);
    assert!(b.get("max_tokens").is_none() && b.get("ignore_eos").is_none());
}

#[tokio::test]
async fn tgi_generate_stream() {
    let srv = common::start(|_| {
        Script::sse(&[
            r#"{"index":1,"token":{"id":1,"text":" A","logprob":0.0,"special":false},"generated_text":null,"details":null}"#,
            r#"{"index":2,"token":{"id":2,"text":" B","logprob":0.0,"special":false},"generated_text":" A B","details":{"finish_reason":"length","generated_tokens":2,"seed":null}}"#,
        ])
    })
    .await;
    let w = Worker::new(config(format!("{}/tgi/", srv.url()), BackendKind::Tgi))
        .await
        .unwrap();
    let r = send(&w, Some(2)).await;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.chunks.len(), 2);
    assert_eq!(
        (r.output_tokens, r.output_tokens_source),
        (2, TokenSource::Usage)
    );
    let seen = srv.seen.lock().unwrap()[0].clone();
    assert_eq!(seen.path_and_query, "/tgi/generate_stream");
    let b = body_json(&seen);
    assert_eq!(b["inputs"], "Tell me a story");
    assert_eq!(b["parameters"]["max_new_tokens"], 2);
}

#[tokio::test]
async fn http2_prior_knowledge_and_connection_reuse() {
    let srv = common::start(|_| Script::sse(COMPLETION_EVENTS)).await;
    let mut cfg = config(srv.url(), BackendKind::OpenAiCompletions);
    cfg.http2 = true;
    let w = Worker::new(cfg).await.unwrap();
    let rs = futures_util::future::join_all((0..8).map(|_| send(&w, Some(3)))).await;
    for r in rs {
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!(r.chunks.len(), 3);
    }
    assert!(srv
        .seen
        .lock()
        .unwrap()
        .iter()
        .all(|s| s.version == http::Version::HTTP_2));
}

#[tokio::test]
async fn tls_with_cacert_over_http1_and_http2_alpn() {
    let srv = common::start_tls(|_| Script::sse(COMPLETION_EVENTS)).await;
    let ca = srv.cert_file();
    for http2 in [false, true] {
        let mut cfg = config(srv.url(), BackendKind::OpenAiCompletions);
        cfg.cacert = Some(ca.clone());
        cfg.http2 = http2;
        let w = Worker::new(cfg).await.unwrap();
        let r = send(&w, Some(3)).await;
        assert_eq!(r.outcome, Outcome::Completed, "http2={http2}");
        assert_eq!(r.chunks.len(), 3);
    }
    let versions: Vec<_> = srv.seen.lock().unwrap().iter().map(|s| s.version).collect();
    assert_eq!(
        versions,
        vec![http::Version::HTTP_11, http::Version::HTTP_2]
    );

    // Without the CA the certificate is refused; --insecure accepts it.
    let r = send_to(&srv, Some(3)).await;
    assert!(
        matches!(r.outcome, Outcome::Connect { .. }),
        "{:?}",
        r.outcome
    );
    let mut cfg = config(srv.url(), BackendKind::OpenAiCompletions);
    cfg.insecure = true;
    let r = send(&Worker::new(cfg).await.unwrap(), Some(3)).await;
    assert_eq!(r.outcome, Outcome::Completed);
    let _ = std::fs::remove_file(ca);
}

#[tokio::test]
async fn bad_cacert_file_is_a_setup_error() {
    let mut cfg = config("https://127.0.0.1:1".into(), BackendKind::OpenAiCompletions);
    cfg.cacert = Some("/nonexistent/ca.pem".into());
    assert!(matches!(Worker::new(cfg).await, Err(Error::CaCert { .. })));
}

#[tokio::test]
async fn http_error_status_keeps_a_bounded_body_excerpt() {
    let long = format!("{{\"error\":\"{}\"}}", "x".repeat(100_000));
    let srv = common::start(move |s| {
        if s.path_and_query.contains("chat") {
            Script::status(503, &long)
        } else {
            Script::status(429, "{\"error\":\"rate limited\"}")
        }
    })
    .await;
    let r = send_to(&srv, Some(3)).await;
    assert_eq!(
        r.outcome,
        Outcome::Http {
            status: 429,
            body: "{\"error\":\"rate limited\"}".into(),
            retry_after_ms: None,
        }
    );
    assert!(r.chunks.is_empty());
    let w = Worker::new(config(srv.url(), BackendKind::OpenAiChat))
        .await
        .unwrap();
    match send(&w, Some(3)).await.outcome {
        Outcome::Http {
            status: 503, body, ..
        } => assert!(body.len() < 1024, "{}", body.len()),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn refused_connection_is_a_connect_outcome() {
    let port = common::closed_port().await;
    let w = Worker::new(config(
        format!("http://127.0.0.1:{port}"),
        BackendKind::OpenAiCompletions,
    ))
    .await
    .unwrap();
    let r = send(&w, Some(3)).await;
    assert!(
        matches!(r.outcome, Outcome::Connect { .. }),
        "{:?}",
        r.outcome
    );
    assert_eq!(r.headers, None);
    assert!(r.end >= r.dispatched);
}

#[tokio::test]
async fn reset_mid_stream_keeps_the_chunks_that_arrived() {
    for http2 in [false, true] {
        let srv = common::start(|_| Script {
            steps: vec![
                Step::Send(Bytes::from_static(
                    b"data: {\"choices\":[{\"text\":\"a\"}]}\n\n",
                )),
                Step::Send(Bytes::from_static(
                    b"data: {\"choices\":[{\"text\":\"b\"}]}\n\n",
                )),
                Step::Sleep(Duration::from_millis(20)),
                Step::Reset,
            ],
            ..Script::sse(&[])
        })
        .await;
        let mut cfg = config(srv.url(), BackendKind::OpenAiCompletions);
        cfg.http2 = http2;
        let r = send(&Worker::new(cfg).await.unwrap(), Some(8)).await;
        assert!(
            matches!(&r.outcome, Outcome::Connect { message } if message.contains("mid-stream")),
            "http2={http2}: {:?}",
            r.outcome
        );
        assert_eq!(r.chunks.len(), 2);
        assert_eq!(
            (r.output_tokens, r.output_tokens_source),
            (2, TokenSource::Chunks)
        );
    }
}

#[tokio::test]
async fn truncated_stream_without_final_event_is_a_protocol_error() {
    let r = streamed(&[r#"{"choices":[{"text":"a"}]}"#]).await;
    assert!(
        matches!(r.outcome, Outcome::Protocol { .. }),
        "{:?}",
        r.outcome
    );
    assert_eq!(r.chunks.len(), 1);
}

#[tokio::test]
async fn malformed_event_is_a_protocol_error() {
    let r = streamed(&[
        r#"{"choices":[{"text":"a"}]}"#,
        r#"{"choices":[{"te"#,
        "[DONE]",
    ])
    .await;
    assert!(
        matches!(r.outcome, Outcome::Protocol { .. }),
        "{:?}",
        r.outcome
    );
    assert_eq!(r.chunks.len(), 1);
}

#[tokio::test]
async fn in_stream_error_event_is_a_stream_error() {
    let r = streamed(&[
        r#"{"choices":[{"text":"a"}]}"#,
        r#"{"error":{"message":"KV cache exhausted","code":500}}"#,
    ])
    .await;
    assert_eq!(
        r.outcome,
        Outcome::StreamError {
            message: "KV cache exhausted".into()
        }
    );
    assert_eq!(r.chunks.len(), 1);
}

fn short_timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_millis(300),
        first_byte: Duration::from_millis(300),
        idle: Duration::from_millis(300),
        total: Duration::from_secs(30),
    }
}

#[tokio::test]
async fn first_byte_timeout_on_slow_headers() {
    let srv = common::start(|_| Script {
        header_delay: Duration::from_secs(5),
        ..Script::sse(COMPLETION_EVENTS)
    })
    .await;
    let mut cfg = config(srv.url(), BackendKind::OpenAiCompletions);
    cfg.timeouts = short_timeouts();
    let r = send(&Worker::new(cfg).await.unwrap(), Some(3)).await;
    assert_eq!(
        r.outcome,
        Outcome::Timeout {
            phase: TimeoutPhase::FirstByte
        }
    );
    assert!(r.end - r.dispatched < 4_000_000_000);
}

#[tokio::test]
async fn idle_timeout_on_a_stalled_stream() {
    let srv = common::start(|_| Script {
        steps: vec![
            Step::Send(Bytes::from_static(
                b"data: {\"choices\":[{\"text\":\"a\"}]}\n\n",
            )),
            Step::Sleep(Duration::from_secs(5)),
            Step::Send(Bytes::from_static(b"data: [DONE]\n\n")),
        ],
        ..Script::sse(&[])
    })
    .await;
    let mut cfg = config(srv.url(), BackendKind::OpenAiCompletions);
    cfg.timeouts = short_timeouts();
    let r = send(&Worker::new(cfg).await.unwrap(), Some(3)).await;
    assert_eq!(
        r.outcome,
        Outcome::Timeout {
            phase: TimeoutPhase::Idle
        }
    );
    assert_eq!(r.chunks.len(), 1);
    assert!(r.end - r.dispatched < 4_000_000_000);
}

#[tokio::test]
async fn total_timeout_on_a_long_trickle() {
    let mut steps = Vec::new();
    for _ in 0..100 {
        steps.push(Step::Send(Bytes::from_static(
            b"data: {\"choices\":[{\"text\":\"a\"}]}\n\n",
        )));
        steps.push(Step::Sleep(Duration::from_millis(50)));
    }
    let srv = common::start(move |_| Script {
        steps: steps.clone(),
        ..Script::sse(&[])
    })
    .await;
    let mut cfg = config(srv.url(), BackendKind::OpenAiCompletions);
    cfg.timeouts = Timeouts {
        total: Duration::from_millis(400),
        idle: Duration::from_secs(10),
        ..short_timeouts()
    };
    let r = send(&Worker::new(cfg).await.unwrap(), Some(100)).await;
    assert_eq!(
        r.outcome,
        Outcome::Timeout {
            phase: TimeoutPhase::Total
        }
    );
    assert!(!r.chunks.is_empty() && r.chunks.len() < 100);
}

#[tokio::test]
async fn connect_timeout_covers_a_tls_handshake_that_never_answers() {
    let (addr, task) = common::start_silent().await;
    let mut cfg = config(
        format!("https://127.0.0.1:{}", addr.port()),
        BackendKind::OpenAiCompletions,
    );
    cfg.timeouts = short_timeouts();
    cfg.timeouts.first_byte = Duration::from_secs(20);
    cfg.insecure = true;
    let r = send(&Worker::new(cfg).await.unwrap(), Some(3)).await;
    assert_eq!(
        r.outcome,
        Outcome::Timeout {
            phase: TimeoutPhase::Connect
        }
    );
    task.abort();
}

#[tokio::test]
async fn cancellation_returns_promptly_with_the_chunks_so_far() {
    let srv = common::start(|_| Script {
        steps: vec![
            Step::Send(Bytes::from_static(
                b"data: {\"choices\":[{\"text\":\"a\"}]}\n\n",
            )),
            Step::Send(Bytes::from_static(
                b"data: {\"choices\":[{\"text\":\"b\"}]}\n\n",
            )),
            Step::Sleep(Duration::from_secs(30)),
        ],
        ..Script::sse(&[])
    })
    .await;
    let w = Worker::new(config(srv.url(), BackendKind::OpenAiCompletions))
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c2.cancel();
    });
    let started = std::time::Instant::now();
    let r = w.send(spec(Some(100)), dispatch(3), cancel).await;
    assert_eq!(r.outcome, Outcome::Cancelled);
    assert_eq!(r.chunks.len(), 2);
    assert_eq!(r.id, 3);
    assert!(started.elapsed() < Duration::from_secs(10));

    // Cancelled before dispatch: nothing sent.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let r = w.send(spec(Some(1)), dispatch(4), cancel).await;
    assert_eq!(r.outcome, Outcome::Cancelled);
    assert_eq!(srv.seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn long_prompt_and_multi_megabyte_response() {
    let _cpu = common::cpu_heavy_lock().await;
    // ~600 KB prompt (a 128k-token context) and a 4 MB reply in 64 KB events.
    let piece = "y".repeat(64 << 10);
    let event = format!(r#"{{"choices":[{{"text":"{piece}"}}]}}"#);
    let mut events: Vec<String> = (0..64).map(|_| event.clone()).collect();
    events.push(r#"{"choices":[{"text":"z","finish_reason":"length"}]}"#.into());
    events.push("[DONE]".into());
    let srv = common::start(move |_| {
        let refs: Vec<&str> = events.iter().map(String::as_str).collect();
        Script::sse(&refs)
    })
    .await;
    let w = Worker::new(config(srv.url(), BackendKind::OpenAiCompletions))
        .await
        .unwrap();
    let prompt: String = "word ".repeat(120_000);
    let r = w
        .send(
            RequestSpec {
                prompt: prompt.clone().into(),
                prompt_tokens: 120_000,
                output_tokens: Some(65),
                at: None,
                batch: Vec::new(),
                images: Vec::new(),
            },
            dispatch(1),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.chunks.len(), 65);
    let b = body_json(&srv.seen.lock().unwrap()[0]);
    assert_eq!(b["prompt"].as_str().map(str::len), Some(prompt.len()));
}

#[tokio::test]
async fn non_streamed_json_reply_is_read_whole() {
    let srv = common::start(|_| Script {
        content_type: "application/json",
        ..Script::status(
            200,
            r#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
        )
    })
    .await;
    let r = send(
        &Worker::new(config(srv.url(), BackendKind::OpenAiChat))
            .await
            .unwrap(),
        None,
    )
    .await;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.chunks.len(), 1);
    assert_eq!(r.output_tokens, 1);
}

#[tokio::test]
async fn health_check_and_model_discovery() {
    let srv = common::start(|s| match s.path_and_query.as_str() {
        "/v1/models" => Script::status(
            200,
            r#"{"object":"list","data":[{"id":"meta/llama","object":"model"}]}"#,
        ),
        _ => Script::status(404, "not found"),
    })
    .await;
    let mut cfg = config(srv.url(), BackendKind::OpenAiCompletions);
    cfg.model = None;
    let w = Worker::new(cfg).await.unwrap();
    w.health_check().await.unwrap();
    assert_eq!(w.model(), None);
    assert_eq!(w.discover_model().await.unwrap(), "meta/llama");
    assert_eq!(w.model(), Some("meta/llama"));
    let _ = send(&w, Some(1)).await;
    let seen = srv.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(body_json(&seen)["model"], "meta/llama");
}

/// What a server says its batch is, asked where each kind says it: vLLM's `max_num_seqs` in a
/// `/metrics` info series first, then llama.cpp's `/props`, then SGLang's `/get_server_info`;
/// none when no answer holds it.
#[tokio::test]
async fn the_server_says_its_batch() {
    let batch = |routes: &'static [(&'static str, &'static str)]| async move {
        let srv = common::start(move |s| {
            match routes.iter().find(|(p, _)| *p == s.path_and_query.as_str()) {
                Some((_, body)) => Script::status(200, body),
                None => Script::status(404, "not found"),
            }
        })
        .await;
        let w = Worker::new(config(srv.url(), BackendKind::OpenAiCompletions))
            .await
            .unwrap();
        w.server_batch().await.map(|b| (b.size, b.source))
    };
    const VLLM: &str = "vllm:num_requests_running{model_name=\"m\"} 3\n\
        vllm:vllm_config_info{model_name=\"m\",scheduler_config_max_num_seqs=\"256\"} 1\n";
    assert_eq!(
        batch(&[("/metrics", VLLM), ("/props", r#"{"total_slots":4}"#)]).await,
        Some((256, "vllm_max_num_seqs".to_string()))
    );
    assert_eq!(
        batch(&[("/metrics", "x 1\n"), ("/props", r#"{"total_slots":32}"#)]).await,
        Some((32, "llamacpp_total_slots".to_string()))
    );
    assert_eq!(
        batch(&[("/get_server_info", r#"{"max_running_requests":48}"#)]).await,
        Some((48, "sglang_max_running_requests".to_string()))
    );
    assert_eq!(batch(&[("/props", "{}")]).await, None);
}

#[tokio::test]
async fn health_check_errors_are_clear() {
    // Refused.
    let port = common::closed_port().await;
    let w = Worker::new(config(
        format!("http://127.0.0.1:{port}"),
        BackendKind::OpenAiCompletions,
    ))
    .await
    .unwrap();
    let e = w.health_check().await.unwrap_err();
    assert!(matches!(e, Error::Unreachable { .. }), "{e}");
    // Some other web server.
    let srv = common::start(|_| Script {
        content_type: "text/html",
        ..Script::status(404, "<html>nginx</html>")
    })
    .await;
    let w = Worker::new(config(srv.url(), BackendKind::OpenAiCompletions))
        .await
        .unwrap();
    let e = w.health_check().await.unwrap_err();
    assert!(matches!(e, Error::NotAnLlmServer { .. }), "{e}");
    assert!(w.discover_model().await.is_ok()); // configured model: no request needed
                                               // Wrong key: the message names the flag, never the key.
    let srv = common::start(|_| Script::status(401, "{\"error\":\"bad key\"}")).await;
    let mut cfg = config(srv.url(), BackendKind::OpenAiCompletions);
    cfg.api_key = Some("sk-wrong".into());
    let e = Worker::new(cfg)
        .await
        .unwrap()
        .health_check()
        .await
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, Error::Unauthorized { status: 401, .. }),
        "{msg}"
    );
    assert!(
        msg.contains("--api-key") && !msg.contains("sk-wrong"),
        "{msg}"
    );
    // TGI: no /v1/models but /health.
    let srv = common::start(|s| match s.path_and_query.as_str() {
        "/health" => Script::status(200, ""),
        "/info" => Script::status(200, r#"{"model_id":"bigscience/bloom"}"#),
        _ => Script::status(404, ""),
    })
    .await;
    let mut cfg = config(srv.url(), BackendKind::Tgi);
    cfg.model = None;
    let w = Worker::new(cfg).await.unwrap();
    w.health_check().await.unwrap();
    assert_eq!(w.discover_model().await.unwrap(), "bigscience/bloom");
}

#[tokio::test]
async fn invalid_configuration_is_rejected_up_front() {
    let mut cfg = config("http://127.0.0.1:1".into(), BackendKind::OpenAiCompletions);
    cfg.headers = vec![("Bad Header".into(), "v".into())];
    assert!(matches!(
        Worker::new(cfg).await,
        Err(Error::InvalidHeader { .. })
    ));
    let mut cfg = config("http://127.0.0.1:1".into(), BackendKind::OpenAiCompletions);
    cfg.headers = vec![("X-Key".into(), "line\nbreak-secret".into())];
    let e = Worker::new(cfg).await.unwrap_err().to_string();
    assert!(!e.contains("secret"), "{e}");
    let cfg = config("localhost:8000".into(), BackendKind::OpenAiCompletions);
    assert!(matches!(
        Worker::new(cfg).await,
        Err(Error::InvalidTarget { .. })
    ));
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// TTFT and chunk gaps agree with the server's own send times. The target is a median
/// absolute error under 0.5 ms (see docs/performance.md for measured figures); the bound here
/// is generous because the test machine is shared.
#[tokio::test]
async fn ttft_and_gaps_match_the_server_send_times() {
    let _timing = common::timing_lock().await;
    const CHUNKS: usize = 20;
    let mut steps = vec![Step::Sleep(Duration::from_millis(20))];
    for i in 0..CHUNKS {
        let last = i + 1 == CHUNKS;
        steps.push(Step::Send(Bytes::from(format!(
            "data: {{\"choices\":[{{\"text\":\"t{i}\"{}}}]}}\n\n{}",
            if last {
                ",\"finish_reason\":\"length\""
            } else {
                ""
            },
            if last { "data: [DONE]\n\n" } else { "" }
        ))));
        if !last {
            steps.push(Step::Sleep(Duration::from_millis(4)));
        }
    }
    let srv = common::start(move |_| Script {
        steps: steps.clone(),
        ..Script::sse(&[])
    })
    .await;
    let w = Worker::new(config(srv.url(), BackendKind::OpenAiCompletions))
        .await
        .unwrap();
    let clock = Clock::start();
    let mut ttft_err = Vec::new();
    let mut gap_err = Vec::new();
    for i in 0..5u64 {
        srv.sent.lock().unwrap().clear();
        let d = Dispatch {
            id: i,
            clock,
            scheduled: clock.now(),
            slot: clock.now(),
        };
        let r = w
            .send(spec(Some(CHUNKS as u32)), d, CancellationToken::new())
            .await;
        assert_eq!(r.outcome, Outcome::Completed);
        let sent: Vec<u64> = srv
            .sent
            .lock()
            .unwrap()
            .iter()
            .map(|t| clock.since(*t))
            .collect();
        assert_eq!(r.chunks.len(), sent.len());
        ttft_err.push((r.chunks[0].at as f64 - sent[0] as f64).abs() / 1e6);
        for k in 1..sent.len() {
            let client_gap = r.chunks[k].at as f64 - r.chunks[k - 1].at as f64;
            let server_gap = sent[k] as f64 - sent[k - 1] as f64;
            gap_err.push((client_gap - server_gap).abs() / 1e6);
        }
    }
    let (t, g) = (median(ttft_err), median(gap_err));
    assert!(t < 5.0, "median TTFT error {t} ms");
    assert!(g < 5.0, "median gap error {g} ms");
}

/// A raw HTTP/1.1 server: on each connection it answers the first `answered` requests with a
/// streamed completion (advertising keep-alive), then reads the next request and closes the
/// connection without a byte, as llama.cpp's server sometimes does after a streamed response.
/// Returns its URL and the number of connections it accepted.
async fn closing_server(answered: usize) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    closing_server_heads(answered, Arc::default()).await
}

/// [`closing_server`], recording every request head it reads in `heads`.
async fn closing_server_heads(
    answered: usize,
    heads: Arc<std::sync::Mutex<Vec<String>>>,
) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let heads = heads.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut served = 0;
                loop {
                    // Read one request: head, then a Content-Length body.
                    let mut chunk = [0u8; 4096];
                    let (head_end, len) = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                            let len = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            if buf.len() >= i + 4 + len {
                                heads
                                    .lock()
                                    .unwrap()
                                    .push(String::from_utf8_lossy(&buf[..i]).into_owned());
                                break (i + 4, len);
                            }
                        }
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    buf.drain(..head_end + len);
                    if served == answered {
                        return; // drops the socket: closed, unanswered
                    }
                    served += 1;
                    let mut body = String::new();
                    for e in COMPLETION_EVENTS {
                        let ev = format!("data: {e}\n\n");
                        body.push_str(&format!("{:x}\r\n{ev}\r\n", ev.len()));
                    }
                    body.push_str("0\r\n\r\n");
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                         Transfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n{body}"
                    );
                    if sock.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}/v1"), accepted)
}

#[tokio::test]
async fn a_kept_alive_connection_closed_unanswered_is_resent_and_counted() {
    let (url, accepted) = closing_server(1).await;
    let w = Worker::new(config(url, BackendKind::OpenAiCompletions))
        .await
        .unwrap();
    for i in 0..4 {
        let r = send(&w, Some(3)).await;
        assert_eq!(r.outcome, Outcome::Completed, "request {i}");
        assert_eq!(r.chunks.len(), 3);
        assert_eq!(r.output_tokens, 3);
    }
    // Requests 2-4 each found the previous request's connection, which the server closed as
    // they were written: each was resent once, on a new connection.
    assert_eq!(w.resent_requests(), 3);
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_server_that_never_answers_is_resent_at_most_twice_then_fails() {
    let (url, accepted) = closing_server(0).await;
    let w = Worker::new(config(url, BackendKind::OpenAiCompletions))
        .await
        .unwrap();
    let r = send(&w, Some(3)).await;
    match &r.outcome {
        Outcome::Connect { message } => {
            assert!(
                message.contains("connection closed before message completed"),
                "{message}"
            );
        }
        o => panic!("expected a connect outcome, got {o:?}"),
    }
    assert_eq!(w.resent_requests(), 2);
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 3);
}

#[tokio::test]
async fn http1_requests_carry_an_origin_form_target_and_a_host_header() {
    let heads: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let (url, _) = closing_server_heads(5, heads.clone()).await;
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    let w = Worker::new(config(url, BackendKind::OpenAiCompletions))
        .await
        .unwrap();
    assert_eq!(send(&w, Some(3)).await.outcome, Outcome::Completed);
    let mut cfg = config(
        format!("http://{authority}/v1"),
        BackendKind::OpenAiCompletions,
    );
    cfg.headers = vec![("Host".into(), "models.internal".into())];
    let w = Worker::new(cfg).await.unwrap();
    assert_eq!(send(&w, Some(3)).await.outcome, Outcome::Completed);
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 2, "{heads:?}");
    for h in &heads {
        assert!(h.starts_with("POST /v1/completions HTTP/1.1\r\n"), "{h}");
        assert_eq!(
            h.to_ascii_lowercase().matches("\r\nhost:").count(),
            1,
            "{h}"
        );
    }
    assert!(
        heads[0]
            .to_ascii_lowercase()
            .contains(&format!("\r\nhost: {authority}")),
        "{}",
        heads[0]
    );
    assert!(heads[1].contains("models.internal"), "{}", heads[1]);
}

/// A closed-loop stream against a server that is gone backs off (issue 13, defect 3): each
/// failed connection holds the request up to 1 s before it returns, so 4 streams make about
/// one attempt per second each instead of a storm.
#[tokio::test(start_paused = true)]
async fn refused_connections_back_off_to_about_one_per_second_per_stream() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let w = Worker::new(config(
        format!("http://127.0.0.1:{port}"),
        BackendKind::OpenAiCompletions,
    ))
    .await
    .unwrap();
    let start = tokio::time::Instant::now();
    let attempts = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut streams = Vec::new();
    for s in 0..4u64 {
        let (w, attempts) = (w.clone(), attempts.clone());
        streams.push(tokio::spawn(async move {
            let mut n = 0u64;
            while start.elapsed() < Duration::from_secs(10) && n < 100_000 {
                let r = w
                    .send(spec(Some(3)), dispatch(s), CancellationToken::new())
                    .await;
                assert!(
                    matches!(r.outcome, Outcome::Connect { .. }),
                    "{:?}",
                    r.outcome
                );
                n += 1;
                attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }));
    }
    for s in streams {
        s.await.unwrap();
    }
    let n = attempts.load(std::sync::atomic::Ordering::Relaxed);
    // Doubling from 10 ms to 1 s takes ~8 failures (~1.3 s in all), then 1 per second: with 4
    // streams sharing the count, at most ~4 x 10 + the ramp in 10 s.
    assert!(n <= 60, "{n} connection attempts in 10 s");
    assert!(n >= 8, "{n}: the streams kept trying");
}
