//! A model mix's benchmark, model by model (docs/metrics.md, "Models"): each model's share of
//! the benchmark's included requests, tokens and rates, and its own TTFT, ITL and E2EL. Kept
//! aside (a model index per request) for the runs with a mix, so that a run of one model costs
//! nothing.

use std::collections::BTreeMap;

use bench_core::{Phase, Status, Steady, Window};
use serde::{Deserialize, Serialize};

use crate::figures::chunks::ChunkStore;
use crate::figures::compact::{us, Compact};
use crate::figures::hist::{Dist, MetricSummary};
use crate::Error;

/// The percentile every model's latency summaries hold beside the median (the histograms
/// give any other).
pub const MODEL_PERCENTILES: [f64; 1] = [99.0];

/// The latency metrics of a model row, by the JSON key of their summaries and histograms.
pub const MODEL_METRICS: [&str; 3] = ["ttft_ms", "itl_ms", "e2el_ms"];

/// One model of a benchmark's mix: its requests, tokens and rates (shares of the benchmark's),
/// and its latencies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelFigures {
    /// The name its requests sent in `model`.
    pub name: String,
    /// Its included requests (as `requests.total` counts them): `completed + errored +
    /// incomplete + cancelled`.
    pub requests: u64,
    /// Of them, finished normally.
    pub completed: u64,
    /// Of them, failed.
    pub errored: u64,
    /// Of them, cut off (the benchmark's time ran out).
    pub incomplete: u64,
    /// Of them, cancelled by the client on purpose; absent when none.
    #[serde(default, skip_serializing_if = "bench_core::is_zero")]
    pub cancelled: u64,
    /// Output tokens of its completed requests (its part of
    /// `tokens.output.completed.total`).
    pub output_tokens: u64,
    /// Its share of `rates.requests_per_s`: the benchmark's rate times its part of the
    /// completed requests.
    pub requests_per_s: f64,
    /// Its share of `rates.output_tokens_per_s`: the benchmark's rate times its part of the
    /// completed requests' output tokens.
    pub output_tokens_per_s: f64,
    /// TTFT of its requests in the latency scope (as `metrics.ttft_ms` takes them).
    pub ttft_ms: MetricSummary,
    /// ITL of the same requests.
    pub itl_ms: MetricSummary,
    /// E2EL of the same requests.
    pub e2el_ms: MetricSummary,
    /// The histograms behind the three summaries (base64 HdrHistogram V2, as `histograms`),
    /// by [`MODEL_METRICS`] key: what `bench merge` adds.
    #[serde(default)]
    pub histograms: BTreeMap<String, String>,
}

impl ModelFigures {
    /// The summary of metric `key` of [`MODEL_METRICS`].
    pub fn metric(&self, key: &str) -> &MetricSummary {
        match key {
            "ttft_ms" => &self.ttft_ms,
            "itl_ms" => &self.itl_ms,
            _ => &self.e2el_ms,
        }
    }

    /// The 99th percentile of metric `key`, ms; `None` without a value.
    pub fn p99(&self, key: &str) -> Option<f64> {
        let s = self.metric(key);
        (s.count > 0)
            .then(|| s.percentiles.get("p99").copied())
            .flatten()
    }

    /// The median of metric `key`, ms; `None` without a value.
    pub fn median(&self, key: &str) -> Option<f64> {
        let s = self.metric(key);
        (s.count > 0).then_some(s.median)
    }
}

/// Each request's model (by its place in the accumulator), for a run with a mix.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelLedger {
    names: Vec<String>,
    /// The model index of request `i`, `u16::MAX` for none; started with the first request
    /// that names a model.
    of: Vec<u16>,
}

impl ModelLedger {
    /// A ledger of the models `names` (by index, as records name them); with fewer than two,
    /// one that keeps nothing.
    pub(crate) fn new(names: &[String]) -> Self {
        Self {
            names: if names.len() < 2 {
                Vec::new()
            } else {
                names.to_vec()
            },
            of: Vec::new(),
        }
    }

    /// Notes the model of the request at `index` (its place in the accumulator).
    pub(crate) fn add(&mut self, index: u64, model: Option<u32>) {
        if self.names.is_empty() {
            return;
        }
        let index = index as usize;
        if self.of.len() < index {
            self.of.resize(index, u16::MAX);
        }
        let m = model
            .and_then(|m| u16::try_from(m).ok())
            .unwrap_or(u16::MAX);
        self.of.push(m);
    }

    /// The rows over the requests `window` includes, the latencies over those `steady` holds
    /// (the rule of the benchmark's own distributions), the rates shares of the benchmark's
    /// `rates` (requests/s, output tokens/s); `None` without a mix.
    pub(crate) fn report(
        &self,
        requests: &bench_core::Pages<Compact>,
        store: &ChunkStore,
        (window, steady): (&Window, Option<Steady>),
        rates: (f64, f64),
    ) -> Option<Vec<ModelFigures>> {
        if self.names.is_empty() {
            return None;
        }
        let mut rows: Vec<Row> = self.names.iter().map(|_| Row::default()).collect();
        for (r, &m) in requests.iter().zip(&self.of) {
            let Some(row) = rows.get_mut(usize::from(m)) else {
                continue;
            };
            if r.phase(window) != Phase::Measured {
                continue;
            }
            row.add(r, store, steady);
        }
        let out = self
            .names
            .iter()
            .zip(rows)
            .map(|(name, row)| row.figures(name))
            .collect();
        Some(with_rates(out, rates))
    }
}

/// One model's counts and distributions as the pass collects them.
#[derive(Default)]
struct Row {
    figures: ModelFigures,
    dists: [Dist; 3],
}

impl Row {
    fn add(&mut self, r: &Compact, store: &ChunkStore, steady: Option<Steady>) {
        let f = &mut self.figures;
        f.requests += 1;
        match r.status {
            Status::Completed => f.completed += 1,
            Status::Errored => f.errored += 1,
            Status::Incomplete => f.incomplete += 1,
            Status::Cancelled => f.cancelled += 1,
        }
        if r.status != Status::Completed {
            return;
        }
        f.output_tokens += u64::from(r.output_tokens);
        if !r.in_latency_scope(steady) {
            return;
        }
        if let Some(t) = r.ttft() {
            self.dists[0].record(us(t));
        }
        for gap in r.itl_us(store) {
            self.dists[1].record(gap);
        }
        self.dists[2].record(us(r.e2el()));
    }

    fn figures(self, name: &str) -> ModelFigures {
        let mut f = self.figures;
        f.name = name.to_string();
        set_distributions(&mut f, &self.dists);
        f
    }
}

/// The summaries and histograms of `f` from its three distributions.
fn set_distributions(f: &mut ModelFigures, dists: &[Dist; 3]) {
    f.ttft_ms = dists[0].summary(&MODEL_PERCENTILES);
    f.itl_ms = dists[1].summary(&MODEL_PERCENTILES);
    f.e2el_ms = dists[2].summary(&MODEL_PERCENTILES);
    f.histograms = MODEL_METRICS
        .iter()
        .zip(dists)
        .filter(|(_, d)| d.count() > 0)
        .map(|(k, d)| (k.to_string(), d.encode()))
        .collect();
}

/// The rows with their rates: each model's part of the completed requests (and of their
/// output tokens) of the benchmark's steady rates `(requests/s, output tokens/s)`.
fn with_rates(mut rows: Vec<ModelFigures>, rates: (f64, f64)) -> Vec<ModelFigures> {
    let done: u64 = rows.iter().map(|r| r.completed).sum();
    let tokens: u64 = rows.iter().map(|r| r.output_tokens).sum();
    let part = |n: u64, of: u64| if of > 0 { n as f64 / of as f64 } else { 0.0 };
    for r in &mut rows {
        r.requests_per_s = rates.0 * part(r.completed, done);
        r.output_tokens_per_s = rates.1 * part(r.output_tokens, tokens);
    }
    rows
}

/// Several shards' (or trials') rows together, model by model (matched by name, in the order
/// first met): counts and tokens add, histograms merge (percentiles of all the requests), and
/// rates are shares of the merged benchmark's `rates` (requests/s, output tokens/s). `None`
/// when no part had rows.
pub(crate) fn merge<'a>(
    parts: impl Iterator<Item = &'a Vec<ModelFigures>>,
    rates: (f64, f64),
) -> Result<Option<Vec<ModelFigures>>, Error> {
    let mut rows: Vec<(ModelFigures, [Dist; 3])> = Vec::new();
    for row in parts.flatten() {
        let at = match rows.iter().position(|(o, _)| o.name == row.name) {
            Some(i) => i,
            None => {
                rows.push((
                    ModelFigures {
                        name: row.name.clone(),
                        ..ModelFigures::default()
                    },
                    Default::default(),
                ));
                rows.len() - 1
            }
        };
        let (o, dists) = &mut rows[at];
        o.requests += row.requests;
        o.completed += row.completed;
        o.errored += row.errored;
        o.incomplete += row.incomplete;
        o.cancelled += row.cancelled;
        o.output_tokens += row.output_tokens;
        for (d, key) in dists.iter_mut().zip(MODEL_METRICS) {
            if let Some(encoded) = row.histograms.get(key) {
                d.merge(&Dist::decode(row.metric(key), encoded)?);
            }
        }
    }
    if rows.is_empty() {
        return Ok(None);
    }
    let merged = rows
        .into_iter()
        .map(|(mut f, dists)| {
            set_distributions(&mut f, &dists);
            f
        })
        .collect();
    Ok(Some(with_rates(merged, rates)))
}
