//! Where requests go and how: server URL or simulator, API, credentials, headers, TLS,
//! timeouts.

use std::net::IpAddr;
use std::path::PathBuf;

use bench_core::Balance;
use bench_worker::{BackendKind, Timeouts};
use serde::{Serialize, Serializer};

/// Where requests go and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetSettings {
    /// Server URLs in the order given (empty with `mock`), each checked; the load is shared
    /// among several by `balance`. Saved as `target`: one string, or a list when several.
    #[serde(rename = "target", serialize_with = "one_or_many")]
    pub targets: Vec<String>,
    /// How requests are shared among several targets (round-robin unless given); `None` with
    /// one (nothing to share).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balance: Option<Balance>,
    /// Benchmark the in-process simulator.
    pub mock: bool,
    /// Simulator config file for `mock`.
    pub mock_config: Option<PathBuf>,
    /// API.
    pub backend: BackendKind,
    /// Request path override.
    pub endpoint: Option<String>,
    /// Model (`None`: discovered). With a mix, the one the run reports: the base model of
    /// vLLM's `--lora-modules` (its `--model`), else the mix's first.
    pub model: Option<String>,
    /// The model mix, when requests choose among several models (docs/cli.md, "Model
    /// mixes"); `None` with one model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_mix: Option<super::models::MixSettings>,
    /// Bearer token (`--api-key`, `BENCH_API_KEY`, else `OPENAI_API_KEY`, or
    /// `ANTHROPIC_API_KEY` for Anthropic's Messages API); never printed or saved.
    #[serde(skip)]
    pub api_key: Option<String>,
    /// Extra headers; values are never printed or saved.
    #[serde(skip)]
    pub headers: Vec<(String, String)>,
    /// The names of the extra headers (what the report keeps of them).
    pub header_names: Vec<String>,
    /// Sessions: the header carrying each session's number (`--session-header`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_header: Option<String>,
    /// Sessions: the response header naming the replica (`--replica-header`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica_header: Option<String>,
    /// HTTP/2.
    pub http2: bool,
    /// Accept any certificate.
    pub insecure: bool,
    /// Extra CA certificates.
    pub cacert: Option<PathBuf>,
    /// Request timeouts.
    pub timeouts: Timeouts,
    /// Local addresses to connect from, in turn (empty: the OS chooses).
    pub source_addresses: Vec<IpAddr>,
}

/// The targets as a profile and the report's `config` write them: none (`null`, with the
/// simulator), one string, or a list of several.
fn one_or_many<S: Serializer>(targets: &[String], s: S) -> Result<S::Ok, S::Error> {
    match targets {
        [] => s.serialize_none(),
        [one] => s.serialize_str(one),
        many => many.serialize(s),
    }
}
