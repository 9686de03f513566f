//! Options of the statistics (what the accumulator computes) and the parsers of the command-line
//! forms (metrics, percentiles, goodput); the views' own options are `views/options.rs`'s.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Error;

/// The percentiles every metric summary carries unless told otherwise.
pub const DEFAULT_PERCENTILES: &[f64] = &[50.0, 75.0, 90.0, 95.0, 99.0, 99.9];

/// What the [`crate::Accumulator`] computes besides the fixed statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsOptions {
    /// Service-level objectives for goodput (`--goodput`); `None` reports no goodput.
    pub goodput: Option<Goodput>,
    /// Percentiles (0 < p <= 100) written into every metric summary, on top of the median.
    /// Any other percentile can be cut later from the serialized histograms.
    pub percentiles: Vec<f64>,
    /// Keep every [`bench_core::RequestRecord`] and save them in the report (`records`).
    /// Off by default: the accumulator otherwise keeps a compact summary per request.
    pub keep_records: bool,
}

impl Default for StatsOptions {
    fn default() -> Self {
        Self {
            goodput: None,
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            keep_records: false,
        }
    }
}

/// Service-level objectives of `--goodput ttft:MS tpot:MS e2el:MS` (vLLM's form). A request is
/// good when it completed and meets every bound given (`value <= bound`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Goodput {
    /// Bound on time to first token, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// Bound on time per output token, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    /// Bound on end-to-end latency, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2el_ms: Option<f64>,
}

impl Goodput {
    /// Parses `"ttft:500 tpot:50 e2el:2000"` (pairs separated by spaces or commas; each key at
    /// most once; values are positive milliseconds).
    pub fn parse(s: &str) -> Result<Self, Error> {
        let mut g = Goodput::default();
        let mut any = false;
        for pair in s
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|p| !p.is_empty())
        {
            let (key, value) = pair.split_once(':').ok_or_else(|| {
                Error::Parse(format!(
                    "goodput: `{pair}` is not KEY:MILLISECONDS (keys: ttft, tpot, e2el)"
                ))
            })?;
            let v: f64 = value.trim().parse().map_err(|_| {
                Error::Parse(format!("goodput: `{value}` in `{pair}` is not a number"))
            })?;
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::Parse(format!(
                    "goodput: `{pair}` must be a positive number of milliseconds"
                )));
            }
            let slot = match key.trim() {
                "ttft" => &mut g.ttft_ms,
                "tpot" => &mut g.tpot_ms,
                "e2el" => &mut g.e2el_ms,
                other => {
                    return Err(Error::Parse(format!(
                        "goodput: unknown metric `{other}` (expected ttft, tpot or e2el)"
                    )))
                }
            };
            if slot.is_some() {
                return Err(Error::Parse(format!("goodput: `{key}` given twice")));
            }
            *slot = Some(v);
            any = true;
        }
        if !any {
            return Err(Error::Parse(
                "goodput: expected at least one KEY:MILLISECONDS (keys: ttft, tpot, e2el)".into(),
            ));
        }
        Ok(g)
    }

    /// Whether a completed request with these values (milliseconds) meets every bound.
    pub fn is_met(&self, ttft_ms: f64, tpot_ms: f64, e2el_ms: f64) -> bool {
        self.ttft_ms.is_none_or(|b| ttft_ms <= b)
            && self.tpot_ms.is_none_or(|b| tpot_ms <= b)
            && self.e2el_ms.is_none_or(|b| e2el_ms <= b)
    }
}

impl fmt::Display for Goodput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(v) = self.ttft_ms {
            parts.push(format!("ttft:{v}"));
        }
        if let Some(v) = self.tpot_ms {
            parts.push(format!("tpot:{v}"));
        }
        if let Some(v) = self.e2el_ms {
            parts.push(format!("e2el:{v}"));
        }
        f.write_str(&parts.join(" "))
    }
}

/// Parses vLLM's `--metric-percentiles`, e.g. `"50,75,90,95,99"` (each 0 < p <= 100).
pub fn parse_metric_percentiles(s: &str) -> Result<Vec<f64>, Error> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let p: f64 = part
            .parse()
            .map_err(|_| Error::Parse(format!("metric percentiles: `{part}` is not a number")))?;
        if !(p > 0.0 && p <= 100.0) {
            return Err(Error::Parse(format!(
                "metric percentiles: `{part}` is outside (0, 100]"
            )));
        }
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err(Error::Parse(
            "metric percentiles: expected a comma-separated list such as 50,90,99".into(),
        ));
    }
    Ok(out)
}

/// A latency metric of the report, as named by vLLM's `--percentile-metrics` (plus bench's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// Time to first token.
    Ttft,
    /// Time per output token, excluding the first (vLLM), one value per request.
    Tpot,
    /// Every gap between consecutive content chunks, pooled (vLLM's ITL).
    Itl,
    /// End-to-end latency from the actual send.
    E2el,
    /// End-to-end latency divided by output tokens.
    TokenLatency,
    /// guidellm's ITL: `(t_last - t_first) / (n - 1)` per request, token-weighted.
    ItlPerRequest,
    /// Time to first token measured from the intended send time.
    TtftFromScheduled,
    /// End-to-end latency measured from the intended send time (coordinated-omission free).
    E2elFromScheduled,
    /// Client queue time: waiting for a concurrency slot.
    Queue,
    /// Dispatch delay: from getting a slot to writing the request.
    DispatchDelay,
    /// Time to first output (answer) token: TTFT of the first chunk that is not reasoning.
    Ttfo,
    /// Reasoning duration: from the first (reasoning) chunk to the first answer chunk.
    ReasoningTime,
    /// Every gap between consecutive reasoning chunks, pooled.
    ReasoningItl,
    /// Every gap between consecutive answer chunks, pooled.
    AnswerItl,
}

impl Metric {
    /// Every metric, in report order.
    pub const ALL: [Metric; 14] = [
        Metric::Ttft,
        Metric::Tpot,
        Metric::Itl,
        Metric::E2el,
        Metric::TokenLatency,
        Metric::ItlPerRequest,
        Metric::TtftFromScheduled,
        Metric::E2elFromScheduled,
        Metric::Queue,
        Metric::DispatchDelay,
        Metric::Ttfo,
        Metric::ReasoningTime,
        Metric::ReasoningItl,
        Metric::AnswerItl,
    ];

    /// The metrics about reasoning, which the consoles show only when a benchmark saw
    /// reasoning.
    pub const REASONING: [Metric; 4] = [
        Metric::Ttfo,
        Metric::ReasoningTime,
        Metric::ReasoningItl,
        Metric::AnswerItl,
    ];

    /// The name in `--percentile-metrics` (`ttft`, `token_latency`, ...).
    pub fn cli_name(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Tpot => "tpot",
            Metric::Itl => "itl",
            Metric::E2el => "e2el",
            Metric::TokenLatency => "token_latency",
            Metric::ItlPerRequest => "itl_per_request",
            Metric::TtftFromScheduled => "ttft_from_scheduled",
            Metric::E2elFromScheduled => "e2el_from_scheduled",
            Metric::Queue => "queue",
            Metric::DispatchDelay => "dispatch_delay",
            Metric::Ttfo => "ttfo",
            Metric::ReasoningTime => "reasoning_time",
            Metric::ReasoningItl => "reasoning_itl",
            Metric::AnswerItl => "answer_itl",
        }
    }

    /// The key in the JSON report's `metrics` and `histograms` (`ttft_ms`, ...).
    pub fn json_key(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft_ms",
            Metric::Tpot => "tpot_ms",
            Metric::Itl => "itl_ms",
            Metric::E2el => "e2el_ms",
            Metric::TokenLatency => "token_latency_ms",
            Metric::ItlPerRequest => "itl_per_request_ms",
            Metric::TtftFromScheduled => "ttft_from_scheduled_ms",
            Metric::E2elFromScheduled => "e2el_from_scheduled_ms",
            Metric::Queue => "queue_ms",
            Metric::DispatchDelay => "dispatch_delay_ms",
            Metric::Ttfo => "ttfo_ms",
            Metric::ReasoningTime => "reasoning_time_ms",
            Metric::ReasoningItl => "reasoning_itl_ms",
            Metric::AnswerItl => "answer_itl_ms",
        }
    }

    /// The short name the vLLM console uses in its lines (`Mean TTFT (ms):`).
    pub fn vllm_name(self) -> &'static str {
        match self {
            Metric::Ttft => "TTFT",
            Metric::Tpot => "TPOT",
            Metric::Itl => "ITL",
            Metric::E2el => "E2EL",
            Metric::TokenLatency => "Token Latency",
            Metric::ItlPerRequest => "Request ITL",
            Metric::TtftFromScheduled => "Sched TTFT",
            Metric::E2elFromScheduled => "Sched E2EL",
            Metric::Queue => "Queue",
            Metric::DispatchDelay => "Dispatch Delay",
            Metric::Ttfo => "TTFO",
            Metric::ReasoningTime => "Reasoning Time",
            Metric::ReasoningItl => "Reasoning ITL",
            Metric::AnswerItl => "Answer ITL",
        }
    }

    /// The section header of the vLLM console.
    pub fn vllm_header(self) -> &'static str {
        match self {
            Metric::Ttft => "Time to First Token",
            Metric::Tpot => "Time per Output Token (excl. 1st token)",
            Metric::Itl => "Inter-token Latency",
            Metric::E2el => "End-to-end Latency",
            Metric::TokenLatency => "Token Latency (e2e_latency / output_len)",
            Metric::ItlPerRequest => "Per-request ITL (guidellm)",
            Metric::TtftFromScheduled => "TTFT from Intended Send",
            Metric::E2elFromScheduled => "E2EL from Intended Send",
            Metric::Queue => "Client Queue Time",
            Metric::DispatchDelay => "Dispatch Delay",
            Metric::Ttfo => "Time to First Output Token (first answer token)",
            Metric::ReasoningTime => "Reasoning Time (first token to first answer token)",
            Metric::ReasoningItl => "Reasoning Inter-token Latency",
            Metric::AnswerItl => "Answer Inter-token Latency",
        }
    }

    /// Looks a metric up by its `--percentile-metrics` name.
    pub fn from_cli_name(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.cli_name() == s)
    }
}

/// Parses vLLM's `--percentile-metrics`, e.g. `"ttft,tpot,itl,e2el,token_latency"`.
pub fn parse_percentile_metrics(s: &str) -> Result<Vec<Metric>, Error> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let m = Metric::from_cli_name(part).ok_or_else(|| {
            let names: Vec<&str> = Metric::ALL.iter().map(|m| m.cli_name()).collect();
            Error::Parse(format!(
                "percentile metrics: unknown metric `{part}` (expected one of {})",
                names.join(", ")
            ))
        })?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        return Err(Error::Parse(
            "percentile metrics: expected a comma-separated list such as ttft,tpot,itl".into(),
        ));
    }
    Ok(out)
}

/// The key of percentile `p` in JSON summaries: `p50`, `p99`, `p99.9`.
pub fn percentile_key(p: f64) -> String {
    format!("p{}", percentile_word(p))
}

/// vLLM's rendering of a percentile: `99` for 99.0, `99.9` for 99.9.
pub fn percentile_word(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{}", p as i64)
    } else {
        format!("{p}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goodput_parses_vllm_form() {
        let g = Goodput::parse("ttft:500 tpot:50 e2el:2000").expect("valid");
        assert_eq!(g.ttft_ms, Some(500.0));
        assert_eq!(g.tpot_ms, Some(50.0));
        assert_eq!(g.e2el_ms, Some(2000.0));
        assert_eq!(g.to_string(), "ttft:500 tpot:50 e2el:2000");
        let g = Goodput::parse("tpot:12.5,ttft:100").expect("valid");
        assert_eq!(g.tpot_ms, Some(12.5));
        assert_eq!(g.e2el_ms, None);
        assert!(g.is_met(100.0, 12.5, 1e9));
        assert!(!g.is_met(100.1, 1.0, 0.0));
    }

    #[test]
    fn goodput_rejects_bad_input() {
        for bad in [
            "",
            "ttft",
            "ttft:x",
            "ttft:-1",
            "ttft:0",
            "foo:1",
            "ttft:1 ttft:2",
            "ttft:inf",
        ] {
            assert!(Goodput::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn percentiles_parse() {
        assert_eq!(
            parse_metric_percentiles("50,75,90,95,99").expect("valid"),
            vec![50.0, 75.0, 90.0, 95.0, 99.0]
        );
        assert_eq!(
            parse_metric_percentiles(" 99.9 ").expect("valid"),
            vec![99.9]
        );
        for bad in ["", "0", "101", "a", "50,,x", "-5"] {
            assert!(parse_metric_percentiles(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(percentile_key(99.0), "p99");
        assert_eq!(percentile_key(99.9), "p99.9");
    }

    #[test]
    fn metrics_parse() {
        assert_eq!(
            parse_percentile_metrics("ttft,tpot,itl,e2el,token_latency").expect("valid"),
            vec![
                Metric::Ttft,
                Metric::Tpot,
                Metric::Itl,
                Metric::E2el,
                Metric::TokenLatency
            ]
        );
        assert!(parse_percentile_metrics("ttft,bogus").is_err());
        assert!(parse_percentile_metrics("").is_err());
        for (i, m) in Metric::ALL.into_iter().enumerate() {
            assert_eq!(Metric::from_cli_name(m.cli_name()), Some(m));
            // The accumulator indexes its histograms by discriminant.
            assert_eq!(m as usize, i);
        }
    }
}
