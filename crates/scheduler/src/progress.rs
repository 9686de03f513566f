//! Progress snapshots of the running benchmark.

use std::time::Duration;

/// Where the running benchmark is relative to its measurement window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressPhase {
    /// Before the window opens (excluded from statistics).
    Warmup,
    /// Inside the window.
    Measuring,
    /// After the window closes (excluded from statistics).
    Cooldown,
    /// Dispatch has stopped; waiting for (or cancelling) what is in flight.
    Draining,
}

impl ProgressPhase {
    /// Lower-case name.
    pub fn name(&self) -> &'static str {
        match self {
            ProgressPhase::Warmup => "warmup",
            ProgressPhase::Measuring => "measuring",
            ProgressPhase::Cooldown => "cooldown",
            ProgressPhase::Draining => "draining",
        }
    }
}

/// A snapshot of the running benchmark, published every
/// [`SchedulerOptions::progress_interval`](crate::SchedulerOptions::progress_interval).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Index of the benchmark in the run (0-based).
    pub index: usize,
    /// Benchmarks in the run, when known.
    pub total: usize,
    /// The benchmark's label (`constant@2.20`).
    pub label: String,
    /// Phase.
    pub phase: ProgressPhase,
    /// Time since the benchmark's t0.
    pub elapsed: Duration,
    /// Time left before `max_seconds`, if the benchmark has one.
    pub remaining: Option<Duration>,
    /// Requests dispatched.
    pub sent: u64,
    /// `max_requests` (or the burst size), if any.
    pub max_requests: Option<u64>,
    /// Completed requests per second since t0.
    pub completed_rate: f64,
    /// Requests in flight.
    pub in_flight: u64,
    /// Requests due but waiting for a concurrency slot (estimated from the pacer's lag).
    pub queued: u64,
    /// Requests completed so far.
    pub completed: u64,
    /// Requests cancelled so far.
    pub incomplete: u64,
    /// Requests failed so far.
    pub errored: u64,
    /// Requests the client cancelled on purpose so far (`--cancel-rate`).
    pub cancelled: u64,
    /// Mean time to first token of completed requests, seconds.
    pub mean_ttft: Option<f64>,
    /// Mean inter-token latency of completed requests, seconds (`(t_last - t_first) / (n - 1)`
    /// token-weighted).
    pub mean_itl: Option<f64>,
    /// Requests in flight that have had no byte from the server for
    /// [`SILENCE_NOTICE`](bench_core::SILENCE_NOTICE) or more, longest silent first.
    pub silent: Vec<bench_core::Silent>,
    /// Whether the benchmark has finished.
    pub finished: bool,
}
