//! The 95% intervals of a sweep's capacity answer (docs/metrics.md, "Intervals"): the
//! maximum's (the throughput interval of the benchmark that measured it), and the knee's and
//! the SLO-limited rate's, which combine the search's bracket with the intervals of the
//! figures measured at its rates.
//!
//! The knee and the SLO rate are where a figure crosses a limit (median TTFT its plateau
//! threshold, an SLO statistic its bound). Each open-loop rate is judged from its intervals:
//! surely below the crossing when every interval lies within its limit, surely above when one
//! lies wholly beyond it, unsure otherwise (also when it has no interval). The crossing lies
//! above the highest rate of the run of sure passes from the lowest rate, and below the lowest
//! sure failure.

use bench_core::{
    crossing, kept_up, served, Capacity, CapacityIntervals, CrossingInterval, Interval, Slo,
    SloLimit, Sure,
};

use crate::figures::capacity::{knee_threshold_ms, open_loop, slo_metric};
use crate::figures::interval::has_method;
use crate::figures::model::{BenchmarkReport, RunReport};
use crate::figures::options::Metric;

/// A figure measured at `point` with interval `iv` against `value <= limit`.
fn at_most(point: Option<f64>, iv: Option<Interval>, limit: f64) -> Sure {
    match (point, iv) {
        (None, _) => Sure::Fail,
        (Some(_), Some(iv)) if iv.high <= limit => Sure::Pass,
        (Some(_), Some(iv)) if iv.low > limit => Sure::Fail,
        _ => Sure::Unsure,
    }
}

/// Whether any open-loop rate has intervals: without one nothing measured how sure the
/// figures are (a rate without intervals is only unsure).
fn measured(rates: &[(f64, &BenchmarkReport)]) -> bool {
    rates.iter().any(|(_, b)| b.intervals.is_some())
}

/// Whether a rate kept up, taken as exact (as the sweep takes it): below capacity a rate's
/// completions follow its arrivals, and the batches' spread of completions measures their
/// discreteness (a few requests a batch), not doubt about keeping up.
fn kept_up_exactly(rate: f64, b: &BenchmarkReport) -> Sure {
    if kept_up(rate, b.rates.requests_per_s) {
        Sure::Pass
    } else {
        Sure::Fail
    }
}

/// The 95% interval of the knee ([`crate::knee`]): where median TTFT crosses
/// [`knee_threshold_ms`] of the lowest rate's median (taken as exact, so that rate is judged by
/// keeping up alone, with or without intervals), or the completed rate
/// falls below [`bench_core::KEPT_UP`] of the offered one (also taken as exact). `None` without a knee, or when no
/// open-loop rate has intervals.
pub fn knee_interval(run: &RunReport, c: &Capacity) -> Option<CrossingInterval> {
    c.knee_requests_per_s?;
    let rates = open_loop(run);
    let threshold = knee_threshold_ms(rates.first()?.1.percentile_ms(Metric::Ttft, 50.0)?);
    let median = |b: &BenchmarkReport| b.percentile_ms(Metric::Ttft, 50.0);
    if !measured(&rates) {
        return None;
    }
    // The lowest rate's median sets the threshold and is taken as exact, so it lies within
    // it (`m < 2 m + 10`) whatever its interval: only keeping up judges that rate.
    let verdicts: Vec<(f64, Sure)> = rates
        .iter()
        .enumerate()
        .map(|(i, &(r, b))| {
            let iv = b
                .intervals
                .as_ref()
                .and_then(|i| i.percentile(Metric::Ttft, 50.0));
            let ttft = match i {
                0 => Sure::Pass,
                _ => at_most(median(b), iv, threshold),
            };
            (r, Sure::all([ttft, kept_up_exactly(r, b)]))
        })
        .collect();
    Some(crossing(&verdicts))
}

/// The verdict of one benchmark's intervals on every bound of `slo` (docs/metrics.md,
/// "Intervals"): what the sweep's refinement of its SLO answer reads. An open-loop rate that
/// was not served ([`served`], taken as exact as the knee takes keeping up) surely fails: a
/// rate the server does not keep up with meets no SLO (docs/metrics.md, "The SLO answer").
pub fn slo_verdict(slo: &Slo, b: &BenchmarkReport) -> Sure {
    let kept = match b.strategy.target_rate() {
        Some(r)
            if !served(
                r,
                b.rates.requests_per_s,
                b.rates.sustained.map(|s| s.verdict),
            ) =>
        {
            Sure::Fail
        }
        _ => Sure::Pass,
    };
    let bounds = slo.bounds.iter().map(|bound| {
        let m = slo_metric(bound.metric);
        let p = bound.stat.percentile().unwrap_or(f64::NAN);
        let iv = b.intervals.as_ref().and_then(|i| i.percentile(m, p));
        at_most(b.slo_value(bound.metric, bound.stat), iv, bound.max_ms)
    });
    Sure::all(bounds.chain([kept]))
}

/// Whether every bound of `slo` has an interval method (a median, p90 or p99 of TTFT, ITL,
/// TPOT or E2EL): only then can the SLO rate have an interval.
pub fn slo_has_intervals(slo: &Slo) -> bool {
    slo.bounds.iter().all(|b| {
        b.stat
            .percentile()
            .is_some_and(|p| has_method(slo_metric(b.metric), p))
    })
}

/// The 95% interval of the SLO-limited rate (`slo_max_requests_per_s`): where the first SLO
/// bound stops holding. `None` without that rate, when a bound's statistic has no interval
/// method (a mean, a percentile other than the median, p90 and p99, a metric other than TTFT,
/// ITL, TPOT and E2EL), or when no open-loop rate has intervals.
///
/// The SLO answer is never above the capacity: when the capacity limits first
/// ([`SloLimit::Capacity`]) its interval is the maximum's ([`max_interval`]); else each end is
/// at most the maximum interval's end (`min(X, C)` lies between the lower ends' minimum and
/// the upper ends' minimum when `X` and `C` lie in theirs).
pub fn slo_interval(run: &RunReport, c: &Capacity) -> Option<CrossingInterval> {
    let max = max_interval(run, c);
    if c.slo_limit == Some(SloLimit::Capacity) {
        return max.map(|iv| CrossingInterval {
            low: iv.low,
            high: Some(iv.high),
        });
    }
    let iv = slo_crossing(run, c)?;
    Some(match max {
        Some(m) => CrossingInterval {
            low: iv.low.min(m.low),
            high: Some(iv.high.map_or(m.high, |h| h.min(m.high))),
        },
        None => iv,
    })
}

/// Where the first SLO bound stops holding among the open-loop rates ([`slo_verdict`]).
fn slo_crossing(run: &RunReport, c: &Capacity) -> Option<CrossingInterval> {
    let (slo, bracket) = (c.slo.as_ref()?, c.slo_bracket.as_ref()?);
    bracket.low?;
    if !slo_has_intervals(slo) {
        return None;
    }
    let rates = open_loop(run);
    if !measured(&rates) {
        return None;
    }
    let verdicts: Vec<(f64, Sure)> = rates
        .iter()
        .map(|&(r, b)| (r, slo_verdict(slo, b)))
        .collect();
    Some(crossing(&verdicts))
}

/// The 95% interval of the requests/s benchmark `b` read: of its departures while loaded for a
/// rate past the capacity (surely not kept up), else of its rate; `None` when it has none. The
/// sweep narrows the maximum's interval by it (`--capacity-precision`).
pub fn rate_interval(b: &BenchmarkReport) -> Option<Interval> {
    match b.rates.sustained {
        Some(s) if s.verdict == bench_core::Verdict::NotKeptUp => Some(s.departures_interval),
        _ => Some(b.intervals.as_ref()?.requests_per_s),
    }
}

/// The 95% interval of the maximum (requests/s): the interval of the throughput of the
/// benchmark that measured it, scaled as the maximum was; `None` when that benchmark has none.
/// A run of repeated trials states the across-trial interval of the trials' capacities
/// instead (docs/metrics.md, "Repeated trials").
pub fn max_interval(run: &RunReport, c: &Capacity) -> Option<Interval> {
    if let Some(a) = run.trials.as_ref().and_then(|t| t.capacity.as_ref()) {
        return Some(Interval {
            low: a.low,
            high: a.high,
        });
    }
    let b = run
        .benchmarks
        .iter()
        .rev()
        .find(|b| b.label == c.max_measured_by)?;
    let iv = rate_interval(b)?;
    let scale =
        (b.rates.requests_per_s > 0.0).then(|| c.max_requests_per_s / b.rates.requests_per_s)?;
    Some(Interval {
        low: iv.low * scale,
        high: iv.high * scale,
    })
}

/// The 95% interval of the run's stated capacity ([`max_interval`]).
pub fn capacity_interval(run: &RunReport) -> Option<Interval> {
    max_interval(run, run.capacity.as_ref()?)
}

/// The intervals of capacity answer `c` of `run` (`None` when it has none): what the run's
/// capacity carries in its files.
pub fn capacity_intervals(run: &RunReport, c: &Capacity) -> Option<CapacityIntervals> {
    let iv = CapacityIntervals {
        max_requests_per_s: max_interval(run, c),
        knee_requests_per_s: knee_interval(run, c),
        slo_max_requests_per_s: slo_interval(run, c),
    };
    (iv != CapacityIntervals::default()).then_some(iv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crossing_lies_between_the_sure_passes_and_the_first_sure_failure() {
        use Sure::*;
        let c = crossing(&[
            (1.0, Pass),
            (2.0, Pass),
            (3.0, Unsure),
            (4.0, Fail),
            (5.0, Fail),
        ]);
        assert_eq!((c.low, c.high), (2.0, Some(4.0)));
        // A sure pass after a doubt does not raise the lower end.
        let c = crossing(&[(1.0, Pass), (2.0, Unsure), (3.0, Pass), (4.0, Unsure)]);
        assert_eq!((c.low, c.high), (1.0, None));
        let c = crossing(&[(1.0, Unsure), (2.0, Fail)]);
        assert_eq!((c.low, c.high), (0.0, Some(2.0)));
    }

    #[test]
    fn a_figure_is_sure_only_when_its_interval_is_on_one_side() {
        let iv = |low, high| Some(Interval { low, high });
        assert_eq!(at_most(Some(9.0), iv(8.0, 10.0), 10.0), Sure::Pass);
        assert_eq!(at_most(Some(9.0), iv(8.0, 10.5), 10.0), Sure::Unsure);
        assert_eq!(at_most(Some(11.0), iv(10.5, 12.0), 10.0), Sure::Fail);
        assert_eq!(at_most(Some(9.0), None, 10.0), Sure::Unsure);
        assert_eq!(at_most(None, None, 10.0), Sure::Fail);
        assert_eq!(Sure::all([Sure::Pass, Sure::Unsure]), Sure::Unsure);
        assert_eq!(Sure::all([Sure::Unsure, Sure::Fail]), Sure::Fail);
        assert_eq!(Sure::all([Sure::Pass, Sure::Pass]), Sure::Pass);
    }
}
