//! `bench sweep` and `bench run`, the front end of the runner: the arguments resolved into
//! settings and the shard, the report files claimed, logs set up, signals turned into the
//! run's cancellation token, the watchers fed by the run's events (the progress display, the
//! `--progress-file` lines, the `--live` view: [`crate::watch`]), then the consoles and the
//! exit code ([`finish`]).

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use bench_runner::{outputs, RunReport, Runner, ShardPlan, UsageError};
use bench_worker::Worker;
use clap::Args;

use crate::settings::{self, CommonArgs, Settings};
use crate::watch::{Tee, Watch};
use crate::{live, progress, progress_file, signals};

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
    let w = Watching::of(&args.common, "bench sweep", None)?;
    execute(s, d, args.common.show_config, w)
}

/// One sweep of `bench plan`, of its configuration `config`, with its settings as the plan
/// made them (resolved once, its target and run file set), the shard and the watchers of the
/// plan: the exit code `bench sweep` would give, and the sweep's report as the runner
/// returned it (`None` when the run did not start).
pub(crate) fn plan_sweep(s: Settings, shard: ShardPlan, watch: &Watch, config: &str) -> Outcome {
    let w = Watching {
        watch: watch.clone(),
        title: format!("bench plan: {config}"),
        config: Some(config.to_string()),
    };
    execute_keeping(s, shard, w)
}

/// `bench run`.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let s = settings::resolve(&args.common, args.rate_type.as_deref(), &args.rate, false)?;
    let d = distributed(&args.common, &s)?;
    let w = Watching::of(&args.common, "bench run", None)?;
    execute(s, d, args.common.show_config, w)
}

/// How a run is watched: the watchers' flags, the view's title, and within a plan the
/// configuration (its lines name it; the file is the plan's, appended to; the view does not
/// wait for a key after each sweep).
struct Watching {
    watch: Watch,
    title: String,
    config: Option<String>,
}

impl Watching {
    fn of(common: &CommonArgs, title: &str, config: Option<&str>) -> anyhow::Result<Watching> {
        Ok(Watching {
            watch: Watch::resolve(&common.report)?,
            title: title.to_string(),
            config: config.map(str::to_string),
        })
    }

    /// The command the progress file names (`bench sweep` -> `sweep`).
    fn command(&self) -> &str {
        match &self.config {
            Some(_) => "plan",
            None => self.title.trim_start_matches("bench "),
        }
    }
}

/// The run's shard and shared start; an adaptive sweep is refused across shards (each shard
/// would probe and pick its rates alone: docs/distributed.md).
pub(crate) fn distributed(common: &CommonArgs, s: &Settings) -> anyhow::Result<ShardPlan> {
    let index = std::env::var(crate::shard::INDEX_ENV).ok();
    let dist = common.shard.resolve(index.as_deref())?;
    if let Some(sh) = dist.shard.filter(|sh| !sh.is_whole()) {
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
        dist.shard,
    )
    .map_err(|e| UsageError::new(format!("--shard: {e}")))?;
    Ok(dist)
}

/// Prints the settings (`--show-config`), or checks the outputs and the open-file limit, sets
/// up logging and runs on a new runtime. A run with no file named keeps its JSON in a new
/// default file, whose path is the last line said (stderr) once it holds the run.
fn execute(
    settings: Settings,
    shard: ShardPlan,
    show_config: bool,
    w: Watching,
) -> anyhow::Result<ExitCode> {
    if show_config {
        print!("{}", settings::show::text(&settings));
        return Ok(ExitCode::SUCCESS);
    }
    execute_keeping(settings, shard, w).0
}

/// A run's exit code (or why it failed) and its report as the runner returned it.
pub(crate) type Outcome = (anyhow::Result<ExitCode>, Option<RunReport>);

/// [`execute`] without `--show-config`, keeping the run's report.
fn execute_keeping(settings: Settings, shard: ShardPlan, w: Watching) -> Outcome {
    match started(settings, shard, w) {
        Ok(outcome) => outcome,
        Err(e) => (Err(e), None),
    }
}

/// Checks the outputs and the open-file limit, opens the progress file, sets up logging and
/// runs on a new runtime (`Err` when the run could not start).
fn started(mut settings: Settings, shard: ShardPlan, w: Watching) -> anyhow::Result<Outcome> {
    bench_runner::preflight(&settings)?;
    // A plan's sweeps append to the file the plan started.
    let file = match &w.watch.file {
        Some(p) => Some(progress_file::open(p, w.config.is_none())?),
        None => None,
    };
    init_logs();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let kept = keep_default(&mut settings)?;
    let mut files = settings.report.output.clone();
    let config = w.config.clone();
    let file_events = file.as_ref().map(|f| {
        Arc::new(f.events(w.command(), w.config.as_deref(), w.watch.file_every()))
            as Arc<dyn bench_runner::Events>
    });
    // The whole run is a task on the runtime, not the main thread's `block_on`: records then
    // travel between tasks of one runtime, without waking a third thread for each of them.
    let result = rt.block_on(async {
        match tokio::spawn(run_async(settings, shard, w, file_events)).await {
            Ok(r) => r,
            Err(e) => Err(anyhow::anyhow!("the run task failed: {e}")),
        }
    });
    if let Some(r) = kept {
        if outputs::settle_default(&r) {
            eprintln!("results saved to {}", r.path.display());
        } else {
            files.retain(|p| p != &r.path);
        }
    }
    if let Some(f) = file {
        let json = files
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "json"));
        let error = match &result {
            Err(e) => Some(format!("{e:#}")),
            Ok((Err(e), _)) => Some(format!("{e:#}")),
            Ok(_) => None,
        };
        f.close(config.as_deref(), json.map(|p| p.as_path()), &files, error);
    }
    Ok(match result {
        Ok((code, report)) => (code, Some(report)),
        Err(e) => (Err(e), None),
    })
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
        // Held while the live view has the screen, then written.
        .with_writer(|| live::LogWriter)
        // No colour codes in logs redirected to a file or a pipe.
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
}

/// The run on the runtime, with its watchers fed (the progress display or the live view, and
/// the progress file's lines `file`) and signals heard, then the consoles and the exit code,
/// with the run's report.
async fn run_async(
    s: Settings,
    dist: ShardPlan,
    w: Watching,
    file: Option<Arc<dyn bench_runner::Events>>,
) -> anyhow::Result<(anyhow::Result<ExitCode>, RunReport)> {
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = cancel.clone();
    let (interrupted, signals) = signals::listen(move || stop.cancel())?;
    let view = if w.watch.live {
        live::start(&w.title)
    } else {
        None
    };
    let (shown, display) = progress::Shown::spawn(
        s.report.quiet || view.is_some(),
        w.watch.plain_every(),
        view.is_none(),
    );
    let mut watchers: Vec<Arc<dyn bench_runner::Events>> = vec![shown];
    watchers.extend(
        view.as_ref()
            .map(|v| v.board.clone() as Arc<dyn bench_runner::Events>),
    );
    watchers.extend(file);
    let result = Runner::new(s.clone())
        .shard(dist)
        .events(Arc::new(Tee(watchers)))
        .cancel_on(cancel)
        .run()
        .await;
    // The display ends once the run has dropped its handle on the events.
    if let Some(h) = display {
        let _ = h.await;
    }
    if let Some(v) = view {
        // A finished sweep's last screen stays until `q` (not after `q`, nor in a plan).
        let linger = w.config.is_none()
            && interrupted.exit_code().is_none()
            && result.as_ref().is_ok_and(|f| f.failure.is_none());
        let _ = tokio::task::spawn_blocking(move || v.finish(linger)).await;
    }
    signals.abort();
    Ok(finish::conclude(&s, result?, &interrupted))
}
