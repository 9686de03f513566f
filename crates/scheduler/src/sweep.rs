//! Runs of several benchmarks: fixed lists and the sweep.

use bench_core::{Backend, Capacity, Interval, RequestRecord, Shard, Strategy, Sure};
use bench_profile::{
    Limits, Profile, ProfileError, Reading, SweepPlanner, SweepRole, SweepStep, Transient,
    LADDER_LENGTH, LADDER_WARMUP,
};

use crate::Work;

use crate::{BenchmarkOutcome, BenchmarkSetup, Phase, Scheduler, SchedulerError, StopReason};

/// Receives a run's events in order. Implemented by the CLI (statistics, progress, files) and
/// by tests.
pub trait Observer {
    /// A benchmark is about to start.
    fn benchmark_started(&mut self, index: usize, total: usize, setup: &BenchmarkSetup) {
        let _ = (index, total, setup);
    }
    /// A sweep chose its next benchmark (its part of the sweep and its load), before that
    /// benchmark starts; not called for a fixed list of benchmarks.
    fn sweep_step(&mut self, index: usize, step: &SweepStep) {
        let _ = (index, step);
    }
    /// One request finished (in any way), with the phase it belongs to.
    fn record(&mut self, index: usize, record: RequestRecord, phase: Phase);
    /// A benchmark ended; all its records have been delivered.
    fn benchmark_finished(&mut self, index: usize, outcome: &BenchmarkOutcome) {
        let _ = (index, outcome);
    }
    /// Whether the finished benchmark `index` met the sweep's SLO (`None`: no SLO, or not
    /// judged). The observer judges because it owns the latency figures (the report).
    fn slo_met(&mut self, index: usize) -> Option<bool> {
        let _ = index;
        None
    }
    /// What the finished benchmark `index`'s intervals say of the sweep's SLO (docs/metrics.md,
    /// "Intervals"; `None`: no SLO, or not judged): the sweep narrows its SLO answer's interval
    /// by these (`--slo-precision`).
    fn slo_sure(&mut self, index: usize) -> Option<Sure> {
        let _ = index;
        None
    }
    /// The 95% interval of the requests/s the finished benchmark `index` read, as the report
    /// states the capacity's (`None`: none): the sweep narrows its maximum's interval by it
    /// (`--capacity-precision`).
    fn rate_interval(&mut self, index: usize) -> Option<Interval> {
        let _ = index;
        None
    }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// Finished benchmarks, in order (the last may be partial).
    pub benchmarks: Vec<BenchmarkOutcome>,
    /// The part of the sweep each benchmark was (empty for fixed lists).
    pub roles: Vec<SweepRole>,
    /// The capacity answer of an adaptive sweep (its knee is the report's to find).
    pub capacity: Option<Capacity>,
    /// Whether the user interrupted the run.
    pub interrupted: bool,
}

fn setup(
    strategy: Strategy,
    limits: &Limits,
    warmup: &Option<Transient>,
    cooldown: &Option<Transient>,
) -> BenchmarkSetup {
    BenchmarkSetup {
        strategy,
        limits: limits.clone(),
        warmup: *warmup,
        cooldown: *cooldown,
    }
}

/// `limits` with their time and count scaled by `length` (ladder rungs are shorter).
fn scaled(limits: &Limits, length: f64) -> Limits {
    if length == 1.0 {
        return limits.clone();
    }
    Limits {
        max_seconds: limits.max_seconds.map(|s| s * length),
        max_requests: limits
            .max_requests
            .map(|n| ((n as f64 * length).ceil() as u64).max(1)),
        ..limits.clone()
    }
}

impl<B: Backend> Scheduler<B> {
    /// Checks that every benchmark `profile` can produce is runnable with these limits and
    /// transients, without running anything.
    pub fn validate_profile(
        profile: &Profile,
        limits: &Limits,
        warmup: &Option<Transient>,
        cooldown: &Option<Transient>,
    ) -> Result<(), SchedulerError> {
        let setups: Vec<BenchmarkSetup> = match profile {
            Profile::Fixed { benchmarks } => benchmarks
                .iter()
                .map(|s| setup(s.clone(), limits, warmup, cooldown))
                .collect(),
            Profile::Sweep(spec) => {
                let mut s = vec![Strategy::Synchronous];
                s.extend(
                    spec.rate_strategies(1.0, 2.0)
                        .map_err(SchedulerError::Sweep)?,
                );
                let mut p: Vec<BenchmarkSetup> = s
                    .into_iter()
                    .map(|s| setup(s, limits, warmup, cooldown))
                    .collect();
                let rung = Strategy::Concurrent { streams: 2 };
                p.push(setup(
                    rung,
                    &scaled(limits, LADDER_LENGTH),
                    warmup,
                    cooldown,
                ));
                p
            }
        };
        for p in setups {
            p.resolve()?;
        }
        Ok(())
    }

    /// Checks that `shard`'s share of every benchmark of a fixed `profile` is runnable (each
    /// shard needs at least one stream and one request); sweeps decide their benchmarks as
    /// they go and are checked as each starts.
    pub fn validate_shard(
        profile: &Profile,
        limits: &Limits,
        warmup: &Option<Transient>,
        cooldown: &Option<Transient>,
        shard: Option<Shard>,
    ) -> Result<(), SchedulerError> {
        if let Profile::Fixed { benchmarks } = profile {
            for s in benchmarks {
                setup(s.clone(), limits, warmup, cooldown).resolve_for(shard)?;
            }
        }
        Ok(())
    }

    /// Runs every benchmark of `profile` in order with the same limits and transients; for a
    /// sweep, asks its [`SweepPlanner`] for each next benchmark given what the previous ones
    /// measured. Stops after the benchmark during which a graceful stop was requested.
    pub async fn run_profile<S, O>(
        &self,
        profile: &Profile,
        limits: &Limits,
        warmup: &Option<Transient>,
        cooldown: &Option<Transient>,
        specs: S,
        observer: &mut O,
    ) -> Result<(RunOutcome, S), SchedulerError>
    where
        S: Iterator + Send + 'static,
        S::Item: Into<Work>,
        O: Observer,
    {
        Self::validate_profile(profile, limits, warmup, cooldown)?;
        Self::validate_shard(profile, limits, warmup, cooldown, self.options.shard)?;
        let mut out = RunOutcome {
            benchmarks: Vec::new(),
            roles: Vec::new(),
            capacity: None,
            interrupted: false,
        };
        let mut steps = Steps::new(profile, limits);
        let mut specs = specs;
        while let Some(step) = steps.next_step().map_err(SchedulerError::Sweep)? {
            let index = out.benchmarks.len();
            let total = steps.expected_len().max(index + 1);
            // A rung without a warmup of the user's gets one, so its short window measures
            // the steady state, not the connections opening and the batch filling.
            let rung_warmup = match (step.role, warmup) {
                (SweepRole::Ladder, None) => Some(Transient::Fraction(LADDER_WARMUP)),
                _ => *warmup,
            };
            let p = setup(
                step.strategy.clone(),
                &scaled(limits, step.length),
                &rung_warmup,
                cooldown,
            );
            if matches!(profile, Profile::Sweep(_)) {
                observer.sweep_step(index, &step);
            }
            observer.benchmark_started(index, total, &p);
            let (outcome, rest) = self
                .run_benchmark(index, total, &p, specs, |r, ph| {
                    observer.record(index, r, ph)
                })
                .await?;
            specs = rest;
            observer.benchmark_finished(index, &outcome);
            // The window's steady-state rates, by the rule the report uses too
            // (bench_core::Window::steady_rates); the SLO verdict from the observer, which owns
            // the latency figures.
            let reading = Reading {
                requests_per_s: outcome.rates.requests_per_s,
                // A benchmark that generated nothing (embeddings, rerank) is compared by
                // its requests/s.
                output_tokens_per_s: Some(outcome.rates.output_tokens_per_s)
                    .filter(|&t| t > 0.0 || outcome.rates.requests_per_s == 0.0),
                slo_met: observer.slo_met(index),
                verdict: outcome.rates.sustained.map(|s| s.verdict),
                unjudged: outcome.rates.unjudged,
                slo_sure: observer.slo_sure(index),
                rate_interval: observer.rate_interval(index),
                seconds: outcome.end.saturating_sub(outcome.start) as f64 / 1e9,
            };
            tracing::info!(label = %outcome.strategy.label(), ?reading, "benchmark measured");
            let stop =
                outcome.stop_reason == StopReason::Interrupted || self.interrupt.is_cancelled();
            out.benchmarks.push(outcome);
            out.roles.push(step.role);
            steps.record(step, reading);
            if stop {
                out.interrupted = true;
                break;
            }
        }
        out.capacity = steps.answer();
        Ok((out, specs))
    }
}

/// The benchmarks of a profile, one at a time: a fixed list, or a sweep's planner.
enum Steps {
    Fixed(std::vec::IntoIter<Strategy>, usize),
    Sweep(Box<SweepPlanner>),
}

impl Steps {
    fn new(profile: &Profile, limits: &Limits) -> Self {
        match profile {
            Profile::Fixed { benchmarks } => {
                Steps::Fixed(benchmarks.clone().into_iter(), benchmarks.len())
            }
            Profile::Sweep(spec) => Steps::Sweep(Box::new(SweepPlanner::new(spec, limits))),
        }
    }

    fn next_step(&mut self) -> Result<Option<SweepStep>, ProfileError> {
        match self {
            Steps::Fixed(it, _) => Ok(it.next().map(|strategy| SweepStep {
                strategy,
                role: SweepRole::Probe,
                length: 1.0,
            })),
            Steps::Sweep(p) => p.next_step(),
        }
    }

    fn record(&mut self, step: SweepStep, reading: Reading) {
        if let Steps::Sweep(p) = self {
            p.record(step, reading);
        }
    }

    fn expected_len(&self) -> usize {
        match self {
            Steps::Fixed(_, n) => *n,
            Steps::Sweep(p) => p.expected_len(),
        }
    }

    fn answer(&self) -> Option<Capacity> {
        match self {
            Steps::Fixed(..) => None,
            Steps::Sweep(p) => p.answer(),
        }
    }
}
