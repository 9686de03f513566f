//! The prompt tokens a server says it served from its prefix cache: the per-request
//! `usage.prompt_tokens_details.cached_tokens` summed over a benchmark (docs/metrics.md,
//! "Server-reported cached tokens").

use bench_core::{Outcome, RequestRecord};
use serde::{Deserialize, Serialize};

/// Over the benchmark's completed requests whose response said how many of their prompt
/// tokens the server's prefix cache served (every phase: warmup and cooldown included, like a
/// trace's fidelity figures, so a whole trace replay is compared with its theoretical rate).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CachedTokensReport {
    /// Completed requests whose usage carried `cached_tokens`.
    pub requests: u64,
    /// Their `cached_tokens`, summed.
    pub cached_tokens: u64,
    /// Their prompt tokens (as the report counts them: the server's usage when given), summed.
    pub prompt_tokens: u64,
    /// `cached_tokens / prompt_tokens` (0 without prompt tokens).
    pub hit_rate: f64,
}

/// Sums requests into a [`CachedTokensReport`] as they finish.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CachedTokens {
    requests: u64,
    cached: u64,
    prompt: u64,
}

impl CachedTokens {
    /// Counts `r` when it completed and its response said its cached tokens.
    pub(crate) fn add(&mut self, r: &RequestRecord) {
        if let (Outcome::Completed, Some(c)) = (&r.outcome, r.cached_tokens) {
            self.requests += 1;
            self.cached += u64::from(c);
            self.prompt += u64::from(r.prompt_tokens);
        }
    }

    /// The figures, when some request said its cached tokens.
    pub(crate) fn report(&self) -> Option<CachedTokensReport> {
        self.figures()
    }

    fn figures(&self) -> Option<CachedTokensReport> {
        (self.requests > 0).then(|| CachedTokensReport {
            requests: self.requests,
            cached_tokens: self.cached,
            prompt_tokens: self.prompt,
            hit_rate: if self.prompt > 0 {
                self.cached as f64 / self.prompt as f64
            } else {
                0.0
            },
        })
    }
}

/// The figures of several shards' requests together (`bench merge`).
pub(crate) fn merge(parts: impl Iterator<Item = CachedTokensReport>) -> Option<CachedTokensReport> {
    parts
        .fold(CachedTokens::default(), |a, r| CachedTokens {
            requests: a.requests + r.requests,
            cached: a.cached + r.cached_tokens,
            prompt: a.prompt + r.prompt_tokens,
        })
        .figures()
}
