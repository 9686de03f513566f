//! Closed-loop capacity: 2 x max_batch x replicas clients, each sending its next request as soon
//! as the previous ends, must see the requests/s and mean inter-token time of the closed form
//! in docs/simulator.md, within 5%:
//!
//!   S = step_base + step_per_seq * max_batch      (the batch is always full)
//!   P = prefill_overhead + prompt_tokens / prefill_rate
//!   C = (ceil(P / S) + n - 1) * S                 (slot cycle of one request)
//!   requests/s = replicas * max_batch / C
//!   mean inter-token time = (C - P) / (n - 1)
//!
//! (`replicas.rs` runs the same loop against several replicas.)
//!
//! Step times of several ms keep timer granularity and scheduler jitter (a busy 2-core machine)
//! well under the tolerance, and the engine's absolute step schedule keeps a late wake-up from
//! shifting later tokens; a wrong engine (step time not growing with the batch, prefill not
//! counted, slots not refilled at once) misses by far more than 5%.

use crate::common;

use std::time::Instant;

use bench_mock::{Balance, MockConfig, MockServer};
use common::*;
use serde_json::{json, Value};

pub(crate) struct Case {
    pub replicas: u32,
    pub balance: Balance,
    pub max_batch: u32,
    pub step_base_ms: f64,
    pub step_per_seq_ms: f64,
    pub prefill_overhead_ms: f64,
    pub prefill_rate: f64,
    pub tokens: u32,
    pub chat: bool,
    pub warmup: usize,
    pub measured: usize,
}

/// Per request: (completion time, first-token time, last-token time).
type Timing = (Instant, Instant, Instant);

async fn client(
    addr: std::net::SocketAddr,
    path: &'static str,
    body: Value,
    n: usize,
) -> Vec<Timing> {
    let mut send = h1(addr).await;
    let mut out = Vec::with_capacity(n);
    let marker = if path.contains("chat") {
        "\"delta\":{\"content\":\""
    } else {
        "\"text\":\""
    };
    for _ in 0..n {
        let r = post_on(&mut send, addr, path, &body).await;
        assert_eq!(r.status, 200);
        assert!(r.error.is_none());
        let mut first = None;
        let mut last = None;
        for (t, b) in &r.chunks {
            let s = std::str::from_utf8(b).expect("utf8");
            if s.contains(marker) {
                first.get_or_insert(*t);
                last = Some(*t);
            }
        }
        let end = r.chunks.last().expect("chunks").0;
        out.push((end, first.expect("tokens"), last.expect("tokens")));
    }
    out
}

/// Least-squares slope of completion time against completion index, in seconds.
fn slope(times: &[Instant]) -> f64 {
    let t0 = times[0];
    let n = times.len() as f64;
    let xs: Vec<f64> = (0..times.len()).map(|i| i as f64).collect();
    let ys: Vec<f64> = times.iter().map(|t| (*t - t0).as_secs_f64()).collect();
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    sxy / sxx
}

pub(crate) async fn run(case: Case) {
    // Never next to the other closed-loop case or the many-at-once burst of transport.rs.
    let _timing = timing_lock().await;
    let server = MockServer::start(MockConfig {
        replicas: case.replicas,
        balance: case.balance,
        max_batch: case.max_batch,
        step_base_ms: case.step_base_ms,
        step_per_seq_ms: case.step_per_seq_ms,
        prefill_overhead_ms: case.prefill_overhead_ms,
        prefill_rate: case.prefill_rate,
        ..MockConfig::default()
    })
    .await
    .expect("start");
    let addr = server.addr();
    let prompt = "Simulators let a benchmark be tested without a GPU.";
    let (path, body) = if case.chat {
        (
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": prompt}], "max_tokens": case.tokens,
                   "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}}),
        )
    } else {
        (
            "/v1/completions",
            json!({"prompt": prompt, "max_tokens": case.tokens, "ignore_eos": true,
                   "stream": true, "stream_options": {"include_usage": true}}),
        )
    };
    // The prompt's token count, as the server counts it.
    let probe = post(addr, path, &body).await;
    let usage: Value = probe
        .events()
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e).ok())
        .find(|v| v["usage"].is_object())
        .expect("usage chunk");
    let prompt_tokens = usage["usage"]["prompt_tokens"]
        .as_f64()
        .expect("prompt tokens");

    let clients = 2 * case.max_batch as usize * case.replicas as usize;
    let per_client = case.warmup + case.measured;
    let tasks: Vec<_> = (0..clients)
        .map(|_| tokio::spawn(client(addr, path, body.clone(), per_client)))
        .collect();
    let mut rate = 0.0;
    let mut itls = Vec::new();
    for t in tasks {
        let timings = t.await.expect("client");
        let measured = &timings[case.warmup..];
        let ends: Vec<Instant> = measured.iter().map(|t| t.0).collect();
        rate += 1.0 / slope(&ends);
        for (_, first, last) in measured {
            itls.push((*last - *first).as_secs_f64() / f64::from(case.tokens - 1));
        }
    }
    server.shutdown().await;

    // The closed form, with the engine's nanosecond rounding.
    let s_ns =
        ((case.step_base_ms + case.step_per_seq_ms * f64::from(case.max_batch)) * 1e6).round();
    let p_ns = {
        let per_token = if case.prefill_rate > 0.0 {
            1e9 / case.prefill_rate
        } else {
            0.0
        };
        (case.prefill_overhead_ms * 1e6 + per_token * prompt_tokens).round()
    };
    let c_ns = ((p_ns / s_ns).ceil() + f64::from(case.tokens) - 1.0) * s_ns;
    let want_rate = f64::from(case.replicas * case.max_batch) / (c_ns / 1e9);
    let want_itl = (c_ns - p_ns) / 1e9 / f64::from(case.tokens - 1);
    let itl = itls.iter().sum::<f64>() / itls.len() as f64;
    let rate_err = (rate - want_rate).abs() / want_rate;
    let itl_err = (itl - want_itl).abs() / want_itl;
    eprintln!(
        "{} x batch {} ({}): {rate:.2} req/s (formula {want_rate:.2}, {:.1}%), ITL {:.3} ms (formula {:.3}, {:.1}%)",
        case.replicas,
        case.max_batch,
        case.balance,
        rate_err * 100.0,
        itl * 1e3,
        want_itl * 1e3,
        itl_err * 100.0
    );
    assert!(
        rate_err < 0.05,
        "requests/s {rate:.2} vs formula {want_rate:.2}"
    );
    assert!(
        itl_err < 0.05,
        "mean ITL {itl:.5}s vs formula {want_itl:.5}s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_matches_formula_small_batch_with_prefill() {
    // S = 14 + 1 * 4 = 18 ms; P = 5 ms + prompt / 2000 tok/s (about 12 ms), n = 16.
    run(Case {
        replicas: 1,
        balance: Balance::RoundRobin,
        max_batch: 4,
        step_base_ms: 14.0,
        step_per_seq_ms: 1.0,
        prefill_overhead_ms: 5.0,
        prefill_rate: 2000.0,
        tokens: 16,
        chat: false,
        warmup: 2,
        measured: 5,
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_matches_formula_large_batch_chat() {
    // S = 6 + 0.25 * 16 = 10 ms; no prefill time; n = 32.
    run(Case {
        replicas: 1,
        balance: Balance::RoundRobin,
        max_batch: 16,
        step_base_ms: 6.0,
        step_per_seq_ms: 0.25,
        prefill_overhead_ms: 0.0,
        prefill_rate: 0.0,
        tokens: 32,
        chat: true,
        warmup: 2,
        measured: 5,
    })
    .await;
}
