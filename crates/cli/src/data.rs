//! Request data for `bench sweep` / `bench run`: the `--data` argument through `bench-loader`.

use bench_loader::{DataSpec, Loader};
use bench_scheduler::Work;
use bench_tokenizer::Tokenizer;

use crate::UsageError;

/// Parses `--data` (checked again, with files opened, by [`loader`]).
pub fn parse(data: &str) -> Result<DataSpec, UsageError> {
    DataSpec::parse(data, None).map_err(|e| UsageError::new(format!("--data {data}: {e}")))
}

/// The endless (cycling) stream of request specs of `--data` under `tokenizer`.
pub fn loader(data: &str, tokenizer: Tokenizer) -> Result<Loader, UsageError> {
    let spec = parse(data)?;
    Loader::new(spec, tokenizer)
        .map(|l| l.cycle(true))
        .map_err(|e| UsageError::new(format!("--data {data}: {e}")))
}

/// What the scheduler releases: single requests, or whole conversations when the data are
/// conversations (`turns=`), so the benchmark runs sessions.
#[derive(Debug)]
pub struct WorkStream(Loader);

impl WorkStream {
    /// The stream of `loader`.
    pub fn new(loader: Loader) -> Self {
        Self(loader)
    }
}

impl Iterator for WorkStream {
    type Item = Work;

    fn next(&mut self) -> Option<Work> {
        if !self.0.sessions() {
            return self.0.next().map(Work::Request);
        }
        match self.0.try_next_conversation() {
            Ok(c) => c.map(Work::from),
            Err(e) => {
                tracing::error!(error = %e, "reading the dataset failed");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_data_has_exact_lengths_and_bad_data_is_a_usage_error() {
        let tk = Tokenizer::builtin();
        let specs: Vec<_> = loader("prompt_tokens=40,output_tokens=8", tk.clone())
            .expect("valid")
            .take(5)
            .collect();
        assert_eq!(specs.len(), 5);
        for r in &specs {
            assert_eq!(r.prompt_tokens, 40);
            assert_eq!(tk.count(&r.prompt), 40);
            assert_eq!(r.output_tokens, Some(8));
        }
        assert!(parse("prompt_tokens=x").is_err());
        assert!(loader("/no/such/file.jsonl", tk).is_err());
    }
}
