//! When a benchmark's load settles: the truncation point of its in-flight count found by MSER-5
//! (White's Marginal Standard Error Rule on batch means of 5, the initial-transient rule that
//! simulation output analysis recommends: Hoad, Robinson and Davies 2010), for the steady state
//! (docs/metrics.md, "Steady state").
//!
//! Why the count, and why not one request latency: on a server whose step time grows with its
//! batch, the requests sent while it fills see shorter steps and end early, so the in-flight
//! count goes on climbing after the first latency, until the requests ending are themselves
//! ones sent into a full server: about two latencies, longer near capacity. A request sent
//! before the count settles runs part of its life on a lighter server. The simulator at
//! 21.85 req/s (256/128 tokens, 1.45 s latencies) holds 28 sequences at 1.45 s, 31 at 2.5 s and
//! 31-32 after; a 5 s benchmark's ITL median over requests sent after one latency read about
//! 1% below its steady value.

use crate::{Nanos, Window};

/// Bins of the in-flight count's time average over the window.
pub const SETTLE_BINS: usize = 500;
/// Bins per MSER batch (MSER-5).
const BATCH: usize = 5;

/// The requests by which the in-flight count after the latency fill must fall short of its
/// level after the settling point, on average, for the fill to wait for it: below one, a later
/// truncation point is the rule finding flat ground in the noise of a small count (five
/// requests of random lengths wander by half a request over a second), and would only cost
/// steady requests.
pub const SETTLE_SHORTFALL: f64 = 1.0;

/// The time from `window.open` at which the in-flight count of requests in flight over `spans`
/// (`(sent, ended)`, any status) settles, for a benchmark whose latency fill is `fill`: MSER-5's
/// truncation point over `[open, close]`, searched up to `close - fill` (no later truncation
/// could leave a request that is sent after it and ends by the closing). A point after the fill
/// counts only when the count between the two fell short of its level after the point by
/// [`SETTLE_SHORTFALL`] requests or more; otherwise the count had settled by the fill (`Some(0)`).
/// `None` when the rule's minimum lies at the bound with such a shortfall: the count was still
/// climbing (a load near or over capacity, or a benchmark too short to tell).
pub fn settle_time(
    window: &Window,
    spans: impl IntoIterator<Item = (Nanos, Nanos)>,
    fill: Nanos,
) -> Option<Nanos> {
    let len = window.close.checked_sub(window.open).filter(|&l| l > 0)?;
    let bins = SETTLE_BINS.min(len as usize / BATCH * BATCH).max(BATCH);
    let width = len as f64 / bins as f64;
    let counts = binned_counts(window.open, width, bins, spans);
    let means: Vec<f64> = counts
        .chunks(BATCH)
        .map(|c| c.iter().sum::<f64>() / BATCH as f64)
        .collect();
    let batch = width * BATCH as f64;
    let last = ((len.saturating_sub(fill) as f64 / batch) as usize).min(means.len() - 1);
    let d = mser_argmin(&means, last);
    let fill_bins = (fill as f64 / width).ceil() as usize;
    let (at, from) = (d * BATCH, fill_bins.min(bins));
    if at > from && mean(&counts[from..at]) + SETTLE_SHORTFALL <= mean(&counts[at..]) {
        return (d < last).then_some((d as f64 * batch) as Nanos);
    }
    // MSER found no later point worth waiting for; check the count after the fill itself.
    match settled_from(&counts, from, fill_bins.max(BATCH), last * BATCH) {
        Some(p) if p == from => Some(0),
        Some(p) => Some((p as f64 * width) as Nanos),
        None => None,
    }
}

fn mean(b: &[f64]) -> f64 {
    b.iter().sum::<f64>() / b.len().max(1) as f64
}

/// The first bin `p` from `from` on, in steps of `step` bins (one latency fill), after which
/// the count does not fall short: its mean over `[p, p + step)` is within
/// [`SETTLE_SHORTFALL`] of its mean over the rest. `None` when no such `p` comes by `limit`
/// or by the last whole step; `Some(from)` when the window has no room for one comparison
/// after the fill (too short to tell, as before this check).
///
/// Why, after MSER: its minimum is a noisy estimate on a count that creeps up after the fill.
/// The simulator at 22.4 req/s (256/128 tokens, 1.48 s latencies) holds 29 sequences at the
/// fill and 33 from about 3.5 s; with the machine's cores busy (two nice-19 loops beside it),
/// MSER put the point at the fill in 3 runs of 5 (at 3.4-3.6 s in the others), and the steady
/// window took requests sent into a server four sequences lighter.
fn settled_from(counts: &[f64], from: usize, step: usize, limit: usize) -> Option<usize> {
    if from + step >= counts.len() {
        return Some(from);
    }
    let mut p = from;
    while p + step < counts.len() {
        if mean(&counts[p..p + step]) + SETTLE_SHORTFALL > mean(&counts[p + step..]) {
            return Some(p);
        }
        p += step;
        if p > limit {
            return None;
        }
    }
    None
}

/// The time-average in-flight count in each of `bins` bins of `width` ns from `open`.
pub(crate) fn binned_counts(
    open: Nanos,
    width: f64,
    bins: usize,
    spans: impl IntoIterator<Item = (Nanos, Nanos)>,
) -> Vec<f64> {
    let mut area = vec![0.0; bins + 1];
    let mut full = vec![0.0; bins + 1];
    let end = bins as f64;
    for (a, b) in spans {
        let x0 = (a.saturating_sub(open) as f64 / width).min(end);
        let x1 = (b.saturating_sub(open) as f64 / width).min(end);
        if b <= open || x1 <= x0 {
            continue;
        }
        let (i0, i1) = (x0 as usize, x1 as usize);
        if i0 == i1 {
            area[i0] += x1 - x0;
            continue;
        }
        area[i0] += (i0 + 1) as f64 - x0;
        area[i1] += x1 - i1 as f64;
        full[i0 + 1] += 1.0;
        full[i1] -= 1.0;
    }
    let mut run = 0.0;
    for (a, f) in area.iter_mut().zip(&full) {
        run += f;
        *a += run;
    }
    area.truncate(bins);
    area
}

/// MSER's truncation point of `y` searched over `0..=last`: the `d` that minimises the
/// variance of the mean of `y[d..]`, `sum((y_i - mean)^2) / (n - d)^2`.
fn mser_argmin(y: &[f64], last: usize) -> usize {
    let n = y.len();
    let (mut s1, mut s2) = (0.0, 0.0);
    let mut stat = vec![f64::INFINITY; n];
    for d in (0..n).rev() {
        s1 += y[d];
        s2 += y[d] * y[d];
        let k = (n - d) as f64;
        stat[d] = (s2 - s1 * s1 / k).max(0.0) / (k * k);
    }
    (0..=last.min(n - 1))
        .min_by(|&a, &b| stat[a].total_cmp(&stat[b]))
        .unwrap_or(0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    /// A window from 0 to `close`, without a cooldown (shared with `sustain`'s tests).
    pub(crate) fn window(close: Nanos) -> Window {
        Window {
            open: 0,
            close,
            cooldown: false,
        }
    }

    /// Spans of a constant-rate load every `gap` ns whose requests last `life(sent)`.
    pub(crate) fn load(
        gap: Nanos,
        until: Nanos,
        life: impl Fn(Nanos) -> Nanos,
    ) -> Vec<(Nanos, Nanos)> {
        (0..until / gap)
            .map(|i| (i * gap, i * gap + life(i * gap)))
            .collect()
    }

    #[test]
    fn bins_hold_the_time_average_count() {
        // One request over the 2nd and 3rd bins and half the 4th, one over half the 1st.
        let c = binned_counts(0, 10.0, 5, [(10, 35), (5, 10), (60, 70)]);
        assert_eq!(c, vec![0.5, 1.0, 1.0, 0.5, 0.0]);
    }

    #[test]
    fn a_flat_count_settles_at_once_and_a_ramp_after_it() {
        // 20 req/s of 1 s requests: the count climbs to 20 over the first second.
        let flat = load(S / 20, 10 * S, |_| S);
        let t = settle_time(&window(10 * S), flat, S).expect("settles");
        assert_eq!(t, 0, "settled by the 1 s fill");
        // Requests sent in the first 2 s last 0.5 s, then 1 s: the count falls back to 10 at
        // 0.5 s and climbs again from 2.5 s to 3 s.
        let slow = load(S / 20, 10 * S, |s| if s < 2 * S { S / 2 } else { S });
        let t = settle_time(&window(10 * S), slow, S).expect("settles");
        assert!((3 * S..=3 * S + S / 5).contains(&t), "{t}");
    }

    #[test]
    fn wiggles_without_a_trend_settle_by_the_fill() {
        // Latencies alternating 1 s and 1.2 s with small pseudo-random lengthenings: a count
        // that only wobbles after its 1.2 s fill.
        let wobbly = load(S / 20, 10 * S, |s| S + (s * 7919 % (S / 5)));
        assert_eq!(settle_time(&window(10 * S), wobbly, S + S / 5), Some(0));
    }

    #[test]
    fn a_count_still_creeping_up_after_the_fill_settles_later() {
        // 100 bins of one latency each 10: 29 up to bin 10 (the fill), then 30, 31, 32 over
        // the next three latencies, then 33 for good: short of the later level by more than one
        // request until bin 30.
        let counts: Vec<f64> = (0..100)
            .map(|i| match i {
                0..=9 => 29.0 * i as f64 / 10.0,
                10..=19 => 30.0,
                20..=29 => 31.5,
                30..=39 => 32.5,
                _ => 33.0,
            })
            .collect();
        assert_eq!(settled_from(&counts, 10, 10, 90), Some(30));
        // Flat after the fill: settled at it.
        let flat: Vec<f64> = (0..100)
            .map(|i| if i < 10 { 3.0 * i as f64 } else { 30.0 })
            .collect();
        assert_eq!(settled_from(&flat, 10, 10, 90), Some(10));
        // Climbing to the end: never.
        let ramp: Vec<f64> = (0..100).map(|i| i as f64).collect();
        assert_eq!(settled_from(&ramp, 10, 10, 90), None);
    }

    #[test]
    fn a_count_that_keeps_climbing_never_settles() {
        // Over capacity: each request waits longer than the one before.
        let over = load(S / 20, 10 * S, |s| S + s);
        assert_eq!(settle_time(&window(10 * S), over, 2 * S), None);
        assert_eq!(settle_time(&window(0), [(0, S)], 0), None);
    }
}
