//! Timing accuracy of the worker: TTFT and per-chunk gaps as the worker records them, against
//! the server's own send times (the ground truth), at low load (one request at a time).
//!
//! The server is the in-process scripted loopback server of the tests: a fixed TTFT of 20 ms,
//! then `CHUNKS` content events 5 ms apart, each flushed on its own. It records the instant it
//! hands every event to hyper on the same clock the worker uses, so the difference is the
//! worker's measurement error plus loopback transit and scheduling.
//!
//! Run: `cargo bench -p bench-worker --bench accuracy` (prints percentiles of the absolute
//! errors in microseconds).

#![allow(clippy::unwrap_used, missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use bench_core::{Backend, CancellationToken, Clock, Dispatch, Outcome, RequestSpec};
use bench_worker::{BackendKind, Worker, WorkerConfig};
use bytes::Bytes;
use common::{Script, Step};

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
    let mut steps = vec![Step::Sleep(Duration::from_millis(20))];
    for i in 0..CHUNKS {
        let last = i + 1 == CHUNKS;
        steps.push(Step::Send(Bytes::from(format!(
            "data: {{\"choices\":[{{\"delta\":{{\"content\":\" t{i}\"}}{}}}]}}\n\n{}",
            if last {
                ",\"finish_reason\":\"length\""
            } else {
                ""
            },
            if last { "data: [DONE]\n\n" } else { "" }
        ))));
        if !last {
            steps.push(Step::Sleep(Duration::from_millis(5)));
        }
    }
    let srv = common::start(move |_| Script {
        steps: steps.clone(),
        ..Script::sse(&[])
    })
    .await;
    let w = Worker::new(WorkerConfig {
        target: srv.url(),
        backend: BackendKind::OpenAiChat,
        model: Some("m".into()),
        http2,
        ..WorkerConfig::default()
    })
    .await
    .unwrap();
    let clock = Clock::start();
    let (mut ttft, mut gaps) = (Vec::new(), Vec::new());
    for id in 0..REQUESTS {
        srv.sent.lock().unwrap().clear();
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
        };
        let r = w.send(spec, d, CancellationToken::new()).await;
        assert_eq!(r.outcome, Outcome::Completed);
        let sent: Vec<u64> = srv
            .sent
            .lock()
            .unwrap()
            .iter()
            .map(|t| clock.since(*t))
            .collect();
        assert_eq!(sent.len(), r.chunks.len());
        ttft.push((r.chunks[0].at as f64 - sent[0] as f64).abs() / 1e3);
        for k in 1..sent.len() {
            let c = r.chunks[k].at as f64 - r.chunks[k - 1].at as f64;
            let s = sent[k] as f64 - sent[k - 1] as f64;
            gaps.push((c - s).abs() / 1e3);
        }
    }
    let proto = if http2 { "h2" } else { "h1" };
    report(&format!("{proto} first chunk |error|"), ttft);
    report(&format!("{proto} chunk gap |error|"), gaps);
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
