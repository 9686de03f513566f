//! The exact merge of a distributed run's shard results into one run (docs/distributed.md):
//! counts, token sums and errors add up; every latency distribution is the sum of the shards'
//! HDR histograms (so its percentiles are those of one histogram of every request); rates
//! add up, since the shards ran side by side over the same window. Mismatched shards are
//! refused with one line naming the file.

use std::collections::BTreeMap;

use crate::figures::hist::{Dist, MetricSummary};
use crate::figures::model::{
    sum_counts, BenchmarkReport, GoodputReport, Histograms, MergedRun, MergedShard, Metrics, Rates,
    RequestCounts, RunReport, TokenCounts, TokenStat, Tokens,
};
use crate::figures::options::Metric;
use crate::Error;

/// Settings that may differ between the shards of one run: where each wrote its files and
/// what it printed, and whether it scraped the server (only one shard should).
const PER_PROCESS_KEYS: [&str; 9] = [
    "output",
    "console",
    "quiet",
    "save_result",
    "save_records",
    "server_metrics",
    "server_metrics_url",
    "server_metrics_interval",
    "gpu_metrics",
];

/// Error samples kept per kind, as in one run.
const SAMPLES_PER_KIND: usize = 3;

/// One shard's result and the file it came from (named in errors).
#[derive(Debug, Clone)]
pub struct ShardFile {
    /// The file, as given.
    pub name: String,
    /// Its run.
    pub run: RunReport,
}

/// Whether these runs are shards of one distributed run (every one carries a shard).
pub fn are_shards(runs: &[RunReport]) -> bool {
    !runs.is_empty() && runs.iter().all(|r| r.shard.is_some())
}

fn refuse(message: String) -> Error {
    Error::Merge(message)
}

/// Merges the shards of one run into one run. Refused (naming the file) when a file is not
/// a shard, the shards disagree on their count, start or settings, an index is missing or
/// given twice, their benchmarks differ, two shards started a benchmark more than
/// `max_skew_s` apart, or a benchmark holds what cannot be merged exactly (session figures
/// saved without their histograms).
pub fn merge_shards(mut files: Vec<ShardFile>, max_skew_s: f64) -> Result<RunReport, Error> {
    let first = check_shards(&mut files)?;
    let count = files.len() as u32;
    let clock_skew = min_clock_skew_ms(&files);
    if let Some((skew, a, b)) = clock_skew
        .as_ref()
        .filter(|(s, ..)| *s > max_skew_s * 1000.0)
    {
        return Err(refuse(format!(
            "{a} and {b}: their clocks differ by at least {:.3} s by the target's Date header, more than --max-skew {max_skew_s} s (synchronise them: NTP, chrony)",
            skew / 1000.0
        )));
    }
    let mut skew_ms: f64 = 0.0;
    let mut benchmarks = Vec::with_capacity(first.benchmarks.len());
    for (i, b0) in first.benchmarks.iter().enumerate() {
        let shards: Vec<&BenchmarkReport> = files.iter().map(|f| &f.run.benchmarks[i]).collect();
        let skew = start_skew_s(&files, i);
        if skew > max_skew_s {
            return Err(refuse(format!(
                "benchmark {} ({}): the shards started it {skew:.3} s apart, more than --max-skew {max_skew_s} s (their clocks, or their previous benchmarks, are too far apart)",
                i + 1,
                b0.label
            )));
        }
        skew_ms = skew_ms.max(skew * 1000.0);
        benchmarks.push(
            merge_benchmark(&shards, Pooling::SideBySide).map_err(|e| match e {
                Error::Merge(m) => refuse(format!("benchmark {} ({}): {m}", i + 1, b0.label)),
                e => e,
            })?,
        );
    }
    let mut run = first.clone();
    run.benchmarks = benchmarks;
    run.shard = None;
    run.merged = Some(MergedRun {
        count,
        start_at: first
            .shard
            .as_ref()
            .and_then(|s| s.start_at.clone())
            .unwrap_or_default(),
        shards: files
            .iter()
            .map(|f| MergedShard {
                index: f.run.shard.as_ref().map_or(0, |s| s.index),
                run_id: f.run.run_id.clone(),
                host: f.run.environment.host.clone(),
                start_late_ms: f.run.shard.as_ref().and_then(|s| s.start_late_ms),
                clock: f.run.shard.as_ref().and_then(|s| s.clock),
            })
            .collect(),
        max_start_skew_ms: skew_ms,
        min_clock_skew_ms: clock_skew.map(|(s, ..)| s),
    });
    Ok(run)
}

/// Sorts `files` by shard index and checks that they are one complete run: returns the
/// first shard's run (the others agree with it).
fn check_shards(files: &mut [ShardFile]) -> Result<RunReport, Error> {
    if files.is_empty() {
        return Err(refuse("no shard files given".into()));
    }
    for f in files.iter() {
        let Some(s) = &f.run.shard else {
            return Err(refuse(format!(
                "{}: not a shard result (it was not run with --shard)",
                f.name
            )));
        };
        if s.start_at.is_none() {
            return Err(refuse(format!(
                "{}: shard {}/{} was run without --start-at; shards without a shared start cannot be merged",
                f.name, s.index, s.count
            )));
        }
    }
    files.sort_by_key(|f| f.run.shard.as_ref().map_or(0, |s| s.index));
    let first = files[0].run.clone();
    let Some(s0) = first.shard.clone() else {
        return Err(refuse(format!("{}: not a shard result", files[0].name)));
    };
    for (want, f) in files.iter().enumerate() {
        check_one(f, &first, &s0, &files[0].name, want as u32)?;
    }
    if files.len() as u32 != s0.count {
        return Err(refuse(format!(
            "{} of {} shards given: shard {} is missing",
            files.len(),
            s0.count,
            files.len()
        )));
    }
    Ok(first)
}

/// Checks shard file `f` against the first one: same count, start, settings and benchmark
/// labels, and the index expected at its place in index order.
fn check_one(
    f: &ShardFile,
    first: &RunReport,
    s0: &crate::figures::model::ShardRun,
    first_name: &str,
    want: u32,
) -> Result<(), Error> {
    let Some(s) = &f.run.shard else {
        return Err(refuse(format!("{}: not a shard result", f.name)));
    };
    if s.count != s0.count {
        return Err(refuse(format!(
            "{}: shard {}/{} does not belong with {first_name} (shard {}/{})",
            f.name, s.index, s.count, s0.index, s0.count
        )));
    }
    if s.index != want {
        let what = if s.index < want {
            format!("shard {} is given twice", s.index)
        } else {
            format!("shard {want} is missing")
        };
        return Err(refuse(format!("{}: {what}", f.name)));
    }
    if s.start_at != s0.start_at {
        return Err(refuse(format!(
            "{}: its --start-at {} differs from {first_name}'s {}",
            f.name,
            s.start_at.as_deref().unwrap_or("-"),
            s0.start_at.as_deref().unwrap_or("-")
        )));
    }
    if let Some(key) = differing_setting(&f.run.config, &first.config) {
        return Err(refuse(format!(
            "{}: its setting `{key}` differs from {first_name}'s (shards of one run share every setting)",
            f.name
        )));
    }
    let labels = |r: &RunReport| {
        r.benchmarks
            .iter()
            .map(|b| b.label.clone())
            .collect::<Vec<_>>()
    };
    if labels(&f.run) != labels(first) {
        return Err(refuse(format!(
            "{}: its benchmarks [{}] differ from {first_name}'s [{}]",
            f.name,
            labels(&f.run).join(", "),
            labels(first).join(", ")
        )));
    }
    Ok(())
}

/// The first setting (a top-level key of `config`) that differs, ignoring the per-process ones.
fn differing_setting(a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
    let empty = serde_json::Map::new();
    let (a, b) = (
        a.as_object().unwrap_or(&empty),
        b.as_object().unwrap_or(&empty),
    );
    a.keys()
        .chain(b.keys())
        .filter(|k| !PER_PROCESS_KEYS.contains(&k.as_str()))
        .find(|k| a.get(*k) != b.get(*k))
        .cloned()
}

/// The least two shards' wall clocks differ by, given each shard's bounds on its offset from
/// the target server's clock (milliseconds; 0 when every pair of bounds overlaps), with the
/// pair of files that proves the most; `None` when fewer than two shards measured bounds.
fn min_clock_skew_ms(files: &[ShardFile]) -> Option<(f64, String, String)> {
    let bounds: Vec<([f64; 2], &str)> = files
        .iter()
        .filter_map(|f| {
            let b = f.run.shard.as_ref()?.clock?.server_offset_ms?;
            Some((b, f.name.as_str()))
        })
        .collect();
    if bounds.len() < 2 {
        return None;
    }
    let mut best = (0.0, bounds[0].1.to_string(), bounds[1].1.to_string());
    for (a, an) in &bounds {
        for (b, bn) in &bounds {
            // a - b >= a.low - b.high, which is positive only when a lies wholly above b.
            let apart = a[0] - b[1];
            if apart > best.0 {
                best = (apart, an.to_string(), bn.to_string());
            }
        }
    }
    Some(best)
}

/// Seconds between the earliest and the latest start of benchmark `i` on the shared clock
/// (every shard's run clock counts from the shared start).
fn start_skew_s(files: &[ShardFile], i: usize) -> f64 {
    let starts = files.iter().map(|f| f.run.benchmarks[i].timeline.start_ns);
    let (min, max) = (starts.clone().min(), starts.max());
    match (min, max) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e9,
        _ => 0.0,
    }
}

/// How the merged benchmarks ran: side by side over one window (the shards of a distributed
/// run: their rates add up), or one after another (the trials of `--repeat`: a rate is the
/// mean of theirs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pooling {
    SideBySide,
    OneAfterAnother,
}

/// One benchmark of every shard (or trial), merged.
pub(crate) fn merge_benchmark(
    shards: &[&BenchmarkReport],
    pooling: Pooling,
) -> Result<BenchmarkReport, Error> {
    let first = shards[0];
    let mut out = first.clone();
    out.start = min_by(shards, |b| b.start.clone());
    out.end = max_by(shards, |b| b.end.clone());
    merge_timeline(&mut out, shards);
    out.stop_reason = joined(shards.iter().map(|b| b.stop_reason.clone()));
    out.requests = sum_counts(shards.iter().map(|b| b.requests));
    out.errors = sum_maps(shards.iter().map(|b| &b.errors));
    out.error_samples = merged_samples(shards);
    out.tokens = merge_tokens(shards, &out.requests);
    out.rates = merge_rates(shards, first.strategy.target_rate(), pooling);
    out.goodput = merge_goodput(shards, &out.requests, pooling);
    (out.metrics, out.histograms) = merge_metrics(shards)?;
    out.records = merge_records(shards);
    // Only one shard should scrape the server (the one given --server-metrics): the lowest
    // index that did speaks for the whole run.
    out.server_metrics = shards.iter().find_map(|b| b.server_metrics.clone());
    // The same for the GPUs' exporters: one shard's view of the whole deployment.
    out.gpu_metrics = shards.iter().find_map(|b| b.gpu_metrics.clone());
    out.sessions = crate::figures::turns_merge::merge(
        &shards
            .iter()
            .map(|b| b.sessions.as_ref())
            .collect::<Vec<_>>(),
    )
    .map_err(|e| refuse(format!("its sessions: {e}")))?;
    merge_newer(&mut out, shards);
    out.models = crate::figures::models::merge(
        shards.iter().filter_map(|b| b.models.as_ref()),
        (out.rates.requests_per_s, out.rates.output_tokens_per_s),
    )?;
    Ok(out)
}

/// The steady state, the intervals, the server's cached tokens and the images: a shard's
/// steady bounds are its own, so the merged run keeps the earliest opening and the latest
/// closing, and its scope only when every shard agrees (`settling` when some shards had
/// settled and others not, else `too_short`); batch intervals do not merge (each
/// shard's batches saw a share of the load), so a merged run has none, nor a precision
/// verdict; cached tokens, images and the per-target counts add up.
fn merge_newer(out: &mut BenchmarkReport, shards: &[&BenchmarkReport]) {
    use crate::figures::model::LatencyScope::{Settling, Steady, TooShort};
    let scope = out.latency_scope;
    if shards.iter().any(|b| b.latency_scope != scope) {
        let steadyish = shards
            .iter()
            .all(|b| matches!(b.latency_scope, Steady | Settling));
        out.latency_scope = if steadyish { Settling } else { TooShort };
    }
    let t = |f: fn(&BenchmarkReport) -> Option<u64>| shards.iter().filter_map(move |b| f(b));
    out.timeline.steady_start_ns = t(|b| b.timeline.steady_start_ns).min();
    out.timeline.steady_end_ns = t(|b| b.timeline.steady_end_ns).max();
    out.intervals = None;
    // A precision verdict is judged on intervals, which do not merge.
    out.precision = None;
    out.cached_tokens =
        crate::figures::cached::merge(shards.iter().filter_map(|b| b.cached_tokens));
    out.images = crate::figures::images::merge(shards.iter().filter_map(|b| b.images.as_ref()));
    out.targets = crate::figures::targets::merge(shards.iter().filter_map(|b| b.targets.as_ref()));
}

fn min_by(shards: &[&BenchmarkReport], f: impl Fn(&BenchmarkReport) -> String) -> String {
    shards.iter().map(|b| f(b)).min().unwrap_or_default()
}

fn max_by(shards: &[&BenchmarkReport], f: impl Fn(&BenchmarkReport) -> String) -> String {
    shards.iter().map(|b| f(b)).max().unwrap_or_default()
}

/// The shards' timelines on the shared clock (every shard's run clock counts from the shared
/// start): from the earliest start to the latest end; the window from the earliest opening
/// to the latest closing. Warmup, cooldown and drain: the longest of the shards'.
fn merge_timeline(out: &mut BenchmarkReport, shards: &[&BenchmarkReport]) {
    let t = |f: fn(&BenchmarkReport) -> u64| shards.iter().map(move |b| f(b));
    out.timeline.start_ns = t(|b| b.timeline.start_ns).min().unwrap_or_default();
    out.timeline.end_ns = t(|b| b.timeline.end_ns).max().unwrap_or_default();
    out.timeline.measure_start_ns = t(|b| b.timeline.measure_start_ns).min().unwrap_or_default();
    out.timeline.measure_end_ns = t(|b| b.timeline.measure_end_ns).max().unwrap_or_default();
    let longest = |f: fn(&BenchmarkReport) -> f64| shards.iter().map(|b| f(b)).fold(0.0, f64::max);
    out.duration_s = longest(|b| b.duration_s);
    out.warmup_s = longest(|b| b.warmup_s);
    out.cooldown_s = longest(|b| b.cooldown_s);
    out.drain_s = longest(|b| b.drain_s);
}

/// The distinct values, in order, joined by `, ` (one value when they agree).
fn joined(values: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for v in values {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen.join(", ")
}

fn sum_maps<'a>(maps: impl Iterator<Item = &'a BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for m in maps {
        for (k, v) in m {
            *out.entry(k.clone()).or_insert(0) += v;
        }
    }
    out
}

/// Up to three distinct messages per kind, the lowest shard's first.
fn merged_samples(shards: &[&BenchmarkReport]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for b in shards {
        for (k, msgs) in &b.error_samples {
            let kept = out.entry(k.clone()).or_default();
            for m in msgs {
                if kept.len() < SAMPLES_PER_KIND && !kept.contains(m) {
                    kept.push(m.clone());
                }
            }
        }
    }
    out
}

/// Token sums by status; the per-request means over the merged request counts.
fn merge_tokens(shards: &[&BenchmarkReport], n: &RequestCounts) -> Tokens {
    let kind = |f: fn(&Tokens) -> Option<&TokenCounts>| -> Option<TokenCounts> {
        let parts: Vec<&TokenCounts> = shards.iter().filter_map(|b| f(&b.tokens)).collect();
        if parts.is_empty() {
            return None;
        }
        let stat = |g: fn(&TokenCounts) -> TokenStat, count: u64| {
            let total = parts.iter().map(|c| g(c).total).sum::<u64>();
            TokenStat {
                total,
                per_request: if count > 0 {
                    total as f64 / count as f64
                } else {
                    0.0
                },
            }
        };
        Some(TokenCounts {
            completed: stat(|c| c.completed, n.completed),
            incomplete: stat(|c| c.incomplete, n.incomplete),
            errored: stat(|c| c.errored, n.errored),
            cancelled: stat(|c| c.cancelled, n.cancelled),
            sources: sum_maps(parts.iter().map(|c| &c.sources)),
        })
    };
    Tokens {
        prompt: kind(|t| Some(&t.prompt)).unwrap_or_default(),
        output: kind(|t| Some(&t.output)).unwrap_or_default(),
        reasoning: kind(|t| t.reasoning.as_ref()),
        answer: kind(|t| t.answer.as_ref()),
    }
}

/// Side by side, rates add up: the shards sent over the same window (to within the start
/// skew). Peaks add up too, as an upper bound (the shards' peaks need not coincide). One
/// after another, every rate is the mean of the trials' (and a peak the highest).
fn merge_rates(shards: &[&BenchmarkReport], target_rate: Option<f64>, pooling: Pooling) -> Rates {
    let side_by_side = pooling == Pooling::SideBySide;
    let n = if side_by_side {
        1.0
    } else {
        shards.len().max(1) as f64
    };
    // A rate: the sum side by side, the mean one after another.
    let rate = |f: fn(&Rates) -> f64| shards.iter().map(|b| f(&b.rates)).sum::<f64>() / n;
    // A peak: the sum side by side (an upper bound), the highest one after another.
    let peak = |f: fn(&Rates) -> f64| {
        let each = shards.iter().map(|b| f(&b.rates));
        if side_by_side {
            each.sum()
        } else {
            each.fold(0.0, f64::max)
        }
    };
    let peaks = shards.iter().map(|b| b.rates.peak_concurrency);
    let sustained = bench_core::Sustained::combine(
        &shards.iter().map(|b| b.rates.sustained).collect::<Vec<_>>(),
        side_by_side,
    );
    Rates {
        requests_per_s: rate(|r| r.requests_per_s),
        output_tokens_per_s: rate(|r| r.output_tokens_per_s),
        total_tokens_per_s: rate(|r| r.total_tokens_per_s),
        input_tokens_per_s: rate(|r| r.input_tokens_per_s),
        concurrency: rate(|r| r.concurrency),
        peak_concurrency: if side_by_side {
            peaks.sum()
        } else {
            peaks.max().unwrap_or_default()
        },
        peak_output_tokens_per_s: peak(|r| r.peak_output_tokens_per_s),
        achieved_rate: rate(|r| r.achieved_rate),
        target_rate,
        sustained,
        unjudged: sustained
            .is_none()
            .then(|| bench_core::Unjudged::combine(shards.iter().map(|b| b.rates.unjudged)))
            .flatten(),
    }
}

fn merge_goodput(
    shards: &[&BenchmarkReport],
    n: &RequestCounts,
    pooling: Pooling,
) -> Option<GoodputReport> {
    let parts: Vec<&GoodputReport> = shards.iter().filter_map(|b| b.goodput.as_ref()).collect();
    let first = parts.first()?;
    let requests = parts.iter().map(|g| g.requests).sum::<u64>();
    let per_s = parts.iter().map(|g| g.per_s).sum::<f64>();
    Some(GoodputReport {
        slo: first.slo.clone(),
        requests,
        per_s: match pooling {
            Pooling::SideBySide => per_s,
            Pooling::OneAfterAnother => per_s / parts.len() as f64,
        },
        fraction: match n.goodput_judged() {
            0 => 0.0,
            judged => requests as f64 / judged as f64,
        },
    })
}

/// The percentiles a summary holds (`p99.9` is 99.9).
fn percentiles_of(s: &MetricSummary) -> Vec<f64> {
    s.percentiles
        .keys()
        .filter_map(|k| k.strip_prefix('p')?.parse().ok())
        .collect()
}

/// Every metric's histograms added: the merged summary is that of one histogram of every
/// request (count, mean, stdev, min and max exact; percentiles within the histogram's 0.1 %).
fn merge_metrics(shards: &[&BenchmarkReport]) -> Result<(Metrics, Histograms), Error> {
    let mut metrics = Metrics::default();
    let mut hists = shards[0].histograms.clone();
    hists.data.clear();
    for m in Metric::ALL {
        let key = m.json_key();
        if shards.iter().all(|b| !b.histograms.data.contains_key(key)) {
            continue;
        }
        let mut dist = Dist::new();
        let mut ps = Vec::new();
        for b in shards {
            let summary = b.metric(m);
            if summary.count > 0 || b.histograms.data.contains_key(key) {
                dist.merge(&b.distribution(m)?);
            }
            for p in percentiles_of(summary) {
                if !ps.contains(&p) {
                    ps.push(p);
                }
            }
        }
        *metrics.get_mut(m) = dist.summary(&ps);
        hists.data.insert(key.to_string(), dist.encode());
    }
    Ok((metrics, hists))
}

/// Every shard's request records, when every shard kept them, in intended-send order. Their
/// offsets share the clock of the shared start; ids are per shard.
fn merge_records(shards: &[&BenchmarkReport]) -> Option<Vec<bench_core::RequestRecord>> {
    let mut all = Vec::new();
    for b in shards {
        all.extend(b.records.as_ref()?.iter().cloned());
    }
    all.sort_by_key(|r| (r.scheduled, r.dispatched));
    Some(all)
}
