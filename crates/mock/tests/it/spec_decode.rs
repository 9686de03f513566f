//! Speculative decoding over HTTP (docs/simulator.md, "Speculative decoding"): a step's tokens
//! travel in one streamed event, so a response has `1 + spec_drafts` content events (its
//! request log line says how many steps it was drawn to take), carrying every token; the
//! `/metrics` counters add up the log's draws; a stream fault strikes between whole steps.

use crate::common;

use std::time::Duration;

use bench_mock::{Faults, MockConfig, MockServer, RequestLogEntry};
use common::*;
use serde_json::{json, Value};

fn config() -> MockConfig {
    MockConfig {
        step_base_ms: 2.0,
        step_per_seq_ms: 0.0,
        prefill_overhead_ms: 1.0,
        prefill_rate: 0.0,
        spec_tokens: 4,
        spec_accept: 0.6,
        record_requests: true,
        seed: 3,
        ..MockConfig::default()
    }
}

/// The server's records once `n` are in (pushed as each body is dropped).
async fn records(s: &MockServer, n: usize) -> Vec<RequestLogEntry> {
    for _ in 0..200 {
        let r = s.request_log();
        if r.len() >= n {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("fewer than {n} records");
}

/// The text of each content event (completions `text`, chat `content`) of a stream.
fn contents(events: &[String]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e).ok())
        .filter_map(|v| {
            let c = &v["choices"][0];
            c["text"]
                .as_str()
                .or(c["delta"]["content"].as_str())
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        })
        .collect()
}

/// The value of the series `line` begins with in a `/metrics` text.
fn value(text: &str, line: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(line))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{line} not in {text}"))
}

#[tokio::test]
async fn a_steps_tokens_travel_in_one_event_and_the_counters_add_up_the_log() {
    let s = MockServer::start(config()).await.expect("start");
    let mut texts = Vec::new();
    for (i, path) in ["/v1/completions", "/v1/chat/completions"]
        .iter()
        .cycle()
        .take(8)
        .enumerate()
    {
        let body = if path.contains("chat") {
            json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 40,
                   "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}})
        } else {
            json!({"prompt": format!("p{i}"), "max_tokens": 40, "ignore_eos": true,
                   "stream": true, "stream_options": {"include_usage": true}})
        };
        let r = post(s.addr(), path, &body).await;
        assert_eq!(r.status, 200);
        texts.push(r.events());
    }
    let log = records(&s, 8).await;
    let metrics = get_once(s.addr(), "/metrics").await.text();
    s.shutdown().await;
    let (mut drafts, mut accepted) = (0.0, 0.0);
    for (e, events) in log.iter().zip(&texts) {
        let c = contents(events);
        assert_eq!(
            c.len() as u32,
            1 + e.spec_drafts,
            "one event per step: {events:?}"
        );
        // Every token is there: 40 words, each a token beginning with a space.
        assert_eq!(c.concat().matches(' ').count(), 40, "{c:?}");
        assert!(
            c.iter().skip(1).any(|t| t.matches(' ').count() > 1),
            "some step carried several tokens: {c:?}"
        );
        let usage = events
            .iter()
            .find(|e| e.contains("\"usage\""))
            .expect("usage");
        assert!(usage.contains("\"completion_tokens\":40"), "{usage}");
        assert!(e.spec_accepted_tokens <= 4 * e.spec_drafts);
        drafts += f64::from(e.spec_drafts);
        accepted += f64::from(e.spec_accepted_tokens);
    }
    assert_eq!(
        value(&metrics, "vllm:spec_decode_num_drafts_total{"),
        drafts
    );
    assert_eq!(
        value(&metrics, "vllm:spec_decode_num_draft_tokens_total{"),
        4.0 * drafts
    );
    assert_eq!(
        value(&metrics, "vllm:spec_decode_num_accepted_tokens_total{"),
        accepted
    );
    assert!(metrics.contains("vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"mock-model\",position=\"3\"}"));
    assert_eq!(value(&metrics, "vllm:generation_tokens_total{"), 8.0 * 40.0);
}

#[tokio::test]
async fn a_stream_fault_strikes_between_whole_steps() {
    let s = MockServer::start(MockConfig {
        faults: Faults {
            stream_error: 1.0,
            ..Faults::default()
        },
        ..config()
    })
    .await
    .expect("start");
    let mut seen = Vec::new();
    for i in 0..6 {
        let r = post(
            s.addr(),
            "/v1/completions",
            &json!({"prompt": format!("f{i}"), "max_tokens": 40, "ignore_eos": true, "stream": true}),
        )
        .await;
        seen.push(contents(&r.events()).concat().matches(' ').count() as u32);
    }
    let log = records(&s, 6).await;
    s.shutdown().await;
    for (e, words) in log.iter().zip(seen) {
        let after = e.faults[0].after_tokens.expect("after");
        // What the client read, what the log wrote and where the fault struck agree: no step
        // was cut in two.
        assert_eq!((words, e.output_tokens), (after, after), "{e:?}");
    }
}
