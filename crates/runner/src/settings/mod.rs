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
