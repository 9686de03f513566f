//! `bench sweep` and `bench run`, the front end of the runner: the arguments resolved into
//! settings and the shard, the report files claimed, logs set up, signals turned into the
//! run's cancellation token, the progress display fed by the run's events, then the consoles
//! and the exit code ([`finish`]).

use std::io::IsTerminal as _;
use std::process::ExitCode;

use anyhow::Context as _;
use bench_runner::{outputs, RunReport, Runner, ShardPlan, UsageError};
use bench_worker::Worker;
use clap::Args;

use crate::settings::{self, CommonArgs, Settings};
use crate::{progress, signals};

mod finish;

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
    let d = distributed(&args.common, &s)?;
    execute(s, d, args.common.show_config)
}

/// One sweep of `bench plan` with its flags `common` (its configuration's target and run file
/// set): the exit code `bench sweep` would give, and the sweep's report as the runner returned
/// it (`None` when the run did not start).
pub(crate) fn plan_sweep(common: &CommonArgs) -> (anyhow::Result<ExitCode>, Option<RunReport>) {
    let prepared = settings::resolve(common, None, &[], true)
        .and_then(|s| distributed(common, &s).map(|d| (s, d)));
    match prepared {
        Ok((s, d)) => execute_keeping(s, d),
        Err(e) => (Err(e), None),
    }
}

/// `bench run`.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let s = settings::resolve(&args.common, args.rate_type.as_deref(), &args.rate, false)?;
    let d = distributed(&args.common, &s)?;
    execute(s, d, args.common.show_config)
}

/// The run's shard and shared start; an adaptive sweep is refused across shards (each shard
/// would probe and pick its rates alone: docs/distributed.md).
fn distributed(common: &CommonArgs, s: &Settings) -> anyhow::Result<ShardPlan> {
    let index = std::env::var(crate::shard::INDEX_ENV).ok();
    let plan = common.shard.resolve(index.as_deref())?;
    if let Some(sh) = plan.shard.filter(|sh| !sh.is_whole()) {
        if s.load.repeat.trials > 1 {
            return Err(UsageError::new(format!(
                "--shard {sh}: repeated trials (--repeat) run in one process; repeat the distributed run instead"
            ))
            .into());
        }
        if s.load.limits.precision.is_some() {
            return Err(UsageError::new(format!(
                "--shard {sh}: --precision ends each shard's benchmark when its own share is precise, so the shards would not share an end; run --precision unsharded (docs/distributed.md)"
            ))
            .into());
        }
        if matches!(s.load.profile, bench_profile::Profile::Sweep(_)) {
            return Err(UsageError::new(format!(
                "--shard {sh}: an adaptive sweep cannot be split across shards (each would probe alone); run a fixed plan on every shard (--rate-type constant --rate A,B,C), see docs/distributed.md"
            ))
            .into());
        }
    }
    bench_scheduler::Scheduler::<Worker>::validate_shard(
        &s.load.profile,
        &s.load.limits,
        &s.load.warmup,
        &s.load.cooldown,
        plan.shard,
    )
    .map_err(|e| UsageError::new(format!("--shard: {e}")))?;
    Ok(plan)
}

/// Prints the settings (`--show-config`), or checks the outputs and the open-file limit, sets
/// up logging and runs on a new runtime. A run with no file named keeps its JSON in a new
/// default file, whose path is the last line said (stderr) once it holds the run.
fn execute(settings: Settings, shard: ShardPlan, show_config: bool) -> anyhow::Result<ExitCode> {
    if show_config {
        print!("{}", settings::show::text(&settings));
        return Ok(ExitCode::SUCCESS);
    }
    execute_keeping(settings, shard).0
}

/// A run's exit code (or why it failed) and its report as the runner returned it.
type Outcome = (anyhow::Result<ExitCode>, Option<RunReport>);

/// [`execute`] without `--show-config`, keeping the run's report.
fn execute_keeping(settings: Settings, shard: ShardPlan) -> Outcome {
    match started(settings, shard) {
        Ok(outcome) => outcome,
        Err(e) => (Err(e), None),
    }
}

/// Checks the outputs and the open-file limit, sets up logging and runs on a new runtime (`Err`
/// when the run could not start).
fn started(mut settings: Settings, shard: ShardPlan) -> anyhow::Result<Outcome> {
    bench_runner::preflight(&settings)?;
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
    result.map(|(code, report)| (code, Some(report)))
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

/// The run on the runtime, with progress shown and signals heard, then the consoles and the
/// exit code, with the run's report.
async fn run_async(
    s: Settings,
    dist: ShardPlan,
) -> anyhow::Result<(anyhow::Result<ExitCode>, RunReport)> {
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = cancel.clone();
    let (interrupted, signals) = signals::listen(move || stop.cancel())?;
    let (shown, display) = progress::Shown::spawn(s.report.quiet);
    let result = Runner::new(s.clone())
        .shard(dist)
        .events(shown)
        .cancel_on(cancel)
        .run()
        .await;
    // The display ends once the run has dropped its handle on the events.
    if let Some(h) = display {
        let _ = h.await;
    }
    signals.abort();
    Ok(finish::conclude(&s, result?, &interrupted))
}
