//! The console options every command that prints a report shares ([`ConsoleArgs`]), the
//! width to fit console tables to, and [`emit`]: a saved run written to files and rendered
//! for the console. Used by `bench report` and `bench merge`.

use std::io::IsTerminal as _;
use std::path::PathBuf;

use bench_report::{
    parse_metric_percentiles, parse_percentile_metrics, RunReport, VllmConsoleOptions, VllmLayout,
};
use clap::{Args, ValueEnum};

use crate::UsageError;

/// Which console report to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConsoleStyle {
    /// guidellm's Benchmarks Metadata / Info / Stats tables.
    Guidellm,
    /// vLLM's "Serving Benchmark Result" block per benchmark.
    Vllm,
    /// guidellm's tables, then vLLM's blocks.
    Both,
    /// Print nothing.
    None,
}

/// vLLM block layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LayoutArg {
    /// Current `vllm bench serve` (Failed requests, peaks, configured rate).
    Current,
    /// `benchmark_serving.py` as older vLLM printed it.
    Classic,
}

/// Console options shared by the commands that print reports.
#[derive(Debug, Clone, Args)]
pub struct ConsoleArgs {
    /// Console report style.
    #[arg(long, value_enum, default_value = "guidellm")]
    pub console: ConsoleStyle,
    /// vLLM console: metrics to print percentiles of (ttft, tpot, itl, e2el, token_latency,
    /// itl_per_request, ttft_from_scheduled, e2el_from_scheduled, queue, dispatch_delay).
    #[arg(long, default_value = "ttft,tpot,itl")]
    pub percentile_metrics: String,
    /// vLLM console: percentiles to print, e.g. 50,75,90,95,99.
    #[arg(long, default_value = "99")]
    pub metric_percentiles: String,
    /// vLLM console: block layout.
    #[arg(long, value_enum, default_value = "current")]
    pub vllm_layout: LayoutArg,
}

impl ConsoleArgs {
    /// The vLLM console options, or a usage error naming the bad flag.
    pub fn vllm_options(&self) -> Result<VllmConsoleOptions, UsageError> {
        let percentile_metrics = parse_percentile_metrics(&self.percentile_metrics)
            .map_err(|e| UsageError::new(format!("--percentile-metrics: {e}")))?;
        let metric_percentiles = parse_metric_percentiles(&self.metric_percentiles)
            .map_err(|e| UsageError::new(format!("--metric-percentiles: {e}")))?;
        Ok(VllmConsoleOptions {
            percentile_metrics,
            metric_percentiles,
            layout: match self.vllm_layout {
                LayoutArg::Current => VllmLayout::Current,
                LayoutArg::Classic => VllmLayout::Classic,
            },
        })
    }

    /// The console text of `run` for a terminal of `width` columns (`None`: piped).
    pub fn render(&self, run: &RunReport, width: Option<u16>) -> Result<String, UsageError> {
        let vllm = self.vllm_options()?;
        let trials = bench_report::render_trials(run);
        let text = match self.console {
            ConsoleStyle::Guidellm => bench_report::render_guidellm(run, width),
            ConsoleStyle::Vllm => bench_report::render_vllm(run, &vllm),
            ConsoleStyle::Both => format!(
                "{}\n{}",
                bench_report::render_guidellm(run, width),
                bench_report::render_vllm(run, &vllm)
            ),
            ConsoleStyle::None => return Ok(String::new()),
        };
        // A run of repeated trials: the trials' block after the tables, as `bench run` prints.
        Ok(if trials.is_empty() {
            text
        } else {
            format!("{text}\n{trials}")
        })
    }
}

/// The width to fit console tables to: the terminal's when stdout is one, else `None`
/// (plain, unwrapped output for pipes and files).
pub fn console_width() -> Option<u16> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    terminal_size::terminal_size().map(|(w, _)| w.0)
}

/// Writes `run` to `outputs` (format by extension) and returns its console text.
pub fn emit(
    run: &RunReport,
    outputs: &[PathBuf],
    console: &ConsoleArgs,
    width: Option<u16>,
) -> anyhow::Result<String> {
    if !outputs.is_empty() {
        bench_report::write_outputs(run, outputs).map_err(|e| match e {
            bench_report::Error::UnknownFormat { .. } => {
                anyhow::Error::new(UsageError::new(format!("--output: {e}")))
            }
            other => anyhow::Error::new(other),
        })?;
    }
    Ok(console.render(run, width)?)
}
