//! Error reporting and exit codes.

use std::process::ExitCode;

pub use bench_runner::UsageError;

/// Prints `err` as one line (with its causes) and returns its exit code: 2 when any cause is a
/// [`UsageError`] (or the runner's usage error), 1 otherwise.
pub(crate) fn report(err: &anyhow::Error) -> ExitCode {
    let usage = err.chain().any(|c| {
        c.downcast_ref::<UsageError>().is_some()
            || c.downcast_ref::<bench_runner::Error>()
                .is_some_and(bench_runner::Error::is_usage)
    });
    let mut line = format!("error: {err}");
    for cause in err.chain().skip(1) {
        let s = cause.to_string();
        if !line.contains(&s) {
            line.push_str(": ");
            line.push_str(&s);
        }
    }
    eprintln!("{line}");
    if usage {
        ExitCode::from(2)
    } else {
        ExitCode::from(1)
    }
}
