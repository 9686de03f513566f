//! `--precision` during a run (docs/metrics.md, "Precision"): feeds each measured request to
//! the report's running estimate ([`bench_report::PrecisionCheck`]); about once a second of
//! the run clock, once the benchmark has run its least length (`--max-seconds`, a ladder
//! rung's share of it), looks at the estimate, and when it is near the target confirms with
//! the report's own intervals as they stand ([`bench_report::Accumulator::intervals_at`]);
//! when those meet the target with a margin (the drain moves them), ends the benchmark as
//! precise at that record. The finished
//! benchmark is judged on its final intervals.
//!
//! Nothing of this runs without `--precision` (the observer holds no watch). With it, each
//! record costs one histogram entry per chunk, each look a merge of the estimate's bins, and
//! each confirmation one pass over the benchmark's requests, spaced at least 20 times its own
//! cost apart (docs/performance.md, "Precision").

use std::time::Instant;

use bench_core::{Nanos, Phase, Precision, RequestRecord, Strategy, Window};
use bench_profile::ResolvedTransient;
use bench_report::{Accumulator, BenchmarkMeta, BenchmarkReport, PrecisionCheck};
use bench_scheduler::{BenchmarkSetup, StopHandle};

/// Run-clock time between two looks at the estimate.
const CHECK_EVERY: Nanos = 1_000_000_000;
/// The estimate is confirmed when it is within this many targets (it is a little off the
/// report's own figures: docs/metrics.md, "Precision").
const NEAR: f64 = 1.5;
/// A confirmation waits at least this many times the last one's cost.
const COST_SPACING: u32 = 20;
/// The confirmation's margins against the drain, which the intervals at the stop cannot see:
/// the requests in flight end after it, and move the fill (so the steady state's start and
/// every batch's bounds) and a closed loop's Little's-law batch rates. Against llama.cpp at 4
/// streams (about 5 requests a batch) a precise stop confirmed at ±25% ended with its TTFT and
/// ITL intervals gone (a batch fell under the 4 values a median needs) in 3 of 4 runs, and its
/// requests/s half-width moved from 21% to 27% in one (docs/metrics.md, "Precision"). The
/// confirmed half-widths must be within this share of the target...
const CONFIRM_WITHIN: f64 = 0.8;
/// ... and each latency batch must hold this many times the values an interval needs.
const CONFIRM_SPARE: f64 = 1.25;

/// The watch over the running benchmark.
struct Running {
    index: usize,
    strategy: Strategy,
    start: Nanos,
    check: PrecisionCheck,
    /// Not checked before this (the benchmark's least length).
    least: Nanos,
    /// The next look, at a record's end at or after this.
    next: Nanos,
    /// The next confirmation, not before this.
    next_confirm: Nanos,
    stopped: bool,
}

/// The precision watch of a run.
pub(crate) struct PrecisionWatch {
    precision: Precision,
    stop: StopHandle,
    wall_epoch: std::time::SystemTime,
    running: Option<Running>,
}

impl PrecisionWatch {
    /// A watch for `precision`, stopping benchmarks through `stop`.
    pub(crate) fn new(
        precision: Precision,
        stop: StopHandle,
        wall_epoch: std::time::SystemTime,
    ) -> Self {
        Self {
            precision,
            stop,
            wall_epoch,
            running: None,
        }
    }

    /// Benchmark `index` of `setup` starts at `now` (run clock).
    pub(crate) fn started(&mut self, index: usize, setup: &BenchmarkSetup, now: Nanos) {
        let least = setup.limits.max_seconds.unwrap_or(0.0);
        // The window opens at the start, after a warmup by time, or at a send a warmup by
        // count decides (then the first measured send stands for it).
        let warmup = setup
            .warmup
            .filter(|w| !w.is_zero())
            .map(|w| w.resolve(&setup.limits, setup.strategy.request_count()));
        let open = match warmup {
            None => Some(now),
            Some(Ok(ResolvedTransient::Time(w))) => Some(now.saturating_add(w)),
            Some(_) => None,
        };
        self.running = Some(Running {
            index,
            strategy: setup.strategy.clone(),
            start: now,
            check: PrecisionCheck::new(setup.strategy.clone(), now, open),
            least: now.saturating_add((least * 1e9) as Nanos),
            next: 0,
            next_confirm: 0,
            stopped: false,
        });
    }

    /// One finished request, before the accumulator takes it: `Some(now)` when a look is due.
    pub(crate) fn add(&mut self, record: &RequestRecord, phase: Phase) -> Option<Nanos> {
        let r = self.running.as_mut()?;
        r.check.add(record, phase == Phase::Measured);
        let now = record.end;
        if r.stopped || now < r.least || now < r.next {
            return None;
        }
        r.next = now.saturating_add(CHECK_EVERY);
        Some(now)
    }

    /// Looks at the estimate at `now` and, when it is near the target, confirms with the
    /// intervals `acc` would give if the benchmark ended now; ends the benchmark when they
    /// meet the target.
    pub(crate) fn look(&mut self, now: Nanos, acc: &Accumulator) {
        let Some(r) = self.running.as_mut() else {
            return;
        };
        let Some(estimate) = r.check.estimate(now) else {
            return;
        };
        if r.check.falling_behind(now) {
            tracing::debug!(index = r.index, now, "precision: falling behind");
            return;
        }
        let generated = r.check.generated();
        let near = Precision {
            target: self.precision.target * NEAR,
            ..self.precision
        };
        if !near.met(&estimate.key_figures(), generated) || now < r.next_confirm {
            tracing::debug!(index = r.index, now, ?estimate, "precision: not near");
            return;
        }
        let Some(open) = r.check.opening() else {
            return;
        };
        let mut meta = BenchmarkMeta::new(r.strategy.clone(), r.start, now, self.wall_epoch);
        meta.window = Window {
            open,
            close: now,
            cooldown: false,
        };
        let took = Instant::now();
        let confirmed = bench_report::half_widths(acc.intervals_at(&meta, CONFIRM_SPARE).as_ref());
        let cost = took.elapsed();
        r.next_confirm = now.saturating_add((cost * COST_SPACING).as_nanos() as Nanos);
        let within = Precision {
            target: self.precision.target * CONFIRM_WITHIN,
            ..self.precision
        };
        let met = within.met(&confirmed.key_figures(), generated);
        tracing::debug!(
            index = r.index,
            ?estimate,
            ?confirmed,
            ?cost,
            met,
            "precision"
        );
        if met {
            r.stopped = true;
            self.stop.precise(r.index, now);
        }
    }

    /// The finished benchmark's verdict, on its own intervals.
    pub(crate) fn finished(&mut self, report: &mut BenchmarkReport) {
        self.running = None;
        report.precision = Some(bench_report::judge_precision(report, &self.precision));
    }
}
