//! A run's request data: the settings' `data` through `bench-loader`, salted per trial and per
//! shard, as the stream of work the scheduler sends.

use bench_core::Shard;
use bench_loader::{DataSeed, DataSpec, Loader};
use bench_scheduler::Work;
use bench_tokenizer::Tokenizer;

use crate::UsageError;

/// Parses `--data` with `--data-column` (checked again, with files opened, by [`trial_loader`]).
pub fn parse(data: &str, column: Option<&str>) -> Result<DataSpec, UsageError> {
    DataSpec::parse(data, column).map_err(|e| UsageError::new(format!("--data {data}: {e}")))
}

/// The endless (cycling) stream of request specs of `--data` under `tokenizer` for trial
/// `trial` of the run (0 without `--repeat`), with the seed in use (reports record it):
/// [`salted_loader`] with the run's `salt` (unless `seed=` was given), moved on by `trial`
/// ([`DataSpec::for_trial`]) so that every trial sends fresh prompts.
pub fn trial_loader(
    data: &str,
    column: Option<&str>,
    tokenizer: Tokenizer,
    salt: u64,
    trial: u32,
) -> Result<(Loader, Option<DataSeed>), UsageError> {
    let mut spec = parse(data, column)?;
    spec.salt(salt);
    let seed = spec.for_trial(trial);
    Loader::new(spec, tokenizer)
        .map(|l| (l.cycle(true), seed))
        .map_err(|e| UsageError::new(format!("--data {data}: {e}")))
}

/// A fresh salt per run from a v4 UUID (the OS's randomness), kept below 2^53 so that
/// every JSON reader holds it exactly.
pub fn fresh_salt() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0 & ((1 << 53) - 1)
}

/// The loader of `--data` salted with `salt` (the shards of one run share theirs, so that they split one
/// sequence of prompts).
pub fn salted_loader(
    data: &str,
    column: Option<&str>,
    tokenizer: Tokenizer,
    salt: u64,
) -> Result<(Loader, Option<DataSeed>), UsageError> {
    let mut spec = parse(data, column)?;
    let seed = spec.salt(salt);
    Loader::new(spec, tokenizer)
        .map(|l| (l.cycle(true), seed))
        .map_err(|e| UsageError::new(format!("--data {data}: {e}")))
}

/// What the scheduler releases: single requests, or whole conversations when the data are
/// conversations (`turns=`), so the benchmark runs sessions. A trace starts over at each
/// benchmark ([`Rewind`]).
///
/// A shard's stream ([`WorkStream::sharded`]) keeps unit `i` of the whole stream (a request,
/// or a conversation) when `i mod N` is its index, counting from the start of a trace's
/// replay or, for other data, of the run: the shards split one sequence without overlap.
#[derive(Debug)]
pub struct WorkStream {
    loader: Loader,
    rewind: Rewind,
    seen: usize,
    shard: Option<Shard>,
    /// Index in the whole stream of the next unit read.
    pos: u64,
}

/// Counts the benchmarks started, so that a trace is replayed from its first row by each.
#[derive(Debug, Clone, Default)]
pub struct Rewind(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Rewind {
    /// A benchmark starts.
    pub fn benchmark_started(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl WorkStream {
    /// The stream of `loader`.
    pub fn new(loader: Loader) -> Self {
        Self {
            loader,
            rewind: Rewind::default(),
            seen: 0,
            shard: None,
            pos: 0,
        }
    }

    /// Only `shard`'s units of the stream.
    pub fn sharded(mut self, shard: Option<Shard>) -> Self {
        self.shard = shard.filter(|s| !s.is_whole());
        self
    }

    /// The handle the run's observer calls as each benchmark starts.
    pub fn rewind(&self) -> Rewind {
        self.rewind.clone()
    }
}

impl Iterator for WorkStream {
    type Item = Work;

    fn next(&mut self) -> Option<Work> {
        let started = self.rewind.0.load(std::sync::atomic::Ordering::Relaxed);
        if started != self.seen {
            self.seen = started;
            if self.loader.trace_summary().is_some() {
                self.pos = 0;
            }
            if let Err(e) = self.loader.rewind() {
                tracing::error!(error = %e, "starting the trace over failed");
                return None;
            }
        }
        loop {
            let unit = self.next_unit()?;
            let i = self.pos;
            self.pos += 1;
            if self.shard.is_none_or(|s| s.owns(i)) {
                return Some(unit);
            }
        }
    }
}

impl WorkStream {
    /// The next unit of the whole stream.
    fn next_unit(&mut self) -> Option<Work> {
        if !self.loader.sessions() {
            return self.loader.next().map(Work::Request);
        }
        match self.loader.try_next_conversation() {
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

    /// A run's loader without `--repeat`.
    fn loader(
        data: &str,
        column: Option<&str>,
        tokenizer: Tokenizer,
    ) -> Result<(Loader, Option<DataSeed>), UsageError> {
        trial_loader(data, column, tokenizer, fresh_salt(), 0)
    }

    #[test]
    fn each_trial_draws_fresh_prompts_even_with_a_seed_given() {
        for data in [
            "prompt_tokens=40,output_tokens=8",
            "prompt_tokens=40,output_tokens=8,seed=3",
        ] {
            let trial = |i: u32| {
                let (l, seed) =
                    trial_loader(data, None, Tokenizer::builtin(), 99, i).expect("valid");
                let p: Vec<String> = l.take(4).map(|s| s.prompt.to_string()).collect();
                (p, seed.expect("synthetic").seed)
            };
            let ((a, sa), (b, sb), (a2, _)) = (trial(0), trial(1), trial(0));
            assert_eq!(a, a2, "{data}: a trial is reproducible from its seed");
            assert_ne!(a, b, "{data}: trial 1 resent trial 0's prompts");
            assert_eq!(sb, sa + 1, "{data}");
        }
    }

    #[test]
    fn synthetic_data_has_exact_lengths_and_bad_data_is_a_usage_error() {
        let tk = Tokenizer::builtin();
        let specs: Vec<_> = loader("prompt_tokens=40,output_tokens=8", None, tk.clone())
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
        assert!(parse("prompt_tokens=x", None).is_err());
        assert!(loader("/no/such/file.jsonl", None, tk).is_err());
    }

    /// The prompts of shard `shard` of the stream of `data` salted with 7.
    fn shard_prompts(data: &str, shard: Option<Shard>, n: usize) -> Vec<String> {
        let (l, _) = salted_loader(data, None, Tokenizer::builtin(), 7).expect("valid");
        WorkStream::new(l)
            .sharded(shard)
            .take(n)
            .map(|w| match w {
                Work::Request(r) => r.prompt.to_string(),
                Work::Session(_) => panic!("no sessions here"),
            })
            .collect()
    }

    #[test]
    fn shards_split_one_prompt_sequence_without_overlap() {
        let data = "prompt_tokens=12,output_tokens=2";
        let whole = shard_prompts(data, None, 12);
        for count in [2u32, 3, 4] {
            for index in 0..count {
                let s = Shard::new(index, count).expect("valid");
                let got = shard_prompts(data, Some(s), 12 / count as usize);
                let want: Vec<String> = whole
                    .iter()
                    .skip(index as usize)
                    .step_by(count as usize)
                    .cloned()
                    .collect();
                assert_eq!(got, want, "shard {s}");
            }
        }
    }

    fn prompts(data: &str) -> (Vec<String>, Option<DataSeed>) {
        let (l, seed) = loader(data, None, Tokenizer::builtin()).expect("valid");
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
