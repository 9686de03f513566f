//! `bench merge`: the shard results of one distributed run merged into one run
//! (docs/distributed.md), written and printed like any saved run.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::console_out::{console_width, emit, ConsoleArgs};
use crate::shard_merge::{merge_files, DEFAULT_MAX_SKEW_S};

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
