//! Profile files: what a YAML profile may hold (the same settings as the flags, keys with
//! `_`). Unknown keys are rejected by name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bench_profile::{OverSaturation, Transient};
use serde::{Deserialize, Serialize};

use super::Console;
use crate::UsageError;

/// What a profile file may hold. Unknown keys are rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileSettings {
    // Target
    /// One URL, a comma-separated string of them, or a list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetList>,
    /// `round-robin`, `least-outstanding` or `session-affinity` (several targets).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balance: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mock: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mock_config: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// One model name, a comma-separated string of them (`name:weight` for weights), or a
    /// list: a model mix (docs/cli.md, "Model mixes").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<TargetList>,
    /// `round-robin`, `random` or `weighted` (several models).
    #[serde(
        skip_serializing_if = "Option::is_none",
        alias = "model_selection_strategy"
    )]
    pub model_selection: Option<String>,
    /// vLLM: LoRA adapters the requests name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lora_modules: Option<Vec<String>>,
    /// vLLM: `random` or `round-robin`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lora_assignment: Option<String>,
    /// inference-perf: `[{name, split}]`, each request an adapter drawn with the splits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lora_traffic_split: Option<Vec<LoraSplit>>,
    /// `Name: value` strings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<Vec<String>>,
    /// Sessions: the header carrying each session's number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_header: Option<String>,
    /// Sessions: the response header naming the replica.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica_header: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http2: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cacert: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_timeout: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_byte_timeout: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_timeout: Option<f64>,
    /// Local addresses to connect from (`--source-address`): IPs or IPv4 ranges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_address: Option<Vec<String>>,

    // Request body
    /// A mapping merged into every body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_body: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_eos: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vllm_extensions: Option<String>,
    /// `false`: one JSON reply per request (`--no-stream`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Read `<think>` tags as reasoning (`--think-tags`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think_tags: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repetition_penalty: Option<f64>,

    // Data
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<DataValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_column: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processor: Option<String>,

    // Load
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateList>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup: Option<RateList>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_prompts: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burstiness: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_rate_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo_tolerance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo_precision: Option<PrecisionValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_precision: Option<PrecisionValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain_timeout: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<PrecisionValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision_budget: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_errors: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_error_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_over_saturated: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_saturation: Option<OverSaturation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Transient>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<Transient>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", alias = "rampup_duration")]
    pub rampup: Option<serde_yaml::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp_up_strategy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp_up_start_rps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp_up_end_rps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rampup_in_window: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel_rate: Option<serde_yaml::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_cancellation_rate: Option<f64>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        alias = "request_cancellation_delay"
    )]
    pub cancel_after: Option<serde_yaml::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat: Option<serde_yaml::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_until: Option<serde_yaml::Value>,

    // Report
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Vec<PathBuf>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub console: Option<Console>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vllm_layout: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quiet: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentile_metrics: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric_percentiles: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub save_records: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_metrics_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_metrics_interval: Option<f64>,
    /// DCGM exporters: one URL, a comma-separated string of them, or a list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_metrics: Option<TargetList>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_empty: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub save_result: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_dir: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_filename: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,

    // bench plan (ignored by sweep and run)
    /// The deployment plan's settings (`bench plan`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<super::plan::PlanFile>,
}

/// `precision:` in a file: a fraction or a percentage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PrecisionValue {
    /// `precision: 0.05`
    Fraction(f64),
    /// `precision: 5%`
    Text(String),
}

impl PrecisionValue {
    /// As the user wrote it.
    pub fn text(&self) -> String {
        match self {
            PrecisionValue::Fraction(f) => f.to_string(),
            PrecisionValue::Text(t) => t.clone(),
        }
    }
}

/// One adapter of inference-perf's `lora_traffic_split`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraSplit {
    /// The adapter's name.
    pub name: String,
    /// Its share of the requests.
    pub split: f64,
}

/// `target:` (or `model:`) in a file: one string (or a comma-separated string of several), or
/// a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, try_from = "serde_yaml::Value")]
pub enum TargetList {
    /// `target: http://a:8000` or `target: "http://a:8000,http://b:8000"`
    One(String),
    /// `target: [http://a:8000, http://b:8000]`
    Many(Vec<String>),
}

impl TargetList {
    /// The strings given, each still to be split at commas.
    pub fn given(&self) -> Vec<String> {
        match self {
            TargetList::One(s) => vec![s.clone()],
            TargetList::Many(v) => v.clone(),
        }
    }
}

/// `rate:` in a file: one number, a list, or a comma-separated string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, try_from = "serde_yaml::Value")]
pub enum RateList {
    /// `rate: 4`
    One(f64),
    /// `rate: [1, 2, 4]`
    Many(Vec<f64>),
    /// `rate: "1,2,4"`
    Text(String),
}

/// `data:` in a file: the `--data` string, or a mapping of the same keys
/// (`data: {prompt_tokens: 256, output_tokens: 128}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DataValue {
    /// `data: prompt_tokens=256,output_tokens=128` or `data: prompts.jsonl`
    Text(String),
    /// `data: {prompt_tokens: 256}`
    Map(BTreeMap<String, serde_yaml::Value>),
}

impl DataValue {
    /// The `--data` string form (`k=v,k=v`); a mapping's values must be scalars.
    pub fn to_arg(&self) -> Result<String, String> {
        match self {
            DataValue::Text(s) => Ok(s.clone()),
            DataValue::Map(m) => {
                let mut parts = Vec::with_capacity(m.len());
                for (k, v) in m {
                    let v = match v {
                        serde_yaml::Value::String(s) => s.clone(),
                        serde_yaml::Value::Number(n) => n.to_string(),
                        serde_yaml::Value::Bool(b) => b.to_string(),
                        _ => return Err(format!("data.{k}: expected a number or a string")),
                    };
                    if v.contains(',') {
                        return Err(format!("data.{k}: a value cannot hold a comma"));
                    }
                    parts.push(format!("{k}={v}"));
                }
                Ok(parts.join(","))
            }
        }
    }
}

/// Reads a profile file; unknown keys and bad values are errors naming the file and the key.
pub fn load_file(path: &Path) -> anyhow::Result<FileSettings> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError::new(format!("profile {}: cannot read: {e}", path.display())))?;
    let parsed: FileSettings = serde_yaml::from_str(&text)
        .map_err(|e| UsageError::new(format!("profile {}: {e}", path.display())))?;
    Ok(parsed)
}

impl TryFrom<serde_yaml::Value> for TargetList {
    type Error = String;

    fn try_from(v: serde_yaml::Value) -> Result<Self, String> {
        use serde_yaml::Value;
        let bad =
            || "target: expected a URL, a comma-separated string or a list of URLs".to_string();
        match v {
            Value::String(s) => Ok(TargetList::One(s)),
            Value::Sequence(items) => items
                .into_iter()
                .map(|i| match i {
                    Value::String(s) => Ok(s),
                    _ => Err(bad()),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(TargetList::Many),
            _ => Err(bad()),
        }
    }
}

impl TryFrom<serde_yaml::Value> for RateList {
    type Error = String;

    fn try_from(v: serde_yaml::Value) -> Result<Self, String> {
        use serde_yaml::Value;
        let bad =
            || "rate: expected a number, a list of numbers or a comma-separated string".to_string();
        match v {
            Value::Number(n) => n.as_f64().map(RateList::One).ok_or_else(bad),
            Value::String(s) => Ok(RateList::Text(s)),
            Value::Sequence(items) => items
                .iter()
                .map(|i| i.as_f64().ok_or_else(bad))
                .collect::<Result<Vec<_>, _>>()
                .map(RateList::Many),
            _ => Err(bad()),
        }
    }
}
