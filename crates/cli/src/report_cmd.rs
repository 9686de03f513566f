//! `bench report`: re-renders saved runs (console text and files) without running anything,
//! or puts several runs side by side.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::console_out::{console_width, emit, ConsoleArgs, ConsoleStyle};
use crate::UsageError;

/// Arguments of `bench report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Saved runs (JSON or YAML). Two or more are compared side by side, unless they are
    /// the shards of one distributed run: then they are merged (as `bench merge`). A plan
    /// file (`bench plan`'s plan.json) is printed as a plan.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the run again in another format, chosen by extension (.json, .yaml, .csv,
    /// .html); repeatable. With several input files: an .html page overlaying the runs.
    #[arg(long = "output", short = 'o')]
    pub outputs: Vec<PathBuf>,
    /// Console options.
    #[command(flatten)]
    pub console: ConsoleArgs,
}

/// What `bench report` prints, for `width` (`None`: piped), after writing any outputs.
pub fn render(args: &ReportArgs, width: Option<u16>) -> anyhow::Result<String> {
    let vllm = args.console.vllm_options()?;
    if let [one] = args.files.as_slice() {
        if let Some(plan) = crate::plan::read_plan(one) {
            return crate::plan::rerender(&plan, &args.outputs, width);
        }
    }
    let mut runs = Vec::new();
    for f in &args.files {
        let run = bench_report::read_run(f)
            .map_err(|e| UsageError::new(e.to_string()))
            .with_context(|| format!("cannot read {}", f.display()))?;
        runs.push(run);
    }
    if let [run] = runs.as_slice() {
        return emit(run, &args.outputs, &args.console, width);
    }
    if bench_report::are_shards(&runs) {
        // The shards of one distributed run: merged, as `bench merge` does.
        let merged =
            crate::shard_merge::merge_files(&args.files, crate::shard_merge::DEFAULT_MAX_SKEW_S)?;
        return emit(&merged, &args.outputs, &args.console, width);
    }
    let names: Vec<String> = args
        .files
        .iter()
        .map(|f| {
            f.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| f.display().to_string())
        })
        .collect();
    let _ = vllm;
    for out in &args.outputs {
        if !out
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
        {
            return Err(UsageError::new(format!(
                "--output {}: several runs are compared in HTML only (.html)",
                out.display()
            ))
            .into());
        }
    }
    for out in &args.outputs {
        let html = bench_report::render_comparison_html(&runs, &names);
        std::fs::write(out, html).with_context(|| format!("writing {}", out.display()))?;
    }
    if args.console.console == ConsoleStyle::None {
        return Ok(String::new());
    }
    Ok(bench_report::render_comparison(&runs, &names, width))
}

/// Runs `bench report`.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let text = render(&args, console_width())?;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}
