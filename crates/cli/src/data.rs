//! Request data for `bench sweep` / `bench run`.
//!
//! Interim: until `bench-loader` lands on main this module builds guidellm-style synthetic
//! prompts itself (`prompt_tokens=N,output_tokens=M[,samples=K]`), each of exactly N tokens
//! under the tokenizer and starting differently (no shared prefix for the server's cache).

use std::sync::Arc;

use bench_core::RequestSpec;
use bench_tokenizer::Tokenizer;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::UsageError;

/// Synthetic data parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntheticSpec {
    /// Prompt tokens per request.
    pub prompt_tokens: u32,
    /// Output tokens asked for.
    pub output_tokens: Option<u32>,
    /// Distinct prompts, cycled.
    pub samples: usize,
}

/// Parses `prompt_tokens=256,output_tokens=128[,samples=K]`.
pub fn parse(data: &str) -> Result<SyntheticSpec, UsageError> {
    let mut prompt = None;
    let mut output = None;
    let mut samples = None;
    for part in data.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(UsageError::new(format!(
                "--data `{data}`: expected key=value pairs such as prompt_tokens=256,output_tokens=128"
            )));
        };
        let n: u64 = v.trim().parse().map_err(|_| {
            UsageError::new(format!("--data: `{k}` needs a whole number, got `{v}`"))
        })?;
        match k.trim() {
            "prompt_tokens" => prompt = Some(n),
            "output_tokens" => output = Some(n),
            "samples" => samples = Some(n),
            other => {
                return Err(UsageError::new(format!(
                    "--data: unknown key `{other}` (expected prompt_tokens, output_tokens, samples)"
                )))
            }
        }
    }
    let prompt = prompt
        .ok_or_else(|| UsageError::new(format!("--data `{data}`: prompt_tokens is required")))?;
    if !(1..=1_000_000).contains(&prompt) {
        return Err(UsageError::new(
            "--data: prompt_tokens must be 1 to 1000000",
        ));
    }
    if output == Some(0) || output.is_some_and(|o| o > 1_000_000) {
        return Err(UsageError::new(
            "--data: output_tokens must be 1 to 1000000",
        ));
    }
    // Keep the prompt pool under ~4M tokens.
    let cap = (4_000_000 / prompt).clamp(1, 1000) as usize;
    let samples = samples.map_or(cap, |s| (s as usize).clamp(1, cap));
    Ok(SyntheticSpec {
        prompt_tokens: prompt as u32,
        output_tokens: output.map(|o| o as u32),
        samples,
    })
}

/// Builds the prompt pool; the iterator cycles through it forever.
pub fn synthetic(
    spec: SyntheticSpec,
    tokenizer: &Tokenizer,
    seed: u64,
) -> impl Iterator<Item = RequestSpec> + Send + 'static {
    let words: Vec<String> = {
        let w = tokenizer.single_token_words();
        if w.is_empty() {
            ["alpha", "river", "stone", "light", "cloud", "north"]
                .iter()
                .map(|s| format!(" {s}"))
                .collect()
        } else {
            w.iter().map(|(_, t)| t.clone()).collect()
        }
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let want = spec.prompt_tokens as usize;
    let mut pool = Vec::with_capacity(spec.samples);
    for i in 0..spec.samples {
        let mut parts: Vec<&str> = Vec::with_capacity(want + 4);
        let head = format!("{i}");
        let pick = |rng: &mut StdRng| words[rng.random_range(0..words.len())].as_str();
        for _ in 0..want {
            parts.push(pick(&mut rng));
        }
        let text = |parts: &[&str]| format!("{head}{}", parts.concat());
        let mut t = text(&parts);
        let mut n = tokenizer.count(&t);
        // Trim or pad one word at a time until the count is exact (a few steps at most).
        let mut steps = 0;
        while n != want && steps < 64 {
            if n > want {
                let drop = (n - want).min(parts.len().saturating_sub(1)).max(1);
                parts.truncate(parts.len().saturating_sub(drop));
            } else {
                for _ in 0..(want - n) {
                    parts.push(pick(&mut rng));
                }
            }
            t = text(&parts);
            n = tokenizer.count(&t);
            steps += 1;
        }
        pool.push((Arc::<str>::from(t), n as u32));
    }
    let output = spec.output_tokens;
    pool.into_iter()
        .cycle()
        .map(move |(prompt, prompt_tokens)| RequestSpec {
            prompt,
            prompt_tokens,
            output_tokens: output,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_builds_exact_prompts() {
        let s = parse("prompt_tokens=40,output_tokens=8,samples=5").expect("valid");
        assert_eq!(s.samples, 5);
        let tk = Tokenizer::builtin();
        let specs: Vec<_> = synthetic(s, &tk, 1).take(10).collect();
        for r in &specs {
            assert_eq!(r.prompt_tokens, 40);
            assert_eq!(tk.count(&r.prompt), 40);
            assert_eq!(r.output_tokens, Some(8));
        }
        assert_eq!(specs[0], specs[5], "cycles");
        assert_ne!(specs[0].prompt, specs[1].prompt);
        for bad in [
            "",
            "prompt_tokens=x",
            "output_tokens=3",
            "foo=1,prompt_tokens=3",
            "prompt_tokens=0",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
