//! The bench command line: turns arguments and profile files into settings, runs them, and
//! renders results. The only crate that prints, exits or sets up logging.
//!
//! Each subcommand lives in its own module with its `Args` and its `run`.

mod data;
mod error;
mod limits;
mod mock_server;
mod outputs;
mod progress;
mod report_cmd;
mod run;
pub mod settings;
mod signals;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use error::UsageError;

/// Benchmark LLM inference servers: how much traffic can a deployment carry, and at what
/// latency?
#[derive(Debug, Parser)]
#[command(name = "bench", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Probe synchronous and maximum throughput, then run constant rates between them.
    Sweep(Box<run::SweepArgs>),
    /// Run any load shape (--rate-type KIND --rate LIST), or a YAML profile.
    Run(Box<run::RunArgs>),
    /// Re-render saved runs (console, JSON, YAML, CSV, HTML), or compare two side by side.
    Report(report_cmd::ReportArgs),
    /// Serve the built-in LLM server simulator (OpenAI and TGI APIs).
    MockServer(Box<mock_server::MockServerArgs>),
}

/// Runs the command line and returns the process exit code: 0 on success, 1 for a failed run,
/// 2 for usage and configuration errors.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2):
            // a usage error as one line naming the culprit, like every other bench error.
            use clap::error::ErrorKind;
            if e.exit_code() == 2 && e.kind() != ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            {
                // The lines before clap's usage block, joined: the error and its details.
                let text = e.render().to_string();
                let line: Vec<&str> = text
                    .lines()
                    .map(str::trim)
                    .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more"))
                    .filter(|l| !l.is_empty())
                    .collect();
                eprintln!("{} (see --help)", line.join(" "));
                return ExitCode::from(2);
            }
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let result = match cli.command {
        Command::Sweep(args) => run::sweep(*args),
        Command::Run(args) => run::run(*args),
        Command::Report(args) => report_cmd::run(args),
        Command::MockServer(args) => mock_server::run(*args),
    };
    match result {
        Ok(code) => code,
        Err(err) => error::report(&err),
    }
}
