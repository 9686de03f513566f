//! Finishing a run: the consoles printed, the warnings said after them, and the exit code
//! (with one line saying why when it is not a success).

use std::io::IsTerminal as _;
use std::process::ExitCode;

use bench_report::RunReport;
use bench_runner::Finished;

use crate::settings::{Console, Settings};
use crate::signals;

/// After the run: the consoles, the warnings, then the run's error or its exit code; with the
/// run's report.
pub(super) fn conclude(
    s: &Settings,
    finished: Finished,
    interrupted: &signals::Interrupted,
) -> (anyhow::Result<ExitCode>, RunReport) {
    let Finished {
        report,
        failure,
        ending_notes,
        resent_requests,
        ignored_events,
        ..
    } = finished;
    if let Err(e) = print_console(s, &report) {
        return (Err(e), report);
    }
    warn_after(&ending_notes, resent_requests, ignored_events);
    let code = finish(s, &report, failure, interrupted);
    (code, report)
}

/// The exit code of a finished run, with one line saying why when it is not a success.
fn finish(
    s: &Settings,
    report: &RunReport,
    failure: Option<bench_runner::Error>,
    interrupted: &signals::Interrupted,
) -> anyhow::Result<ExitCode> {
    if let Some(e) = failure {
        return Err(e.into());
    }
    if let Some(code) = interrupted.exit_code() {
        eprintln!("run interrupted; the last benchmark is partial");
        return Ok(ExitCode::from(code));
    }
    if !s.report.allow_empty {
        if let Some(line) = empty_benchmarks(report, &s.report.output) {
            anyhow::bail!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Warnings printed after the consoles: requests ended by a timeout or rate limited (see
/// the runner's endings), resent requests.
fn warn_after(ending_notes: &[String], resent: u64, ignored: u64) {
    for note in ending_notes {
        eprintln!("warning: {note}");
    }
    if resent > 0 {
        eprintln!(
            "warning: {resent} request(s) were resent because the server closed a kept-alive \
             connection before answering them; their latencies include the failed attempt"
        );
    }
    if ignored > 0 {
        eprintln!(
            "warning: {ignored} /v1/responses or /v1/messages event(s) of unknown types were \
             ignored (docs/backends.md, \"Responses\" and \"Anthropic Messages\")"
        );
    }
}

/// One line naming the benchmarks that completed no request and what became of their requests,
/// `None` when every benchmark completed at least one.
fn empty_benchmarks(run: &RunReport, outputs: &[std::path::PathBuf]) -> Option<String> {
    let empty: Vec<String> = run
        .benchmarks
        .iter()
        .filter(|b| b.requests.completed == 0)
        .map(|b| {
            let r = &b.requests;
            format!(
                "{} ({} errored, {} cut off unfinished at the end of the benchmark)",
                b.label, r.errored, r.incomplete
            )
        })
        .collect();
    if empty.is_empty() && !run.benchmarks.is_empty() {
        return None;
    }
    let what = if run.benchmarks.is_empty() {
        "no benchmark ran".to_string()
    } else {
        format!("no request completed in {}", empty.join(", "))
    };
    let see = if outputs.is_empty() {
        "the error samples are logged above".to_string()
    } else {
        format!(
            "the report ({}) has the details",
            outputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Some(format!("{what}; {see} (--allow-empty accepts such a run)"))
}

/// The consoles `--console` asks for, with the fidelity lines, the trials' block and the
/// precision notes after them.
fn print_console(s: &Settings, run: &RunReport) -> anyhow::Result<()> {
    let console = s.report.console;
    if run.benchmarks.is_empty() || console == Console::None {
        return Ok(());
    }
    let width = if std::io::stdout().is_terminal() {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse::<u16>().ok())
            .or(Some(160))
    } else {
        None
    };
    if matches!(console, Console::Guidellm | Console::Both) {
        println!("{}", bench_report::render_guidellm(run, width));
    }
    if matches!(console, Console::Vllm | Console::Both) {
        println!("{}", bench_report::render_vllm(run, &s.report.vllm_console));
    }
    for line in crate::fidelity::lines(run) {
        println!("{line}");
    }
    let trials = bench_report::render_trials(run);
    if !trials.is_empty() {
        print!("{trials}");
    }
    for line in bench_report::precision_notes(run) {
        println!("{line}");
    }
    for line in bench_report::ramp_notes(run) {
        println!("{line}");
    }
    for line in bench_report::cancel_notes(run) {
        println!("{line}");
    }
    for line in bench_report::target_notes(run) {
        println!("{line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bench_report::{Accumulator, BenchmarkMeta, StatsOptions};

    use super::*;

    #[test]
    fn an_empty_benchmark_is_named_with_what_became_of_its_requests() {
        let mut run = RunReport::new("id", "2026-01-01T00:00:00Z");
        assert!(empty_benchmarks(&run, &[])
            .expect("no benchmark ran")
            .contains("no benchmark ran"));
        let empty = Accumulator::new(&StatsOptions::default()).finish(BenchmarkMeta::new(
            bench_core::Strategy::Synchronous,
            0,
            1_000_000_000,
            std::time::SystemTime::UNIX_EPOCH,
        ));
        run.benchmarks.push(empty);
        let line = empty_benchmarks(&run, &["out.json".into()]).expect("empty");
        assert!(line.contains("synchronous (0 errored, 0 cut off"), "{line}");
        assert!(
            line.contains("out.json") && line.contains("--allow-empty"),
            "{line}"
        );
    }
}
