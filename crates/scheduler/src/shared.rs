//! What the pacer, the request and session tasks and the collecting loop share: the
//! benchmark's counters ([`Shared`], sessions' outcomes among them) and the record of a request
//! abandoned at the hard deadline. Below the pacer and the sessions, which both use them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bench_core::{Dispatch, Nanos, Outcome, RateChange, RequestRecord, SessionCounts, TokenSource};

/// Counters shared by the pacer, the request tasks and the collecting loop.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) in_flight: AtomicU64,
    pub(crate) sent: AtomicU64,
    /// Intended time of the request the pacer holds but has not dispatched (`u64::MAX`: none).
    pub(crate) pending_due: AtomicU64,
    /// Requests given up at the hard deadline.
    pub(crate) abandoned: AtomicU64,
    /// Slot of the request that opens the window of a count warmup (`u64::MAX`: not yet).
    pub(crate) window_open: AtomicU64,
    /// Slot of the request that closes the window of a count cooldown (`u64::MAX`: not yet).
    pub(crate) window_close: AtomicU64,
    /// How sessions ended (sessions only).
    pub(crate) sessions: SessionTally,
    /// When a ramp-up's rate (or streams) changed, as sent.
    pub(crate) ramp_changes: std::sync::Mutex<Vec<RateChange>>,
}

impl Shared {
    pub(crate) fn new() -> Self {
        Self {
            in_flight: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            pending_due: AtomicU64::new(u64::MAX),
            abandoned: AtomicU64::new(0),
            window_open: AtomicU64::new(u64::MAX),
            window_close: AtomicU64::new(u64::MAX),
            sessions: SessionTally::default(),
            ramp_changes: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Records a ramp-up's change to `rate` at `at_s` seconds after the start.
    pub(crate) fn ramp_change(&self, at_s: f64, rate: f64) {
        if let Ok(mut c) = self.ramp_changes.lock() {
            c.push(RateChange { at_s, rate });
        }
    }

    /// Takes the next request id unless `count` ids are taken already (session turns).
    pub(crate) fn reserve_id(&self, count: Option<u64>) -> Option<u64> {
        let limit = count.unwrap_or(u64::MAX);
        self.sent
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok()
    }

    /// Requests due but not yet sent, estimated from how late the pacer's pending request is.
    pub(crate) fn queued(&self, now: Nanos, rate: f64) -> f64 {
        let due = self.pending_due.load(Ordering::Relaxed);
        if due == u64::MAX || due >= now {
            0.0
        } else {
            1.0 + (now - due) as f64 / 1e9 * rate
        }
    }
}

/// Session outcomes, counted as sessions end.
#[derive(Debug, Default)]
pub(crate) struct SessionTally {
    pub(crate) used: AtomicBool,
    pub(crate) started: AtomicU64,
    pub(crate) completed: AtomicU64,
    pub(crate) cut: AtomicU64,
    pub(crate) errored: AtomicU64,
}

impl SessionTally {
    /// The counts, when the benchmark ran sessions.
    pub(crate) fn snapshot(&self) -> Option<SessionCounts> {
        self.used.load(Ordering::Relaxed).then(|| SessionCounts {
            started: self.started.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            cut: self.cut.load(Ordering::Relaxed),
            errored: self.errored.load(Ordering::Relaxed),
        })
    }
}

/// The record of a request that did not return after cancellation within the grace period.
pub(crate) fn abandoned(d: &Dispatch, prompt_tokens: u32, requested: Option<u32>) -> RequestRecord {
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
        dispatched: d.slot,
        headers: None,
        chunks: Vec::new(),
        end: d.clock.now(),
        prompt_tokens,
        prompt_tokens_source: TokenSource::Tokenizer,
        output_tokens: 0,
        output_tokens_source: TokenSource::Chunks,
        requested_output_tokens: requested,
        outcome: Outcome::Cancelled,
    }
}
