//! Request data for `bench sweep` / `bench run`: the `--data` argument through `bench-loader`.

use bench_loader::{DataSeed, DataSpec, Loader};
use bench_tokenizer::Tokenizer;

use crate::UsageError;

/// Parses `--data` (checked again, with files opened, by [`loader`]).
pub fn parse(data: &str) -> Result<DataSpec, UsageError> {
    DataSpec::parse(data, None).map_err(|e| UsageError::new(format!("--data {data}: {e}")))
}

/// The endless (cycling) stream of request specs of `--data` under `tokenizer`, salted for
/// this run unless `seed=` was given, with the seed in use (reports record it).
pub fn loader(data: &str, tokenizer: Tokenizer) -> Result<(Loader, Option<DataSeed>), UsageError> {
    let mut spec = parse(data)?;
    // A fresh salt per run from a v4 UUID (the OS's randomness), kept below 2^53 so that
    // every JSON reader holds it exactly.
    let seed = spec.salt(uuid::Uuid::new_v4().as_u64_pair().0 & ((1 << 53) - 1));
    Loader::new(spec, tokenizer)
        .map(|l| (l.cycle(true), seed))
        .map_err(|e| UsageError::new(format!("--data {data}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_data_has_exact_lengths_and_bad_data_is_a_usage_error() {
        let tk = Tokenizer::builtin();
        let specs: Vec<_> = loader("prompt_tokens=40,output_tokens=8", tk.clone())
            .expect("valid")
            .0
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

    fn prompts(data: &str) -> (Vec<String>, Option<DataSeed>) {
        let (l, seed) = loader(data, Tokenizer::builtin()).expect("valid");
        (l.take(4).map(|s| s.prompt.to_string()).collect(), seed)
    }

    #[test]
    fn runs_are_salted_unless_a_seed_is_given() {
        let data = "prompt_tokens=40,output_tokens=8";
        let (a, sa) = prompts(data);
        let (b, sb) = prompts(data);
        assert_ne!(a, b, "a repeated run sends fresh prompts");
        let (sa, sb) = (sa.expect("synthetic"), sb.expect("synthetic"));
        assert!(!sa.explicit && !sb.explicit);
        assert_ne!(sa.seed, sb.seed);
        // The recorded salt, given back as seed=, reproduces the run's prompts exactly.
        let (again, s) = prompts(&format!("{data},seed={}", sa.seed));
        assert_eq!(again, a);
        assert!(s.expect("synthetic").explicit);
        // An explicit seed reproduces itself.
        assert_eq!(
            prompts(&format!("{data},seed=7")).0,
            prompts(&format!("{data},seed=7")).0
        );
    }
}
