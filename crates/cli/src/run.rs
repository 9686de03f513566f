//! `bench sweep` and `bench run`: resolve the settings, start the simulator if asked, build the
//! worker, the data and the scheduler, show progress, write the report after every benchmark,
//! and print it.

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use bench_core::{Capacity, Clock, RequestRecord, Slo};
use bench_mock::{MockConfig, MockServer};
use bench_report::{Accumulator, BenchmarkMeta, Environment, RunReport, StatsOptions};
use bench_scheduler::{
    BenchmarkOutcome, BenchmarkPlan, Observer, Phase, Scheduler, SchedulerOptions,
};
use bench_tokenizer::Tokenizer;
use bench_worker::{Worker, WorkerConfig};
use clap::Args;

use crate::settings::{self, CommonArgs, Console, Settings, VllmExtensions};
use crate::shard::ShardPlan;
use crate::{data, limits, outputs, progress, signals, UsageError};

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

fn execute(settings: Settings, shard: ShardPlan, show_config: bool) -> anyhow::Result<ExitCode> {
    if show_config {
        print!("{settings}");
        return Ok(ExitCode::SUCCESS);
    }
    // Refused before anything runs: a report that cannot be written, a concurrency that cannot
    // fit under the open-file limit (raised to the hard limit first).
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
        match tokio::spawn(run_async(settings, shard)).await {
            Ok(r) => r,
            Err(e) => Err(anyhow::anyhow!("the run task failed: {e}")),
        }
    })
}

/// After this long with nothing but failed connections, the server is taken for gone and the
/// run stops (see docs/reliability.md).
const SERVER_GONE_AFTER: bench_core::Nanos = 3_000_000_000;

/// Collects records into the report crate's accumulator and writes files after each benchmark.
struct ReportObserver {
    run: RunReport,
    stats: StatsOptions,
    acc: Option<Accumulator>,
    files: outputs::Writer,
    wall_epoch: std::time::SystemTime,
    write_error: Option<String>,
    scraper: Option<bench_servermetrics::Scraper>,
    scrape_warned: bool,
    vllm_files: Option<crate::vllm_files::VllmFiles>,
    /// The vLLM-fields hint was printed.
    hinted: bool,
    slo: Option<Slo>,
    /// Whether each benchmark met the SLO, by index.
    verdicts: std::collections::HashMap<usize, bool>,
    /// Since when (run clock) every finished request failed to connect, and how many did.
    unanswered: Option<(bench_core::Nanos, u64)>,
    /// Set when the server stopped answering (or the client ran out of file descriptors):
    /// why; the run is then stopped through `stop`.
    server_gone: Option<String>,
    /// The soft open-file limit in force (raised at start), named when it is reached.
    fd_limit: Option<u64>,
    stop: bench_scheduler::StopHandle,
    /// How the running benchmark's requests ended badly (timeouts, rate limits).
    endings: crate::endings::Endings,
    /// What those endings were, one line per kind and benchmark, said after the report.
    ending_notes: Vec<String>,
    /// The timeouts in force, which the notes name.
    timeouts: bench_worker::Timeouts,
    /// Starts a trace over at each benchmark.
    rewind: data::Rewind,
    /// This process's shard (its report states its share of the target rate).
    shard: Option<bench_core::Shard>,
    /// The run clock (a shard reads its wall clock against it as each benchmark ends).
    clock: Clock,
    /// With `--precision`: ends each benchmark once precise.
    precision: Option<crate::precise::PrecisionWatch>,
}

impl ReportObserver {
    /// Watches for a server that stopped answering: only connection failures for
    /// [`SERVER_GONE_AFTER`] (at least 3 of them) stop the run with a message. A connection
    /// that failed for want of a file descriptor stops it at once, naming the client's limit.
    fn watch_connects(&mut self, record: &RequestRecord) {
        let connect_timeout = bench_core::Outcome::Timeout {
            phase: bench_core::TimeoutPhase::Connect,
        };
        let failure = match &record.outcome {
            bench_core::Outcome::Connect { message } => Some(message.as_str()),
            o if *o == connect_timeout => Some("connect timed out"),
            _ => None,
        };
        match failure {
            // The client's own limit: the server is not to blame, and every request from now
            // on would measure the client. Stop at once, naming the limit.
            Some(message) if bench_worker::is_open_file_limit(message) => {
                if self.server_gone.is_none() {
                    self.server_gone = Some(limits::exhausted(self.fd_limit, message));
                    self.stop.stop();
                }
            }
            Some(message) => {
                let (since, n) = self.unanswered.get_or_insert((record.end, 0));
                *n += 1;
                let (since, n) = (*since, *n);
                if self.server_gone.is_none()
                    && n >= 3
                    && record.end.saturating_sub(since) >= SERVER_GONE_AFTER
                {
                    self.server_gone = Some(format!(
                        "the server stopped answering: the last {n} requests over {:.1} s could not connect ({message})",
                        record.end.saturating_sub(since) as f64 / 1e9
                    ));
                    self.stop.stop();
                }
            }
            None if record.outcome == bench_core::Outcome::Cancelled => {}
            None => self.unanswered = None,
        }
    }

    /// The server's view of `[start, end]`, after a scrape taken now (the benchmark has
    /// drained). Warns once when scraping failed; the report then has no server metrics.
    fn server_metrics(
        &mut self,
        span: bench_servermetrics::Span,
    ) -> Option<bench_servermetrics::ServerMetrics> {
        let sc = self.scraper.as_ref()?;
        let handle = tokio::runtime::Handle::current();
        if sc.failure().is_none()
            && handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        {
            // Between benchmarks, off the request path: at most the scrape timeout.
            tokio::task::block_in_place(|| handle.block_on(sc.scrape_now()));
        }
        if let Some(f) = sc.failure() {
            if !self.scrape_warned {
                self.scrape_warned = true;
                tracing::warn!(
                    "server metrics from {}: {f}; the report has none from this benchmark on (--no-server-metrics turns scraping off)",
                    sc.url()
                );
            }
            return None;
        }
        sc.summarize(span)
    }
}

impl Observer for ReportObserver {
    fn benchmark_started(&mut self, index: usize, _total: usize, plan: &BenchmarkPlan) {
        self.rewind.benchmark_started();
        self.acc = Some(Accumulator::new(&self.stats));
        if let Some(w) = self.precision.as_mut() {
            w.started(index, plan, self.clock.now());
        }
    }

    fn record(&mut self, _index: usize, record: RequestRecord, phase: Phase) {
        self.watch_connects(&record);
        self.endings.add(&record);
        let look = self.precision.as_mut().and_then(|w| w.add(&record, phase));
        // The accumulator applies the measurement window itself (same rule as the scheduler).
        if let Some(acc) = self.acc.as_mut() {
            acc.add(record);
            if let (Some(now), Some(w)) = (look, self.precision.as_mut()) {
                w.look(now, acc);
            }
        }
    }

    fn benchmark_finished(&mut self, index: usize, o: &BenchmarkOutcome) {
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
            sessions: o.sessions,
        };
        let mut report = acc.finish(meta);
        if let Some(w) = self.precision.as_mut() {
            w.finished(&mut report);
        }
        if let Some(sh) = self.shard.filter(|sh| !sh.is_whole()) {
            // This shard's share of the rate asked for (every N-th arrival).
            report.rates.target_rate = report.rates.target_rate.map(|r| r / f64::from(sh.count));
        }
        // Gauges over the window the latency figures describe (docs/metrics.md).
        let tl = &report.timeline;
        report.server_metrics = self.server_metrics(bench_servermetrics::Span {
            start: o.start,
            end: o.end,
            open: tl.steady_start_ns.unwrap_or(o.window.open),
            close: tl.steady_end_ns.unwrap_or(o.window.close),
        });
        if let Some(slo) = &self.slo {
            self.verdicts.insert(index, report.meets(slo));
        }
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
        let closed_loop = o.strategy.release() == bench_core::Release::ClosedLoop;
        let notes = self
            .endings
            .take_notes(&o.strategy.label(), closed_loop, &self.timeouts);
        self.ending_notes.extend(notes);
        match self.run.trials.as_mut().and_then(|t| t.runs.last_mut()) {
            // Each trial's benchmarks are written as they finish, as a run's are.
            Some(trial) => trial.benchmarks.push(report),
            None => self.run.benchmarks.push(report),
        }
        if let Some(c) = self.run.shard.as_mut().and_then(|s| s.clock.as_mut()) {
            c.wall_minus_run_end_ms = Some(crate::shard::wall_minus_run_ms(&self.clock));
        }
        self.files.write(&self.run);
    }

    fn slo_met(&mut self, index: usize) -> Option<bool> {
        self.verdicts.get(&index).copied()
    }
}

impl ReportObserver {
    /// Adds a sweep's capacity answer, with the knee the report finds from the latencies, and
    /// rewrites the files.
    fn set_capacity(&mut self, capacity: Option<Capacity>) {
        let Some(mut c) = capacity else { return };
        if let Some(trial) = self.run.trials.as_mut().and_then(|t| t.runs.last_mut()) {
            // The knee from this trial's own benchmarks.
            let mut one = RunReport::new("", "");
            one.benchmarks = trial.benchmarks.clone();
            c.knee_requests_per_s = bench_report::knee(&one);
            c.refresh_trace_multiples();
            trial.capacity = Some(c);
            return;
        }
        c.knee_requests_per_s = bench_report::knee(&self.run);
        c.refresh_trace_multiples();
        c.intervals = bench_report::capacity_intervals(&self.run, &c);
        self.run.capacity = Some(c);
        self.files.write(&self.run);
    }

    /// With `--repeat N` (N > 1): the run is made of trials, which its files hold.
    fn start_trials(&mut self, repeat: settings::Repeat) {
        if repeat.trials > 1 {
            self.run.trials = Some(bench_report::Trials {
                requested: repeat.trials,
                until: repeat.until,
                stop_reason: "running".into(),
                ..Default::default()
            });
        }
    }

    /// A trial of a repeated run starts: a new entry for its benchmarks, whose indexes count
    /// from 0 again.
    fn begin_trial(&mut self, index: u32, data_seed: Option<u64>) {
        self.verdicts.clear();
        if let Some(t) = self.run.trials.as_mut() {
            t.runs.push(bench_report::Trial {
                index,
                data_seed,
                ..Default::default()
            });
        }
    }

    /// A trial ended (`interrupted`: by the user or a server gone): pools the trials into the
    /// run's benchmarks, rewrites the files, and says whether to run another (and why not).
    fn end_trial(&mut self, interrupted: bool) -> bool {
        if let Err(e) = bench_report::pool(&mut self.run) {
            // Unreachable for data that can be repeated (sessions are refused up front);
            // every trial's own benchmarks are still in the report.
            tracing::error!("pooling the trials failed: {e}");
        }
        let Some(t) = self.run.trials.as_ref() else {
            return false;
        };
        let (ran, requested, until) = (t.runs.len() as u32, t.requested, t.until);
        let why = if interrupted || self.server_gone.is_some() {
            Some("interrupted".to_string())
        } else if let Some(target) = until {
            match bench_report::not_converged(&self.run, target) {
                None => Some(format!(
                    "converged: every key figure within {}% after {ran} trials",
                    target * 100.0
                )),
                Some(_) if ran < requested => None,
                Some(not) => Some(format!("the most trials ran; not converged: {not}")),
            }
        } else {
            (ran >= requested).then(|| "all trials ran".to_string())
        };
        if let Some(t) = self.run.trials.as_mut() {
            t.stop_reason = why.clone().unwrap_or_else(|| "running".into());
        }
        self.files.write(&self.run);
        why.is_none()
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
        silence_notice: bench_core::SILENCE_NOTICE,
        stream: r.stream,
        think_tags: r.think_tags,
        source_addresses: if t.source_addresses.is_empty() {
            limits::loopback_sources(
                target,
                limits::planned_concurrency(&s.load.profile),
                limits::ports_per_source(),
            )
        } else {
            t.source_addresses.clone()
        },
    }
}

/// Builds the worker, checks the target, and settles `--vllm-extensions auto` from what the
/// server says it is.
async fn connect(s: &Settings, target: &str) -> anyhow::Result<Worker> {
    let on = s.request.vllm_extensions != VllmExtensions::Off;
    let shown = bench_worker::redact_url(target);
    let worker = Worker::new(worker_config(s, target, on))
        .await
        .map_err(|e| UsageError::new(format!("--target: {e}")))?;
    worker.health_check().await.map_err(|e| match e {
        bench_worker::Error::Unreachable { .. } => {
            anyhow::Error::new(e).context(format!("the target {shown} is not answering"))
        }
        other => anyhow::Error::new(other),
    })?;
    if s.request.vllm_extensions != VllmExtensions::Auto
        || s.target.backend == bench_worker::BackendKind::Tgi
        || s.target.backend.pooling()
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
        .map_err(|e| UsageError::new(format!("--target: {e}")).into())
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

impl ReportObserver {
    /// The observer of a run about to start: nothing collected, nothing written yet.
    fn new(
        s: &Settings,
        run: RunReport,
        stats: StatsOptions,
        scraper: Option<bench_servermetrics::Scraper>,
        model: &str,
        clock: Clock,
        stop: bench_scheduler::StopHandle,
    ) -> Self {
        ReportObserver {
            run,
            stats,
            acc: None,
            files: outputs::Writer::new(s.report.output.clone()),
            wall_epoch: clock.wall_epoch(),
            write_error: None,
            scraper,
            scrape_warned: false,
            vllm_files: crate::vllm_files::VllmFiles::new(s, model),
            hinted: false,
            slo: s.load.build.slo.clone(),
            verdicts: Default::default(),
            unanswered: None,
            server_gone: None,
            fd_limit: limits::open_files(),
            endings: Default::default(),
            ending_notes: Vec::new(),
            timeouts: s.target.timeouts,
            rewind: data::Rewind::default(),
            shard: None,
            clock,
            precision: s
                .load
                .limits
                .precision
                .map(|p| crate::precise::PrecisionWatch::new(p, stop.clone(), clock.wall_epoch())),
            stop,
        }
    }
}

/// The built-in simulator of `--mock` (its config from `--mock-config`), counting with the
/// run's tokenizer unless its config names one, so that its usage figures agree with the
/// client's counts.
async fn start_mock(s: &Settings, tokenizer: &Tokenizer) -> anyhow::Result<Option<MockServer>> {
    if !s.target.mock {
        return Ok(None);
    }
    let cfg = match &s.target.mock_config {
        Some(p) => MockConfig::from_file(p)
            .map_err(|e| UsageError::new(format!("--mock-config {}: {e}", p.display())))?,
        None => MockConfig::default(),
    };
    let server = match (&cfg.tokenizer, &s.data.processor) {
        (None, Some(_)) => MockServer::start_with_tokenizer(cfg, tokenizer.clone()).await,
        _ => MockServer::start(cfg).await,
    }
    .context("starting the built-in simulator")?;
    tracing::info!(url = %server.url(), "simulator started");
    Ok(Some(server))
}

/// The run's report before any benchmark: its id, creation time, configuration (secrets
/// left out), environment and data seed.
fn new_run_report(
    s: &Settings,
    model: &str,
    worker: &bench_worker::Worker,
    data_seed: Option<bench_loader::DataSeed>,
) -> RunReport {
    let mut run = RunReport::new(
        uuid::Uuid::new_v4().to_string(),
        time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
    );
    run.config = serde_json::to_value(s).unwrap_or_default();
    run.environment = environment(s, model, worker);
    if let Some(seed) = data_seed {
        // The salt (or the given seed): `seed=` with this value reproduces the prompts.
        run.environment
            .extra
            .insert("data_seed".into(), serde_json::json!(seed));
    }
    crate::metadata::add(&mut run.config, s, &run.environment.target, model);
    run
}

/// Warnings printed after the consoles: requests ended by a timeout or rate limited (see
/// [`crate::endings`]), resent requests.
fn warn_after(ending_notes: &[String], resent: u64, ignored: u64) {
    for note in ending_notes {
        eprintln!("warning: {note}");
    }
    if resent > 0 {
        eprintln!(
            "warning: {resent} request(s) were resent because the server closed a kept-alive \
             connection before answering them; their latencies include the failed attempt"
        );
    }
    if ignored > 0 {
        eprintln!(
            "warning: {ignored} /v1/responses event(s) of unknown types were ignored \
             (docs/backends.md, \"Responses\")"
        );
    }
}

/// The tokenizer of `--processor` (the built-in one without it).
fn processor(s: &Settings) -> anyhow::Result<Tokenizer> {
    Ok(match &s.data.processor {
        Some(p) => {
            Tokenizer::resolve(p).map_err(|e| UsageError::new(format!("--processor {p}: {e}")))?
        }
        None => Tokenizer::builtin(),
    })
}

/// The server a run talks to: its URL, the worker connected to it and the model it serves,
/// and the in-process simulator when it is the one.
struct Server {
    mock: Option<MockServer>,
    target: String,
    worker: Worker,
    model: String,
}

/// Starts the simulator (with `--mock`), connects to the server and finds its model; the
/// worker counts output tokens with `tokenizer`.
async fn reach_server(s: &Settings, tokenizer: &Tokenizer) -> anyhow::Result<Server> {
    let mock = start_mock(s, tokenizer).await?;
    let target = match (&mock, &s.target.target) {
        (Some(m), _) => m.url(),
        (None, Some(t)) => t.clone(),
        (None, None) => return Err(UsageError::new("no target").into()),
    };
    let worker = connect(s, &target).await?;
    let model = worker.discover_model().await.with_context(|| {
        format!(
            "finding the model served at {}",
            bench_worker::redact_url(&target)
        )
    })?;
    let counter_tk = tokenizer.clone();
    let worker = worker.with_output_counter(Arc::new(move |t: &str| counter_tk.count(t)));
    Ok(Server {
        mock,
        target,
        worker,
        model,
    })
}

/// The data of the run's first (or only) trial: a shard's are salted with the salt every
/// shard shares, so that they split one sequence of prompts; else with the run's `salt`.
fn first_loader(
    s: &Settings,
    dist: &ShardPlan,
    tokenizer: &Tokenizer,
    salt: u64,
) -> anyhow::Result<(bench_loader::Loader, Option<bench_loader::DataSeed>)> {
    let (data, column) = (&s.data.data, s.data.data_column.as_deref());
    Ok(match &dist.start_at {
        Some((at, _)) if dist.shard.is_some() => data::salted_loader(
            data,
            column,
            tokenizer.clone(),
            crate::shard::shared_salt(*at),
        )?,
        _ => data::trial_loader(data, column, tokenizer.clone(), salt, 0)?,
    })
}

/// What makes each trial of a repeated run fresh (docs/cli.md, `--repeat`).
struct Fresh<'a> {
    s: &'a Settings,
    tokenizer: &'a Tokenizer,
    /// The run's data salt, which trial `i` moves on by `i`.
    salt: u64,
}

impl Fresh<'_> {
    /// Trial `i`'s profile (Poisson arrivals seeded with `--seed` + `i`) and, for seeded data
    /// (synthetic, traces: `seeded`), its stream of fresh prompts with their seed; `None` for
    /// files, whose stream reads on (and which are not opened again).
    fn trial(
        &self,
        i: u32,
        seeded: bool,
    ) -> anyhow::Result<(
        bench_profile::Profile,
        Option<data::WorkStream>,
        Option<u64>,
    )> {
        let mut s = self.s.clone();
        s.load.build.seed = s.load.build.seed.wrapping_add(u64::from(i));
        s.load.profile =
            bench_profile::Profile::build(s.load.rate_type, &s.load.rate, &s.load.build)
                .map_err(|e| UsageError::new(format!("--repeat: trial {i}: {e}")))?;
        if !seeded {
            return Ok((s.load.profile, None, None));
        }
        let d = &self.s.data;
        let (loader, seed) = data::trial_loader(
            &d.data,
            d.data_column.as_deref(),
            self.tokenizer.clone(),
            self.salt,
            i,
        )?;
        let (_, profile) = trace_settings(&s, &loader)?;
        let stream = seed.map(|_| data::WorkStream::new(loader));
        Ok((profile, stream, seed.map(|x| x.seed)))
    }
}

/// Runs the profile once or, with `--repeat N`, as `N` trials one after another on the same
/// server, each with fresh prompts, pooling them after each, until all ran, the intervals
/// met `--repeat-until`, or the run was interrupted. Returns the last trial's outcome.
async fn run_trials(
    sched: &Scheduler<Worker>,
    fresh: &Fresh<'_>,
    first: (bench_profile::Profile, data::WorkStream, Option<u64>),
    observer: &mut ReportObserver,
) -> anyhow::Result<(bench_scheduler::RunOutcome, data::WorkStream)> {
    let l = &fresh.s.load;
    let (mut profile, mut specs, mut seed) = first;
    let seeded = seed.is_some();
    let mut i = 0;
    loop {
        observer.begin_trial(i, seed);
        let (outcome, back) = sched
            .run_profile(&profile, &l.limits, &l.warmup, &l.cooldown, specs, observer)
            .await?;
        if observer.run.trials.is_none() {
            return Ok((outcome, back));
        }
        if !outcome.interrupted {
            observer.set_capacity(outcome.capacity.clone());
        }
        if !observer.end_trial(outcome.interrupted) {
            return Ok((outcome, back));
        }
        i += 1;
        let (p, stream, s) = fresh.trial(i, seeded)?;
        (profile, seed) = (p, s);
        specs = match stream {
            Some(st) => {
                observer.rewind = st.rewind();
                st
            }
            None => back,
        };
    }
}

async fn run_async(s: Settings, dist: ShardPlan) -> anyhow::Result<ExitCode> {
    let tokenizer = processor(&s)?;
    let salt = data::fresh_salt();
    let (loader, data_seed) = first_loader(&s, &dist, &tokenizer, salt)?;
    let data_failure = loader.failure();
    let (trace, profile) = trace_settings(&s, &loader)?;
    let specs = data::WorkStream::new(loader).sharded(dist.shard);
    let rewind = specs.rewind();

    let Server {
        mock,
        target,
        worker,
        model,
    } = reach_server(&s, &tokenizer).await?;

    let mut run = new_run_report(&s, &model, &worker, data_seed);
    if let Some(t) = trace {
        run.environment.extra.insert("trace".into(), t);
    }

    let stats = StatsOptions {
        goodput: s.report.goodput.clone(),
        keep_records: s.report.save_records,
        ..StatsOptions::default()
    };
    // The target's clock, read once before the shared start (docs/distributed.md, "Clocks").
    let server_date = match dist.shard {
        Some(sh) if !sh.is_whole() => worker.server_date().await,
        _ => None,
    };
    let (clock, shard_run) = start_clock(&dist, server_date).await;
    run.shard = shard_run;
    let scraper = start_scraper(&s, &target, clock).await?;
    let resent = worker.clone();
    let options = SchedulerOptions {
        think_time: s.load.think_time,
        shard: dist.shard,
        ..SchedulerOptions::default()
    };
    let sched = Scheduler::new(Arc::new(worker), clock, options);
    let shown = progress::spawn(sched.progress(), s.report.quiet);

    let stop = sched.stop_handle();
    let (interrupted, signals) = signals::listen(move || stop.stop())?;

    let mut observer =
        ReportObserver::new(&s, run, stats, scraper, &model, clock, sched.stop_handle());
    observer.rewind = rewind;
    observer.shard = dist.shard;
    observer.start_trials(s.load.repeat);
    let fresh = Fresh {
        s: &s,
        tokenizer: &tokenizer,
        salt,
    };
    let first = (profile, specs, data_seed.map(|d| d.seed));
    let result = run_trials(&sched, &fresh, first, &mut observer).await;
    drop(sched);
    if let Some(h) = shown {
        let _ = h.await;
    }
    signals.abort();
    if let Some(m) = mock {
        m.shutdown().await;
    }

    if let Ok((outcome, _)) = &result {
        if !outcome.interrupted && observer.run.trials.is_none() {
            observer.set_capacity(outcome.capacity.clone());
        }
    }
    print_console(&s, &observer.run)?;
    warn_after(
        &observer.ending_notes,
        resent.resent_requests(),
        resent.ignored_events(),
    );
    let (_outcome, _) = result.context("the run failed")?;
    finish(&s, &observer, &interrupted, data_failure.get())
}

/// The run clock: from the shared start when there is one (after waiting for it), else from
/// now; with what a shard's result says of its shard.
async fn start_clock(
    dist: &ShardPlan,
    server: Option<bench_worker::ServerDate>,
) -> (Clock, Option<bench_report::ShardRun>) {
    let Some((at, text)) = &dist.start_at else {
        return (Clock::start(), None);
    };
    let late = crate::shard::wait_for(*at).await;
    let clock = Clock::anchored(*at);
    let shard_run = dist.shard.map(|sh| bench_report::ShardRun {
        index: sh.index,
        count: sh.count,
        start_at: Some(text.clone()),
        start_late_ms: Some(late),
        clock: Some(bench_report::ShardClock {
            wall_minus_run_start_ms: crate::shard::wall_minus_run_ms(&clock),
            wall_minus_run_end_ms: None,
            server_offset_ms: server.map(crate::shard::server_offset_ms),
        }),
    });
    (clock, shard_run)
}

/// A trace's data and load must go together: `--rate-type trace` replays a trace. Returns
/// what the report records of the trace (its file, format and figures: docs/metrics.md,
/// "Traces"), and the profile to run: a sweep over a trace replays it at the speed-ups that
/// offer the sweep's rates ([`bench_profile::SweepSpec::over_trace`]).
fn trace_settings(
    s: &Settings,
    loader: &bench_loader::Loader,
) -> anyhow::Result<(Option<serde_json::Value>, bench_profile::Profile)> {
    let replays = match &s.load.profile {
        bench_profile::Profile::Fixed { benchmarks } => {
            benchmarks.iter().any(|b| b.speedup().is_some())
        }
        bench_profile::Profile::Sweep(_) => false,
    };
    let Some(summary) = loader.trace_summary() else {
        if replays {
            return Err(UsageError::new(format!(
                "--rate-type trace replays a trace: give --data trace=FILE (docs/data.md), not --data {}",
                s.data.data
            ))
            .into());
        }
        return Ok((None, s.load.profile.clone()));
    };
    let profile = match &s.load.profile {
        bench_profile::Profile::Sweep(spec) => {
            bench_profile::Profile::Sweep(trace_sweep(spec, &s.data.data, summary)?)
        }
        p => p.clone(),
    };
    let record = serde_json::json!({
        "data": s.data.data,
        "rows": summary.rows,
        "skipped": summary.skipped,
        "fitted": summary.fitted,
        "sessions": summary.sessions,
        "duration_s": summary.duration as f64 / 1e9,
        "mean_rate": summary.mean_rate(),
        "input_tokens": summary.input_tokens,
        "output_tokens": summary.output_tokens,
        "blocks": summary.blocks,
        "blocks_seen": summary.blocks_seen,
        "theoretical_hit_rate": summary.hit_rate(),
    });
    Ok((Some(record), profile))
}

/// The sweep `spec` over the trace `summary` read from `--data data`: its rates become
/// speed-ups of the trace's recorded mean rate. Refused when the trace has no mean rate (one
/// row, or every row at one instant) or the sweep asks for Poisson arrivals (a trace brings
/// its own).
fn trace_sweep(
    spec: &bench_profile::SweepSpec,
    data: &str,
    summary: &bench_loader::trace::TraceSummary,
) -> Result<bench_profile::SweepSpec, UsageError> {
    if matches!(spec.open_loop, bench_profile::OpenLoop::Poisson { .. }) {
        return Err(UsageError::new(
            "--sweep-rate-type poisson: a sweep over a trace replays the trace's own arrival times; drop it",
        ));
    }
    let Some(rate) = summary.mean_rate() else {
        return Err(UsageError::new(format!(
            "--data {data}: a sweep over a trace states capacity as a multiple of the trace's mean rate, and this trace has none (it needs two rows at different times)"
        )));
    };
    Ok(spec.over_trace(rate))
}

/// The exit code of a finished run, with one line saying why when it is not a success.
fn finish(
    s: &Settings,
    observer: &ReportObserver,
    interrupted: &signals::Interrupted,
    data_failure: Option<&str>,
) -> anyhow::Result<ExitCode> {
    if let Some(e) = observer.files.failures() {
        anyhow::bail!("writing the report files failed (the other files were written): {e}");
    }
    if let Some(e) = &observer.write_error {
        anyhow::bail!("writing the vLLM result file failed: {e}");
    }
    if let Some(why) = &observer.server_gone {
        anyhow::bail!("{why}; the run was stopped (finished benchmarks are in the report)");
    }
    if let Some(code) = interrupted.exit_code() {
        eprintln!("run interrupted; the last benchmark is partial");
        return Ok(ExitCode::from(code));
    }
    if let Some(e) = data_failure {
        // Bad data is bad input, even when it shows only mid-run (finished benchmarks are in
        // the report).
        return Err(UsageError::new(format!("the data stream broke during the run: {e}")).into());
    }
    if !s.report.allow_empty {
        if let Some(line) = empty_benchmarks(&observer.run, &s.report.output) {
            anyhow::bail!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Starts scraping the server's metrics (unless turned off) and takes the first scrape, the
/// base of the first benchmark's counters.
async fn start_scraper(
    s: &Settings,
    target: &str,
    clock: Clock,
) -> anyhow::Result<Option<bench_servermetrics::Scraper>> {
    if !s.report.server_metrics {
        return Ok(None);
    }
    let url = match (
        &s.report.server_metrics_url,
        bench_servermetrics::default_url(target),
    ) {
        (Some(u), _) => u.clone(),
        (None, Some(u)) => u,
        (None, None) => return Ok(None),
    };
    let mut opts = bench_servermetrics::ScrapeOptions::new(url);
    opts.interval = std::time::Duration::from_secs_f64(s.report.server_metrics_interval);
    let scraper = bench_servermetrics::Scraper::spawn(opts, clock)
        .map_err(|e| UsageError::new(format!("--server-metrics-url: {e}")))?;
    scraper.scrape_now().await;
    Ok(Some(scraper))
}

/// One line naming the benchmarks that completed no request and what became of their requests,
/// `None` when every benchmark completed at least one.
fn empty_benchmarks(run: &RunReport, outputs: &[std::path::PathBuf]) -> Option<String> {
    let empty: Vec<String> = run
        .benchmarks
        .iter()
        .filter(|b| b.requests.completed == 0)
        .map(|b| {
            let r = &b.requests;
            format!(
                "{} ({} errored, {} cut off unfinished at the end of the benchmark)",
                b.label, r.errored, r.incomplete
            )
        })
        .collect();
    if empty.is_empty() && !run.benchmarks.is_empty() {
        return None;
    }
    let what = if run.benchmarks.is_empty() {
        "no benchmark ran".to_string()
    } else {
        format!("no request completed in {}", empty.join(", "))
    };
    let see = if outputs.is_empty() {
        "the error samples are logged above".to_string()
    } else {
        format!(
            "the report ({}) has the details",
            outputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Some(format!("{what}; {see} (--allow-empty accepts such a run)"))
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
    for line in crate::fidelity::lines(run) {
        println!("{line}");
    }
    let trials = bench_report::render_trials(run);
    if !trials.is_empty() {
        print!("{trials}");
    }
    for line in bench_report::precision_notes(run) {
        println!("{line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_benchmark_is_named_with_what_became_of_its_requests() {
        let mut run = RunReport::new("id", "2026-01-01T00:00:00Z");
        assert!(empty_benchmarks(&run, &[])
            .expect("no benchmark ran")
            .contains("no benchmark ran"));
        let empty = Accumulator::new(&StatsOptions::default()).finish(BenchmarkMeta::new(
            bench_core::Strategy::Synchronous,
            0,
            1_000_000_000,
            std::time::SystemTime::UNIX_EPOCH,
        ));
        run.benchmarks.push(empty);
        let line = empty_benchmarks(&run, &["out.json".into()]).expect("empty");
        assert!(line.contains("synchronous (0 errored, 0 cut off"), "{line}");
        assert!(
            line.contains("out.json") && line.contains("--allow-empty"),
            "{line}"
        );
    }
}
