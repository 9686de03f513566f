//! One benchmark from the collecting side: starts the pacer, receives every record, places it
//! in the measurement window, watches the limits (deadline, errors, over-saturation, the
//! user's stop), publishes progress, and closes the benchmark with its [`BenchmarkOutcome`].

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bench_core::{
    Backend, BenchmarkOutcome, CancellationToken, Nanos, Pages, Phase, RampRecord, RateInput,
    Release, RequestRecord, Status, StopReason, TokenArrivals, Window,
};
use bench_profile::{OverSaturation, ResolvedTransient, SaturationSample, StrategyExt as _};
use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

use crate::pacer::{Pacer, PacerEnd, PacerTask, RampPace};
use crate::setup::{secs, BenchmarkSetup, Resolved};
use crate::shared::Shared;
use crate::Work;
use crate::{Progress, ProgressPhase, Scheduler, SchedulerError};

/// The bounds of the measurement window, known in advance (time transients) or marked by the
/// pacer as it goes (count transients).
#[derive(Debug, Clone, Copy)]
struct Bounds {
    t0: Nanos,
    deadline: Option<Nanos>,
    warm_time: Option<Nanos>,
    warm_count: Option<u64>,
    cool_time: Option<Nanos>,
    cool_count: Option<u64>,
}

impl Bounds {
    fn new(t0: Nanos, r: &Resolved) -> Self {
        let deadline = r.max_seconds.map(|m| t0.saturating_add(m));
        Self {
            t0,
            deadline,
            warm_time: match r.warmup {
                Some(ResolvedTransient::Time(w)) => Some(t0.saturating_add(w)),
                _ => None,
            },
            warm_count: match r.warmup {
                Some(ResolvedTransient::Requests(n)) => Some(n),
                _ => None,
            },
            cool_time: match (r.cooldown, deadline) {
                (Some(ResolvedTransient::Time(c)), Some(d)) => Some(d.saturating_sub(c)),
                _ => None,
            },
            cool_count: match (r.cooldown, r.count) {
                (Some(ResolvedTransient::Requests(c)), Some(n)) => Some(n.saturating_sub(c)),
                _ => None,
            },
        }
    }

    /// The window's opening; a count window not yet opened is in the future (`Nanos::MAX`):
    /// everything that ended so far ended before it.
    fn open(&self, shared: &Shared) -> Nanos {
        match (self.warm_time, self.warm_count) {
            (Some(w), _) => w,
            (None, Some(_)) => shared.window_open.load(Ordering::Relaxed),
            _ => self.t0,
        }
    }

    /// The window's closing by a cooldown, once known.
    fn close(&self, shared: &Shared) -> Option<Nanos> {
        match (self.cool_time, self.cool_count) {
            (Some(c), _) => Some(c),
            (None, Some(_)) => {
                Some(shared.window_close.load(Ordering::Relaxed)).filter(|&c| c != u64::MAX)
            }
            _ => None,
        }
    }

    fn phase(&self, r: &RequestRecord, shared: &Shared) -> Phase {
        Window::classify(self.open(shared), self.close(shared), r.dispatched, r.end)
    }

    /// The final window of a benchmark that ended at `end`.
    fn window(&self, shared: &Shared, end: Nanos) -> Window {
        let open = self.open(shared).min(end);
        let close = self.close(shared);
        Window {
            open,
            close: close.unwrap_or(u64::MAX).min(end).max(open),
            cooldown: close.is_some(),
        }
    }

    fn progress_phase(&self, now: Nanos, sent: u64) -> ProgressPhase {
        if self.warm_time.is_some_and(|w| now < w) || self.warm_count.is_some_and(|n| sent < n) {
            ProgressPhase::Warmup
        } else if self.cool_time.is_some_and(|c| now >= c)
            || self.cool_count.is_some_and(|n| sent > n)
        {
            ProgressPhase::Cooldown
        } else {
            ProgressPhase::Measuring
        }
    }
}

/// Running tallies of the collecting loop.
#[derive(Debug, Default)]
struct Tally {
    completed: u64,
    incomplete: u64,
    errored: u64,
    cancelled: u64,
    measured: u64,
    measured_completed: u64,
    ttft_sum: u128,
    ttft_n: u64,
    itl_sum: u128,
    itl_n: u64,
    /// `(dispatched, end)` of the measured completed requests, for the window's rates.
    /// In pages that never move: a `Vec` doubled on the runtime thread that sends the
    /// requests, copying and faulting in megabytes at each 2^k requests.
    departures: Pages<(Nanos, Nanos)>,
    /// `(dispatched, end)` of the measured requests that did not complete.
    failed: Pages<(Nanos, Nanos)>,
    /// Their output and prompt tokens.
    departed_output: u64,
    departed_prompt: u64,
    /// Output tokens arriving in the window from every request (closed-loop kinds).
    tokens_in_window: TokenArrivals,
    /// The first output token of the benchmark.
    first_output: Option<Nanos>,
}

impl Tally {
    fn add(&mut self, r: &RequestRecord, phase: Phase) {
        if let Some(f) = r.first_token() {
            self.first_output = Some(self.first_output.map_or(f, |g| g.min(f)));
        }
        match r.status() {
            Status::Completed => {
                self.completed += 1;
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
            Status::Cancelled => self.cancelled += 1,
        }
        if phase == Phase::Measured {
            self.measured += 1;
            if r.status() == Status::Completed {
                self.measured_completed += 1;
                self.departures.push((r.dispatched, r.end));
                self.departed_output += u64::from(r.output_tokens);
                self.departed_prompt += u64::from(r.prompt_tokens);
            } else {
                self.failed.push((r.dispatched, r.end));
            }
        }
    }

    fn finished(&self) -> u64 {
        self.completed + self.incomplete + self.errored + self.cancelled
    }
}

/// The cancellation tokens of one benchmark.
#[derive(Debug, Clone, Default)]
struct Tokens {
    /// Stops dispatching.
    stop: CancellationToken,
    /// Cancels what is in flight.
    cancel: CancellationToken,
    /// Abandons what did not return after `cancel`.
    hard: CancellationToken,
}

/// The state of the collecting loop of one benchmark.
struct Collector<'a, B> {
    sched: &'a Scheduler<B>,
    index: usize,
    total: usize,
    setup: &'a BenchmarkSetup,
    resolved: Resolved,
    bounds: Bounds,
    shared: Arc<Shared>,
    tally: Tally,
    stop_reason: Option<StopReason>,
    stop_at: Option<Nanos>,
    rate: Option<f64>,
    /// The load is the same from t0 (the token-based throughput estimator applies).
    closed_loop: bool,
    saturation: Option<OverSaturation>,
    samples: VecDeque<SaturationSample>,
    /// The setup runs to a precision target ([`crate::StopHandle::precise`] may end it).
    watch_precise: bool,
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
        setup: &BenchmarkSetup,
        specs: S,
        mut sink: F,
    ) -> Result<(BenchmarkOutcome, S), SchedulerError>
    where
        S: Iterator + Send + 'static,
        S::Item: Into<Work>,
        F: FnMut(RequestRecord, Phase),
    {
        let shard = self.options.shard;
        let (resolved, cap) = setup.resolve_for(shard)?;
        // A ramp by request runs over the whole benchmark's requests, every shard's.
        let whole_count = setup.limits.max_requests.unwrap_or(0);
        let bounds = Bounds::new(self.clock.now(), &resolved);
        let tokens = Tokens::default();
        let shared = Arc::new(Shared::new());
        let (tx, rx) = mpsc::unbounded_channel();
        let pacer = Pacer {
            backend: self.backend.clone(),
            clock: self.clock,
            t0: bounds.t0,
            release: setup.strategy.release(),
            arrivals: setup.strategy.arrivals().map(|a| {
                let a = match self.options.ramp {
                    Some(r) => a.ramped(r, whole_count),
                    None => a,
                };
                match shard {
                    Some(s) => a.sharded(s),
                    None => a,
                }
            }),
            speedup: setup.strategy.speedup(),
            cap,
            count: resolved.count,
            deadline: bounds.deadline,
            warm_count: bounds.warm_count,
            cool_count: bounds.cool_count,
            pacing: self.options.pacing,
            runtime: tokio::runtime::Handle::current(),
            stop: tokens.stop.clone(),
            cancel: tokens.cancel.clone(),
            hard: Arc::new(tokens.hard.clone()),
            tx,
            shared: shared.clone(),
            think: self.options.think_time,
            last_due: None,
            shard,
            cancellation: self.options.cancellation,
            ramp: self.options.ramp.and_then(|r| {
                let to = setup
                    .strategy
                    .target_rate()
                    .or_else(|| setup.strategy.closed_loop_streams().map(f64::from))?;
                Some(RampPace::new(r, to, whole_count, shard))
            }),
        };
        // Already interrupted: run nothing.
        if self.interrupt.is_cancelled() {
            tokens.stop.cancel();
        }
        let pacer = PacerTask::start(pacer, specs).map_err(SchedulerError::Pacer)?;
        let rate = setup.strategy.target_rate();
        let mut c = Collector {
            sched: self,
            index,
            total,
            setup,
            resolved,
            bounds,
            shared,
            tally: Tally::default(),
            stop_reason: None,
            stop_at: None,
            rate,
            closed_loop: setup.strategy.release() != Release::Scheduled,
            saturation: setup.limits.over_saturation.filter(|_| rate.is_some()),
            samples: VecDeque::new(),
            watch_precise: setup.limits.precision.is_some(),
        };
        c.collect(rx, &tokens, &mut sink).await;
        let (specs, pacer_end, not_sent) = pacer.join().await;
        let outcome = c.close(pacer_end, not_sent).await;
        Ok((outcome, specs))
    }
}

impl<B: Backend> Collector<'_, B> {
    /// Receives records until every sender is gone. A limit stops the sending; at the deadline
    /// the requests in flight drain (up to the setup's drain bound), on any other stop they are
    /// cancelled at once, and those that ignore cancellation are abandoned after the grace.
    async fn collect<F>(
        &mut self,
        mut rx: mpsc::UnboundedReceiver<RequestRecord>,
        tokens: &Tokens,
        sink: &mut F,
    ) where
        F: FnMut(RequestRecord, Phase),
    {
        let clock = self.sched.clock;
        let far = clock.instant(self.bounds.t0) + Duration::from_secs(86_400 * 365);
        let deadline = self.bounds.deadline;
        let deadline_sleep = tokio::time::sleep_until(deadline.map_or(far, |d| clock.instant(d)));
        tokio::pin!(deadline_sleep);
        let drain_sleep = tokio::time::sleep_until(far);
        tokio::pin!(drain_sleep);
        let hard_sleep = tokio::time::sleep_until(far);
        tokio::pin!(hard_sleep);
        let interrupted = self.sched.interrupt.cancelled();
        tokio::pin!(interrupted);
        let mut ticker = tokio::time::interval(self.sched.options.progress_interval);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            let stopping = self.stop_reason.is_some();
            let cancelling = tokens.cancel.is_cancelled();
            let mut cancel_now = false;
            tokio::select! {
                biased;
                r = rx.recv() => {
                    let Some(record) = r else { break };
                    self.on_record(record, sink);
                }
                _ = &mut deadline_sleep, if !stopping && deadline.is_some() => {
                    self.begin_stop(StopReason::MaxSeconds, deadline.unwrap_or_default());
                }
                _ = &mut interrupted, if !cancelling => {
                    // Ctrl-C cancels at once, a drain included.
                    self.stop_at = self.stop_at.or(Some(clock.now()));
                    self.stop_reason = Some(StopReason::Interrupted);
                    cancel_now = true;
                }
                _ = &mut drain_sleep, if stopping && !cancelling => {
                    tracing::warn!(
                        in_flight = self.shared.in_flight.load(Ordering::Relaxed),
                        "requests still in flight at the drain timeout; cancelling them (incomplete)"
                    );
                    cancel_now = true;
                }
                _ = &mut hard_sleep, if cancelling && !tokens.hard.is_cancelled() => {
                    tracing::warn!(
                        in_flight = self.shared.in_flight.load(Ordering::Relaxed),
                        "requests did not return within the cancellation grace period; abandoning them"
                    );
                    tokens.hard.cancel();
                }
                _ = ticker.tick() => self.on_tick(),
            }
            if !stopping && self.stop_reason.is_some() {
                tokens.stop.cancel();
                match self.drain_bound() {
                    Some(d) => drain_sleep.as_mut().reset(tokio::time::Instant::now() + d),
                    None => cancel_now = true,
                }
            }
            if cancel_now && !tokens.cancel.is_cancelled() {
                tokens.cancel.cancel();
                hard_sleep
                    .as_mut()
                    .reset(tokio::time::Instant::now() + self.sched.options.cancel_grace);
            }
        }
    }

    /// How long the requests in flight may drain after the sending stopped: at the deadline
    /// and at a precise stop (each ends the sending of a benchmark that went as planned, so
    /// its figures are those of every request it sent), up to the setup's drain bound; every
    /// other stop cancels at once.
    fn drain_bound(&self) -> Option<Duration> {
        let d = self.setup.limits.drain_seconds();
        let planned = matches!(
            self.stop_reason,
            Some(StopReason::MaxSeconds | StopReason::Precise)
        );
        (planned && d > 0.0).then(|| Duration::from_secs_f64(d))
    }

    fn begin_stop(&mut self, reason: StopReason, at: Nanos) {
        if self.stop_reason.is_none() {
            self.stop_reason = Some(reason);
            self.stop_at = Some(at);
        }
    }

    fn on_record<F: FnMut(RequestRecord, Phase)>(&mut self, record: RequestRecord, sink: &mut F) {
        let phase = self.bounds.phase(&record, &self.shared);
        self.tally.add(&record, phase);
        if self.closed_loop {
            // The window as known now; a close not yet known is after every chunk so far.
            let close = self
                .bounds
                .close(&self.shared)
                .unwrap_or(u64::MAX)
                .min(self.stop_at.unwrap_or(u64::MAX));
            let open = self.bounds.open(&self.shared);
            self.tally.tokens_in_window.add_record(&record, open, close);
        }
        sink(record, phase);
        if self
            .setup
            .limits
            .errors_exceeded(self.tally.finished(), self.tally.errored)
        {
            self.begin_stop(StopReason::ErrorLimit, self.sched.clock.now());
        }
        // Only with --precision: the observer may have found the benchmark precise at the
        // record it was just handed; the window closes there, not at the next tick.
        if self.watch_precise {
            self.precise_stop();
        }
    }

    /// Ends the benchmark as precise when the stop handle asked for it.
    fn precise_stop(&mut self) {
        if self.stop_reason.is_none()
            && self.sched.precise.load(Ordering::Acquire) == self.index + 1
        {
            tracing::info!(label = %self.setup.strategy.label(), "precise; stopping the benchmark");
            let now = self.sched.clock.now();
            let at = self.sched.precise_at.load(Ordering::Relaxed);
            self.begin_stop(StopReason::Precise, at.clamp(self.bounds.t0, now));
        }
    }

    fn on_tick(&mut self) {
        let now = self.sched.clock.now();
        if self.stop_reason.is_none() && self.saturated(now) {
            tracing::info!(label = %self.setup.strategy.label(), "over-saturated; stopping the benchmark");
            self.begin_stop(StopReason::OverSaturated, now);
        }
        if self.watch_precise {
            self.precise_stop();
        }
        let phase = if self.stop_reason.is_some() {
            ProgressPhase::Draining
        } else {
            self.bounds
                .progress_phase(now, self.shared.sent.load(Ordering::Relaxed))
        };
        self.publish(now, phase, false);
    }

    /// Samples the backlog once a second and applies the over-saturation rule.
    fn saturated(&mut self, now: Nanos) -> bool {
        let (Some(rule), Some(rate)) = (self.saturation, self.rate) else {
            return false;
        };
        let sample = SaturationSample {
            at_secs: secs(now - self.bounds.t0),
            backlog: self.shared.in_flight.load(Ordering::Relaxed) as f64
                + self.shared.queued(now, rate),
            // Requests the client cancelled on purpose left the server too.
            completed: self.tally.completed + self.tally.cancelled,
        };
        if self
            .samples
            .back()
            .is_some_and(|s| sample.at_secs - s.at_secs < 1.0)
        {
            return false;
        }
        while self.samples.len() > 1
            && self
                .samples
                .get(1)
                .is_some_and(|s| sample.at_secs - s.at_secs >= rule.window_seconds)
        {
            self.samples.pop_front();
        }
        let fire = self.samples.front().is_some_and(|then| {
            sample.at_secs - then.at_secs >= rule.window_seconds
                && rule.is_over_saturated(rate, then, &sample)
        });
        self.samples.push_back(sample);
        fire
    }

    /// Closes the benchmark once every record is in and the pacer has ended.
    async fn close(mut self, pacer_end: PacerEnd, not_sent: u64) -> BenchmarkOutcome {
        let clock = self.sched.clock;
        let reason = self.stop_reason.unwrap_or(match pacer_end {
            PacerEnd::AllSent => StopReason::RequestsDone,
            PacerEnd::Deadline => StopReason::MaxSeconds,
            PacerEnd::DataExhausted => StopReason::DataExhausted,
            PacerEnd::Stopped => StopReason::Interrupted,
        });
        // An open-loop schedule ends with the deadline even if the last request finished
        // earlier: wait for it, so the window spans the planned duration exactly.
        if self.stop_reason.is_none() && pacer_end == PacerEnd::Deadline {
            if let Some(d) = self.bounds.deadline {
                tokio::time::sleep_until(clock.instant(d)).await;
            }
        }
        let now = clock.now();
        let sending_end = match (self.stop_at, reason) {
            (Some(at), _) => at,
            (None, StopReason::MaxSeconds) => self.bounds.deadline.unwrap_or(now),
            _ => now,
        };
        // The drain: records of requests in flight at the stop arrive until `now`.
        let end = now.max(sending_end);
        let window = self.bounds.window(&self.shared, sending_end);
        let mut departures = std::mem::take(&mut self.tally.departures).into_vec();
        let failed = std::mem::take(&mut self.tally.failed).into_vec();
        let rates = window.steady_rates(&mut RateInput {
            closed_loop: self.closed_loop,
            arrivals: &self.tally.tokens_in_window,
            first_output: self.tally.first_output,
            streams: self.setup.strategy.closed_loop_streams(),
            departures: &mut departures,
            failed: &failed,
            output_tokens: self.tally.departed_output as f64,
            prompt_tokens: self.tally.departed_prompt as f64,
        });
        let outcome = BenchmarkOutcome {
            strategy: self.setup.strategy.clone(),
            start: self.bounds.t0,
            end,
            sending_end,
            window,
            stop_reason: reason,
            sent: self.shared.sent.load(Ordering::Relaxed),
            completed: self.tally.completed,
            incomplete: self.tally.incomplete,
            errored: self.tally.errored,
            cancelled: self.tally.cancelled,
            measured: self.tally.measured,
            measured_completed: self.tally.measured_completed,
            not_sent,
            abandoned: self.shared.abandoned.load(Ordering::Relaxed),
            rates,
            completed_rate: rates.requests_per_s,
            sessions: self.shared.sessions.snapshot(),
            ramp: self.ramp_record(),
            cancellation: self.sched.options.cancellation,
        };
        self.publish(now, ProgressPhase::Draining, true);
        outcome
    }

    /// The benchmark's ramp-up as it ran: the ramp, what it climbed to, its changes in order.
    fn ramp_record(&self) -> Option<RampRecord> {
        let ramp = self.sched.options.ramp?;
        let s = &self.setup.strategy;
        let to = s.target_rate().or(s.closed_loop_streams().map(f64::from))?;
        let mut changes = self
            .shared
            .ramp_changes
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default();
        changes.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        Some(RampRecord { ramp, to, changes })
    }

    fn publish(&self, now: Nanos, phase: ProgressPhase, finished: bool) {
        let elapsed = now.saturating_sub(self.bounds.t0);
        let (shared, tally) = (&self.shared, &self.tally);
        let p = Progress {
            index: self.index,
            total: self.total,
            label: self.setup.strategy.label(),
            phase,
            elapsed: Duration::from_nanos(elapsed),
            remaining: self
                .resolved
                .max_seconds
                .map(|m| Duration::from_nanos(m.saturating_sub(elapsed))),
            sent: shared.sent.load(Ordering::Relaxed),
            max_requests: self.resolved.count,
            // Live: completions so far over the time so far (the steady-state figure needs the
            // whole window and comes with the outcome).
            completed_rate: Window {
                open: self.bounds.t0,
                close: now,
                cooldown: false,
            }
            .per_s(tally.completed as f64),
            in_flight: shared.in_flight.load(Ordering::Relaxed),
            queued: self.rate.map_or(0.0, |r| shared.queued(now, r)) as u64,
            completed: tally.completed,
            incomplete: tally.incomplete,
            errored: tally.errored,
            cancelled: tally.cancelled,
            mean_ttft: (tally.ttft_n > 0)
                .then(|| tally.ttft_sum as f64 / tally.ttft_n as f64 / 1e9),
            mean_itl: (tally.itl_n > 0).then(|| tally.itl_sum as f64 / tally.itl_n as f64 / 1e9),
            silent: if finished {
                Vec::new()
            } else {
                self.sched.backend.silent()
            },
            finished,
        };
        self.sched.progress.send_replace(Some(p));
    }
}
