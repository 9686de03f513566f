//! Output tokens arriving in a benchmark's window, as a time series: the token rate of the loads
//! that are the same from the first instant (docs/metrics.md, "Rates") is read over the window
//! after its start transient, not over all of it.
//!
//! Why: at the start of a `throughput` benchmark the client opens its connections and sends
//! its first hundred-odd requests at once; while it does, it reads the first tokens late and
//! then in a burst. The window's producing span opens at the first token as the client stamped
//! it, so a late stamp shortened the span while every token still counted: a 5 s `throughput`
//! benchmark of 128 streams against the default simulator read up to 3.3% over the simulator's
//! own log of the same window on a quiet machine (34.87 req/s against 33.74), 5.4% over the
//! closed form with the cores busy. Reading the rate from a tenth of the way into the producing
//! span on ([`SKIP_FRACTION`]) leaves the transient (connection set-up, the first prefill, the
//! late reads) out of both the count and the span.

use crate::{Nanos, RequestRecord};

/// The fraction of the producing span (first output token to the window's close) the token
/// rate skips.
pub const SKIP_FRACTION: f64 = 0.1;

/// Bins the series holds at most; past them, neighbours merge and the bin width doubles.
const MAX_BINS: usize = 2048;

/// The first bin width (ns).
const FIRST_WIDTH: Nanos = 5_000_000;

/// Output tokens arriving in a window, binned by arrival time from the window's opening: 5 ms
/// bins at first, doubling in width whenever the series outgrows `MAX_BINS` (a 10 s window
/// keeps 5 ms bins, an hour about 2 s ones).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TokenArrivals {
    origin: Option<Nanos>,
    width: Nanos,
    bins: Vec<f64>,
}

impl TokenArrivals {
    /// `tokens` output tokens arriving at `at`, in a window opening at `open` (the same
    /// `open` at every call; arrivals before it count in the first bin).
    pub fn add(&mut self, open: Nanos, at: Nanos, tokens: f64) {
        let i = self.index(open, at);
        self.bins[i] += tokens;
    }

    /// Every `(at, tokens)` of `arrivals` (in time order, as a request's chunks come), in a
    /// window opening at `open`: one bin lookup per bin a request's chunks fall in, not one
    /// per chunk (the collector takes 128 chunks a request at 15,000 req/s).
    pub fn add_all(&mut self, open: Nanos, arrivals: impl IntoIterator<Item = (Nanos, f64)>) {
        let mut bin: Option<(usize, Nanos)> = None;
        let mut sum = 0.0;
        for (at, tokens) in arrivals {
            match bin {
                Some((_, end)) if at < end => sum += tokens,
                _ => {
                    if let Some((i, _)) = bin {
                        self.bins[i] += sum;
                    }
                    let i = self.index(open, at);
                    let origin = self.origin.unwrap_or(open);
                    bin = Some((i, origin + (i as Nanos + 1) * self.width));
                    sum = tokens;
                }
            }
        }
        if let Some((i, _)) = bin {
            self.bins[i] += sum;
        }
    }

    /// The bin of `at` (anchoring the series at `open` on first use), coarsening and growing
    /// the series as needed.
    fn index(&mut self, open: Nanos, at: Nanos) -> usize {
        let origin = *self.origin.get_or_insert(open);
        if self.width == 0 {
            self.width = FIRST_WIDTH;
        }
        let mut i = (at.saturating_sub(origin) / self.width) as usize;
        while i >= MAX_BINS {
            self.coarsen();
            i = (at.saturating_sub(origin) / self.width) as usize;
        }
        if i >= self.bins.len() {
            self.bins.resize(i + 1, 0.0);
        }
        i
    }

    /// The output tokens of `r` arriving in `[open, close]`: its output count spread over its
    /// chunks in proportion to the tokens each carried, all at its end when it had no chunk.
    pub fn add_record(&mut self, r: &RequestRecord, open: Nanos, close: Nanos) {
        let inside = |t: Nanos| t >= open && t <= close;
        if r.chunks.is_empty() {
            if inside(r.end) {
                self.add(open, r.end, f64::from(r.output_tokens));
            }
            return;
        }
        let all: u64 = r.chunks.iter().map(|c| u64::from(c.tokens)).sum();
        if all == 0 {
            return;
        }
        let per = f64::from(r.output_tokens) / all as f64;
        let chunks = r.chunks.iter().filter(|c| inside(c.at) && c.tokens > 0);
        self.add_all(open, chunks.map(|c| (c.at, per * f64::from(c.tokens))));
    }

    /// Every token of the series.
    pub fn total(&self) -> f64 {
        self.bins.iter().sum()
    }

    /// Tokens per second over `[from, close]` past the start transient: from the first bin
    /// boundary at or after `from + SKIP_FRACTION × (close - from)` to `close` (`from` is the
    /// producing span's opening, the first output token). Over the whole `[from, close]` when
    /// no bin boundary lies before `close`; 0 for an empty span. Tokens in bins that start at or
    /// after `close` are not counted.
    pub fn rate(&self, from: Nanos, close: Nanos) -> f64 {
        let span = close.saturating_sub(from);
        if span == 0 {
            return 0.0;
        }
        let whole = self.total() / (span as f64 / 1e9);
        let Some(origin) = self.origin else {
            return whole;
        };
        let skip_to = from + (span as f64 * SKIP_FRACTION) as Nanos;
        let first = skip_to.saturating_sub(origin).div_ceil(self.width);
        let at = origin + first * self.width;
        if at >= close {
            return whole;
        }
        let last = close.saturating_sub(origin).div_ceil(self.width);
        let tokens: f64 = self
            .bins
            .iter()
            .take(last as usize)
            .skip(first as usize)
            .sum();
        tokens / ((close - at) as f64 / 1e9)
    }

    fn coarsen(&mut self) {
        self.bins = self.bins.chunks(2).map(|p| p.iter().sum()).collect();
        self.width *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn a_record_spreads_its_count_over_its_chunks() {
        let r = RequestRecord {
            target: None,
            model: None,
            cached_tokens: None,
            session: None,
            reasoning: None,
            images: None,
            id: 0,
            scheduled: 0,
            slot: 0,
            dispatched: 0,
            headers: None,
            chunks: vec![crate::Chunk::answer(10, 1), crate::Chunk::answer(20, 3)],
            end: 30,
            prompt_tokens: 1,
            prompt_tokens_source: crate::TokenSource::Usage,
            output_tokens: 8,
            output_tokens_source: crate::TokenSource::Usage,
            requested_output_tokens: None,
            outcome: crate::Outcome::Completed,
        };
        let (mut early, mut late) = (TokenArrivals::default(), TokenArrivals::default());
        early.add_record(&r, 0, 15);
        late.add_record(&r, 15, 30);
        assert_eq!((early.total(), late.total()), (2.0, 6.0));
    }

    #[test]
    fn a_late_burst_of_first_reads_does_not_lift_the_rate() {
        // 1,000 tokens/s from 40 ms to 5 s, but the client read the first 100 ms of them at
        // 140 ms in one burst: the whole producing span from the first stamp (140 ms) reads
        // 100 tokens too many over a span 100 ms short, the skipped one the true rate.
        let mut a = TokenArrivals::default();
        a.add(0, 140 * MS, 100.0);
        for ms in 140..5000 {
            a.add(0, ms * MS, 1.0);
        }
        let whole = a.total() / 4.86;
        assert!(whole > 1020.0, "{whole}");
        let r = a.rate(140 * MS, 5000 * MS);
        assert!((r - 1000.0).abs() < 1.0, "{r}");
    }

    #[test]
    fn the_rate_starts_at_a_bin_boundary_and_counts_what_follows_it() {
        let mut a = TokenArrivals::default();
        for ms in 0..1000 {
            a.add(0, ms * MS, 2.0);
        }
        // Skip to 100 ms exactly (a boundary): 900 ms of 2 tokens per ms.
        assert!((a.rate(0, 1000 * MS) - 2000.0).abs() < 1e-6);
        // From 3 ms: skip to 102.7 ms, so from the 105 ms boundary.
        assert!((a.rate(3 * MS, 1000 * MS) - 2000.0).abs() < 1e-6);
    }

    #[test]
    fn adding_in_bulk_is_adding_one_by_one() {
        let times: Vec<(Nanos, f64)> = (0..5000u64).map(|i| (i * 7 * MS / 3, 1.5)).collect();
        let (mut one, mut bulk) = (TokenArrivals::default(), TokenArrivals::default());
        for &(at, t) in &times {
            one.add(2 * MS, at, t);
        }
        for part in times.chunks(97) {
            bulk.add_all(2 * MS, part.iter().copied());
        }
        assert_eq!(one, bulk);
        assert!(one.width > FIRST_WIDTH, "the series coarsened");
    }

    #[test]
    fn a_long_series_coarsens_and_keeps_every_token() {
        let mut a = TokenArrivals::default();
        for s in 0..3600u64 {
            a.add(0, s * 1_000 * MS, 10.0);
        }
        assert_eq!(a.total(), 36_000.0);
        assert!(a.bins.len() <= MAX_BINS);
        let r = a.rate(0, 3600 * 1_000 * MS);
        assert!((r - 10.0).abs() < 0.01, "{r}");
    }

    #[test]
    fn short_or_empty_spans_read_the_whole_span() {
        let a = TokenArrivals::default();
        assert_eq!(a.rate(0, 0), 0.0);
        assert_eq!(a.rate(0, MS), 0.0);
        let mut b = TokenArrivals::default();
        b.add(0, 0, 4.0);
        // A 2 ms span: the skip point's boundary (5 ms) lies past the close.
        assert!((b.rate(0, 2 * MS) - 2000.0).abs() < 1e-6);
    }
}
