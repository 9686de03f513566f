//! Settings of `bench sweep` / `bench run`: command-line flags, profile files and defaults,
//! resolved and validated in one place ([`resolve`]): CLI > file > defaults.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use bench_profile::{BuildOptions, Limits, OverSaturation, Profile, RateType, Transient};
use bench_worker::BackendKind;
use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::UsageError;

/// Default data: guidellm's sweep seed (256 prompt tokens, 128 output tokens).
pub const DEFAULT_DATA: &str = "prompt_tokens=256,output_tokens=128";
/// Default length of one benchmark against a real target, seconds.
pub const DEFAULT_MAX_SECONDS: f64 = 30.0;
/// Default length of one benchmark with `--mock`, seconds (a default sweep takes about a
/// minute).
pub const DEFAULT_MOCK_MAX_SECONDS: f64 = 5.0;

/// Which console report(s) to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Console {
    /// guidellm's three tables.
    Guidellm,
    /// vLLM's "Serving Benchmark Result" block per benchmark.
    Vllm,
    /// Both.
    Both,
    /// No report on the console.
    None,
}

/// Flags shared by `bench sweep` and `bench run`. Every flag is optional here so that the
/// resolver knows what was given; defaults are applied in [`resolve`] and shown by `--help`.
#[derive(Debug, Clone, Default, Args)]
pub struct CommonArgs {
    /// A YAML profile holding any of these settings (keys are the flag names with `_`, e.g.
    /// `max_seconds: 30`); flags given on the command line override it.
    #[arg(long, value_name = "FILE.yaml")]
    pub profile: Option<PathBuf>,
    /// Print the resolved settings (YAML) and exit.
    #[arg(long)]
    pub show_config: bool,

    /// Base URL of the server to benchmark, e.g. http://127.0.0.1:8000.
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// Start the built-in simulator in-process and benchmark it instead of a target.
    #[arg(long)]
    pub mock: bool,
    /// Simulator settings for --mock (a `bench mock-server` YAML config file).
    #[arg(long, value_name = "FILE.yaml", requires = "mock")]
    pub mock_config: Option<PathBuf>,
    /// API to speak: openai-completions (default), openai-chat, tgi.
    #[arg(long)]
    pub backend: Option<String>,
    /// Request path overriding the backend's default (e.g. /v1/completions).
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Model name to send (default: the server's first model from /v1/models).
    #[arg(long)]
    pub model: Option<String>,
    /// Bearer token for the server.
    #[arg(long, env = "BENCH_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Speak HTTP/2.
    #[arg(long)]
    pub http2: bool,
    /// Accept any TLS certificate.
    #[arg(long)]
    pub insecure: bool,

    /// Data: `prompt_tokens=N,output_tokens=M` (synthetic; default 256/128) or a dataset
    /// accepted by the loader.
    #[arg(long)]
    pub data: Option<String>,
    /// Tokenizer for counting tokens: a tokenizer.json path or a Hugging Face model id
    /// (default: the built-in tokenizer).
    #[arg(long)]
    pub processor: Option<String>,
    /// Total requests per benchmark (vLLM's name; same as --max-requests).
    #[arg(long, allow_negative_numbers = true)]
    pub num_prompts: Option<u64>,
    /// Send vLLM's `ignore_eos` so every request generates its full output length
    /// (default on; --ignore-eos=false turns it off).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    pub ignore_eos: Option<bool>,

    /// Cap on requests in flight: throughput's cap (default 512) and, for constant / poisson,
    /// requests wait for a slot (their wait is reported as client queue time).
    #[arg(long, allow_negative_numbers = true)]
    pub max_concurrency: Option<u32>,
    /// Gamma shape of poisson arrivals (1 = Poisson; lower is burstier).
    #[arg(long, allow_negative_numbers = true)]
    pub burstiness: Option<f64>,
    /// Seed of random arrivals.
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// Benchmarks in a sweep (default 10).
    #[arg(long, allow_negative_numbers = true)]
    pub sweep_size: Option<u32>,
    /// Open-loop kind of the sweep's rate benchmarks: constant (default) or poisson.
    #[arg(long, value_name = "constant|poisson")]
    pub sweep_rate_type: Option<String>,

    /// Seconds per benchmark (default 30; 5 with --mock).
    #[arg(long, allow_negative_numbers = true)]
    pub max_seconds: Option<f64>,
    /// Requests per benchmark.
    #[arg(long, allow_negative_numbers = true)]
    pub max_requests: Option<u64>,
    /// Stop a benchmark after this many errored requests.
    #[arg(long, allow_negative_numbers = true)]
    pub max_errors: Option<u64>,
    /// Stop a benchmark once this fraction of finished requests errored (0-1].
    #[arg(long, allow_negative_numbers = true)]
    pub max_error_rate: Option<f64>,
    /// Stop open-loop benchmarks the server cannot keep up with (see docs/profiles.md).
    #[arg(long)]
    pub stop_over_saturated: bool,
    /// Warmup excluded from statistics: a fraction (0.1), seconds (10s) or requests (50req).
    #[arg(long, allow_hyphen_values = true)]
    pub warmup: Option<String>,
    /// Cooldown excluded from statistics: a fraction (0.1), seconds (10s) or requests (50req).
    #[arg(long, allow_hyphen_values = true)]
    pub cooldown: Option<String>,

    /// Write the report to this file (.json, .yaml, .csv, .html); repeatable. Written after
    /// every finished benchmark.
    #[arg(long)]
    pub output: Vec<PathBuf>,
    /// Console report: guidellm (default for sweep), vllm (default for run), both, none.
    #[arg(long, value_enum)]
    pub console: Option<Console>,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
    /// vLLM console: metrics to give percentiles for (default ttft,tpot,itl).
    #[arg(long)]
    pub percentile_metrics: Option<String>,
    /// vLLM console: percentiles to show (default 99).
    #[arg(long)]
    pub metric_percentiles: Option<String>,
    /// SLOs for goodput, e.g. "ttft:500 tpot:50 e2el:2000" (milliseconds).
    #[arg(long)]
    pub goodput: Option<String>,
    /// Also save every request's record (times of dispatch, headers, each chunk, end; tokens;
    /// outcome) in the JSON and YAML files (vLLM: --save-detailed).
    #[arg(long, alias = "save-detailed")]
    pub save_records: bool,
    /// Exit 0 even when a benchmark completed no request (by default such a run fails, exit 1).
    #[arg(long)]
    pub allow_empty: bool,
}

/// What a profile file may hold: the same settings as the flags. Unknown keys are rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSettings {
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub mock: Option<bool>,
    #[serde(default)]
    pub mock_config: Option<PathBuf>,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub endpoint: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub http2: Option<bool>,
    #[serde(default)]
    pub insecure: Option<bool>,
    #[serde(default)]
    pub data: Option<String>,
    #[serde(default)]
    pub processor: Option<String>,
    #[serde(default)]
    pub num_prompts: Option<u64>,
    #[serde(default)]
    pub ignore_eos: Option<bool>,
    #[serde(default)]
    pub rate_type: Option<String>,
    #[serde(default)]
    pub rate: Option<RateList>,
    #[serde(default)]
    pub max_concurrency: Option<u32>,
    #[serde(default)]
    pub burstiness: Option<f64>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub sweep_size: Option<u32>,
    #[serde(default)]
    pub sweep_rate_type: Option<String>,
    #[serde(default)]
    pub max_seconds: Option<f64>,
    #[serde(default)]
    pub max_requests: Option<u64>,
    #[serde(default)]
    pub max_errors: Option<u64>,
    #[serde(default)]
    pub max_error_rate: Option<f64>,
    #[serde(default)]
    pub stop_over_saturated: Option<bool>,
    #[serde(default)]
    pub over_saturation: Option<OverSaturation>,
    #[serde(default)]
    pub warmup: Option<Transient>,
    #[serde(default)]
    pub cooldown: Option<Transient>,
    #[serde(default)]
    pub output: Option<Vec<PathBuf>>,
    #[serde(default)]
    pub console: Option<Console>,
    #[serde(default)]
    pub quiet: Option<bool>,
    #[serde(default)]
    pub percentile_metrics: Option<String>,
    #[serde(default)]
    pub metric_percentiles: Option<String>,
    #[serde(default)]
    pub goodput: Option<String>,
    #[serde(default)]
    pub save_records: Option<bool>,
    #[serde(default)]
    pub allow_empty: Option<bool>,
}

/// `rate:` in a file: one number, a list, or a comma-separated string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, try_from = "serde_yaml::Value")]
pub enum RateList {
    /// `rate: 4`
    One(f64),
    /// `rate: [1, 2, 4]`
    Many(Vec<f64>),
    /// `rate: "1,2,4"`
    Text(String),
}

impl TryFrom<serde_yaml::Value> for RateList {
    type Error = String;

    fn try_from(v: serde_yaml::Value) -> Result<Self, String> {
        use serde_yaml::Value;
        let bad =
            || "rate: expected a number, a list of numbers or a comma-separated string".to_string();
        match v {
            Value::Number(n) => n.as_f64().map(RateList::One).ok_or_else(bad),
            Value::String(s) => Ok(RateList::Text(s)),
            Value::Sequence(items) => items
                .iter()
                .map(|i| i.as_f64().ok_or_else(bad))
                .collect::<Result<Vec<_>, _>>()
                .map(RateList::Many),
            _ => Err(bad()),
        }
    }
}

/// The fully resolved settings of a run, as `--show-config` prints them and the report keeps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    /// Server URL (`None` with `mock`).
    pub target: Option<String>,
    /// Benchmark the in-process simulator.
    pub mock: bool,
    /// Simulator config file for `mock`.
    pub mock_config: Option<PathBuf>,
    /// API.
    pub backend: BackendKind,
    /// Request path override.
    pub endpoint: Option<String>,
    /// Model (`None`: discovered).
    pub model: Option<String>,
    /// Bearer token; never printed or saved.
    #[serde(skip)]
    pub api_key: Option<String>,
    /// HTTP/2.
    pub http2: bool,
    /// Accept any certificate.
    pub insecure: bool,
    /// Data argument.
    pub data: String,
    /// Tokenizer.
    pub processor: Option<String>,
    /// Send `ignore_eos`.
    pub ignore_eos: bool,
    /// The kind of run.
    pub rate_type: RateType,
    /// The `--rate` list.
    pub rate: Vec<f64>,
    /// The benchmarks.
    pub profile: Profile,
    /// Per-benchmark limits.
    pub limits: Limits,
    /// Warmup.
    pub warmup: Option<Transient>,
    /// Cooldown.
    pub cooldown: Option<Transient>,
    /// Report files.
    pub output: Vec<PathBuf>,
    /// Console report.
    pub console: Console,
    /// No progress.
    pub quiet: bool,
    /// vLLM console metrics.
    pub percentile_metrics: Option<String>,
    /// vLLM console percentiles.
    pub metric_percentiles: Option<String>,
    /// Goodput SLOs.
    pub goodput: Option<String>,
    /// Save every request's record in the JSON / YAML files.
    pub save_records: bool,
    /// A benchmark that completed nothing does not fail the run.
    pub allow_empty: bool,
}

impl fmt::Display for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_yaml::to_string(self) {
            Ok(s) => f.write_str(&s),
            Err(_) => write!(f, "{self:?}"),
        }
    }
}

/// Parses `1,2.5,4` (also repeated flags) into numbers.
pub fn parse_rates(parts: &[String]) -> Result<Vec<f64>, UsageError> {
    let mut out = Vec::new();
    for p in parts {
        for x in p.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            let v: f64 = x
                .parse()
                .map_err(|_| UsageError::new(format!("--rate: `{x}` is not a number")))?;
            out.push(v);
        }
    }
    Ok(out)
}

/// Reads a profile file; unknown keys and bad values are errors naming the file and the key.
pub fn load_file(path: &Path) -> anyhow::Result<FileSettings> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError::new(format!("profile {}: cannot read: {e}", path.display())))?;
    let parsed: FileSettings = serde_yaml::from_str(&text)
        .map_err(|e| UsageError::new(format!("profile {}: {e}", path.display())))?;
    Ok(parsed)
}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError::new(msg).into()
}

/// Combines the command line (`cli`, plus `rate_type` / `rate` of `bench run`, or a forced
/// sweep) with the profile file and the defaults, and validates everything. The only place
/// settings are decided.
pub fn resolve(
    cli: &CommonArgs,
    cli_rate_type: Option<&str>,
    cli_rate: &[String],
    force_sweep: bool,
) -> anyhow::Result<Settings> {
    let file = match &cli.profile {
        Some(p) => load_file(p)?,
        None => FileSettings::default(),
    };
    let origin = |key: &str| match &cli.profile {
        Some(p) => format!("{key} (from the command line or {})", p.display()),
        None => key.to_string(),
    };

    let mock = cli.mock || file.mock.unwrap_or(false);
    let target = cli.target.clone().or(file.target.clone());
    if mock && cli.target.is_some() {
        return Err(usage("--mock and --target exclude each other"));
    }
    let target = if mock { None } else { target };
    if !mock && target.is_none() {
        return Err(usage(
            "no server to benchmark: give --target URL (or --mock for the built-in simulator)",
        ));
    }
    let backend = match cli.backend.as_ref().or(file.backend.as_ref()) {
        Some(b) => b
            .parse::<BackendKind>()
            .map_err(|e| usage(format!("{}: {e}", origin("backend"))))?,
        None => BackendKind::default(),
    };

    let rate_type = if force_sweep {
        if let Some(rt) = file.rate_type.as_deref().filter(|r| *r != "sweep") {
            return Err(usage(format!(
                "`bench sweep` runs a sweep but the profile says rate_type: {rt}; use `bench run --profile`"
            )));
        }
        if cli_rate_type.is_some() {
            return Err(usage("`bench sweep` takes no --rate-type; use `bench run`"));
        }
        RateType::Sweep
    } else {
        match cli_rate_type.or(file.rate_type.as_deref()) {
            Some(s) => s
                .parse::<RateType>()
                .map_err(|e| usage(format!("{}: {e}", origin("rate-type"))))?,
            None => {
                return Err(usage(
                    "`bench run` needs --rate-type (synchronous, concurrent, throughput, constant, poisson, burst, sweep) or a --profile that sets rate_type",
                ))
            }
        }
    };
    let rate = if !cli_rate.is_empty() {
        parse_rates(cli_rate)?
    } else {
        match &file.rate {
            None => Vec::new(),
            Some(RateList::One(x)) => vec![*x],
            Some(RateList::Many(v)) => v.clone(),
            Some(RateList::Text(s)) => parse_rates(std::slice::from_ref(s))
                .map_err(|e| usage(format!("{}: {e}", origin("rate"))))?,
        }
    };
    let sweep_poisson = match cli
        .sweep_rate_type
        .as_deref()
        .or(file.sweep_rate_type.as_deref())
    {
        None | Some("constant") => false,
        Some("poisson") => true,
        Some(other) => {
            return Err(usage(format!(
                "{}: expected constant or poisson, got `{other}`",
                origin("sweep-rate-type")
            )))
        }
    };
    let build = BuildOptions {
        max_concurrency: cli.max_concurrency.or(file.max_concurrency),
        burstiness: cli.burstiness.or(file.burstiness).unwrap_or(1.0),
        seed: cli.seed.or(file.seed).unwrap_or(42),
        sweep_size: cli.sweep_size.or(file.sweep_size).unwrap_or(10),
        sweep_poisson,
    };
    let profile = Profile::build(rate_type, &rate, &build)
        .map_err(|e| usage(format!("{}: {e}", origin("rate"))))?;

    let num_prompts = cli.num_prompts.or(file.num_prompts);
    if let (Some(n), Some(m)) = (num_prompts, cli.max_requests.or(file.max_requests)) {
        if n != m {
            return Err(usage(format!(
                "--num-prompts {n} and --max-requests {m} disagree (they are the same setting); give one"
            )));
        }
    }
    let max_requests = cli.max_requests.or(file.max_requests).or(num_prompts);
    let is_burst = rate_type == RateType::Burst;
    let max_seconds = match cli.max_seconds.or(file.max_seconds) {
        Some(s) => Some(s),
        // A count ends the benchmark on its own; bursts end when all finished.
        None if max_requests.is_some() || is_burst => None,
        None if mock => Some(DEFAULT_MOCK_MAX_SECONDS),
        None => Some(DEFAULT_MAX_SECONDS),
    };
    let over = if cli.stop_over_saturated || file.stop_over_saturated.unwrap_or(false) {
        Some(file.over_saturation.unwrap_or_default())
    } else {
        None
    };
    let limits = Limits {
        max_seconds,
        max_requests,
        max_errors: cli.max_errors.or(file.max_errors),
        max_error_rate: cli.max_error_rate.or(file.max_error_rate),
        over_saturation: over,
    };
    limits.validate().map_err(|e| usage(e.to_string()))?;
    let transient = |c: &Option<String>, f: &Option<Transient>, key: &str| match c {
        Some(s) => s
            .parse::<Transient>()
            .map(Some)
            .map_err(|e| usage(format!("--{key}: {e}"))),
        None => Ok(*f),
    };
    let warmup = transient(&cli.warmup, &file.warmup, "warmup")?;
    let cooldown = transient(&cli.cooldown, &file.cooldown, "cooldown")?;
    bench_scheduler::Scheduler::<bench_worker::Worker>::validate_profile(
        &profile, &limits, &warmup, &cooldown,
    )
    .map_err(|e| usage(e.to_string()))?;

    let mut output = cli.output.clone();
    if output.is_empty() {
        output = file.output.clone().unwrap_or_default();
    }
    for p in &output {
        bench_report::OutputFormat::from_path(p).map_err(|e| usage(format!("--output: {e}")))?;
    }
    let percentile_metrics = cli
        .percentile_metrics
        .clone()
        .or(file.percentile_metrics.clone());
    if let Some(m) = &percentile_metrics {
        bench_report::parse_percentile_metrics(m)
            .map_err(|e| usage(format!("--percentile-metrics: {e}")))?;
    }
    let metric_percentiles = cli
        .metric_percentiles
        .clone()
        .or(file.metric_percentiles.clone());
    if let Some(m) = &metric_percentiles {
        bench_report::parse_metric_percentiles(m)
            .map_err(|e| usage(format!("--metric-percentiles: {e}")))?;
    }
    let goodput = cli.goodput.clone().or(file.goodput.clone());
    if let Some(g) = &goodput {
        bench_report::Goodput::parse(g).map_err(|e| usage(format!("--goodput: {e}")))?;
    }
    let console = cli
        .console
        .or(file.console)
        .unwrap_or(if rate_type == RateType::Sweep {
            Console::Guidellm
        } else {
            Console::Vllm
        });

    let data = cli
        .data
        .clone()
        .or(file.data)
        .unwrap_or_else(|| DEFAULT_DATA.to_string());
    crate::data::parse(&data)?;

    Ok(Settings {
        target,
        mock,
        mock_config: if mock {
            cli.mock_config.clone().or(file.mock_config)
        } else {
            None
        },
        backend,
        endpoint: cli.endpoint.clone().or(file.endpoint),
        model: cli.model.clone().or(file.model),
        api_key: cli.api_key.clone(),
        http2: cli.http2 || file.http2.unwrap_or(false),
        insecure: cli.insecure || file.insecure.unwrap_or(false),
        data,
        processor: cli.processor.clone().or(file.processor),
        ignore_eos: cli.ignore_eos.or(file.ignore_eos).unwrap_or(true),
        rate_type,
        rate,
        profile,
        limits,
        warmup,
        cooldown,
        output,
        console,
        quiet: cli.quiet || file.quiet.unwrap_or(false),
        percentile_metrics,
        metric_percentiles,
        goodput,
        save_records: cli.save_records || file.save_records.unwrap_or(false),
        allow_empty: cli.allow_empty || file.allow_empty.unwrap_or(false),
    })
}

/// Loads and resolves a profile file as `bench run --profile FILE` would (with `--mock` when
/// the file names no target), for tests and `--show-config`.
pub fn resolve_file(path: &Path) -> anyhow::Result<Settings> {
    let file = load_file(path)?;
    let cli = CommonArgs {
        profile: Some(path.to_path_buf()),
        mock: file.target.is_none() && file.mock.is_none(),
        ..CommonArgs::default()
    };
    resolve(&cli, None, &[], false).with_context(|| format!("profile {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bench-settings-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    }

    fn is_usage(e: &anyhow::Error) -> bool {
        e.chain().any(|c| c.downcast_ref::<UsageError>().is_some())
    }

    #[test]
    fn cli_overrides_file_overrides_defaults() {
        let d = tmpdir("prec");
        let p = write(
            &d,
            "p.yaml",
            "target: http://127.0.0.1:9\nrate_type: constant\nrate: [1, 2]\nmax_seconds: 20\nwarmup: 0.1\n",
        );
        let cli = CommonArgs {
            profile: Some(p),
            max_seconds: Some(7.0),
            ..CommonArgs::default()
        };
        let s = resolve(&cli, None, &[], false).expect("valid");
        assert_eq!(s.limits.max_seconds, Some(7.0), "CLI wins");
        assert_eq!(s.rate, vec![1.0, 2.0], "file fills in");
        assert_eq!(s.warmup, Some(Transient::Fraction(0.1)));
        assert_eq!(s.console, Console::Vllm, "default");
        let s = resolve(&cli, None, &["4".into()], false).expect("valid");
        assert_eq!(s.rate, vec![4.0]);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_file_and_key() {
        let d = tmpdir("bad");
        let p = write(&d, "bad.yaml", "target: http://x\nmax_secs: 3\n");
        let e = load_file(&p).expect_err("unknown key");
        let msg = format!("{e:#}");
        assert!(
            msg.contains("bad.yaml") && msg.contains("max_secs"),
            "{msg}"
        );
        assert!(is_usage(&e));
        let p = write(&d, "bad2.yaml", "target: http://x\nmax_seconds: soon\n");
        let msg = format!("{:#}", load_file(&p).expect_err("bad value"));
        assert!(
            msg.contains("bad2.yaml") && msg.contains("max_seconds"),
            "{msg}"
        );
        let p = write(&d, "bad3.yaml", "target: http://x\nrate_type: fast\n");
        let cli = CommonArgs {
            profile: Some(p),
            ..CommonArgs::default()
        };
        let e = resolve(&cli, None, &[], false).expect_err("bad kind");
        assert!(is_usage(&e));
        assert!(format!("{e:#}").contains("fast"));
    }

    #[test]
    fn usage_errors() {
        let none = CommonArgs::default();
        assert!(is_usage(
            &resolve(&none, Some("constant"), &["1".into()], false).expect_err("no target")
        ));
        let mock = CommonArgs {
            mock: true,
            ..CommonArgs::default()
        };
        for (kind, rate) in [
            ("constant", vec![]),
            ("constant", vec!["x".to_string()]),
            ("concurrent", vec!["1.5".to_string()]),
            ("warp", vec![]),
        ] {
            let e = resolve(&mock, Some(kind), &rate, false).expect_err(kind);
            assert!(is_usage(&e), "{kind}");
        }
        let bad_warm = CommonArgs {
            mock: true,
            warmup: Some("-3".into()),
            ..CommonArgs::default()
        };
        assert!(resolve(&bad_warm, None, &[], true).is_err());
        let bad_out = CommonArgs {
            mock: true,
            output: vec!["x.txt".into()],
            ..CommonArgs::default()
        };
        assert!(is_usage(
            &resolve(&bad_out, None, &[], true).expect_err("bad ext")
        ));
    }

    #[test]
    fn mock_defaults_make_a_short_sweep() {
        let mock = CommonArgs {
            mock: true,
            ..CommonArgs::default()
        };
        let s = resolve(&mock, None, &[], true).expect("valid");
        assert_eq!(s.rate_type, RateType::Sweep);
        assert_eq!(s.limits.max_seconds, Some(DEFAULT_MOCK_MAX_SECONDS));
        assert_eq!(s.profile.len(), 10);
        assert_eq!(s.console, Console::Guidellm);
        assert_eq!(s.data, DEFAULT_DATA);
        // num-prompts bounds a run by count instead of time.
        let n = CommonArgs {
            mock: true,
            num_prompts: Some(100),
            ..CommonArgs::default()
        };
        let s = resolve(&n, Some("poisson"), &["4".into()], false).expect("valid");
        assert_eq!(s.limits.max_requests, Some(100));
        assert_eq!(s.limits.max_seconds, None);
        assert!(s.to_string().contains("max_requests: 100"));
    }
}
