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
    RequestSpec, SessionTurn, ThinkTime, ToolCall, TurnKind, TurnRequest,
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

/// A session's history so far, and the send times of its next request.
struct History {
    replies: Vec<(Arc<str>, u32)>,
    calls: Vec<Option<ToolCall>>,
    /// The first turn's dispatch: every turn's record carries it (the session duration).
    start: Option<Nanos>,
    /// The next request's intended send time and slot.
    times: (Nanos, Nanos),
}

impl History {
    /// The user turn is answered with `text` of `tokens` output tokens.
    fn answered(&mut self, text: Arc<str>, tokens: u32) {
        if self.calls.len() == self.replies.len() {
            self.calls.push(None);
        }
        self.replies.push((text, tokens));
    }
}

/// What one request of a session led to.
enum Step {
    /// A text reply, with its output tokens.
    Text(Arc<str>, u32),
    /// A tool call.
    Call(ToolCall),
    /// The session ended so.
    End(SessionEnd),
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
        scheduled: Nanos,
        slot: Nanos,
    ) -> SessionEnd {
        let mut h = History {
            replies: Vec::with_capacity(conv.turns.len()),
            calls: Vec::with_capacity(conv.turns.len()),
            start: None,
            times: (scheduled, slot),
        };
        for k in 0..conv.turns.len() {
            if k > 0 {
                let at = self
                    .clock
                    .now()
                    .saturating_add(self.pause(&conv, number, k));
                tokio::select! {
                    biased;
                    _ = self.stop.cancelled() => return SessionEnd::Cut,
                    _ = wait_until(&self.clock, at) => {}
                }
                h.times = (at, self.clock.now());
            }
            // The user turn, then (when the server answers it with a tool call) the tool
            // result's turn, sent at once as an agent loop does.
            let mut kind = TurnKind::User;
            loop {
                match self.step(&conv, number, k, kind, &mut h).await {
                    Step::Call(call) if kind == TurnKind::User && conv.tools.is_some() => {
                        h.calls.push(Some(call));
                        kind = TurnKind::ToolResult;
                        let now = self.clock.now();
                        h.times = (now, now);
                    }
                    // A call past the first of a user turn (or without tools) is taken as text.
                    Step::Call(ToolCall {
                        arguments, tokens, ..
                    }) => {
                        h.answered(arguments, tokens);
                        break;
                    }
                    Step::Text(text, tokens) => {
                        h.answered(text, tokens);
                        break;
                    }
                    Step::End(end) => return end,
                }
            }
        }
        SessionEnd::Completed
    }

    /// Sends one request of user turn `k` (its user message or its tool result): the reply
    /// (a text or a tool call), or how the session ended.
    async fn step(
        &self,
        conv: &Arc<ConversationSpec>,
        number: u64,
        k: usize,
        kind: TurnKind,
        h: &mut History,
    ) -> Step {
        let (scheduled, slot) = h.times;
        let cut = || {
            Step::End(if k == 0 && kind == TurnKind::User {
                SessionEnd::NotStarted
            } else {
                SessionEnd::Cut
            })
        };
        if self.stop.is_cancelled() || self.deadline.is_some_and(|d| slot >= d) {
            return cut();
        }
        let Some(id) = self.shared.reserve_id(self.count) else {
            return cut();
        };
        if self.warm_count == Some(id) {
            self.shared.window_open.store(slot, Ordering::Relaxed);
        }
        if self.cool_count == Some(id) {
            self.shared.window_close.store(slot, Ordering::Relaxed);
        }
        let turn = TurnRequest {
            session: number,
            conversation: conv.clone(),
            replies: h.replies.clone(),
            calls: h.calls.clone(),
        };
        let (mut record, reply) = self.send(turn, id, scheduled, slot).await;
        let start = *h.start.get_or_insert(record.dispatched);
        // Only a user message's tool call is answered (with tools); see `turns`.
        let calls = conv.tools.is_some() && kind == TurnKind::User;
        let tool_call = calls
            && record.outcome == Outcome::Completed
            && reply.as_ref().is_some_and(|r| r.tool_call.is_some());
        record.session = Some(SessionTurn {
            session: number,
            turn: k as u32 + 1,
            turns: conv.turns.len() as u32,
            start,
            kind,
            tool_call,
            replica: reply.as_ref().and_then(|r| r.replica),
        });
        let outcome = record.outcome.clone();
        let tokens = record.output_tokens;
        // The receiver lives until every sender is gone; a send error is impossible.
        let _ = self.tx.send(record);
        match outcome {
            Outcome::Completed => {}
            Outcome::Cancelled => return Step::End(SessionEnd::Cut),
            failed => {
                // A user told to retry later waits before the next session takes its slot.
                if let Some(wait) = failed.retry_after() {
                    retry_pause(&self.clock, wait, self.deadline, &self.stop).await;
                }
                return Step::End(SessionEnd::Errored);
            }
        }
        let reply = reply.unwrap_or_default();
        match reply.tool_call {
            Some((id, name)) => Step::Call(ToolCall {
                id,
                name,
                arguments: reply.text.into(),
                tokens,
            }),
            None => Step::Text(reply.text.into(), tokens),
        }
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
    ) -> (RequestRecord, Option<bench_core::Reply>) {
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
