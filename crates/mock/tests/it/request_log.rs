//! Ground truth: the request log file and the in-process records agree with what a client saw.

use crate::common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bench_mock::{EndKind, MockConfig, MockServer, RequestLogEntry};
use common::*;
use serde_json::{json, Value};

#[tokio::test]
async fn log_lines_and_in_process_records_match_the_client() {
    let dir = bench_test_support::kept(env!("CARGO_TARGET_TMPDIR"), "mock-log");
    let path = dir.join("requests.jsonl");
    let _ = std::fs::remove_file(&path);
    let s = MockServer::start(MockConfig {
        step_base_ms: 5.0,
        step_per_seq_ms: 0.0,
        prefill_overhead_ms: 20.0,
        prefill_rate: 0.0,
        log_requests: Some(path.clone()),
        log_token_times: true,
        record_requests: true,
        ..MockConfig::default()
    })
    .await
    .expect("start");
    let before = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("t")
        .as_nanos() as u64;
    let r = post(
        s.addr(),
        "/v1/completions",
        &json!({"prompt": "ground truth", "max_tokens": 10, "ignore_eos": true, "stream": true}),
    )
    .await;
    let bad = post(s.addr(), "/v1/completions", &json!({"prompt": 5})).await;
    assert_eq!(bad.status, 400);
    let after = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("t")
        .as_nanos() as u64;
    // Records are pushed when a response body is dropped, just after its last byte is sent.
    let mut records = s.request_log();
    for _ in 0..200 {
        if records.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        records = s.request_log();
    }
    s.shutdown().await;

    // In-process records, with instants comparable to the client's.
    assert_eq!(records.len(), 2);
    let e: &RequestLogEntry = &records[0];
    assert_eq!((e.status, e.stream, e.end), (200, true, EndKind::Completed));
    assert_eq!((e.output_tokens, e.planned_tokens), (10, 10));
    assert_eq!(e.token_unix_ns.len(), 10);
    let (arrival, first, last) = (
        e.arrival.expect("arrival"),
        e.first_token.expect("first"),
        e.last_token.expect("last"),
    );
    // The server took the request after the client sent it, wrote the first token after the
    // 20 ms prefill, and the client read it after the server wrote it.
    assert!(arrival >= r.sent_at);
    assert!(first - arrival >= Duration::from_millis(20));
    let client_first = r.chunks[0].0;
    let client_last = r.chunks.last().expect("c").0;
    assert!(client_first >= first && client_last >= last);
    assert!(client_first - first < Duration::from_millis(500));
    // Wall-clock fields are consistent with the instants.
    let span_ns = e.last_token_unix_ns.expect("l") - e.first_token_unix_ns.expect("f");
    assert_eq!(span_ns, (last - first).as_nanos() as u64);
    assert!(e.arrival_unix_ns >= before - 1_000_000 && e.arrival_unix_ns <= after);
    assert!(e.token_unix_ns.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(records[1].status, 400);
    assert_eq!(records[1].output_tokens, 0);

    // The file holds the same records, one JSON object per line.
    let text = std::fs::read_to_string(&path).expect("log file");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 2);
    let l = &lines[0];
    assert_eq!(l["endpoint"], "/v1/completions");
    assert_eq!(l["status"], 200);
    assert_eq!(l["output_tokens"], 10);
    assert_eq!(l["end"], "completed");
    assert_eq!(l["first_token_unix_ns"], e.first_token_unix_ns.expect("f"));
    assert_eq!(l["token_unix_ns"].as_array().map(Vec::len), Some(10));
    let parsed: RequestLogEntry = serde_json::from_value(l.clone()).expect("entry");
    assert_eq!(parsed.last_token_unix_ns, e.last_token_unix_ns);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn metrics_show_running_and_waiting() {
    let s = MockServer::start(MockConfig {
        max_batch: 2,
        step_base_ms: 20.0,
        ..MockConfig::default()
    })
    .await
    .expect("start");
    let addr = s.addr();
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            tokio::spawn(async move {
                post(
                    addr,
                    "/v1/completions",
                    &json!({"prompt": "x", "max_tokens": 30, "ignore_eos": true,
                            "stream": true}),
                )
                .await
            })
        })
        .collect();
    let mut seen = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let m = get_once(addr, "/metrics").await.text();
        if m.contains("vllm:num_requests_running{model_name=\"mock-model\"} 2\n")
            && m.contains("vllm:num_requests_waiting{model_name=\"mock-model\"} 3\n")
        {
            seen = true;
            break;
        }
    }
    assert!(seen, "{}", s.metrics_text());
    for t in tasks {
        t.abort();
    }
    s.shutdown().await;
}

#[tokio::test]
async fn zero_delay_log_counts_every_token_of_a_one_frame_body() {
    // Zero-delay bodies go out as one frame; the log must still count all their tokens
    // (it once recorded 1, the frame count).
    let s = MockServer::start(MockConfig {
        record_requests: true,
        ..MockConfig::zero_delay()
    })
    .await
    .expect("start");
    let cases = [
        (
            "/v1/completions",
            json!({"prompt": "a b c", "max_tokens": 37, "ignore_eos": true, "stream": true}),
        ),
        (
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 12, "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}}),
        ),
        (
            "/generate_stream",
            json!({"inputs": "hello", "parameters": {"max_new_tokens": 9, "details": true}}),
        ),
        (
            "/v1/completions",
            json!({"prompt": "x", "max_tokens": 21, "ignore_eos": true}),
        ),
    ];
    for (path, body) in &cases {
        let r = post(s.addr(), path, body).await;
        assert_eq!(r.status, 200, "{path}");
    }
    let mut records = s.request_log();
    for _ in 0..200 {
        if records.len() >= cases.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        records = s.request_log();
    }
    s.shutdown().await;
    assert_eq!(records.len(), cases.len());
    for e in &records {
        assert_eq!(e.end, EndKind::Completed);
        assert!(e.planned_tokens > 1);
        assert_eq!(e.output_tokens, e.planned_tokens, "{e:?}");
        assert!(e.first_token.is_some() && e.last_token.is_some());
    }
    let mut tokens: Vec<u32> = records.iter().map(|e| e.output_tokens).collect();
    tokens.sort_unstable();
    // TGI without ignore_eos may stop early; the other three ask for exact lengths.
    assert!(
        tokens.contains(&37) && tokens.contains(&12) && tokens.contains(&21),
        "{tokens:?}"
    );
}
