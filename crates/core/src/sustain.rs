//! Whether an open-loop load was sustained: judged from what the server did *while the load was
//! on*, never from the drain (docs/metrics.md, "Sustained").
//!
//! Why not the drained departures alone: a server that admits every request (vLLM: a batch of
//! 256, chunked prefill giving new prompts priority) starves the decodes of the requests already
//! admitted while arrivals continue; when the sending stops, every request finishes within
//! seconds. The departures of the requests sent in the window, drained, then look like a server
//! that kept up, at twice its capacity. The in-flight count tells the truth: in a steady state it
//! stops growing, and requests depart at the rate they arrive; past capacity it climbs for as
//! long as the load lasts.
//!
//! The rule: over the loaded span `[open + fill, close]` (`fill` the later of the 90th
//! percentile latency and the time the count settles, at most half the window), the in-flight
//! count's trend `g` (requests/s, least squares over [`SUSTAIN_BATCHES`] batch means, its
//! standard error widened for the batches' lag-1 autocorrelation) gives the departure rate while
//! loaded, `d = a - g`, `a` the arrivals per second over the span. Its 95% interval
//! `a - (g ± t × se)` judges it against [`crate::KEPT_UP`] `× a`: surely kept up, surely not,
//! or unsure.

use serde::{Deserialize, Serialize};

use crate::settle::binned_counts;
use crate::{settle_time, t975, Interval, Nanos, Window, FILL_QUANTILE};

/// An open-loop benchmark kept up with its rate when it completed at least this fraction of
/// the rate it offered; one that did not was past the server's capacity (the sustain verdict
/// below and the SLO answer's `kept_up` both judge by it).
pub const KEPT_UP: f64 = 0.95;

/// Batches of the in-flight count over the loaded span.
pub const SUSTAIN_BATCHES: usize = 10;
/// The fewest arrivals the loaded span must hold for a judgement.
pub const SUSTAIN_MIN_ARRIVALS: u64 = 10;
/// The most the standard error is widened for the batches' autocorrelation.
const MAX_WIDENING: f64 = 3.0;

/// The 95% judgement of an open-loop load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The departure rate's interval lies at or above [`KEPT_UP`] of the arrivals.
    KeptUp,
    /// The departure rate's interval lies below [`KEPT_UP`] of the arrivals: the in-flight
    /// count surely climbed.
    NotKeptUp,
    /// The interval straddles the line (a window too short, or a load near capacity).
    Unsure,
}

impl Verdict {
    /// Stable snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::KeptUp => "kept_up",
            Verdict::NotKeptUp => "not_kept_up",
            Verdict::Unsure => "unsure",
        }
    }
}

/// What the loaded span of an open-loop benchmark shows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sustained {
    /// The 95% judgement.
    pub verdict: Verdict,
    /// Requests sent per second over the span.
    pub arrivals_per_s: f64,
    /// Requests departing per second over the span, `arrivals - growth`.
    pub departures_per_s: f64,
    /// Its 95% interval.
    pub departures_interval: Interval,
    /// The in-flight count's trend over the span, requests/s (0 in a steady state).
    pub growth_per_s: f64,
    /// Whether the in-flight count settled in the window ([`settle_time`] found a point):
    /// `false` while it was still climbing at the closing.
    pub settled: bool,
    /// The span judged, run-clock nanoseconds.
    pub from_ns: Nanos,
    /// Its end: the window's closing, when the sending stopped.
    pub to_ns: Nanos,
}

impl Sustained {
    /// The judgement of an open-loop benchmark with measurement `window` whose measured
    /// requests ran over `spans` (`(sent, ended)`, any status; a request drained after the
    /// closing ends after it) and whose measured completed requests took `latencies`
    /// (reordered). `None` when the span holds fewer than [`SUSTAIN_MIN_ARRIVALS`] arrivals or
    /// no completed request gives a fill.
    pub fn judge(
        window: &Window,
        spans: &[(Nanos, Nanos)],
        latencies: &mut [Nanos],
    ) -> Option<Self> {
        if latencies.is_empty() || window.nanos() == 0 {
            return None;
        }
        let (from, settle) = loaded_from(window, spans, latencies);
        let to = window.close;
        let span_s = (to - from) as f64 / 1e9;
        let arrivals = arrivals_in(spans, from, to);
        if arrivals < SUSTAIN_MIN_ARRIVALS || span_s <= 0.0 {
            return None;
        }
        let (growth, se) = trend(from, to, spans);
        let a = arrivals as f64 / span_s;
        let half = t975(SUSTAIN_BATCHES - 2) * se;
        let d = a - growth;
        let iv = Interval {
            low: (d - half).max(0.0),
            high: d + half,
        };
        Some(Self {
            verdict: verdict(iv, a),
            arrivals_per_s: a,
            departures_per_s: d.max(0.0),
            departures_interval: iv,
            growth_per_s: growth,
            settled: settle.is_some(),
            from_ns: from,
            to_ns: to,
        })
    }

    /// The judgement of several benchmarks' loads together: side by side (shards of one load)
    /// their arrivals, departures, growths and interval ends add up; one after another
    /// (trials) they are averaged. The verdict is taken again on the combined interval; the
    /// count settled only if it settled in every part. `None` when a part was not judged.
    pub fn combine(parts: &[Option<Self>], side_by_side: bool) -> Option<Self> {
        let parts: Vec<Self> = parts.iter().copied().collect::<Option<_>>()?;
        let first = *parts.first()?;
        let n = if side_by_side {
            1.0
        } else {
            parts.len() as f64
        };
        let sum = |f: fn(&Self) -> f64| parts.iter().map(f).sum::<f64>() / n;
        let (a, iv) = (
            sum(|p| p.arrivals_per_s),
            Interval {
                low: sum(|p| p.departures_interval.low),
                high: sum(|p| p.departures_interval.high),
            },
        );
        Some(Self {
            verdict: verdict(iv, a),
            arrivals_per_s: a,
            departures_per_s: sum(|p| p.departures_per_s),
            departures_interval: iv,
            growth_per_s: sum(|p| p.growth_per_s),
            settled: parts.iter().all(|p| p.settled),
            from_ns: parts
                .iter()
                .map(|p| p.from_ns)
                .min()
                .unwrap_or(first.from_ns),
            to_ns: parts.iter().map(|p| p.to_ns).max().unwrap_or(first.to_ns),
        })
    }
}

/// Where the loaded span of an open loop's window starts, and when its in-flight count
/// settled ([`settle_time`]): after the fill, the later of the measured requests' 90th
/// percentile latency and the settling, at most half the window. With no completed request
/// (`latencies` empty) the fill is that half.
fn loaded_from(
    window: &Window,
    spans: &[(Nanos, Nanos)],
    latencies: &mut [Nanos],
) -> (Nanos, Option<Nanos>) {
    if latencies.is_empty() {
        return (window.open + window.nanos() / 2, None);
    }
    let p90 = crate::steady::nearest_rank(latencies, FILL_QUANTILE);
    let settle = settle_time(window, spans.iter().copied(), p90);
    let fill = p90.max(settle.unwrap_or(0)).min(window.nanos() / 2);
    (window.open + fill, settle)
}

/// The requests of `spans` sent within `[from, to]`.
fn arrivals_in(spans: &[(Nanos, Nanos)], from: Nanos, to: Nanos) -> u64 {
    spans.iter().filter(|&&(s, _)| s >= from && s <= to).count() as u64
}

/// Why an open loop has no judgement ([`Sustained::judge`] gave none): its loaded span held
/// fewer than [`SUSTAIN_MIN_ARRIVALS`] arrivals, or none of its requests completed. Such a
/// load never counts as kept up (docs/metrics.md, "Sustained"); a sweep runs it again longer,
/// by what its arrivals need ([`Unjudged::lengthen`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Unjudged {
    /// Requests sent within the loaded span.
    pub arrivals: u64,
    /// The fewest a judgement needs ([`SUSTAIN_MIN_ARRIVALS`]).
    pub needed: u64,
    /// Measured requests that completed.
    pub completed: u64,
    /// The loaded span, seconds.
    pub span_s: f64,
}

impl Unjudged {
    /// The reason an open loop over `window` whose measured requests ran over `spans` and
    /// whose completed ones took `latencies` has no judgement; `None` when it has one
    /// ([`Sustained::judge`]) or the window is empty.
    pub fn of(window: &Window, spans: &[(Nanos, Nanos)], latencies: &mut [Nanos]) -> Option<Self> {
        if window.nanos() == 0 || Sustained::judge(window, spans, latencies).is_some() {
            return None;
        }
        let (from, _) = loaded_from(window, spans, latencies);
        Some(Self {
            arrivals: arrivals_in(spans, from, window.close),
            needed: SUSTAIN_MIN_ARRIVALS,
            completed: latencies.len() as u64,
            span_s: (window.close - from) as f64 / 1e9,
        })
    }

    /// The parts of a merged load (shards or trials) that were not judged, together: their
    /// arrivals and completions added, the longest span; `None` when every part was judged.
    pub fn combine(parts: impl Iterator<Item = Option<Self>>) -> Option<Self> {
        parts.flatten().reduce(|a, b| Self {
            arrivals: a.arrivals + b.arrivals,
            needed: a.needed.max(b.needed),
            completed: a.completed + b.completed,
            span_s: a.span_s.max(b.span_s),
        })
    }

    /// How many times longer the load must run for its loaded span to hold twice the
    /// arrivals a judgement needs (at least 2): the span grows with the window, and the
    /// arrivals with the span. A load with no completed request doubles.
    pub fn lengthen(&self) -> f64 {
        if self.completed == 0 || self.arrivals == 0 {
            return 2.0;
        }
        (2.0 * self.needed as f64 / self.arrivals as f64).max(2.0)
    }
}

/// The verdict of a departure-rate interval against [`KEPT_UP`] of the arrivals `a`.
fn verdict(iv: Interval, a: f64) -> Verdict {
    let line = KEPT_UP * a;
    if iv.low >= line {
        Verdict::KeptUp
    } else if iv.high < line {
        Verdict::NotKeptUp
    } else {
        Verdict::Unsure
    }
}

/// The least-squares trend (per second) of the in-flight count over `[from, to]` from
/// [`SUSTAIN_BATCHES`] batch means, and its standard error, widened by `sqrt((1 + r) / (1 - r))`
/// for the residuals' lag-1 autocorrelation `r > 0` (at most [`MAX_WIDENING`]).
fn trend(from: Nanos, to: Nanos, spans: &[(Nanos, Nanos)]) -> (f64, f64) {
    let k = SUSTAIN_BATCHES;
    let width = (to - from) as f64 / k as f64;
    let y = binned_counts(from, width, k, spans.iter().copied());
    let x: Vec<f64> = (0..k).map(|i| (i as f64 + 0.5) * width / 1e9).collect();
    let (mx, my) = (
        x.iter().sum::<f64>() / k as f64,
        y.iter().sum::<f64>() / k as f64,
    );
    let sxx: f64 = x.iter().map(|v| (v - mx).powi(2)).sum();
    let sxy: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let slope = sxy / sxx;
    let resid: Vec<f64> = x
        .iter()
        .zip(&y)
        .map(|(a, b)| b - my - slope * (a - mx))
        .collect();
    let ss: f64 = resid.iter().map(|r| r * r).sum();
    let lag: f64 = resid.windows(2).map(|w| w[0] * w[1]).sum();
    let r = if ss > 0.0 {
        (lag / ss).clamp(0.0, 0.9)
    } else {
        0.0
    };
    let widen = ((1.0 + r) / (1.0 - r)).sqrt().min(MAX_WIDENING);
    let se = (ss / (k as f64 - 2.0) / sxx).sqrt() * widen;
    (slope, se)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settle::tests::{load, window};

    const S: Nanos = 1_000_000_000;

    fn judged(spans: &[(Nanos, Nanos)], close: Nanos) -> Sustained {
        let mut lat: Vec<Nanos> = spans
            .iter()
            .filter(|s| s.1 <= close)
            .map(|s| s.1 - s.0)
            .collect();
        Sustained::judge(&window(close), spans, &mut lat).expect("judged")
    }

    #[test]
    fn a_steady_load_is_surely_kept_up_and_departs_as_it_arrives() {
        // 20 req/s of 1 s requests over 20 s: the count holds at 20.
        let spans = load(S / 20, 20 * S, |_| S);
        let j = judged(&spans, 20 * S);
        assert_eq!(j.verdict, Verdict::KeptUp, "{j:?}");
        assert!((j.departures_per_s - 20.0).abs() < 0.2, "{j:?}");
        assert!(j.growth_per_s.abs() < 0.1, "{j:?}");
    }

    #[test]
    fn a_server_that_only_drains_after_the_load_is_surely_not_kept_up() {
        // 13 req/s sent for 15 s; the server departs 11.5 req/s while loaded, so request i
        // ends at i / 11.5 + 1 s (the backlog grows by 1.5 req/s).
        let spans: Vec<(Nanos, Nanos)> = (0..195u64)
            .map(|i| (i * S / 13, i * S * 2 / 23 + S))
            .collect();
        let j = judged(&spans, 15 * S);
        assert_eq!(j.verdict, Verdict::NotKeptUp, "{j:?}");
        assert!((j.departures_per_s - 11.5).abs() < 0.6, "{j:?}");
    }

    #[test]
    fn a_count_climbing_at_the_line_is_unsure() {
        // Growth of 5.6% of the arrivals, with a wobble: neither side is sure, and the
        // departures lean below the line.
        let spans = load(S / 20, 10 * S, |s| S + s / 18 + (s * 7919 % (S / 3)));
        let j = judged(&spans, 10 * S);
        assert_eq!(j.verdict, Verdict::Unsure, "{j:?}");
        assert!(j.departures_per_s < KEPT_UP * j.arrivals_per_s, "{j:?}");
    }

    #[test]
    fn too_few_arrivals_are_not_judged() {
        let spans = load(S, 6 * S, |_| S / 2);
        let mut lat = vec![S / 2; 6];
        assert_eq!(Sustained::judge(&window(6 * S), &spans, &mut lat), None);
    }

    #[test]
    fn an_unjudged_load_says_its_arrivals_and_how_much_longer_it_must_run() {
        // 1 req/s for 6 s, 0.5 s each: the fill is the settling, the span holds about 5
        // arrivals of the 10 needed, so it must run 20 / arrivals times as long.
        let spans = load(S, 6 * S, |_| S / 2);
        let mut lat = vec![S / 2; 6];
        let u = Unjudged::of(&window(6 * S), &spans, &mut lat).expect("unjudged");
        assert!(u.arrivals < SUSTAIN_MIN_ARRIVALS && u.arrivals > 0, "{u:?}");
        assert_eq!((u.needed, u.completed), (SUSTAIN_MIN_ARRIVALS, 6));
        assert_eq!(u.lengthen(), 20.0 / u.arrivals as f64);
        assert!(u.span_s > 0.0 && u.span_s <= 6.0, "{u:?}");
        // No request completed (a server that answers nothing in the window): the span is the
        // window's second half, and the load runs twice as long.
        let stuck = load(S, 6 * S, |_| 100 * S);
        let u = Unjudged::of(&window(6 * S), &stuck, &mut []).expect("unjudged");
        assert_eq!((u.arrivals, u.completed, u.span_s), (3, 0, 3.0));
        assert_eq!(u.lengthen(), 2.0);
        // A judged load has no reason to give.
        let spans = load(S / 20, 10 * S, |_| S / 2);
        let mut lat = vec![S / 2; spans.len()];
        assert_eq!(Unjudged::of(&window(10 * S), &spans, &mut lat), None);
    }
}
