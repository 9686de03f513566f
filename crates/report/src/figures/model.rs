//! The report's data model: what the JSON file holds (and YAML, CSV and HTML are cut from).

use std::collections::BTreeMap;

use bench_core::Strategy;
use bench_core::{Capacity, Nanos, RequestRecord};
use serde::{Deserialize, Serialize};

use crate::figures::hist::{Dist, MetricSummary};
use crate::figures::interval::{around, Interval};
use crate::figures::options::{Goodput, Metric};
use crate::Error;

/// Version of the JSON layout. Bumped on any incompatible change; `read_run` refuses newer.
pub const SCHEMA_VERSION: u32 = 1;

/// A whole run: settings, environment, and every finished benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// Unique id of the run (a UUID).
    pub run_id: String,
    /// When the run started, RFC 3339 UTC.
    pub created: String,
    /// The resolved settings (no secrets). The guidellm console prints its `profile`, `args`,
    /// `worker` and `request_loader` objects when present.
    #[serde(default)]
    pub config: serde_json::Value,
    /// Where and against what the run was made.
    pub environment: Environment,
    /// The capacity answer of an adaptive sweep (`None` for other runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Capacity>,
    /// One entry per finished benchmark, in run order.
    pub benchmarks: Vec<BenchmarkReport>,
    /// This run is one shard of a distributed run (`bench run --shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRun>,
    /// This run was merged from shards (`bench merge`): which, and how far apart they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergedRun>,
    /// A run of repeated trials (`--repeat N`): each trial's own benchmarks, why the trials
    /// stopped, and the across-trial intervals of the capacity and SLO answers; `benchmarks`
    /// then holds the trials pooled (docs/metrics.md, "Repeated trials").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<Trials>,
}

/// What a shard's result says of its shard (docs/distributed.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRun {
    /// This shard's index, from 0.
    pub index: u32,
    /// How many shards share the run.
    pub count: u32,
    /// The shared start (`--start-at`), RFC 3339 UTC; every shard's run clock counts from it.
    /// `None` when the shard was started without one (its merge is refused).
    pub start_at: Option<String>,
    /// How late this process started its first benchmark after `start_at`, milliseconds, by
    /// its own wall clock (negative: it was running before; clocks are not compared).
    pub start_late_ms: Option<f64>,
    /// This shard's clocks as it measured them (docs/distributed.md, "Clocks"); absent in
    /// files written before they were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ShardClock>,
}

/// What a shard measured of its clocks (docs/distributed.md, "Clocks").
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardClock {
    /// Its wall clock minus its run clock (the monotonic clock anchored at `start_at`), in
    /// milliseconds, read as the first benchmark starts: how exactly the run clock sits on
    /// the wall clock.
    pub wall_minus_run_start_ms: f64,
    /// The same, read as the last benchmark ended: a change from the start is how far the
    /// wall clock was stepped or slewed (NTP) during the run, against the monotonic clock
    /// that timed every request.
    #[serde(default)]
    pub wall_minus_run_end_ms: Option<f64>,
    /// Bounds `[low, high]` on its wall clock minus the target server's clock, milliseconds,
    /// from the server's HTTP `Date` header (whole seconds) and the probe's round trip: the
    /// one reference every shard reaches. `None` when the server sent no `Date`.
    #[serde(default)]
    pub server_offset_ms: Option<[f64; 2]>,
}

/// Where a merged run came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedRun {
    /// How many shards were merged.
    pub count: u32,
    /// The shared start, RFC 3339 UTC.
    pub start_at: String,
    /// One entry per shard, by index.
    pub shards: Vec<MergedShard>,
    /// Largest difference between two shards' start of the same benchmark, milliseconds
    /// (their wall clocks as they read them).
    pub max_start_skew_ms: f64,
    /// The least two shards' wall clocks can differ by, given every shard's bounds on its
    /// offset from the target server's clock (`clock.server_offset_ms`), milliseconds: 0
    /// when the bounds overlap; `None` when fewer than two shards measured them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_clock_skew_ms: Option<f64>,
}

/// One shard of a merged run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    /// Its index.
    pub index: u32,
    /// Its run id.
    pub run_id: String,
    /// The client host it ran on.
    pub host: String,
    /// How late it started after the shared start, milliseconds (its own measure).
    pub start_late_ms: Option<f64>,
    /// Its clocks as it measured them, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ShardClock>,
}

impl RunReport {
    /// An empty run with the current schema version.
    pub fn new(run_id: impl Into<String>, created: impl Into<String>) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            run_id: run_id.into(),
            created: created.into(),
            config: serde_json::Value::Null,
            environment: Environment::default(),
            capacity: None,
            benchmarks: Vec::new(),
            shard: None,
            merged: None,
            trials: None,
        }
    }
}

/// Where and against what a run was made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    /// bench's version.
    pub tool_version: String,
    /// Base URL of the server under test (without credentials).
    pub target: String,
    /// Model name sent to the server.
    pub model: String,
    /// Backend kind (`openai_completions`, `openai_chat`, `tgi`, ...).
    pub backend: String,
    /// Host name of the client machine.
    pub host: String,
    /// Tokenizer (processor) used to count tokens, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processor: Option<String>,
    /// Operating system and architecture of the client.
    pub os: String,
    /// Logical CPUs of the client.
    pub cpus: u32,
    /// Anything else worth keeping (server version headers, ...).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
    /// What the server said its batch is (docs/metrics.md, "The server's batch"), when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_batch: Option<bench_core::ServerBatch>,
}

/// Everything reported about one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkReport {
    /// Row label (guidellm's): `synchronous`, `throughput`, `constant@2.20`, ...
    pub label: String,
    /// The load shape with its parameters.
    pub strategy: Strategy,
    /// Wall-clock start, RFC 3339 UTC.
    pub start: String,
    /// Wall-clock end, RFC 3339 UTC.
    pub end: String,
    /// Offsets on the run clock (nanoseconds) of the benchmark and its measurement window.
    pub timeline: Timeline,
    /// Length of the measurement window, seconds (every rate is over this window).
    pub duration_s: f64,
    /// How long the warmup actually was (start to window open), seconds.
    pub warmup_s: f64,
    /// How long the cooldown actually was (window close to the end of sending), seconds.
    pub cooldown_s: f64,
    /// How long the drain was (end of sending until the last request in flight ended or the
    /// drain timeout cancelled it), seconds.
    #[serde(default)]
    pub drain_s: f64,
    /// Why the benchmark stopped (`max_requests`, `max_duration`, `interrupted`, ...).
    pub stop_reason: String,
    /// Request counts by status (of the requests inside the window).
    pub requests: RequestCounts,
    /// Errored requests by kind (`http_503`, `timeout_idle`, ...).
    pub errors: BTreeMap<String, u64>,
    /// Up to three distinct messages per error kind, from every errored request of the
    /// benchmark (warmup and cooldown included): what the server or the transport said.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_samples: BTreeMap<String, Vec<String>>,
    /// Token counts by status, with where they came from.
    pub tokens: Tokens,
    /// Throughput and concurrency over the window.
    pub rates: Rates,
    /// Requests meeting every SLO, when `--goodput` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<GoodputReport>,
    /// Which requests the latency distributions (`metrics`, `histograms`) take: the steady
    /// state, or every measured request (docs/metrics.md, "Steady state").
    #[serde(default)]
    pub latency_scope: LatencyScope,
    /// 95% intervals of the headline figures (docs/metrics.md, "Intervals"), when the
    /// benchmark held at least three batches of one fill time each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<crate::figures::interval::Intervals>,
    /// The `--precision` target and whether the key figures met it (docs/metrics.md,
    /// "Precision"), when the run asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<PrecisionReport>,
    /// The ramp-up the benchmark climbed by (docs/metrics.md, "Ramp-up"): the ramp, what it
    /// climbed to and when its rate changed, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<bench_core::RampRecord>,
    /// The client's own cancellations (docs/metrics.md, "Cancellation"): the share of
    /// requests it cancelled and how long after sending each; `requests.cancelled` counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancellation: Option<bench_core::Cancellation>,
    /// Latency distributions summaries.
    pub metrics: Metrics,
    /// The histograms behind `metrics`, to merge runs or cut other percentiles.
    pub histograms: Histograms,
    /// Every request record, when asked for (`keep_records`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<Vec<RequestRecord>>,
    /// What the server's own metrics endpoint said over this benchmark (when scraped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<bench_servermetrics::ServerMetrics>,
    /// GPU power, utilization, memory and energy from DCGM exporters (`--gpu-metrics`;
    /// docs/metrics.md, "GPU telemetry and energy").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_metrics: Option<bench_servermetrics::gpu::GpuMetrics>,
    /// Sessions, when the benchmark ran them (multi-turn data): how they ended (started,
    /// completed, cut by the end of the benchmark, errored), how long they lasted, and every
    /// per-request metric by turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionReport>,
    /// The prompt tokens the server said it served from its prefix cache (per-request
    /// `usage.prompt_tokens_details.cached_tokens`), when any response said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<crate::figures::cached::CachedTokensReport>,
    /// The images the benchmark's chat requests sent (docs/metrics.md, "Images"); absent
    /// without images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<crate::figures::images::ImageReport>,
    /// What each target was sent and how its requests ended, when the run spread its load
    /// across several targets (docs/metrics.md, "Targets"); absent with one target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<crate::figures::targets::TargetCounts>>,
    /// Each model's requests, rates and latencies, when the run mixed several models
    /// (docs/metrics.md, "Models"); absent with one model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<crate::figures::models::ModelFigures>>,
}

impl BenchmarkReport {
    /// The summary of `metric`.
    pub fn metric(&self, metric: Metric) -> &MetricSummary {
        self.metrics.get(metric)
    }

    /// Percentile `p` of `metric` in milliseconds: from the saved summary when it holds it,
    /// else cut from the saved histogram. `None` when the metric is empty or unavailable.
    pub fn percentile_ms(&self, metric: Metric, p: f64) -> Option<f64> {
        let s = self.metric(metric);
        if s.count == 0 {
            return None;
        }
        if p == 50.0 {
            return Some(s.median);
        }
        if let Some(v) = s
            .percentiles
            .get(&crate::figures::options::percentile_key(p))
        {
            return Some(*v);
        }
        self.distribution(metric)
            .ok()
            .and_then(|d| d.percentile_us(p))
            .map(|us| us / 1000.0)
    }

    /// The distribution of `metric`, rebuilt from the saved histogram.
    pub fn distribution(&self, metric: Metric) -> Result<Dist, Error> {
        let encoded =
            self.histograms.data.get(metric.json_key()).ok_or_else(|| {
                Error::Histogram(format!("no histogram for {}", metric.json_key()))
            })?;
        Dist::decode(self.metric(metric), encoded)
    }
}

/// Offsets on the run clock, nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    /// First request released.
    pub start_ns: Nanos,
    /// Last request finished (or the benchmark was stopped).
    pub end_ns: Nanos,
    /// The measurement window opened (end of warmup).
    pub measure_start_ns: Nanos,
    /// The measurement window closed (start of cooldown).
    pub measure_end_ns: Nanos,
    /// The steady state opened: the end of the fill ramp (latency figures take the requests
    /// sent from here), when the latencies are the steady state's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_start_ns: Option<Nanos>,
    /// The steady state closed (latency figures take the requests that ended by here), when
    /// the latencies are the steady state's and no cooldown kept the load on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_end_ns: Option<Nanos>,
}

pub use bench_core::LatencyScope;

/// Request counts. `completed + incomplete + errored + cancelled` are the requests inside the
/// window (requests that ended before it opened or were sent after it closed are excluded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestCounts {
    /// Finished normally.
    pub completed: u64,
    /// Cancelled while in flight (the benchmark's time ran out).
    pub incomplete: u64,
    /// Failed (HTTP, transport, timeout, in-stream error, protocol).
    pub errored: u64,
    /// Cancelled by the client on purpose (`--cancel-rate`; docs/metrics.md, "Cancellation"):
    /// neither errors nor incomplete. Absent from runs without cancellations.
    #[serde(default, skip_serializing_if = "bench_core::is_zero")]
    pub cancelled: u64,
    /// `completed + incomplete + errored + cancelled`.
    pub total: u64,
    /// Excluded: ended before the window opened.
    pub excluded_warmup: u64,
    /// Excluded: sent after the window closed.
    pub excluded_cooldown: u64,
    /// Completed requests counted above but left out of the latency distributions: sent in
    /// the fill ramp or ending in the drain (`latency_scope` `steady`).
    #[serde(default)]
    pub excluded_unsteady: u64,
}

impl RequestCounts {
    /// The requests goodput's fraction is a share of (docs/metrics.md, "Goodput"): every
    /// included request but the completed ones outside the steady state and those the client
    /// cancelled on purpose (AIPerf's rule): failures and incomplete requests count against it.
    pub fn goodput_judged(&self) -> u64 {
        self.total
            .saturating_sub(self.cancelled)
            .saturating_sub(self.excluded_unsteady)
    }
}

/// Token counts of one kind (prompt or output), by status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenCounts {
    /// Completed requests.
    pub completed: TokenStat,
    /// Incomplete requests (what arrived before cancellation).
    pub incomplete: TokenStat,
    /// Errored requests.
    pub errored: TokenStat,
    /// Requests the client cancelled on purpose (what arrived before the cancellation);
    /// absent from runs without cancellations.
    #[serde(default, skip_serializing_if = "TokenStat::is_empty")]
    pub cancelled: TokenStat,
    /// Requests by where their count came from (`usage`, `tokenizer`, `chunks`, `requested`).
    pub sources: BTreeMap<String, u64>,
}

/// Tokens of the requests of one status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenStat {
    /// Sum over the requests.
    pub total: u64,
    /// Mean per request (0 when there are none).
    pub per_request: f64,
}

impl TokenStat {
    /// No tokens (no request, or none with tokens).
    pub fn is_empty(&self) -> bool {
        self.total == 0 && self.per_request == 0.0
    }
}

/// Prompt and output tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    /// Prompt (input) tokens.
    pub prompt: TokenCounts,
    /// Output (generated) tokens.
    pub output: TokenCounts,
    /// Reasoning tokens (part of `output`), when some measured request carried reasoning;
    /// requests without reasoning count 0. `sources` says where each count came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<TokenCounts>,
    /// Answer tokens, `output - reasoning` per request, when `reasoning` is present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<TokenCounts>,
}

impl Tokens {
    /// Whether any measured request of the benchmark carried reasoning: the consoles show
    /// the reasoning figures only then.
    pub fn saw_reasoning(&self) -> bool {
        self.reasoning.is_some()
    }
}

/// Rates over the measurement window. Throughputs count completed requests only (as vLLM
/// and guidellm do), clipped to the window: a completion counts if it ended inside it, an
/// output token if it arrived inside it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// Completed requests per second.
    pub requests_per_s: f64,
    /// Output tokens per second.
    pub output_tokens_per_s: f64,
    /// Prompt (input) tokens per second, `requests_per_s` times the mean prompt tokens: the
    /// throughput of embeddings and rerank runs, which generate nothing.
    #[serde(default)]
    pub input_tokens_per_s: f64,
    /// Prompt plus output tokens per second (a prompt counts when its first token arrived).
    pub total_tokens_per_s: f64,
    /// Time-weighted mean of requests in flight (sent, not yet ended), any status.
    pub concurrency: f64,
    /// Most requests in flight at once inside the window.
    pub peak_concurrency: u64,
    /// Most output tokens arriving in one 1 s bucket of the window (buckets from its start).
    pub peak_output_tokens_per_s: f64,
    /// Requests actually sent per second inside the window.
    pub achieved_rate: f64,
    /// The rate asked for (open-loop strategies only).
    #[serde(default)]
    pub target_rate: Option<f64>,
    /// Open loops: whether the load was sustained while it was on (docs/metrics.md,
    /// "Sustained"); absent for other loads and spans too short to judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustained: Option<bench_core::Sustained>,
    /// Open loops without a judgement: why (too few arrivals in the loaded span, or none
    /// completed); such a load never counts as kept up (docs/metrics.md, "Sustained").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unjudged: Option<bench_core::Unjudged>,
}

/// Goodput: completed requests meeting every bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoodputReport {
    /// The bounds.
    pub slo: Goodput,
    /// Good requests (inside the window).
    pub requests: u64,
    /// Good requests that ended inside the window, per second.
    pub per_s: f64,
    /// Good requests over every request sent (failures count against it), 0..=1.
    pub fraction: f64,
}

/// Summaries of every latency metric (milliseconds). See docs/metrics.md.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Time to first token from the actual send.
    pub ttft_ms: MetricSummary,
    /// `(t_last - t_first) / (n - 1)` per request (vLLM's TPOT), request-weighted.
    pub tpot_ms: MetricSummary,
    /// Every gap between consecutive content chunks, pooled (vLLM's ITL).
    pub itl_ms: MetricSummary,
    /// End-to-end latency, `t_end - t_send`.
    pub e2el_ms: MetricSummary,
    /// `e2el / n` per request.
    pub token_latency_ms: MetricSummary,
    /// guidellm's ITL: `(t_last - t_first) / (n - 1)`, token-weighted.
    pub itl_per_request_ms: MetricSummary,
    /// Time to first token from the intended send time.
    pub ttft_from_scheduled_ms: MetricSummary,
    /// End-to-end latency from the intended send time (coordinated-omission corrected).
    pub e2el_from_scheduled_ms: MetricSummary,
    /// Client queue time, `slot - scheduled`.
    pub queue_ms: MetricSummary,
    /// Dispatch delay, `dispatched - slot`.
    pub dispatch_delay_ms: MetricSummary,
    /// Time to first output token, `t_first_answer - t_send`: the first chunk that is not
    /// reasoning (equals TTFT for a response without reasoning).
    #[serde(default)]
    pub ttfo_ms: MetricSummary,
    /// Reasoning duration, `t_first_answer - t_first`, of the requests whose first chunk was
    /// reasoning and that reached an answer.
    #[serde(default)]
    pub reasoning_time_ms: MetricSummary,
    /// Every gap between two consecutive reasoning chunks, pooled.
    #[serde(default)]
    pub reasoning_itl_ms: MetricSummary,
    /// Every gap between two consecutive answer chunks, pooled (equals `itl_ms` for
    /// responses without reasoning).
    #[serde(default)]
    pub answer_itl_ms: MetricSummary,
}

impl Metrics {
    /// The summary of `metric`.
    pub fn get(&self, metric: Metric) -> &MetricSummary {
        match metric {
            Metric::Ttft => &self.ttft_ms,
            Metric::Tpot => &self.tpot_ms,
            Metric::Itl => &self.itl_ms,
            Metric::E2el => &self.e2el_ms,
            Metric::TokenLatency => &self.token_latency_ms,
            Metric::ItlPerRequest => &self.itl_per_request_ms,
            Metric::TtftFromScheduled => &self.ttft_from_scheduled_ms,
            Metric::E2elFromScheduled => &self.e2el_from_scheduled_ms,
            Metric::Queue => &self.queue_ms,
            Metric::DispatchDelay => &self.dispatch_delay_ms,
            Metric::Ttfo => &self.ttfo_ms,
            Metric::ReasoningTime => &self.reasoning_time_ms,
            Metric::ReasoningItl => &self.reasoning_itl_ms,
            Metric::AnswerItl => &self.answer_itl_ms,
        }
    }

    pub(crate) fn get_mut(&mut self, metric: Metric) -> &mut MetricSummary {
        match metric {
            Metric::Ttft => &mut self.ttft_ms,
            Metric::Tpot => &mut self.tpot_ms,
            Metric::Itl => &mut self.itl_ms,
            Metric::E2el => &mut self.e2el_ms,
            Metric::TokenLatency => &mut self.token_latency_ms,
            Metric::ItlPerRequest => &mut self.itl_per_request_ms,
            Metric::TtftFromScheduled => &mut self.ttft_from_scheduled_ms,
            Metric::E2elFromScheduled => &mut self.e2el_from_scheduled_ms,
            Metric::Queue => &mut self.queue_ms,
            Metric::DispatchDelay => &mut self.dispatch_delay_ms,
            Metric::Ttfo => &mut self.ttfo_ms,
            Metric::ReasoningTime => &mut self.reasoning_time_ms,
            Metric::ReasoningItl => &mut self.reasoning_itl_ms,
            Metric::AnswerItl => &mut self.answer_itl_ms,
        }
    }
}

/// Serialized histograms, keyed like `metrics`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Histograms {
    /// Unit of the recorded values: `us`.
    pub unit: String,
    /// Significant figures: 3.
    pub significant_figures: u8,
    /// `hdrhistogram-v2-deflate-base64`: HdrHistogram's compressed V2 encoding in base64.
    pub encoding: String,
    /// Encoded histogram per metric key (`ttft_ms`, ...).
    pub data: BTreeMap<String, String>,
}

/// The sessions of one benchmark (docs/metrics.md, "Sessions").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionReport {
    /// How the sessions ended, whole benchmark (the scheduler's count).
    #[serde(flatten)]
    pub counts: bench_core::SessionCounts,
    /// Session duration (ms): its first turn dispatched to its last turn's end, think time
    /// included; every completed session of the benchmark (not windowed, like the counts).
    #[serde(default)]
    pub duration_ms: MetricSummary,
    /// The per-request figures by turn: turns 1 to [`TURN_ROWS`]` - 1` one row each, later
    /// turns pooled into the last row (`and_later`). Requests are placed in the window as
    /// everywhere else.
    #[serde(default)]
    pub turns: Vec<TurnReport>,
    /// The histogram behind `duration_ms` (key `duration_ms`), encoded as `histograms.data`,
    /// so that shards merge exactly (absent in files written before it was kept).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub histograms: BTreeMap<String, String>,
    /// Per-session prefix cache and replicas, when the responses said either (the usage's
    /// `cached_tokens`, `--replica-header`; docs/metrics.md, "Per-session cache and
    /// replicas").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<SessionCache>,
}

/// Per-session prefix cache and replicas, over every session's completed requests (whole
/// benchmark).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionCache {
    /// Sessions with a completed request.
    pub sessions: u64,
    /// The mean over sessions of each session's cached share.
    pub cached_share_mean: f64,
    /// All sessions' cached tokens over all their prompt tokens.
    pub cached_share_overall: f64,
    /// Sessions whose responses all named one replica (absent without `--replica-header`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_replica: Option<u64>,
    /// Every session, by number.
    pub per_session: Vec<SessionCacheRow>,
}

/// One session's completed requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionCacheRow {
    /// The session's number in its benchmark (the value `--session-header` sent).
    pub session: u64,
    /// Completed requests (user turns and tool results).
    pub requests: u64,
    /// The highest turn completed.
    pub turns: u32,
    /// Their prompt tokens.
    pub prompt_tokens: u64,
    /// Of those, the tokens the server said its prefix cache served (`cached_tokens`).
    pub cached_tokens: u64,
    /// `cached_tokens / prompt_tokens` (0 without prompt tokens).
    pub cached_share: f64,
    /// Distinct replicas its responses named (0 without `--replica-header`).
    pub replicas: u32,
}

/// Turn rows in a report: turns 1..=9 one row each, turns 10 and later pooled in the tenth.
pub const TURN_ROWS: u32 = 10;

/// The included requests of one turn index (or, for the last row, of every later turn).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnReport {
    /// The turn, from 1.
    pub turn: u32,
    /// What the row's requests sent: `tool_result` for the requests answering a tool call of
    /// user turn `turn` (absent: user messages; docs/metrics.md, "Tool calls").
    #[serde(default, skip_serializing_if = "bench_core::TurnKind::is_user")]
    pub kind: bench_core::TurnKind,
    /// This row also pools every later turn (only the last row, when later turns ran).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub and_later: bool,
    /// Requests of this turn by status, as `requests` (included, excluded).
    pub requests: RequestCounts,
    /// Time to first token of its completed requests.
    pub ttft_ms: MetricSummary,
    /// Every chunk gap of its completed requests, pooled (as `metrics.itl_ms`).
    pub itl_ms: MetricSummary,
    /// TPOT of its completed requests.
    pub tpot_ms: MetricSummary,
    /// End-to-end latency of its completed requests.
    pub e2el_ms: MetricSummary,
    /// Prompt tokens of its completed requests (the history's growth).
    pub prompt_tokens: TokenSummary,
    /// Output tokens of its completed requests.
    pub output_tokens: TokenSummary,
    /// The histograms behind its four metrics (keys `ttft_ms`, `itl_ms`, `tpot_ms`,
    /// `e2el_ms`), encoded as `histograms.data`, so that shards merge exactly (absent in
    /// files written before they were kept).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub histograms: BTreeMap<String, String>,
}

/// Exact token figures over a set of requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenSummary {
    /// Requests counted.
    pub count: u64,
    /// Sum of their tokens.
    pub total: u64,
    /// `total / count` (0 when there are none).
    pub mean: f64,
    /// Fewest.
    pub min: u64,
    /// Most.
    pub max: u64,
}

impl TokenSummary {
    /// Adds one request's tokens.
    pub fn add(&mut self, tokens: u64) {
        self.min = if self.count == 0 {
            tokens
        } else {
            self.min.min(tokens)
        };
        self.max = self.max.max(tokens);
        self.count += 1;
        self.total += tokens;
        self.mean = self.total as f64 / self.count as f64;
    }
}

/// The trials of a repeated run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trials {
    /// `--repeat N`: the trials asked for (the most, with `--repeat-until`).
    pub requested: u32,
    /// `--repeat-until`: the target half-width of every key figure's interval, as a fraction
    /// of the figure (0.02 for `2%`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<f64>,
    /// Why the trials stopped: `all trials ran`, `converged`, `interrupted`.
    pub stop_reason: String,
    /// Each trial, in run order, its benchmarks written as they finished.
    pub runs: Vec<Trial>,
    /// The across-trial interval of the capacity (`max_requests_per_s`), for sweeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<AcrossTrials>,
    /// The across-trial interval of the SLO answer (`slo_max_requests_per_s`), for sweeps with
    /// `--slo` whose every trial found one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<AcrossTrials>,
}

/// One trial: its data seed and its own benchmarks and capacity answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// From 0.
    pub index: u32,
    /// The seed of its synthetic data (absent for files: they continue where the previous
    /// trial stopped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_seed: Option<u64>,
    /// Its benchmarks, as a run without `--repeat` reports them.
    pub benchmarks: Vec<BenchmarkReport>,
    /// Its capacity answer (sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Capacity>,
}

/// A figure measured once per trial: the trials' values, their mean and the 95% interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcrossTrials {
    /// The mean of `values`.
    pub mean: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// One value per trial.
    pub values: Vec<f64>,
}

impl AcrossTrials {
    /// `mean ± t(0.975, n - 1) × sd / √n`; `None` with fewer than two values.
    pub fn of(values: Vec<f64>) -> Option<Self> {
        if values.len() < 2 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let Interval { low, high } = around(mean, &values);
        Some(Self {
            mean,
            low,
            high,
            values,
        })
    }
}

/// The relative half-widths of a benchmark's key figures (fractions of each figure), each
/// absent when the figure has no interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HalfWidths {
    /// Of the request throughput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_s: Option<f64>,
    /// Of the output token throughput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_per_s: Option<f64>,
    /// Of the TTFT median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_median: Option<f64>,
    /// Of the ITL median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_median: Option<f64>,
}

impl HalfWidths {
    /// In the order of [`bench_core::Precision::KEY_FIGURES`].
    pub fn key_figures(&self) -> [Option<f64>; bench_core::KEY_FIGURES] {
        [
            self.requests_per_s,
            self.output_tokens_per_s,
            self.ttft_median,
            self.itl_median,
        ]
    }

    /// The widest of them.
    pub fn widest(&self) -> Option<f64> {
        self.key_figures().into_iter().flatten().reduce(f64::max)
    }
}

/// What a benchmark run with `--precision` says of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrecisionReport {
    /// The target: the largest relative half-width accepted (0.05 for 5%).
    pub target: f64,
    /// The most seconds the benchmark could run for it.
    pub budget_s: f64,
    /// Whether every key figure's 95% interval is within the target.
    pub met: bool,
    /// The relative half-widths of the key figures' intervals.
    pub half_widths: HalfWidths,
}

/// The counts of several parts (shards, trials, turns) added up.
pub(crate) fn sum_counts(counts: impl Iterator<Item = RequestCounts>) -> RequestCounts {
    counts.fold(RequestCounts::default(), |a, c| RequestCounts {
        completed: a.completed + c.completed,
        incomplete: a.incomplete + c.incomplete,
        errored: a.errored + c.errored,
        cancelled: a.cancelled + c.cancelled,
        total: a.total + c.total,
        excluded_warmup: a.excluded_warmup + c.excluded_warmup,
        excluded_cooldown: a.excluded_cooldown + c.excluded_cooldown,
        excluded_unsteady: a.excluded_unsteady + c.excluded_unsteady,
    })
}
