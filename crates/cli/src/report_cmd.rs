//! `bench report`. (Owned by the report work, issue 6.)

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

/// Arguments of `bench report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Saved runs (JSON) to render; two or more are put side by side.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

pub fn run(_args: ReportArgs) -> anyhow::Result<ExitCode> {
    Err(crate::UsageError::new("`bench report` is not built yet").into())
}
