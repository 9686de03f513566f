//! Runs of several benchmarks: fixed lists and the sweep.

use bench_core::Strategy;
use bench_core::{Backend, RequestRecord, RequestSpec};
use bench_profile::{Limits, Profile, Transient};

use crate::{BenchmarkOutcome, BenchmarkPlan, Phase, Scheduler, SchedulerError, StopReason};

/// Receives a run's events in order. Implemented by the CLI (statistics, progress, files) and
/// by tests.
pub trait Observer {
    /// A benchmark is about to start.
    fn benchmark_started(&mut self, index: usize, total: usize, plan: &BenchmarkPlan) {
        let _ = (index, total, plan);
    }
    /// One request finished (in any way), with the phase it belongs to.
    fn record(&mut self, index: usize, record: RequestRecord, phase: Phase);
    /// A benchmark ended; all its records have been delivered.
    fn benchmark_finished(&mut self, index: usize, outcome: &BenchmarkOutcome) {
        let _ = (index, outcome);
    }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// Finished benchmarks, in order (the last may be partial).
    pub benchmarks: Vec<BenchmarkOutcome>,
    /// Whether the user interrupted the run.
    pub interrupted: bool,
}

fn plan(
    strategy: Strategy,
    limits: &Limits,
    warmup: &Option<Transient>,
    cooldown: &Option<Transient>,
) -> BenchmarkPlan {
    BenchmarkPlan {
        strategy,
        limits: limits.clone(),
        warmup: *warmup,
        cooldown: *cooldown,
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
        let strategies: Vec<Strategy> = match profile {
            Profile::Fixed { benchmarks } => benchmarks.clone(),
            Profile::Sweep(spec) => {
                let mut s = spec.probes().to_vec();
                s.extend(
                    spec.rate_strategies(1.0, 2.0)
                        .map_err(SchedulerError::Sweep)?,
                );
                s
            }
        };
        for s in strategies {
            plan(s, limits, warmup, cooldown).resolve()?;
        }
        Ok(())
    }

    /// Runs every benchmark of `profile` in order with the same limits and transients; for a
    /// sweep, runs the two probes and derives the rates from the completed requests/s they
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
        S: Iterator<Item = RequestSpec> + Send + 'static,
        O: Observer,
    {
        Self::validate_profile(profile, limits, warmup, cooldown)?;
        let total = profile.len();
        let mut out = RunOutcome {
            benchmarks: Vec::new(),
            interrupted: false,
        };
        let mut specs = specs;
        let mut queue: Vec<Strategy> = match profile {
            Profile::Fixed { benchmarks } => benchmarks.clone(),
            Profile::Sweep(spec) => spec.probes().to_vec(),
        };
        let mut index = 0;
        let mut rates: Vec<f64> = Vec::new();
        while index < queue.len() {
            let p = plan(queue[index].clone(), limits, warmup, cooldown);
            observer.benchmark_started(index, total, &p);
            let (outcome, rest) = self
                .run_benchmark(index, total, &p, specs, |r, ph| {
                    observer.record(index, r, ph)
                })
                .await?;
            specs = rest;
            observer.benchmark_finished(index, &outcome);
            // The window's rate, by the rule the report uses too (bench_core::Window).
            rates.push(outcome.completed_rate);
            let stop =
                outcome.stop_reason == StopReason::Interrupted || self.interrupt.is_cancelled();
            out.benchmarks.push(outcome);
            if stop {
                out.interrupted = true;
                break;
            }
            if let (Profile::Sweep(spec), 1) = (profile, index) {
                let (r_sync, r_thr) = (rates[0], rates[1]);
                tracing::info!(r_sync, r_thr, "sweep probes measured");
                queue.extend(
                    spec.rate_strategies(r_sync, r_thr)
                        .map_err(SchedulerError::Sweep)?,
                );
            }
            index += 1;
        }
        Ok((out, specs))
    }
}
