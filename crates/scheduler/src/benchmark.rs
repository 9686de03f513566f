//! One benchmark: the pacer, the per-request tasks, and the loop that collects their records.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bench_core::{
    Backend, CancellationToken, Clock, Dispatch, Nanos, Outcome, RequestRecord, RequestSpec,
    Status, TokenSource,
};
use bench_profile::{
    Arrivals, Limits, ProfileError, Release, ResolvedTransient, SaturationSample, Strategy,
    Transient,
};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, Semaphore};
use tokio::time::MissedTickBehavior;

use crate::pacing::{lower_timer_slack, wait_precise, wait_until, Pacing};
use crate::{Progress, ProgressPhase, Scheduler, SchedulerError};

/// One benchmark to run: a strategy, its limits and its warmup / cooldown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkPlan {
    /// The load shape.
    pub strategy: Strategy,
    /// What ends it.
    pub limits: Limits,
    /// Requests excluded from statistics at the start.
    pub warmup: Option<Transient>,
    /// Requests excluded from statistics at the end.
    pub cooldown: Option<Transient>,
}

/// Which part of the benchmark a record belongs to. Only [`Phase::Measured`] records enter the
/// per-request statistics; the others ran but are excluded.
///
/// The rule (guidellm's): a request is warmup when it *ended before* the measurement window
/// opened, cooldown when it was *sent after* the window closed, measured otherwise (so a
/// request that overlaps the window counts). A time warmup of `w` opens the window at
/// `t0 + w`; a count warmup of `n` opens it when request `n` (0-based, dispatch order) gets its
/// slot; cooldowns close it at `t0 + max_seconds - c` or when request `max_requests - c` gets
/// its slot. Rates and concurrency are clipped to the window by the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Started before the measurement window opened.
    Warmup,
    /// Started inside the window.
    Measured,
    /// Started after the window closed.
    Cooldown,
}

/// Why a benchmark ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `max_seconds` elapsed; what was in flight was cancelled.
    MaxSeconds,
    /// Every request it was to send (`max_requests`, burst size) has finished.
    RequestsDone,
    /// The data source ran out.
    DataExhausted,
    /// The error count or error rate limit was reached.
    ErrorLimit,
    /// The over-saturation rule fired.
    OverSaturated,
    /// The user interrupted the run (graceful stop); the benchmark is partial.
    Interrupted,
}

impl StopReason {
    /// Stable snake_case name.
    pub fn name(&self) -> &'static str {
        match self {
            StopReason::MaxSeconds => "max_seconds",
            StopReason::RequestsDone => "requests_done",
            StopReason::DataExhausted => "data_exhausted",
            StopReason::ErrorLimit => "error_limit",
            StopReason::OverSaturated => "over_saturated",
            StopReason::Interrupted => "interrupted",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a finished benchmark did, in the scheduler's terms (statistics are the report's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkOutcome {
    /// The load shape.
    pub strategy: Strategy,
    /// t0: the first request's intended send time.
    pub start: Nanos,
    /// When the benchmark ended (the stop instant, or the last record's arrival).
    pub end: Nanos,
    /// Opening of the measurement window.
    pub measure_start: Nanos,
    /// Closing of the measurement window.
    pub measure_end: Nanos,
    /// Why it ended.
    pub stop_reason: StopReason,
    /// Requests dispatched (each has exactly one record).
    pub sent: u64,
    /// Records by status, all phases.
    pub completed: u64,
    /// Cancelled in flight.
    pub incomplete: u64,
    /// Failed.
    pub errored: u64,
    /// Records in the measurement window.
    pub measured: u64,
    /// Completed records in the measurement window.
    pub measured_completed: u64,
    /// Requests that were due before the end but never got a concurrency slot (open-loop
    /// kinds with a cap). Never silently dropped: counted here.
    pub not_sent: u64,
    /// Requests abandoned at the hard deadline after cancellation (recorded as incomplete
    /// without their partial data).
    pub abandoned: u64,
    /// Completed requests per second in the measurement window: completions (of any request)
    /// whose end falls in the window, divided by its length.
    pub completed_rate: f64,
}

impl BenchmarkOutcome {
    /// Actual warmup length, seconds.
    pub fn warmup_secs(&self) -> f64 {
        secs(self.measure_start.saturating_sub(self.start))
    }
    /// Actual cooldown length, seconds.
    pub fn cooldown_secs(&self) -> f64 {
        secs(self.end.saturating_sub(self.measure_end))
    }
    /// Length of the measurement window, seconds.
    pub fn measured_secs(&self) -> f64 {
        secs(self.measure_end.saturating_sub(self.measure_start))
    }
    /// Total length, seconds.
    pub fn duration_secs(&self) -> f64 {
        secs(self.end.saturating_sub(self.start))
    }
    /// Whether it was cut short by the user.
    pub fn is_partial(&self) -> bool {
        self.stop_reason == StopReason::Interrupted
    }
}

fn secs(ns: Nanos) -> f64 {
    ns as f64 / 1e9
}

fn nanos(secs: f64) -> Nanos {
    let ns = (secs * 1e9).round();
    if ns <= 0.0 {
        0
    } else if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        ns as Nanos
    }
}

/// A plan with everything resolved and checked.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    count: Option<u64>,
    max_seconds: Option<Nanos>,
    warmup: Option<ResolvedTransient>,
    cooldown: Option<ResolvedTransient>,
}

impl BenchmarkPlan {
    pub(crate) fn resolve(&self) -> Result<Resolved, SchedulerError> {
        let err = |source: ProfileError| SchedulerError::Plan {
            label: self.strategy.label(),
            source,
        };
        let inv = |m: String| err(ProfileError::Invalid(m));
        self.strategy.validate().map_err(err)?;
        self.limits.validate().map_err(err)?;
        let count = match (self.strategy.request_count(), self.limits.max_requests) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let max_seconds = self.limits.max_seconds.map(nanos);
        if count.is_none() && max_seconds.is_none() {
            return Err(inv(
                "it would never end: give max seconds or max requests".into()
            ));
        }
        let res = |t: &Option<Transient>| -> Result<Option<ResolvedTransient>, SchedulerError> {
            match t {
                Some(t) if !t.is_zero() => Ok(Some(
                    t.resolve(&self.limits, self.strategy.request_count())
                        .map_err(err)?,
                )),
                _ => Ok(None),
            }
        };
        let warmup = res(&self.warmup)?;
        let cooldown = res(&self.cooldown)?;
        match cooldown {
            Some(ResolvedTransient::Time(_)) if max_seconds.is_none() => {
                return Err(inv(
                    "a cooldown in seconds needs max seconds (the end must be known in advance)"
                        .into(),
                ))
            }
            Some(ResolvedTransient::Requests(_)) if count.is_none() => {
                return Err(inv(
                    "a cooldown in requests needs max requests (the last request must be known in advance)"
                        .into(),
                ))
            }
            _ => {}
        }
        // Something must be left to measure.
        let req = |t: Option<ResolvedTransient>| match t {
            Some(ResolvedTransient::Requests(n)) => n,
            _ => 0,
        };
        if let Some(n) = count {
            if req(warmup) + req(cooldown) >= n {
                return Err(inv(format!(
                    "warmup and cooldown exclude all {n} requests; nothing is left to measure"
                )));
            }
        }
        let time = |t: Option<ResolvedTransient>| match t {
            Some(ResolvedTransient::Time(n)) => n,
            _ => 0,
        };
        if let Some(max) = max_seconds {
            if time(warmup).saturating_add(time(cooldown)) >= max {
                return Err(inv(format!(
                    "warmup and cooldown cover all {} s; nothing is left to measure",
                    secs(max)
                )));
            }
        }
        Ok(Resolved {
            count,
            max_seconds,
            warmup,
            cooldown,
        })
    }
}

/// Counters shared by the pacer, the request tasks and the collecting loop.
#[derive(Debug)]
struct Shared {
    in_flight: AtomicU64,
    sent: AtomicU64,
    /// Intended time of the request the pacer holds but has not dispatched (`u64::MAX`: none).
    pending_due: AtomicU64,
    /// Requests given up at the hard deadline.
    abandoned: AtomicU64,
    /// Slot of the request that opens the window of a count warmup (`u64::MAX`: not yet).
    window_open: AtomicU64,
    /// Slot of the request that closes the window of a count cooldown (`u64::MAX`: not yet).
    window_close: AtomicU64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PacerEnd {
    AllSent,
    Deadline,
    Stopped,
    DataExhausted,
}

struct Pacer<B> {
    backend: Arc<B>,
    clock: Clock,
    t0: Nanos,
    release: Release,
    arrivals: Option<Arrivals>,
    cap: Option<u32>,
    count: Option<u64>,
    deadline: Option<Nanos>,
    warm_count: Option<u64>,
    cool_count: Option<u64>,
    pacing: Pacing,
    /// The caller's runtime, where every request runs (the pacer may run elsewhere).
    runtime: tokio::runtime::Handle,
    stop: CancellationToken,
    cancel: CancellationToken,
    hard: CancellationToken,
    tx: mpsc::UnboundedSender<RequestRecord>,
    shared: Arc<Shared>,
}

impl<B: Backend> Pacer<B> {
    async fn run<S>(mut self, mut specs: S) -> (S, PacerEnd, u64)
    where
        S: Iterator<Item = RequestSpec>,
    {
        let slots = self.cap.map(|c| Arc::new(Semaphore::new(c as usize)));
        let mut id: u64 = 0;
        let mut pending: Option<Nanos> = None;
        let end = loop {
            if self.count.is_some_and(|n| id >= n) {
                break PacerEnd::AllSent;
            }
            if self.stop.is_cancelled() {
                break PacerEnd::Stopped;
            }
            let Some(spec) = specs.next() else {
                break PacerEnd::DataExhausted;
            };
            let due = match self.release {
                Release::ClosedLoop => None,
                Release::AtStart => Some(self.t0),
                Release::Scheduled => Some(
                    self.t0.saturating_add(
                        self.arrivals
                            .as_mut()
                            .and_then(Iterator::next)
                            .unwrap_or_default(),
                    ),
                ),
            };
            if let (Some(d), Some(dl)) = (due, self.deadline) {
                if d >= dl {
                    break PacerEnd::Deadline;
                }
            }
            if let Some(d) = due {
                pending = Some(d);
                self.shared.pending_due.store(d, Ordering::Relaxed);
                tokio::select! {
                    biased;
                    _ = self.stop.cancelled() => break PacerEnd::Stopped,
                    _ = self.wait(d) => {}
                }
            }
            let permit = match &slots {
                Some(s) => tokio::select! {
                    biased;
                    _ = self.stop.cancelled() => break PacerEnd::Stopped,
                    p = s.clone().acquire_owned() => p.ok(),
                },
                None => None,
            };
            let slot = self.clock.now();
            if self.deadline.is_some_and(|dl| slot >= dl) {
                break PacerEnd::Deadline;
            }
            pending = None;
            self.shared.pending_due.store(u64::MAX, Ordering::Relaxed);
            if self.warm_count == Some(id) {
                self.shared.window_open.store(slot, Ordering::Relaxed);
            }
            if self.cool_count == Some(id) {
                self.shared.window_close.store(slot, Ordering::Relaxed);
            }
            self.spawn(spec, id, due.unwrap_or(slot), slot, permit);
            id += 1;
        };
        self.shared.pending_due.store(u64::MAX, Ordering::Relaxed);
        // Requests that were due but never got a slot: count them, never drop silently.
        let mut not_sent = 0;
        if self.release == Release::Scheduled {
            let now = self.clock.now();
            let limit = self.deadline.map_or(now, |d| d.min(now));
            if let Some(d) = pending {
                if d < limit {
                    not_sent += 1;
                    let more = self.count.map_or(u64::MAX, |n| n.saturating_sub(id + 1));
                    if let Some(a) = self.arrivals.as_mut() {
                        for t in a {
                            if not_sent > more || self.t0.saturating_add(t) >= limit {
                                break;
                            }
                            not_sent += 1;
                        }
                    }
                    not_sent = not_sent.min(more.saturating_add(1));
                }
            }
        }
        (specs, end, not_sent)
    }

    async fn wait(&self, due: Nanos) {
        match self.pacing {
            Pacing::Runtime => wait_until(&self.clock, due).await,
            Pacing::Thread { spin } => wait_precise(&self.clock, due, spin).await,
        }
    }

    fn spawn(
        &self,
        spec: RequestSpec,
        id: u64,
        scheduled: Nanos,
        slot: Nanos,
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
    ) {
        let backend = self.backend.clone();
        let tx = self.tx.clone();
        let cancel = self.cancel.clone();
        let hard = self.hard.clone();
        let shared = self.shared.clone();
        let dispatch = Dispatch {
            id,
            clock: self.clock,
            scheduled,
            slot,
        };
        shared.in_flight.fetch_add(1, Ordering::Relaxed);
        shared.sent.fetch_add(1, Ordering::Relaxed);
        let prompt_tokens = spec.prompt_tokens;
        let requested = spec.output_tokens;
        self.runtime.spawn(async move {
            let record = tokio::select! {
                biased;
                r = backend.send(spec, dispatch, cancel) => r,
                _ = hard.cancelled() => {
                    shared.abandoned.fetch_add(1, Ordering::Relaxed);
                    abandoned(&dispatch, prompt_tokens, requested)
                }
            };
            drop(permit);
            shared.in_flight.fetch_sub(1, Ordering::Relaxed);
            // The receiver lives until every sender is gone; a send error is impossible.
            let _ = tx.send(record);
        });
    }
}

type PacerResult<S> = (S, PacerEnd, u64);

/// The running pacer: a task on the caller's runtime, or its own thread.
enum PacerTask<S> {
    Task(tokio::task::JoinHandle<PacerResult<S>>),
    Thread {
        done: tokio::sync::oneshot::Receiver<PacerResult<S>>,
        thread: std::thread::JoinHandle<()>,
    },
}

impl<S> PacerTask<S>
where
    S: Iterator<Item = RequestSpec> + Send + 'static,
{
    /// Starts `pacer` where its [`Pacing`] says. Fails only if the OS refuses a thread.
    fn start<B: Backend>(pacer: Pacer<B>, specs: S) -> std::io::Result<Self> {
        match pacer.pacing {
            Pacing::Runtime => Ok(PacerTask::Task(tokio::spawn(pacer.run(specs)))),
            Pacing::Thread { .. } => {
                // The pacer's own single-threaded runtime serves only its coarse timer and its
                // stop / slot waits; its blocking fine sleeps delay nothing else.
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()?;
                let (tx, done) = tokio::sync::oneshot::channel();
                let thread = std::thread::Builder::new()
                    .name("bench-pacer".into())
                    .spawn(move || {
                        lower_timer_slack();
                        let _ = tx.send(rt.block_on(pacer.run(specs)));
                    })?;
                Ok(PacerTask::Thread { done, thread })
            }
        }
    }

    /// Waits for the pacer to finish. The pacer never panics by construction; if it did, the
    /// panic is surfaced rather than hidden.
    async fn join(self) -> PacerResult<S> {
        match self {
            PacerTask::Task(h) => match h.await {
                Ok(v) => v,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            },
            PacerTask::Thread { done, thread } => match done.await {
                Ok(v) => v,
                Err(_) => match thread.join() {
                    Err(panic) => std::panic::resume_unwind(panic),
                    Ok(()) => {
                        unreachable!("the pacer thread always sends its result before ending")
                    }
                },
            },
        }
    }
}

/// The record of a request that did not return after cancellation within the grace period.
fn abandoned(d: &Dispatch, prompt_tokens: u32, requested: Option<u32>) -> RequestRecord {
    RequestRecord {
        id: d.id,
        scheduled: d.scheduled,
        slot: d.slot,
        dispatched: d.slot,
        headers: None,
        chunks: Vec::new(),
        end: d.clock.now(),
        prompt_tokens,
        prompt_tokens_source: TokenSource::Tokenizer,
        output_tokens: 0,
        output_tokens_source: TokenSource::Chunks,
        requested_output_tokens: requested,
        outcome: Outcome::Cancelled,
    }
}

/// Running tallies of the collecting loop.
#[derive(Debug, Default)]
struct Tally {
    completed: u64,
    incomplete: u64,
    errored: u64,
    measured: u64,
    measured_completed: u64,
    ttft_sum: u128,
    ttft_n: u64,
    itl_sum: u128,
    itl_n: u64,
    /// End times of completed requests, for the window's completed rate.
    completed_ends: Vec<Nanos>,
}

impl Tally {
    fn add(&mut self, r: &RequestRecord, phase: Phase) {
        match r.status() {
            Status::Completed => {
                self.completed += 1;
                self.completed_ends.push(r.end);
                if let (Some(first), Some(last)) = (r.first_token(), r.last_token()) {
                    self.ttft_sum += u128::from(first.saturating_sub(r.dispatched));
                    self.ttft_n += 1;
                    if r.output_tokens > 1 {
                        self.itl_sum += u128::from(last.saturating_sub(first));
                        self.itl_n += u64::from(r.output_tokens - 1);
                    }
                }
            }
            Status::Incomplete => self.incomplete += 1,
            Status::Errored => self.errored += 1,
        }
        if phase == Phase::Measured {
            self.measured += 1;
            if r.status() == Status::Completed {
                self.measured_completed += 1;
            }
        }
    }

    fn finished(&self) -> u64 {
        self.completed + self.incomplete + self.errored
    }
}

impl<B: Backend> Scheduler<B> {
    /// Runs one benchmark, handing each record to `sink` as it finishes, with its phase.
    /// `specs` is returned so a run can continue with the same data.
    ///
    /// `index` and `total` only label progress snapshots.
    pub async fn run_benchmark<S, F>(
        &self,
        index: usize,
        total: usize,
        plan: &BenchmarkPlan,
        specs: S,
        mut sink: F,
    ) -> Result<(BenchmarkOutcome, S), SchedulerError>
    where
        S: Iterator<Item = RequestSpec> + Send + 'static,
        F: FnMut(RequestRecord, Phase),
    {
        let resolved = plan.resolve()?;
        let clock = self.clock;
        let t0 = clock.now();
        let deadline = resolved.max_seconds.map(|m| t0.saturating_add(m));
        let stop = CancellationToken::new();
        let cancel = CancellationToken::new();
        let hard = CancellationToken::new();
        let shared = Arc::new(Shared {
            in_flight: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            pending_due: AtomicU64::new(u64::MAX),
            abandoned: AtomicU64::new(0),
            window_open: AtomicU64::new(u64::MAX),
            window_close: AtomicU64::new(u64::MAX),
        });
        // Phase boundaries known in advance.
        let warm_time = match resolved.warmup {
            Some(ResolvedTransient::Time(w)) => Some(t0.saturating_add(w)),
            _ => None,
        };
        let warm_count = match resolved.warmup {
            Some(ResolvedTransient::Requests(n)) => Some(n),
            _ => None,
        };
        let cool_time = match (resolved.cooldown, deadline) {
            (Some(ResolvedTransient::Time(c)), Some(d)) => Some(d.saturating_sub(c)),
            _ => None,
        };
        let cool_count = match (resolved.cooldown, resolved.count) {
            (Some(ResolvedTransient::Requests(c)), Some(n)) => Some(n.saturating_sub(c)),
            _ => None,
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        let pacer = Pacer {
            backend: self.backend.clone(),
            clock,
            t0,
            release: plan.strategy.release(),
            arrivals: plan.strategy.arrivals(),
            cap: plan.strategy.concurrency_cap(),
            count: resolved.count,
            deadline,
            warm_count,
            cool_count,
            pacing: self.options.pacing,
            runtime: tokio::runtime::Handle::current(),
            stop: stop.clone(),
            cancel: cancel.clone(),
            hard: hard.clone(),
            tx,
            shared: shared.clone(),
        };
        // Already interrupted: run nothing.
        if self.interrupt.is_cancelled() {
            stop.cancel();
        }
        let pacer = PacerTask::start(pacer, specs).map_err(SchedulerError::Pacer)?;

        // A count window not yet opened is in the future: everything that ended so far ended
        // before it.
        let window_open = |shared: &Shared| match (warm_time, warm_count) {
            (Some(w), _) => w,
            (None, Some(_)) => shared.window_open.load(Ordering::Relaxed),
            _ => t0,
        };
        let window_close = |shared: &Shared| match (cool_time, cool_count) {
            (Some(c), _) => c,
            (None, Some(_)) => shared.window_close.load(Ordering::Relaxed),
            _ => u64::MAX,
        };
        let phase_of = |r: &RequestRecord, shared: &Shared| {
            if r.end < window_open(shared) {
                Phase::Warmup
            } else if r.dispatched > window_close(shared) {
                Phase::Cooldown
            } else {
                Phase::Measured
            }
        };

        let mut tally = Tally::default();
        let mut stop_reason: Option<StopReason> = None;
        let mut stop_at: Option<Nanos> = None;
        let far = clock.instant(t0) + Duration::from_secs(86_400 * 365);
        let deadline_sleep = tokio::time::sleep_until(deadline.map_or(far, |d| clock.instant(d)));
        tokio::pin!(deadline_sleep);
        let hard_sleep = tokio::time::sleep_until(far);
        tokio::pin!(hard_sleep);
        let interrupted = self.interrupt.cancelled();
        tokio::pin!(interrupted);
        let mut ticker = tokio::time::interval(self.options.progress_interval);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let rate = plan.strategy.target_rate();
        let saturation = plan.limits.over_saturation.filter(|_| rate.is_some());
        let mut samples: VecDeque<SaturationSample> = VecDeque::new();

        let begin_stop =
            |reason: StopReason,
             at: Nanos,
             stop_reason: &mut Option<StopReason>,
             stop_at: &mut Option<Nanos>,
             hard_sleep: std::pin::Pin<&mut tokio::time::Sleep>| {
                *stop_reason = Some(reason);
                *stop_at = Some(at);
                stop.cancel();
                cancel.cancel();
                hard_sleep.reset(tokio::time::Instant::now() + self.options.cancel_grace);
            };

        loop {
            tokio::select! {
                biased;
                r = rx.recv() => {
                    let Some(record) = r else { break };
                    let phase = phase_of(&record, &shared);
                    tally.add(&record, phase);
                    sink(record, phase);
                    if stop_reason.is_none()
                        && plan.limits.errors_exceeded(tally.finished(), tally.errored)
                    {
                        begin_stop(StopReason::ErrorLimit, clock.now(), &mut stop_reason,
                            &mut stop_at, hard_sleep.as_mut());
                    }
                }
                _ = &mut deadline_sleep, if stop_reason.is_none() && deadline.is_some() => {
                    begin_stop(StopReason::MaxSeconds, deadline.unwrap_or_default(),
                        &mut stop_reason, &mut stop_at, hard_sleep.as_mut());
                }
                _ = &mut interrupted, if stop_reason.is_none() => {
                    begin_stop(StopReason::Interrupted, clock.now(), &mut stop_reason,
                        &mut stop_at, hard_sleep.as_mut());
                }
                _ = &mut hard_sleep, if stop_reason.is_some() && !hard.is_cancelled() => {
                    tracing::warn!(
                        in_flight = shared.in_flight.load(Ordering::Relaxed),
                        "requests did not return within the cancellation grace period; abandoning them"
                    );
                    hard.cancel();
                }
                _ = ticker.tick() => {
                    let now = clock.now();
                    if let (Some(rule), Some(rate)) = (saturation, rate) {
                        let queued = queued(&shared, now, rate);
                        let sample = SaturationSample {
                            at_secs: secs(now - t0),
                            backlog: shared.in_flight.load(Ordering::Relaxed) as f64 + queued,
                            completed: tally.completed,
                        };
                        if samples.back().is_none_or(|s| sample.at_secs - s.at_secs >= 1.0) {
                            while samples.len() > 1
                                && samples.get(1).is_some_and(|s| sample.at_secs - s.at_secs >= rule.window_seconds)
                            {
                                samples.pop_front();
                            }
                            let fire = samples.front().is_some_and(|then| {
                                sample.at_secs - then.at_secs >= rule.window_seconds
                                    && rule.is_over_saturated(rate, then, &sample)
                            });
                            samples.push_back(sample);
                            if fire && stop_reason.is_none() {
                                tracing::info!(label = %plan.strategy.label(), "over-saturated; stopping the benchmark");
                                begin_stop(StopReason::OverSaturated, now, &mut stop_reason,
                                    &mut stop_at, hard_sleep.as_mut());
                            }
                        }
                    }
                    let phase = if stop_reason.is_some() {
                        ProgressPhase::Draining
                    } else {
                        progress_phase(now, shared.sent.load(Ordering::Relaxed), warm_time, warm_count, cool_time, cool_count)
                    };
                    self.publish(index, total, plan, &resolved, &shared, &tally, t0, now, phase, rate, false);
                }
            }
        }
        let (specs, pacer_end, not_sent) = pacer.join().await;
        let reason = stop_reason.unwrap_or(match pacer_end {
            PacerEnd::AllSent => StopReason::RequestsDone,
            PacerEnd::Deadline => StopReason::MaxSeconds,
            PacerEnd::DataExhausted => StopReason::DataExhausted,
            PacerEnd::Stopped => StopReason::Interrupted,
        });
        // An open-loop schedule ends with the deadline even if the last request finished
        // earlier: wait for it, so the window spans the planned duration exactly.
        if stop_reason.is_none() && pacer_end == PacerEnd::Deadline {
            if let Some(d) = deadline {
                tokio::time::sleep_until(clock.instant(d)).await;
            }
        }
        let end = match (stop_at, reason) {
            (Some(at), _) => at,
            (None, StopReason::MaxSeconds) => deadline.unwrap_or_else(|| clock.now()),
            _ => clock.now(),
        };
        let measure_start = window_open(&shared).min(end);
        let measure_end = window_close(&shared).min(end).max(measure_start);
        let window = secs(measure_end - measure_start);
        let completed_in_window = tally
            .completed_ends
            .iter()
            .filter(|&&e| e >= measure_start && e <= measure_end)
            .count();
        let outcome = BenchmarkOutcome {
            strategy: plan.strategy.clone(),
            start: t0,
            end,
            measure_start,
            measure_end,
            stop_reason: reason,
            sent: shared.sent.load(Ordering::Relaxed),
            completed: tally.completed,
            incomplete: tally.incomplete,
            errored: tally.errored,
            measured: tally.measured,
            measured_completed: tally.measured_completed,
            not_sent,
            abandoned: shared.abandoned.load(Ordering::Relaxed),
            completed_rate: if window > 0.0 {
                completed_in_window as f64 / window
            } else {
                0.0
            },
        };
        let now = clock.now();
        self.publish(
            index,
            total,
            plan,
            &resolved,
            &shared,
            &tally,
            t0,
            now,
            ProgressPhase::Draining,
            rate,
            true,
        );
        Ok((outcome, specs))
    }

    #[allow(clippy::too_many_arguments)]
    fn publish(
        &self,
        index: usize,
        total: usize,
        plan: &BenchmarkPlan,
        resolved: &Resolved,
        shared: &Shared,
        tally: &Tally,
        t0: Nanos,
        now: Nanos,
        phase: ProgressPhase,
        rate: Option<f64>,
        finished: bool,
    ) {
        let elapsed = now.saturating_sub(t0);
        let p = Progress {
            index,
            total,
            label: plan.strategy.label(),
            phase,
            elapsed: Duration::from_nanos(elapsed),
            remaining: resolved
                .max_seconds
                .map(|m| Duration::from_nanos(m.saturating_sub(elapsed))),
            sent: shared.sent.load(Ordering::Relaxed),
            max_requests: resolved.count,
            completed_rate: if elapsed > 0 {
                tally.completed as f64 / secs(elapsed)
            } else {
                0.0
            },
            in_flight: shared.in_flight.load(Ordering::Relaxed),
            queued: rate.map_or(0.0, |r| queued(shared, now, r)) as u64,
            completed: tally.completed,
            incomplete: tally.incomplete,
            errored: tally.errored,
            mean_ttft: (tally.ttft_n > 0)
                .then(|| tally.ttft_sum as f64 / tally.ttft_n as f64 / 1e9),
            mean_itl: (tally.itl_n > 0).then(|| tally.itl_sum as f64 / tally.itl_n as f64 / 1e9),
            finished,
        };
        self.progress.send_replace(Some(p));
    }
}

/// Requests due but not yet sent, estimated from how late the pacer's pending request is.
fn queued(shared: &Shared, now: Nanos, rate: f64) -> f64 {
    let due = shared.pending_due.load(Ordering::Relaxed);
    if due == u64::MAX || due >= now {
        0.0
    } else {
        1.0 + secs(now - due) * rate
    }
}

fn progress_phase(
    now: Nanos,
    sent: u64,
    warm_time: Option<Nanos>,
    warm_count: Option<u64>,
    cool_time: Option<Nanos>,
    cool_count: Option<u64>,
) -> ProgressPhase {
    if warm_time.is_some_and(|w| now < w) || warm_count.is_some_and(|n| sent < n) {
        ProgressPhase::Warmup
    } else if cool_time.is_some_and(|c| now >= c) || cool_count.is_some_and(|n| sent > n) {
        ProgressPhase::Cooldown
    } else {
        ProgressPhase::Measuring
    }
}
