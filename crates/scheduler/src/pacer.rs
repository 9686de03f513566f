//! The pacer: releases one benchmark's requests at their intended times, takes their
//! concurrency slots and spawns each on the caller's runtime; and where it runs (a task, or
//! its own thread).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bench_core::{
    Backend, CancelWait, Cancellation, CancellationToken, Clock, Dispatch, Nanos, Outcome, Ramp,
    RampOver, Release, RequestRecord, RequestSpec, Shard, ThinkTime,
};
use bench_profile::Arrivals;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::pacing::{lower_timer_slack, retry_pause, wait_precise, wait_until, Pacing};
use crate::session::{SessionCtx, Work};
use crate::shared::{abandoned, Shared};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PacerEnd {
    AllSent,
    Deadline,
    Stopped,
    DataExhausted,
}

/// What the pacer hands back: the data (for the next benchmark), why it stopped, and how many
/// requests were due but never got a slot.
pub(crate) type PacerResult<S> = (S, PacerEnd, u64);

pub(crate) struct Pacer<B> {
    pub(crate) backend: Arc<B>,
    pub(crate) clock: Clock,
    pub(crate) t0: Nanos,
    pub(crate) release: Release,
    pub(crate) arrivals: Option<Arrivals>,
    /// A trace replay's speed-up: each request is due at its recorded `at` over this.
    pub(crate) speedup: Option<f64>,
    pub(crate) cap: Option<u32>,
    pub(crate) count: Option<u64>,
    pub(crate) deadline: Option<Nanos>,
    pub(crate) warm_count: Option<u64>,
    pub(crate) cool_count: Option<u64>,
    pub(crate) pacing: Pacing,
    /// The caller's runtime, where every request runs (the pacer may run elsewhere).
    pub(crate) runtime: tokio::runtime::Handle,
    /// Stops dispatching.
    pub(crate) stop: CancellationToken,
    /// Cancels the requests in flight (they return what they have).
    pub(crate) cancel: CancellationToken,
    /// Abandons the requests that did not return after `cancel` (shared by reference count:
    /// cloning a token locks it, on the pacer's thread and again at each request's end).
    pub(crate) hard: Arc<CancellationToken>,
    pub(crate) tx: mpsc::UnboundedSender<RequestRecord>,
    pub(crate) shared: Arc<Shared>,
    /// The pause between a session's turns.
    pub(crate) think: ThinkTime,
    /// This process's shard: its k-th session is session `index + k * count` of the run
    /// (docs/distributed.md), so that session numbers and think times are the
    /// single-process run's.
    pub(crate) shard: Option<Shard>,
    /// The requests the client cancels as load (not session turns).
    pub(crate) cancellation: Option<Cancellation>,
    /// The previous request's intended time (for grouping, [`GROUP_BELOW`]).
    pub(crate) last_due: Option<Nanos>,
    /// The ramp-up this benchmark climbs by, and the levels it records the change to.
    pub(crate) ramp: Option<RampPace>,
}

/// A ramp-up as the pacer follows it: the ramp, the rate or streams it climbs to, the
/// benchmark's request count (a ramp by request), and the next level to record.
pub(crate) struct RampPace {
    pub(crate) ramp: Ramp,
    pub(crate) to: f64,
    pub(crate) requests: u64,
    pub(crate) levels: Vec<f64>,
    pub(crate) next: usize,
    /// The next request's index in the whole schedule, and the step between this shard's.
    pub(crate) index: u64,
    pub(crate) stride: u64,
}

impl RampPace {
    /// The pace of `ramp` to `to` over `requests` requests; a shard's requests are every
    /// `shard.count`-th of the whole schedule's from `shard.index`.
    pub(crate) fn new(ramp: Ramp, to: f64, requests: u64, shard: Option<Shard>) -> Self {
        let (index, stride) = shard.map_or((0, 1), |s| (u64::from(s.index), u64::from(s.count)));
        Self {
            ramp,
            to,
            requests,
            levels: ramp.levels(to),
            next: 0,
            index,
            stride,
        }
    }

    /// The next open-loop request is due `offset` after the start: records the levels its
    /// rate reached.
    fn sent(&mut self, offset: Nanos, shared: &Shared) {
        let at_s = offset as f64 / 1e9;
        let rate = match self.ramp.over {
            RampOver::Seconds(_) => self.ramp.rate_at(at_s, self.to),
            RampOver::Requests => self
                .ramp
                .rate_of_request(self.index, self.requests, self.to),
        };
        self.index += self.stride;
        while self
            .levels
            .get(self.next)
            .is_some_and(|&l| l <= rate + 1e-9)
        {
            shared.ramp_change(at_s, self.levels[self.next]);
            self.next += 1;
        }
    }
}

/// A request due less than this after the one before is released with the requests due
/// within [`GROUP`] after it, on one wake-up of the pacer's thread: above 10,000 requests/s,
/// a sleep and a wake-up per request were a fifth of the client's CPU (docs/performance.md,
/// "Where the client's CPU goes"). Such a request is up to `GROUP` late (`queue_ms`).
pub(crate) const GROUP_BELOW: Nanos = 100_000;
/// How late a grouped request may be released.
pub(crate) const GROUP: Nanos = 150_000;

/// How long past `due` the pacer may wait for a request due `due` after one due `prev`, so
/// that the requests due by then go on the same wake-up: [`GROUP`] when it is due less than
/// [`GROUP_BELOW`] after the one before, else nothing.
pub(crate) fn group_after(prev: Option<Nanos>, due: Nanos) -> Nanos {
    match prev {
        Some(p) if due.saturating_sub(p) < GROUP_BELOW => GROUP,
        _ => 0,
    }
}

/// One step of the pacer: a request to spawn, or the end.
enum Step {
    Send {
        scheduled: Nanos,
        slot: Nanos,
        permit: Option<OwnedSemaphorePermit>,
    },
    End(PacerEnd),
}

impl<B: Backend> Pacer<B> {
    pub(crate) async fn run<S>(mut self, mut specs: S) -> PacerResult<S>
    where
        S: Iterator,
        S::Item: Into<Work>,
    {
        let slots = self
            .cap
            .map(|c| Arc::new(Semaphore::new(self.first_slots(c))));
        if let (Some(s), Some(cap)) = (&slots, self.cap) {
            self.ramp_streams(s, cap);
        }
        // Units released: requests, or sessions (whose turns take request ids themselves).
        let mut id: u64 = 0;
        let mut pending: Option<Nanos> = None;
        let end = loop {
            if self.count_reached() {
                break PacerEnd::AllSent;
            }
            if self.stop.is_cancelled() {
                break PacerEnd::Stopped;
            }
            let Some(work) = specs.next() else {
                break PacerEnd::DataExhausted;
            };
            let work: Work = work.into();
            let at = match &work {
                Work::Request(spec) => spec.at,
                // A trace's session is due at its first turn's recorded offset.
                Work::Session(conv) => conv.turns.first().and_then(|t| t.at),
            };
            match (self.step(&slots, &mut pending, at).await, work) {
                (Step::End(e), _) => break e,
                (Step::Send { .. }, Work::Session(_)) if self.count_reached() => {
                    // The sessions running took the last turns while this one waited.
                    break PacerEnd::AllSent;
                }
                (
                    Step::Send {
                        scheduled,
                        slot,
                        permit,
                    },
                    work,
                ) => {
                    match work {
                        Work::Request(spec) => {
                            self.mark_window(id, slot);
                            self.spawn(spec, id, scheduled, slot, permit);
                        }
                        Work::Session(conv) => {
                            let number = self.session_number(id);
                            let run = self
                                .session_ctx()
                                .run(conv, number, scheduled, slot, permit);
                            self.runtime.spawn(run);
                        }
                    }
                    id += 1;
                }
            }
        };
        self.shared.pending_due.store(u64::MAX, Ordering::Relaxed);
        let not_sent = self.count_not_sent(pending, id);
        (specs, end, not_sent)
    }

    /// The slots open at the start: all of the cap, or one stream of a closed loop ramped by
    /// time (the others open as [`Pacer::ramp_streams`] says).
    fn first_slots(&self, cap: u32) -> usize {
        match &self.ramp {
            Some(r) if self.release == Release::ClosedLoop && r.ramp.duration().is_some() => 1,
            _ => cap as usize,
        }
    }

    /// Opens a ramped closed loop's `n` streams (this shard's share) one by one at their
    /// starts ([`Ramp::stream_start`]), recording each, until the stop.
    fn ramp_streams(&self, slots: &Arc<Semaphore>, n: u32) {
        let Some(r) = &self.ramp else {
            return;
        };
        if self.release != Release::ClosedLoop || r.ramp.duration().is_none() || n == 0 {
            return;
        }
        let (ramp, clock, t0, stop) = (r.ramp, self.clock, self.t0, self.stop.clone());
        let (slots, shared) = (slots.clone(), self.shared.clone());
        shared.ramp_change(0.0, 1.0);
        self.runtime.spawn(async move {
            for j in 1..n {
                let at = ramp.stream_start(j, n);
                tokio::select! {
                    biased;
                    _ = stop.cancelled() => return,
                    _ = wait_until(&clock, t0.saturating_add(at)) => {}
                }
                slots.add_permits(1);
                shared.ramp_change(at as f64 / 1e9, f64::from(j + 1));
            }
        });
    }

    /// Whether `--max-requests` is reached (requests, or session turns, sent).
    fn count_reached(&self) -> bool {
        self.count
            .is_some_and(|n| self.shared.sent.load(Ordering::Relaxed) >= n)
    }

    /// The run-wide number of this shard's `k`-th session (`k` unsharded).
    fn session_number(&self, k: u64) -> u64 {
        self.shard
            .map_or(k, |s| u64::from(s.index) + k * u64::from(s.count))
    }

    fn session_ctx(&self) -> SessionCtx<B> {
        SessionCtx {
            backend: self.backend.clone(),
            clock: self.clock,
            count: self.count,
            deadline: self.deadline,
            warm_count: self.warm_count,
            cool_count: self.cool_count,
            think: self.think,
            speedup: self.speedup,
            stop: self.stop.clone(),
            cancel: self.cancel.clone(),
            hard: (*self.hard).clone(),
            tx: self.tx.clone(),
            shared: self.shared.clone(),
        }
    }

    /// The next request's intended time (`None` for closed loops); `at` is its recorded
    /// arrival in a trace.
    fn next_due(&mut self, at: Option<Nanos>) -> Option<Nanos> {
        match self.release {
            Release::ClosedLoop => None,
            Release::AtStart => Some(self.t0),
            Release::Scheduled => {
                let offset = match self.speedup {
                    // A trace: the recorded offset, scaled (a row without one is due at once).
                    Some(speedup) => (at.unwrap_or(0) as f64 / speedup).round() as Nanos,
                    None => {
                        let offset = self
                            .arrivals
                            .as_mut()
                            .and_then(Iterator::next)
                            .unwrap_or_default();
                        if let Some(r) = self.ramp.as_mut() {
                            r.sent(offset, &self.shared);
                        }
                        offset
                    }
                };
                Some(self.t0.saturating_add(offset))
            }
        }
    }

    /// Waits for the next request's time and slot.
    async fn step(
        &mut self,
        slots: &Option<Arc<Semaphore>>,
        pending: &mut Option<Nanos>,
        at: Option<Nanos>,
    ) -> Step {
        let due = self.next_due(at);
        if let (Some(d), Some(dl)) = (due, self.deadline) {
            if d >= dl {
                return Step::End(PacerEnd::Deadline);
            }
        }
        if let Some(d) = due {
            *pending = Some(d);
            self.shared.pending_due.store(d, Ordering::Relaxed);
            let group = group_after(self.last_due.replace(d), d);
            tokio::select! {
                biased;
                _ = self.stop.cancelled() => return Step::End(PacerEnd::Stopped),
                _ = self.wait(d, group) => {}
            }
        }
        let permit = match slots {
            Some(s) => tokio::select! {
                biased;
                _ = self.stop.cancelled() => return Step::End(PacerEnd::Stopped),
                p = s.clone().acquire_owned() => p.ok(),
            },
            None => None,
        };
        let slot = self.clock.now();
        if self.deadline.is_some_and(|dl| slot >= dl) {
            return Step::End(PacerEnd::Deadline);
        }
        *pending = None;
        self.shared.pending_due.store(u64::MAX, Ordering::Relaxed);
        Step::Send {
            scheduled: due.unwrap_or(slot),
            slot,
            permit,
        }
    }

    /// Records the slot of the requests that open / close a count window.
    fn mark_window(&self, id: u64, slot: Nanos) {
        if self.warm_count == Some(id) {
            self.shared.window_open.store(slot, Ordering::Relaxed);
        }
        if self.cool_count == Some(id) {
            self.shared.window_close.store(slot, Ordering::Relaxed);
        }
    }

    /// Requests that were due but never got a slot: counted, never dropped silently.
    fn count_not_sent(&mut self, pending: Option<Nanos>, id: u64) -> u64 {
        if self.release != Release::Scheduled {
            return 0;
        }
        let now = self.clock.now();
        let limit = self.deadline.map_or(now, |d| d.min(now));
        if pending.is_none_or(|d| d >= limit) {
            return 0;
        }
        let mut not_sent = 1;
        let more = self.count.map_or(u64::MAX, |n| n.saturating_sub(id + 1));
        if let Some(a) = self.arrivals.as_mut() {
            for t in a {
                if not_sent > more || self.t0.saturating_add(t) >= limit {
                    break;
                }
                not_sent += 1;
            }
        }
        not_sent.min(more.saturating_add(1))
    }

    /// Waits until `due`, or on the pacer's thread until up to `group` later when a request
    /// due by then is ready to go with it (the thread is woken once for both).
    async fn wait(&self, due: Nanos, group: Nanos) {
        match self.pacing {
            Pacing::Runtime => wait_until(&self.clock, due).await,
            Pacing::Thread { spin } => {
                if self.clock.now() < due {
                    wait_precise(&self.clock, due.saturating_add(group), spin).await;
                }
            }
        }
    }

    fn spawn(
        &self,
        spec: RequestSpec,
        id: u64,
        scheduled: Nanos,
        slot: Nanos,
        permit: Option<OwnedSemaphorePermit>,
    ) {
        let backend = self.backend.clone();
        let tx = self.tx.clone();
        // A closed-loop stream told to retry later holds its slot for the pause.
        let pause = (self.release == Release::ClosedLoop)
            .then(|| (self.clock, self.deadline, self.stop.clone()));
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
        let index = self
            .shard
            .map_or(id, |s| u64::from(s.index) + id * u64::from(s.count));
        let give_up = self
            .cancellation
            .filter(|c| c.chooses(index))
            .map(|c| c.after());
        self.runtime.spawn(async move {
            let wait = hard.cancelled();
            tokio::pin!(wait);
            let record = tokio::select! {
                biased;
                r = send(&*backend, spec, dispatch, cancel, give_up) => r,
                _ = CancelWait::new(&hard, wait) => {
                    shared.abandoned.fetch_add(1, Ordering::Relaxed);
                    abandoned(&dispatch, prompt_tokens, requested)
                }
            };
            let retry_after = record.outcome.retry_after();
            shared.in_flight.fetch_sub(1, Ordering::Relaxed);
            // The receiver lives until every sender is gone; a send error is impossible.
            let _ = tx.send(record);
            if let (Some(wait), Some((clock, deadline, stop))) = (retry_after, pause) {
                retry_pause(&clock, wait, deadline, &stop).await;
            }
            drop(permit);
        });
    }
}

/// Sends one request. One the client cancels as load ([`Cancellation`]) takes
/// [`give_up_after`], boxed: the common path's task holds only the transport's future, as
/// before cancellations existed (the request task's size is on the client's hot path).
async fn send<B: Backend>(
    backend: &B,
    spec: RequestSpec,
    dispatch: Dispatch,
    cancel: CancellationToken,
    give_up: Option<std::time::Duration>,
) -> RequestRecord {
    match give_up {
        None => backend.send(spec, dispatch, cancel).await,
        Some(after) => Box::pin(give_up_after(backend, spec, dispatch, cancel, after)).await,
    }
}

/// Sends one request and cancels it `after` its dispatch unless it ended first; it then ends
/// [`Outcome::ClientCancelled`] (unless the benchmark's own cancellation came first).
async fn give_up_after<B: Backend>(
    backend: &B,
    spec: RequestSpec,
    dispatch: Dispatch,
    cancel: CancellationToken,
    after: std::time::Duration,
) -> RequestRecord {
    let own = cancel.child_token();
    let sent = backend.send(spec, dispatch, own.clone());
    tokio::pin!(sent);
    tokio::select! {
        biased;
        r = &mut sent => return r,
        () = tokio::time::sleep(after) => {}
    }
    own.cancel();
    let mut r = sent.await;
    if r.outcome == Outcome::Cancelled && !cancel.is_cancelled() {
        r.outcome = Outcome::ClientCancelled;
    }
    r
}

/// The running pacer: a task on the caller's runtime, or its own thread.
pub(crate) enum PacerTask<S> {
    Task(tokio::task::JoinHandle<PacerResult<S>>),
    Thread {
        done: tokio::sync::oneshot::Receiver<PacerResult<S>>,
        thread: std::thread::JoinHandle<()>,
    },
}

impl<S> PacerTask<S>
where
    S: Iterator + Send + 'static,
    S::Item: Into<Work>,
{
    /// Starts `pacer` where its [`Pacing`] says. Fails only if the OS refuses a thread.
    pub(crate) fn start<B: Backend>(pacer: Pacer<B>, specs: S) -> std::io::Result<Self> {
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
    pub(crate) async fn join(self) -> PacerResult<S> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_requests_due_close_behind_another_wait_for_company() {
        // 15,000 req/s: 66.7 µs apart, grouped; 10,000 req/s (100 µs) and slower: exact.
        assert_eq!(group_after(Some(1_000_000), 1_066_667), GROUP);
        assert_eq!(group_after(Some(1_000_000), 1_000_000), GROUP);
        assert_eq!(group_after(Some(1_000_000), 1_100_000), 0);
        assert_eq!(group_after(Some(1_000_000), 2_000_000), 0);
        // The first request of a benchmark waits for nobody.
        assert_eq!(group_after(None, 5), 0);
        // A due time before the previous one (a trace's ties) is "close behind".
        assert_eq!(group_after(Some(9), 5), GROUP);
    }
}
