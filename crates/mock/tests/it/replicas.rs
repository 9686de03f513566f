//! Replicas behind one port (docs/simulator.md, "Replicas"): the routing policies as the request
//! log records them, N replicas' closed-loop capacity against N times the closed form, and the
//! settings' validation.

use crate::capacity::{self, Case};
use crate::common;

use std::time::Duration;

use bench_mock::{Balance, Error, MockConfig, MockServer, RequestLogEntry};
use common::*;
use serde_json::json;

/// A small, fast engine: 1 ms steps, no prefill cost.
fn fast(replicas: u32, balance: Balance, max_batch: u32) -> MockConfig {
    MockConfig {
        replicas,
        balance,
        max_batch,
        step_base_ms: 1.0,
        step_per_seq_ms: 0.0,
        prefill_overhead_ms: 0.0,
        prefill_rate: 0.0,
        record_requests: true,
        ..MockConfig::default()
    }
}

/// The in-process records once `n` are in, sorted by arrival number.
async fn records(server: &MockServer, n: usize) -> Vec<RequestLogEntry> {
    // Records are pushed when a response body is dropped, just after its last byte is sent.
    for _ in 0..500 {
        if server.request_log().len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut r = server.request_log();
    assert_eq!(r.len(), n, "records: {r:?}");
    r.sort_by_key(|e| e.id);
    r
}

#[tokio::test]
async fn round_robin_spreads_requests_in_turn_over_every_api() {
    const N: u32 = 3;
    let s = MockServer::start(fast(N, Balance::RoundRobin, 8))
        .await
        .expect("start");
    let calls = [
        (
            "/v1/completions",
            json!({"prompt": "a", "max_tokens": 2, "stream": true}),
        ),
        (
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "b"}], "max_tokens": 2}),
        ),
        (
            "/generate_stream",
            json!({"inputs": "c", "parameters": {"max_new_tokens": 2}}),
        ),
        (
            "/v1/responses",
            json!({"input": "d", "max_output_tokens": 2}),
        ),
        ("/v1/embeddings", json!({"input": "e"})),
        ("/generate", json!({"inputs": "f"})),
    ];
    assert_eq!(calls.len(), 2 * N as usize);
    for (path, body) in &calls {
        assert_eq!(post(s.addr(), path, body).await.status, 200, "{path}");
    }
    let log = records(&s, calls.len()).await;
    s.shutdown().await;
    // One at a time, so arrival order is the order sent: replica = arrival number mod N.
    for (e, (path, _)) in log.iter().zip(&calls) {
        assert_eq!(e.replica, (e.id % u64::from(N)) as u32, "{path}: {e:?}");
    }
    for r in 0..N {
        assert_eq!(
            log.iter().filter(|e| e.replica == r).count(),
            2,
            "replica {r}"
        );
    }
}

#[tokio::test]
async fn least_outstanding_avoids_the_busy_replicas() {
    let s = MockServer::start(fast(3, Balance::LeastOutstanding, 1))
        .await
        .expect("start");
    let addr = s.addr();
    // Two long streams (20,000 steps of 1 ms) hold replicas 0 and 1: all idle, the lowest index
    // first. Their heads come back once routed; their bodies stay open.
    let long = json!({"prompt": "long", "max_tokens": 20000, "ignore_eos": true, "stream": true});
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut send = h1(addr).await;
        let resp = send
            .send_request(request(addr, "/v1/completions", &long))
            .await
            .expect("head");
        held.push((send, resp));
    }
    // Each short request finds replica 2 idle (its predecessor done) and the others busy.
    let short = json!({"prompt": "short", "max_tokens": 2, "ignore_eos": true});
    for _ in 0..4 {
        let r = post(addr, "/v1/completions", &short).await;
        assert_eq!(r.status, 200);
    }
    let log = records(&s, 4).await;
    let replicas: Vec<u32> = log.iter().map(|e| e.replica).collect();
    assert_eq!(replicas, [2, 2, 2, 2], "{log:?}");
    drop(held);
    let log = records(&s, 6).await;
    s.shutdown().await;
    assert_eq!((log[0].replica, log[1].replica), (0, 1), "{log:?}");
}

fn two_replicas(balance: Balance) -> Case {
    // capacity.rs's first case on two replicas: S = 18 ms, P about 12 ms, n = 16; 16 clients.
    Case {
        replicas: 2,
        balance,
        max_batch: 4,
        step_base_ms: 14.0,
        step_per_seq_ms: 1.0,
        prefill_overhead_ms: 5.0,
        prefill_rate: 2000.0,
        tokens: 16,
        chat: false,
        warmup: 2,
        measured: 5,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_round_robin_replicas_carry_twice_the_closed_form() {
    capacity::run(two_replicas(Balance::RoundRobin)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_least_outstanding_replicas_carry_twice_the_closed_form() {
    capacity::run(two_replicas(Balance::LeastOutstanding)).await;
}

#[tokio::test]
async fn bad_replica_settings_are_refused_by_name() {
    for replicas in [0, bench_mock::MAX_REPLICAS + 1] {
        let e = MockServer::start(MockConfig {
            replicas,
            ..MockConfig::default()
        })
        .await
        .expect_err("out of range");
        assert!(
            matches!(
                e,
                Error::Invalid {
                    field: "replicas",
                    ..
                }
            ),
            "{e}"
        );
    }
    let dir = bench_test_support::kept(env!("CARGO_TARGET_TMPDIR"), "mock-replicas");
    let path = dir.join("bad-balance.yaml");
    std::fs::write(&path, "replicas: 2\nbalance: fastest\n").expect("write");
    let e = MockConfig::from_file(&path).expect_err("unknown policy");
    let msg = e.to_string();
    assert!(matches!(e, Error::ParseConfig { .. }), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    for want in ["`fastest`", "round-robin", "least-outstanding"] {
        assert!(msg.contains(want), "{want} not in {msg}");
    }
    std::fs::write(&path, "replicas: 0\n").expect("write");
    let e = MockConfig::from_file(&path).expect_err("no replica");
    assert!(e.to_string().contains("`replicas`"), "{e}");
}
