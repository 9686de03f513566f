//! What a server says its batch is: the most sequences it runs at once (docs/metrics.md,
//! "The server's batch"). The sweep's concurrency ladder chooses its rungs by it, and the
//! report states it. The worker reads it from the server (`bench_worker`'s `batch` module).

use serde::{Deserialize, Serialize};

/// The server's own word on its batch size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerBatch {
    /// The most sequences it runs at once.
    pub size: u32,
    /// Where it said so: `vllm_max_num_seqs` (a `max_num_seqs` label of a `vllm:*_info`
    /// series in `/metrics`), `llamacpp_total_slots` (`/props`), or
    /// `sglang_max_running_requests` (`/get_server_info`).
    pub source: String,
}

impl ServerBatch {
    /// A batch of `size` said by `source`.
    pub fn new(size: u32, source: &str) -> Self {
        Self {
            size,
            source: source.to_string(),
        }
    }

    /// How the consoles name the source.
    pub fn source_words(&self) -> &str {
        match self.source.as_str() {
            "vllm_max_num_seqs" => "vLLM max_num_seqs, /metrics",
            "llamacpp_total_slots" => "llama.cpp total_slots, /props",
            "sglang_max_running_requests" => "SGLang max_running_requests, /get_server_info",
            other => other,
        }
    }
}
