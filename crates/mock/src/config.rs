//! Simulator settings: engine parameters, API defaults, transport, ground-truth log and faults.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Error;

/// Everything the simulator can be told. Every field has a default (see [`MockConfig::default`]),
/// so a config file (YAML or JSON) need only name what it changes; unknown keys are rejected.
///
/// The engine is in *zero-delay mode* when the four timing parameters (`step_base_ms`,
/// `step_per_seq_ms`, `prefill_overhead_ms`, `prefill_rate`) are all 0: every request is then
/// answered at once, its whole body written in one go, with no batching or queueing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MockConfig {
    /// Address to bind. Default `127.0.0.1`.
    pub host: String,
    /// Port to bind; 0 picks a free one. Default 0.
    pub port: u16,
    /// Model name served by `/v1/models` and echoed in responses. Any model name in a request is
    /// accepted. Default `mock-model`.
    pub model: String,
    /// At most this many sequences hold a batch slot (prefilling or decoding) at once; further
    /// requests wait in a FIFO queue. Default 64.
    pub max_batch: u32,
    /// Fixed part of one decode step, in milliseconds. Default 8.
    pub step_base_ms: f64,
    /// Added to a decode step for every sequence holding a batch slot, in milliseconds.
    /// Default 0.1.
    pub step_per_seq_ms: f64,
    /// Fixed part of a sequence's prefill, in milliseconds. Default 2.
    pub prefill_overhead_ms: f64,
    /// Prefill speed in prompt tokens per second; 0 means prompt length costs nothing.
    /// Default 10000.
    pub prefill_rate: f64,
    /// Prefix cache capacity in blocks of `block_size` tokens (an LRU of token blocks, as
    /// vLLM's automatic prefix caching keeps them); 0 turns the cache off. A request's prefill
    /// costs only its uncached tokens. Default 0.
    pub prefix_cache_blocks: u32,
    /// Tokens per prefix-cache block (vLLM's `--block-size`). Default 16.
    pub block_size: u32,
    /// Prefill tokens all sequences together may process per engine step (vLLM's
    /// `max_num_batched_tokens` with chunked prefill; decoding sequences use one each). Prefill
    /// then advances in chunks at step boundaries and lengthens the step it rides on; 0 lets
    /// every prefill run in parallel at `prefill_rate`. Default 0.
    pub max_num_batched_tokens: u32,
    /// Speculative decoding: draft tokens a drafter proposes for each decoding sequence at
    /// every step (vLLM's `num_speculative_tokens`); the step verifies them and emits the
    /// accepted ones plus one, in one streamed event. 0 turns it off. At most
    /// [`MAX_SPEC_TOKENS`]. No effect in zero-delay mode. Default 0.
    pub spec_tokens: u32,
    /// Speculative decoding: the probability that each draft token is accepted (drawn from
    /// the request's seeded stream; acceptance stops at the first rejection). Default 0.7.
    pub spec_accept: f64,
    /// Output limit of a request that names none (`max_tokens`, `max_completion_tokens`,
    /// `max_new_tokens`). Default 128.
    pub default_max_tokens: u32,
    /// Longest prompt plus output a request may ask for; longer requests are answered 400, as
    /// vLLM answers them. Default 131072.
    pub max_model_len: u32,
    /// Tokens the simulated KV cache holds; `vllm:kv_cache_usage_perc` is the tokens held by
    /// running requests (prompt + output so far) over this. Default 65536.
    pub kv_cache_tokens: u64,
    /// HTTP/2 streams one connection may hold open at once (its `SETTINGS_MAX_CONCURRENT_STREAMS`);
    /// a client's further streams wait for one to end. Default 4096.
    pub http2_max_streams: u32,
    /// Treat every request as if it set `ignore_eos`: always generate the output limit.
    /// Default false.
    pub ignore_eos: bool,
    /// Seed of every random choice (EOS lengths, faults, output words). Default 0.
    pub seed: u64,
    /// A `tokenizer.json` counting prompt tokens and choosing output words; `None` uses the
    /// built-in tokenizer of `bench-tokenizer`. Default none.
    pub tokenizer: Option<PathBuf>,
    /// Serve HTTPS with a self-signed certificate made at start (ALPN h2 and http/1.1) instead
    /// of cleartext. Default false.
    pub tls: bool,
    /// Append one JSON line per generation request to this file (see `docs/simulator.md`).
    /// Default none.
    pub log_requests: Option<PathBuf>,
    /// Include every token's write time in the request log lines (and in-process records).
    /// Default false.
    pub log_token_times: bool,
    /// Keep the request log in memory too, readable with `MockServer::request_log`, so a client
    /// in the same process can compare its measurements. Default false.
    pub record_requests: bool,
    /// Behave like a strict hosted OpenAI-compatible API: answer 400 to any body field the
    /// OpenAI API does not define (vLLM's `ignore_eos`, `min_tokens`, ...), naming it, and
    /// list the model as `owned_by: system`. Default false.
    pub strict: bool,
    /// Output tokens a chat response spends reasoning before it answers, as a reasoning model
    /// served with a reasoning parser does: the first `min(reasoning_tokens, n)` of its `n`
    /// output tokens are sent in `delta.reasoning_content` (`message.reasoning_content` when
    /// not streamed), the rest in `content`, and `usage.completion_tokens_details.
    /// reasoning_tokens` says how many. Completions and TGI responses never reason. Default 0.
    pub reasoning_tokens: u32,
    /// The share of chat requests offering `tools` and ending with a user message that are
    /// answered with a tool call (`finish_reason: "tool_calls"`, the output tokens being the
    /// call's `arguments`; docs/simulator.md, "Tool calls"), drawn per request from the seed
    /// and its arrival number. Default 0: never.
    pub tool_call_share: f64,
    /// The request header `balance: session-affinity` keys on (a session's id, as a router's
    /// affinity header carries it); its value is logged as `session`. Default `x-session-id`.
    pub affinity_header: String,
    /// Pooling requests (`/v1/embeddings`, `/v1/rerank`, `/rerank`, `/v2/rerank`): fixed part
    /// of a request's service time, in milliseconds. Default 1.
    pub pool_base_ms: f64,
    /// Pooling requests: service time added per input (embeddings input, rerank document), in
    /// milliseconds. Default 0.2.
    pub pool_per_input_ms: f64,
    /// Pooling requests: input tokens encoded per second; 0 means input length costs nothing.
    /// Default 100000.
    pub pool_token_rate: f64,
    /// Length of every embedding vector returned. Default 16.
    pub embedding_dim: u32,
    /// Independent engines behind the one listener (capacity planning: how many replicas of
    /// this configuration serve a demand). Each has its own batch slots, queue, prefix cache,
    /// step loop, KV usage and pooling slots; every request is routed to one of them by
    /// `balance`. No effect in zero-delay mode, which has no engine. Default 1, at most
    /// [`MAX_REPLICAS`].
    pub replicas: u32,
    /// How requests are spread over the replicas. Default round-robin.
    #[serde(deserialize_with = "balance_from_str")]
    pub balance: Balance,
    /// The GPU power model (`GET /dcgm/metrics`, docs/simulator.md, "GPU power model"): watts
    /// one replica's GPU draws with no slot held. Default 100.
    pub gpu_idle_w: f64,
    /// Watts added per sequence holding a batch slot. Default 2.
    pub gpu_per_seq_w: f64,
    /// Frame buffer memory one replica's GPU holds, MiB, loaded or idle. Default 72000.
    pub gpu_memory_mib: f64,
    /// Several models served by the one engine, the first the base and the others models or
    /// LoRA adapters (docs/simulator.md, "Models and LoRA adapters"). When given, the first's
    /// name is the served model (`model` must be left unset or equal it) and a request naming
    /// no model of the list is answered 404, as vLLM does. Default: none (one model, `model`,
    /// and any requested name accepted).
    pub models: Vec<ServedModel>,
    /// LoRA adapters resident at once (vLLM's `--max-loras`): a request for an adapter that
    /// is not resident waits until one resident adapter has no sequence in the batch. Default
    /// 1, as vLLM's.
    pub max_loras: u32,
    /// Milliseconds a request's prefill takes longer when its adapter is loaded for it (not
    /// resident). Default 5.
    pub lora_swap_ms: f64,
    /// Fault injection. Default: none.
    pub faults: Faults,
}

/// The most replicas one simulator runs (each is an engine task; more is a unit mistake).
pub const MAX_REPLICAS: u32 = 1024;

/// The most draft tokens a step verifies (`spec_tokens`); real drafters propose a handful.
pub const MAX_SPEC_TOKENS: u32 = 32;

/// The routing policy of a simulator with several replicas (`balance` in a config file,
/// `--balance` on the command line): bench's own vocabulary for spreading load
/// ([`bench_core::Balance`]), which `--target A,B --balance` uses too.
pub use bench_core::Balance;

/// The policy named `s`, exactly one of [`Balance::ALL`]'s names; anything else is an error
/// naming the value and the choices.
pub fn parse_balance(s: &str) -> Result<Balance, Error> {
    Balance::ALL
        .into_iter()
        .find(|b| b.name() == s)
        .ok_or_else(|| {
            let choices: Vec<&str> = Balance::ALL.iter().map(|b| b.name()).collect();
            invalid(
                "balance",
                format!(
                    "unknown policy `{s}`, expected one of: {}",
                    choices.join(", ")
                ),
            )
        })
}

/// `balance:` in a config file, read by [`parse_balance`].
fn balance_from_str<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Balance, D::Error> {
    let s = String::deserialize(d)?;
    parse_balance(&s).map_err(serde::de::Error::custom)
}

/// Seeded fault injection. Each `*_rate` is the fraction (0 to 1) of generation requests that get
/// the fault; the draws are independent, so faults combine. Stream faults strike "after k
/// tokens", with k drawn uniformly from 1 to max(1, n - 1) for an n-token answer; when several
/// terminal faults (reset, error event, stall) are drawn, the earliest takes effect. Stream
/// faults apply to streaming responses only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// Fraction answered `429 Too Many Requests` with an error body. Default 0.
    pub http_429: f64,
    /// Fraction answered `500 Internal Server Error` with an error body. Default 0.
    pub http_500: f64,
    /// Fraction answered `503 Service Unavailable` with an error body. Default 0.
    pub http_503: f64,
    /// Fraction whose connection is reset after k tokens (HTTP/1.1: TCP RST; HTTP/2: the
    /// stream is reset with `RST_STREAM`). Default 0.
    pub reset: f64,
    /// Fraction that get one malformed SSE event (truncated JSON) after k tokens; the stream
    /// then goes on normally. Default 0.
    pub malformed: f64,
    /// Fraction that get an in-stream error event (`data: {"error": ...}`) after k tokens, which
    /// ends the stream. Default 0.
    pub stream_error: f64,
    /// Fraction that stop sending after k tokens without closing. Default 0.
    pub stall: f64,
    /// How long a stall lasts in milliseconds, after which the stream resumes; 0 stalls until
    /// the client goes away. Default 0.
    pub stall_ms: u64,
    /// Fraction whose response headers are delayed by `slow_headers_ms`. Default 0.
    pub slow_headers: f64,
    /// The delay of slow response headers, in milliseconds. Default 1000.
    pub slow_headers_ms: u64,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 0,
            model: "mock-model".into(),
            max_batch: 64,
            step_base_ms: 8.0,
            step_per_seq_ms: 0.1,
            prefill_overhead_ms: 2.0,
            prefill_rate: 10_000.0,
            prefix_cache_blocks: 0,
            block_size: 16,
            max_num_batched_tokens: 0,
            spec_tokens: 0,
            spec_accept: 0.7,
            default_max_tokens: 128,
            max_model_len: 131_072,
            kv_cache_tokens: 65_536,
            http2_max_streams: 4096,
            ignore_eos: false,
            seed: 0,
            tokenizer: None,
            tls: false,
            log_requests: None,
            log_token_times: false,
            record_requests: false,
            strict: false,
            reasoning_tokens: 0,
            tool_call_share: 0.0,
            affinity_header: "x-session-id".into(),
            pool_base_ms: 1.0,
            pool_per_input_ms: 0.2,
            pool_token_rate: 100_000.0,
            embedding_dim: 16,
            replicas: 1,
            balance: Balance::RoundRobin,
            gpu_idle_w: 100.0,
            gpu_per_seq_w: 2.0,
            gpu_memory_mib: 72_000.0,
            models: Vec::new(),
            max_loras: 1,
            lora_swap_ms: 5.0,
            faults: Faults::default(),
        }
    }
}

impl Faults {
    /// True when no fault can ever be drawn.
    pub fn is_none(&self) -> bool {
        self.http_429 == 0.0
            && self.http_500 == 0.0
            && self.http_503 == 0.0
            && self.reset == 0.0
            && self.malformed == 0.0
            && self.stream_error == 0.0
            && self.stall == 0.0
            && self.slow_headers == 0.0
    }
}

impl MockConfig {
    /// The default configuration in zero-delay mode: no prefill, no decode time, every response
    /// written as fast as the socket takes it.
    pub fn zero_delay() -> Self {
        Self {
            step_base_ms: 0.0,
            step_per_seq_ms: 0.0,
            prefill_overhead_ms: 0.0,
            prefill_rate: 0.0,
            pool_base_ms: 0.0,
            pool_per_input_ms: 0.0,
            pool_token_rate: 0.0,
            ..Self::default()
        }
    }

    /// The closed-form service time of a pooling request of `inputs` inputs and `tokens` input
    /// tokens (docs/simulator.md): `pool_base_ms + pool_per_input_ms * inputs + 1000 * tokens /
    /// pool_token_rate` milliseconds (the last term 0 when the rate is 0).
    pub fn pool_service(&self, inputs: u32, tokens: u32) -> std::time::Duration {
        let per_token = if self.pool_token_rate > 0.0 {
            1000.0 * f64::from(tokens) / self.pool_token_rate
        } else {
            0.0
        };
        let ms = self.pool_base_ms + self.pool_per_input_ms * f64::from(inputs) + per_token;
        std::time::Duration::from_secs_f64((ms / 1000.0).max(0.0))
    }

    /// Reads a YAML or JSON config file (JSON when the name ends in `.json`, YAML otherwise).
    /// Missing keys take their defaults; unknown keys are an error naming the key.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::ReadConfig {
            path: path.to_path_buf(),
            source,
        })?;
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let parsed: Result<Self, String> = if is_json {
            serde_json::from_str(&text).map_err(|e| e.to_string())
        } else {
            serde_yaml::from_str(&text).map_err(|e| e.to_string())
        };
        let config = parsed.map_err(|message| Error::ParseConfig {
            path: path.to_path_buf(),
            message,
        })?;
        config.validate()?;
        Ok(config)
    }

    /// True in zero-delay mode (all four timing parameters 0).
    pub fn is_zero_delay(&self) -> bool {
        self.step_base_ms == 0.0
            && self.step_per_seq_ms == 0.0
            && self.prefill_overhead_ms == 0.0
            && self.prefill_rate == 0.0
    }

    /// Checks every value, naming the first bad one.
    pub fn validate(&self) -> Result<(), Error> {
        if self.max_batch == 0 {
            return Err(invalid("max_batch", "must be at least 1"));
        }
        if self.default_max_tokens == 0 {
            return Err(invalid("default_max_tokens", "must be at least 1"));
        }
        if self.http2_max_streams == 0 {
            return Err(invalid("http2_max_streams", "must be at least 1"));
        }
        if self.kv_cache_tokens == 0 {
            return Err(invalid("kv_cache_tokens", "must be at least 1"));
        }
        if self.max_model_len == 0 {
            return Err(invalid("max_model_len", "must be at least 1"));
        }
        if self.model.is_empty() {
            return Err(invalid("model", "must not be empty"));
        }
        if self.block_size == 0 {
            return Err(invalid("block_size", "must be at least 1"));
        }
        if self.max_num_batched_tokens != 0 && self.max_num_batched_tokens <= self.max_batch {
            return Err(invalid(
                "max_num_batched_tokens",
                format!(
                    "must be 0 (no budget) or more than max_batch ({}), got {}",
                    self.max_batch, self.max_num_batched_tokens
                ),
            ));
        }
        if self.spec_tokens > MAX_SPEC_TOKENS {
            return Err(invalid(
                "spec_tokens",
                format!(
                    "must be from 0 (off) to {MAX_SPEC_TOKENS}, got {}",
                    self.spec_tokens
                ),
            ));
        }
        if http::HeaderName::from_bytes(self.affinity_header.as_bytes()).is_err() {
            return Err(invalid(
                "affinity_header",
                format!("`{}` is not a valid header name", self.affinity_header),
            ));
        }
        if !(0.0..=1.0).contains(&self.tool_call_share) {
            return Err(invalid(
                "tool_call_share",
                format!("must be a share in [0, 1], got {}", self.tool_call_share),
            ));
        }
        if !(0.0..=1.0).contains(&self.spec_accept) {
            return Err(invalid(
                "spec_accept",
                format!("must be a probability in [0, 1], got {}", self.spec_accept),
            ));
        }
        if self.embedding_dim == 0 {
            return Err(invalid("embedding_dim", "must be at least 1"));
        }
        if !(1..=MAX_REPLICAS).contains(&self.replicas) {
            return Err(invalid(
                "replicas",
                format!("must be from 1 to {MAX_REPLICAS}, got {}", self.replicas),
            ));
        }
        for (field, v) in [
            ("step_base_ms", self.step_base_ms),
            ("step_per_seq_ms", self.step_per_seq_ms),
            ("prefill_overhead_ms", self.prefill_overhead_ms),
            ("prefill_rate", self.prefill_rate),
            ("pool_base_ms", self.pool_base_ms),
            ("pool_per_input_ms", self.pool_per_input_ms),
            ("pool_token_rate", self.pool_token_rate),
            ("gpu_idle_w", self.gpu_idle_w),
            ("gpu_per_seq_w", self.gpu_per_seq_w),
            ("gpu_memory_mib", self.gpu_memory_mib),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(invalid(
                    field,
                    format!("must be a finite number >= 0, got {v}"),
                ));
            }
        }
        // One step or prefill longer than an hour is certainly a unit mistake.
        for (field, v) in [
            ("step_base_ms", self.step_base_ms),
            ("step_per_seq_ms", self.step_per_seq_ms),
            ("prefill_overhead_ms", self.prefill_overhead_ms),
            ("pool_base_ms", self.pool_base_ms),
            ("pool_per_input_ms", self.pool_per_input_ms),
        ] {
            if v > 3_600_000.0 {
                return Err(invalid(field, format!("{v} ms is more than an hour")));
            }
        }
        self.validate_models()?;
        self.faults.validate()
    }

    /// The model name served: the first of `models` when given, else `model`.
    pub fn served_model(&self) -> &str {
        self.models
            .first()
            .map_or(self.model.as_str(), |m| m.name.as_str())
    }

    /// Checks `models`, `max_loras` and `lora_swap_ms`.
    fn validate_models(&self) -> Result<(), Error> {
        if self.max_loras == 0 {
            return Err(invalid("max_loras", "must be at least 1"));
        }
        let swap = self.lora_swap_ms;
        if !(swap.is_finite() && (0.0..=3_600_000.0).contains(&swap)) {
            return Err(invalid(
                "lora_swap_ms",
                format!("must be a finite number from 0 to an hour, got {swap}"),
            ));
        }
        let Some(first) = self.models.first() else {
            return Ok(());
        };
        if first.lora {
            return Err(invalid(
                "models",
                "the first model is the base and cannot be a LoRA adapter",
            ));
        }
        if self.model != Self::default().model && self.model != first.name {
            return Err(invalid(
                "model",
                format!(
                    "`{}` is not the first of models (`{}`): leave model out",
                    self.model, first.name
                ),
            ));
        }
        for (i, m) in self.models.iter().enumerate() {
            if m.name.is_empty() {
                return Err(invalid("models", format!("model {} has no name", i + 1)));
            }
            if self.models[..i].iter().any(|o| o.name == m.name) {
                return Err(invalid("models", format!("`{}` is named twice", m.name)));
            }
            if let Some(c) = m
                .step_per_seq_ms
                .filter(|c| !(c.is_finite() && (0.0..=3_600_000.0).contains(c)))
            {
                return Err(invalid(
                    "models",
                    format!(
                        "`{}`: step_per_seq_ms must be from 0 to an hour, got {c}",
                        m.name
                    ),
                ));
            }
        }
        if self.models.len() > usize::from(u16::MAX) {
            return Err(invalid("models", "too many models"));
        }
        Ok(())
    }
}

impl Faults {
    /// Checks every fault rate, naming the first bad one.
    pub fn validate(&self) -> Result<(), Error> {
        let f = self;
        for (field, v) in [
            ("faults.http_429", f.http_429),
            ("faults.http_500", f.http_500),
            ("faults.http_503", f.http_503),
            ("faults.reset", f.reset),
            ("faults.malformed", f.malformed),
            ("faults.stream_error", f.stream_error),
            ("faults.stall", f.stall),
            ("faults.slow_headers", f.slow_headers),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(invalid(
                    field,
                    format!("must be a fraction in [0, 1], got {v}"),
                ));
            }
        }
        let http = f.http_429 + f.http_500 + f.http_503;
        if http > 1.0 + 1e-9 {
            return Err(invalid(
                "faults.http_429",
                format!("http_429 + http_500 + http_503 must be at most 1, got {http}"),
            ));
        }
        Ok(())
    }
}

fn invalid(field: &'static str, message: impl Into<String>) -> Error {
    Error::Invalid {
        field,
        message: message.into(),
    }
}

/// One model the simulator serves (an entry of `models:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServedModel {
    /// The name requests give in `model` and `/v1/models` lists.
    pub name: String,
    /// A LoRA adapter of the base model (the first entry): it must be resident to run.
    #[serde(default)]
    pub lora: bool,
    /// Milliseconds a step costs per sequence of this model holding a slot; default the
    /// server's `step_per_seq_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_per_seq_ms: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_zero_delay_is_detected() {
        assert!(MockConfig::default().validate().is_ok());
        assert!(!MockConfig::default().is_zero_delay());
        assert!(MockConfig::zero_delay().is_zero_delay());
    }

    #[test]
    fn unknown_keys_are_rejected_by_name() {
        let err = serde_yaml::from_str::<MockConfig>("max_batch: 4\nmax_bach: 3\n")
            .expect_err("unknown key");
        assert!(err.to_string().contains("max_bach"), "{err}");
        let err = serde_yaml::from_str::<MockConfig>("faults: {resett: 0.1}\n").expect_err("x");
        assert!(err.to_string().contains("resett"), "{err}");
    }

    #[test]
    fn bad_values_name_the_field() {
        let c = MockConfig {
            faults: Faults {
                reset: 1.5,
                ..Faults::default()
            },
            ..MockConfig::default()
        };
        let e = c.validate().expect_err("invalid");
        assert!(e.to_string().contains("faults.reset"), "{e}");
        let c = MockConfig {
            step_base_ms: f64::NAN,
            ..MockConfig::default()
        };
        assert!(c.validate().is_err());
        let c = MockConfig {
            max_batch: 0,
            ..MockConfig::default()
        };
        assert!(c
            .validate()
            .expect_err("x")
            .to_string()
            .contains("max_batch"));
    }

    #[test]
    fn speculative_decoding_settings_are_checked() {
        for (c, field) in [
            (
                MockConfig {
                    spec_tokens: MAX_SPEC_TOKENS + 1,
                    ..MockConfig::default()
                },
                "`spec_tokens`",
            ),
            (
                MockConfig {
                    spec_accept: 1.5,
                    ..MockConfig::default()
                },
                "`spec_accept`",
            ),
            (
                MockConfig {
                    spec_accept: f64::NAN,
                    ..MockConfig::default()
                },
                "`spec_accept`",
            ),
        ] {
            let e = c.validate().expect_err("invalid").to_string();
            assert!(e.contains(field) && !e.contains('\n'), "{e}");
        }
        let c: MockConfig =
            serde_yaml::from_str("spec_tokens: 4\nspec_accept: 0.6\n").expect("parse");
        assert_eq!((c.spec_tokens, c.spec_accept), (4, 0.6));
        assert!(c.validate().is_ok());
    }

    #[test]
    fn replicas_and_balance_are_checked() {
        for bad in [0, MAX_REPLICAS + 1] {
            let c = MockConfig {
                replicas: bad,
                ..MockConfig::default()
            };
            let e = c.validate().expect_err("out of range").to_string();
            assert!(
                e.contains("`replicas`") && e.contains(&bad.to_string()),
                "{e}"
            );
        }
        let c = MockConfig {
            replicas: MAX_REPLICAS,
            ..MockConfig::default()
        };
        assert!(c.validate().is_ok());
        for b in Balance::ALL {
            assert_eq!(parse_balance(b.name()).expect("own name"), b);
        }
        let c: MockConfig =
            serde_yaml::from_str("replicas: 3\nbalance: least-outstanding\n").expect("parse");
        assert_eq!((c.replicas, c.balance), (3, Balance::LeastOutstanding));
        // A wrong name, in a file or a flag, is one line naming it and the choices.
        let e = serde_yaml::from_str::<MockConfig>("balance: random\n").expect_err("bad");
        let flag = parse_balance("random").expect_err("bad").to_string();
        for msg in [e.to_string(), flag] {
            assert!(!msg.contains('\n'), "{msg}");
            for want in ["`random`", "round-robin", "least-outstanding"] {
                assert!(msg.contains(want), "{want} not in {msg}");
            }
        }
    }

    #[test]
    fn files_parse_as_yaml_or_json() {
        let dir = std::env::temp_dir().join(format!("bench-mock-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let y = dir.join("c.yaml");
        std::fs::write(&y, "max_batch: 3\nfaults:\n  http_503: 0.5\n").expect("write");
        let c = MockConfig::from_file(&y).expect("yaml");
        assert_eq!(c.max_batch, 3);
        assert_eq!(c.faults.http_503, 0.5);
        assert_eq!(c.step_base_ms, MockConfig::default().step_base_ms);
        let j = dir.join("c.json");
        std::fs::write(&j, r#"{"model": "m", "seed": 9}"#).expect("write");
        let c = MockConfig::from_file(&j).expect("json");
        assert_eq!((c.model.as_str(), c.seed), ("m", 9));
        std::fs::write(&j, r#"{"model": "m", "sed": 9}"#).expect("write");
        assert!(MockConfig::from_file(&j).is_err());
        assert!(MockConfig::from_file(dir.join("missing.yaml")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
