//! `bench merge`: the shard results of one distributed run merged into one run
//! (docs/distributed.md), written and printed like any saved run.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use bench_report::{RunReport, ShardFile};
use clap::Args;

use crate::report_cmd::{console_width, emit, ConsoleArgs};
use crate::UsageError;

/// Default of `--max-skew`, seconds.
pub const DEFAULT_MAX_SKEW_S: f64 = 1.0;

/// Arguments of `bench merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Every shard's result (JSON or YAML) of one run, each index once.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the merged run, format by extension (.json, .yaml, .csv, .html); repeatable.
    #[arg(long = "output", short = 'o')]
    pub outputs: Vec<PathBuf>,
    /// Refuse shards that started a benchmark more than this many seconds apart, or whose
    /// clocks the target's Date header proves more than this many seconds apart.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_MAX_SKEW_S)]
    pub max_skew: f64,
    /// Console options.
    #[command(flatten)]
    pub console: ConsoleArgs,
}

/// Reads `files` and merges them; every fault is a usage error naming the file.
pub fn merge_files(files: &[PathBuf], max_skew: f64) -> anyhow::Result<RunReport> {
    if !(max_skew.is_finite() && max_skew >= 0.0) {
        return Err(UsageError::new(format!(
            "--max-skew {max_skew}: give a number of seconds, 0 or more"
        ))
        .into());
    }
    let mut shards = Vec::with_capacity(files.len());
    for f in files {
        let run = bench_report::read_run(f).map_err(|e| UsageError::new(e.to_string()))?;
        shards.push(ShardFile {
            name: f.display().to_string(),
            run,
        });
    }
    bench_report::merge_shards(shards, max_skew).map_err(|e| UsageError::new(e.to_string()).into())
}

/// Runs `bench merge`.
pub fn run(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let merged = merge_files(&args.files, args.max_skew)?;
    let mut text = emit(&merged, &args.outputs, &args.console, console_width())?;
    if let Some(m) = merged.merged.as_ref().filter(|_| !text.is_empty()) {
        // The shards and their clocks, after the report.
        text.push_str(&bench_report::render_clocks(m));
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}
