//! Statistics and reports of bench: it turns [`bench_core::RequestRecord`]s into one
//! [`BenchmarkReport`] per benchmark and renders a [`RunReport`] as guidellm- and vLLM-style
//! console text and as JSON, YAML, CSV and self-contained HTML files.
//!
//! It owns metric definitions (see `docs/metrics.md`), HdrHistograms (microseconds, 3
//! significant figures), the JSON schema (`docs/report-schema.json`) and every output format.
//! It does not schedule, send, print or choose file names: the scheduler feeds an
//! [`Accumulator`] per benchmark, the CLI prints the strings and passes the paths.
//!
//! # Use from the scheduler / CLI
//!
//! ```no_run
//! use bench_report::*;
//! # fn demo(records: Vec<bench_core::RequestRecord>, clock: bench_core::Clock) -> Result<(), Error> {
//! let opts = StatsOptions {
//!     goodput: Some(Goodput::parse("ttft:500 tpot:50")?),
//!     ..StatsOptions::default()
//! };
//! let mut run = RunReport::new("run-id", "2026-11-22T04:00:00Z");
//! let mut acc = Accumulator::new(&opts);
//! for r in records {
//!     acc.add(r); // as each request finishes
//! }
//! let strategy = bench_core::Strategy::Synchronous;
//! let meta = BenchmarkMeta::new(strategy, 0, clock.now(), clock.wall_epoch());
//! run.benchmarks.push(acc.finish(meta));
//! write_outputs(&run, &["out.json".into(), "out.html".into()])?; // after every benchmark
//! let text = render_guidellm(&run, Some(120));
//! let vllm = render_vllm(&run, &VllmConsoleOptions::default());
//! # let _ = (text, vllm); Ok(()) }
//! ```

mod cached;
mod capacity;
mod capacity_interval;
mod chunks;
mod compare;
mod compare_html;
mod files;
mod guidellm;
mod hist;
mod html;
mod html_server;
mod images;
mod interval;
mod merge;
mod model;
mod options;
mod precision;
mod reasoning_view;
mod server;
mod stats;
mod steady_view;
mod svg;
mod sweep_html;
#[cfg(test)]
mod test_support;
mod time_fmt;
mod trials;
mod turns;
mod turns_merge;
mod turns_view;
mod vllm;
mod vllm_result;

pub use cached::CachedTokensReport;
pub use capacity::{
    knee, knee_threshold_ms, render_capacity, render_capacity_vllm, slo_metric, KNEE_FACTOR,
    KNEE_SLACK_MS,
};
pub use capacity_interval::{
    capacity_interval, capacity_intervals, crossing_words, knee_interval, max_interval,
    slo_interval,
};
pub use compare::render_comparison;
pub use files::{
    read_run, render_csv, render_json, render_yaml, write_atomic, write_outputs, OutputFormat,
};
pub use guidellm::render_guidellm;
pub use hist::{Dist, MetricSummary, SIGNIFICANT_FIGURES};
pub use html::{render_comparison_html, render_html};
pub use images::ImageReport;
pub use interval::{Interval, Intervals, MetricIntervals};
pub use merge::{are_shards, merge_shards, render_clocks, ShardFile};
pub use model::{
    BenchmarkReport, Environment, GoodputReport, Histograms, LatencyScope, MergedRun, MergedShard,
    Metrics, Rates, RequestCounts, RunReport, SessionReport, ShardClock, ShardRun, Timeline,
    TokenCounts, TokenStat, TokenSummary, Tokens, TurnReport, SCHEMA_VERSION, TURN_ROWS,
};
pub use options::{
    parse_metric_percentiles, parse_percentile_metrics, percentile_key, Goodput, Metric,
    StatsOptions, VllmConsoleOptions, VllmLayout, DEFAULT_PERCENTILES,
};
pub use precision::{
    half_widths, judge as judge_precision, precision_notes, HalfWidths, PrecisionCheck,
    PrecisionReport,
};
pub use stats::{Accumulator, BenchmarkMeta};
pub use trials::{
    not_converged, pool, render_trials, AcrossTrials, Trial, Trials, MIN_TRIALS_TO_STOP,
};
pub use vllm::{render_vllm, render_vllm_benchmark, render_vllm_preamble};
pub use vllm_result::{max_concurrency, vllm_result, vllm_result_filename, VllmResultMeta};

/// Errors of the report crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A command-line form (goodput, percentiles, metric names) did not parse.
    #[error("{0}")]
    Parse(String),
    /// A serialized histogram could not be decoded.
    #[error("histogram: {0}")]
    Histogram(String),
    /// An output path has an extension we cannot write.
    #[error("{path}: unknown report format (use .json, .yaml, .yml, .csv or .html)")]
    UnknownFormat {
        /// The path.
        path: std::path::PathBuf,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A saved run is not valid JSON of this schema.
    #[error("{path}: not a bench run report: {message}")]
    Invalid {
        /// The file.
        path: std::path::PathBuf,
        /// What was wrong.
        message: String,
    },
    /// Shard results that cannot be merged into one run (the message names the file).
    #[error("merge: {0}")]
    Merge(String),
    /// Serializing failed.
    #[error("serialize: {0}")]
    Serialize(String),
}
