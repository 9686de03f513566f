//! What a run tells its caller as it happens: each benchmark's start, its progress ticks, its
//! finished report, the sweep's decisions and its capacity answer, and hints for the user.
//! The caller passes an [`Events`] observer; every method has a default that ignores the
//! event, so an observer implements only what it shows.

use bench_core::{Capacity, Strategy};
use bench_profile::SweepStep;
use bench_report::BenchmarkReport;
use bench_scheduler::Progress;

/// The observer of a run. Called from the run's tasks, so it is shared (`Send + Sync`) and
/// takes `&self`: an observer that keeps state keeps it behind a lock or in atomics. Calls
/// are quick and in order for each kind; a slow observer slows the run.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use bench_runner::{BenchmarkReport, Events};
///
/// /// Counts the finished benchmarks.
/// #[derive(Default)]
/// struct Count(AtomicUsize);
///
/// impl Events for Count {
///     fn benchmark_finished(&self, _index: usize, _report: &BenchmarkReport) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// let count = std::sync::Arc::new(Count::default());
/// let settings = bench_runner::Settings::mock_sweep();
/// let runner = bench_runner::Runner::new(settings).events(count.clone());
/// # drop(runner);
/// assert_eq!(count.0.load(Ordering::Relaxed), 0);
/// ```
pub trait Events: Send + Sync {
    /// A sweep chose its next benchmark: its part of the sweep (probe, ladder rung, rate,
    /// SLO search) and its load. Not called for a fixed list of benchmarks.
    fn sweep_step(&self, index: usize, step: &SweepStep) {
        let _ = (index, step);
    }

    /// Benchmark `index` of about `total` (a sweep's total may grow) starts with `strategy`.
    fn benchmark_started(&self, index: usize, total: usize, strategy: &Strategy) {
        let _ = (index, total, strategy);
    }

    /// A progress snapshot of the running benchmark (about four a second, and one when it
    /// finishes).
    fn progress(&self, progress: &Progress) {
        let _ = progress;
    }

    /// Benchmark `index` finished: its report, as the run's report will hold it.
    fn benchmark_finished(&self, index: usize, report: &BenchmarkReport) {
        let _ = (index, report);
    }

    /// A sweep's capacity answer (with its knee), once its benchmarks are done.
    fn capacity(&self, capacity: &Capacity) {
        let _ = capacity;
    }

    /// The server's gauges (running, waiting, KV usage) and the GPUs' power as they stand,
    /// about once a second while a benchmark runs, when they are scraped and
    /// [`Events::wants_server_gauges`] says so.
    fn server_gauges(&self, gauges: &crate::ServerGauges) {
        let _ = gauges;
    }

    /// Whether the run should read the gauges for [`Events::server_gauges`] (asked once, as
    /// the run starts; reading them costs a summary of the recent scrapes each second).
    fn wants_server_gauges(&self) -> bool {
        false
    }

    /// A hint for the user, said once when it first applies (for example: the server
    /// refused vLLM's body fields, so `--vllm-extensions off` would help).
    fn hint(&self, text: &str) {
        let _ = text;
    }
}

/// An observer that ignores every event.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEvents;

impl Events for NoEvents {}
