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
    /// .html); repeatable. With several input files: an .html page overlaying the runs, or a
    /// .md summary (the gate's verdict, the changes, the capacities) for a pull-request
    /// comment or a CI step summary.
    #[arg(long = "output", short = 'o')]
    pub outputs: Vec<PathBuf>,
    /// Regression gate, with two files BASE NEW: comma-separated rules FIGURE<CHANGE% or
    /// FIGURE>CHANGE% (e.g. requests_per_s<-5%,ttft_p99>+10%,itl_p50>+5%,capacity<-5%). A
    /// rule fails when NEW's change from BASE is past its threshold and beyond both 95%
    /// intervals; any failure exits with code 3, one line per failure on stderr.
    #[arg(long, value_name = "RULES")]
    pub fail_on: Option<String>,
    /// With --fail-on: a change past its threshold with no interval to judge it by (a `?`),
    /// or a rule that found nothing to check, fails too.
    #[arg(long, requires = "fail_on")]
    pub fail_on_unjudged: bool,
    /// Console options.
    #[command(flatten)]
    pub console: ConsoleArgs,
}

/// Exit code of `bench report --fail-on` when a rule fails (docs/cli.md, "Exit codes").
pub const GATE_FAILED: u8 = 3;

/// The gate's lines for stderr, and whether it failed.
type GateLines = Option<(String, bool)>;

/// What `bench report` prints, for `width` (`None`: piped), after writing any outputs, and
/// with `--fail-on` the gate's lines and verdict.
fn render(args: &ReportArgs, width: Option<u16>) -> anyhow::Result<(String, GateLines)> {
    let vllm = args.console.vllm_options()?;
    let rules = match &args.fail_on {
        Some(r) => Some(
            r.parse::<bench_report::Rules>()
                .map_err(|e| UsageError::new(format!("--fail-on {e}")))?,
        ),
        None => None,
    };
    if rules.is_some() && args.files.len() != 2 {
        return Err(UsageError::new(format!(
            "--fail-on compares two runs, BASE.json NEW.json; {} file(s) given",
            args.files.len()
        ))
        .into());
    }
    if let [one] = args.files.as_slice() {
        if let Some(plan) = crate::plan::read_plan(one) {
            return Ok((crate::plan::rerender(&plan, &args.outputs, width)?, None));
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
        return Ok((emit(run, &args.outputs, &args.console, width)?, None));
    }
    if bench_report::are_shards(&runs) && rules.is_none() {
        // The shards of one distributed run: merged, as `bench merge` does.
        let merged =
            crate::shard_merge::merge_files(&args.files, crate::shard_merge::DEFAULT_MAX_SKEW_S)?;
        return Ok((emit(&merged, &args.outputs, &args.console, width)?, None));
    }
    let _ = vllm;
    compare(args, &runs, rules, width)
}

/// Several runs side by side (and, with rules, the gate of the second against the first).
fn compare(
    args: &ReportArgs,
    runs: &[bench_report::RunReport],
    rules: Option<bench_report::Rules>,
    width: Option<u16>,
) -> anyhow::Result<(String, GateLines)> {
    let names: Vec<String> = args
        .files
        .iter()
        .map(|f| {
            f.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| f.display().to_string())
        })
        .collect();
    let mut kinds = Vec::new();
    for out in &args.outputs {
        let ext = out
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let md = match ext.as_str() {
            "html" | "htm" => false,
            "md" | "markdown" => true,
            _ => {
                return Err(UsageError::new(format!(
                    "--output {}: several runs are compared in HTML (.html) or Markdown (.md)",
                    out.display()
                ))
                .into())
            }
        };
        kinds.push((out, md));
    }
    let unjudged = args.fail_on_unjudged;
    let gate = rules.map(|r| bench_report::gate(&runs[0], &runs[1], r));
    for (out, md) in kinds {
        let text = if md {
            bench_report::render_comparison_markdown(
                runs,
                &names,
                gate.as_ref().map(|g| (g, unjudged)),
            )
        } else {
            bench_report::render_comparison_html(runs, &names)
        };
        std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
    }
    let lines = gate.map(|g| (g.summary(unjudged), g.failed(unjudged)));
    if args.console.console == ConsoleStyle::None {
        return Ok((String::new(), lines));
    }
    Ok((bench_report::render_comparison(runs, &names, width), lines))
}

/// Runs `bench report`: exit 0, or [`GATE_FAILED`] when a `--fail-on` rule failed.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let (text, gate) = render(&args, console_width())?;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .context("writing to stdout")?;
    match gate {
        Some((lines, failed)) => {
            eprint!("{lines}");
            Ok(if failed {
                ExitCode::from(GATE_FAILED)
            } else {
                ExitCode::SUCCESS
            })
        }
        None => Ok(ExitCode::SUCCESS),
    }
}
