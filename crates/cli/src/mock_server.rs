//! `bench mock-server`: serve the built-in LLM server simulator until interrupted.
//!
//! Flags override the config file (`--config`), which overrides the defaults documented on
//! `bench_mock::MockConfig` and in `docs/simulator.md`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use bench_mock::{MockConfig, MockServer};
use clap::Args;

use crate::UsageError;

/// Arguments of `bench mock-server`.
#[derive(Debug, Args)]
#[command(after_help = "Prints `listening on URL` on stdout once serving. \
    The engine model, the closed-form capacity and the request log format are described in \
    docs/simulator.md.")]
pub struct MockServerArgs {
    /// YAML or JSON file of simulator settings (keys as in docs/simulator.md); flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to bind [default: 127.0.0.1].
    #[arg(long)]
    pub host: Option<String>,
    /// Port to bind; 0 picks a free one.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Model name served and echoed [default: mock-model].
    #[arg(long)]
    pub model: Option<String>,
    /// Most sequences in the batch at once; more wait in a FIFO queue [default: 64].
    #[arg(long, value_name = "N")]
    pub max_batch: Option<u32>,
    /// Fixed part of a decode step, ms [default: 8].
    #[arg(long, value_name = "MS")]
    pub step_base_ms: Option<f64>,
    /// Added to a decode step per sequence in the batch, ms [default: 0.1].
    #[arg(long, value_name = "MS")]
    pub step_per_seq_ms: Option<f64>,
    /// Fixed part of a prefill, ms [default: 2].
    #[arg(long, value_name = "MS")]
    pub prefill_overhead_ms: Option<f64>,
    /// Prefill speed, prompt tokens/s; 0 = prompt length costs nothing [default: 10000].
    #[arg(long, value_name = "TOK_PER_S")]
    pub prefill_rate: Option<f64>,
    /// Prefix cache capacity in token blocks (LRU); 0 = no prefix cache [default: 0].
    #[arg(long, value_name = "BLOCKS")]
    pub prefix_cache_blocks: Option<u32>,
    /// Tokens per prefix-cache block [default: 16].
    #[arg(long, value_name = "TOKENS")]
    pub block_size: Option<u32>,
    /// Prefill tokens per engine step shared by all sequences (chunked prefill); 0 = every
    /// prefill runs in parallel [default: 0].
    #[arg(long, value_name = "TOKENS")]
    pub max_num_batched_tokens: Option<u32>,
    /// Speculative decoding: draft tokens verified per sequence at every step; a step emits the
    /// accepted ones plus one, in one event; 0 = off, at most 32 [default: 0].
    #[arg(long, value_name = "K")]
    pub spec_tokens: Option<u32>,
    /// Speculative decoding: probability that each draft token is accepted (seeded; acceptance
    /// stops at the first rejection) [default: 0.7].
    #[arg(long, value_name = "P", allow_negative_numbers = true)]
    pub spec_accept: Option<f64>,
    /// Zero-delay mode: no prefill or decode time, every response written at once (sets the
    /// four timing parameters to 0).
    #[arg(long)]
    pub zero_delay: bool,
    /// Output limit when a request names none [default: 128].
    #[arg(long, value_name = "N")]
    pub default_max_tokens: Option<u32>,
    /// Longest prompt + output a request may ask for [default: 131072].
    #[arg(long, value_name = "N")]
    pub max_model_len: Option<u32>,
    /// Tokens the simulated KV cache holds (KV usage = held tokens / this) [default: 65536].
    #[arg(long, value_name = "N")]
    pub kv_cache_tokens: Option<u64>,
    /// HTTP/2 streams one connection may hold open at once [default: 4096].
    #[arg(long, value_name = "N")]
    pub http2_max_streams: Option<u32>,
    /// Always generate the output limit, as if every request set ignore_eos.
    #[arg(long)]
    pub ignore_eos: bool,
    /// Chat responses reason for their first N output tokens (`reasoning_content`) [default: 0].
    #[arg(long, value_name = "N")]
    pub reasoning_tokens: Option<u32>,
    /// Chat requests offering tools and ending with a user message: the share answered with
    /// a tool call, drawn per request from the seed [default: 0].
    #[arg(long, value_name = "P")]
    pub tool_call_share: Option<f64>,
    /// Embeddings and rerank: fixed part of a request's service time, ms [default: 1].
    #[arg(long, value_name = "MS")]
    pub pool_base_ms: Option<f64>,
    /// Embeddings and rerank: service time per input (or document), ms [default: 0.2].
    #[arg(long, value_name = "MS")]
    pub pool_per_input_ms: Option<f64>,
    /// Embeddings and rerank: input tokens encoded per second; 0 = free [default: 100000].
    #[arg(long, value_name = "TOKENS")]
    pub pool_token_rate: Option<f64>,
    /// Length of every embedding vector returned [default: 16].
    #[arg(long, value_name = "N")]
    pub embedding_dim: Option<u32>,
    /// GPU power model (`/dcgm/metrics`): watts a replica's GPU draws with no slot held
    /// [default: 100].
    #[arg(long, value_name = "W")]
    pub gpu_idle_w: Option<f64>,
    /// GPU power model: watts added per sequence holding a batch slot [default: 2].
    #[arg(long, value_name = "W")]
    pub gpu_per_seq_w: Option<f64>,
    /// GPU power model: frame buffer memory a replica's GPU holds, MiB [default: 72000].
    #[arg(long, value_name = "MIB")]
    pub gpu_memory_mib: Option<f64>,
    /// LoRA adapters served beside the base model (vLLM's spelling: NAME or NAME=PATH, the
    /// path ignored), each at the server's step cost; `models:` in --config sets each one's.
    /// A request naming a model not served is answered 404.
    #[arg(long, value_name = "NAME[=PATH]", num_args = 1..)]
    pub lora_modules: Vec<String>,
    /// LoRA adapters resident at once (vLLM's --max-loras) [default: 1].
    #[arg(long, value_name = "N")]
    pub max_loras: Option<u32>,
    /// Milliseconds a request's prefill takes longer when its adapter is loaded for it
    /// [default: 5].
    #[arg(long, value_name = "MS")]
    pub lora_swap_ms: Option<f64>,
    /// Independent engines behind the one port, each with its own batch, queue and caches;
    /// no effect with --zero-delay [default: 1].
    #[arg(long, value_name = "N")]
    pub replicas: Option<u32>,
    /// How requests are spread over the replicas: round-robin (in turn, by arrival),
    /// least-outstanding (the replica with the fewest unanswered requests) or session-affinity
    /// (by the --affinity-header's value) [default: round-robin].
    #[arg(long, value_name = "POLICY")]
    pub balance: Option<String>,
    /// The request header session-affinity keys on; its value is logged as `session`
    /// [default: x-session-id].
    #[arg(long, value_name = "NAME")]
    pub affinity_header: Option<String>,
    /// Seed of EOS lengths, faults and output words [default: 0].
    #[arg(long)]
    pub seed: Option<u64>,
    /// tokenizer.json counting prompt tokens and choosing output words [default: built-in].
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
    /// Serve HTTPS with a self-signed certificate (ALPN h2, http/1.1).
    #[arg(long)]
    pub tls: bool,
    /// Write the self-signed certificate (PEM) here, for clients' --cacert.
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub cert_out: Option<PathBuf>,
    /// Append one JSON line per generation request (ground truth) to FILE.
    #[arg(long, value_name = "FILE")]
    pub log_requests: Option<PathBuf>,
    /// Include every token's write time in the request log.
    #[arg(long)]
    pub log_token_times: bool,
    /// Fraction of requests answered 429 with an error body.
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub fail_429: Option<f64>,
    /// Fraction of requests answered 500 with an error body.
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub fail_500: Option<f64>,
    /// Fraction of requests answered 503 with an error body.
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub fail_503: Option<f64>,
    /// Fraction of streams whose connection is reset mid-stream.
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub reset_rate: Option<f64>,
    /// Fraction of streams that get one malformed SSE event.
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub malformed_rate: Option<f64>,
    /// Fraction of streams ended by an in-stream `data: {"error": ...}` event.
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub stream_error_rate: Option<f64>,
    /// Fraction of streams that stall (stop sending without closing).
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub stall_rate: Option<f64>,
    /// Stall length in ms; 0 stalls until the client leaves [default: 0].
    #[arg(long, value_name = "MS")]
    pub stall_ms: Option<u64>,
    /// Fraction of requests whose response headers are delayed.
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub slow_headers_rate: Option<f64>,
    /// Delay of slow response headers, ms [default: 1000].
    #[arg(long, value_name = "MS")]
    pub slow_headers_ms: Option<u64>,
    /// Runtime worker threads [default: one per core].
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

impl MockServerArgs {
    /// `--lora-modules`: adapters of the base model (the config's first model, else `model`)
    /// after the config's models.
    fn add_lora_modules(&self, c: &mut MockConfig) {
        if self.lora_modules.is_empty() {
            return;
        }
        if c.models.is_empty() {
            c.models.push(bench_mock::ServedModel {
                name: c.model.clone(),
                lora: false,
                step_per_seq_ms: None,
            });
        }
        for m in &self.lora_modules {
            let name = m.split_once('=').map_or(m.as_str(), |(n, _)| n).trim();
            c.models.push(bench_mock::ServedModel {
                name: name.to_string(),
                lora: true,
                step_per_seq_ms: None,
            });
        }
    }

    /// Defaults, then the config file, then flags; validated.
    fn resolve(&self) -> anyhow::Result<MockConfig> {
        let mut c = match &self.config {
            Some(path) => {
                MockConfig::from_file(path).map_err(|e| UsageError::new(e.to_string()))?
            }
            None => MockConfig::default(),
        };
        c.port = self.port;
        if let Some(v) = &self.host {
            c.host = v.clone();
        }
        if let Some(v) = &self.model {
            c.model = v.clone();
        }
        self.add_lora_modules(&mut c);
        macro_rules! set {
            ($($flag:ident => $($field:ident).+),* $(,)?) => {
                $(if let Some(v) = self.$flag.clone() { c.$($field).+ = v; })*
            };
        }
        set!(
            max_batch => max_batch,
            step_base_ms => step_base_ms,
            step_per_seq_ms => step_per_seq_ms,
            prefill_overhead_ms => prefill_overhead_ms,
            prefill_rate => prefill_rate,
            prefix_cache_blocks => prefix_cache_blocks,
            block_size => block_size,
            max_num_batched_tokens => max_num_batched_tokens,
            spec_tokens => spec_tokens,
            spec_accept => spec_accept,
            default_max_tokens => default_max_tokens,
            max_model_len => max_model_len,
            kv_cache_tokens => kv_cache_tokens,
            http2_max_streams => http2_max_streams,
            seed => seed,
            reasoning_tokens => reasoning_tokens,
            tool_call_share => tool_call_share,
            affinity_header => affinity_header,
            pool_base_ms => pool_base_ms,
            pool_per_input_ms => pool_per_input_ms,
            pool_token_rate => pool_token_rate,
            embedding_dim => embedding_dim,
            gpu_idle_w => gpu_idle_w,
            gpu_per_seq_w => gpu_per_seq_w,
            gpu_memory_mib => gpu_memory_mib,
            replicas => replicas,
            max_loras => max_loras,
            lora_swap_ms => lora_swap_ms,
            fail_429 => faults.http_429,
            fail_500 => faults.http_500,
            fail_503 => faults.http_503,
            reset_rate => faults.reset,
            malformed_rate => faults.malformed,
            stream_error_rate => faults.stream_error,
            stall_rate => faults.stall,
            stall_ms => faults.stall_ms,
            slow_headers_rate => faults.slow_headers,
            slow_headers_ms => faults.slow_headers_ms,
        );
        if self.zero_delay {
            c.step_base_ms = 0.0;
            c.step_per_seq_ms = 0.0;
            c.prefill_overhead_ms = 0.0;
            c.prefill_rate = 0.0;
            c.pool_base_ms = 0.0;
            c.pool_per_input_ms = 0.0;
            c.pool_token_rate = 0.0;
        }
        if let Some(b) = &self.balance {
            c.balance = bench_mock::parse_balance(b)
                .map_err(|e| UsageError::new(format!("--balance: {e}")))?;
        }
        if let Some(t) = &self.tokenizer {
            c.tokenizer = Some(t.clone());
        }
        if let Some(p) = &self.log_requests {
            c.log_requests = Some(p.clone());
        }
        c.ignore_eos |= self.ignore_eos;
        c.tls |= self.tls;
        c.log_token_times |= self.log_token_times;
        c.validate().map_err(|e| UsageError::new(e.to_string()))?;
        Ok(c)
    }
}

/// The open-file limit the simulator asks for (granted above the hard limit only to a
/// privileged process; Linux's `fs.nr_open` default).
const SIMULATOR_OPEN_FILES: u64 = 1 << 20;

/// Runs the simulator until Ctrl-C (or SIGTERM).
pub fn run(args: MockServerArgs) -> anyhow::Result<ExitCode> {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    let config = args.resolve()?;
    // Every stream a client holds open is a socket here: as many as the OS allows, and a
    // descriptor table grown now, not while clients connect (see `limits`).
    let _ = bench_runner::limits::make_room(Some(SIMULATOR_OPEN_FILES), None);
    if args.threads == Some(0) {
        return Err(UsageError::new("--threads must be at least 1").into());
    }
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(n) = args.threads {
        rt.worker_threads(n);
    }
    let rt = rt.build().context("starting the async runtime")?;
    rt.block_on(async move {
        let server = MockServer::start(config).await.map_err(|e| match e {
            bench_mock::Error::Bind { .. }
            | bench_mock::Error::Io(_)
            | bench_mock::Error::Tls(_) => anyhow::Error::new(e),
            other => UsageError::new(other.to_string()).into(),
        })?;
        if let (Some(path), Some(pem)) = (&args.cert_out, server.tls_certificate_pem()) {
            std::fs::write(path, pem)
                .with_context(|| format!("writing the certificate to {}", path.display()))?;
        }
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "listening on {}", server.url())?;
            out.flush()?;
        }
        wait_for_signal().await;
        server.shutdown().await;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_mock::Balance;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct T {
        #[command(flatten)]
        a: MockServerArgs,
    }

    fn resolve(args: &[&str]) -> anyhow::Result<MockConfig> {
        let mut v = vec!["t"];
        v.extend_from_slice(args);
        T::try_parse_from(v)?.a.resolve()
    }

    #[test]
    fn flags_override_file_and_defaults() {
        let dir = std::env::temp_dir().join(format!("bench-mockcli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let f = dir.join("m.yaml");
        std::fs::write(&f, "max_batch: 7\nstep_base_ms: 3\nfaults: {stall: 0.5}\n").expect("w");
        let c = resolve(&["--config", f.to_str().expect("utf8"), "--max-batch", "9"]).expect("ok");
        assert_eq!(c.max_batch, 9);
        assert_eq!(c.step_base_ms, 3.0);
        assert_eq!(c.faults.stall, 0.5);
        assert_eq!(c.port, 8000);
        let c = resolve(&["--zero-delay", "--port", "0", "--fail-503", "0.1"]).expect("ok");
        assert!(c.is_zero_delay());
        assert_eq!(c.faults.http_503, 0.1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_values_are_usage_errors() {
        let e = resolve(&["--reset-rate", "2"]).expect_err("bad");
        assert!(e.downcast_ref::<UsageError>().is_some());
        assert!(e.to_string().contains("faults.reset"), "{e}");
        let e = resolve(&["--config", "/nonexistent/x.yaml"]).expect_err("bad");
        assert!(e.downcast_ref::<UsageError>().is_some());
        let e = resolve(&["--replicas", "0"]).expect_err("bad");
        assert!(e.downcast_ref::<UsageError>().is_some());
        assert!(e.to_string().contains("`replicas`"), "{e}");
        let e = resolve(&["--balance", "fastest"]).expect_err("bad");
        assert!(e.downcast_ref::<UsageError>().is_some());
        let msg = e.to_string();
        for want in ["--balance", "`fastest`", "round-robin", "least-outstanding"] {
            assert!(msg.contains(want), "{want} not in {msg}");
        }
    }

    #[test]
    fn replica_flags_override_the_file() {
        let dir = std::env::temp_dir().join(format!("bench-mockrep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let f = dir.join("m.yaml");
        std::fs::write(&f, "replicas: 3\nbalance: least-outstanding\n").expect("w");
        let file = f.to_str().expect("utf8");
        let c = resolve(&["--config", file]).expect("ok");
        assert_eq!((c.replicas, c.balance), (3, Balance::LeastOutstanding));
        let c = resolve(&[
            "--config",
            file,
            "--replicas",
            "2",
            "--balance",
            "round-robin",
        ])
        .expect("ok");
        assert_eq!((c.replicas, c.balance), (2, Balance::RoundRobin));
        let c = resolve(&[]).expect("ok");
        assert_eq!((c.replicas, c.balance), (1, Balance::RoundRobin));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
