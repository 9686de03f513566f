//! `bench sweep` and `bench run`. (Owned by the scheduler work, issue 5.)

use std::process::ExitCode;

use clap::Args;

/// Arguments of `bench sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Base URL of the server to benchmark.
    #[arg(long)]
    pub target: Option<String>,
}

/// Arguments of `bench run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Base URL of the server to benchmark.
    #[arg(long)]
    pub target: Option<String>,
}

pub fn sweep(_args: SweepArgs) -> anyhow::Result<ExitCode> {
    Err(crate::UsageError::new("`bench sweep` is not built yet").into())
}

pub fn run(_args: RunArgs) -> anyhow::Result<ExitCode> {
    Err(crate::UsageError::new("`bench run` is not built yet").into())
}
