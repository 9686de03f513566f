//! `bench completions SHELL` (clap_complete) and `bench man` (clap_mangen): generated from the
//! same clap definitions as the parser, so they cannot drift from it.

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Args, Command};
use clap_complete::Shell;

/// Arguments of `bench completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell. Install e.g. with
    /// `bench completions bash > ~/.local/share/bash-completion/completions/bench`.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Writes the completion script of `shell` for `cmd` to stdout.
pub fn completions(args: &CompletionsArgs, mut cmd: Command) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "bench", &mut out);
    std::io::stdout().write_all(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the man page (roff) of `cmd` to stdout: `bench man > bench.1`.
pub fn man(cmd: Command) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out)?;
    std::io::stdout().write_all(&out)?;
    Ok(ExitCode::SUCCESS)
}
