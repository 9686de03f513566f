//! Fixtures shared by the crate's unit tests.

use bench_core::{Chunk, Nanos, Outcome, RequestRecord, TokenSource};

/// A completed request dispatched at `dispatched` whose chunks (one answer token each) came
/// at `chunks` and which ended at `end`; 8 prompt tokens, the counts from the usage.
pub(crate) fn record(dispatched: Nanos, chunks: &[Nanos], end: Nanos) -> RequestRecord {
    RequestRecord {
        cached_tokens: None,
        session: None,
        reasoning: None,
        images: None,
        id: 0,
        scheduled: dispatched,
        slot: dispatched,
        dispatched,
        headers: None,
        chunks: chunks.iter().map(|&at| Chunk::answer(at, 1)).collect(),
        end,
        prompt_tokens: 8,
        prompt_tokens_source: TokenSource::Usage,
        output_tokens: chunks.len() as u32,
        output_tokens_source: TokenSource::Usage,
        requested_output_tokens: None,
        outcome: Outcome::Completed,
    }
}
