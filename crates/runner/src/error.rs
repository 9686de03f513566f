//! The runner's errors: a usage error (the settings or the input cannot run: exit 2 in the CLI)
//! apart from a run that failed (exit 1).

/// A usage or configuration error: bad settings, bad profile files, bad data files. The CLI
/// exits with 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl UsageError {
    /// A usage error with this message.
    pub fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

/// Why a run could not start, or did not finish as asked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The settings or the input cannot run (a data file, a tokenizer, an output path, a
    /// concurrency over the open-file limit, a data stream that broke): the user's to fix.
    /// The message names the setting as the user gave it, its causes joined.
    #[error(transparent)]
    Usage(UsageError),
    /// The run failed: the target did not answer, the simulator did not start, a report file
    /// could not be written, the server went away. The causes are in the source chain.
    #[error("{0}")]
    Failed(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl Error {
    /// Whether the settings or the input are to blame (the CLI's exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_))
    }
}

impl From<UsageError> for Error {
    fn from(e: UsageError) -> Self {
        Error::Usage(e)
    }
}

/// `err` and its causes on one line, each cause once: how a usage error's message reads.
fn one_line(err: &anyhow::Error) -> String {
    let mut line = err.to_string();
    for cause in err.chain().skip(1) {
        let s = cause.to_string();
        if !line.contains(&s) {
            line.push_str(": ");
            line.push_str(&s);
        }
    }
    line
}

impl From<anyhow::Error> for Error {
    /// A usage error when any cause is a [`UsageError`], a failed run otherwise.
    fn from(err: anyhow::Error) -> Self {
        if err
            .chain()
            .any(|c| c.downcast_ref::<UsageError>().is_some())
        {
            Error::Usage(UsageError(one_line(&err)))
        } else {
            Error::Failed(err.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usage_cause_anywhere_makes_a_usage_error_on_one_line() {
        let e = anyhow::Error::new(UsageError::new("--data x: no such file")).context("trial 2");
        let e = Error::from(e);
        assert!(e.is_usage());
        assert_eq!(e.to_string(), "trial 2: --data x: no such file");
        let f = Error::from(anyhow::anyhow!("refused").context("the target is not answering"));
        assert!(!f.is_usage());
        assert_eq!(f.to_string(), "the target is not answering");
        let chain: Vec<String> =
            std::iter::successors(std::error::Error::source(&f), |c| c.source())
                .map(ToString::to_string)
                .collect();
        assert_eq!(chain, ["the target is not answering", "refused"]);
    }
}
