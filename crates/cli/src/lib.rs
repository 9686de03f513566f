//! The bench command line: turns arguments and profile files into settings, runs them, and
//! renders results. The only crate that prints, exits or sets up logging.

use std::process::ExitCode;

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    ExitCode::SUCCESS
}
