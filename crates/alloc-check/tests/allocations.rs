//! Heap allocations per request on the client's hot path, counted, not timed (issue 25):
//! `allocation_counter::measure` counts the allocations made on the test's own thread, where a
//! current-thread runtime runs the worker and its connections, while the zero-delay simulator
//! answers from a runtime on other threads. A request's allocations must stay within a fixed
//! budget, and must not grow with its tokens: a per-token allocation would add at least 127
//! between 1-token and 128-token answers, where the chunk list's growth adds a few.
//!
//! The budgets are today's counts with headroom (printed by the test); a change that allocates
//! more per request fails here and says by how much.

use std::sync::mpsc;

use bench_core::{Backend, CancellationToken, Clock, Dispatch, RequestSpec};
use bench_worker::{BackendKind, Worker, WorkerConfig};

/// Allocations per request on the client's thread (chat, `tokens` per answer), the mean over
/// `n` requests after a warm-up.
fn per_request(url: &str, http2: bool, tokens: u32, n: u64) -> f64 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let w = rt
        .block_on(Worker::new(WorkerConfig {
            target: url.to_string(),
            backend: BackendKind::OpenAiChat,
            model: Some("mock-model".into()),
            http2,
            ..WorkerConfig::default()
        }))
        .expect("worker");
    let clock = Clock::start();
    let spec = RequestSpec {
        prompt: "x ".repeat(128).into(),
        prompt_tokens: 128,
        output_tokens: Some(tokens),
        at: None,
        batch: Vec::new(),
        images: Vec::new(),
    };
    // One request driven to its end on this thread (the runtime's tasks run inside block_on).
    let send = |id: u64| {
        let d = Dispatch {
            id,
            clock,
            scheduled: 0,
            slot: 0,
        };
        let r = rt.block_on(w.send(spec.clone(), d, CancellationToken::new()));
        assert_eq!(r.chunks.len(), tokens as usize);
    };
    (0..50).for_each(send);
    let mut total = 0;
    for id in 50..50 + n {
        total += allocation_counter::measure(|| send(id)).count_total;
    }
    total as f64 / n as f64
}

/// The zero-delay simulator on a runtime of its own threads; its URL, and a sender that stops it.
fn simulator() -> (String, mpsc::Sender<()>) {
    let (url_tx, url_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let srv = rt
            .block_on(bench_mock::MockServer::start(
                bench_mock::MockConfig::zero_delay(),
            ))
            .expect("simulator");
        url_tx.send(srv.url()).expect("url");
        let _ = stop_rx.recv();
        rt.block_on(srv.shutdown());
    });
    (url_rx.recv().expect("url"), stop_tx)
}

#[test]
fn a_request_allocates_within_its_budget_and_nothing_per_token() {
    let (url, stop) = simulator();
    // Budgets: today's counts (HTTP/1.1 16 per request, HTTP/2 28; 1 and 4 more for 128
    // tokens) with headroom for reads that coalesce differently.
    for (http2, budget) in [(false, 24.0), (true, 40.0)] {
        let one = per_request(&url, http2, 1, 400);
        let many = per_request(&url, http2, 128, 400);
        eprintln!("http2={http2}: {one:.1} allocations per 1-token request, {many:.1} per 128-token request");
        assert!(
            one <= budget,
            "http2={http2}: {one} allocations per request (budget {budget})"
        );
        assert!(
            many - one <= 8.0,
            "http2={http2}: {many} allocations per 128-token request against {one} per 1-token one: \
             something allocates per token"
        );
    }
    let _ = stop.send(());
}
