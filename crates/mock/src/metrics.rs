//! Counters and gauges behind `GET /metrics`, named as vLLM names them so that scrapers written
//! for vLLM work unchanged.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// Live figures of a running simulator.
#[derive(Debug)]
pub(crate) struct Metrics {
    label: String,
    running: AtomicU64,
    waiting: AtomicU64,
    generated: AtomicU64,
    prompt: AtomicU64,
    success: AtomicU64,
    errors: AtomicU64,
    prefix_queries: AtomicU64,
    prefix_hits: AtomicU64,
}

impl Metrics {
    pub(crate) fn new(model: &str) -> Self {
        let mut escaped = String::with_capacity(model.len());
        for c in model.chars() {
            match c {
                '\\' => escaped.push_str("\\\\"),
                '"' => escaped.push_str("\\\""),
                '\n' => escaped.push_str("\\n"),
                c => escaped.push(c),
            }
        }
        Self {
            label: format!("{{model_name=\"{escaped}\"}}"),
            running: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            generated: AtomicU64::new(0),
            prompt: AtomicU64::new(0),
            success: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            prefix_queries: AtomicU64::new(0),
            prefix_hits: AtomicU64::new(0),
        }
    }

    pub(crate) fn set_queue(&self, running: usize, waiting: usize) {
        self.running.store(running as u64, Ordering::Relaxed);
        self.waiting.store(waiting as u64, Ordering::Relaxed);
    }

    /// In zero-delay mode there is no engine: in-flight responses count as running.
    pub(crate) fn running_add(&self, delta: i64) {
        if delta >= 0 {
            self.running.fetch_add(delta as u64, Ordering::Relaxed);
        } else {
            self.running
                .fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
        }
    }

    pub(crate) fn add_generated(&self, n: u64) {
        if n > 0 {
            self.generated.fetch_add(n, Ordering::Relaxed);
        }
    }

    #[cfg(test)]
    pub(crate) fn generated(&self) -> u64 {
        self.generated.load(Ordering::Relaxed)
    }

    pub(crate) fn add_prompt(&self, n: u64) {
        self.prompt.fetch_add(n, Ordering::Relaxed);
    }

    /// Prefix cache lookups: prompt tokens queried and tokens found.
    pub(crate) fn add_prefix_cache(&self, queried: u64, hits: u64) {
        self.prefix_queries.fetch_add(queried, Ordering::Relaxed);
        self.prefix_hits.fetch_add(hits, Ordering::Relaxed);
    }

    pub(crate) fn count_status(&self, status: u16) {
        if status == 200 {
            self.success.fetch_add(1, Ordering::Relaxed);
        } else {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The Prometheus text exposition.
    pub(crate) fn render(&self) -> String {
        let mut out = String::with_capacity(1024);
        let l = &self.label;
        let mut metric = |name: &str, kind: &str, help: &str, v: u64| {
            let _ = write!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{l} {v}\n"
            );
        };
        metric(
            "vllm:num_requests_running",
            "gauge",
            "Requests holding a batch slot (prefilling or decoding).",
            self.running.load(Ordering::Relaxed),
        );
        metric(
            "vllm:num_requests_waiting",
            "gauge",
            "Requests waiting in the queue for a batch slot.",
            self.waiting.load(Ordering::Relaxed),
        );
        metric(
            "vllm:generation_tokens_total",
            "counter",
            "Generated tokens.",
            self.generated.load(Ordering::Relaxed),
        );
        metric(
            "vllm:prompt_tokens_total",
            "counter",
            "Prompt tokens of accepted generation requests.",
            self.prompt.load(Ordering::Relaxed),
        );
        metric(
            "vllm:request_success_total",
            "counter",
            "Generation requests answered with status 200.",
            self.success.load(Ordering::Relaxed),
        );
        metric(
            "vllm:prefix_cache_queries_total",
            "counter",
            "Prompt tokens looked up in the prefix cache.",
            self.prefix_queries.load(Ordering::Relaxed),
        );
        metric(
            "vllm:prefix_cache_hits_total",
            "counter",
            "Prompt tokens found in the prefix cache.",
            self.prefix_hits.load(Ordering::Relaxed),
        );
        metric(
            "bench_mock:request_errors_total",
            "counter",
            "Generation requests answered with an error status (bad requests and injected faults).",
            self.errors.load(Ordering::Relaxed),
        );
        out
    }
}
