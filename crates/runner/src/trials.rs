//! Driving the benchmarks: the profile once or, with `--repeat N`, as trials with fresh data
//! each, pooled after each until they are done or converged; and the sweep's capacity answer.
//! (`--precision` is driven by the observer, benchmark by benchmark: `crate::precise`.)

use bench_core::Capacity;
use bench_report::RunReport;
use bench_scheduler::Scheduler;
use bench_tokenizer::Tokenizer;
use bench_worker::Fleet;

use crate::observer::ReportObserver;
use crate::settings::{self, Settings};
use crate::{data, UsageError};

impl ReportObserver {
    /// Adds a sweep's capacity answer, with the knee the report finds from the latencies, and
    /// rewrites the files.
    pub(crate) fn set_capacity(&mut self, capacity: Option<Capacity>) {
        let Some(mut c) = capacity else { return };
        if let Some(trial) = self.run.trials.as_mut().and_then(|t| t.runs.last_mut()) {
            // The knee from this trial's own benchmarks.
            let mut one = RunReport::new("", "");
            one.benchmarks = trial.benchmarks.clone();
            c.knee_requests_per_s = bench_report::knee(&one);
            c.refresh_trace_multiples();
            self.events.capacity(&c);
            trial.capacity = Some(c);
            return;
        }
        c.knee_requests_per_s = bench_report::knee(&self.run);
        c.refresh_trace_multiples();
        c.intervals = bench_report::capacity_intervals(&self.run, &c);
        self.events.capacity(&c);
        self.run.capacity = Some(c);
        self.files.write(&self.run);
    }

    /// With `--repeat N` (N > 1): the run is made of trials, which its files hold.
    pub(crate) fn start_trials(&mut self, repeat: settings::Repeat) {
        if repeat.trials > 1 {
            self.run.trials = Some(bench_report::Trials {
                requested: repeat.trials,
                until: repeat.until,
                stop_reason: "running".into(),
                ..Default::default()
            });
        }
    }

    /// A trial of a repeated run starts: a new entry for its benchmarks, whose indexes count
    /// from 0 again.
    fn begin_trial(&mut self, index: u32, data_seed: Option<u64>) {
        self.verdicts.clear();
        self.rate_intervals.clear();
        if let Some(t) = self.run.trials.as_mut() {
            t.runs.push(bench_report::Trial {
                index,
                data_seed,
                ..Default::default()
            });
        }
    }

    /// A trial ended (`interrupted`: by the user or a server gone): pools the trials into the
    /// run's benchmarks, rewrites the files, and says whether to run another (and why not).
    fn end_trial(&mut self, interrupted: bool) -> bool {
        if let Err(e) = bench_report::pool(&mut self.run) {
            // Unreachable for data that can be repeated (sessions are refused up front);
            // every trial's own benchmarks are still in the report.
            tracing::error!("pooling the trials failed: {e}");
        }
        let Some(t) = self.run.trials.as_ref() else {
            return false;
        };
        let (ran, requested, until) = (t.runs.len() as u32, t.requested, t.until);
        let why = if interrupted || self.server_gone.is_some() {
            Some("interrupted".to_string())
        } else if let Some(target) = until {
            match bench_report::not_converged(&self.run, target) {
                None => Some(format!(
                    "converged: every key figure within {}% after {ran} trials",
                    target * 100.0
                )),
                Some(_) if ran < requested => None,
                Some(not) => Some(format!("the most trials ran; not converged: {not}")),
            }
        } else {
            (ran >= requested).then(|| "all trials ran".to_string())
        };
        if let Some(t) = self.run.trials.as_mut() {
            t.stop_reason = why.clone().unwrap_or_else(|| "running".into());
        }
        self.files.write(&self.run);
        why.is_none()
    }
}

/// What makes each trial of a repeated run fresh (docs/cli.md, `--repeat`).
pub(crate) struct Fresh<'a> {
    pub s: &'a Settings,
    pub tokenizer: &'a Tokenizer,
    /// The run's data salt, which trial `i` moves on by `i`.
    pub salt: u64,
}

impl Fresh<'_> {
    /// Trial `i`'s profile (Poisson arrivals seeded with `--seed` + `i`) and, for seeded data
    /// (synthetic, traces: `seeded`), its stream of fresh prompts with their seed; `None` for
    /// files, whose stream reads on (and which are not opened again).
    fn trial(
        &self,
        i: u32,
        seeded: bool,
    ) -> anyhow::Result<(
        bench_profile::Profile,
        Option<data::WorkStream>,
        Option<u64>,
    )> {
        let mut s = self.s.clone();
        s.load.build.seed = s.load.build.seed.wrapping_add(u64::from(i));
        s.load.profile =
            bench_profile::Profile::build(s.load.rate_type, &s.load.rate, &s.load.build)
                .map_err(|e| UsageError::new(format!("--repeat: trial {i}: {e}")))?;
        if !seeded {
            return Ok((s.load.profile, None, None));
        }
        let d = &self.s.data;
        let (loader, seed) = data::trial_loader(
            &d.data,
            d.data_column.as_deref(),
            self.tokenizer.clone(),
            self.salt,
            i,
        )?;
        let (_, profile) = crate::inputs::trace_settings(&s, &loader)?;
        let stream = seed.map(|_| data::WorkStream::new(loader));
        Ok((profile, stream, seed.map(|x| x.seed)))
    }
}

/// Runs the profile once or, with `--repeat N`, as `N` trials one after another on the same
/// server, each with fresh prompts, pooling them after each, until all ran, the intervals
/// met `--repeat-until`, or the run was interrupted. Returns the last trial's outcome.
pub(crate) async fn run_trials(
    sched: &Scheduler<Fleet>,
    fresh: &Fresh<'_>,
    first: (bench_profile::Profile, data::WorkStream, Option<u64>),
    observer: &mut ReportObserver,
) -> anyhow::Result<(bench_scheduler::RunOutcome, data::WorkStream)> {
    let l = &fresh.s.load;
    let (mut profile, mut specs, mut seed) = first;
    let seeded = seed.is_some();
    let mut i = 0;
    loop {
        observer.begin_trial(i, seed);
        let (outcome, back) = sched
            .run_profile(&profile, &l.limits, &l.warmup, &l.cooldown, specs, observer)
            .await?;
        if observer.run.trials.is_none() {
            return Ok((outcome, back));
        }
        if !outcome.interrupted {
            observer.set_capacity(outcome.capacity.clone());
        }
        if !observer.end_trial(outcome.interrupted) {
            return Ok((outcome, back));
        }
        i += 1;
        let (p, stream, s) = fresh.trial(i, seeded)?;
        (profile, seed) = (p, s);
        specs = match stream {
            Some(st) => {
                observer.rewind = st.rewind();
                st
            }
            None => back,
        };
    }
}
