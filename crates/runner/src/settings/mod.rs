//! The typed settings of a run, resolved once by the caller (the CLI from flags and profile
//! files, or a program building them itself): what the runner reads and nothing else. No
//! parsing happens here; the types serialize into the report's `config` (no secrets).

mod load;
mod models;
mod report;
mod request;
mod target;

use serde::{Deserialize, Serialize};

pub use load::{LoadSettings, Repeat};
pub use models::MixSettings;
pub use report::{ReportSettings, VllmResult};
pub use request::{RequestSettings, Sampling, VllmExtensions};
pub use target::TargetSettings;

/// Default data: guidellm's sweep seed (256 prompt tokens, 128 output tokens).
pub const DEFAULT_DATA: &str = "prompt_tokens=256,output_tokens=128";
/// Default length of one benchmark against a real target, seconds.
pub const DEFAULT_MAX_SECONDS: f64 = 30.0;
/// Default length of one benchmark with `--mock`, seconds (a default sweep takes about a
/// minute).
pub const DEFAULT_MOCK_MAX_SECONDS: f64 = 5.0;

/// Which console report(s) to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// The data to send.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataSettings {
    /// The `--data` argument (`k=v,...` or a path), checked by the loader.
    pub data: String,
    /// `--data-column`.
    pub data_column: Option<String>,
    /// Tokenizer.
    pub processor: Option<String>,
}

/// The fully resolved settings of a run. Serialized (flat, no secrets) into the report's
/// `config`; the CLI's `--show-config` prints them as a profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    /// Server, transport, timeouts.
    #[serde(flatten)]
    pub target: TargetSettings,
    /// Request body rules.
    #[serde(flatten)]
    pub request: RequestSettings,
    /// Data.
    #[serde(flatten)]
    pub data: DataSettings,
    /// Load shape and limits.
    #[serde(flatten)]
    pub load: LoadSettings,
    /// Console and files.
    #[serde(flatten)]
    pub report: ReportSettings,
}

impl Settings {
    /// What `bench sweep --mock` runs with no other flag: an adaptive sweep of 5 s benchmarks
    /// against the in-process simulator with its default configuration, sending the default
    /// data (256 prompt tokens, 128 output tokens), writing no file but the default one the
    /// CLI claims (a library caller sets `report.output` to the files it wants, or leaves it
    /// empty). A starting point to change fields of; a CLI test checks it against what the
    /// command line resolves.
    pub fn mock_sweep() -> Settings {
        use bench_profile::{BuildOptions, Limits, Profile, RateType};
        let build = BuildOptions::default();
        let profile = Profile::build(RateType::Sweep, &[], &build)
            .unwrap_or_else(|e| unreachable!("the default sweep builds: {e}"));
        Settings {
            target: TargetSettings {
                targets: Vec::new(),
                balance: None,
                mock: true,
                mock_config: None,
                backend: bench_worker::BackendKind::OpenAiCompletions,
                endpoint: None,
                model: None,
                model_mix: None,
                api_key: None,
                headers: Vec::new(),
                header_names: Vec::new(),
                session_header: None,
                replica_header: None,
                http2: false,
                insecure: false,
                cacert: None,
                timeouts: bench_worker::Timeouts::default(),
                source_addresses: Vec::new(),
            },
            request: RequestSettings {
                extra_body: None,
                sampling: Sampling::default(),
                ignore_eos: true,
                vllm_extensions: VllmExtensions::Auto,
                stream: true,
                think_tags: false,
            },
            data: DataSettings {
                data: DEFAULT_DATA.to_string(),
                data_column: None,
                processor: None,
            },
            load: LoadSettings {
                rate_type: RateType::Sweep,
                rate: Vec::new(),
                build,
                profile,
                limits: Limits {
                    max_seconds: Some(DEFAULT_MOCK_MAX_SECONDS),
                    ..Limits::default()
                },
                num_prompts: None,
                warmup: None,
                cooldown: None,
                think_time: bench_core::ThinkTime::None,
                repeat: Repeat {
                    trials: 1,
                    until: None,
                },
                ramp: None,
                cancellation: None,
            },
            report: ReportSettings {
                output: Vec::new(),
                default_output: true,
                console: Console::Guidellm,
                quiet: false,
                percentile_metrics: None,
                metric_percentiles: None,
                vllm_layout: None,
                vllm_console: bench_report::VllmConsoleOptions::default(),
                goodput: None,
                save_records: false,
                allow_empty: false,
                save_result: None,
                metadata: Default::default(),
                label: None,
                server_metrics: true,
                server_metrics_url: None,
                server_metrics_interval: 1.0,
                gpu_metrics: Vec::new(),
            },
        }
    }
}
