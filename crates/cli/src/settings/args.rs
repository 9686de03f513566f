//! The flags of `bench sweep` / `bench run` (clap), grouped as `--help` shows them. Every
//! flag is optional here so that the resolver knows what was given; defaults are applied in
//! [`super::resolve`] and shown by `--help`.
//!
//! Adding a flag: put it in its group below, give it a key in [`super::file::FileSettings`]
//! when a profile may set it, a field in [`super::Settings`], and resolve it in the module of
//! its group (`target.rs`, `request.rs`, `load.rs`, `report.rs`). Peer spellings (vLLM,
//! guidellm) are clap aliases when the meaning is the same, or flags of [`PeerArgs`] that
//! `peers.rs` translates when it is not.

use std::path::PathBuf;

use clap::Args;

use bench_runner::settings::Console;

/// Flags shared by `bench sweep` and `bench run`.
#[derive(Debug, Clone, Default, Args)]
pub struct CommonArgs {
    /// A YAML profile holding any of these settings (keys are the flag names with `_`, e.g.
    /// `max_seconds: 30`); flags given on the command line override it. guidellm's
    /// `--profile KIND` (sweep, synchronous, ...) is accepted too: a file by that name wins.
    #[arg(long, value_name = "FILE.yaml|KIND", help_heading = "Profile")]
    pub profile: Option<String>,
    /// A YAML profile (guidellm's name for its settings files).
    #[arg(
        long,
        value_name = "FILE.yaml",
        help_heading = "Profile",
        conflicts_with = "profile"
    )]
    pub scenario: Option<PathBuf>,
    /// Print the resolved settings as a profile (YAML) and exit.
    #[arg(long, help_heading = "Profile")]
    pub show_config: bool,

    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub data: DataArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub peers: PeerArgs,
    #[command(flatten)]
    pub shard: crate::shard::ShardArgs,
}

/// Where the server is and how to reach it.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Target")]
pub struct TargetArgs {
    /// Base URL of the server to benchmark, e.g. http://127.0.0.1:8000 (vLLM: --base-url;
    /// guidellm: --target). Several replicas of one server: comma-separated or repeated, the
    /// load shared among them by --balance; the model is discovered from the first.
    #[arg(long, value_name = "URL[,URL...]", visible_alias = "base-url")]
    pub target: Vec<String>,
    /// With several targets, which one receives each request: round-robin (by dispatch
    /// order, the default), least-outstanding (the one with the fewest requests in flight
    /// from this client, the first on a tie) or session-affinity (each session's turns to one
    /// target).
    #[arg(long, value_name = "NAME")]
    pub balance: Option<String>,
    /// Start the built-in simulator in-process and benchmark it instead of a target.
    #[arg(long)]
    pub mock: bool,
    /// Simulator settings for --mock (a `bench mock-server` YAML config file).
    #[arg(long, value_name = "FILE.yaml", requires = "mock")]
    pub mock_config: Option<PathBuf>,
    /// API to speak: openai-completions (default), openai-chat, tgi, openai-responses
    /// (/v1/responses), anthropic-messages (Anthropic's /v1/messages), openai-embeddings
    /// (/v1/embeddings), rerank (vLLM's /v1/rerank), cohere-rerank (/v2/rerank). vLLM's and
    /// guidellm's names are accepted: vllm, openai, sglang, lmdeploy, llama.cpp (completions),
    /// openai_http (guidellm).
    #[arg(long, visible_alias = "backend-type")]
    pub backend: Option<String>,
    /// Request path overriding the backend's default (e.g. /v1/completions).
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Model name to send (default: the server's first model from /v1/models). Several,
    /// comma-separated (AIPerf: --model-names): a model mix, each request naming one chosen
    /// by --model-selection; `name:weight` gives weights (base:0.5,lora-a:0.3,lora-b:0.2).
    #[arg(
        long,
        value_name = "NAME[,NAME[:WEIGHT]...]",
        visible_alias = "model-names"
    )]
    pub model: Option<String>,
    /// With several models, how each request's is chosen: round-robin (by dispatch order,
    /// the default without weights), weighted (the weights' exact shares, evenly spread; the
    /// default with weights) or random (drawn with the weights from --seed). AIPerf:
    /// --model-selection-strategy (round_robin, random).
    #[arg(long, value_name = "NAME", visible_alias = "model-selection-strategy")]
    pub model_selection: Option<String>,
    /// Bearer token for the server (falls back to OPENAI_API_KEY; ANTHROPIC_API_KEY, sent as
    /// x-api-key, with --backend anthropic-messages). Never printed or saved.
    #[arg(long, env = "BENCH_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Extra header 'Name: value' (or Name=value, vLLM's form) on every request; repeatable.
    /// Replaces a header of bench's with the same name. Values are never printed or saved.
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Sessions: send each session's number in this header on every turn (the key a router
    /// keeps a session on one replica by, e.g. x-session-id).
    #[arg(long, value_name = "NAME")]
    pub session_header: Option<String>,
    /// Sessions: record the replica each response names in this header (e.g. x-served-by);
    /// the report gives each session's replicas and cached share.
    #[arg(long, value_name = "NAME")]
    pub replica_header: Option<String>,
    /// Speak HTTP/2.
    #[arg(long)]
    pub http2: bool,
    /// Accept any TLS certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Also trust the CA certificates of this PEM file.
    #[arg(long, value_name = "FILE.pem")]
    pub cacert: Option<PathBuf>,
    /// Seconds a request may take in all, dispatch to the end of the body (default 3600).
    #[arg(long, value_name = "SECONDS")]
    pub request_timeout: Option<f64>,
    /// Seconds from dispatch to the response headers (default 600).
    #[arg(long, value_name = "SECONDS")]
    pub first_byte_timeout: Option<f64>,
    /// Longest silence in seconds between two pieces of a response body (default 300).
    #[arg(long, value_name = "SECONDS")]
    pub idle_timeout: Option<f64>,
    /// Seconds to open a connection, TLS included (default 10).
    #[arg(long, value_name = "SECONDS")]
    pub connect_timeout: Option<f64>,
    /// Local address(es) to connect from, in turn: IPs, comma-separated, or an IPv4 range
    /// (127.0.0.1-127.0.0.4); repeatable. Each gives ~28,000 more connections to one server
    /// address. Default: the OS chooses (loopback targets get more 127.0.0.x when the planned
    /// concurrency needs them).
    #[arg(long = "source-address", value_name = "IP[,IP...]")]
    pub source_addresses: Vec<String>,
}

/// What goes into every request body.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Request body")]
pub struct RequestArgs {
    /// JSON object merged into every request body (recursively; its values win), e.g.
    /// '{"temperature": 0}'.
    #[arg(long, value_name = "JSON")]
    pub extra_body: Option<String>,
    /// Send vLLM's `ignore_eos` so every request generates its full output length
    /// (default on; --ignore-eos=false turns it off).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    pub ignore_eos: Option<bool>,
    /// Ask for one JSON reply instead of a stream (openai-completions and openai-chat): latency
    /// and usage tokens only, no TTFT or ITL.
    #[arg(long)]
    pub no_stream: bool,
    /// Read `<think>...</think>` in the answer text as reasoning (models served without a
    /// reasoning parser); TTFO is then the first token after it.
    #[arg(long)]
    pub think_tags: bool,
    /// vLLM-only body fields (`ignore_eos`, `min_tokens`): auto (default: sent when the server
    /// identifies as vLLM, SGLang, llama.cpp or bench's simulator), on, off.
    #[arg(long, value_name = "auto|on|off")]
    pub vllm_extensions: Option<String>,
    /// Sampling temperature.
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Nucleus sampling probability.
    #[arg(long)]
    pub top_p: Option<f64>,
    /// Top-k sampling (-1: off, vLLM).
    #[arg(long, allow_negative_numbers = true)]
    pub top_k: Option<i64>,
    /// Min-p sampling.
    #[arg(long)]
    pub min_p: Option<f64>,
    /// Frequency penalty.
    #[arg(long, allow_negative_numbers = true)]
    pub frequency_penalty: Option<f64>,
    /// Presence penalty.
    #[arg(long, allow_negative_numbers = true)]
    pub presence_penalty: Option<f64>,
    /// Repetition penalty.
    #[arg(long)]
    pub repetition_penalty: Option<f64>,
}

/// What to send.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Data")]
pub struct DataArgs {
    /// Data: `prompt_tokens=N,output_tokens=M` (synthetic; default 256/128), guidellm's JSON
    /// form '{"prompt_tokens": 256, ...}', or a dataset file (docs/data.md).
    #[arg(long)]
    pub data: Option<String>,
    /// The prompt column of a data file (default: the first of prompt, text, input).
    #[arg(long, value_name = "NAME")]
    pub data_column: Option<String>,
    /// Tokenizer for counting tokens: a tokenizer.json path or a Hugging Face model id
    /// (default: the built-in tokenizer). vLLM: --tokenizer.
    #[arg(long, visible_alias = "tokenizer")]
    pub processor: Option<String>,
}

/// The load shape and the limits of each benchmark.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Load")]
pub struct LoadArgs {
    /// Total requests per benchmark (vLLM's name; same as --max-requests).
    #[arg(long, allow_negative_numbers = true)]
    pub num_prompts: Option<u64>,
    /// Cap on requests in flight: throughput's cap (default 512) and, for constant / poisson,
    /// requests wait for a slot (their wait is reported as client queue time).
    #[arg(long, allow_negative_numbers = true)]
    pub max_concurrency: Option<u32>,
    /// Trace replay (--data trace=FILE): how many times faster than recorded, one benchmark
    /// per value, e.g. 1,2,4 (default 1); implies --rate-type trace.
    #[arg(long, value_name = "LIST")]
    pub speedup: Vec<String>,
    /// Gamma shape of poisson arrivals (1 = Poisson; lower is burstier).
    #[arg(long, allow_negative_numbers = true)]
    pub burstiness: Option<f64>,
    /// Seed of random arrivals (guidellm: --random-seed).
    #[arg(long, visible_alias = "random-seed", allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// Benchmarks in a sweep (default 10).
    #[arg(long, allow_negative_numbers = true)]
    pub sweep_size: Option<u32>,
    /// Open-loop kind of the sweep's rate benchmarks: constant (default) or poisson.
    #[arg(long, value_name = "constant|poisson")]
    pub sweep_rate_type: Option<String>,
    /// How a sweep finds the maximum: adaptive (default: concurrency ladder, rates around the
    /// capacity, SLO search) or guidellm (512-in-flight throughput probe, linspace rates).
    #[arg(long, value_name = "adaptive|guidellm")]
    pub sweep_mode: Option<String>,
    /// Sweep: search the highest rate meeting every bound, e.g. "ttft_p99=500,itl_p50=50"
    /// (keys <metric>_<stat>: ttft, itl, tpot, e2el, token_latency, ttft_from_scheduled,
    /// e2el_from_scheduled; mean, median or pNN; milliseconds).
    #[arg(long, value_name = "KEY=MS,...")]
    pub slo: Option<String>,
    /// Sweep: the SLO search stops when (high - low) / low is at most this (default 0.02).
    #[arg(long)]
    pub slo_tolerance: Option<f64>,
    /// Sweep with --slo: after the search, run the rates between the ends of the SLO rate's
    /// 95% interval again longer (or new ones between them) until the interval spans at most
    /// twice this of its lower end, e.g. 5% (or 0.05); the report says what it cost.
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true)]
    pub slo_precision: Option<String>,
    /// Sweep: run the benchmark that measured the maximum sustained throughput again longer
    /// (up to 4 benchmark lengths) until the maximum's 95% interval spans at most twice this
    /// of its lower end, e.g. 5% (or 0.05); the report says what it cost.
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true)]
    pub capacity_precision: Option<String>,
    /// Seconds per benchmark (default 30; 5 with --mock).
    #[arg(long, allow_negative_numbers = true)]
    pub max_seconds: Option<f64>,
    /// Run each benchmark until the 95% intervals of its key figures (requests/s, output
    /// tok/s, TTFT and ITL medians) are within this of each figure, e.g. 5% (or 0.05);
    /// --max-seconds is then the least a benchmark runs, --precision-budget the most.
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true)]
    pub precision: Option<String>,
    /// With --precision: the most seconds a benchmark runs (default 4 x --max-seconds).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub precision_budget: Option<f64>,
    /// Seconds a time-boxed benchmark waits, after it stops sending, for the requests in
    /// flight to finish (default 300; 0 cancels them at once); those still unfinished are
    /// counted as incomplete.
    #[arg(long, value_name = "SECONDS")]
    pub drain_timeout: Option<f64>,
    /// Requests per benchmark.
    #[arg(long, allow_negative_numbers = true)]
    pub max_requests: Option<u64>,
    /// Stop a benchmark after this many errored requests.
    #[arg(long, allow_negative_numbers = true)]
    pub max_errors: Option<u64>,
    /// Stop a benchmark once this fraction of finished requests errored (0-1].
    #[arg(long, allow_negative_numbers = true)]
    pub max_error_rate: Option<f64>,
    /// Stop open-loop benchmarks the server cannot keep up with (see docs/profiles.md).
    #[arg(long)]
    pub stop_over_saturated: bool,
    /// Warmup excluded from statistics: a fraction (0.1), seconds (10s) or requests (50req).
    #[arg(long, allow_hyphen_values = true)]
    pub warmup: Option<String>,
    /// Cooldown excluded from statistics: a fraction (0.1), seconds (10s) or requests (50req).
    #[arg(long, allow_hyphen_values = true)]
    pub cooldown: Option<String>,
    /// Ramp-up: the rate (constant, poisson) or the streams (concurrent) climb to their target
    /// over this time (30s, 500ms) and hold; outside the measurement window unless
    /// --rampup-in-window. guidellm: rampup_duration; AIPerf: --request-rate-ramp-duration,
    /// --concurrency-ramp-duration.
    #[arg(
        long,
        value_name = "TIME",
        visible_aliases = ["request-rate-ramp-duration", "concurrency-ramp-duration"]
    )]
    pub rampup: Option<String>,
    /// How the ramp-up climbs: linear (default) or exponential (needs --ramp-up-start-rps).
    /// Without --rampup, vLLM's ramp by request index over --max-requests (--num-prompts),
    /// from --ramp-up-start-rps to --ramp-up-end-rps.
    #[arg(long, value_name = "linear|exponential")]
    pub ramp_up_strategy: Option<String>,
    /// The ramp-up's starting rate, requests/s [default: 0 for linear].
    #[arg(long, value_name = "RPS", allow_negative_numbers = true)]
    pub ramp_up_start_rps: Option<f64>,
    /// vLLM: the rate the ramp-up ends at (stands for --rate RPS).
    #[arg(long, value_name = "RPS", allow_negative_numbers = true)]
    pub ramp_up_end_rps: Option<f64>,
    /// Measure the ramp-up too: the window opens at the start, not when the ramp ends.
    #[arg(long)]
    pub rampup_in_window: bool,
    /// Cancel this share of the requests as load, as users do who close a chat: 10% or 0.1,
    /// evenly spread (every 10th request at 10%). Each is cancelled --cancel-after its send
    /// unless it ended first, and counts as cancelled: not an error, not incomplete.
    #[arg(long, value_name = "SHARE")]
    pub cancel_rate: Option<String>,
    /// AIPerf's spelling of --cancel-rate, in percent (10 = 10%).
    #[arg(long, value_name = "PERCENT", allow_negative_numbers = true)]
    pub request_cancellation_rate: Option<f64>,
    /// How long after its send a request chosen by --cancel-rate is cancelled: 0.5s, 500ms,
    /// or seconds [default: 0]. AIPerf: --request-cancellation-delay.
    #[arg(
        long,
        value_name = "TIME",
        allow_hyphen_values = true,
        visible_alias = "request-cancellation-delay"
    )]
    pub cancel_after: Option<String>,
    /// Sessions (--data with turns=): pause between a reply and the user's next turn, excluded
    /// from latency: a duration (2s, 500ms), exp:MEAN or uniform:MIN-MAX (seeded) [default: 0].
    #[arg(long, value_name = "TIME")]
    pub think_time: Option<String>,
    /// Run the benchmarks (or the whole sweep) N times, with fresh prompts each trial; the
    /// report pools every trial's requests and gives across-trial 95% intervals [default: 1].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub repeat: Option<String>,
    /// Stop the trials early once every key figure's across-trial 95% interval is within this
    /// of its value (e.g. 2%), after at least 3 trials; --repeat N is then the most.
    #[arg(long, value_name = "PERCENT", allow_negative_numbers = true)]
    pub repeat_until: Option<String>,
}

/// What to print and write.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Report")]
pub struct ReportArgs {
    /// Write the report to this file (.json, .yaml, .csv, .html); repeatable. Written after
    /// every finished benchmark. guidellm: --output-path. Without it (nor --no-output) the
    /// run's JSON goes to a new file, bench-results/<UTC time>-<kind>.json, named on the last
    /// line.
    #[arg(long, visible_alias = "output-path")]
    pub output: Vec<PathBuf>,
    /// Write no report file, not even the default bench-results/<UTC time>-<kind>.json
    /// (`output: []` in a profile).
    #[arg(long, conflicts_with = "output")]
    pub no_output: bool,
    /// Console report: guidellm (default for sweep), vllm (default for run), both, none.
    #[arg(long, value_enum)]
    pub console: Option<ConsoleArg>,
    /// vLLM console layout: current (default) or classic (benchmark_serving.py's lines).
    #[arg(long, value_name = "current|classic")]
    pub vllm_layout: Option<String>,
    /// No progress display (vLLM: --disable-tqdm; guidellm: --disable-progress).
    #[arg(long, short, visible_aliases = ["disable-tqdm", "disable-progress"])]
    pub quiet: bool,
    /// Also write the run's progress to this file as JSON lines (a line per progress tick, per
    /// finished benchmark, the capacity, a last one naming the result file), each flushed as
    /// written, for a sidecar or a CI step to follow (docs/reports.md, "Progress file").
    #[arg(long, value_name = "PATH")]
    pub progress_file: Option<PathBuf>,
    /// Seconds between progress ticks in --progress-file and between progress lines when stderr
    /// is not a terminal, 0.25 to 3600 [default: 1 for the file, 5 for stderr].
    #[arg(long, value_name = "SECONDS")]
    pub progress_interval: Option<String>,
    /// A full-screen live view on the terminal: the running benchmark, the sweep so far, the
    /// capacity, the server's gauges; q stops as Ctrl-C does. Without a terminal on stderr,
    /// the progress line.
    #[arg(long, conflicts_with = "quiet")]
    pub live: bool,
    /// vLLM console: metrics to give percentiles for (default ttft,tpot,itl).
    #[arg(long)]
    pub percentile_metrics: Option<String>,
    /// vLLM console: percentiles to show (default 99).
    #[arg(long)]
    pub metric_percentiles: Option<String>,
    /// SLOs for goodput, e.g. "ttft:500 tpot:50 e2el:2000" (milliseconds).
    #[arg(long)]
    pub goodput: Option<String>,
    /// Also save every request's record (times of dispatch, headers, each chunk, end; tokens;
    /// outcome) in the JSON and YAML files (vLLM: --save-detailed).
    #[arg(long, alias = "save-detailed")]
    pub save_records: bool,
    /// Exit 0 even when a benchmark completed no request (by default such a run fails, exit 1).
    #[arg(long)]
    pub allow_empty: bool,
    /// Write vLLM's result JSON (its field names) per benchmark, beside bench's own files.
    #[arg(long)]
    pub save_result: bool,
    /// Folder of the vLLM result files (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub result_dir: Option<PathBuf>,
    /// Name of the vLLM result file (default: vLLM's `LABEL-RATEqps[-concurrencyN]-MODEL-DATE.json`).
    #[arg(long, value_name = "FILE.json")]
    pub result_filename: Option<String>,
    /// KEY=VALUE pairs added to the vLLM result file (and the report's environment); repeatable.
    #[arg(long, num_args = 1.., value_name = "KEY=VALUE")]
    pub metadata: Vec<String>,
    /// Label of the run (vLLM's file-name prefix; default the backend).
    #[arg(long)]
    pub label: Option<String>,
    /// Prometheus endpoint scraped during every benchmark [default: /metrics on the target].
    #[arg(long, value_name = "URL")]
    pub server_metrics_url: Option<String>,
    /// Seconds between scrapes of the server's metrics [default: 1].
    #[arg(long, value_name = "SECONDS")]
    pub server_metrics_interval: Option<f64>,
    /// Do not scrape the server's metrics.
    #[arg(long)]
    pub no_server_metrics: bool,
    /// NVIDIA DCGM exporters scraped for GPU power, utilization, memory and energy (J per
    /// output token), one per node, comma-separated; a /path is on the target's host.
    #[arg(long, value_name = "URL[,URL]")]
    pub gpu_metrics: Option<String>,
}

/// Peer flags whose meaning differs from a bench flag; `peers.rs` translates them.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "vLLM and guidellm flags")]
pub struct PeerArgs {
    /// vLLM: LoRA adapters the requests name (each request one of them; --model stays the
    /// base model the run reports). A model mix chosen by --lora-assignment.
    #[arg(long, value_name = "NAME", num_args = 1..)]
    pub lora_modules: Vec<String>,
    /// vLLM: random (the default) or round-robin, how each request's LoRA adapter is chosen.
    #[arg(long, value_name = "random|round-robin")]
    pub lora_assignment: Option<String>,
    /// vLLM: requests/s of a Poisson (gamma with --burstiness) load; `inf` sends all
    /// --num-prompts at once (a burst). Stands for --rate-type poisson --rate R.
    #[arg(long, value_name = "R|inf")]
    pub request_rate: Option<String>,
    /// vLLM: server host (with --port, instead of --target).
    #[arg(long)]
    pub host: Option<String>,
    /// vLLM: server port (default 8000 with --host).
    #[arg(long)]
    pub port: Option<u16>,
    /// vLLM: random, sharegpt, book, custom (a file; see --dataset-path), hf (a Hugging Face
    /// dataset in the local hub cache), sonnet, prefix_repetition, random-mm.
    #[arg(long, value_name = "NAME")]
    pub dataset_name: Option<String>,
    /// vLLM: the dataset file (hf: the dataset id, ORG/NAME).
    #[arg(long, value_name = "FILE")]
    pub dataset_path: Option<String>,
    /// vLLM hf dataset: the subset (data key subset=).
    #[arg(long, value_name = "NAME")]
    pub hf_subset: Option<String>,
    /// vLLM hf dataset: the split (data key split=; default train).
    #[arg(long, value_name = "SPLIT")]
    pub hf_split: Option<String>,
    /// vLLM hf dataset: a fixed output length for every request (data key output_tokens=).
    #[arg(long)]
    pub hf_output_len: Option<u32>,
    /// vLLM random dataset: prompt tokens (default 1024).
    #[arg(long)]
    pub random_input_len: Option<u32>,
    /// vLLM random dataset: output tokens (default 128).
    #[arg(long)]
    pub random_output_len: Option<u32>,
    /// vLLM random dataset: lengths uniform in [len*(1-r), len*(1+r)].
    #[arg(long)]
    pub random_range_ratio: Option<f64>,
    /// vLLM random dataset: shared prefix tokens, added to the input length.
    #[arg(long)]
    pub random_prefix_len: Option<u32>,
    /// vLLM sharegpt dataset: fixed output length instead of the replies'.
    #[arg(long)]
    pub sharegpt_output_len: Option<u32>,
    /// vLLM sonnet dataset: prompt tokens, the prefix included (default 550).
    #[arg(long)]
    pub sonnet_input_len: Option<u32>,
    /// vLLM sonnet dataset: output tokens (default 150).
    #[arg(long)]
    pub sonnet_output_len: Option<u32>,
    /// vLLM sonnet dataset: tokens of the text's beginning shared by every prompt (default 200).
    #[arg(long)]
    pub sonnet_prefix_len: Option<u32>,
    /// vLLM prefix_repetition dataset: tokens of each shared prefix (default 256).
    #[arg(long)]
    pub prefix_repetition_prefix_len: Option<u32>,
    /// vLLM prefix_repetition dataset: tokens after the prefix (default 256).
    #[arg(long)]
    pub prefix_repetition_suffix_len: Option<u32>,
    /// vLLM prefix_repetition dataset: distinct prefixes (default 10).
    #[arg(long)]
    pub prefix_repetition_num_prefixes: Option<u32>,
    /// vLLM prefix_repetition dataset: output tokens (default 128).
    #[arg(long)]
    pub prefix_repetition_output_len: Option<u32>,
    /// vLLM random-mm dataset: images per request (default 1).
    #[arg(long)]
    pub random_mm_base_items_per_request: Option<u32>,
    /// vLLM random-mm dataset: image sizes as {(HEIGHT, WIDTH, 1): PROBABILITY}; bench sends
    /// one size, so one image bucket (default 256x256).
    #[arg(long, value_name = "CONFIG")]
    pub random_mm_bucket_config: Option<String>,
    /// vLLM book dataset (TGI seed): tokens per book slice.
    #[arg(long)]
    pub book_input_len: Option<u32>,
    /// vLLM book dataset: output tokens.
    #[arg(long)]
    pub book_output_len: Option<u32>,
    /// vLLM: warmup requests sent before the measured ones and left out of the statistics
    /// (bench: --warmup Nreq with N more requests).
    #[arg(long)]
    pub num_warmups: Option<u64>,
    /// guidellm: warmup as a fraction of the benchmark (--warmup F).
    #[arg(long)]
    pub warmup_percent: Option<f64>,
    /// guidellm: cooldown as a fraction of the benchmark (--cooldown F).
    #[arg(long)]
    pub cooldown_percent: Option<f64>,
    /// guidellm: no console report (--console none).
    #[arg(long)]
    pub disable_console_outputs: bool,
    /// guidellm: text_completions or chat_completions (--backend openai-completions /
    /// openai-chat).
    #[arg(long, value_name = "KIND")]
    pub request_type: Option<String>,
}

/// Which console report(s) to print (`--console`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ConsoleArg {
    /// guidellm's three tables.
    Guidellm,
    /// vLLM's "Serving Benchmark Result" block per benchmark.
    Vllm,
    /// Both.
    Both,
    /// No report on the console.
    None,
}

impl From<ConsoleArg> for Console {
    fn from(c: ConsoleArg) -> Self {
        match c {
            ConsoleArg::Guidellm => Console::Guidellm,
            ConsoleArg::Vllm => Console::Vllm,
            ConsoleArg::Both => Console::Both,
            ConsoleArg::None => Console::None,
        }
    }
}
