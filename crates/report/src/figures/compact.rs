//! What the accumulator keeps of one request ([`Compact`]: a few numbers and where its chunks
//! are), and the nanoseconds-to-microseconds conversion every figure is recorded in.

use bench_core::{Nanos, Phase, RequestRecord, Status, TokenSource, Window};

use crate::figures::chunks::{ChunkStore, Chunks, Reasoning};

/// What is kept of one request: a few numbers, and where its chunks are in the benchmark's
/// [`ChunkStore`] (128 bytes; docs/performance.md).
#[derive(Debug, Clone)]
pub(crate) struct Compact {
    pub(crate) scheduled: Nanos,
    pub(crate) slot: Nanos,
    pub(crate) dispatched: Nanos,
    pub(crate) end: Nanos,
    pub(crate) first: Option<Nanos>,
    pub(crate) last: Option<Nanos>,
    pub(crate) prompt_tokens: u32,
    pub(crate) output_tokens: u32,
    pub(crate) prompt_source: TokenSource,
    pub(crate) output_source: TokenSource,
    pub(crate) status: Status,
    /// The session turn, from 1; 0 for a single request (it fits in the padding).
    pub(crate) turn: u32,
    /// The session request sent a tool result (docs/metrics.md, "Tool calls").
    pub(crate) tool_result: bool,
    pub(crate) error_kind: Option<Box<str>>,
    pub(crate) chunks: Chunks,
}

impl Compact {
    pub(crate) fn from_record(r: &RequestRecord, store: &mut ChunkStore) -> Self {
        let first = r.first_token();
        let status = r.status();
        Self {
            scheduled: r.scheduled,
            slot: r.slot,
            dispatched: r.dispatched,
            end: r.end,
            first,
            last: r.last_token(),
            prompt_tokens: r.prompt_tokens,
            output_tokens: r.output_tokens,
            prompt_source: r.prompt_tokens_source,
            output_source: r.output_tokens_source,
            status,
            turn: r.session.map_or(0, |s| s.turn.max(1)),
            tool_result: r
                .session
                .is_some_and(|s| s.kind == bench_core::TurnKind::ToolResult),
            error_kind: (status == Status::Errored).then(|| r.outcome.kind_name().into()),
            chunks: store.push(r, first),
        }
    }

    /// The window phase of the request (the one rule, [`Window::phase`]).
    pub(crate) fn phase(&self, window: &Window) -> Phase {
        window.phase(self.dispatched, self.end)
    }

    /// Prompt and output tokens.
    pub(crate) fn tokens(&self) -> (u32, u32) {
        (self.prompt_tokens, self.output_tokens)
    }

    /// Whether the latency distributions take this request: completed, and sent and ended in
    /// the steady state when they take one (the request is already known to be in the
    /// window).
    pub(crate) fn in_latency_scope(&self, steady: Option<bench_core::Steady>) -> bool {
        self.status == Status::Completed
            && steady.is_none_or(|s| s.holds(self.dispatched, self.end))
    }

    /// End-to-end latency, `t_end - t_send`.
    pub(crate) fn e2el(&self) -> Nanos {
        self.end.saturating_sub(self.dispatched)
    }

    /// Time to first token, `t_first - t_send`, when a chunk arrived.
    pub(crate) fn ttft(&self) -> Option<Nanos> {
        self.first.map(|f| f.saturating_sub(self.dispatched))
    }

    /// TPOT in microseconds, `(t_last - t_first) / (n - 1)`, when `n >= 2`.
    pub(crate) fn tpot_us(&self) -> Option<f64> {
        match (self.first, self.last) {
            (Some(f), Some(l)) if self.output_tokens > 1 => {
                Some(us(l.saturating_sub(f)) / (self.output_tokens - 1) as f64)
            }
            _ => None,
        }
    }

    /// Every gap between consecutive content chunks, microseconds.
    pub(crate) fn itl_us<'a>(&self, store: &'a ChunkStore) -> impl Iterator<Item = f64> + 'a {
        let o = store.offsets(&self.chunks);
        o.clone()
            .zip(o.skip(1))
            .map(|(a, b)| b.saturating_sub(a) as f64)
    }

    /// Every gap between two consecutive chunks of the same phase, microseconds, with whether
    /// that phase is reasoning. The gap from the last reasoning chunk to the first answer
    /// chunk belongs to neither phase.
    pub(crate) fn phase_itl_us<'a>(
        &self,
        store: &'a ChunkStore,
    ) -> impl Iterator<Item = (bool, f64)> + 'a {
        let c = self.chunks;
        let o = store.offsets(&c);
        o.clone()
            .zip(o.skip(1))
            .enumerate()
            .filter_map(move |(i, (t0, t1))| {
                let (a, b) = (store.is_reasoning(&c, i), store.is_reasoning(&c, i + 1));
                (a == b).then(|| (a, t1.saturating_sub(t0) as f64))
            })
    }

    /// The request's reasoning, when it carried any.
    pub(crate) fn reasoning<'a>(&self, store: &'a ChunkStore) -> Option<&'a Reasoning> {
        store.reasoning(&self.chunks)
    }

    /// Time to first output token, `t_first_answer - t_send`: TTFT for a response without
    /// reasoning; `None` when no answer chunk arrived.
    pub(crate) fn ttfo(&self, store: &ChunkStore) -> Option<Nanos> {
        let first_answer = match store.reasoning(&self.chunks) {
            Some(r) => r.first_answer,
            None => self.first,
        };
        first_answer.map(|f| f.saturating_sub(self.dispatched))
    }

    /// Reasoning duration, `t_first_answer - t_first`, when the first chunk was reasoning and
    /// an answer chunk followed.
    pub(crate) fn reasoning_time(&self, store: &ChunkStore) -> Option<Nanos> {
        let r = store.reasoning(&self.chunks)?;
        if !store.is_reasoning(&self.chunks, 0) {
            return None;
        }
        Some(r.first_answer?.saturating_sub(self.first?))
    }

    /// Output tokens attributed to each chunk's arrival (ns): the measured output count spread
    /// over the chunks in proportion to their tokens; all at `end` when there were no chunks.
    pub(crate) fn token_arrivals<'a>(
        &'a self,
        store: &'a ChunkStore,
    ) -> impl Iterator<Item = (Nanos, f64)> + 'a {
        let us = store.offsets(&self.chunks);
        let n = self.output_tokens as f64;
        let first = self.first.filter(|_| us.len() > 0);
        let scale = match first {
            Some(_) => {
                let total: f64 = (0..us.len()).map(|i| store.weight(&self.chunks, i)).sum();
                if total > 0.0 {
                    n / total
                } else {
                    0.0
                }
            }
            None => 0.0,
        };
        let per_chunk = first.into_iter().flat_map(move |f| {
            us.clone()
                .enumerate()
                .map(move |(i, u)| (f + u as u64 * 1_000, store.weight(&self.chunks, i) * scale))
        });
        per_chunk.chain(first.is_none().then_some((self.end, n)))
    }
}

/// Nanoseconds as microseconds (the unit of every histogram).
pub(crate) fn us(ns: Nanos) -> f64 {
    ns as f64 / 1_000.0
}
