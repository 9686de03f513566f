//! HTTP/1.1, HTTP/2 and TLS generative-request backends for bench, with per-chunk timing.
//!
//! This crate owns the transport: it turns one [`bench_core::RequestSpec`] into one HTTP request
//! for the chosen API ([`BackendKind`]: OpenAI completions, OpenAI chat, TGI), streams the reply
//! through an incremental SSE parser ([`sse`]), and records when every content chunk arrived,
//! how many tokens came back and where that count came from, and what became of the request
//! ([`bench_core::Outcome`]). One [`Worker`] holds one pooled hyper client shared by all
//! requests. It knows nothing about load strategies, rates or reports: the scheduler hands it
//! work through [`bench_core::Backend`], and it never prints, exits or sets up logging. A
//! [`Fleet`] spreads one load across several targets, a worker each.

pub mod batch;
mod body;
mod client;
mod excerpt;
mod fastjson;
mod fleet;
mod h1;
mod pooling;
mod silence;
pub mod sse;
mod stream;
mod think;
mod worker;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use body::{
    rejected_vllm_field, target_host_port, vllm_extensions_wanted, ANTHROPIC_DEFAULT_MAX_TOKENS,
    VLLM_ONLY_FIELDS,
};
pub use fleet::Fleet;
pub use stream::{Progress, StreamRecorder};
pub use worker::{OutputCounter, Worker};

/// One reading of the target's clock ([`Worker::server_date`]): its `Date` header (whole
/// seconds, truncated) and this machine's wall clock when the probe left and when its answer
/// arrived. The server stamped the answer at some instant between the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerDate {
    /// The probe left (this machine's wall clock).
    pub sent: std::time::SystemTime,
    /// Its answer arrived.
    pub received: std::time::SystemTime,
    /// The answer's `Date`.
    pub date: std::time::SystemTime,
}

/// The API spoken to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// OpenAI `POST /v1/completions` (the default, as in guidellm).
    #[default]
    #[serde(rename = "openai-completions")]
    OpenAiCompletions,
    /// OpenAI `POST /v1/chat/completions`; the prompt is sent as one user message.
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// Hugging Face TGI's native `POST /generate_stream`.
    #[serde(rename = "tgi")]
    Tgi,
    /// OpenAI `POST /v1/responses`: the prompt as `input`, a session's history as an `input`
    /// list of messages; streamed as typed events (`response.output_text.delta`, ...).
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// OpenAI `POST /v1/embeddings`: the request's inputs as the `input` list, one JSON reply
    /// holding a vector per input.
    #[serde(rename = "openai-embeddings")]
    OpenAiEmbeddings,
    /// vLLM's (and llama.cpp's, Jina's) `POST /v1/rerank`: `query` and `documents`, one JSON
    /// reply with a scored result per document.
    #[serde(rename = "rerank")]
    Rerank,
    /// Cohere's `POST /v2/rerank` (at the server's root, not under `/v1`); the body is the
    /// same as [`BackendKind::Rerank`]'s, the reply's token count is in `meta`.
    #[serde(rename = "cohere-rerank")]
    CohereRerank,
    /// Anthropic's `POST /v1/messages` (served by vLLM and SGLang too): the prompt as one user
    /// message, a session's system prompt as `system`; streamed as typed events
    /// (`content_block_delta` with `text_delta` or `thinking_delta`, ...). The key goes in
    /// `x-api-key`, with an `anthropic-version` header.
    #[serde(rename = "anthropic-messages")]
    AnthropicMessages,
}

impl BackendKind {
    /// Every backend, in the order `--help` lists them.
    pub const ALL: [BackendKind; 8] = [
        BackendKind::OpenAiCompletions,
        BackendKind::OpenAiChat,
        BackendKind::Tgi,
        BackendKind::OpenAiResponses,
        BackendKind::AnthropicMessages,
        BackendKind::OpenAiEmbeddings,
        BackendKind::Rerank,
        BackendKind::CohereRerank,
    ];

    /// The generative backends, whose replies are streamed token by token.
    pub const GENERATIVE: [BackendKind; 5] = [
        BackendKind::OpenAiCompletions,
        BackendKind::OpenAiChat,
        BackendKind::Tgi,
        BackendKind::OpenAiResponses,
        BackendKind::AnthropicMessages,
    ];

    /// The command-line name (`openai-completions`, `openai-chat`, `tgi`).
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::OpenAiCompletions => "openai-completions",
            BackendKind::OpenAiChat => "openai-chat",
            BackendKind::Tgi => "tgi",
            BackendKind::OpenAiResponses => "openai-responses",
            BackendKind::OpenAiEmbeddings => "openai-embeddings",
            BackendKind::Rerank => "rerank",
            BackendKind::CohereRerank => "cohere-rerank",
            BackendKind::AnthropicMessages => "anthropic-messages",
        }
    }

    /// A pooling API (embeddings, rerank): nothing is generated, the reply is one JSON
    /// document, and a request may carry several inputs ([`bench_core::RequestSpec::batch`]).
    pub fn pooling(self) -> bool {
        matches!(
            self,
            BackendKind::OpenAiEmbeddings | BackendKind::Rerank | BackendKind::CohereRerank
        )
    }

    /// Least inputs per request: a rerank request needs its query and at least one document.
    pub fn min_inputs(self) -> u32 {
        match self {
            BackendKind::Rerank | BackendKind::CohereRerank => 2,
            _ => 1,
        }
    }

    /// The default request path, relative to the API root (`/v1` is added for OpenAI
    /// backends unless the target URL already ends with it).
    pub fn default_path(self) -> &'static str {
        match self {
            BackendKind::OpenAiCompletions => "/completions",
            BackendKind::OpenAiChat => "/chat/completions",
            BackendKind::Tgi => "/generate_stream",
            BackendKind::OpenAiResponses => "/responses",
            BackendKind::OpenAiEmbeddings => "/embeddings",
            BackendKind::Rerank => "/rerank",
            BackendKind::CohereRerank => "/v2/rerank",
            BackendKind::AnthropicMessages => "/messages",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BackendKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BackendKind::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| Error::UnknownBackend { name: s.to_owned() })
    }
}

/// The four timeouts of a request. Each one that fires ends the request with
/// [`bench_core::Outcome::Timeout`] naming its [`bench_core::TimeoutPhase`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeouts {
    /// TCP connect plus TLS handshake of a new connection. Default 10 s.
    pub connect: Duration,
    /// From dispatch to the response headers (includes connecting and the server's queue when
    /// it sends headers late). Default 600 s.
    pub first_byte: Duration,
    /// Longest silence between two pieces of the body, including headers to first chunk (the
    /// prefill of a long prompt). Default 300 s.
    pub idle: Duration,
    /// The whole request, from dispatch to the end of the body. Default 3600 s.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(600),
            idle: Duration::from_secs(300),
            total: Duration::from_secs(3600),
        }
    }
}

/// Everything a [`Worker`] needs to know. `Debug` never prints the API key or header values.
#[derive(Clone, PartialEq)]
pub struct WorkerConfig {
    /// Base URL, `http://` or `https://`. Its path is kept as a prefix
    /// (`https://host/proxy/v1` works; a trailing `/v1` is not doubled).
    pub target: String,
    /// The API to speak. Default `openai-completions`.
    pub backend: BackendKind,
    /// Overrides the request path (appended to the target's path prefix as given).
    pub endpoint: Option<String>,
    /// The model name to send; discovered from `/v1/models` by [`Worker::discover_model`]
    /// when `None`.
    pub model: Option<String>,
    /// A model mix (docs/cli.md, "Model mixes"): each request names the model
    /// [`bench_core::ModelMix::choose`] picks for its sequence number, and its record says
    /// which ([`bench_core::RequestRecord::model`]). `None`: every request names `model`.
    pub models: Option<std::sync::Arc<bench_core::ModelMix>>,
    /// Sent as `Authorization: Bearer ...` (`x-api-key: ...` to Anthropic's Messages API).
    /// Never logged or printed.
    pub api_key: Option<String>,
    /// Extra headers, sent on every request. Values are never logged or printed.
    pub headers: Vec<(String, String)>,
    /// Sessions: every turn carries its session's number in this header (`--session-header`;
    /// the key a router keeps a session on one replica by).
    pub session_header: Option<String>,
    /// Sessions: the response header naming the replica that served a turn
    /// (`--replica-header`), recorded per turn.
    pub replica_header: Option<String>,
    /// HTTP/2: prior knowledge for `http://`, ALPN `h2` for `https://`. Default HTTP/1.1.
    pub http2: bool,
    /// Accept any TLS certificate (self-signed test servers). Default off.
    pub insecure: bool,
    /// A PEM file of extra CA certificates to trust, on top of the system's and webpki roots.
    pub cacert: Option<PathBuf>,
    /// Request timeouts.
    pub timeouts: Timeouts,
    /// JSON object merged (recursively, its values winning) into every request body.
    pub extra_body: Option<serde_json::Value>,
    /// Send vLLM's extensions (`ignore_eos`, `min_tokens`) when a fixed output length is asked
    /// for. Turn off for strict OpenAI-compatible endpoints. Default on.
    pub vllm_extensions: bool,
    /// Send `ignore_eos: true` when a fixed output length is asked for (needs
    /// `vllm_extensions`). Default on.
    pub ignore_eos: bool,
    /// Also send `min_tokens` equal to the asked length (needs `vllm_extensions`). Default on.
    pub min_tokens: bool,
    /// Ask for `stream_options.include_usage` (OpenAI backends). Default on.
    pub include_usage: bool,
    /// How long a request may have no byte from the server before `Worker::silent` (the live
    /// progress) names it. Default [`bench_core::SILENCE_NOTICE`].
    pub silence_notice: Duration,
    /// Ask for a streamed reply (`stream: true`). Off (`--no-stream`, OpenAI backends only):
    /// the reply is one JSON document, its tokens come from `usage`, and no chunk is recorded,
    /// so the record has no TTFT. Default on.
    pub stream: bool,
    /// Read `<think>...</think>` in answer text as reasoning (`--think-tags`). Default off.
    pub think_tags: bool,
    /// Local addresses new connections are made from, in turn (`--source-address`); empty:
    /// the OS chooses. Each address gives the client its own ~28,000 ephemeral ports towards
    /// one server address. Cleartext HTTP/1.1 rotates through all of them; HTTPS and HTTP/2
    /// (few connections) use the first.
    pub source_addresses: Vec<std::net::IpAddr>,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            target: "http://127.0.0.1:8000".into(),
            backend: BackendKind::default(),
            endpoint: None,
            model: None,
            models: None,
            api_key: None,
            headers: Vec::new(),
            session_header: None,
            replica_header: None,
            http2: false,
            insecure: false,
            cacert: None,
            timeouts: Timeouts::default(),
            extra_body: None,
            vllm_extensions: true,
            ignore_eos: true,
            min_tokens: true,
            include_usage: true,
            silence_notice: bench_core::SILENCE_NOTICE,
            stream: true,
            think_tags: false,
            source_addresses: Vec::new(),
        }
    }
}

impl fmt::Debug for WorkerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, _)| (k.as_str(), "<redacted>"))
            .collect();
        f.debug_struct("WorkerConfig")
            .field("target", &redact_url(&self.target))
            .field("backend", &self.backend)
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("models", &self.models.as_ref().map(|m| m.names()))
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &headers)
            .field("http2", &self.http2)
            .field("insecure", &self.insecure)
            .field("cacert", &self.cacert)
            .field("timeouts", &self.timeouts)
            .field("extra_body", &self.extra_body)
            .field("vllm_extensions", &self.vllm_extensions)
            .field("ignore_eos", &self.ignore_eos)
            .field("min_tokens", &self.min_tokens)
            .field("include_usage", &self.include_usage)
            .field("stream", &self.stream)
            .field("think_tags", &self.think_tags)
            .field("source_addresses", &self.source_addresses)
            .finish()
    }
}

/// Checks that `target` is a usable base URL (the rule [`Worker::new`] applies: `http://` or
/// `https://`, a host, a port in 1-65535, no credentials), without building anything.
pub fn check_target(target: &str) -> Result<(), Error> {
    let cfg = WorkerConfig {
        target: target.to_owned(),
        ..WorkerConfig::default()
    };
    body::Urls::new(&cfg).map(|_| ())
}

/// The URL without credentials or query string, safe to print.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s, r),
        None => ("", url),
    };
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = match authority.rsplit_once('@') {
        Some((_, h)) => format!("***@{h}"),
        None => authority.to_owned(),
    };
    if scheme.is_empty() {
        format!("{host}{path}")
    } else {
        format!("{scheme}://{host}{path}")
    }
}

/// Whether a request's connection failure (the message of [`bench_core::Outcome::Connect`]) is
/// the client running out of file descriptors (`EMFILE`, "Too many open files", or the
/// system-wide `ENFILE`): the client's limit (`ulimit -n`), not the server's doing. The messages
/// carry the `io::Error` text, which always ends with `(os error N)`.
pub fn is_open_file_limit(message: &str) -> bool {
    message.contains("(os error 24)") || message.contains("(os error 23)")
}

/// Errors of setting up a worker or checking its target. Per-request failures are not errors:
/// they are [`bench_core::Outcome`]s in the record. No variant ever carries a secret.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Non-streaming mode asked of a backend that has none here (TGI).
    #[error(
        "--no-stream works with the openai-completions, openai-chat, openai-responses and anthropic-messages backends, not {backend}"
    )]
    NoStream {
        /// The backend.
        backend: BackendKind,
    },
    /// `--backend` named no known backend.
    #[error("unknown backend {name:?}; expected one of openai-completions, openai-chat, tgi, openai-responses, anthropic-messages, openai-embeddings, rerank, cohere-rerank")]
    UnknownBackend {
        /// What was given.
        name: String,
    },
    /// The target URL is not usable.
    #[error("invalid target URL {target}: {reason}")]
    InvalidTarget {
        /// The URL, credentials and query removed.
        target: String,
        /// Why.
        reason: String,
    },
    /// `--endpoint` is not a usable path.
    #[error("invalid endpoint path {endpoint:?}: {reason}")]
    InvalidEndpoint {
        /// What was given.
        endpoint: String,
        /// Why.
        reason: String,
    },
    /// A header name or value is not valid HTTP (the value is never shown).
    #[error("invalid header {name:?}: {reason}")]
    InvalidHeader {
        /// The header's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// `--extra-body` is not a JSON object.
    #[error("--extra-body must be a JSON object, got {kind}")]
    InvalidExtraBody {
        /// The JSON type that was given.
        kind: &'static str,
    },
    /// The CA file could not be read or holds no certificate.
    #[error("cannot use CA certificate file {}: {reason}", path.display())]
    CaCert {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// TLS could not be set up.
    #[error("TLS setup failed: {reason}")]
    Tls {
        /// Why.
        reason: String,
    },
    /// Nothing answered at the target.
    #[error("{target} is unreachable: {reason}")]
    Unreachable {
        /// The URL, credentials and query removed.
        target: String,
        /// Why (connection refused, DNS, TLS, timeout).
        reason: String,
    },
    /// The server rejected the credentials.
    #[error("{target} rejected the request with HTTP {status}: check --api-key / OPENAI_API_KEY (ANTHROPIC_API_KEY for anthropic-messages) and --header")]
    Unauthorized {
        /// The URL, credentials and query removed.
        target: String,
        /// 401 or 403.
        status: u16,
    },
    /// Something answered, but not an LLM inference server.
    #[error("{target} does not look like an LLM inference server: {reason}")]
    NotAnLlmServer {
        /// The URL, credentials and query removed.
        target: String,
        /// What was seen.
        reason: String,
    },
    /// The server lists no model.
    #[error("{target} lists no model at {path}; pass --model")]
    NoModel {
        /// The URL, credentials and query removed.
        target: String,
        /// The path asked.
        path: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_file_limit_is_told_from_other_connect_failures() {
        // What `client::chain` makes of a connect error from socket(2) under EMFILE / ENFILE.
        for errno in [24, 23] {
            let io = std::io::Error::from_raw_os_error(errno);
            let msg = format!("tcp connect error to 127.0.0.1:9: {io}");
            assert!(is_open_file_limit(&msg), "{msg}");
        }
        for errno in [111, 110, 113] {
            let io = std::io::Error::from_raw_os_error(errno);
            let msg = format!("tcp connect error to 127.0.0.1:9: {io}");
            assert!(!is_open_file_limit(&msg), "{msg}");
        }
    }

    #[test]
    fn backend_names_round_trip() {
        for b in BackendKind::ALL {
            assert_eq!(b.to_string().parse::<BackendKind>().ok(), Some(b));
            let json = serde_json::to_string(&b).expect("serialize");
            assert_eq!(json, format!("\"{b}\""));
            let back: BackendKind = serde_json::from_str(&json).expect("deserialize");
            assert_eq!(back, b);
        }
        assert!(matches!(
            "vllm".parse::<BackendKind>(),
            Err(Error::UnknownBackend { .. })
        ));
    }

    #[test]
    fn debug_never_prints_secrets() {
        let cfg = WorkerConfig {
            target: "https://user:hunter2@host/v1?key=hunter2".into(),
            api_key: Some("sk-hunter2".into()),
            headers: vec![("X-Api-Key".into(), "hunter2".into())],
            ..WorkerConfig::default()
        };
        let s = format!("{cfg:?}");
        assert!(!s.contains("hunter2"), "{s}");
        assert!(s.contains("X-Api-Key") && s.contains("host/v1"), "{s}");
    }

    #[test]
    fn redact_url_strips_credentials_and_query() {
        assert_eq!(
            redact_url("http://a:b@h:1/p/v1?x=1#f"),
            "http://***@h:1/p/v1"
        );
        assert_eq!(redact_url("https://h"), "https://h");
    }
}
