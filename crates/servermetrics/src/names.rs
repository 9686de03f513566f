//! The names vLLM, SGLang, TGI and llama.cpp give the figures a capacity planner needs. The
//! table is the one place these names live; `docs/metrics.md` prints it.

/// Labels whose values tell apart figures of one metric name rather than copies of one figure
/// (engines, models, ranks): a series carrying one is folded under `name{label="value"}`
/// (vLLM's accepted tokens per draft position,
/// `vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"}`, ...).
pub const KEPT_LABELS: [&str; 1] = ["position"];

/// What bench reads a server figure from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A gauge (summarized as mean / max / last).
    Gauge(&'static str),
    /// A counter (delta over the benchmark).
    Counter(&'static str),
    /// The `_sum` of a histogram used as a counter (TGI counts tokens this way).
    HistogramSum(&'static str),
    /// A ratio of two counters' deltas: hits / queries.
    Ratio(&'static str, &'static str),
    /// A share of two counters' deltas: hits / (hits + misses).
    Share(&'static str, &'static str),
    /// The sum of two counters' deltas.
    CounterSum(&'static str, &'static str),
    /// A histogram (bucket deltas, estimated percentiles).
    Histogram(&'static str),
}

impl Source {
    /// The metric names this source reads.
    pub fn names(&self) -> Vec<&'static str> {
        match *self {
            Source::Gauge(n) | Source::Counter(n) | Source::Histogram(n) => vec![n],
            Source::HistogramSum(n) => vec![n],
            Source::Ratio(a, b) | Source::Share(a, b) | Source::CounterSum(a, b) => vec![a, b],
        }
    }
}

/// The figures bench looks for on every server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Running,
    Waiting,
    KvUsage,
    PrefixHitRate,
    Preemptions,
    PromptTokens,
    GenerationTokens,
    Ttft,
    Itl,
    E2e,
    /// Speculative decoding (not in [`Role::ALL`]: `crate::spec` reads these over the steady
    /// window): verifications of drafts, draft tokens, accepted draft tokens, accepted tokens
    /// per draft position (a counter whose `position` label the fold keeps), and the
    /// acceptance rate and length as gauges.
    SpecDrafts,
    SpecDraftTokens,
    SpecAcceptedTokens,
    SpecAcceptedPerPosition,
    SpecAcceptRate,
    SpecAcceptLength,
}

impl Role {
    pub const ALL: [Role; 10] = [
        Role::Running,
        Role::Waiting,
        Role::KvUsage,
        Role::PrefixHitRate,
        Role::Preemptions,
        Role::PromptTokens,
        Role::GenerationTokens,
        Role::Ttft,
        Role::Itl,
        Role::E2e,
    ];

    /// The key of this figure in `server_metrics.summary`.
    pub fn key(self) -> &'static str {
        match self {
            Role::Running => "running",
            Role::Waiting => "waiting",
            Role::KvUsage => "kv_usage",
            Role::PrefixHitRate => "prefix_cache_hit_rate",
            Role::Preemptions => "preemptions",
            Role::PromptTokens => "prompt_tokens",
            Role::GenerationTokens => "generation_tokens",
            Role::Ttft => "ttft",
            Role::Itl => "itl",
            Role::E2e => "e2e",
            Role::SpecDrafts
            | Role::SpecDraftTokens
            | Role::SpecAcceptedTokens
            | Role::SpecAcceptedPerPosition
            | Role::SpecAcceptRate
            | Role::SpecAcceptLength => "spec_decode",
        }
    }
}

/// A known server and where it keeps each figure (first name present wins; older names
/// follow newer ones).
#[derive(Debug)]
pub struct Server {
    pub name: &'static str,
    pub sources: &'static [(Role, Source)],
}

use Role::*;
use Source::*;

/// vLLM (V1 names first, V0 names after), SGLang, TGI, llama.cpp.
pub const SERVERS: &[Server] = &[
    Server {
        name: "vllm",
        sources: &[
            (Running, Gauge("vllm:num_requests_running")),
            (Waiting, Gauge("vllm:num_requests_waiting")),
            (KvUsage, Gauge("vllm:kv_cache_usage_perc")),
            (KvUsage, Gauge("vllm:gpu_cache_usage_perc")),
            (
                PrefixHitRate,
                Ratio(
                    "vllm:prefix_cache_hits_total",
                    "vllm:prefix_cache_queries_total",
                ),
            ),
            (PrefixHitRate, Gauge("vllm:gpu_prefix_cache_hit_rate")),
            (Preemptions, Counter("vllm:num_preemptions_total")),
            (PromptTokens, Counter("vllm:prompt_tokens_total")),
            (GenerationTokens, Counter("vllm:generation_tokens_total")),
            (Ttft, Histogram("vllm:time_to_first_token_seconds")),
            (Itl, Histogram("vllm:inter_token_latency_seconds")),
            (Itl, Histogram("vllm:time_per_output_token_seconds")),
            (E2e, Histogram("vllm:e2e_request_latency_seconds")),
            (SpecDrafts, Counter("vllm:spec_decode_num_drafts_total")),
            (
                SpecDraftTokens,
                Counter("vllm:spec_decode_num_draft_tokens_total"),
            ),
            (
                SpecAcceptedTokens,
                Counter("vllm:spec_decode_num_accepted_tokens_total"),
            ),
            (
                SpecAcceptedPerPosition,
                Counter("vllm:spec_decode_num_accepted_tokens_per_pos_total"),
            ),
        ],
    },
    Server {
        name: "sglang",
        sources: &[
            (Running, Gauge("sglang:num_running_reqs")),
            (Waiting, Gauge("sglang:num_queue_reqs")),
            (KvUsage, Gauge("sglang:token_usage")),
            (PrefixHitRate, Gauge("sglang:cache_hit_rate")),
            (PromptTokens, Counter("sglang:prompt_tokens_total")),
            (GenerationTokens, Counter("sglang:generation_tokens_total")),
            (Ttft, Histogram("sglang:time_to_first_token_seconds")),
            (Itl, Histogram("sglang:inter_token_latency_seconds")),
            (Itl, Histogram("sglang:time_per_output_token_seconds")),
            (E2e, Histogram("sglang:e2e_request_latency_seconds")),
            (SpecAcceptRate, Gauge("sglang:spec_accept_rate")),
            (SpecAcceptLength, Gauge("sglang:spec_accept_length")),
        ],
    },
    Server {
        name: "tgi",
        sources: &[
            (Running, Gauge("tgi_batch_current_size")),
            (Waiting, Gauge("tgi_queue_size")),
            (PromptTokens, HistogramSum("tgi_request_input_length")),
            (
                GenerationTokens,
                HistogramSum("tgi_request_generated_tokens"),
            ),
            (Itl, Histogram("tgi_request_mean_time_per_token_duration")),
            (E2e, Histogram("tgi_request_duration")),
        ],
    },
    Server {
        name: "llamacpp",
        sources: &[
            (Running, Gauge("llamacpp:requests_processing")),
            (Waiting, Gauge("llamacpp:requests_deferred")),
            (KvUsage, Gauge("llamacpp:kv_cache_usage_ratio")),
            (
                PrefixHitRate,
                Share(
                    "llamacpp:prompt_tokens_cached_total",
                    "llamacpp:prompt_tokens_total",
                ),
            ),
            (
                PromptTokens,
                CounterSum(
                    "llamacpp:prompt_tokens_total",
                    "llamacpp:prompt_tokens_cached_total",
                ),
            ),
            (PromptTokens, Counter("llamacpp:prompt_tokens_total")),
            (GenerationTokens, Counter("llamacpp:tokens_predicted_total")),
        ],
    },
];

/// True for gauges that are ratios (averaged, not summed, across label sets): DCGM's
/// utilizations (`DCGM_FI_DEV_GPU_UTIL`, `DCGM_FI_PROF_*_ACTIVE`) among them, averaged over a
/// node's GPUs, and SGLang's acceptance length (a mean per verification, one series per rank).
pub fn is_ratio_gauge(name: &str) -> bool {
    SERVERS.iter().any(|s| {
        s.sources.iter().any(|(role, src)| {
            matches!(
                role,
                KvUsage | PrefixHitRate | SpecAcceptRate | SpecAcceptLength
            ) && matches!(src, Gauge(n) if *n == name)
        })
    }) || ["_perc", "_ratio", "_usage", "_rate", "_UTIL", "_ACTIVE"]
        .iter()
        .any(|s| name.ends_with(s))
}
