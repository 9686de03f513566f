//! Server-side metrics beside the client's: bench scrapes the target's Prometheus endpoint
//! during every benchmark and reports what the server saw (requests running and waiting, KV
//! usage, prefix-cache hits, preemptions, token counters, the server's own latency histograms).
//!
//! - [`parse`]: the Prometheus text format, strict (no maintained crate on crates.io both
//!   refuses non-Prometheus text and keeps histograms whole; this one is property-tested).
//! - [`snapshot`]: one scrape folded to one value per metric name (the label rule).
//! - [`names`]: where vLLM, SGLang, TGI and llama.cpp keep each figure.
//! - [`summary`]: per-benchmark summaries from timestamped scrapes (`server_metrics`).
//! - [`spec`]: speculative decoding's acceptance over each benchmark's steady window.
//! - [`gpu`]: GPU power, utilization, memory and energy from NVIDIA's DCGM exporter.
//! - [`Scraper`]: the task that scrapes on an interval and on demand, off the request path.
//!
//! It depends only on `bench-core` (for the run clock); the runner (`bench-runner`) starts and
//! reads the scrapers, the report renders [`ServerMetrics`]. It does not print or decide what a
//! failed scrape means for a run. Definitions: `docs/metrics.md`, "Server metrics".

pub mod gpu;
pub mod names;
pub mod parse;
mod scrape;
pub mod snapshot;
pub mod spec;
pub mod summary;

pub use scrape::{default_url, redact, ScrapeOptions, Scraper};
pub use spec::SpecDecodeSummary;
pub use summary::{
    BucketDelta, CounterSummary, GaugeSummary, LatencySummary, MetricSummary, SeriesPoint,
    ServerMetrics, ServerSummary, Span,
};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The exposition is not Prometheus text.
    #[error("not Prometheus text: line {line}: {reason}")]
    Malformed { line: usize, reason: &'static str },
    /// The metrics URL cannot be used.
    #[error("not an http:// or https:// URL: {0}")]
    Url(String),
}
