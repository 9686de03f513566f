//! The chunks of every request of a benchmark, in buffers shared by all of them: arrival
//! offsets from the request's first chunk (microseconds, saturating) and, only for the
//! requests that need them, the tokens per chunk and which chunks were reasoning. Not one
//! `Vec` per request: a few allocations per benchmark instead of one or two per request, and
//! nothing left scattered over the allocator's heaps when the benchmark ends
//! (docs/reliability.md, Soak).
//!
//! The offsets are most of a benchmark's memory (at 15,000 requests/s of 128 chunks, 1.9
//! million chunks a second). A request whose gaps between chunks are all under 65,536 µs
//! (nearly every request of a streaming server) keeps them as `u16` gaps, 2 bytes a chunk,
//! read back as the same offsets by summing; any other keeps its `u32` offsets, 4 bytes a
//! chunk (docs/performance.md).

use bench_core::{Nanos, Pages, RequestRecord, TokenSource};

/// Where one request's chunks are in a [`ChunkStore`]: `count()` offsets from `start`, narrow
/// or wide, and, for the few requests that need more (chunks of several tokens, reasoning), an
/// entry of the store's side table ([`NO_SIDE`] for none), so the common entry stays 16 bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chunks {
    start: u64,
    /// The chunk count, and [`WIDE`] when the offsets are kept as `u32`.
    len: u32,
    side: u32,
}

/// The bit of [`Chunks::len`] that says the offsets are wide.
const WIDE: u32 = 1 << 31;

impl Default for Chunks {
    fn default() -> Self {
        Self {
            start: 0,
            len: 0,
            side: NO_SIDE,
        }
    }
}

impl Chunks {
    /// How many chunks the request had (at most 2^31 - 1 are kept).
    fn count(&self) -> usize {
        (self.len & !WIDE) as usize
    }

    fn is_wide(&self) -> bool {
        self.len & WIDE != 0
    }
}

/// No side-table entry.
const NO_SIDE: u32 = u32::MAX;

/// What a request needs kept beyond its chunks' arrival offsets.
#[derive(Debug, Clone, Copy, Default)]
struct Side {
    /// Where its chunks' token counts are in the store (`None`: one token each).
    tokens: Option<u64>,
    /// Its reasoning, when it carried any.
    reasoning: Option<Reasoning>,
}

/// One request's reasoning (docs/metrics.md, "Reasoning").
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reasoning {
    /// Reasoning tokens (part of the output tokens) and where the count came from.
    pub(crate) tokens: u32,
    pub(crate) source: TokenSource,
    /// Where its chunks' reasoning flags are in the store (`None`: no chunk was reasoning).
    flags: Option<u64>,
    /// The first answer chunk's arrival, exact.
    pub(crate) first_answer: Option<Nanos>,
}

/// The chunk buffers of one benchmark (see the module's text).
#[derive(Debug, Clone)]
pub(crate) struct ChunkStore {
    /// Gaps between consecutive offsets (the first from 0), for the narrow requests.
    gaps: Pages<u16>,
    /// Offsets, for the wide requests.
    offsets: Pages<u32>,
    tokens: Pages<u32>,
    reasoning: Pages<bool>,
    sides: Vec<Side>,
}

/// Items per page of the chunk buffers (128 KiB of gaps, 256 KiB of offsets).
const CHUNK_PAGE: usize = 1 << 16;

impl Default for ChunkStore {
    fn default() -> Self {
        Self {
            gaps: Pages::new(CHUNK_PAGE),
            offsets: Pages::new(CHUNK_PAGE),
            tokens: Pages::new(CHUNK_PAGE),
            reasoning: Pages::new(CHUNK_PAGE),
            sides: Vec::new(),
        }
    }
}

/// The arrival offsets of one request's chunks, microseconds from its first chunk, as kept.
#[derive(Debug, Clone)]
pub(crate) enum Offsets<'a> {
    /// Summed from `u16` gaps; `at` is the last offset read.
    Narrow {
        gaps: std::slice::Iter<'a, u16>,
        at: u32,
    },
    Wide(std::slice::Iter<'a, u32>),
}

impl Iterator for Offsets<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        match self {
            Offsets::Narrow { gaps, at } => {
                *at = at.saturating_add(u32::from(*gaps.next()?));
                Some(*at)
            }
            Offsets::Wide(o) => o.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Offsets::Narrow { gaps, .. } => gaps.size_hint(),
            Offsets::Wide(o) => o.size_hint(),
        }
    }
}

impl ExactSizeIterator for Offsets<'_> {}

impl ChunkStore {
    /// Stores `r`'s chunks, as offsets from `first` (no offsets when there is no first chunk).
    pub(crate) fn push(&mut self, r: &RequestRecord, first: Option<Nanos>) -> Chunks {
        let side = Side {
            tokens: None,
            reasoning: r.reasoning.map(|rt| Reasoning {
                tokens: rt.tokens,
                source: rt.source,
                flags: None,
                first_answer: r.first_answer(),
            }),
        };
        let Some(f) = first else {
            return Chunks {
                side: self.side(side),
                ..Chunks::default()
            };
        };
        let n = r.chunks.len().min((WIDE - 1) as usize);
        let offsets = r.chunks[..n]
            .iter()
            .map(|c| (c.at.saturating_sub(f) / 1_000).min(u32::MAX as u64) as u32);
        let (start, wide) = self.push_offsets(offsets);
        let side = self.push_side(r, n, side);
        Chunks {
            start,
            len: n as u32 | if wide { WIDE } else { 0 },
            side,
        }
    }

    /// Keeps one request's offsets, as gaps when every gap fits in a `u16`; their position,
    /// and whether they are wide. Offsets arrive in order (chunks are stamped as they are
    /// read); a later one below an earlier reads back as the earlier (a gap of 0).
    fn push_offsets(&mut self, offsets: impl ExactSizeIterator<Item = u32> + Clone) -> (u64, bool) {
        let mut prev = 0u32;
        let gaps = offsets.clone().map(move |o| {
            let gap = o.saturating_sub(prev);
            prev = prev.max(o);
            gap
        });
        if gaps.clone().all(|g| g <= u32::from(u16::MAX)) {
            (self.gaps.push_run(gaps.map(|g| g as u16)), false)
        } else {
            (self.offsets.push_run(offsets), true)
        }
    }

    /// The side entry of `r`'s first `n` chunks: their token counts unless all are 1, their
    /// reasoning flags when any chunk was reasoning.
    fn push_side(&mut self, r: &RequestRecord, n: usize, mut side: Side) -> u32 {
        let chunks = &r.chunks[..n];
        if !chunks.iter().all(|c| c.tokens == 1) {
            side.tokens = Some(self.tokens.push_run(chunks.iter().map(|c| c.tokens)));
        }
        if let Some(rs) = side.reasoning.as_mut() {
            if chunks.iter().any(|c| c.reasoning) {
                rs.flags = Some(self.reasoning.push_run(chunks.iter().map(|c| c.reasoning)));
            }
        }
        self.side(side)
    }

    /// Keeps `side` when it holds anything; its index, or [`NO_SIDE`].
    fn side(&mut self, side: Side) -> u32 {
        if side.tokens.is_none() && side.reasoning.is_none() {
            return NO_SIDE;
        }
        match u32::try_from(self.sides.len()) {
            Ok(i) if i != NO_SIDE => {
                self.sides.push(side);
                i
            }
            // Four billion requests with reasoning in one benchmark: not kept.
            _ => NO_SIDE,
        }
    }

    fn side_of(&self, c: &Chunks) -> Option<&Side> {
        self.sides.get(c.side as usize)
    }

    /// The arrival offsets of `c`, microseconds from its first chunk.
    pub(crate) fn offsets(&self, c: &Chunks) -> Offsets<'_> {
        if c.is_wide() {
            Offsets::Wide(self.offsets.run(c.start, c.count()).iter())
        } else {
            Offsets::Narrow {
                gaps: self.gaps.run(c.start, c.count()).iter(),
                at: 0,
            }
        }
    }

    /// Tokens of the `i`-th chunk of `c`.
    pub(crate) fn weight(&self, c: &Chunks, i: usize) -> f64 {
        self.side_of(c)
            .and_then(|s| s.tokens)
            .and_then(|t| self.tokens.get(t, i))
            .copied()
            .unwrap_or(1) as f64
    }

    /// The reasoning of the request whose chunks are `c`.
    pub(crate) fn reasoning(&self, c: &Chunks) -> Option<&Reasoning> {
        self.side_of(c).and_then(|s| s.reasoning.as_ref())
    }

    /// Whether the `i`-th chunk of `c` was reasoning.
    pub(crate) fn is_reasoning(&self, c: &Chunks, i: usize) -> bool {
        self.reasoning(c)
            .and_then(|r| r.flags)
            .and_then(|f| self.reasoning.get(f, i))
            .copied()
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request whose chunks came at these offsets (µs) from its first, plus 999 ns each.
    fn record(at_us: &[u64]) -> RequestRecord {
        let at: Vec<Nanos> = at_us
            .iter()
            .map(|&us| 1_000_000 + us * 1_000 + 999)
            .collect();
        crate::test_support::record(0, &at, at.last().map_or(0, |&t| t + 1))
    }

    #[test]
    fn offsets_read_back_exact_narrow_or_wide() {
        let mut store = ChunkStore::default();
        let narrow = [0, 10, 10, 65_545, 70_000];
        let wide = [0, 65_536, 65_600, 4_000_000_000];
        let (a, b) = (record(&narrow), record(&wide));
        let ca = store.push(&a, a.first_token());
        let cb = store.push(&b, b.first_token());
        assert!(!ca.is_wide() && cb.is_wide(), "{ca:?} {cb:?}");
        let back = |c: &Chunks| store.offsets(c).map(u64::from).collect::<Vec<_>>();
        assert_eq!(back(&ca), narrow);
        assert_eq!(back(&cb), wide);
        assert_eq!(store.offsets(&ca).len(), 5);
        // Two bytes a chunk for the narrow request, four for the wide one.
        assert_eq!((store.gaps.len(), store.offsets.len()), (5, 4));
    }

    #[test]
    fn an_offset_below_the_one_before_reads_back_as_it() {
        let mut store = ChunkStore::default();
        let r = record(&[0, 50, 40, 60]);
        let c = store.push(&r, r.first_token());
        assert_eq!(store.offsets(&c).collect::<Vec<_>>(), [0, 50, 50, 60]);
    }
}
