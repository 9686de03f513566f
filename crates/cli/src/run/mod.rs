//! `bench sweep` and `bench run`: the entry points, which resolve the settings and the run's
//! plan, reach the server, start the side services and drive the benchmarks, then finish.
//!
//! The parts, one job each:
//! - [`plan`]: settings to a run plan (shard checks, tokenizer, data, traces, the report's
//!   header);
//! - [`target`]: the worker, connected to the target (or the simulator) and its model;
//! - [`services`]: beside the run: the simulator, the server-metrics and GPU scrapers, the run clock;
//! - [`observer`]: the scheduler's observer, which feeds records into the reports;
//! - [`trials`]: one run or repeated trials, and the sweep's capacity answer;
//! - [`finish`]: consoles, warnings and the exit code.

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use bench_core::Clock;
use bench_report::RunReport;
use bench_scheduler::{Scheduler, SchedulerOptions};
use clap::Args;

use crate::settings::{self, CommonArgs, Settings};
use crate::shard::ShardPlan;
use crate::{limits, outputs, progress, signals};

mod finish;
mod observer;
mod plan;
mod services;
mod target;
mod trials;

use observer::ReportObserver;
use plan::RunPlan;
use target::Server;
use trials::{run_trials, Fresh};

/// Arguments of `bench sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Arguments of `bench run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Load shape: synchronous, concurrent, throughput, constant, poisson, burst, sweep.
    #[arg(long)]
    pub rate_type: Option<String>,
    /// Rates (req/s) for constant / poisson, streams for concurrent, request counts for burst,
    /// the size for sweep; comma-separated or repeated, one benchmark each.
    #[arg(long, allow_negative_numbers = true)]
    pub rate: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `bench sweep`.
pub fn sweep(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let s = settings::resolve(&args.common, None, &[], true)?;
    let d = plan::distributed(&args.common, &s)?;
    execute(s, d, args.common.show_config)
}

/// One sweep of `bench plan` with its flags `common` (its configuration's target and run file
/// set): the exit code `bench sweep` would give.
pub(crate) fn plan_sweep(common: &CommonArgs) -> anyhow::Result<ExitCode> {
    let s = settings::resolve(common, None, &[], true)?;
    let d = plan::distributed(common, &s)?;
    execute(s, d, false)
}

/// `bench run`.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let s = settings::resolve(&args.common, args.rate_type.as_deref(), &args.rate, false)?;
    let d = plan::distributed(&args.common, &s)?;
    execute(s, d, args.common.show_config)
}

/// Prints the settings (`--show-config`), or checks the outputs and the open-file limit, sets
/// up logging and runs on a new runtime. A run with no file named keeps its JSON in a new
/// default file, whose path is the last line said (stderr) once it holds the run.
fn execute(
    mut settings: Settings,
    shard: ShardPlan,
    show_config: bool,
) -> anyhow::Result<ExitCode> {
    if show_config {
        print!("{settings}");
        return Ok(ExitCode::SUCCESS);
    }
    make_room(&settings)?;
    init_logs();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let kept = keep_default(&mut settings)?;
    // The whole run is a task on the runtime, not the main thread's `block_on`: records then
    // travel between tasks of one runtime, without waking a third thread for each of them.
    let result = rt.block_on(async {
        match tokio::spawn(run_async(settings, shard)).await {
            Ok(r) => r,
            Err(e) => Err(anyhow::anyhow!("the run task failed: {e}")),
        }
    });
    if let Some(r) = kept {
        if outputs::settle_default(&r) {
            eprintln!("results saved to {}", r.path.display());
        }
    }
    result
}

/// With no file named and none turned off: claims the run's default file (a usage error when
/// its directory cannot be written) and adds it to the outputs, which the writer then fills
/// like any other.
fn keep_default(settings: &mut Settings) -> anyhow::Result<Option<outputs::Reserved>> {
    if !settings.report.default_output {
        return Ok(None);
    }
    let kind = settings.load.rate_type.name();
    let r = outputs::reserve(
        std::path::Path::new(outputs::DEFAULT_DIR),
        kind,
        std::time::SystemTime::now(),
    )?;
    settings.report.output.push(r.path.clone());
    Ok(Some(r))
}

/// Refused before anything runs: a report that cannot be written, a concurrency that cannot
/// fit under the open-file limit (raised to the hard limit first).
fn make_room(settings: &Settings) -> anyhow::Result<()> {
    outputs::check(&settings.report.output)?;
    let planned = limits::planned_concurrency(&settings.load.profile);
    let per_request = limits::descriptors_per_request(settings.target.http2, settings.target.mock);
    let needed = planned.map(|c| limits::descriptors(c, per_request));
    // The descriptor table is grown now, so that no connection waits on the kernel growing it
    // mid-run.
    let soft = limits::make_room(needed, needed);
    if let (Some(soft), Some(c)) = (soft, planned) {
        limits::check_fits(c, per_request, soft)?;
    }
    Ok(())
}

/// Logs to stderr, at `warn` unless `RUST_LOG` says otherwise.
fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // No colour codes in logs redirected to a file or a pipe.
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
}

/// The run on the runtime: its plan, the server, the clock and the scraper, then [`drive`].
async fn run_async(s: Settings, dist: ShardPlan) -> anyhow::Result<ExitCode> {
    let mut plan = RunPlan::resolve(&s, &dist)?;
    let server = target::reach_server(&s, &plan.tokenizer, dist.shard).await?;

    let mut run = plan::new_run_report(&s, &server.model, server.fleet.first(), plan.data_seed);
    if let Some(t) = plan.trace.take() {
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
    drive(&s, &dist, plan, server, run, (clock, scrapers)).await
}

/// Runs the benchmarks on `server` (once, or as trials) with progress shown and signals
/// heard, stops what ran beside them, and finishes: consoles, warnings, the exit code.
async fn drive(
    s: &Settings,
    dist: &ShardPlan,
    plan: RunPlan,
    server: Server,
    run: RunReport,
    (clock, scrapers): (Clock, services::Scrapers),
) -> anyhow::Result<ExitCode> {
    let Server {
        mock, fleet, model, ..
    } = server;
    let fleet = Arc::new(fleet);
    let options = SchedulerOptions {
        think_time: s.load.think_time,
        shard: dist.shard,
        ramp: s.load.ramp,
        cancellation: s.load.cancellation,
        ..SchedulerOptions::default()
    };
    let sched = Scheduler::new(fleet.clone(), clock, options);
    let shown = progress::spawn(sched.progress(), s.report.quiet);

    let stop = sched.stop_handle();
    let (interrupted, signals) = signals::listen(move || stop.stop())?;

    let mut observer = ReportObserver::new(s, run, scrapers, &model, clock, sched.stop_handle());
    observer.rewind = plan.rewind;
    observer.targets = fleet.shared_urls();
    observer.shard = dist.shard;
    observer.start_trials(s.load.repeat);
    let fresh = Fresh {
        s,
        tokenizer: &plan.tokenizer,
        salt: plan.salt,
    };
    let first = (plan.profile, plan.specs, plan.data_seed.map(|d| d.seed));
    let result = run_trials(&sched, &fresh, first, &mut observer).await;
    drop(sched);
    if let Some(h) = shown {
        let _ = h.await;
    }
    signals.abort();
    if let Some(m) = mock {
        m.shutdown().await;
    }
    let data_failure = plan.data_failure.get();
    finish::conclude(s, &mut observer, result, &fleet, &interrupted, data_failure)
}
