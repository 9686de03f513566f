//! A continuous-batching LLM inference server simulator with OpenAI (`/v1/completions`,
//! `/v1/chat/completions`) and TGI (`/generate_stream`, `/generate`) APIs, fault injection and a
//! ground-truth request log, so that bench can be developed, tested, demonstrated and
//! benchmarked with no GPU.
//!
//! It owns the engine model (FIFO queue, `max_batch` slots, prefill, decode steps whose length
//! grows with the batch), its replicas and the policy routing requests to them, the HTTP server
//! (HTTP/1.1 and cleartext HTTP/2 on one port, optional TLS with a self-signed certificate),
//! response rendering, fault injection and `/metrics`. It does not own token counting (that is
//! `bench-tokenizer`), argument parsing or printing (that is `bench mock-server` in the CLI).
//!
//! ```no_run
//! # async fn demo() -> Result<(), bench_mock::Error> {
//! let server = bench_mock::MockServer::start(bench_mock::MockConfig::zero_delay()).await?;
//! println!("{}", server.url()); // http://127.0.0.1:PORT
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! The model and every parameter are described in `docs/simulator.md`.

mod body;
mod config;
mod engine;
mod faults;
mod gpu;
mod log;
mod lora;
mod metrics;
mod prefix;
mod render;
mod replicas;
mod request;
mod server;
mod spec;
mod tls;
mod words;

use std::path::PathBuf;

pub use config::{
    parse_balance, Balance, Faults, MockConfig, ServedModel, MAX_REPLICAS, MAX_SPEC_TOKENS,
};
pub use faults::FaultRecord;
pub use log::{EndKind, RequestLogEntry};
pub use request::{image_tokens, IMAGE_EXTRA_TOKENS, IMAGE_PATCH};
pub use server::MockServer;

/// Everything that can go wrong starting the simulator.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The config file could not be read.
    #[error("cannot read simulator config {}: {source}", path.display())]
    ReadConfig {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The config file is not valid YAML/JSON or has unknown keys.
    #[error("invalid simulator config {}: {message}", path.display())]
    ParseConfig {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// A setting is out of range.
    #[error("invalid simulator setting `{field}`: {message}")]
    Invalid {
        /// The setting's name as in the config file.
        field: &'static str,
        /// What was wrong.
        message: String,
    },
    /// The tokenizer could not be loaded.
    #[error("simulator tokenizer: {0}")]
    Tokenizer(#[from] bench_tokenizer::Error),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// `host:port`.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The TLS certificate or configuration could not be made.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// The request log file could not be opened.
    #[error("cannot open request log {}: {source}", path.display())]
    RequestLog {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Another I/O failure.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
