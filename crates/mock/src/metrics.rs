//! Counters, gauges and histograms behind `GET /metrics`, named as vLLM names them so that
//! scrapers written for vLLM work unchanged (`docs/simulator.md`, "Metrics").

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// vLLM's bucket bounds (seconds) for `vllm:time_to_first_token_seconds`.
const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
/// vLLM's bucket bounds for `vllm:inter_token_latency_seconds`.
const ITL_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
/// vLLM's bucket bounds for `vllm:e2e_request_latency_seconds`.
const E2E_BUCKETS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];

/// A Prometheus histogram with fixed bounds (seconds); the sum is kept in nanoseconds.
#[derive(Debug)]
pub(crate) struct Histogram {
    bounds: &'static [f64],
    /// Per bucket (not cumulative); the last is `+Inf`.
    counts: Vec<AtomicU64>,
    sum_ns: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
        }
    }

    pub(crate) fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        let i = self.bounds.partition_point(|&b| b < s);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ns
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    #[cfg(test)]
    pub(crate) fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    #[cfg(test)]
    pub(crate) fn sum(&self) -> Duration {
        Duration::from_nanos(self.sum_ns.load(Ordering::Relaxed))
    }

    fn render(&self, out: &mut String, name: &str, help: &str, model: &str) {
        let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} histogram\n");
        let mut cum = 0;
        for (i, c) in self.counts.iter().enumerate() {
            cum += c.load(Ordering::Relaxed);
            let le = self
                .bounds
                .get(i)
                .map_or("+Inf".to_string(), |b| format!("{b:?}"));
            let _ = writeln!(out, "{name}_bucket{{le=\"{le}\",{model}}} {cum}");
        }
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = write!(
            out,
            "{name}_sum{{{model}}} {sum:?}\n{name}_count{{{model}}} {cum}\n"
        );
    }
}

/// One replica's gauges, written by its engine.
#[derive(Debug, Default)]
struct Gauges {
    running: AtomicU64,
    waiting: AtomicU64,
    /// Tokens held by slot-holding sequences (prompt + released output): the KV-usage model.
    kv_tokens: AtomicU64,
    /// The time integrals of the slot holders, which the GPU power model reads.
    held: Mutex<Held>,
}

/// One replica's slot holders over time, integrated up to `at`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Held {
    /// When the integrals were last brought up to date (`None`: never, nothing held yet).
    at: Option<Instant>,
    /// Slot holders since `at`.
    pub running: u64,
    /// Seconds of slot holding, summed over the holders (`∫ running dt`).
    pub slot_s: f64,
    /// Seconds with at least one slot held (the engine stepping).
    pub busy_s: f64,
}

impl Held {
    /// The integrals brought up to `now`.
    fn at(mut self, now: Instant) -> Self {
        if let Some(at) = self.at {
            let dt = now.saturating_duration_since(at).as_secs_f64();
            self.slot_s += self.running as f64 * dt;
            if self.running > 0 {
                self.busy_s += dt;
            }
        }
        self.at = Some(now);
        self
    }
}

/// Live figures of a running simulator. Counters and histograms are shared by the replicas
/// (so they are sums over them); gauges are kept per replica and summed when rendered.
#[derive(Debug)]
pub(crate) struct Metrics {
    label: String,
    /// `model_name="..."` without braces (for histograms, whose buckets add `le`).
    model_label: String,
    /// One set of gauges per replica; `/metrics` shows their sums (the KV usage: their mean).
    gauges: Vec<Gauges>,
    kv_capacity: u64,
    pub(crate) ttft: Histogram,
    pub(crate) itl: Histogram,
    pub(crate) e2e: Histogram,
    generated: AtomicU64,
    prompt: AtomicU64,
    success: AtomicU64,
    errors: AtomicU64,
    prefix_queries: AtomicU64,
    prefix_hits: AtomicU64,
    /// vLLM's speculative-decoding counters, served when `spec_tokens` > 0.
    spec: Option<SpecCounters>,
    /// The batch served as vLLM's `max_num_seqs` (a `vllm:vllm_config_info` label).
    max_num_seqs: Option<u32>,
}

/// `vllm:spec_decode_*` (docs/simulator.md, "Speculative decoding"): what vLLM's
/// `SpecDecodingStats` counts at each verification.
#[derive(Debug)]
struct SpecCounters {
    drafts: AtomicU64,
    draft_tokens: AtomicU64,
    accepted: AtomicU64,
    /// Drafts whose token at position `i` (from 0) was accepted.
    per_pos: Vec<AtomicU64>,
}

impl Metrics {
    /// `kv_capacity`: tokens one replica's simulated KV cache holds (`kv_cache_tokens`);
    /// `replicas`: how many engines write gauges (at least one set is kept).
    pub(crate) fn new(model: &str, kv_capacity: u64, replicas: usize) -> Self {
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
            model_label: format!("model_name=\"{escaped}\""),
            gauges: (0..replicas.max(1)).map(|_| Gauges::default()).collect(),
            kv_capacity: kv_capacity.max(1),
            ttft: Histogram::new(TTFT_BUCKETS),
            itl: Histogram::new(ITL_BUCKETS),
            e2e: Histogram::new(E2E_BUCKETS),
            generated: AtomicU64::new(0),
            prompt: AtomicU64::new(0),
            success: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            prefix_queries: AtomicU64::new(0),
            prefix_hits: AtomicU64::new(0),
            spec: None,
            max_num_seqs: None,
        }
    }

    /// Serves `max_num_seqs` as vLLM does, a label of its config info series:
    /// `vllm:vllm_config_info{scheduler_config_max_num_seqs="N"} 1`.
    pub(crate) fn with_max_num_seqs(mut self, n: u32) -> Self {
        self.max_num_seqs = Some(n);
        self
    }

    /// Serves vLLM's speculative-decoding counters for `k` draft tokens a step (none when 0).
    pub(crate) fn with_spec(mut self, k: u8) -> Self {
        self.spec = (k > 0).then(|| SpecCounters {
            drafts: AtomicU64::new(0),
            draft_tokens: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            per_pos: (0..k).map(|_| AtomicU64::new(0)).collect(),
        });
        self
    }

    /// One verification of `k` draft tokens of which the first `accepted` were accepted.
    pub(crate) fn add_spec_step(&self, k: u8, accepted: u8) {
        let Some(s) = &self.spec else {
            return;
        };
        s.drafts.fetch_add(1, Ordering::Relaxed);
        s.draft_tokens.fetch_add(u64::from(k), Ordering::Relaxed);
        s.accepted.fetch_add(u64::from(accepted), Ordering::Relaxed);
        for c in s.per_pos.iter().take(usize::from(accepted)) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counters' values: drafts, draft tokens, accepted tokens, accepted per position.
    #[cfg(test)]
    pub(crate) fn spec_totals(&self) -> Option<(u64, u64, u64, Vec<u64>)> {
        let s = self.spec.as_ref()?;
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Some((
            l(&s.drafts),
            l(&s.draft_tokens),
            l(&s.accepted),
            s.per_pos.iter().map(l).collect(),
        ))
    }

    /// vLLM's names: three counters and one per draft position (label `position`, from 0).
    fn render_spec(&self, out: &mut String) {
        let Some(s) = &self.spec else {
            return;
        };
        let l = &self.label;
        for (name, help, c) in [
            (
                "vllm:spec_decode_num_drafts",
                "Number of spec decoding drafts.",
                &s.drafts,
            ),
            (
                "vllm:spec_decode_num_draft_tokens",
                "Number of draft tokens.",
                &s.draft_tokens,
            ),
            (
                "vllm:spec_decode_num_accepted_tokens",
                "Number of accepted tokens.",
                &s.accepted,
            ),
        ] {
            let v = c.load(Ordering::Relaxed);
            let _ = write!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name}_total{l} {v}\n"
            );
        }
        let name = "vllm:spec_decode_num_accepted_tokens_per_pos";
        let _ = write!(
            out,
            "# HELP {name} Accepted tokens per draft position.\n# TYPE {name} counter\n"
        );
        let m = &self.model_label;
        for (i, c) in s.per_pos.iter().enumerate() {
            let v = c.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_total{{{m},position=\"{i}\"}} {v}");
        }
    }

    /// Replica `replica`'s gauges (an index past the last writes the last).
    fn gauges(&self, replica: usize) -> &Gauges {
        &self.gauges[replica.min(self.gauges.len() - 1)]
    }

    /// Replica `replica`'s slot holders and queue.
    pub(crate) fn set_queue(&self, replica: usize, running: usize, waiting: usize) {
        let g = self.gauges(replica);
        Self::hold(g, running as u64);
        g.running.store(running as u64, Ordering::Relaxed);
        g.waiting.store(waiting as u64, Ordering::Relaxed);
    }

    /// Brings `g`'s integrals up to now, then counts `running` holders from now on.
    fn hold(g: &Gauges, running: u64) {
        let mut h = g.held.lock().unwrap_or_else(|p| p.into_inner());
        *h = h.at(Instant::now());
        h.running = running;
    }

    /// Every replica's slot-holding integrals, up to now (the GPU power model's input).
    pub(crate) fn held(&self) -> Vec<Held> {
        let now = Instant::now();
        self.gauges
            .iter()
            .map(|g| g.held.lock().unwrap_or_else(|p| p.into_inner()).at(now))
            .collect()
    }

    /// Tokens held in replica `replica`'s simulated KV cache.
    pub(crate) fn set_kv_tokens(&self, replica: usize, tokens: u64) {
        self.gauges(replica)
            .kv_tokens
            .store(tokens, Ordering::Relaxed);
    }

    /// In zero-delay mode there is no engine (and one replica): in-flight responses count as
    /// running. They hold no GPU (the power model sees an idle engine): this path is the
    /// client ceiling's, and takes no lock.
    pub(crate) fn running_add(&self, delta: i64) {
        let running = &self.gauges(0).running;
        if delta >= 0 {
            running.fetch_add(delta as u64, Ordering::Relaxed);
        } else {
            running.fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
        }
    }

    /// A gauge summed over the replicas.
    fn sum(&self, gauge: impl Fn(&Gauges) -> &AtomicU64) -> u64 {
        self.gauges
            .iter()
            .map(|g| gauge(g).load(Ordering::Relaxed))
            .sum()
    }

    /// The KV usage: the mean over the replicas of each one's `min(1, held / kv_capacity)`.
    fn kv_usage(&self) -> f64 {
        let cap = self.kv_capacity as f64;
        let total: f64 = self
            .gauges
            .iter()
            .map(|g| (g.kv_tokens.load(Ordering::Relaxed) as f64 / cap).min(1.0))
            .sum();
        total / self.gauges.len() as f64
    }

    pub(crate) fn add_generated(&self, n: u64) {
        if n > 0 {
            self.generated.fetch_add(n, Ordering::Relaxed);
        }
    }

    #[cfg(test)]
    pub(crate) fn kv_tokens(&self) -> u64 {
        self.sum(|g| &g.kv_tokens)
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

    /// The gauges and counters: (name, type, help, value) each.
    fn scalars(&self) -> [(&'static str, &'static str, &'static str, f64); 9] {
        [
            (
                "vllm:num_requests_running",
                "gauge",
                "Requests holding a batch slot (prefilling or decoding).",
                self.sum(|g| &g.running) as f64,
            ),
            (
                "vllm:num_requests_waiting",
                "gauge",
                "Requests waiting in the queue for a batch slot.",
                self.sum(|g| &g.waiting) as f64,
            ),
            (
                "vllm:kv_cache_usage_perc",
                "gauge",
                "KV-cache usage (1 = full): tokens held by running requests / kv_cache_tokens (with replicas, their mean).",
                self.kv_usage(),
            ),
            (
                "vllm:generation_tokens_total",
                "counter",
                "Generated tokens.",
                self.generated.load(Ordering::Relaxed) as f64,
            ),
            (
                "vllm:prompt_tokens_total",
                "counter",
                "Prompt tokens of accepted generation requests.",
                self.prompt.load(Ordering::Relaxed) as f64,
            ),
            (
                "vllm:request_success_total",
                "counter",
                "Generation requests answered with status 200.",
                self.success.load(Ordering::Relaxed) as f64,
            ),
            (
                "vllm:prefix_cache_queries_total",
                "counter",
                "Prompt tokens looked up in the prefix cache.",
                self.prefix_queries.load(Ordering::Relaxed) as f64,
            ),
            (
                "vllm:prefix_cache_hits_total",
                "counter",
                "Prompt tokens found in the prefix cache.",
                self.prefix_hits.load(Ordering::Relaxed) as f64,
            ),
            (
                "bench_mock:request_errors_total",
                "counter",
                "Generation requests answered with an error status (bad requests and injected faults).",
                self.errors.load(Ordering::Relaxed) as f64,
            ),
        ]
    }

    /// The Prometheus text exposition.
    pub(crate) fn render(&self) -> String {
        let mut out = String::with_capacity(8192);
        let l = &self.label;
        for (name, kind, help, v) in self.scalars() {
            let _ = write!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{l} {v}\n"
            );
        }
        let m = &self.model_label;
        self.ttft.render(
            &mut out,
            "vllm:time_to_first_token_seconds",
            "Arrival to first token (engine schedule).",
            m,
        );
        self.itl.render(
            &mut out,
            "vllm:inter_token_latency_seconds",
            "Time between consecutive tokens of a request (engine schedule).",
            m,
        );
        self.e2e.render(
            &mut out,
            "vllm:e2e_request_latency_seconds",
            "Arrival to last token (engine schedule).",
            m,
        );
        self.render_spec(&mut out);
        if let Some(n) = self.max_num_seqs {
            let _ = write!(
                out,
                "# HELP vllm:vllm_config_info Information of the LLMEngine VllmConfig.\n\
                 # TYPE vllm:vllm_config_info gauge\n\
                 vllm:vllm_config_info{{{m},scheduler_config_max_num_seqs=\"{n}\"}} 1\n"
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of the scalar series `name` in a rendered text.
    fn value(text: &str, name: &str) -> f64 {
        let prefix = format!("{name}{{");
        text.lines()
            .find(|l| l.starts_with(&prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} not in {text}"))
    }

    #[test]
    fn replicas_gauges_are_summed_and_kv_usage_is_their_mean() {
        let m = Metrics::new("m", 100, 3);
        m.set_queue(0, 4, 1);
        m.set_queue(2, 2, 5);
        m.set_kv_tokens(0, 50);
        // Past its own capacity a replica counts as full, not more.
        m.set_kv_tokens(1, 250);
        let text = m.render();
        assert_eq!(value(&text, "vllm:num_requests_running"), 6.0);
        assert_eq!(value(&text, "vllm:num_requests_waiting"), 6.0);
        assert_eq!(value(&text, "vllm:kv_cache_usage_perc"), 0.5);
        // One replica: its own figures, as before replicas existed.
        let one = Metrics::new("m", 100, 1);
        one.set_queue(0, 3, 2);
        one.set_kv_tokens(0, 250);
        let text = one.render();
        assert_eq!(value(&text, "vllm:num_requests_running"), 3.0);
        assert_eq!(value(&text, "vllm:kv_cache_usage_perc"), 1.0);
    }
}
