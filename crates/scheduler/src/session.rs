//! Sessions as the unit of load: what the pacer releases ([`Work`]), and the task that runs
//! one session's turns back to back, each resending the history with the server's actual
//! replies, separated by the think time.
//!
//! The pacer is the same loop for requests and sessions: a released session takes the
//! concurrency slot (a `concurrent` user) for its whole life, including its pauses; turns draw
//! their ids from the benchmark's request counter, so `--max-requests` counts turns and the
//! count windows work per turn. A turn's intended send time (`scheduled`) is the end of its
//! think time, so pauses never count as latency.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bench_core::{
    Backend, CancellationToken, Clock, ConversationSpec, Dispatch, Nanos, Outcome, RequestRecord,
    RequestSpec, SessionTurn, ThinkTime, TurnRequest,
};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use crate::pacing::{retry_pause, wait_until};
use crate::shared::{abandoned, Shared};

/// What the pacer releases: a single request, or a session (a conversation run turn by turn).
#[derive(Debug, Clone)]
pub enum Work {
    /// One request.
    Request(RequestSpec),
    /// One user's session.
    Session(Arc<ConversationSpec>),
}

impl From<RequestSpec> for Work {
    fn from(r: RequestSpec) -> Work {
        Work::Request(r)
    }
}

impl From<ConversationSpec> for Work {
    fn from(c: ConversationSpec) -> Work {
        Work::Session(Arc::new(c))
    }
}

impl From<Arc<ConversationSpec>> for Work {
    fn from(c: Arc<ConversationSpec>) -> Work {
        Work::Session(c)
    }
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SessionEnd {
    NotStarted,
    Completed,
    Cut,
    Errored,
}

/// Everything a session task needs from its benchmark.
pub(crate) struct SessionCtx<B> {
    pub(crate) backend: Arc<B>,
    pub(crate) clock: Clock,
    pub(crate) count: Option<u64>,
    pub(crate) deadline: Option<Nanos>,
    pub(crate) warm_count: Option<u64>,
    pub(crate) cool_count: Option<u64>,
    pub(crate) think: ThinkTime,
    /// A trace replay's speed-up: it scales the recorded delays of a trace's sessions.
    pub(crate) speedup: Option<f64>,
    pub(crate) stop: CancellationToken,
    pub(crate) cancel: CancellationToken,
    pub(crate) hard: CancellationToken,
    pub(crate) tx: mpsc::UnboundedSender<RequestRecord>,
    pub(crate) shared: Arc<Shared>,
}

impl<B: Backend> SessionCtx<B> {
    /// Runs session number `number`, released at `scheduled` and given its slot at `slot`;
    /// the slot `permit` is held until the session ends.
    pub(crate) async fn run(
        self,
        conv: Arc<ConversationSpec>,
        number: u64,
        scheduled: Nanos,
        slot: Nanos,
        permit: Option<OwnedSemaphorePermit>,
    ) {
        let tally = &self.shared.sessions;
        tally.used.store(true, Ordering::Relaxed);
        let end = self.turns(conv, number, scheduled, slot).await;
        let counter = match end {
            SessionEnd::NotStarted => None,
            SessionEnd::Completed => Some(&tally.completed),
            SessionEnd::Cut => Some(&tally.cut),
            SessionEnd::Errored => Some(&tally.errored),
        };
        if let Some(c) = counter {
            tally.started.fetch_add(1, Ordering::Relaxed);
            c.fetch_add(1, Ordering::Relaxed);
        }
        drop(permit);
    }

    async fn turns(
        &self,
        conv: Arc<ConversationSpec>,
        number: u64,
        mut scheduled: Nanos,
        mut slot: Nanos,
    ) -> SessionEnd {
        let mut replies: Vec<(Arc<str>, u32)> = Vec::with_capacity(conv.turns.len());
        // The first turn's dispatch: every turn's record carries it (the session duration).
        let mut session_start: Option<Nanos> = None;
        let cut = |k: usize| {
            if k == 0 {
                SessionEnd::NotStarted
            } else {
                SessionEnd::Cut
            }
        };
        for k in 0..conv.turns.len() {
            if k > 0 {
                scheduled = self
                    .clock
                    .now()
                    .saturating_add(self.pause(&conv, number, k));
                tokio::select! {
                    biased;
                    _ = self.stop.cancelled() => return SessionEnd::Cut,
                    _ = wait_until(&self.clock, scheduled) => {}
                }
                slot = self.clock.now();
            }
            if self.stop.is_cancelled() || self.deadline.is_some_and(|d| slot >= d) {
                return cut(k);
            }
            let Some(id) = self.shared.reserve_id(self.count) else {
                return cut(k);
            };
            if self.warm_count == Some(id) {
                self.shared.window_open.store(slot, Ordering::Relaxed);
            }
            if self.cool_count == Some(id) {
                self.shared.window_close.store(slot, Ordering::Relaxed);
            }
            let turn = TurnRequest {
                conversation: conv.clone(),
                replies: replies.clone(),
            };
            let (mut record, reply) = self.send(turn, id, scheduled, slot).await;
            let start = *session_start.get_or_insert(record.dispatched);
            record.session = Some(SessionTurn {
                session: number,
                turn: k as u32 + 1,
                turns: conv.turns.len() as u32,
                start,
            });
            let outcome = record.outcome.clone();
            let output_tokens = record.output_tokens;
            // The receiver lives until every sender is gone; a send error is impossible.
            let _ = self.tx.send(record);
            match outcome {
                Outcome::Completed => {}
                Outcome::Cancelled => return SessionEnd::Cut,
                failed => {
                    // A user told to retry later waits before the next session takes its slot.
                    if let Some(wait) = failed.retry_after() {
                        retry_pause(&self.clock, wait, self.deadline, &self.stop).await;
                    }
                    return SessionEnd::Errored;
                }
            }
            replies.push((Arc::from(reply.unwrap_or_default()), output_tokens));
        }
        SessionEnd::Completed
    }

    /// The pause (ns) after the answer before turn `k` (from 1): a trace session's recorded
    /// delay (the turn's `at`), scaled by the replay's speed-up; else the think time.
    fn pause(&self, conv: &ConversationSpec, number: u64, k: usize) -> Nanos {
        match conv.turns.get(k).and_then(|t| t.at) {
            Some(delay) => (delay as f64 / self.speedup.unwrap_or(1.0)).round() as Nanos,
            None => self.think.pause(number, k as u64).as_nanos() as u64,
        }
    }

    async fn send(
        &self,
        turn: TurnRequest,
        id: u64,
        scheduled: Nanos,
        slot: Nanos,
    ) -> (RequestRecord, Option<String>) {
        let dispatch = Dispatch {
            id,
            clock: self.clock,
            scheduled,
            slot,
        };
        let prompt_tokens = turn.prompt_tokens();
        let requested = turn.current().and_then(|t| t.output_tokens);
        self.shared.in_flight.fetch_add(1, Ordering::Relaxed);
        let r = tokio::select! {
            biased;
            r = self.backend.send_turn(turn, dispatch, self.cancel.clone()) => r,
            _ = self.hard.cancelled() => {
                self.shared.abandoned.fetch_add(1, Ordering::Relaxed);
                (abandoned(&dispatch, prompt_tokens, requested), None)
            }
        };
        self.shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        r
    }
}
