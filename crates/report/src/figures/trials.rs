//! Repeated trials (`--repeat N`, docs/metrics.md, "Repeated trials"): a run made of `N`
//! trials of the same benchmarks, each with fresh prompts. The run's benchmarks are the trials'
//! pooled: the benchmarks of one label are merged by the exact merge of shard runs
//! ([`crate::figures::merge`]: counts add up, every latency distribution is the sum of the trials'
//! histograms), except that a rate is the mean of the trials' rates (they ran one after
//! another). Every headline figure, and a sweep's capacity and SLO answers, gets an
//! across-trial 95% interval: Student's t over the `N` trial values, around the pooled figure.

use bench_core::Capacity;

use crate::figures::interval::{
    around, Interval, Intervals, MetricIntervals, LEVEL, METRICS, STATS,
};
use crate::figures::merge::{merge_benchmark, Pooling};
use crate::figures::model::{AcrossTrials, BenchmarkReport, RunReport, Trial};
use crate::Error;

/// Fewest trials `--repeat-until` stops after.
pub const MIN_TRIALS_TO_STOP: usize = 3;

/// The benchmarks of `trials` grouped by label: the `k`-th benchmark of a label in the first
/// trial with the `k`-th of that label in every other trial. A label missing from a trial
/// (a sweep's open-loop rates follow each trial's own probe) is not pooled. A trial that
/// finished no benchmark (interrupted as it began) is left out.
fn groups(trials: &[Trial]) -> Vec<Vec<&BenchmarkReport>> {
    let trials: Vec<&Trial> = trials.iter().filter(|t| !t.benchmarks.is_empty()).collect();
    let Some(first) = trials.first() else {
        return Vec::new();
    };
    fn nth<'a>(t: &'a Trial, label: &str, k: usize) -> Option<&'a BenchmarkReport> {
        t.benchmarks.iter().filter(|b| b.label == label).nth(k)
    }
    let mut out = Vec::new();
    for (i, b) in first.benchmarks.iter().enumerate() {
        let k = first.benchmarks[..i]
            .iter()
            .filter(|x| x.label == b.label)
            .count();
        let group: Option<Vec<&BenchmarkReport>> =
            trials.iter().map(|t| nth(t, &b.label, k)).collect();
        if let Some(g) = group {
            out.push(g);
        }
    }
    out
}

/// The across-trial intervals of a pooled benchmark's headline figures.
fn across(pooled: &BenchmarkReport, trials: &[&BenchmarkReport]) -> Intervals {
    let values =
        |f: &dyn Fn(&BenchmarkReport) -> f64| -> Vec<f64> { trials.iter().map(|b| f(b)).collect() };
    let mut metrics = std::collections::BTreeMap::new();
    for m in METRICS {
        let stat = |p: f64| -> Option<Interval> {
            let per_trial: Option<Vec<f64>> =
                trials.iter().map(|b| b.percentile_ms(m, p)).collect();
            Some(around(pooled.percentile_ms(m, p)?, &per_trial?))
        };
        let [median, p90, p99] = STATS.map(|(_, p)| stat(p));
        metrics.insert(
            m.json_key().to_string(),
            MetricIntervals { median, p90, p99 },
        );
    }
    Intervals {
        method: "trials".into(),
        level: LEVEL,
        batches: trials.len() as u32,
        batch_s: values(&|b| b.duration_s).iter().sum::<f64>() / trials.len() as f64,
        requests_per_s: around(
            pooled.rates.requests_per_s,
            &values(&|b| b.rates.requests_per_s),
        ),
        output_tokens_per_s: around(
            pooled.rates.output_tokens_per_s,
            &values(&|b| b.rates.output_tokens_per_s),
        ),
        metrics,
    }
}

/// Pools the trials of `run.trials` into `run.benchmarks` (with across-trial intervals from
/// two trials on; with one, its benchmarks as they are) and, for sweeps, `run.capacity` and the capacity and SLO intervals.
/// Refused when a benchmark cannot be merged exactly (sessions).
pub fn pool(run: &mut RunReport) -> Result<(), Error> {
    let Some(trials) = run.trials.as_mut() else {
        return Ok(());
    };
    let mut benchmarks = Vec::new();
    for group in groups(&trials.runs) {
        if let [one] = group[..] {
            // One trial so far: it is its own pool, batch-means intervals and all.
            benchmarks.push(one.clone());
            continue;
        }
        let mut b = merge_benchmark(&group, Pooling::OneAfterAnother)?;
        // The server's gauges and counters are each trial's own (a sum of gauges means
        // nothing): they stay with the trials.
        b.server_metrics = None;
        b.gpu_metrics = None;
        b.intervals = Some(across(&b, &group));
        benchmarks.push(b);
    }
    // The capacity answers of the trials that gave one (an interrupted trial gives none).
    let cs: Vec<&Capacity> = trials
        .runs
        .iter()
        .filter_map(|t| t.capacity.as_ref())
        .collect();
    run.capacity = pooled_capacity(&cs);
    trials.capacity = AcrossTrials::of(cs.iter().map(|c| c.max_requests_per_s).collect());
    trials.slo = cs
        .iter()
        .map(|c| c.slo_max_requests_per_s)
        .collect::<Option<Vec<f64>>>()
        .and_then(AcrossTrials::of);
    run.benchmarks = benchmarks;
    Ok(())
}

/// The mean of present values, when every trial has one.
fn mean_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Option<Vec<f64>> = values.collect();
    let v = v.filter(|v| !v.is_empty())?;
    Some(v.iter().sum::<f64>() / v.len() as f64)
}

/// The trials' capacity answers as one: every rate the mean of the trials' (the knee and the
/// SLO answer when every trial found one), measured by the benchmarks that measured them,
/// a lower bound when any trial's was.
fn pooled_capacity(cs: &[&Capacity]) -> Option<Capacity> {
    let mut c = (*cs.first()?).clone();
    let n = cs.len() as f64;
    c.max_requests_per_s = cs.iter().map(|c| c.max_requests_per_s).sum::<f64>() / n;
    c.max_output_tokens_per_s = cs.iter().map(|c| c.max_output_tokens_per_s).sum::<f64>() / n;
    let mut by: Vec<&str> = Vec::new();
    for x in cs {
        if !by.contains(&x.max_measured_by.as_str()) {
            by.push(&x.max_measured_by);
        }
    }
    c.max_measured_by = by.join(", ");
    c.max_is_lower_bound = cs.iter().any(|c| c.max_is_lower_bound);
    c.knee_requests_per_s = mean_of(cs.iter().map(|c| c.knee_requests_per_s));
    c.slo_max_requests_per_s = mean_of(cs.iter().map(|c| c.slo_max_requests_per_s));
    if let Some(b) = c.slo_bracket.as_mut() {
        b.low = mean_of(cs.iter().map(|c| c.slo_bracket.and_then(|b| b.low)));
        b.high = mean_of(cs.iter().map(|c| c.slo_bracket.and_then(|b| b.high)));
        b.steps = cs
            .iter()
            .filter_map(|c| c.slo_bracket.map(|b| b.steps))
            .max()
            .unwrap_or(0);
    }
    c.refresh_trace_multiples();
    Some(c)
}

/// The key figures `--repeat-until` waits on, as (name, pooled value, interval): every pooled
/// benchmark's requests/s, output tokens/s and TTFT, ITL, TPOT and E2EL medians, and the
/// capacity and SLO answers.
fn key_figures(run: &RunReport) -> Vec<(String, f64, Interval)> {
    let mut out = Vec::new();
    for b in &run.benchmarks {
        let Some(iv) = &b.intervals else { continue };
        out.push((
            format!("{} requests/s", b.label),
            b.rates.requests_per_s,
            iv.requests_per_s,
        ));
        out.push((
            format!("{} output tok/s", b.label),
            b.rates.output_tokens_per_s,
            iv.output_tokens_per_s,
        ));
        for m in METRICS {
            let median = iv.metrics.get(m.json_key()).and_then(|x| x.median);
            if let (Some(i), Some(v)) = (median, b.percentile_ms(m, 50.0)) {
                out.push((format!("{} {} median", b.label, m.json_key()), v, i));
            }
        }
    }
    if let Some(t) = &run.trials {
        for (name, a) in [("capacity", &t.capacity), ("SLO answer", &t.slo)] {
            if let Some(a) = a {
                let iv = Interval {
                    low: a.low,
                    high: a.high,
                };
                out.push((name.to_string(), a.mean, iv));
            }
        }
    }
    out
}

/// With `--repeat-until target`: the first key figure whose interval's half-width is more
/// than `target` of its value (`None` when every one is within, after at least
/// [`MIN_TRIALS_TO_STOP`] trials, and there is at least one).
pub fn not_converged(run: &RunReport, target: f64) -> Option<String> {
    let trials = run.trials.as_ref().map_or(0, |t| t.runs.len());
    if trials < MIN_TRIALS_TO_STOP {
        return Some(format!(
            "{trials} trial(s), fewer than {MIN_TRIALS_TO_STOP}"
        ));
    }
    let figures = key_figures(run);
    if figures.is_empty() {
        return Some("no figure has an interval".into());
    }
    figures.into_iter().find_map(|(name, v, iv)| {
        let half = (iv.high - iv.low) / 2.0;
        (half > target * v.abs()).then(|| {
            format!(
                "{name}: ±{:.1}% (target {:.1}%)",
                100.0 * half / v.abs().max(f64::MIN_POSITIVE),
                100.0 * target
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn across_trials_is_students_t_around_the_mean() {
        let a = AcrossTrials::of(vec![9.0, 10.0, 11.0]).expect("interval");
        // sd 1, se 1/√3, t(2) 4.303.
        let half = 4.303 / 3f64.sqrt();
        assert!((a.mean - 10.0).abs() < 1e-12);
        assert!((a.low - (10.0 - half)).abs() < 1e-9 && (a.high - (10.0 + half)).abs() < 1e-9);
        assert!(AcrossTrials::of(vec![1.0]).is_none());
    }
}
