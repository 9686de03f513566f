//! A fake backend for scheduler tests on tokio's paused clock.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bench_core::{
    Backend, CancellationToken, Chunk, Dispatch, Nanos, Outcome, RequestRecord, RequestSpec,
    TokenSource,
};
use tokio::sync::Semaphore;

/// What the fake server does with each request.
#[derive(Debug)]
pub struct Fake {
    /// Time to first token.
    pub ttft: Duration,
    /// Gap between tokens.
    pub itl: Duration,
    /// Tokens per response.
    pub tokens: u32,
    /// Server-side capacity (requests served at once); `None`: unlimited.
    pub capacity: Option<Arc<Semaphore>>,
    /// Ignore cancellation (a server that keeps connections open).
    pub ignore_cancel: bool,
    /// Fail request ids for which this returns true.
    pub fail: fn(u64) -> bool,
    /// Fail them with `429` and this `Retry-After` (ms) instead of a 500.
    pub retry_after_ms: Option<u64>,
    /// (id, scheduled, slot, dispatched) of every send, in dispatch order.
    pub log: Mutex<Vec<(u64, Nanos, Nanos, Nanos)>>,
    in_flight: AtomicU64,
    /// The most requests in flight at once.
    pub max_in_flight: AtomicU64,
}

impl Fake {
    pub fn new(ttft_ms: u64, itl_ms: u64, tokens: u32) -> Self {
        Self {
            ttft: Duration::from_millis(ttft_ms),
            itl: Duration::from_millis(itl_ms),
            tokens,
            capacity: None,
            ignore_cancel: false,
            fail: |_| false,
            retry_after_ms: None,
            log: Mutex::new(Vec::new()),
            in_flight: AtomicU64::new(0),
            max_in_flight: AtomicU64::new(0),
        }
    }

    pub fn log(&self) -> Vec<(u64, Nanos, Nanos, Nanos)> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    pub fn max_in_flight(&self) -> u64 {
        self.max_in_flight.load(Ordering::SeqCst)
    }
}

async fn cancelled(c: &CancellationToken, ignore: bool) {
    if ignore {
        std::future::pending::<()>().await
    } else {
        c.cancelled().await
    }
}

impl Backend for Fake {
    async fn send(
        &self,
        spec: RequestSpec,
        d: Dispatch,
        cancel: CancellationToken,
    ) -> RequestRecord {
        let dispatched = d.clock.now();
        if let Ok(mut l) = self.log.lock() {
            l.push((d.id, d.scheduled, d.slot, dispatched));
        }
        let now_in = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now_in, Ordering::SeqCst);
        let mut chunks = Vec::new();
        let ignore = self.ignore_cancel;
        let outcome = 'run: {
            let _permit = match &self.capacity {
                Some(s) => tokio::select! {
                    p = s.acquire() => p.ok(),
                    _ = cancelled(&cancel, ignore) => break 'run Outcome::Cancelled,
                },
                None => None,
            };
            tokio::select! {
                _ = tokio::time::sleep(self.ttft) => {}
                _ = cancelled(&cancel, ignore) => break 'run Outcome::Cancelled,
            }
            for i in 0..self.tokens {
                chunks.push(Chunk::answer(d.clock.now(), 1));
                if i + 1 < self.tokens {
                    tokio::select! {
                        _ = tokio::time::sleep(self.itl) => {}
                        _ = cancelled(&cancel, ignore) => break 'run Outcome::Cancelled,
                    }
                }
            }
            if (self.fail)(d.id) {
                Outcome::Http {
                    status: if self.retry_after_ms.is_some() {
                        429
                    } else {
                        500
                    },
                    body: "boom".into(),
                    retry_after_ms: self.retry_after_ms,
                }
            } else {
                Outcome::Completed
            }
        };
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        RequestRecord {
            target: None,
            model: None,
            cached_tokens: None,
            session: None,
            reasoning: None,
            images: None,
            id: d.id,
            scheduled: d.scheduled,
            slot: d.slot,
            dispatched,
            headers: Some(dispatched),
            output_tokens: chunks.len() as u32,
            chunks,
            end: d.clock.now(),
            prompt_tokens: spec.prompt_tokens,
            prompt_tokens_source: TokenSource::Tokenizer,
            output_tokens_source: TokenSource::Chunks,
            requested_output_tokens: spec.output_tokens,
            outcome,
        }
    }
}

/// Endless identical specs.
pub fn specs() -> impl Iterator<Item = RequestSpec> + Send + 'static {
    std::iter::repeat(RequestSpec {
        prompt: "hello".into(),
        prompt_tokens: 5,
        output_tokens: Some(4),
        at: None,
        batch: Vec::new(),
        images: Vec::new(),
    })
}
