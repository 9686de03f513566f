//! vLLM's result file (`vllm bench serve --save-result`): one JSON object per benchmark with
//! vLLM's own field names and meanings, so dashboards that read vLLM's files read bench's.
//!
//! Fields (as `vllm bench serve` writes them): `date`, `endpoint_type`, `backend`, `label`,
//! `model_id`, `tokenizer_id`, `num_prompts`, the `--metadata` pairs, `request_rate` (a number,
//! or `"inf"` when everything is due at once), `burstiness`, `max_concurrency`, `duration`,
//! `completed`, `failed`, `total_input_tokens`, `total_output_tokens`, `request_throughput`,
//! `request_goodput`, `output_throughput`, `total_token_throughput`,
//! `max_output_tokens_per_s`, `max_concurrent_requests`, and for each of the percentile
//! metrics `mean_<m>_ms`, `median_<m>_ms`, `std_<m>_ms` and `p<P>_<m>_ms`. The figures are
//! the ones the vLLM console prints (docs/metrics.md); the per-request lists vLLM adds with
//! `--save-detailed` are not written (bench's `--save-records` keeps full records in its own
//! JSON).

use std::collections::BTreeMap;

use bench_core::Strategy;
use serde_json::{json, Map, Value};

use crate::figures::model::BenchmarkReport;
use crate::figures::options::{percentile_word, Metric};
use crate::views::common::max_concurrency;

/// What vLLM's file holds besides the benchmark's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct VllmResultMeta {
    /// `--backend` as vLLM names it (`openai`, `openai-chat`, `tgi`).
    pub backend: String,
    /// `--label` (the file name's prefix; default the backend).
    pub label: Option<String>,
    /// The model.
    pub model_id: String,
    /// The tokenizer (`--tokenizer`; vLLM's default is the model).
    pub tokenizer_id: String,
    /// `--num-prompts` (a burst's size when the benchmark is a burst).
    pub num_prompts: Option<u64>,
    /// `--metadata KEY=VALUE` pairs, added as top-level fields.
    pub metadata: BTreeMap<String, String>,
    /// Sections written (`--percentile-metrics`; vLLM's default `ttft,tpot,itl`).
    pub percentile_metrics: Vec<Metric>,
    /// Percentiles written (`--metric-percentiles`; default 99).
    pub metric_percentiles: Vec<f64>,
    /// vLLM's `date`: local `YYYYmmdd-HHMMSS` of the run.
    pub date: String,
}

/// vLLM's `request_rate`: the open-loop rate, else infinity (everything due at once).
fn request_rate(strategy: &Strategy) -> Option<f64> {
    match strategy {
        Strategy::Constant { rate, .. } | Strategy::Poisson { rate, .. } => Some(*rate),
        _ => None,
    }
}

fn burstiness(strategy: &Strategy) -> f64 {
    match strategy {
        Strategy::Poisson { burstiness, .. } => *burstiness,
        _ => 1.0,
    }
}

fn num(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// The result object of one benchmark.
pub fn vllm_result(b: &BenchmarkReport, meta: &VllmResultMeta) -> Value {
    let mut o = Map::new();
    o.insert("date".into(), json!(meta.date));
    o.insert("endpoint_type".into(), json!(meta.backend));
    o.insert("backend".into(), json!(meta.backend));
    o.insert("label".into(), json!(meta.label));
    o.insert("model_id".into(), json!(meta.model_id));
    o.insert("tokenizer_id".into(), json!(meta.tokenizer_id));
    let num_prompts = match &b.strategy {
        Strategy::Burst { count } => Some(u64::from(*count)),
        _ => meta.num_prompts,
    };
    o.insert("num_prompts".into(), json!(num_prompts));
    for (k, v) in &meta.metadata {
        o.insert(k.clone(), json!(v));
    }
    o.insert(
        "request_rate".into(),
        request_rate(&b.strategy).map_or(json!("inf"), num),
    );
    o.insert("burstiness".into(), num(burstiness(&b.strategy)));
    o.insert(
        "max_concurrency".into(),
        json!(max_concurrency(&b.strategy)),
    );
    // vLLM's meanings: its benchmark runs from the first request to the last answer (it waits
    // for every request) and its throughputs are totals over that duration, so this file uses
    // the measurement window plus the drain, not bench's steady-state rates.
    let dur = b.duration_s + b.drain_s;
    let per_s = |x: f64| if dur > 0.0 { x / dur } else { 0.0 };
    o.insert("duration".into(), num(dur));
    o.insert("completed".into(), json!(b.requests.completed));
    o.insert(
        "failed".into(),
        json!(b.requests.errored + b.requests.incomplete),
    );
    o.insert(
        "total_input_tokens".into(),
        json!(b.tokens.prompt.completed.total),
    );
    o.insert(
        "total_output_tokens".into(),
        json!(b.tokens.output.completed.total),
    );
    let r = &b.rates;
    let (input, output) = (
        b.tokens.prompt.completed.total as f64,
        b.tokens.output.completed.total as f64,
    );
    o.insert(
        "request_throughput".into(),
        num(per_s(b.requests.completed as f64)),
    );
    o.insert(
        "request_goodput".into(),
        b.goodput
            .as_ref()
            .map_or(Value::Null, |g| num(per_s(g.requests as f64))),
    );
    o.insert("output_throughput".into(), num(per_s(output)));
    o.insert("total_token_throughput".into(), num(per_s(input + output)));
    o.insert(
        "max_output_tokens_per_s".into(),
        num(r.peak_output_tokens_per_s),
    );
    o.insert("max_concurrent_requests".into(), json!(r.peak_concurrency));
    for &m in &meta.percentile_metrics {
        let s = b.metric(m);
        let name = m.cli_name();
        o.insert(format!("mean_{name}_ms"), num(s.mean));
        o.insert(format!("median_{name}_ms"), num(s.median));
        o.insert(format!("std_{name}_ms"), num(s.stdev));
        for &p in &meta.metric_percentiles {
            let v = b.percentile_ms(m, p).unwrap_or(0.0);
            o.insert(format!("p{}_{name}_ms", percentile_word(p)), num(v));
        }
    }
    Value::Object(o)
}

/// vLLM's default file name: `LABEL-RATEqps[-concurrencyN]-MODEL-DATE.json`, with the rate
/// written as Python prints it (`5.0`, `inf`) and the model's last path segment.
pub fn vllm_result_filename(b: &BenchmarkReport, meta: &VllmResultMeta) -> String {
    let label = meta.label.clone().unwrap_or_else(|| meta.backend.clone());
    let rate = match request_rate(&b.strategy) {
        Some(r) if r.fract() == 0.0 => format!("{r:.1}"),
        Some(r) => format!("{r}"),
        None => "inf".into(),
    };
    let conc = max_concurrency(&b.strategy)
        .map(|c| format!("-concurrency{c}"))
        .unwrap_or_default();
    let model = meta.model_id.rsplit('/').next().unwrap_or(&meta.model_id);
    let name = format!("{label}-{rate}qps{conc}-{model}-{}.json", meta.date);
    name.replace(['/', '\\'], "_")
}
