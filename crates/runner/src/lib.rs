//! The run as a library: typed [`Settings`] in, a [`RunReport`] out. One call runs what
//! `bench run` and `bench sweep` run (a fixed list of benchmarks, an adaptive sweep, repeated
//! trials, a shard of a distributed run): it starts and stops what runs beside the benchmarks
//! (the simulator for `mock`, the server-metrics and GPU scrapers), drives the scheduler, feeds
//! the records into the report, writes the report files the settings name after every
//! benchmark, and tells the caller's [`Events`] observer what happens as it happens.
//!
//! It does not own the command line, profile files or defaults (the CLI resolves those into
//! [`Settings`]), the consoles, progress display, signals or exit codes (its caller's: an
//! interrupt comes in as a [`CancellationToken`]), nor the deployment plan (`bench-plan`,
//! whose front end runs it once per configuration). It never prints and never exits; its errors are typed
//! ([`Error`]), usage errors apart from failed runs.
//!
//! ```no_run
//! # async fn demo(settings: bench_runner::Settings) -> Result<(), bench_runner::Error> {
//! use std::sync::Arc;
//!
//! struct Lines;
//! impl bench_runner::Events for Lines {
//!     fn benchmark_finished(&self, _index: usize, b: &bench_runner::BenchmarkReport) {
//!         eprintln!("{}: {:.2} req/s", b.label, b.rates.requests_per_s);
//!     }
//! }
//!
//! let finished = bench_runner::Runner::new(settings)
//!     .events(Arc::new(Lines))
//!     .run()
//!     .await?;
//! if let Some(c) = &finished.report.capacity {
//!     println!("capacity: {:?} req/s", c.max_requests_per_s);
//! }
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod data;
mod endings;
mod error;
mod events;
mod finish;
mod gauges;
mod inputs;
pub mod limits;
mod metadata;
mod observer;
pub mod outputs;
mod precise;
mod services;
pub mod settings;
pub mod shard;
mod target;
mod trials;
mod vllm_files;

use std::sync::Arc;

use bench_core::{CancellationToken, Clock};
use bench_scheduler::{Scheduler, SchedulerOptions};

pub use bench_core::Capacity;
pub use bench_report::{BenchmarkReport, RunReport};
pub use error::{Error, UsageError};
pub use events::{Events, NoEvents};
pub use gauges::ServerGauges;
pub use settings::Settings;
pub use shard::ShardPlan;

use inputs::Inputs;
use observer::ReportObserver;
use target::Server;
use trials::{run_trials, Fresh};

/// A run about to start: its settings, and optionally its shard, its observer and the token
/// that interrupts it.
pub struct Runner {
    settings: Settings,
    shard: ShardPlan,
    events: Arc<dyn Events>,
    cancel: CancellationToken,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("settings", &self.settings)
            .field("shard", &self.shard)
            .finish_non_exhaustive()
    }
}

/// A run that ended: its report, and what the caller says of it.
#[derive(Debug)]
pub struct Finished {
    /// The run's report: every finished benchmark (the last one partial when interrupted),
    /// the sweep's capacity, the trials. The report files hold the same.
    pub report: RunReport,
    /// The cancellation token stopped the run (the last benchmark is partial).
    pub interrupted: bool,
    /// Why the run did not finish as asked, when it did not: the scheduler failed (the
    /// benchmarks before the failure are in the report), a report file could not be
    /// written, the server stopped answering, or (unless interrupted) the data stream broke
    /// mid-run (a usage error). The first of these, in that order.
    pub failure: Option<Error>,
    /// How requests ended badly, one line per kind and benchmark (which timeout ended them
    /// and after how long, how many were rate limited): what the counts in the report mean.
    pub ending_notes: Vec<String>,
    /// Requests resent because the server closed a kept-alive connection before answering.
    pub resent_requests: u64,
    /// `/v1/responses` events of unknown types that were ignored.
    pub ignored_events: u64,
}

impl Runner {
    /// A whole (unsharded) run of `settings`, with no observer and no way to interrupt it
    /// but dropping it.
    pub fn new(settings: Settings) -> Self {
        Runner {
            settings,
            shard: ShardPlan::default(),
            events: Arc::new(NoEvents),
            cancel: CancellationToken::new(),
        }
    }

    /// Runs this process's share of a distributed run (docs/distributed.md).
    pub fn shard(mut self, plan: ShardPlan) -> Self {
        self.shard = plan;
        self
    }

    /// Tells `events` what happens during the run.
    pub fn events(mut self, events: Arc<dyn Events>) -> Self {
        self.events = events;
        self
    }

    /// Stops the run gracefully when `token` is cancelled: the running benchmark stops
    /// dispatching, closes as interrupted and is reported; no other benchmark starts.
    pub fn cancel_on(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Runs the benchmarks and returns the report. `Err` when the run could not start (the
    /// settings cannot run, the target does not answer, the simulator did not start); a run
    /// that started returns its report, with what went wrong in [`Finished::failure`].
    pub async fn run(self) -> Result<Finished, Error> {
        preflight(&self.settings)?;
        let Runner {
            settings: mut s,
            shard: dist,
            events,
            cancel,
        } = self;
        let mut inputs = Inputs::resolve(&s, &dist)?;
        let server = target::reach_server(&s, &inputs.tokenizer, dist.shard).await?;

        // What the server says its batch is: the sweep's ladder chooses its rungs by it, and
        // the report states it (docs/metrics.md, "The server's batch").
        let batch = server.fleet.first().server_batch().await;
        for profile in [&mut s.load.profile, &mut inputs.profile] {
            if let bench_profile::Profile::Sweep(spec) = profile {
                spec.server_batch = batch.as_ref().map(|b| b.size);
            }
        }
        let mut run =
            inputs::new_run_report(&s, &server.model, server.fleet.first(), inputs.data_seed);
        run.environment.server_batch = batch;
        if let Some(t) = inputs.trace.take() {
            run.environment.extra.insert("trace".into(), t);
        }
        // The target's clock, read once before the shared start (docs/distributed.md, "Clocks").
        let server_date = match dist.shard {
            Some(sh) if !sh.is_whole() => server.fleet.first().server_date().await,
            _ => None,
        };
        let (clock, shard_run) = services::start_clock(&dist, server_date).await;
        run.shard = shard_run;
        let scrapers = services::start_scrapers(&s, &server.target, clock).await?;
        let at = Started {
            clock,
            scrapers,
            events,
            cancel,
        };
        Ok(drive(&s, &dist, inputs, server, run, at).await)
    }
}

/// Checks, before anything runs, what would make the run fail at its end or on its way: every
/// report file can be written, and the planned concurrency fits under the open-file limit
/// (raised to the hard limit first, and the descriptor table grown, so that no connection
/// waits on the kernel growing it mid-run). [`Runner::run`] calls it first; a caller that
/// sets up more before the run (logs, a runtime) may call it earlier to fail sooner.
pub fn preflight(settings: &Settings) -> Result<(), Error> {
    outputs::check(&settings.report.output)?;
    let planned = limits::planned_concurrency(&settings.load.profile);
    let per_request = limits::descriptors_per_request(settings.target.http2, settings.target.mock);
    let needed = planned.map(|c| limits::descriptors(c, per_request));
    let soft = limits::make_room(needed, needed);
    if let (Some(soft), Some(c)) = (soft, planned) {
        limits::check_fits(c, per_request, soft)?;
    }
    Ok(())
}

/// What the run has once it reached the server: its clock and scrapers, and the caller's
/// observer and token.
struct Started {
    clock: Clock,
    scrapers: services::Scrapers,
    events: Arc<dyn Events>,
    cancel: CancellationToken,
}

async fn stop_mock(mock: Option<bench_mock::MockServer>) {
    if let Some(m) = mock {
        m.shutdown().await;
    }
}

/// Runs the benchmarks on `server` (once, or as trials) with progress relayed and the token
/// heard, stops what ran beside them, and finishes the report.
async fn drive(
    s: &Settings,
    dist: &ShardPlan,
    inputs: Inputs,
    server: Server,
    run: RunReport,
    at: Started,
) -> Finished {
    let Server {
        mock, fleet, model, ..
    } = server;
    let Started {
        clock,
        scrapers,
        events,
        cancel,
    } = at;
    let fleet = Arc::new(fleet);
    let options = SchedulerOptions {
        think_time: s.load.think_time,
        shard: dist.shard,
        ramp: s.load.ramp,
        cancellation: s.load.cancellation,
        ..SchedulerOptions::default()
    };
    let sched = Scheduler::new(fleet.clone(), clock, options);
    let gauges = events
        .wants_server_gauges()
        .then(|| scrapers.gauges(clock, s.report.server_metrics_interval));
    let relay = relay_progress(sched.progress(), events.clone(), gauges);
    let stop = sched.stop_handle();
    let heard = cancel.clone();
    let listener = tokio::spawn(async move {
        heard.cancelled().await;
        stop.stop();
    });

    let mut observer = ReportObserver::new(s, run, scrapers, &model, clock, sched.stop_handle());
    observer.events = events;
    observer.rewind = inputs.rewind;
    observer.targets = fleet.shared_urls();
    observer.shard = dist.shard;
    observer.start_trials(s.load.repeat);
    let fresh = Fresh {
        s,
        tokenizer: &inputs.tokenizer,
        salt: inputs.salt,
    };
    let first = (
        inputs.profile,
        inputs.specs,
        inputs.data_seed.map(|d| d.seed),
    );
    let result = run_trials(&sched, &fresh, first, &mut observer).await;
    drop(sched);
    let _ = relay.await;
    listener.abort();
    stop_mock(mock).await;
    let data_failure = inputs.data_failure.get().map(str::to_string);
    let interrupted = cancel.is_cancelled();
    observer.conclude(result, interrupted, data_failure, &fleet)
}

/// Relays the scheduler's progress snapshots to `events` until the scheduler is dropped, with
/// the scraped `gauges` (when the observer wants them) read at most once a second beside them.
fn relay_progress(
    mut rx: tokio::sync::watch::Receiver<Option<bench_scheduler::Progress>>,
    events: Arc<dyn Events>,
    gauges: Option<gauges::Gauges>,
) -> tokio::task::JoinHandle<()> {
    const GAUGES_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
    tokio::spawn(async move {
        let mut read: Option<std::time::Instant> = None;
        while rx.changed().await.is_ok() {
            let p = rx.borrow_and_update().clone();
            if let Some(p) = p {
                events.progress(&p);
            }
            let Some(gauges) = &gauges else { continue };
            if read.is_none_or(|t| t.elapsed() >= GAUGES_EVERY) {
                read = Some(std::time::Instant::now());
                if let Some(g) = gauges.read() {
                    events.server_gauges(&g);
                }
            }
        }
    })
}
