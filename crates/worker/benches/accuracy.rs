//! Timing accuracy of the worker: TTFT and per-chunk gaps as the worker records them, against
//! the server's own send times (the ground truth), at low load (one request at a time).
//!
//! The server is the built-in simulator (`bench-mock`) in the same process, with a fixed
//! prefill of 20 ms and decode steps of 5 ms, one request at a time, keeping its ground-truth
//! request log in memory (the `--log-requests` records, with every token's write time). The
//! first-token error compares the simulator's monotonic write instant with the worker's
//! arrival instant on the same clock (so it includes loopback transit and scheduling); the gap
//! error compares successive token write times with successive chunk arrivals.
//!
//! Run: `cargo bench -p bench-worker --bench accuracy` (prints percentiles of the absolute
//! errors in microseconds).

#![allow(clippy::unwrap_used, missing_docs)]

use bench_core::{Backend, CancellationToken, Clock, Dispatch, Outcome, RequestSpec};
use bench_worker::{BackendKind, Worker, WorkerConfig};

const CHUNKS: usize = 32;
const REQUESTS: u64 = 40;

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

fn report(name: &str, mut v: Vec<f64>) {
    v.sort_by(f64::total_cmp);
    println!(
        "{name:<28} n={:<5} p50={:>7.1}us p90={:>7.1}us p99={:>7.1}us max={:>8.1}us",
        v.len(),
        pct(&v, 0.5),
        pct(&v, 0.9),
        pct(&v, 0.99),
        v.last().copied().unwrap_or(f64::NAN)
    );
}

async fn run(http2: bool) {
    let srv = bench_mock::MockServer::start(bench_mock::MockConfig {
        record_requests: true,
        log_token_times: true,
        step_base_ms: 5.0,
        step_per_seq_ms: 0.0,
        prefill_overhead_ms: 20.0,
        prefill_rate: 0.0,
        ..bench_mock::MockConfig::default()
    })
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
    let clock = Clock::start();
    let mut records = Vec::new();
    for id in 0..REQUESTS {
        let now = clock.now();
        let d = Dispatch {
            id,
            clock,
            scheduled: now,
            slot: now,
        };
        let spec = RequestSpec {
            prompt: "hello".into(),
            prompt_tokens: 1,
            output_tokens: Some(CHUNKS as u32),
            at: None,
            batch: Vec::new(),
            images: Vec::new(),
        };
        let r = w.send(spec, d, CancellationToken::new()).await;
        assert_eq!(r.outcome, Outcome::Completed);
        records.push(r);
    }
    let mut log = srv.request_log();
    log.sort_by_key(|e| e.id);
    let (mut ttft, mut gaps) = (Vec::new(), Vec::new());
    for (r, e) in records.iter().zip(&log) {
        assert_eq!(e.token_unix_ns.len(), r.chunks.len());
        let first = clock.since(tokio::time::Instant::from_std(e.first_token.unwrap()));
        ttft.push((r.chunks[0].at as f64 - first as f64).abs() / 1e3);
        for k in 1..r.chunks.len() {
            let c = r.chunks[k].at as f64 - r.chunks[k - 1].at as f64;
            let s = e.token_unix_ns[k] as f64 - e.token_unix_ns[k - 1] as f64;
            gaps.push((c - s).abs() / 1e3);
        }
    }
    let proto = if http2 { "h2" } else { "h1" };
    report(&format!("{proto} first token |error|"), ttft);
    report(&format!("{proto} chunk gap |error|"), gaps);
    srv.shutdown().await;
}

fn main() {
    // `cargo test --benches` runs bench targets with `--test`; keep that quick.
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        run(false).await;
        run(true).await;
    });
}
