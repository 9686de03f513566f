//! `bench sweep` and `bench run`: resolve the settings, start the simulator if asked, build the
//! worker, the data and the scheduler, show progress, write the report after every benchmark,
//! and print it.

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use bench_core::{Clock, RequestRecord};
use bench_mock::{MockConfig, MockServer};
use bench_report::{Accumulator, BenchmarkMeta, Environment, RunReport, StatsOptions};
use bench_scheduler::{
    BenchmarkOutcome, BenchmarkPlan, Observer, Phase, Scheduler, SchedulerOptions,
};
use bench_tokenizer::Tokenizer;
use bench_worker::{Worker, WorkerConfig};
use clap::Args;

use crate::settings::{self, CommonArgs, Console, Settings, VllmExtensions};
use crate::{data, progress, UsageError};

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
    #[arg(long)]
    pub rate: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `bench sweep`.
pub fn sweep(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let s = settings::resolve(&args.common, None, &[], true)?;
    execute(s, args.common.show_config)
}

/// `bench run`.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let s = settings::resolve(&args.common, args.rate_type.as_deref(), &args.rate, false)?;
    execute(s, args.common.show_config)
}

fn execute(settings: Settings, show_config: bool) -> anyhow::Result<ExitCode> {
    if show_config {
        print!("{settings}");
        return Ok(ExitCode::SUCCESS);
    }
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // No colour codes in logs redirected to a file or a pipe.
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // The whole run is a task on the runtime, not the main thread's `block_on`: records then
    // travel between tasks of one runtime, without waking a third thread for each of them.
    rt.block_on(async {
        match tokio::spawn(run_async(settings)).await {
            Ok(r) => r,
            Err(e) => Err(anyhow::anyhow!("the run task failed: {e}")),
        }
    })
}

/// Collects records into the report crate's accumulator and writes files after each benchmark.
struct ReportObserver {
    run: RunReport,
    stats: StatsOptions,
    acc: Option<Accumulator>,
    outputs: Vec<std::path::PathBuf>,
    wall_epoch: std::time::SystemTime,
    write_error: Option<String>,
    vllm_files: Option<crate::vllm_files::VllmFiles>,
    /// The vLLM-fields hint was printed.
    hinted: bool,
}

impl Observer for ReportObserver {
    fn benchmark_started(&mut self, _index: usize, _total: usize, _plan: &BenchmarkPlan) {
        self.acc = Some(Accumulator::new(&self.stats));
    }

    fn record(&mut self, _index: usize, record: RequestRecord, _phase: Phase) {
        // The accumulator applies the measurement window itself (same rule as the scheduler).
        if let Some(acc) = self.acc.as_mut() {
            acc.add(record);
        }
    }

    fn benchmark_finished(&mut self, _index: usize, o: &BenchmarkOutcome) {
        let Some(acc) = self.acc.take() else {
            return;
        };
        let meta = BenchmarkMeta {
            strategy: o.strategy.clone(),
            start: o.start,
            end: o.end,
            window: o.window,
            sending_end: o.sending_end,
            rates: Some(o.rates),
            wall_epoch: self.wall_epoch,
            stop_reason: o.stop_reason.name().to_string(),
            label: None,
        };
        let report = acc.finish(meta);
        for (kind, messages) in &report.error_samples {
            for m in messages {
                tracing::warn!(label = %o.strategy.label(), kind = %kind, "request errored: {m}");
                if kind == "http_400" && !self.hinted {
                    if let Some(field) = bench_worker::rejected_vllm_field(400, m) {
                        self.hinted = true;
                        eprintln!(
                            "hint: the server refused vLLM's `{field}` body field (HTTP 400); \
                             this API does not take vLLM's extensions: run with --vllm-extensions off"
                        );
                    }
                }
            }
        }
        if o.not_sent > 0 {
            tracing::warn!(
                label = %o.strategy.label(),
                not_sent = o.not_sent,
                "requests were due but never got a concurrency slot"
            );
        }
        if o.abandoned > 0 {
            tracing::warn!(label = %o.strategy.label(), abandoned = o.abandoned, "requests ignored cancellation and were abandoned");
        }
        if let Some(files) = self.vllm_files.as_mut() {
            match files.write(&report) {
                Ok(p) => tracing::info!(path = %p.display(), "vLLM result file written"),
                Err(e) => {
                    tracing::error!("writing the vLLM result file failed: {e:#}");
                    self.write_error = Some(format!("{e:#}"));
                }
            }
        }
        self.run.benchmarks.push(report);
        if !self.outputs.is_empty() {
            if let Err(e) = bench_report::write_outputs(&self.run, &self.outputs) {
                tracing::error!("writing the report failed: {e}");
                self.write_error = Some(e.to_string());
            }
        }
    }
}

/// The worker's configuration: every setting of the target and request groups.
fn worker_config(s: &Settings, target: &str, vllm_extensions: bool) -> WorkerConfig {
    let (t, r) = (&s.target, &s.request);
    WorkerConfig {
        target: target.to_string(),
        backend: t.backend,
        endpoint: t.endpoint.clone(),
        model: t.model.clone(),
        api_key: t.api_key.clone(),
        headers: t.headers.clone(),
        http2: t.http2,
        insecure: t.insecure,
        cacert: t.cacert.clone(),
        timeouts: t.timeouts,
        extra_body: r.body_extra(t.backend == bench_worker::BackendKind::Tgi),
        vllm_extensions,
        ignore_eos: r.ignore_eos,
        // A run that lets the server stop at EOS does not force a minimum either.
        min_tokens: r.ignore_eos,
        include_usage: true,
    }
}

/// Builds the worker, checks the target, and settles `--vllm-extensions auto` from what the
/// server says it is.
async fn connect(s: &Settings, target: &str) -> anyhow::Result<Worker> {
    let on = s.request.vllm_extensions != VllmExtensions::Off;
    let worker = Worker::new(worker_config(s, target, on))
        .await
        .map_err(|e| UsageError::new(format!("--target {target}: {e}")))?;
    worker
        .health_check()
        .await
        .with_context(|| format!("the target {target} is not answering"))?;
    if s.request.vllm_extensions != VllmExtensions::Auto
        || s.target.backend == bench_worker::BackendKind::Tgi
    {
        return Ok(worker);
    }
    let owner = worker.model_owner().await;
    if bench_worker::vllm_extensions_wanted(owner.as_deref()) {
        return Ok(worker);
    }
    tracing::warn!(
        "the server does not identify as vLLM, SGLang or llama.cpp (owned_by: {}): not sending \
         ignore_eos / min_tokens, so outputs may stop before their asked length; \
         --vllm-extensions on sends them",
        owner.as_deref().unwrap_or("none")
    );
    Worker::new(worker_config(s, target, false))
        .await
        .map_err(|e| UsageError::new(format!("--target {target}: {e}")).into())
}

fn environment(s: &Settings, model: &str, worker: &Worker) -> Environment {
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default();
    Environment {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        target: worker.request_url(),
        model: model.to_string(),
        backend: s.target.backend.name().to_string(),
        host,
        processor: s.data.processor.clone(),
        os: format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get() as u32),
        extra: Default::default(),
    }
}

async fn run_async(s: Settings) -> anyhow::Result<ExitCode> {
    let tokenizer = match &s.data.processor {
        Some(p) => {
            Tokenizer::resolve(p).map_err(|e| UsageError::new(format!("--processor {p}: {e}")))?
        }
        None => Tokenizer::builtin(),
    };
    let (specs, data_seed) = data::loader(
        &s.data.data,
        s.data.data_column.as_deref(),
        tokenizer.clone(),
    )?;

    let mock = if s.target.mock {
        let cfg = match &s.target.mock_config {
            Some(p) => MockConfig::from_file(p)
                .map_err(|e| UsageError::new(format!("--mock-config {}: {e}", p.display())))?,
            None => MockConfig::default(),
        };
        // The simulator counts with the run's tokenizer (unless its config names one), so its
        // usage figures agree with the client's counts.
        let server = match (&cfg.tokenizer, &s.data.processor) {
            (None, Some(_)) => MockServer::start_with_tokenizer(cfg, tokenizer.clone()).await,
            _ => MockServer::start(cfg).await,
        }
        .context("starting the built-in simulator")?;
        tracing::info!(url = %server.url(), "simulator started");
        Some(server)
    } else {
        None
    };
    let target = match (&mock, &s.target.target) {
        (Some(m), _) => m.url(),
        (None, Some(t)) => t.clone(),
        (None, None) => return Err(UsageError::new("no target").into()),
    };
    let worker = connect(&s, &target).await?;
    let model = worker
        .discover_model()
        .await
        .with_context(|| format!("finding the model served at {target}"))?;
    let counter_tk = tokenizer.clone();
    let worker = worker.with_output_counter(Arc::new(move |t: &str| counter_tk.count(t)));

    let mut run = RunReport::new(
        uuid::Uuid::new_v4().to_string(),
        time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
    );
    run.config = serde_json::to_value(&s).unwrap_or_default();
    run.environment = environment(&s, &model, &worker);
    if let Some(seed) = data_seed {
        // The salt (or the given seed): `seed=` with this value reproduces the prompts.
        run.environment
            .extra
            .insert("data_seed".into(), serde_json::json!(seed));
    }
    crate::metadata::add(&mut run.config, &s, &run.environment.target, &model);

    let stats = StatsOptions {
        goodput: s.report.goodput.clone(),
        keep_records: s.report.save_records,
        ..StatsOptions::default()
    };
    let clock = Clock::start();
    let resent = worker.clone();
    let sched = Scheduler::new(Arc::new(worker), clock, SchedulerOptions::default());
    let shown = progress::spawn(sched.progress(), s.report.quiet);

    let stop = sched.stop_handle();
    let signals = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("interrupted: closing the current benchmark and writing the report (Ctrl-C again to exit at once)");
            stop.stop();
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!(
                    "interrupted again: exiting; finished benchmarks are in the output files"
                );
                std::process::exit(130);
            }
        }
    });

    let mut observer = ReportObserver {
        run,
        stats,
        acc: None,
        outputs: s.report.output.clone(),
        wall_epoch: clock.wall_epoch(),
        write_error: None,
        vllm_files: crate::vllm_files::VllmFiles::new(&s, &model),
        hinted: false,
    };
    let result = sched
        .run_profile(
            &s.load.profile,
            &s.load.limits,
            &s.load.warmup,
            &s.load.cooldown,
            specs,
            &mut observer,
        )
        .await;
    drop(sched);
    if let Some(h) = shown {
        let _ = h.await;
    }
    signals.abort();
    if let Some(m) = mock {
        m.shutdown().await;
    }

    let run = observer.run;
    print_console(&s, &run)?;
    let n = resent.resent_requests();
    if n > 0 {
        eprintln!(
            "warning: {n} request(s) were resent because the server closed a kept-alive connection \
             before answering them; their latencies include the failed attempt"
        );
    }
    let (outcome, _) = result.context("the run failed")?;
    if let Some(e) = observer.write_error {
        anyhow::bail!("writing the report files failed: {e}");
    }
    if outcome.interrupted {
        eprintln!("run interrupted; the last benchmark is partial");
        return Ok(ExitCode::from(130));
    }
    if run.benchmarks.iter().all(|b| b.requests.completed == 0) {
        anyhow::bail!("no request completed; see the errors in the report");
    }
    Ok(ExitCode::SUCCESS)
}

fn print_console(s: &Settings, run: &RunReport) -> anyhow::Result<()> {
    let console = s.report.console;
    if run.benchmarks.is_empty() || console == Console::None {
        return Ok(());
    }
    let width = if std::io::stdout().is_terminal() {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse::<u16>().ok())
            .or(Some(160))
    } else {
        None
    };
    if matches!(console, Console::Guidellm | Console::Both) {
        println!("{}", bench_report::render_guidellm(run, width));
    }
    if matches!(console, Console::Vllm | Console::Both) {
        println!("{}", bench_report::render_vllm(run, &s.report.vllm_console));
    }
    Ok(())
}
