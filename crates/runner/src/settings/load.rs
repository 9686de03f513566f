//! The benchmarks of a run: rate type, rates, the profile, its limits, warmup and cooldown,
//! trials.

use bench_profile::{BuildOptions, Limits, Profile, RateType, Transient};
use serde::Serialize;

/// The benchmarks of the run and how each ends.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadSettings {
    /// The kind of run.
    pub rate_type: RateType,
    /// The `--rate` list.
    pub rate: Vec<f64>,
    /// What built the profile (kept for `--show-config`).
    #[serde(skip)]
    pub build: BuildOptions,
    /// The benchmarks.
    pub profile: Profile,
    /// Per-benchmark limits.
    pub limits: Limits,
    /// `--num-prompts` as given (it sets `limits.max_requests`).
    #[serde(skip)]
    pub num_prompts: Option<u64>,
    /// Warmup.
    pub warmup: Option<Transient>,
    /// Cooldown.
    pub cooldown: Option<Transient>,
    /// Sessions: the pause between turns.
    pub think_time: bench_core::ThinkTime,
    /// `--repeat` / `--repeat-until`.
    pub repeat: Repeat,
    /// The ramp-up every benchmark climbs by (docs/metrics.md, "Ramp-up").
    pub ramp: Option<bench_core::Ramp>,
    /// The share of requests the client cancels, and when (docs/metrics.md, "Cancellation").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancellation: Option<bench_core::Cancellation>,
}

/// Repeated trials (`--repeat N`, `--repeat-until PERCENT`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Repeat {
    /// Trials to run (the most, with `until`); 1 without `--repeat`.
    pub trials: u32,
    /// Stop once every key figure's interval half-width is within this fraction of it.
    pub until: Option<f64>,
}
