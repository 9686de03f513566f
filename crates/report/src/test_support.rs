//! Fixtures shared by the crate's unit tests.

use std::time::SystemTime;

use bench_core::{Chunk, Nanos, Outcome, RequestRecord, Strategy, TokenSource};

use crate::figures::model::BenchmarkReport;
use crate::figures::options::StatsOptions;
use crate::figures::stats::{Accumulator, BenchmarkMeta};

/// A completed request dispatched at `dispatched` whose chunks (one answer token each) came
/// at `chunks` and which ended at `end`; 8 prompt tokens, the counts from the usage.
pub fn record(dispatched: Nanos, chunks: &[Nanos], end: Nanos) -> RequestRecord {
    RequestRecord {
        target: None,
        model: None,
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

/// 40 constant-rate requests 100 ms apart (a 4 s window) whose `i`th lasts `lat(i)` ms, one
/// prompt token each.
pub fn open_loop(lat: impl Fn(u64) -> u64) -> BenchmarkReport {
    const MS: Nanos = 1_000_000;
    let mut acc = Accumulator::new(&StatsOptions::default());
    for i in 0..40 {
        let (sent, end) = (i * 100, i * 100 + lat(i));
        acc.add(RequestRecord {
            target: None,
            model: None,
            prompt_tokens: 1,
            ..record(sent * MS, &[(sent + 1) * MS, end * MS], end * MS)
        });
    }
    let constant = Strategy::Constant {
        rate: 10.0,
        max_concurrency: None,
    };
    acc.finish(BenchmarkMeta::new(
        constant,
        0,
        4_000 * MS,
        SystemTime::UNIX_EPOCH,
    ))
}
