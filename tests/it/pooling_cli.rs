//! Issue 23, embeddings and rerank end to end: the real `bench` binary against its in-process
//! simulator, whose pooling requests take the closed-form service time
//! `d = pool_base_ms + pool_per_input_ms * inputs + 1000 * tokens / pool_token_rate` ms with
//! `max_batch` served at once (docs/simulator.md, "Embeddings and rerank"). The report's
//! figures are checked against it and against the simulator's request log; the sweep's
//! capacity and SLO search against `max_batch / d`.

use crate::common;

use common::{bench, f, fresh, mock_report, serial, text, write_sim};
use serde_json::Value;

const REQUESTS: u64 = 8;
/// Prompt tokens of each input (the simulator counts with the same built-in tokenizer).
const P: u64 = 16;

fn run(name: &str, backend: &str, batch: u64, sim: &str) -> (Value, Vec<Value>) {
    let data = format!("prompt_tokens={P},batch_size={batch}");
    common::logged_synchronous_run("pooling", name, sim, backend, REQUESTS, &data, &[])
}

#[test]
fn embeddings_figures_equal_the_closed_form_and_the_log() {
    let _one = serial();
    // d = 5 + 1 * 4 + 1000 * 64 / 64000 = 10 ms.
    let sim = "pool_base_ms: 5\npool_per_input_ms: 1\npool_token_rate: 64000\n";
    let (b, log) = run("embeddings", "openai-embeddings", 4, sim);
    assert_eq!(f(&b, &["requests", "completed"]), REQUESTS as f64);
    assert_eq!(log.len() as u64, REQUESTS);
    for e in &log {
        assert_eq!(e["endpoint"], "/v1/embeddings");
        assert_eq!(e["inputs"].as_u64(), Some(4));
        assert_eq!(e["prompt_tokens"].as_u64(), Some(4 * P));
        let served = e["reply_unix_ns"].as_u64().expect("reply time")
            - e["arrival_unix_ns"].as_u64().expect("arrival");
        assert!(served >= 10_000_000, "{e}");
    }
    // Input tokens: the server's usage, equal to the log's count.
    let total: u64 = log
        .iter()
        .map(|e| e["prompt_tokens"].as_u64().expect("prompt tokens"))
        .sum();
    assert_eq!(
        f(&b, &["tokens", "prompt", "completed", "total"]),
        total as f64
    );
    assert_eq!(
        b["tokens"]["prompt"]["sources"]["usage"].as_u64(),
        Some(REQUESTS)
    );
    assert_eq!(f(&b, &["tokens", "output", "completed", "total"]), 0.0);
    // Request latency covers the closed-form service time; nothing streamed, so no TTFT.
    assert_eq!(f(&b, &["metrics", "e2el_ms", "count"]), REQUESTS as f64);
    assert!(
        f(&b, &["metrics", "e2el_ms", "min"]) >= 10.0,
        "{}",
        b["metrics"]["e2el_ms"]
    );
    assert_eq!(f(&b, &["metrics", "ttft_ms", "count"]), 0.0);
    // Input tokens per second: requests per second times the mean input tokens.
    let rps = f(&b, &["rates", "requests_per_s"]);
    let itps = f(&b, &["rates", "input_tokens_per_s"]);
    assert!(
        (itps - rps * (4 * P) as f64).abs() <= 1e-6 * itps,
        "{itps} vs {rps}"
    );
    // Synchronous: one request at a time, each at least d long.
    assert!(rps <= 100.0, "{rps}");
}

#[test]
fn rerank_counts_pairs_from_usage_and_cohere_keeps_the_loaders_count() {
    let _one = serial();
    let sim = "pool_base_ms: 1\npool_per_input_ms: 0\npool_token_rate: 0\n";
    // 5 inputs: a query and 4 documents; the server encodes 4 (query, document) pairs.
    let (b, log) = run("rerank", "rerank", 5, sim);
    assert_eq!(f(&b, &["requests", "completed"]), REQUESTS as f64);
    for e in &log {
        assert_eq!(e["endpoint"], "/v1/rerank");
        assert_eq!(e["inputs"].as_u64(), Some(4));
        assert_eq!(e["prompt_tokens"].as_u64(), Some(4 * (P + P)));
    }
    let total = (REQUESTS * 4 * 2 * P) as f64;
    assert_eq!(f(&b, &["tokens", "prompt", "completed", "total"]), total);
    let (c, log) = run("cohere", "cohere-rerank", 5, sim);
    assert_eq!(f(&c, &["requests", "completed"]), REQUESTS as f64);
    assert!(log.iter().all(|e| e["endpoint"] == "/v2/rerank"));
    // Cohere's reply carries no token count: the loader's 5 inputs of P tokens.
    assert_eq!(
        f(&c, &["tokens", "prompt", "completed", "total"]),
        (REQUESTS * 5 * P) as f64
    );
    assert_eq!(
        c["tokens"]["prompt"]["sources"]["tokenizer"].as_u64(),
        Some(REQUESTS)
    );
}

/// The sweep and the SLO search on embeddings: `max_batch = 16` slots of `d = 90 + 2.5 * 4 =
/// 100` ms give `16 / 0.1 = 160` requests/s. The simulator's timer ends a sleep late, by up to
/// a millisecond on a quiet machine and by more on a busy one, so the server's own capacity is
/// `16 / h`, `h` the mean time a request held its slot by the simulator's log (from
/// `submitted_unix_ns`, the slot granted, to `reply_unix_ns`): the measured capacity lies
/// within 5% below that (the sweep's rungs sit at most that far under the rate that saturates)
/// and never above `16 / 0.1`. A CI run beside two timed tests read 147.9 req/s, 7% under `16 /
/// 0.101`: the timers, not bench, as the log now shows. Below the capacity open-loop requests
/// never wait (e2el about `d`); above it the queue grows by `rate - capacity` a second, so in a
/// 2 s benchmark `e2el_p99 <= 200 ms` (2 d) still holds up to about 1.05 times the capacity:
/// the SLO search lands between the capacity's lower bound (less 15 % for the scheduling
/// spikes of a loaded machine) and 1.1 times it.
#[test]
fn sweep_and_slo_search_find_the_closed_form_capacity() {
    let _one = serial();
    let dir = fresh("pooling", "sweep");
    let sim = "max_batch: 16\npool_base_ms: 90\npool_per_input_ms: 2.5\npool_token_rate: 0\n";
    let log = dir.join("log.jsonl");
    let cfg = write_sim(&dir, sim, Some(&log));
    let data = format!("prompt_tokens={P},batch_size=4");
    let args = [
        "--backend",
        "openai-embeddings",
        "--data",
        &data,
        "--max-seconds",
        "2",
        "--warmup",
        "0.2",
        "--sweep-size",
        "5",
        "--slo",
        "e2el_p99=200",
        "--slo-tolerance",
        "0.02",
    ];
    let v = mock_report("sweep", "sweep", &dir, Some(&cfg), &args);
    let held: Vec<f64> = common::read_log(&log)
        .iter()
        .filter_map(|e| {
            let (a, b) = (
                e["submitted_unix_ns"].as_u64()?,
                e["reply_unix_ns"].as_u64()?,
            );
            Some((b - a) as f64 / 1e9)
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    let cap = &v["capacity"];
    let h = held.iter().sum::<f64>() / held.len() as f64;
    let (server, high) = (16.0 / h, 16.0 / 0.1);
    let low = 16.0 / 0.101;
    let got = f(cap, &["max_requests_per_s"]);
    eprintln!("capacity {got:.1} req/s; the server's 16 / {h:.5} s = {server:.1}; closed form {low:.1}-{high:.1}");
    assert!(h >= 0.1, "a slot held {h} s, under the service time");
    assert!(
        got >= 0.95 * server && got <= 1.01 * high,
        "capacity {got} vs the server's {server}: {cap}"
    );
    assert!(cap["max_output_tokens_per_s"].is_null(), "{cap}");
    let slo = f(cap, &["slo_max_requests_per_s"]);
    assert!(
        slo >= 0.85 * server.min(low) && slo <= 1.1 * high,
        "SLO rate {slo}: {cap}"
    );
}

#[test]
fn batch_options_that_do_not_fit_the_backend_are_usage_errors() {
    let _one = common::serial();
    let cases: [(&str, &str, &str); 4] = [
        ("openai-chat", "prompt_tokens=8,batch_size=3", "batch_size=3 applies to the openai-embeddings, rerank and cohere-rerank backends, not openai-chat"),
        ("rerank", "prompt_tokens=8", "needs batch_size >= 2 (got 1)"),
        ("openai-embeddings", "prompt_tokens=8,batch_size=0", "batch_size must be at least 1"),
        ("openai-embeddings", "prompt_tokens=8,turns=2", "sessions (turns=, conversation files) do not apply to the openai-embeddings backend"),
    ];
    for (backend, data, says) in cases {
        let out = bench(&[
            "run",
            "--mock",
            "--rate-type",
            "synchronous",
            "--max-requests",
            "1",
            "--backend",
            backend,
            "--data",
            data,
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{backend} {data}: {err}");
        assert!(err.contains(says), "{backend} {data}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
}
