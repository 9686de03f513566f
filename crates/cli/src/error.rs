//! Error reporting and exit codes.

use std::process::ExitCode;

/// A usage or configuration error: bad flags, bad profile files, bad data files. Exits with 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl UsageError {
    /// A usage error with this message.
    pub fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

/// Prints `err` as one line (with its causes) and returns its exit code: 2 when any cause is a
/// [`UsageError`], 1 otherwise.
pub(crate) fn report(err: &anyhow::Error) -> ExitCode {
    let usage = err
        .chain()
        .any(|c| c.downcast_ref::<UsageError>().is_some());
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
