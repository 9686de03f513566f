use std::path::PathBuf;

/// Everything that can go wrong while configuring or reading a dataset. Each message is one
/// line naming the culprit (the key, the file, the column).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `--data` string or YAML mapping that cannot be understood.
    #[error("--data: {0}")]
    Spec(String),
    /// A count that must be positive is zero or negative.
    #[error("--data: {key} must be at least {min}, got {value}")]
    TooSmall {
        /// The key.
        key: &'static str,
        /// The least value accepted.
        min: i64,
        /// The value given.
        value: String,
    },
    /// A spread (`*_stdev`, `range_ratio`) without the mean it spreads.
    #[error("--data: {key} given without {needs}")]
    Orphan {
        /// The key given.
        key: &'static str,
        /// The key it needs.
        needs: &'static str,
    },
    /// A data file that does not exist.
    #[error("data file {0}: no such file")]
    MissingFile(PathBuf),
    /// A data file that cannot be read.
    #[error("data file {path}: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The prompt (or output) column is absent.
    #[error("data file {path}: no column {column} (columns: {available})")]
    UnknownColumn {
        /// The file.
        path: PathBuf,
        /// The column asked for, quoted (or the default names).
        column: String,
        /// The columns found.
        available: String,
    },
    /// A dataset that yields no usable request.
    #[error("data file {path}: no usable prompt{reason}")]
    Empty {
        /// The file.
        path: PathBuf,
        /// Why, e.g. " (every ShareGPT pair was filtered out by length)".
        reason: String,
    },
    /// A trace file with a bad row (or none); `line` 0 is the file as a whole.
    #[error("trace {}{}: {message}", path.display(), if *line > 0 { format!(" line {line}") } else { String::new() })]
    Trace {
        /// The file.
        path: PathBuf,
        /// The row's line (from 1, a CSV header included); 0 for the whole file.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// The tokenizer failed.
    #[error(transparent)]
    Tokenizer(#[from] bench_tokenizer::Error),
    /// No text of exactly the asked token count could be made (only with unusual tokenizers).
    #[error("tokenizer {tokenizer}: could not build a prompt of exactly {tokens} tokens")]
    Inexact {
        /// The tokenizer's name.
        tokenizer: String,
        /// The count asked for.
        tokens: u64,
    },
}
