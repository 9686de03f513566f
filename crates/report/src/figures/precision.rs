//! `--precision` (docs/metrics.md, "Precision"): whether a benchmark's key figures are sure
//! enough, judged on its final intervals ([`judge`]), and the cheap running estimate that
//! decides when to stop it ([`PrecisionCheck`]).
//!
//! The check cannot afford the report's own pass while the benchmark runs (at 10,000 req/s
//! with 128 chunks a request that pass costs about a second per minute of data), so it keeps
//! running tallies instead: the completed requests in time bins (by end for throughput, by
//! send time for the TTFT and ITL distributions; at most [`ITL_SAMPLES`] evenly spaced gaps
//! of each request), at most [`MAX_BINS`] of them, the bins doubling in width as the
//! benchmark grows. Each check groups the bins into the batches the
//! report would cut (the same span rule, [`bench_core::Steady`], and the same batch count and
//! Student's t, [`crate::figures::interval`]), to the nearest bin. It is an estimate of the report's
//! intervals, not the report's verdict: the report judges its own intervals when the benchmark
//! ends, and says so.

use bench_core::{Nanos, Precision, RequestRecord, Status, Steady, Strategy, Window};

use crate::figures::hist::Dist;
use crate::figures::interval::{around, needs, Interval, Intervals, MAX_BATCHES, MIN_BATCHES};
use crate::figures::model::{BenchmarkReport, HalfWidths, PrecisionReport};

/// `(high - low) / (high + low)`: the half-width relative to the interval's centre, which is
/// the figure; 0 for an interval of no width (every batch alike, a figure of 0 included),
/// `None` for a figure of 0 or less with a width.
fn relative(i: Interval) -> Option<f64> {
    let centre = (i.high + i.low) / 2.0;
    if i.high <= i.low {
        Some(0.0)
    } else {
        (centre > 0.0).then(|| (i.high - i.low) / 2.0 / centre)
    }
}

/// The relative half-widths of the key figures' intervals `iv`.
pub fn half_widths(iv: Option<&Intervals>) -> HalfWidths {
    iv.map_or(HalfWidths::default(), |iv| {
        let median = |key: &str| {
            iv.metrics
                .get(key)
                .and_then(|m| m.median)
                .and_then(relative)
        };
        HalfWidths {
            requests_per_s: relative(iv.requests_per_s),
            output_tokens_per_s: relative(iv.output_tokens_per_s),
            ttft_median: median("ttft_ms"),
            itl_median: median("itl_ms"),
        }
    })
}

/// Judges benchmark `b` against `p` on its final intervals.
pub fn judge(b: &BenchmarkReport, p: &Precision) -> PrecisionReport {
    let half_widths = half_widths(b.intervals.as_ref());
    PrecisionReport {
        target: p.target,
        budget_s: p.budget_s,
        met: p.met(
            &half_widths.key_figures(),
            b.tokens.output.completed.total > 0,
        ),
        half_widths,
    }
}

/// The most bins a [`PrecisionCheck`] keeps.
pub const MAX_BINS: usize = 128;
/// The most ITL gaps of one request the estimate takes.
pub const ITL_SAMPLES: usize = 16;
/// The first bins' width: 50 ms.
const FIRST_BIN: Nanos = 50_000_000;

/// One time bin of a [`PrecisionCheck`].
#[derive(Debug, Clone, Default)]
struct Bin {
    /// Measured completed requests that ended in it, and their output tokens.
    ended: f64,
    tokens: f64,
    /// Measured requests the client cancelled on purpose that ended in it: they left the
    /// server, as the completed ones did ([`PrecisionCheck::falling_behind`]).
    cancelled: f64,
    /// TTFT and ITL (microseconds) of the measured completed requests sent in it.
    ttft: Dist,
    itl: Dist,
}

impl Bin {
    fn merge(&mut self, other: &Bin) {
        self.ended += other.ended;
        self.tokens += other.tokens;
        self.cancelled += other.cancelled;
        self.ttft.merge(&other.ttft);
        self.itl.merge(&other.itl);
    }
}

/// The running estimate of one benchmark's key intervals (see the module's notes).
#[derive(Debug, Clone)]
pub struct PrecisionCheck {
    strategy: Strategy,
    start: Nanos,
    /// The window's opening when known in advance (`None`: a warmup by count, which the
    /// first measured send stands for).
    known_open: Option<Nanos>,
    width: Nanos,
    bins: Vec<Bin>,
    /// End-to-end latencies of the measured completed requests (the fill time).
    e2el: Dist,
    /// The first send of a measured request.
    open: Option<Nanos>,
}

impl PrecisionCheck {
    /// A check of a benchmark of load `strategy` that started at `start` (run clock), with
    /// with its window opening at `open` (`start` without a warmup; `None` when a warmup by
    /// count opens it, at a send not known in advance).
    pub fn new(strategy: Strategy, start: Nanos, open: Option<Nanos>) -> Self {
        Self {
            strategy,
            start,
            known_open: open,
            width: FIRST_BIN,
            bins: Vec::new(),
            e2el: Dist::new(),
            open: None,
        }
    }

    /// Index of the bin holding `t`, halving the bins' count (doubling their width) until it
    /// fits under [`MAX_BINS`].
    fn bin(&mut self, t: Nanos) -> usize {
        let mut i = (t.saturating_sub(self.start) / self.width) as usize;
        while i >= MAX_BINS {
            let pairs: Vec<Bin> = self
                .bins
                .chunks(2)
                .map(|c| {
                    let mut b = c[0].clone();
                    if let Some(o) = c.get(1) {
                        b.merge(o);
                    }
                    b
                })
                .collect();
            self.bins = pairs;
            self.width *= 2;
            i = (t.saturating_sub(self.start) / self.width) as usize;
        }
        if self.bins.len() <= i {
            self.bins.resize_with(i + 1, Bin::default);
        }
        i
    }

    /// Takes one finished request; only measured completed ones count.
    pub fn add(&mut self, r: &RequestRecord, measured: bool) {
        if measured && r.status() == Status::Cancelled {
            let e = self.bin(r.end);
            self.bins[e].cancelled += 1.0;
        }
        if !measured || r.status() != Status::Completed {
            return;
        }
        self.open = Some(self.open.map_or(r.dispatched, |o| o.min(r.dispatched)));
        self.e2el
            .record(r.end.saturating_sub(r.dispatched) as f64 / 1e3);
        let e = self.bin(r.end);
        self.bins[e].ended += 1.0;
        self.bins[e].tokens += f64::from(r.output_tokens);
        let s = self.bin(r.dispatched);
        let bin = &mut self.bins[s];
        if let Some(f) = r.first_token() {
            bin.ttft.record(f.saturating_sub(r.dispatched) as f64 / 1e3);
        }
        // At most ITL_SAMPLES evenly spaced gaps a request: the estimate only decides when
        // to confirm with the report's own intervals, and a chunk-long loop per request would
        // cost the collector 4 % of a core at 10,000 req/s of 128 chunks.
        let gaps = r.chunks.len().saturating_sub(1);
        let stride = gaps.div_ceil(ITL_SAMPLES).max(1);
        for w in r.chunks.windows(2).step_by(stride) {
            bin.itl.record(w[1].at.saturating_sub(w[0].at) as f64 / 1e3);
        }
    }

    /// Whether the measured completed requests so far generated any output token.
    pub fn generated(&self) -> bool {
        self.bins.iter().any(|b| b.tokens > 0.0)
    }

    /// The opening of the window the report would take: the one known in advance, else the
    /// first send of a measured request (`None` before one).
    pub fn opening(&self) -> Option<Nanos> {
        self.known_open.or(self.open)
    }

    /// The estimated relative half-widths of the key figures if the benchmark ended at `now`,
    /// `None` when the span holds fewer than `MIN_BATCHES` (3) batches of a fill time. The
    /// rates' batches cover the span by end time; the latencies' (by send time) end one fill
    /// before `now`, as the report's do (`figures::interval`): a request sent in the
    /// last fill has mostly not ended, so that batch held too few TTFTs for a median, the
    /// estimate had none, and a 13 req/s benchmark whose final intervals were within 2% ran to
    /// its budget (a CI failure of `tests/it/precision.rs`).
    pub fn estimate(&self, now: Nanos) -> Option<HalfWidths> {
        let (from, fill) = self.span(now)?;
        let span = now.checked_sub(from).filter(|&s| s > 0)?;
        let k = (span / fill.max(1)).min(MAX_BATCHES as u64) as usize;
        if k < MIN_BATCHES {
            return None;
        }
        let rates = self.batches(from, span / k as u64, k);
        let latencies = self.batches(from, (span.saturating_sub(fill) / k as u64).max(1), k);
        Some(batch_half_widths(&rates, &latencies))
    }

    /// `k` batches of width `w` from `from`, each with the time its bins cover.
    fn batches(&self, from: Nanos, w: Nanos, k: usize) -> Vec<(Bin, Nanos)> {
        let mut batches: Vec<(Bin, Nanos)> = vec![(Bin::default(), 0); k];
        let to = from + w * k as Nanos;
        for (i, b) in self.bins.iter().enumerate() {
            let mid = self.start + i as Nanos * self.width + self.width / 2;
            if mid < from || mid >= to {
                continue;
            }
            let j = (((mid - from) / w) as usize).min(k - 1);
            batches[j].0.merge(b);
            batches[j].1 += self.width;
        }
        batches
    }
}

impl PrecisionCheck {
    /// The start of the span the report would batch if the benchmark ended at `now`, and the
    /// fill time (the latency fill only: the settling of the in-flight count, which can only
    /// move the start later, is the report's, over the whole benchmark).
    fn span(&self, now: Nanos) -> Option<(Nanos, Nanos)> {
        let open = self.opening()?;
        let window = Window {
            open,
            close: now,
            cooldown: false,
        };
        let fill_us = self.e2el.percentile_us(bench_core::FILL_QUANTILE * 100.0)?;
        let fill = (fill_us * 1e3) as Nanos;
        let from =
            Steady::of(&self.strategy, self.start, &window, fill, 0).map_or(open, |s| s.from);
        Some((from, fill))
    }

    /// Whether a constant or Poisson load is falling behind at `now`: its measured requests
    /// left over the span (completed, or cancelled by the client on purpose, as the sustained
    /// judgement counts them) at less than [`bench_core::KEPT_UP`] of the rate sent. Such a
    /// load is not stationary (its queue and latencies grow for as long as it lasts), so no
    /// interval of its figures settles, and the estimate, which sees only the requests that
    /// completed, misses the longest ones still in flight: a sweep's rung past the capacity
    /// once stopped as precise and its report, with the drained requests' latencies, had no
    /// interval at all. Such a benchmark runs to its budget.
    pub fn falling_behind(&self, now: Nanos) -> bool {
        let rate = match self.strategy {
            Strategy::Constant { rate, .. } | Strategy::Poisson { rate, .. } => rate,
            _ => return false,
        };
        let Some((from, _)) = self.span(now) else {
            return false;
        };
        let (mut ended, mut covered) = (0.0, 0);
        for (i, b) in self.bins.iter().enumerate() {
            let lo = self.start + i as Nanos * self.width;
            if lo >= from && lo + self.width <= now {
                ended += b.ended + b.cancelled;
                covered += self.width;
            }
        }
        covered > 0 && ended / (covered as f64 / 1e9) < bench_core::KEPT_UP * rate
    }
}

/// The relative half-widths from the rates' `batches` (each with the time its bins cover) and
/// the latencies' (`latencies`, by send time).
fn batch_half_widths(batches: &[(Bin, Nanos)], latencies: &[(Bin, Nanos)]) -> HalfWidths {
    let total: Nanos = batches.iter().map(|b| b.1).sum();
    let per_s = |f: fn(&Bin) -> f64| -> Option<f64> {
        if batches.iter().any(|b| b.1 == 0) || total == 0 {
            return None;
        }
        let values: Vec<f64> = batches
            .iter()
            .map(|(b, w)| f(b) / (*w as f64 / 1e9))
            .collect();
        let pooled = batches.iter().map(|(b, _)| f(b)).sum::<f64>() / (total as f64 / 1e9);
        relative(around(pooled, &values))
    };
    let median = |f: fn(&Bin) -> &Dist| -> Option<f64> {
        let per_batch: Option<Vec<f64>> = latencies
            .iter()
            .map(|(b, _)| {
                let d = f(b);
                (d.count() >= needs(50.0)).then(|| d.percentile_us(50.0))?
            })
            .collect();
        let mut all = Dist::new();
        for (b, _) in latencies {
            all.merge(f(b));
        }
        relative(around(all.percentile_us(50.0)?, &per_batch?))
    };
    HalfWidths {
        requests_per_s: per_s(|b| b.ended),
        output_tokens_per_s: per_s(|b| b.tokens),
        ttft_median: median(|b| &b.ttft),
        itl_median: median(|b| &b.itl),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::options::StatsOptions;
    use crate::figures::stats::{Accumulator, BenchmarkMeta};

    const MS: Nanos = 1_000_000;

    /// A request sent at `sent_ms` whose 8 chunks come `gap_ms` apart after `ttft_ms`.
    fn rec(sent_ms: u64, ttft_ms: u64, gap_ms: u64) -> RequestRecord {
        let sent = sent_ms * MS;
        let chunks: Vec<Nanos> = (0..8).map(|i| sent + (ttft_ms + i * gap_ms) * MS).collect();
        RequestRecord {
            target: None,
            model: None,
            requested_output_tokens: Some(8),
            ..crate::test_support::record(sent, &chunks, chunks[7])
        }
    }

    /// Poisson arrivals at 20 req/s for `secs` seconds, TTFT and ITL jittered, from a fixed
    /// pseudo-random sequence.
    fn records(secs: u64) -> Vec<RequestRecord> {
        let mut x: u64 = 7;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let mut out = Vec::new();
        let mut t = 0.0;
        loop {
            t += -next().ln() * 50.0;
            if t >= (secs * 1000) as f64 {
                return out;
            }
            let j = (next() * 100.0) as u64;
            out.push(rec(t as u64, 100 + j, 20 + j / 10));
        }
    }

    fn constant() -> Strategy {
        Strategy::Constant {
            rate: 20.0,
            max_concurrency: None,
        }
    }

    #[test]
    fn the_estimate_is_near_the_reports_own_intervals() {
        let secs = 30;
        let mut check = PrecisionCheck::new(constant(), 0, Some(0));
        let mut acc = Accumulator::new(&StatsOptions::default());
        for r in records(secs) {
            check.add(&r, true);
            acc.add(r);
        }
        let end = secs * 1000 * MS;
        let report = acc.finish(BenchmarkMeta::new(
            constant(),
            0,
            end,
            std::time::SystemTime::UNIX_EPOCH,
        ));
        let p = Precision {
            target: 0.5,
            budget_s: 60.0,
        };
        let truth = judge(&report, &p).half_widths;
        let est = check.estimate(end).expect("30 s hold enough batches");
        // The ITL estimate takes at most ITL_SAMPLES gaps a request and reads 23-35% under the
        // report's (0.0169 with latency batches over the whole span, 0.0143 with them ending
        // a fill early as the report's do, against 0.0220): it only decides when to confirm
        // with the report's own intervals, which alone stop a benchmark.
        for (name, t, e, within) in [
            ("req/s", truth.requests_per_s, est.requests_per_s, 0.25),
            (
                "tok/s",
                truth.output_tokens_per_s,
                est.output_tokens_per_s,
                0.25,
            ),
            ("ttft", truth.ttft_median, est.ttft_median, 0.25),
            ("itl", truth.itl_median, est.itl_median, 0.4),
        ] {
            let (t, e) = (t.expect(name), e.expect(name));
            assert!(
                (e - t).abs() <= within * t + 0.002,
                "{name}: estimate {e} against the report's {t}"
            );
        }
    }

    #[test]
    fn a_load_past_the_servers_pace_is_falling_behind() {
        // 20 req/s sent; the server completes them all (kept up), or only every other one
        // within the benchmark (10 req/s departing: the rest still queued).
        let mut kept = PrecisionCheck::new(constant(), 0, Some(0));
        let mut behind = PrecisionCheck::new(constant(), 0, Some(0));
        for (i, r) in records(30).iter().enumerate() {
            kept.add(r, true);
            if i % 2 == 0 {
                behind.add(r, true);
            }
        }
        let end = 30_000 * MS;
        assert!(!kept.falling_behind(end));
        assert!(behind.falling_behind(end));
        // Every other request cancelled by the client on purpose: they left, it keeps up.
        let mut cancels = PrecisionCheck::new(constant(), 0, Some(0));
        for (i, r) in records(30).iter().enumerate() {
            let mut r = r.clone();
            if i % 2 == 1 {
                r.outcome = bench_core::Outcome::ClientCancelled;
            }
            cancels.add(&r, true);
        }
        assert!(!cancels.falling_behind(end));
        // A closed loop has no rate sent to fall behind.
        let mut closed = PrecisionCheck::new(Strategy::Synchronous, 0, Some(0));
        for r in records(30).iter().step_by(2) {
            closed.add(r, true);
        }
        assert!(!closed.falling_behind(end));
    }

    #[test]
    fn too_short_a_span_has_no_estimate_and_bins_stay_bounded() {
        let mut check = PrecisionCheck::new(constant(), 0, Some(0));
        for r in records(1) {
            check.add(&r, true);
        }
        assert_eq!(check.estimate(1000 * MS), None, "one second is one fill");
        for r in records(600) {
            check.add(&r, true);
        }
        assert!(check.bins.len() <= MAX_BINS);
        assert!(check.estimate(600_000 * MS).is_some());
    }

    #[test]
    fn a_loose_target_is_met_and_a_tight_one_is_not() {
        let mut acc = Accumulator::new(&StatsOptions::default());
        for r in records(20) {
            acc.add(r);
        }
        let b = acc.finish(BenchmarkMeta::new(
            constant(),
            0,
            20_000 * MS,
            std::time::SystemTime::UNIX_EPOCH,
        ));
        let judged = |target: f64, budget_s: f64| judge(&b, &Precision { target, budget_s });
        let loose = judged(0.9, 30.0);
        assert!(loose.met && loose.target == 0.9 && loose.budget_s == 30.0);
        assert!(!judged(0.001, 20.0).met);
    }

    #[test]
    fn judging_reads_the_intervals_relative_to_their_figures() {
        let mut acc = Accumulator::new(&StatsOptions::default());
        for r in records(20) {
            acc.add(r);
        }
        let report = acc.finish(BenchmarkMeta::new(
            constant(),
            0,
            20_000 * MS,
            std::time::SystemTime::UNIX_EPOCH,
        ));
        let iv = report.intervals.clone().expect("intervals");
        let loose = judge(
            &report,
            &Precision {
                target: 0.9,
                budget_s: 20.0,
            },
        );
        assert!(loose.met, "{loose:?}");
        let rps = (iv.requests_per_s.high - iv.requests_per_s.low)
            / (iv.requests_per_s.high + iv.requests_per_s.low);
        assert!((loose.half_widths.requests_per_s.expect("rps") - rps).abs() < 1e-12);
        let tight = judge(
            &report,
            &Precision {
                target: 1e-6,
                budget_s: 20.0,
            },
        );
        assert!(!tight.met);
    }
}
