//! `bench mock-server`. (Owned by the simulator work, issue 2.)

use std::process::ExitCode;

use clap::Args;

/// Arguments of `bench mock-server`.
#[derive(Debug, Args)]
pub struct MockServerArgs {
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to bind (0 picks a free one).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
}

pub fn run(_args: MockServerArgs) -> anyhow::Result<ExitCode> {
    Err(crate::UsageError::new("`bench mock-server` is not built yet").into())
}
