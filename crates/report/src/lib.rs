//! Statistics and reports of bench: it turns [`bench_core::RequestRecord`]s into one
//! [`BenchmarkReport`] per benchmark and renders a [`RunReport`] as guidellm- and vLLM-style
//! console text and as JSON, YAML, CSV and self-contained HTML files.
//!
//! It owns metric definitions (see `docs/metrics.md`), HdrHistograms (microseconds, 3
//! significant figures), the JSON schema (`docs/report-schema.json`) and every output format.
//! It does not schedule, send, print or choose file names: the runner feeds an
//! [`Accumulator`] per benchmark and passes the paths, the CLI prints the strings. The
//! deployment plan's figures and report are the plan's crate's (`bench-plan`), drawn with this
//! crate's tables, charts and page style ([`draw`]); nothing here knows of a plan.
//!
//! # Layout: figures, then views
//!
//! The crate is two module trees. `figures/` computes and owns the figures: the data model and
//! schema, histograms, the accumulator, intervals, capacity and its intervals, precision,
//! trials, the exact merge of shards and sessions. `views/` renders them: both consoles, the
//! CSV, JSON, YAML and HTML files, the vLLM result files and comparisons, with the helpers
//! every view shares in `views/common.rs`. Views import figures, never the reverse, and
//! neither tree has a circle (`tests/layers.rs` reads the imports and checks both). This file
//! owns only the crate's [`Error`] and its public API: it re-exports, under the names the rest
//! of the workspace uses, what the two trees make public; modules import each other by their
//! paths (`crate::figures::model::RunReport`), never through these re-exports.
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

mod figures;
/// Fixtures of the crate's unit tests, and of the plan's (`bench-plan` enables the
/// `fixtures` feature for its tests only).
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod test_support;
mod views;

/// The pieces the views are drawn with, for a crate that renders a report of its own (the
/// deployment plan's, `bench-plan`): console tables, SVG charts and the HTML pages' style.
pub mod draw {
    pub use crate::views::common::{esc, render as table, trimmed, Spec as Table};
    pub use crate::views::html::CSS;
    pub use crate::views::svg::{chart, Axes, Canvas, Mark, Series, PALETTE};
}

pub use figures::cached::CachedTokensReport;
pub use figures::capacity::{
    knee, knee_threshold_ms, open_loop, slo_metric, KNEE_FACTOR, KNEE_SLACK_MS,
};
pub use figures::capacity_interval::{
    capacity_interval, capacity_intervals, knee_interval, max_interval, rate_interval,
    slo_has_intervals, slo_interval, slo_verdict,
};
pub use figures::hist::{Dist, MetricSummary, SIGNIFICANT_FIGURES};
pub use figures::images::ImageReport;
pub use figures::interval::{Interval, Intervals, MetricIntervals};
pub use figures::merge::{are_shards, merge_shards, ShardFile};
pub use figures::model::{
    AcrossTrials, BenchmarkReport, Environment, GoodputReport, HalfWidths, Histograms,
    LatencyScope, MergedRun, MergedShard, Metrics, PrecisionReport, Rates, RequestCounts,
    RunReport, SessionCache, SessionCacheRow, SessionReport, ShardClock, ShardRun, Timeline,
    TokenCounts, TokenStat, TokenSummary, Tokens, Trial, Trials, TurnReport, SCHEMA_VERSION,
    TURN_ROWS,
};
pub use figures::models::{ModelFigures, MODEL_METRICS, MODEL_PERCENTILES};
pub use figures::options::{
    parse_metric_percentiles, parse_percentile_metrics, percentile_key, Goodput, Metric,
    StatsOptions, DEFAULT_PERCENTILES,
};
pub use figures::precision::{half_widths, judge as judge_precision, PrecisionCheck};
pub use figures::stats::{Accumulator, BenchmarkMeta};
pub use figures::targets::TargetCounts;
pub use figures::trials::{not_converged, pool, MIN_TRIALS_TO_STOP};
pub use views::cancel_view::cancel_notes;
pub use views::capacity_view::{render_capacity, render_capacity_vllm};
pub use views::common::{crossing_words, max_concurrency};
pub use views::compare::{render_comparison, Change};
pub use views::compare_md::render_comparison_markdown;
pub use views::files::{
    read_run, render_csv, render_json, render_yaml, write_atomic, write_outputs, OutputFormat,
};
pub use views::gate::{gate, Check, Direction, Gate, Rule, Rules, Verdict};
pub use views::guidellm::render_guidellm;
pub use views::html::{render_comparison_html, render_html};
pub use views::options::{VllmConsoleOptions, VllmLayout};
pub use views::precision_view::precision_notes;
pub use views::ramp_view::ramp_notes;
pub use views::runs_view::{render_clocks, render_trials};
pub use views::targets_view::target_notes;
pub use views::vllm::{render_vllm, render_vllm_benchmark, render_vllm_preamble};
pub use views::vllm_result::{vllm_result, vllm_result_filename, VllmResultMeta};

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
