//! The scheduler of bench: drives a [`Backend`] with request specs according to a load
//! [`Strategy`](bench_profile::Strategy), one benchmark after another.
//!
//! This crate owns *when* requests are sent and when a benchmark ends: one loop for every kind
//! (strategies are data), absolute-clock pacing finer than tokio's millisecond timers,
//! concurrency slots with the client queue time recorded, cancellation of what is in flight at
//! the end with a hard deadline, the measurement window (warmup / cooldown), a graceful stop
//! handle and progress snapshots, and the sweep (probes, then rates derived from what they
//! measured). It does not own the transport (`bench-worker`), the data (`bench-loader`), nor the
//! statistics shown to users (`bench-report`): records are handed to an [`Observer`] as they
//! finish.

mod collect;
mod pacer;
mod pacing;
mod progress;
mod session;
mod setup;
mod shared;
mod sweep;

pub use bench_core::{BenchmarkOutcome, Phase, StopReason, Window};
pub use pacing::{wait_until, Pacing};
pub use progress::{Progress, ProgressPhase};
pub use session::Work;
pub use setup::BenchmarkSetup;
pub use sweep::{Observer, RunOutcome};

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bench_core::{Backend, CancellationToken, Clock, Shard, ThinkTime};
pub use bench_profile::ProfileError;
use tokio::sync::watch;

pub use bench_core;
pub use bench_profile;

/// Errors of the scheduler: a benchmark that cannot be run. Per-request failures are never errors;
/// they are records.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// The benchmark's strategy, limits or warmup/cooldown are invalid or do not fit together.
    #[error("invalid benchmark `{label}`: {source}")]
    Invalid {
        /// The benchmark's label.
        label: String,
        /// Why.
        #[source]
        source: ProfileError,
    },
    /// The operating system refused the pacer its thread.
    #[error("starting the pacer thread: {0}")]
    Pacer(#[source] std::io::Error),
    /// The sweep could not derive its rates from the probes.
    #[error("sweep: {0}")]
    Sweep(#[source] ProfileError),
}

/// Tuning of the scheduler itself.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// Where the pacer runs and how it waits: its own thread with high-resolution sleeps
    /// (the default), or a task on tokio's timers (exact on tokio's paused clock, for tests).
    pub pacing: Pacing,
    /// How long requests cancelled at the end of a benchmark may take to return what they
    /// had before they are abandoned (recorded as incomplete without their partial data).
    pub cancel_grace: Duration,
    /// How often progress snapshots are published.
    pub progress_interval: Duration,
    /// The pause between a session's reply and its next turn (sessions only).
    pub think_time: ThinkTime,
    /// This process's share of every benchmark (`None`: all of it). The data are split by
    /// the caller (the specs it hands over are already the shard's).
    pub shard: Option<Shard>,
    /// The ramp-up every benchmark climbs by to its rate or streams (`None`: none); the
    /// caller checks it fits the load ([`bench_core::Ramp::validate`]).
    pub ramp: Option<bench_core::Ramp>,
    /// The share of requests the client cancels, and when (`None`: none; docs/metrics.md,
    /// "Cancellation"). Not applied to session turns.
    pub cancellation: Option<bench_core::Cancellation>,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        Self {
            pacing: Pacing::default(),
            cancel_grace: Duration::from_secs(2),
            progress_interval: Duration::from_millis(250),
            think_time: ThinkTime::None,
            shard: None,
            ramp: None,
            cancellation: None,
        }
    }
}

/// Stops a running [`Scheduler`] gracefully: the current benchmark stops dispatching, its
/// in-flight requests are cancelled (incomplete), it is closed as partial, and no further
/// benchmark starts. Cheap to clone; safe to call from a signal handler task.
///
/// It also ends one benchmark as precise ([`StopHandle::precise`]) and lets the run go on.
#[derive(Debug, Clone)]
pub struct StopHandle {
    interrupt: CancellationToken,
    precise: Arc<AtomicUsize>,
    precise_at: Arc<AtomicU64>,
}

impl StopHandle {
    /// Requests the graceful stop.
    pub fn stop(&self) {
        self.interrupt.cancel();
    }

    /// Whether a stop was requested.
    pub fn is_stopped(&self) -> bool {
        self.interrupt.is_cancelled()
    }

    /// Ends benchmark `index` (of [`Observer`]'s calls), when its setup has a precision target,
    /// because its key figures met it as of `at` (run clock, not in the future): called from
    /// [`Observer::record`], the benchmark stops right after that record (else at its next
    /// progress tick), its window closing at `at`, cancels what is in flight, and closes with
    /// [`StopReason::Precise`]; the run goes on. A call for a benchmark that already ended
    /// does nothing.
    pub fn precise(&self, index: usize, at: bench_core::Nanos) {
        self.precise_at.store(at, Ordering::Relaxed);
        self.precise.store(index + 1, Ordering::Release);
    }
}

/// Runs benchmarks against one backend on one clock.
#[derive(Debug)]
pub struct Scheduler<B> {
    backend: Arc<B>,
    clock: Clock,
    options: SchedulerOptions,
    interrupt: CancellationToken,
    /// `index + 1` of the benchmark to end as precise (0: none), and as of when.
    precise: Arc<AtomicUsize>,
    precise_at: Arc<AtomicU64>,
    progress: watch::Sender<Option<Progress>>,
}

impl<B: Backend> Scheduler<B> {
    /// A scheduler sending through `backend`, timing against `clock`.
    pub fn new(backend: Arc<B>, clock: Clock, options: SchedulerOptions) -> Self {
        Self {
            backend,
            clock,
            options,
            interrupt: CancellationToken::new(),
            precise: Arc::new(AtomicUsize::new(0)),
            precise_at: Arc::new(AtomicU64::new(0)),
            progress: watch::channel(None).0,
        }
    }

    /// The handle that stops the run gracefully.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            interrupt: self.interrupt.clone(),
            precise: self.precise.clone(),
            precise_at: self.precise_at.clone(),
        }
    }

    /// Progress snapshots of the running benchmark (`None` before the first starts).
    pub fn progress(&self) -> watch::Receiver<Option<Progress>> {
        self.progress.subscribe()
    }

    /// The run clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }
}
