//! The prefix cache over HTTP: a chat's second turn resends the first turn and the reply, the
//! server finds them in its cache, logs the hit, counts it in `/metrics`, and prefills only the
//! rest.

use crate::common;

use std::time::Duration;

use bench_mock::{MockConfig, MockServer, RequestLogEntry};
use common::*;
use serde_json::json;

/// A user message of `n` words.
fn words(n: usize, salt: &str) -> String {
    (0..n).map(|i| format!(" {salt}{}", i % 7)).collect()
}

/// The request log, the `/metrics` text and the second turn's `usage` object.
async fn two_turns(cache_blocks: u32) -> (Vec<RequestLogEntry>, String, serde_json::Value) {
    let s = MockServer::start(MockConfig {
        step_base_ms: 2.0,
        step_per_seq_ms: 0.0,
        prefill_overhead_ms: 0.0,
        prefill_rate: 2000.0, // 0.5 ms per token
        prefix_cache_blocks: cache_blocks,
        record_requests: true,
        ..MockConfig::default()
    })
    .await
    .expect("start");
    let u1 = words(300, "river");
    let r1 = post(
        s.addr(),
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": u1}], "max_tokens": 40,
                "ignore_eos": true}),
    )
    .await;
    assert_eq!(r1.status, 200);
    let reply = r1.json()["choices"][0]["message"]["content"]
        .as_str()
        .expect("reply")
        .to_string();
    let r2 = post(
        s.addr(),
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": u1},
                             {"role": "assistant", "content": reply},
                             {"role": "user", "content": words(10, "stone")}],
                "max_tokens": 4, "ignore_eos": true}),
    )
    .await;
    assert_eq!(r2.status, 200);
    let usage = r2.json()["usage"].clone();
    let mut log = s.request_log();
    for _ in 0..200 {
        if log.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        log = s.request_log();
    }
    let metrics = s.metrics_text();
    s.shutdown().await;
    (log, metrics, usage)
}

fn ttft(e: &RequestLogEntry) -> Duration {
    e.first_token.expect("first") - e.arrival.expect("arrival")
}

#[tokio::test]
async fn second_turn_hits_the_cache_and_prefills_only_the_rest() {
    let (log, metrics, usage) = two_turns(10_000).await;
    let (t1, t2) = (&log[0], &log[1]);
    assert_eq!(t1.cached_tokens, 0);
    // Turn 2's prompt is turn 1's prompt, the reply (40 tokens) and the new message.
    let new = t2.prompt_tokens - t1.prompt_tokens - 40;
    assert!(new > 0, "{t1:?} {t2:?}");
    // Cached: whole 16-token blocks of turn 1's prompt and its reply but the last token.
    let cached = 16 * ((t1.prompt_tokens + 40 - 1) / 16);
    assert_eq!(t2.cached_tokens, cached);
    // The answer says it, as vLLM does with --enable-prompt-tokens-details.
    assert_eq!(
        usage["prompt_tokens_details"]["cached_tokens"],
        json!(cached),
        "{usage}"
    );
    // Prefill is 0.5 ms per uncached token: turn 1 pays for all of its prompt, turn 2 for the
    // rest only (generous upper bounds: the machine may be busy).
    let p1 = Duration::from_secs_f64(f64::from(t1.prompt_tokens) * 0.5e-3);
    let p2 = Duration::from_secs_f64(f64::from(t2.prompt_tokens - cached) * 0.5e-3);
    assert!(ttft(t1) >= p1, "{:?} < {p1:?}", ttft(t1));
    assert!(ttft(t2) >= p2 && ttft(t2) < p1, "{:?}", ttft(t2));
    let queries = t1.prompt_tokens + t2.prompt_tokens;
    assert!(
        metrics.contains(&format!(
            "vllm:prefix_cache_hits_total{{model_name=\"mock-model\"}} {cached}\n"
        )),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!(
            "vllm:prefix_cache_queries_total{{model_name=\"mock-model\"}} {queries}\n"
        )),
        "{metrics}"
    );
}

#[tokio::test]
async fn without_the_cache_the_second_turn_pays_for_its_whole_prompt() {
    let (log, metrics, usage) = two_turns(0).await;
    // Without a prefix cache the answer says nothing of one.
    assert!(usage.get("prompt_tokens_details").is_none(), "{usage}");
    let (t1, t2) = (&log[0], &log[1]);
    assert_eq!((t1.cached_tokens, t2.cached_tokens), (0, 0));
    // Turn 2 pays for its whole prompt, which is longer than turn 1's.
    let p1 = Duration::from_secs_f64(f64::from(t1.prompt_tokens) * 0.5e-3);
    let p2 = Duration::from_secs_f64(f64::from(t2.prompt_tokens) * 0.5e-3);
    assert!(
        p2 > p1 && ttft(t2) >= p2,
        "{:?} {:?} {t1:?} {t2:?}",
        ttft(t1),
        ttft(t2)
    );
    assert!(metrics.contains("vllm:prefix_cache_hits_total{model_name=\"mock-model\"} 0\n"));
}
