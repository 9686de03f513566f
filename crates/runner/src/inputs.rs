//! A run's inputs, resolved from the settings before anything is sent: the tokenizer, the
//! first trial's data, the trace and the profile it runs, and the report's header
//! (configuration, environment, data seed).

use bench_report::{Environment, RunReport};
use bench_tokenizer::Tokenizer;
use bench_worker::Worker;

use crate::settings::Settings;
use crate::shard::ShardPlan;
use crate::{data, UsageError};

/// What a run is made of before it reaches the server.
pub(crate) struct Inputs {
    /// Counts tokens for the data, the worker and the simulator.
    pub tokenizer: Tokenizer,
    /// The run's data salt, which trial `i` moves on by `i`.
    pub salt: u64,
    /// The first trial's data seed (seeded data only).
    pub data_seed: Option<bench_loader::DataSeed>,
    /// Set when the data stream breaks mid-run.
    pub data_failure: bench_loader::DataFailure,
    /// What the report records of a trace (`--data trace=FILE`).
    pub trace: Option<serde_json::Value>,
    /// The profile to run (a sweep over a trace: its speed-ups).
    pub profile: bench_profile::Profile,
    /// The first trial's requests, this shard's share of them.
    pub specs: data::WorkStream,
    /// Starts the data over at each benchmark.
    pub rewind: data::Rewind,
}

impl Inputs {
    /// Resolves the tokenizer, the first trial's data and the trace settings.
    pub fn resolve(s: &Settings, dist: &ShardPlan) -> anyhow::Result<Self> {
        let tokenizer = processor(s)?;
        let salt = data::fresh_salt();
        let (loader, data_seed) = first_loader(s, dist, &tokenizer, salt)?;
        let data_failure = loader.failure();
        let (trace, profile) = trace_settings(s, &loader)?;
        let specs = data::WorkStream::new(loader).sharded(dist.shard);
        let rewind = specs.rewind();
        Ok(Inputs {
            tokenizer,
            salt,
            data_seed,
            data_failure,
            trace,
            profile,
            specs,
            rewind,
        })
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

/// A trace's data and load must go together: `--rate-type trace` replays a trace. Returns
/// what the report records of the trace (its file, format and figures: docs/metrics.md,
/// "Traces"), and the profile to run: a sweep over a trace replays it at the speed-ups that
/// offer the sweep's rates ([`bench_profile::SweepSpec::over_trace`]).
pub(crate) fn trace_settings(
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

/// The run's report before any benchmark: its id, creation time, configuration (secrets
/// left out), environment and data seed.
pub(crate) fn new_run_report(
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

/// What the report says of where the run ran: the tool, the target, the model, the host.
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
        server_batch: None,
    }
}
