//! What a run writes and what its caller prints: files, console choice, percentiles,
//! goodput, records, vLLM's result file, the server's and the GPUs' metrics.

use std::collections::BTreeMap;
use std::path::PathBuf;

use bench_report::{Goodput, VllmConsoleOptions};
use serde::Serialize;

use super::Console;

/// vLLM's `--save-result` file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VllmResult {
    /// `--result-dir`.
    pub dir: Option<PathBuf>,
    /// `--result-filename` (default: vLLM's name).
    pub filename: Option<String>,
}

/// What is printed and written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportSettings {
    /// Report files.
    pub output: Vec<PathBuf>,
    /// No file named and none turned off (`--no-output`, `output: []`): the run's JSON goes to
    /// a new file under [`crate::outputs::DEFAULT_DIR`], added to `output` when it is made.
    pub default_output: bool,
    /// Console report.
    pub console: Console,
    /// No progress.
    pub quiet: bool,
    /// vLLM console metrics, as given.
    pub percentile_metrics: Option<String>,
    /// vLLM console percentiles, as given.
    pub metric_percentiles: Option<String>,
    /// vLLM console layout (`current` / `classic`), as given.
    pub vllm_layout: Option<String>,
    /// The vLLM console options, parsed.
    #[serde(skip)]
    pub vllm_console: VllmConsoleOptions,
    /// Goodput SLOs.
    pub goodput: Option<Goodput>,
    /// Save every request's record in the JSON / YAML files.
    pub save_records: bool,
    /// A benchmark that completed nothing does not fail the run.
    pub allow_empty: bool,
    /// Write vLLM's result JSON.
    pub save_result: Option<VllmResult>,
    /// `--metadata KEY=VALUE` pairs.
    pub metadata: BTreeMap<String, String>,
    /// `--label`.
    pub label: Option<String>,
    /// Scrape the server's Prometheus metrics.
    pub server_metrics: bool,
    /// Where (`None`: `/metrics` on the target); printed and saved without its password.
    #[serde(serialize_with = "redacted")]
    pub server_metrics_url: Option<String>,
    /// Seconds between scrapes.
    pub server_metrics_interval: f64,
    /// DCGM exporters scraped for the GPUs' figures (`--gpu-metrics`), each an `http(s)://`
    /// URL or a `/path` on the target; printed and saved without passwords.
    #[serde(serialize_with = "redacted_all")]
    pub gpu_metrics: Vec<String>,
}

fn redacted_all<S: serde::Serializer>(urls: &[String], s: S) -> Result<S::Ok, S::Error> {
    urls.iter()
        .map(|u| bench_servermetrics::redact(u))
        .collect::<Vec<_>>()
        .serialize(s)
}

fn redacted<S: serde::Serializer>(url: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    url.as_deref().map(bench_servermetrics::redact).serialize(s)
}
