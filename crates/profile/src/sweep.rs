//! The capacity sweep's decisions, as pure arithmetic: which benchmark runs next given what the
//! previous ones measured, and the answer at the end. The scheduler runs the benchmarks; the
//! rules live here so they can be read and tested without a server.
//!
//! Adaptive mode (the default; docs/profiles.md):
//!
//! 1. `synchronous`.
//! 2. A concurrency ladder `concurrent@2, @4, @8, ...`, climbing until a rung raises the best
//!    output token throughput so far by less than [`LADDER_GAIN`] (the server's batch is full),
//!    the cap (`--max-concurrency`, default 512) is reached, or [`LADDER_MAX_RUNGS`] rungs ran.
//!    When the server said its batch `B` ([`SweepSpec::server_batch`], docs/metrics.md, "The
//!    server's batch"), the ladder doubles up to `2B` ([`hinted_top`]) whatever each rung
//!    gains (one noisy rung does not stop it short of the batch), and on past it only while a
//!    rung gains more than [`PAST_BATCH_GAIN`].
//!    Each rung lasts long enough to hold [`RUNG_LATENCIES`] of its predicted request latencies
//!    ([`rung_length`]), at least a quarter of a benchmark and at most [`MAX_LENGTH`]. The
//!    capacity is the best rung (synchronous included).
//! 3. `size - 2` open-loop rates placed by [`capacity_rates`]: ascending, from near the
//!    synchronous rate to 1.2x the capacity, denser near the capacity. No rate counts as kept
//!    up without a `kept_up` verdict: a rate judged unsure runs again [`LENGTHEN`] times as
//!    long, one whose loaded span held too few arrivals to be judged as many times as they
//!    need, up to [`MAX_LENGTH`]; the longest run of a rate judges it, and past the cap an
//!    unsure or unjudged rate does not count as kept up.
//! 4. With an SLO: bisection between the highest rate that met every bound and the lowest that
//!    did not, until `(high - low) / low <= tolerance`.
//!
//! guidellm mode: synchronous, throughput (512 in flight), then `linspace(r_sync, r_thr)`.

use std::collections::VecDeque;

use bench_core::{
    crossing, Capacity, Interval, NotNarrowed, Refinement, SloBracket, SloLimit, Spent, Sure,
    Unjudged, Verdict, KEPT_UP,
};
use serde::{Deserialize, Serialize};

use crate::{invalid, sweep_rates, Limits, OpenLoop, ProfileError, Strategy, SweepMode, SweepSpec};

/// A ladder rung must raise the best output token throughput by more than this fraction, or
/// the ladder stops.
pub const LADDER_GAIN: f64 = 0.05;
/// Past twice the batch the server said ([`hinted_top`]), a rung must raise the best
/// throughput by more than this fraction, or the ladder stops: a closed loop of twice the batch
/// still gains a few percent over one of the batch (its streams finish in waves, and a queue
/// keeps the batch full between them: 5.2% on the simulator), while a server whose batch is
/// larger than it said doubles its throughput.
pub const PAST_BATCH_GAIN: f64 = 0.25;
/// At most this many ladder rungs (2 to 1,024 streams, below the default cap of 512).
pub const LADDER_MAX_RUNGS: u32 = 10;
/// The shortest ladder rung, relative to the other benchmarks.
pub const LADDER_LENGTH: f64 = 0.25;
/// A rung lasts at least this many of its predicted request latencies: its warmup takes a
/// quarter of them (one latency, the time the server's batch takes to settle after every
/// stream started at once), its window the rest, so that the window holds requests that were
/// sent after the settling and ended while the load was on.
pub const RUNG_LATENCIES: f64 = 4.0;
/// The longest benchmark of a sweep, in benchmark lengths: a rung whose requests last long, or
/// an open-loop rate lengthened until it can be judged ([`LENGTHEN`]).
pub const MAX_LENGTH: f64 = 4.0;
/// An open-loop rate judged unsure (its in-flight count's trend straddles the kept-up line)
/// runs again this many times as long, up to [`MAX_LENGTH`].
pub const LENGTHEN: f64 = 2.0;
/// Warmup of a ladder rung (a fraction of its length) when the run sets none.
pub const LADDER_WARMUP: f64 = 0.25;
/// The top open-loop rate, relative to the measured capacity.
pub const TOP_RATE: f64 = 1.2;
/// The lowest open-loop rate of an adaptive sweep, relative to the capacity, when the
/// synchronous rate is lower: a rate must hold 10 arrivals in its loaded span to be judged kept
/// up (docs/metrics.md, "Sustained"), and the synchronous rate of a batching server rarely
/// does in one benchmark (the default simulator's 0.94 req/s held 3 in 5 s and ran again for
/// 20 s, a sixth of the quick start); at a quarter of its capacity a batching server's latency
/// is still on its low-load plateau, which this rate measures for the knee.
pub const LOWEST_RATE: f64 = 0.25;
/// The second highest open-loop rate (with 4 or more rates), relative to the capacity.
pub const SECOND_RATE: f64 = 1.1;
/// At most this many open-loop rates added above the planned ones, when the top rate kept up.
pub const MAX_EXTENSIONS: u32 = 3;
/// At most this many refinement benchmarks of the SLO search.
pub const MAX_REFINE_STEPS: u32 = 10;
/// At most this many benchmarks narrow the SLO answer's interval (`--slo-precision`), and as
/// many the maximum's (`--capacity-precision`).
pub const MAX_ANSWER_STEPS: u32 = 24;

/// What part of the sweep a benchmark is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepRole {
    /// synchronous, or guidellm's throughput probe.
    Probe,
    /// A rung of the concurrency ladder.
    Ladder,
    /// One of the open-loop rates.
    Rate,
    /// A benchmark of the SLO search.
    Refine,
}

/// One benchmark the sweep wants next.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepStep {
    /// Its load.
    pub strategy: Strategy,
    /// Its part of the sweep.
    pub role: SweepRole,
    /// Its length relative to the run's limits (1 = the same).
    pub length: f64,
}

/// What a finished benchmark measured, as the sweep needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// Steady-state completed requests/s.
    pub requests_per_s: f64,
    /// Steady-state output tokens/s, when the scheduler measures them (the ladder then
    /// compares tokens; else requests).
    pub output_tokens_per_s: Option<f64>,
    /// Whether it met every SLO bound (`None`: no SLO).
    pub slo_met: Option<bool>,
    /// An open loop's judgement ([`bench_core::Sustained`]; `None`: not an open loop, or not
    /// judged, see `unjudged`).
    pub verdict: Option<Verdict>,
    /// An open loop without a judgement: why ([`Unjudged`]), which says how much longer it
    /// must run to be judged.
    pub unjudged: Option<Unjudged>,
    /// What its intervals say of every SLO bound (`None`: no SLO).
    pub slo_sure: Option<Sure>,
    /// How long it ran, seconds (warmup and drain included).
    pub seconds: f64,
    /// The 95% interval of the requests/s it read (`requests_per_s`; for an open-loop rate
    /// surely not kept up, of its departures while loaded), as the report states the capacity's
    /// interval; `None` when it has none. The sweep narrows its maximum's interval by it
    /// (`--capacity-precision`).
    pub rate_interval: Option<Interval>,
}

impl Reading {
    /// What the ladder compares: output tokens/s when measured, else requests/s.
    pub fn throughput(&self) -> f64 {
        self.output_tokens_per_s.unwrap_or(self.requests_per_s)
    }
}

/// The open-loop rates of an adaptive sweep, ascending: with `c` the capacity and `n` rates,
/// the top one is `1.2 c`, the next `1.1 c` (when `n >= 4`), and the other `m` are
/// `c * (f0 + (1 - f0) * (1 - (1 - t)^2))` for `t = j / (m - 1)`, `j = 0..m`, where
/// `f0 = clamp(r_sync / c, LOWEST_RATE, 0.5)`: from the synchronous rate, but at least
/// [`LOWEST_RATE`] of the capacity (or half the capacity when the server does not batch), to
/// the capacity, spaced quadratically so that the gaps shrink toward the capacity (the last
/// gap is `1/(m-1)^2` of the span, the first `(2m-3)/(m-1)^2`).
pub fn capacity_rates(r_sync: f64, capacity: f64, n: u32) -> Vec<f64> {
    if n == 0 {
        return Vec::new();
    }
    let above: &[f64] = if n >= 4 {
        &[SECOND_RATE, TOP_RATE]
    } else {
        &[TOP_RATE]
    };
    let m = n as usize - above.len();
    let f0 = (r_sync / capacity).clamp(LOWEST_RATE, 0.5);
    let mut f: Vec<f64> = match m {
        0 => Vec::new(),
        1 => vec![1.0],
        _ => (0..m)
            .map(|j| {
                let t = j as f64 / (m - 1) as f64;
                f0 + (1.0 - f0) * (1.0 - (1.0 - t) * (1.0 - t))
            })
            .collect(),
    };
    f.extend_from_slice(above);
    f.into_iter().map(|x| x * capacity).collect()
}

/// The predicted request latency (seconds) of a rung of `streams` streams, from what the
/// synchronous probe and the rungs before it measured (`(streams, requests/s)`, in order): the
/// last throughput grown by the last gain (`X_last / X_before`, clamped to `[1, 2]`; 2 after
/// synchronous alone, as if the server batched), then Little's law `streams / X`. A server that
/// batches keeps its latency while it doubles its streams; one that has stopped gaining doubles
/// it. `None` when nothing was measured.
pub fn rung_latency(measured: &[(u32, f64)], streams: u32) -> Option<f64> {
    let &(_, last) = measured.last().filter(|(_, x)| *x > 0.0)?;
    let gain = match measured {
        [.., (_, before), _] if *before > 0.0 => (last / before).clamp(1.0, 2.0),
        _ => 2.0,
    };
    Some(f64::from(streams) / (last * gain))
}

/// The rung the ladder climbs to whatever each rung gains, when the server said its batch is
/// `batch`: twice the batch (a queue in front of it, so that the batch stays full while
/// requests finish), at most `cap`.
pub fn hinted_top(batch: u32, cap: u32) -> u32 {
    batch.saturating_mul(2).min(cap)
}

/// The predicted request latency (seconds) of a rung of `streams` streams on a server whose
/// batch is `batch`, from the last rung measured (`(streams, requests/s)`): the server's
/// throughput grows with the streams up to the batch and not past it,
/// `X = X_last x min(streams, batch) / min(streams_last, batch)`, and Little's law gives
/// `streams / X`. `None` when nothing was measured.
pub fn batch_latency(measured: &[(u32, f64)], streams: u32, batch: u32) -> Option<f64> {
    let &(c_last, x_last) = measured.last().filter(|(_, x)| *x > 0.0)?;
    let x = x_last * f64::from(streams.min(batch)) / f64::from(c_last.min(batch).max(1));
    Some(f64::from(streams) / x)
}

/// The length of a ladder rung of `streams` streams relative to the run's `limits`: long
/// enough for [`RUNG_LATENCIES`] of its predicted request latencies ([`rung_latency`]; a whole
/// benchmark without a prediction), and under a request count for each stream to send
/// [`RUNG_LATENCIES`] requests; clamped to `[LADDER_LENGTH, MAX_LENGTH]`.
pub fn rung_length(streams: u32, latency: Option<f64>, limits: &Limits) -> f64 {
    let by_time = limits
        .max_seconds
        .filter(|&s| s > 0.0)
        .map(|s| latency.map_or(1.0, |r| RUNG_LATENCIES * r / s));
    let by_count = limits
        .max_requests
        .filter(|&m| m > 0)
        .map(|m| RUNG_LATENCIES * f64::from(streams) / m as f64);
    [by_time, by_count]
        .into_iter()
        .flatten()
        .fold(LADDER_LENGTH, f64::max)
        .min(MAX_LENGTH)
}

/// The next rate of the SLO search from the rates measured so far (`(rate, met)`), or `None`
/// when the bracket is narrow enough. `low` is the highest rate that met every bound below the
/// lowest that did not (`high`).
pub fn slo_bracket(measured: &[(f64, bool)], tolerance: f64, steps: u32) -> SloBracket {
    let high = measured
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(r, _)| *r)
        .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.min(r))));
    let low = measured
        .iter()
        .filter(|(r, ok)| *ok && high.is_none_or(|h| *r < h))
        .map(|(r, _)| *r)
        .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.max(r))));
    SloBracket {
        low,
        high,
        tolerance,
        steps,
        refinement: None,
    }
}

/// The rate to measure next to narrow `b`, or `None` when it is narrow enough (or open above:
/// every rate met the SLO).
pub fn slo_next_rate(b: &SloBracket) -> Option<f64> {
    let high = b.high?;
    if b.steps >= MAX_REFINE_STEPS {
        return None;
    }
    match b.low {
        Some(low) if (high - low) <= b.tolerance * low => None,
        Some(low) => Some((low + high) / 2.0),
        None => Some(high / 2.0),
    }
}

/// Decides a sweep's benchmarks one at a time from what the previous ones measured.
#[derive(Debug, Clone)]
pub struct SweepPlanner {
    spec: SweepSpec,
    limits: Limits,
    pending: VecDeque<SweepStep>,
    history: Vec<(SweepStep, Reading)>,
    rates_planned: bool,
    /// Steps handed out and not yet recorded.
    outstanding: usize,
    /// The benchmarks run since the SLO answer's narrowing began, and their seconds.
    narrowing: Option<(u32, f64)>,
    /// The benchmarks run since the maximum's narrowing began, and their seconds.
    max_narrowing: Option<(u32, f64)>,
    /// The answer whose narrowing handed out a step last (`Some(true)`: the maximum's;
    /// `Some(false)`: the SLO answer's): every benchmark from then on is charged to it.
    narrows_max: Option<bool>,
    /// The benchmark-seconds spent on each answer so far ([`Spent`]).
    spent: Spent,
}

impl SweepPlanner {
    /// A planner for `spec`, whose benchmarks run with `limits` (rungs scale them).
    pub fn new(spec: &SweepSpec, limits: &Limits) -> Self {
        let mut pending = VecDeque::new();
        let probe = |strategy| SweepStep {
            strategy,
            role: SweepRole::Probe,
            length: 1.0,
        };
        pending.push_back(probe(Strategy::Synchronous));
        if spec.mode == SweepMode::Guidellm {
            pending.push_back(probe(Strategy::Throughput {
                max_concurrency: spec.throughput_concurrency,
            }));
        }
        Self {
            spec: spec.clone(),
            limits: limits.clone(),
            pending,
            history: Vec::new(),
            rates_planned: false,
            outstanding: 0,
            narrowing: None,
            max_narrowing: None,
            narrows_max: None,
            spent: Spent::default(),
        }
    }

    /// How many benchmarks the sweep will have run, as far as known now.
    pub fn expected_len(&self) -> usize {
        let rates = if self.rates_planned {
            0
        } else {
            self.spec.size.saturating_sub(2) as usize
        };
        self.history.len() + self.outstanding + self.pending.len() + rates
    }

    /// The benchmark to run next, or `None` when the sweep is done. Fails when a probe measured
    /// nothing to derive rates from.
    pub fn next_step(&mut self) -> Result<Option<SweepStep>, ProfileError> {
        let step = self.decide()?;
        self.outstanding += usize::from(step.is_some());
        Ok(step)
    }

    fn decide(&mut self) -> Result<Option<SweepStep>, ProfileError> {
        if let Some(s) = self.pending.pop_front() {
            return Ok(Some(s));
        }
        if !self.rates_planned {
            self.plan_ladder_or_rates()?;
            if let Some(s) = self.pending.pop_front() {
                return Ok(Some(s));
            }
        }
        if let Some(s) = self.extension_step() {
            return Ok(Some(s));
        }
        if let Some(s) = self.refine_step() {
            return Ok(Some(s));
        }
        if let Some(s) = self
            .narrowing_step()
            .filter(|_| self.slo_limit() == Some(SloLimit::Slo))
        {
            self.narrowing.get_or_insert((0, 0.0));
            self.narrows_max = Some(false);
            return Ok(Some(s));
        }
        let step = self.max_narrowing_step();
        if step.is_some() {
            self.max_narrowing.get_or_insert((0, 0.0));
            self.narrows_max = Some(true);
        }
        Ok(step)
    }

    /// Records what the step returned by the last [`Self::next_step`] measured. An open-loop
    /// rate that was not judged kept up or not runs next again longer (`longer`).
    pub fn record(&mut self, step: SweepStep, reading: Reading) {
        self.outstanding = self.outstanding.saturating_sub(1);
        let narrowed = match self.narrows_max {
            Some(true) => self.max_narrowing.as_mut(),
            Some(false) => self.narrowing.as_mut(),
            None => None,
        };
        if let Some((n, secs)) = narrowed {
            *n += 1;
            *secs += reading.seconds;
        }
        self.charge(&step, reading.seconds);
        if let Some(length) = self.longer(&step, &reading) {
            self.pending.push_front(SweepStep {
                length,
                ..step.clone()
            });
        }
        self.history.push((step, reading));
    }

    /// Charges a benchmark's `seconds` to the answer it was run for ([`Spent`]): a narrowing's
    /// to its answer, else the probes and rungs to the maximum, the rates to the knee, the SLO
    /// search to the SLO answer.
    fn charge(&mut self, step: &SweepStep, seconds: f64) {
        let s = &mut self.spent;
        match (self.narrows_max, step.role) {
            (Some(true), _) | (None, SweepRole::Probe | SweepRole::Ladder) => {
                s.capacity_s += seconds
            }
            (Some(false), _) | (None, SweepRole::Refine) => *s.slo_s.get_or_insert(0.0) += seconds,
            (None, SweepRole::Rate) => s.knee_s += seconds,
        }
    }

    /// The length an open-loop rate runs again at, when it must: no rate counts as kept up
    /// without a `kept_up` verdict (docs/metrics.md, "Sustained"), so a rate judged unsure
    /// runs [`LENGTHEN`] times as long, one not judged at all as many times as its loaded
    /// span's arrivals need ([`Unjudged::lengthen`]: arrivals decide, not seconds), and one
    /// not surely kept up though the closed loops already departed faster than it offered
    /// [`LENGTHEN`] times (its in-flight count was still filling toward a steady state when
    /// the window closed, on a server whose requests are slow against the window); each up to
    /// [`MAX_LENGTH`], past which the rate stays unjudged or unsure and does not count.
    fn longer(&self, step: &SweepStep, reading: &Reading) -> Option<f64> {
        let open_loop = matches!(step.role, SweepRole::Rate | SweepRole::Refine);
        if !open_loop || step.length >= MAX_LENGTH - 1e-9 {
            return None;
        }
        let filling = matches!(reading.verdict, Some(Verdict::NotKeptUp | Verdict::Unsure))
            && step
                .strategy
                .target_rate()
                .is_some_and(|r| r < KEPT_UP * self.closed_loop_capacity());
        let factor = match reading.verdict {
            Some(Verdict::KeptUp) => return None,
            Some(Verdict::NotKeptUp) if !filling => return None,
            None => reading.unjudged.map_or(LENGTHEN, |u| u.lengthen()),
            Some(_) => LENGTHEN,
        };
        Some((step.length * factor).min(MAX_LENGTH))
    }

    /// The most requests/s a probe or a rung completed.
    fn closed_loop_capacity(&self) -> f64 {
        self.history
            .iter()
            .filter(|(s, _)| matches!(s.role, SweepRole::Probe | SweepRole::Ladder))
            .map(|(_, r)| r.requests_per_s)
            .fold(0.0, f64::max)
    }

    /// The history with every benchmark that a longer run of the same load superseded left
    /// out: the longest run of a rate judges it.
    fn judged(&self) -> impl Iterator<Item = &(SweepStep, Reading)> {
        self.history.iter().enumerate().filter_map(|(i, x)| {
            let later = self.history[i + 1..]
                .iter()
                .any(|(s, _)| s.strategy == x.0.strategy && s.role == x.0.role);
            (!later).then_some(x)
        })
    }

    fn plan_ladder_or_rates(&mut self) -> Result<(), ProfileError> {
        if self.spec.mode == SweepMode::Adaptive {
            if let Some((c, length)) = self.next_rung() {
                self.pending.push_back(SweepStep {
                    strategy: Strategy::Concurrent { streams: c },
                    role: SweepRole::Ladder,
                    length,
                });
                return Ok(());
            }
        }
        let r_sync = self
            .reading_of(SweepRole::Probe, 0)
            .map(|r| r.requests_per_s);
        let (r_sync, top) = match self.spec.mode {
            SweepMode::Guidellm => (
                r_sync.unwrap_or(0.0),
                self.reading_of(SweepRole::Probe, 1)
                    .map_or(0.0, |r| r.requests_per_s),
            ),
            SweepMode::Adaptive => (
                r_sync.unwrap_or(0.0),
                self.best().map_or(0.0, |(_, r)| r.requests_per_s),
            ),
        };
        for strategy in self.spec.rate_strategies(r_sync, top)? {
            self.pending.push_back(SweepStep {
                strategy,
                role: SweepRole::Rate,
                length: 1.0,
            });
        }
        self.rates_planned = true;
        Ok(())
    }

    fn reading_of(&self, role: SweepRole, nth: usize) -> Option<Reading> {
        self.history
            .iter()
            .filter(|(s, _)| s.role == role)
            .nth(nth)
            .map(|(_, r)| *r)
    }

    /// The ladder's next concurrency and rung length, or `None` when it is done: doubling
    /// from 2 while a rung gains more than [`LADDER_GAIN`]. When the server said its batch `B`
    /// ([`SweepSpec::server_batch`]), it doubles up to [`hinted_top`] (`2B`: past the batch)
    /// whatever each rung gains (one noisy rung does not stop it short of the batch), a rung
    /// past `B` lasts as [`batch_latency`] predicts (no throughput gained past the batch), and
    /// past `2B` it doubles on only while a rung gains more than [`PAST_BATCH_GAIN`].
    fn next_rung(&self) -> Option<(u32, f64)> {
        let rungs: Vec<(u32, &Reading)> = self
            .history
            .iter()
            .filter_map(|(s, r)| match (s.role, &s.strategy) {
                (SweepRole::Probe, Strategy::Synchronous) => Some((1, r)),
                (SweepRole::Ladder, Strategy::Concurrent { streams }) => Some((*streams, r)),
                _ => None,
            })
            .collect();
        let &(last_c, last) = rungs.last()?;
        let ladder_len = rungs.len() as u32 - 1;
        let cap = self.spec.throughput_concurrency;
        if ladder_len >= LADDER_MAX_RUNGS || last_c >= cap {
            return None;
        }
        let batch = self.spec.server_batch;
        let below_top = batch.is_some_and(|b| last_c < hinted_top(b, cap));
        if ladder_len > 0 && !below_top {
            let before = rungs[..rungs.len() - 1]
                .iter()
                .map(|(_, r)| r.throughput())
                .fold(0.0, f64::max);
            let gain = match batch {
                Some(_) => PAST_BATCH_GAIN,
                None => LADDER_GAIN,
            };
            if last.throughput() <= before * (1.0 + gain) {
                return None;
            }
        }
        let c = (last_c * 2).min(cap);
        let measured: Vec<(u32, f64)> = rungs.iter().map(|(c, r)| (*c, r.requests_per_s)).collect();
        let latency = match batch {
            Some(b) if c > b => batch_latency(&measured, c, b),
            _ => rung_latency(&measured, c),
        };
        Some((c, rung_length(c, latency, &self.limits)))
    }

    /// The benchmark with the highest throughput (the first of equals) among the probes and
    /// rungs, and the open-loop rates that kept up ([`kept_up`]): a server that completed a
    /// rate sustains it, whatever the closed loops read (streams that stay in step, prefilling
    /// together and then decoding together, carry less than arrivals spread in time).
    fn best(&self) -> Option<&(SweepStep, Reading)> {
        self.judged()
            .filter(|(s, r)| match s.role {
                SweepRole::Probe | SweepRole::Ladder => true,
                SweepRole::Rate | SweepRole::Refine => served(s, r),
            })
            .fold(None, |best: Option<&(SweepStep, Reading)>, x| match best {
                // Equal up to rounding (1e-9): the first stays.
                Some(b) if sustained(&b.0, &b.1) >= sustained(&x.0, &x.1) * (1.0 - 1e-9) => Some(b),
                _ => Some(x),
            })
    }

    /// The open-loop rate past the capacity whose server departed the most while loaded, when
    /// that reading lies between the highest rate kept up or the synchronous rate (less the
    /// [`KEPT_UP`] tolerance) and the best probe or rung: what the server carries under
    /// arrivals spread in time. Streams that start together complete in waves, and on a server
    /// whose steps cost more when they carry prompts (chunked prefill) a wave pays that cost
    /// once where spread arrivals pay it every step: the `vllm-cpu` preset's closed loops read
    /// 7% above what it departs under open arrivals (docs/profiles.md). A reading below a rate
    /// kept up was cut short by its window (requests still filling the server when it closed)
    /// and says nothing. A rate counts as kept up here only when its judgement is not in
    /// doubt ([`served`]): an unsure rate just past the capacity, whose short window's
    /// completions still matched its arrivals, once set the bar a hair above the saturated
    /// reading (113.75 req/s unsure against 108.0 departed on the `vllm-cpu-fast` preset), and
    /// the closed loops' 118 became the capacity of a server that carries 107.
    fn saturated(&self) -> Option<&(SweepStep, Reading)> {
        let (_, top) = self.best()?;
        let kept = self
            .judged()
            .filter(|(s, r)| matches!(s.role, SweepRole::Rate | SweepRole::Refine) && served(s, r))
            .map(|(s, r)| r.requests_per_s * evidence(s, r))
            .chain(
                self.reading_of(SweepRole::Probe, 0)
                    .map(|r| r.requests_per_s),
            )
            .fold(0.0, f64::max);
        self.judged()
            .filter(|(s, r)| {
                matches!(s.role, SweepRole::Rate | SweepRole::Refine)
                    && r.verdict == Some(Verdict::NotKeptUp)
            })
            .max_by(|a, b| a.1.requests_per_s.total_cmp(&b.1.requests_per_s))
            .filter(|(_, r)| {
                r.requests_per_s >= KEPT_UP * kept && r.requests_per_s < top.requests_per_s
            })
    }

    /// One more open-loop rate above the planned ones, when the highest offered so far kept
    /// up (the probes then underestimated the capacity, and no rate has crossed it yet):
    /// [`TOP_RATE`] times the capacity as it now stands, at most [`MAX_EXTENSIONS`] times.
    fn extension_step(&self) -> Option<SweepStep> {
        if self.spec.mode != SweepMode::Adaptive || !self.rates_planned {
            return None;
        }
        let rates = self
            .judged()
            .filter(|(s, _)| s.role == SweepRole::Rate)
            .count();
        let planned = self.spec.size.saturating_sub(2) as usize;
        if rates < planned || rates >= planned + MAX_EXTENSIONS as usize {
            return None;
        }
        let (top, kept) = self.top_rate()?;
        if !kept {
            return None;
        }
        let capacity = self.answer()?.max_requests_per_s;
        let rate = TOP_RATE * capacity.max(top);
        Some(SweepStep {
            strategy: self.spec.open_loop_at(rate),
            role: SweepRole::Rate,
            length: 1.0,
        })
    }

    /// The open-loop rates with their SLO verdicts by their point figures: a rate that was not
    /// served ([`served`]) meets no SLO.
    /// A rate that met the SLO but is unsure or was not judged ([`bench_core::served_sure`])
    /// is left out: it neither meets the SLO nor fails it.
    fn open_loop_verdicts(&self) -> Vec<(f64, bool)> {
        self.judged()
            .filter(|(s, _)| matches!(s.role, SweepRole::Rate | SweepRole::Refine))
            .filter_map(|(s, r)| {
                let rate = s.strategy.target_rate()?;
                let served = bench_core::served_sure(rate, r.requests_per_s, r.verdict);
                match (r.slo_met?, served) {
                    (false, _) => Some((rate, false)),
                    (true, Sure::Unsure) => None,
                    (true, served) => Some((rate, served == Sure::Pass)),
                }
            })
            .collect()
    }

    /// The maximum the answer states (the benchmark that measured it, scaled by its evidence).
    fn max_rate(&self) -> Option<f64> {
        self.measured_max()
            .map(|(s, r)| r.requests_per_s * evidence(s, r))
    }

    /// The SLO answer and what limits it: the SLO search's point answer (the highest rate
    /// served that met the SLO below the lowest that did not) when the lowest rate that did
    /// not was served (a bound failed there) and the answer lies below the maximum; else the
    /// maximum itself, which then limits first. `None` without an SLO or when no rate met it.
    fn slo_answer(&self) -> Option<(f64, SloLimit)> {
        self.spec.slo.as_ref()?;
        let b = slo_bracket(&self.open_loop_verdicts(), 0.0, 0);
        let (low, max) = (b.low?, self.max_rate()?);
        let bound_failed = b.high.is_some_and(|h| {
            self.judged().any(|(s, r)| {
                matches!(s.role, SweepRole::Rate | SweepRole::Refine)
                    && s.strategy.target_rate() == Some(h)
                    && served(s, r)
                    && r.slo_met == Some(false)
            })
        });
        Some(if bound_failed && low < max {
            (low, SloLimit::Slo)
        } else {
            (max, SloLimit::Capacity)
        })
    }

    /// What limits the SLO answer now ([`Self::slo_answer`]).
    fn slo_limit(&self) -> Option<SloLimit> {
        self.slo_answer().map(|a| a.1)
    }

    /// The precision the maximum's interval is narrowed to: `--capacity-precision`, and
    /// `--slo-precision` while the capacity limits the SLO answer (whose interval is then the
    /// maximum's); the finer of the two.
    fn max_precision(&self) -> Option<f64> {
        let slo = self
            .spec
            .slo_precision
            .filter(|_| self.slo_limit() == Some(SloLimit::Capacity));
        match (self.spec.capacity_precision, slo) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn refine_steps(&self) -> u32 {
        self.history
            .iter()
            .filter(|(s, _)| s.role == SweepRole::Refine)
            .count() as u32
    }

    fn refine_step(&self) -> Option<SweepStep> {
        self.spec.slo.as_ref()?;
        let b = slo_bracket(
            &self.open_loop_verdicts(),
            self.spec.slo_tolerance,
            self.refine_steps(),
        );
        // A rate met at or above the maximum: the capacity limits first, nothing to search.
        if b.low.zip(self.max_rate()).is_some_and(|(l, m)| l >= m) {
            return None;
        }
        let rate = slo_next_rate(&b)?;
        // A rate already run whose judgement stayed unsure or missing at its longest: running
        // it again would tell no more.
        let tried = self.judged().any(|(s, _)| {
            s.strategy
                .target_rate()
                .is_some_and(|r| (r - rate).abs() <= 1e-9 * rate)
        });
        (!tried).then(|| SweepStep {
            strategy: self.spec.open_loop_at(rate),
            role: SweepRole::Refine,
            length: 1.0,
        })
    }

    /// The open-loop rates with their SLO verdicts from their intervals, ascending.
    fn sure_rates(&self) -> Vec<(f64, Sure, &SweepStep)> {
        let mut v: Vec<(f64, Sure, &SweepStep)> = self
            .judged()
            .filter(|(s, _)| matches!(s.role, SweepRole::Rate | SweepRole::Refine))
            .filter_map(|(s, r)| {
                let kept = if served(s, r) { Sure::Pass } else { Sure::Fail };
                Some((s.strategy.target_rate()?, Sure::all([r.slo_sure?, kept]), s))
            })
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    }

    /// The SLO answer's interval ([`bench_core::crossing`] of the rates' verdicts) and whether
    /// it is as narrow as `--slo-precision` asks: `high - low <= 2 x precision x low`.
    fn narrow_enough(&self, precision: f64) -> (bench_core::CrossingInterval, bool) {
        let verdicts: Vec<(f64, Sure)> = self.sure_rates().iter().map(|r| (r.0, r.1)).collect();
        let c = crossing(&verdicts);
        let ok = c.low > 0.0 && c.high.is_some_and(|h| h - c.low <= 2.0 * precision * c.low);
        (c, ok)
    }

    /// The next benchmark narrowing the SLO answer's interval (`--slo-precision` `P`), around
    /// the SLO search's point answer `r` (its bracket's lower end): the interval's lower end is
    /// the last of the run of sure passes from the lowest rate, so first the lowest unsure rate
    /// below `r (1 - 0.9 P)` runs again [`LENGTHEN`] times as long (up to [`MAX_LENGTH`]); then
    /// the two ends are sought at `r (1 - 0.9 P)` and `r (1 + 0.9 P)`, each by the rate already
    /// within 1% of it toward `r` run again longer, or a new rate there at [`MAX_LENGTH`]. `None` when
    /// narrow enough, when no rate met the SLO or none failed it (the crossing lies outside the
    /// sweep), when a rate that must become sure is unsure at its longest, or out of steps
    /// ([`MAX_ANSWER_STEPS`]).
    fn narrowing_step(&self) -> Option<SweepStep> {
        let precision = self.spec.slo_precision?;
        self.spec.slo.as_ref()?;
        if self.narrowing.is_some_and(|(n, _)| n >= MAX_ANSWER_STEPS) {
            return None;
        }
        let (c, ok) = self.narrow_enough(precision);
        let point = slo_bracket(&self.open_loop_verdicts(), 0.0, 0);
        let (r, _) = (point.low?, point.high?);
        if ok {
            return None;
        }
        let (want_low, want_high) = (r * (1.0 - 0.9 * precision), r * (1.0 + 0.9 * precision));
        let rates = self.sure_rates();
        let longer = |s: &SweepStep| {
            (s.length * LENGTHEN <= MAX_LENGTH + 1e-9).then(|| SweepStep {
                length: s.length * LENGTHEN,
                ..s.clone()
            })
        };
        if let Some(u) = rates
            .iter()
            .find(|x| x.1 != Sure::Pass && x.0 < want_low * 0.99)
        {
            // It blocks the lower end's run of sure passes: it must become one.
            return (u.1 == Sure::Unsure).then(|| longer(u.2)).flatten();
        }
        // The rate standing for an end lies within 1% of its target on the inner side (toward
        // `r`), so that both ends found keep the interval within `2 P` of its lower end.
        let at = |target: f64, inner: f64, done: bool| -> Option<Option<SweepStep>> {
            if done {
                return None;
            }
            let (a, b) = (target.min(inner), target.max(inner));
            let near = rates.iter().find(|x| x.0 >= a && x.0 <= b);
            Some(match near {
                Some(x) if x.1 == Sure::Unsure => longer(x.2),
                Some(_) => None,
                None => Some(SweepStep {
                    strategy: self.spec.open_loop_at(target),
                    role: SweepRole::Refine,
                    length: MAX_LENGTH,
                }),
            })
        };
        let low_done = c.low >= want_low;
        let high_done = c.high.is_some_and(|h| h <= want_high);
        at(want_low, want_low * 1.01, low_done)
            .flatten()
            .or_else(|| at(want_high, want_high * 0.99, high_done).flatten())
    }

    /// The benchmark that measured the maximum: in adaptive mode [`Self::saturated`], else
    /// [`Self::best`]; in guidellm mode [`Self::best`] (its answer is the better of its probes,
    /// or a rate that kept up above them: docs/profiles.md, "guidellm's sweep").
    fn measured_max(&self) -> Option<&(SweepStep, Reading)> {
        let saturated = match self.spec.mode {
            SweepMode::Adaptive => self.saturated(),
            SweepMode::Guidellm => None,
        };
        saturated.or_else(|| self.best())
    }

    /// Whether the maximum's interval is as narrow as `--capacity-precision` `P` asks:
    /// `high - low <= 2 P low` (scaling the reading, as [`Self::answer`] does, keeps the ratio).
    fn max_narrow_enough(&self, precision: f64) -> bool {
        self.measured_max()
            .and_then(|(_, r)| r.rate_interval)
            .is_some_and(|iv| iv.low > 0.0 && iv.high - iv.low <= 2.0 * precision * iv.low)
    }

    /// The next benchmark narrowing the maximum's interval (`--capacity-precision`): the
    /// benchmark that measured it runs again [`LENGTHEN`] times as long (up to [`MAX_LENGTH`];
    /// a longer run of the same load supersedes it), so its batches hold more requests and a
    /// run too short for an interval gets one. A longer run may read a different maximum; the
    /// benchmark that then measures it is narrowed in turn. `None` when narrow enough, when the
    /// benchmark measuring it is at its longest, or out of steps ([`MAX_ANSWER_STEPS`]).
    fn max_narrowing_step(&self) -> Option<SweepStep> {
        let precision = self.max_precision()?;
        if self
            .max_narrowing
            .is_some_and(|(n, _)| n >= MAX_ANSWER_STEPS)
            || self.max_narrow_enough(precision)
        {
            return None;
        }
        let (step, _) = self.measured_max()?;
        (step.length * LENGTHEN <= MAX_LENGTH + 1e-9).then(|| SweepStep {
            length: step.length * LENGTHEN,
            ..step.clone()
        })
    }

    /// What narrowing the maximum cost, when `--capacity-precision` asked for it.
    fn max_refinement(&self) -> Option<Refinement> {
        let precision = self.spec.capacity_precision?;
        let (benchmarks, seconds) = self.max_narrowing.unwrap_or((0, 0.0));
        let met = self.max_narrow_enough(precision);
        Some(Refinement {
            precision,
            benchmarks,
            seconds,
            met,
            why_not: (!met).then(|| self.max_why_not()),
        })
    }

    /// Why the maximum's interval is not narrower: out of steps, or the benchmark that
    /// measured it ran at its longest (or it has no interval at all).
    fn max_why_not(&self) -> NotNarrowed {
        if self
            .max_narrowing
            .is_some_and(|(n, _)| n >= MAX_ANSWER_STEPS)
        {
            return NotNarrowed::OutOfSteps;
        }
        match self.measured_max() {
            Some((s, _)) if s.length * LENGTHEN > MAX_LENGTH + 1e-9 => NotNarrowed::AtLongest,
            _ => NotNarrowed::NoInterval,
        }
    }

    /// What narrowing the SLO answer cost, when `--slo-precision` asked for it. When the
    /// capacity limits the answer, its interval is the maximum's: the benchmarks that
    /// narrowed the maximum count, and its width judges.
    fn refinement(&self) -> Option<Refinement> {
        let precision = self.spec.slo_precision?;
        let (mut benchmarks, mut seconds) = self.narrowing.unwrap_or((0, 0.0));
        let (met, why_not) = match self.slo_limit() {
            None => (false, Some(NotNarrowed::NoAnswer)),
            Some(SloLimit::Capacity) => {
                let (n, secs) = self.max_narrowing.unwrap_or((0, 0.0));
                (benchmarks, seconds) = (benchmarks + n, seconds + secs);
                let met = self.max_narrow_enough(precision);
                (met, (!met).then(|| self.max_why_not()))
            }
            Some(SloLimit::Slo) => {
                let met = self.narrow_enough(precision).1;
                let out = self.narrowing.is_some_and(|(n, _)| n >= MAX_ANSWER_STEPS);
                let why = if out {
                    NotNarrowed::OutOfSteps
                } else {
                    NotNarrowed::AtLongest
                };
                (met, (!met).then_some(why))
            }
        };
        Some(Refinement {
            precision,
            benchmarks,
            seconds,
            met,
            why_not,
        })
    }

    /// The highest open-loop rate offered by the sweep's rates, and whether it kept up.
    fn top_rate(&self) -> Option<(f64, bool)> {
        self.judged()
            .filter(|(s, _)| s.role == SweepRole::Rate)
            .filter_map(|(s, r)| Some((s.strategy.target_rate()?, served(s, r))))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    }

    /// Whether the highest rate offered kept up: the sweep never crossed the capacity.
    fn top_rate_kept_up(&self) -> bool {
        self.top_rate().is_some_and(|(_, kept)| kept)
    }

    /// The capacity answer: the best probe, rung or open-loop rate that kept up (in guidellm
    /// mode the better of its synchronous and 512-request probes, or a rate that kept up above
    /// them); `None` before any probe. The knee is left for the
    /// report, which owns the latency figures.
    pub fn answer(&self) -> Option<Capacity> {
        let (step, best) = self.measured_max()?;
        let bracket = self.spec.slo.as_ref().map(|_| SloBracket {
            refinement: self.refinement(),
            ..slo_bracket(
                &self.open_loop_verdicts(),
                self.spec.slo_tolerance,
                self.refine_steps(),
            )
        });
        let scale = evidence(step, best);
        let slo_answer = self.slo_answer();
        let mut c = Capacity {
            max_is_lower_bound: self.top_rate_kept_up(),
            slo: self.spec.slo.clone(),
            slo_max_requests_per_s: slo_answer.map(|a| a.0),
            slo_limit: slo_answer.map(|a| a.1),
            slo_bracket: bracket,
            max_refinement: self.max_refinement(),
            spent: Some(Spent {
                slo_s: self
                    .spec
                    .slo
                    .as_ref()
                    .map(|_| self.spent.slo_s.unwrap_or(0.0)),
                ..self.spent
            }),
            ..Capacity::measured(
                best.requests_per_s * scale,
                best.output_tokens_per_s.map_or(f64::NAN, |t| t * scale),
                step.strategy.label(),
            )
        };
        if let OpenLoop::Trace { recorded_rate } = self.spec.open_loop {
            c.set_trace_multiples(recorded_rate);
        }
        Some(c)
    }
}

/// The share of a benchmark's reading it is evidence for: an open-loop rate shows that the
/// server sustains the rate it offered, not more (a few requests' departures can read above
/// it); 1 for the probes and rungs.
fn evidence(step: &SweepStep, reading: &Reading) -> f64 {
    match step.strategy.target_rate() {
        Some(rate) if reading.requests_per_s > rate => rate / reading.requests_per_s,
        _ => 1.0,
    }
}

/// The throughput a benchmark shows the server sustains (see [`evidence`]).
fn sustained(step: &SweepStep, reading: &Reading) -> f64 {
    reading.throughput() * evidence(step, reading)
}

/// Whether an open-loop benchmark kept up, the one rule of the capacity, the SLO answer and
/// the knee ([`bench_core::served`]): its completions and a `kept_up` verdict. A rate judged
/// unsure, or not judged at all (its loaded span held too few arrivals), does not count.
fn served(step: &SweepStep, reading: &Reading) -> bool {
    step.strategy
        .target_rate()
        .is_some_and(|rate| bench_core::served(rate, reading.requests_per_s, reading.verdict))
}

impl SweepSpec {
    /// The open-loop benchmark of this sweep at `rate`.
    pub fn open_loop_at(&self, rate: f64) -> Strategy {
        match self.open_loop {
            OpenLoop::Constant => Strategy::Constant {
                rate,
                max_concurrency: self.max_concurrency,
            },
            OpenLoop::Poisson { burstiness, seed } => Strategy::Poisson {
                rate,
                burstiness,
                seed,
                max_concurrency: self.max_concurrency,
            },
            OpenLoop::Trace { recorded_rate } => Strategy::Trace {
                speedup: rate / recorded_rate,
                max_concurrency: self.max_concurrency,
                recorded_rate: Some(recorded_rate),
            },
        }
    }

    /// This sweep over a trace whose recorded mean rate is `recorded_rate` (req/s): its
    /// open-loop benchmarks replay the trace at the speed-ups that offer the rates the sweep
    /// picks, so the planner's rules (ladder, rates, extensions, SLO search) apply unchanged.
    pub fn over_trace(&self, recorded_rate: f64) -> Self {
        Self {
            open_loop: OpenLoop::Trace { recorded_rate },
            ..self.clone()
        }
    }

    /// The open-loop benchmarks after the probes measured `r_sync` and `top` completed
    /// requests/s (`top`: guidellm's throughput probe, or the adaptive capacity). Fails when a
    /// probe completed nothing (no rate to derive).
    pub fn rate_strategies(&self, r_sync: f64, top: f64) -> Result<Vec<Strategy>, ProfileError> {
        if !(r_sync > 0.0 && top > 0.0 && r_sync.is_finite() && top.is_finite()) {
            return Err(invalid(format!(
                "the sweep cannot derive rates: synchronous measured {r_sync:.3} req/s and the maximum {top:.3} req/s in their windows (no request completed, or requests last longer than a benchmark: raise --max-seconds)"
            )));
        }
        let n = self.size.saturating_sub(2);
        let rates = match self.mode {
            SweepMode::Guidellm => sweep_rates(r_sync, top, self.size),
            SweepMode::Adaptive => capacity_rates(r_sync, top, n),
        };
        Ok(rates.into_iter().map(|r| self.open_loop_at(r)).collect())
    }
}

#[cfg(test)]
mod tests;
