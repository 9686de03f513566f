//! `inference-bench`: the `bench` command under its Python package's name, so that
//! `uvx inference-bench sweep --mock` runs it (uv runs the command named as the package). It
//! runs the `bench` installed beside it with the same arguments (on Unix it becomes that
//! process: signals, exit code and terminal are `bench`'s own), so the wheel carries one copy
//! of the program.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// The `bench` beside this executable.
fn bench() -> std::io::Result<PathBuf> {
    let me = std::env::current_exe()?;
    Ok(me.with_file_name(format!("bench{}", std::env::consts::EXE_SUFFIX)))
}

#[cfg(unix)]
fn run(cmd: &mut Command) -> std::io::Error {
    std::os::unix::process::CommandExt::exec(cmd)
}

#[cfg(not(unix))]
fn run(cmd: &mut Command) -> std::io::Error {
    match cmd.status() {
        Ok(s) => std::process::exit(s.code().unwrap_or(1)),
        Err(e) => e,
    }
}

fn main() -> ExitCode {
    let err = match bench() {
        Ok(path) => {
            let e = run(Command::new(&path).args(std::env::args_os().skip(1)));
            format!("cannot run {}: {e}", path.display())
        }
        Err(e) => format!("cannot find this executable's directory: {e}"),
    };
    eprintln!("error: {err} (the `inference-bench` package installs `bench` beside this command)");
    ExitCode::from(1)
}
