//! Fault injection: each fault does what it says, faults combine, and draws are seeded.

use crate::common;

use std::time::{Duration, Instant};

use bench_mock::{EndKind, Faults, MockConfig, MockServer};
use common::*;
use serde_json::{json, Value};

fn stream_body(n: u32) -> Value {
    json!({"prompt": "fault test", "max_tokens": n, "ignore_eos": true, "stream": true})
}

/// A timed server (tokens 3 ms apart) that logs in memory, with `faults`.
async fn timed(faults: Faults) -> MockServer {
    MockServer::start(MockConfig {
        step_base_ms: 3.0,
        step_per_seq_ms: 0.0,
        prefill_overhead_ms: 1.0,
        prefill_rate: 0.0,
        record_requests: true,
        faults,
        ..MockConfig::default()
    })
    .await
    .expect("start")
}

async fn zero(faults: Faults) -> MockServer {
    MockServer::start(MockConfig {
        record_requests: true,
        faults,
        ..MockConfig::zero_delay()
    })
    .await
    .expect("start")
}

/// Waits until the server has recorded `n` requests.
async fn records(s: &MockServer, n: usize) -> Vec<bench_mock::RequestLogEntry> {
    for _ in 0..500 {
        let r = s.request_log();
        if r.len() >= n {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "server recorded {} requests, expected {n}",
        s.request_log().len()
    );
}

#[tokio::test]
async fn http_error_statuses_with_error_bodies() {
    for (status, faults) in [
        (
            429,
            Faults {
                http_429: 1.0,
                ..Faults::default()
            },
        ),
        (
            500,
            Faults {
                http_500: 1.0,
                ..Faults::default()
            },
        ),
        (
            503,
            Faults {
                http_503: 1.0,
                ..Faults::default()
            },
        ),
    ] {
        let s = zero(faults).await;
        let r = post(s.addr(), "/v1/completions", &stream_body(5)).await;
        assert_eq!(r.status, status);
        let v = r.json();
        assert_eq!(v["error"]["code"], status);
        assert!(v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("simulated")));
        if status != 500 {
            assert_eq!(r.headers["retry-after"], "1");
        }
        // TGI shape on TGI routes.
        let r = post(
            s.addr(),
            "/generate_stream",
            &json!({"inputs": "x", "parameters": {"max_new_tokens": 3}}),
        )
        .await;
        assert_eq!(r.status, status);
        assert!(r.json()["error"].is_string());
        let log = records(&s, 2).await;
        assert!(log
            .iter()
            .all(|e| e.status == status && e.output_tokens == 0));
        assert_eq!(log[0].faults[0].kind, format!("http_{status}"));
        s.shutdown().await;
    }
}

#[tokio::test]
async fn fractions_are_seeded_and_combine() {
    let faults = Faults {
        http_503: 0.2,
        malformed: 0.3,
        ..Faults::default()
    };
    let mut outcomes = Vec::new();
    for _ in 0..2 {
        let s = MockServer::start(MockConfig {
            seed: 5,
            faults: faults.clone(),
            ..MockConfig::zero_delay()
        })
        .await
        .expect("start");
        let mut send = h1(s.addr()).await;
        let mut o = Vec::new();
        for _ in 0..300 {
            let r = post_on(&mut send, s.addr(), "/v1/completions", &stream_body(8)).await;
            if r.status != 200 {
                o.push((r.status, 0));
                continue;
            }
            let bad = r
                .events()
                .iter()
                .filter(|e| *e != "[DONE]" && serde_json::from_str::<Value>(e).is_err())
                .count();
            o.push((r.status, bad));
        }
        outcomes.push(o);
        s.shutdown().await;
    }
    // Same seed, same faults on the same requests.
    assert_eq!(outcomes[0], outcomes[1]);
    let o = &outcomes[0];
    let n503 = o.iter().filter(|(s, _)| *s == 503).count();
    let malformed = o.iter().filter(|(s, b)| *s == 200 && *b == 1).count();
    let ok = o.iter().filter(|(s, _)| *s == 200).count();
    assert!((40..=80).contains(&n503), "{n503} of 300 answered 503");
    // Malformed events come on a 30% of the answered streams, never more than one.
    assert!(
        (ok * 2 / 10..=ok * 4 / 10).contains(&malformed),
        "{malformed} of {ok}"
    );
    assert!(o.iter().all(|(_, b)| *b <= 1));
}

#[tokio::test]
async fn malformed_event_then_the_stream_goes_on() {
    let s = zero(Faults {
        malformed: 1.0,
        ..Faults::default()
    })
    .await;
    let r = post(s.addr(), "/v1/completions", &stream_body(10)).await;
    assert_eq!(r.status, 200);
    let ev = r.events();
    let bad: Vec<usize> = ev
        .iter()
        .enumerate()
        .filter(|(_, e)| *e != "[DONE]" && serde_json::from_str::<Value>(e).is_err())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(bad.len(), 1, "{ev:?}");
    // After k tokens (1 <= k <= n - 1), and every token still arrives, then [DONE].
    let log = records(&s, 1).await;
    let k = log[0].faults[0].after_tokens.expect("position") as usize;
    assert_eq!(log[0].faults[0].kind, "malformed");
    assert!((1..=9).contains(&k));
    assert_eq!(bad[0], k);
    assert_eq!(token_texts(&ev).len(), 10);
    assert_eq!(ev.last().map(String::as_str), Some("[DONE]"));
    s.shutdown().await;
}

#[tokio::test]
async fn in_stream_error_event_ends_the_stream() {
    let s = timed(Faults {
        stream_error: 1.0,
        ..Faults::default()
    })
    .await;
    let r = post(
        s.addr(),
        "/v1/chat/completions",
        &json!({
        "messages": [{"role": "user", "content": "x"}], "max_tokens": 12, "ignore_eos": true,
        "stream": true}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r.error.is_none());
    let ev = r.events();
    let log = records(&s, 1).await;
    let k = log[0].faults[0].after_tokens.expect("k") as usize;
    assert!((1..=11).contains(&k));
    assert_eq!(token_texts(&ev).len(), k);
    let err: Value = serde_json::from_str(&ev[ev.len() - 2]).expect("error event is JSON");
    assert_eq!(err["error"]["code"], 500);
    assert_eq!(ev.last().map(String::as_str), Some("[DONE]"));
    assert_eq!(log[0].end, EndKind::StreamError);
    assert_eq!(log[0].output_tokens as usize, k);
    // TGI: `data:{"error": "...", "error_type": ...}`.
    let r = post(
        s.addr(),
        "/generate_stream",
        &json!({"inputs": "x", "parameters": {"max_new_tokens": 6, "ignore_eos": true}}),
    )
    .await;
    let last: Value = serde_json::from_str(r.events().last().expect("ev")).expect("json");
    assert!(last["error"].is_string());
    assert_eq!(last["error_type"], "generation");
    s.shutdown().await;
}

#[tokio::test]
async fn reset_cuts_http1_connection_after_k_tokens() {
    let s = timed(Faults {
        reset: 1.0,
        ..Faults::default()
    })
    .await;
    let r = post(s.addr(), "/v1/completions", &stream_body(20)).await;
    assert_eq!(r.status, 200);
    let err = r.error.as_ref().expect("the body must fail");
    // hyper reports the cut body as an I/O error (connection reset) or an incomplete message.
    let io_reset = std::error::Error::source(err)
        .and_then(|e| e.downcast_ref::<std::io::Error>())
        .is_some_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset);
    assert!(io_reset || err.is_incomplete_message(), "{err:?}");
    let log = records(&s, 1).await;
    let k = log[0].faults[0].after_tokens.expect("k") as usize;
    assert!((1..=19).contains(&k));
    assert_eq!(log[0].end, EndKind::Reset);
    assert_eq!(log[0].output_tokens as usize, k);
    assert_eq!(token_texts(&r.events()).len(), k);
    assert!(!r.text().contains("[DONE]"));
    s.shutdown().await;
}

#[tokio::test]
async fn reset_on_http2_resets_the_stream_not_the_connection() {
    let s = timed(Faults {
        reset: 1.0,
        ..Faults::default()
    })
    .await;
    let mut c = h2(s.addr()).await;
    for _ in 0..2 {
        let resp = c
            .send_request(request(s.addr(), "/v1/completions", &stream_body(10)))
            .await
            .expect("head");
        let r = read(resp, Instant::now()).await;
        let err = r.error.expect("stream reset");
        assert!(format!("{err:?}").contains("INTERNAL_ERROR"), "{err:?}");
    }
    let log = records(&s, 2).await;
    assert!(log.iter().all(|e| e.end == EndKind::Reset));
    s.shutdown().await;
}

#[tokio::test]
async fn stall_stops_sending_without_closing() {
    let s = timed(Faults {
        stall: 1.0,
        ..Faults::default()
    })
    .await;
    let mut c = h1(s.addr()).await;
    let resp = c
        .send_request(request(s.addr(), "/v1/completions", &stream_body(10)))
        .await
        .expect("head");
    let mut body = resp.into_body();
    let mut got = String::new();
    use http_body_util::BodyExt;
    // Tokens come every 3 ms; after the stall nothing comes for a long time, and the
    // connection stays open (no end, no error).
    let stalled = loop {
        match tokio::time::timeout(Duration::from_millis(600), body.frame()).await {
            Err(_) => break true,
            Ok(Some(Ok(f))) => {
                if let Ok(d) = f.into_data() {
                    got.push_str(std::str::from_utf8(&d).expect("utf8"));
                }
            }
            Ok(other) => panic!("stream ended instead of stalling: {other:?}"),
        }
    };
    assert!(stalled);
    let k = token_texts(&sse_events(&got)).len();
    assert!((1..=9).contains(&k), "{k}");
    drop(body);
    drop(c);
    let log = records(&s, 1).await;
    assert_eq!(log[0].faults[0].after_tokens, Some(k as u32));
    assert_eq!(log[0].end, EndKind::Stalled);
    s.shutdown().await;
}

#[tokio::test]
async fn stall_with_a_length_resumes() {
    let s = timed(Faults {
        stall: 1.0,
        stall_ms: 300,
        ..Faults::default()
    })
    .await;
    let r = post(s.addr(), "/v1/completions", &stream_body(10)).await;
    assert!(r.error.is_none());
    let ev = r.timed_events();
    assert_eq!(token_texts(&r.events()).len(), 10);
    let gap = ev
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .max()
        .expect("events");
    assert!(gap >= Duration::from_millis(290), "largest gap {gap:?}");
    s.shutdown().await;
}

#[tokio::test]
async fn slow_headers_delay_the_response_head() {
    let s = zero(Faults {
        slow_headers: 1.0,
        slow_headers_ms: 300,
        ..Faults::default()
    })
    .await;
    let r = post(s.addr(), "/v1/completions", &stream_body(3)).await;
    assert_eq!(r.status, 200);
    assert!(r.head_at - r.sent_at >= Duration::from_millis(295));
    let s2 = zero(Faults::default()).await;
    let r = post(s2.addr(), "/v1/completions", &stream_body(3)).await;
    // Generous: a busy machine may be slow, but not 300 ms slow on an idle loopback request.
    assert!(r.head_at - r.sent_at < Duration::from_millis(250));
    s.shutdown().await;
    s2.shutdown().await;
}

/// A client that leaves during the slow-headers delay is still in the request log (issue 13,
/// defect 9): `end: client_gone`, `status: 0` (no response was sent), its fault listed.
#[tokio::test]
async fn a_client_gone_during_slow_headers_is_logged() {
    use tokio::io::AsyncWriteExt as _;
    let s = zero(Faults {
        slow_headers: 1.0,
        slow_headers_ms: 3_000,
        ..Faults::default()
    })
    .await;
    let body = stream_body(3).to_string();
    for _ in 0..3 {
        let mut c = tokio::net::TcpStream::connect(s.addr())
            .await
            .expect("connect");
        let req = format!(
            "POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        c.write_all(req.as_bytes()).await.expect("write");
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(c);
    }
    let log = records(&s, 3).await;
    assert_eq!(log.len(), 3);
    for e in &log {
        assert_eq!(e.end, EndKind::ClientGone, "{e:?}");
        assert_eq!(e.status, 0);
        assert!(e.faults.iter().any(|f| f.kind == "slow_headers"), "{e:?}");
    }
    s.shutdown().await;
}
