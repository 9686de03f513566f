//! The options of the views: the vLLM console's layout, sections and percentiles (the
//! figures' options, what the accumulator computes, are [`crate::figures::options`]).

use crate::figures::options::Metric;

/// Which vLLM summary layout to print.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum VllmLayout {
    /// Current `vllm bench serve`: adds Failed requests, the configured rate and concurrency
    /// cap, peak output throughput and peak concurrency.
    #[default]
    Current,
    /// `benchmark_serving.py` as in the seeds: Successful requests, duration, totals,
    /// throughputs (and goodput) only.
    Classic,
}

/// Options of [`crate::views::vllm::render_vllm`].
#[derive(Debug, Clone, PartialEq)]
pub struct VllmConsoleOptions {
    /// The sections to print (`--percentile-metrics`); vLLM's default is `ttft,tpot,itl`.
    pub percentile_metrics: Vec<Metric>,
    /// The percentiles of every section (`--metric-percentiles`); vLLM's default is `99`.
    pub metric_percentiles: Vec<f64>,
    /// Which layout.
    pub layout: VllmLayout,
}

impl Default for VllmConsoleOptions {
    fn default() -> Self {
        Self {
            percentile_metrics: vec![Metric::Ttft, Metric::Tpot, Metric::Itl],
            metric_percentiles: vec![99.0],
            layout: VllmLayout::Current,
        }
    }
}
