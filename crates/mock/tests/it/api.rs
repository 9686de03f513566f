//! The API surface: shapes of OpenAI and TGI responses, errors, output length rules.

use crate::common;

use bench_mock::{MockConfig, MockServer};
use common::*;
use serde_json::{json, Value};

async fn zero() -> MockServer {
    MockServer::start(MockConfig::zero_delay())
        .await
        .expect("start")
}

#[tokio::test]
async fn completions_stream_has_one_chunk_per_token_usage_and_done() {
    let s = zero().await;
    let r = post(
        s.addr(),
        "/v1/completions",
        &json!({"model": "whatever", "prompt": "Hello there, simulator", "max_tokens": 12,
                "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "text/event-stream");
    let ev = r.events();
    assert_eq!(ev.len(), 12 + 2, "{ev:?}");
    assert_eq!(ev.last().map(String::as_str), Some("[DONE]"));
    for (i, e) in ev[..12].iter().enumerate() {
        let v: Value = serde_json::from_str(e).expect("json");
        assert_eq!(v["object"], "text_completion");
        assert_eq!(v["model"], s.model());
        let fin = &v["choices"][0]["finish_reason"];
        if i == 11 {
            assert_eq!(fin, "length");
        } else {
            assert!(fin.is_null());
        }
    }
    let usage: Value = serde_json::from_str(&ev[12]).expect("usage json");
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 12);
    let tok = bench_tokenizer::Tokenizer::builtin();
    assert_eq!(
        usage["usage"]["prompt_tokens"],
        tok.count("Hello there, simulator") as u64
    );
    assert_eq!(
        usage["usage"]["total_tokens"],
        tok.count("Hello there, simulator") as u64 + 12
    );
    // The output text counts back to exactly the number of tokens with the same tokenizer.
    let text: String = token_texts(&ev).concat();
    assert_eq!(tok.count(&text), 12, "{text:?}");
    s.shutdown().await;
}

#[tokio::test]
async fn chat_stream_starts_with_a_role_only_chunk_like_vllm() {
    let s = zero().await;
    let r = post(
        s.addr(),
        "/v1/chat/completions",
        &json!({"messages": [{"role": "system", "content": "Be brief."},
                             {"role": "user", "content": "Say something."}],
                "max_completion_tokens": 5, "min_tokens": 5, "stream": true,
                "stream_options": {"include_usage": true}, "temperature": 0.3}),
    )
    .await;
    assert_eq!(r.status, 200);
    let ev = r.events();
    assert_eq!(ev.len(), 1 + 5 + 1 + 1);
    let first: Value = serde_json::from_str(&ev[0]).expect("json");
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(
        first["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    for e in &ev[1..6] {
        let v: Value = serde_json::from_str(e).expect("json");
        assert!(v["choices"][0]["delta"]["content"]
            .as_str()
            .is_some_and(|c| !c.is_empty()));
        assert!(v["choices"][0]["delta"].get("role").is_none());
    }
    let usage: Value = serde_json::from_str(&ev[6]).expect("json");
    let tok = bench_tokenizer::Tokenizer::builtin();
    assert_eq!(
        usage["usage"]["prompt_tokens"],
        (tok.count("Be brief.") + tok.count("Say something.")) as u64
    );
    assert_eq!(usage["usage"]["completion_tokens"], 5);
    assert_eq!(ev[7], "[DONE]");
    // Without stream_options there is no usage chunk.
    let r = post(
        s.addr(),
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "x"}], "max_tokens": 3,
                "ignore_eos": true, "stream": true}),
    )
    .await;
    let ev = r.events();
    assert_eq!(ev.len(), 1 + 3 + 1);
    assert!(ev.iter().all(|e| !e.contains("\"usage\"")));
    s.shutdown().await;
}

#[tokio::test]
async fn non_streaming_completions_and_chat() {
    let s = zero().await;
    let r = post(
        s.addr(),
        "/v1/completions",
        &json!({"prompt": "abc", "max_tokens": 7, "ignore_eos": true}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/json");
    let v = r.json();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["usage"]["completion_tokens"], 7);
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    let tok = bench_tokenizer::Tokenizer::builtin();
    let text = v["choices"][0]["text"].as_str().expect("text");
    assert_eq!(tok.count(text), 7);
    let r = post(
        s.addr(),
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "abc"}], "max_tokens": 4,
                "ignore_eos": true, "stream": false}),
    )
    .await;
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(
        tok.count(v["choices"][0]["message"]["content"].as_str().expect("c")),
        4
    );
    assert_eq!(v["usage"]["completion_tokens"], 4);
    s.shutdown().await;
}

#[tokio::test]
async fn tgi_generate_stream_and_generate() {
    let s = zero().await;
    let r = post(
        s.addr(),
        "/generate_stream",
        &json!({"inputs": "The weather", "parameters": {"max_new_tokens": 6, "details": true,
                "ignore_eos": true, "do_sample": false}}),
    )
    .await;
    assert_eq!(r.status, 200);
    // TGI writes `data:` without a space.
    assert!(r.text().starts_with("data:{"));
    let ev = r.events();
    assert_eq!(ev.len(), 6);
    let mut text = String::new();
    for (i, e) in ev.iter().enumerate() {
        let v: Value = serde_json::from_str(e).expect("json");
        assert_eq!(v["index"], i as u64 + 1);
        text.push_str(v["token"]["text"].as_str().expect("token.text"));
        if i < 5 {
            assert!(v["generated_text"].is_null() && v["details"].is_null());
        } else {
            assert_eq!(v["generated_text"], text.as_str());
            assert_eq!(v["details"]["generated_tokens"], 6);
            assert_eq!(v["details"]["finish_reason"], "length");
        }
    }
    assert!(!r.text().contains("[DONE]"));
    let r = post(
        s.addr(),
        "/generate",
        &json!({"inputs": "x", "parameters": {"max_new_tokens": 3, "details": true,
                "ignore_eos": true}}),
    )
    .await;
    let v = r.json();
    assert_eq!(v["details"]["generated_tokens"], 3);
    let tok = bench_tokenizer::Tokenizer::builtin();
    assert_eq!(tok.count(v["generated_text"].as_str().expect("t")), 3);
    s.shutdown().await;
}

#[tokio::test]
async fn models_health_metrics_and_errors() {
    let s = zero().await;
    let r = get_once(s.addr(), "/v1/models").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["data"][0]["id"], "mock-model");
    let r = get_once(s.addr(), "/health").await;
    assert_eq!(r.status, 200);
    let _ = post(
        s.addr(),
        "/v1/completions",
        &json!({"prompt": "a", "max_tokens": 9, "ignore_eos": true}),
    )
    .await;
    let r = get_once(s.addr(), "/metrics").await;
    assert_eq!(r.status, 200);
    let m = r.text();
    for name in [
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:generation_tokens_total",
    ] {
        assert!(m.contains(&format!("# TYPE {name}")), "{m}");
    }
    assert!(
        m.contains("vllm:generation_tokens_total{model_name=\"mock-model\"} 9"),
        "{m}"
    );
    // Malformed JSON: 400 with an OpenAI-style error body.
    let mut c = h1(s.addr()).await;
    let resp = c
        .send_request(raw_request(
            s.addr(),
            "/v1/completions",
            "{\"prompt\": \"a\",,}",
        ))
        .await
        .expect("head");
    let r = read(resp, std::time::Instant::now()).await;
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["error"]["code"], 400);
    assert_eq!(v["error"]["type"], "BadRequestError");
    assert!(v["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    // Wrong types and missing fields are 400 too; unknown routes 404; wrong method 405.
    let r = post(s.addr(), "/v1/chat/completions", &json!({"messages": "no"})).await;
    assert_eq!(r.status, 400);
    let r = post(
        s.addr(),
        "/v1/completions",
        &json!({"prompt": "a", "max_tokens": 0}),
    )
    .await;
    assert_eq!(r.status, 400);
    let r = post(s.addr(), "/generate", &json!({"parameters": {}})).await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].is_string());
    let r = post(s.addr(), "/v1/nothing", &json!({})).await;
    assert_eq!(r.status, 404);
    let r = get_once(s.addr(), "/v1/completions").await;
    assert_eq!(r.status, 405);
    s.shutdown().await;
}

async fn lengths(seed: u64, body: Value, n: usize) -> Vec<(u64, String)> {
    let s = MockServer::start(MockConfig {
        seed,
        ..MockConfig::zero_delay()
    })
    .await
    .expect("start");
    let mut out = Vec::new();
    for _ in 0..n {
        let v = post(s.addr(), "/v1/completions", &body).await.json();
        out.push((
            v["usage"]["completion_tokens"].as_u64().expect("n"),
            v["choices"][0]["finish_reason"]
                .as_str()
                .expect("f")
                .to_string(),
        ));
    }
    s.shutdown().await;
    out
}

#[tokio::test]
async fn output_length_rules_and_seeded_eos() {
    let free = json!({"prompt": "p", "max_tokens": 50});
    let a = lengths(11, free.clone(), 30).await;
    // Seeded: the same seed gives the same lengths, another seed others.
    assert_eq!(a, lengths(11, free.clone(), 30).await);
    assert_ne!(a, lengths(12, free, 30).await);
    // An EOS anywhere up to the limit: lengths vary, never exceed it, and say why they ended.
    assert!(a.iter().all(|(n, _)| (1..=50).contains(n)));
    let distinct: std::collections::BTreeSet<u64> = a.iter().map(|(n, _)| *n).collect();
    assert!(distinct.len() > 10, "{a:?}");
    for (n, f) in &a {
        assert_eq!(f, if *n == 50 { "length" } else { "stop" });
    }
    // ignore_eos, or min_tokens at the limit, gives exactly the limit.
    let b = lengths(
        11,
        json!({"prompt": "p", "max_tokens": 50, "ignore_eos": true}),
        5,
    )
    .await;
    assert!(b.iter().all(|(n, f)| *n == 50 && f == "length"));
    let c = lengths(
        11,
        json!({"prompt": "p", "max_tokens": 20, "min_tokens": 20}),
        5,
    )
    .await;
    assert!(c.iter().all(|(n, _)| *n == 20));
    // min_tokens below the limit is a floor.
    let d = lengths(
        11,
        json!({"prompt": "p", "max_tokens": 40, "min_tokens": 30}),
        20,
    )
    .await;
    assert!(d.iter().all(|(n, _)| (30..=40).contains(n)), "{d:?}");
    // No limit given: the server default (128).
    let e = lengths(11, json!({"prompt": "p", "ignore_eos": true}), 1).await;
    assert_eq!(e[0].0, 128);
}

#[tokio::test]
async fn server_side_ignore_eos_and_context_limit() {
    let s = MockServer::start(MockConfig {
        ignore_eos: true,
        max_model_len: 100,
        ..MockConfig::zero_delay()
    })
    .await
    .expect("start");
    let v = post(
        s.addr(),
        "/v1/completions",
        &json!({"prompt": "p", "max_tokens": 33}),
    )
    .await
    .json();
    assert_eq!(v["usage"]["completion_tokens"], 33);
    let r = post(
        s.addr(),
        "/v1/completions",
        &json!({"prompt": "p", "max_tokens": 100}),
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("maximum context length")));
    s.shutdown().await;
}

#[tokio::test]
async fn config_errors_are_reported_not_panics() {
    let bad = MockConfig {
        max_batch: 0,
        ..MockConfig::default()
    };
    let e = MockServer::start(bad).await.expect_err("invalid");
    assert!(e.to_string().contains("max_batch"), "{e}");
    let bad = MockConfig {
        tokenizer: Some("/nonexistent/tokenizer.json".into()),
        ..MockConfig::default()
    };
    assert!(MockServer::start(bad).await.is_err());
}
