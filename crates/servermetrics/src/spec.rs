//! Speculative decoding over a benchmark (`server_metrics.summary.spec_decode`;
//! docs/metrics.md, "Speculative decoding").
//!
//! - **vLLM's counters** (drafts, draft tokens, accepted tokens, accepted per position): their
//!   increase between the first and the last periodic scrape inside the benchmark's steady
//!   window (the window its gauges and latency figures describe: its steady state when it
//!   has one, else its measurement window), so the ramp and the drain are out; with fewer than two scrapes inside, from the base scrape to the end scrape (the
//!   whole benchmark, as every other counter). Acceptance rate = accepted / draft tokens;
//!   acceptance length = 1 + accepted / drafts (the target model's own token counted, as vLLM
//!   counts it); position `i`'s rate = its accepted tokens / drafts.
//! - **SGLang's gauges** (`spec_accept_rate`, `spec_accept_length`): their time-weighted means
//!   over the same window.

use serde::{Deserialize, Serialize};

use crate::names::{Role, Server, Source};
use crate::snapshot::Folded;
use crate::snapshot::Timed;

/// The server's speculative decoding over one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeSummary {
    /// Fraction 0..1 of draft tokens accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_rate: Option<f64>,
    /// Tokens a verification emits on average: 1 + accepted draft tokens per draft.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_length: Option<f64>,
    /// Verifications of a sequence's drafts (vLLM's counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drafts: Option<f64>,
    /// Draft tokens verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_tokens: Option<f64>,
    /// Draft tokens accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_tokens: Option<f64>,
    /// Fraction 0..1 of drafts whose token at position `i` (from 0) was accepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_position: Vec<f64>,
    /// Seconds between the two scrapes the counters' increase is taken from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_s: Option<f64>,
    /// `window` (the first and last periodic scrapes inside the window the gauges describe:
    /// the steady state when the benchmark has one, else its measurement window), `benchmark`
    /// (fewer than two scrapes inside: the base and end scrapes) or `gauges` (SGLang's means).
    pub counted_over: String,
}

/// The figures of `server` over the benchmark, and the metric names they came from; `None`
/// when the server exposes none, or its counters saw no draft in the window.
pub(crate) fn summarize(
    server: &Server,
    inside: &[&Timed],
    base: &Timed,
    end: &Timed,
    gauge_mean: impl Fn(&str) -> Option<f64>,
) -> Option<(SpecDecodeSummary, String)> {
    let name = |role: Role| {
        server.sources.iter().find_map(|(r, s)| match s {
            Source::Counter(n) | Source::Gauge(n) if *r == role => Some(*n),
            _ => None,
        })
    };
    if let (Some(d), Some(t), Some(a)) = (
        name(Role::SpecDrafts),
        name(Role::SpecDraftTokens),
        name(Role::SpecAcceptedTokens),
    ) {
        if end.snap.contains_key(d) {
            let (from, to, counted_over) = match (inside.first(), inside.last()) {
                (Some(f), Some(l)) if inside.len() >= 2 => (*f, *l, "window"),
                _ => (base, end, "benchmark"),
            };
            let per_pos = name(Role::SpecAcceptedPerPosition);
            let s = from_counters(from, to, [d, t, a], per_pos, counted_over)?;
            let names = [Some(d), Some(t), Some(a), per_pos];
            return Some((
                s,
                names
                    .iter()
                    .flatten()
                    .copied()
                    .collect::<Vec<_>>()
                    .join(" / "),
            ));
        }
    }
    let mean = |role: Role| {
        let n = name(role)?;
        gauge_mean(n).map(|mean| (n, mean))
    };
    let (rate, length) = (mean(Role::SpecAcceptRate), mean(Role::SpecAcceptLength));
    if rate.is_none() && length.is_none() {
        return None;
    }
    let names: Vec<&str> = [rate, length].iter().flatten().map(|(n, _)| *n).collect();
    let s = SpecDecodeSummary {
        acceptance_rate: rate.map(|(_, v)| v),
        acceptance_length: length.map(|(_, v)| v),
        drafts: None,
        draft_tokens: None,
        accepted_tokens: None,
        per_position: Vec::new(),
        span_s: None,
        counted_over: "gauges".into(),
    };
    Some((s, names.join(" / ")))
}

/// The counters' increase from `from` to `to`: drafts, draft tokens, accepted tokens, and the
/// per-position counter's series (`name{position="i"}`) in position order.
fn from_counters(
    from: &Timed,
    to: &Timed,
    [drafts, draft_tokens, accepted]: [&str; 3],
    per_pos: Option<&str>,
    counted_over: &str,
) -> Option<SpecDecodeSummary> {
    let delta = |n: &str| {
        let v = |t: &Timed| match t.snap.get(n) {
            Some(Folded::Counter { value, .. }) => Some(*value),
            _ => None,
        };
        let d = v(to)? - v(from).unwrap_or(0.0);
        (d >= 0.0).then_some(d)
    };
    let (d, t, a) = (delta(drafts)?, delta(draft_tokens)?, delta(accepted)?);
    if d <= 0.0 {
        return None;
    }
    let mut positions: Vec<(u32, f64)> = per_pos
        .map(|p| {
            let prefix = format!("{p}{{position=\"");
            to.snap
                .keys()
                .filter_map(|k| {
                    let i = k.strip_prefix(&prefix)?.strip_suffix("\"}")?.parse().ok()?;
                    Some((i, delta(k)? / d))
                })
                .collect()
        })
        .unwrap_or_default();
    positions.sort_by_key(|&(i, _)| i);
    Some(SpecDecodeSummary {
        acceptance_rate: (t > 0.0).then(|| a / t),
        acceptance_length: Some(1.0 + a / d),
        drafts: Some(d),
        draft_tokens: Some(t),
        accepted_tokens: Some(a),
        per_position: positions.into_iter().map(|(_, r)| r).collect(),
        span_s: Some(to.at.saturating_sub(from.at) as f64 / 1e9),
        counted_over: counted_over.into(),
    })
}

#[cfg(test)]
mod tests {
    use crate::summary::{summarize, Span, Timed};
    use crate::{parse::parse, snapshot::fold};

    const S: u64 = 1_000_000_000;

    /// vLLM's counters at `t`: `d` drafts of 3 tokens, `a` accepted, per position `p`.
    fn vllm(t: u64, d: u32, a: u32, p: [u32; 3], boundary: bool) -> Timed {
        let mut text =
            String::from("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n");
        for (name, v) in [
            ("vllm:spec_decode_num_drafts", d),
            ("vllm:spec_decode_num_draft_tokens", 3 * d),
            ("vllm:spec_decode_num_accepted_tokens", a),
        ] {
            text.push_str(&format!(
                "# TYPE {name} counter\n{name}_total{{model_name=\"m\"}} {v}\n"
            ));
        }
        let name = "vllm:spec_decode_num_accepted_tokens_per_pos";
        text.push_str(&format!("# TYPE {name} counter\n"));
        for (i, v) in p.iter().enumerate() {
            text.push_str(&format!(
                "{name}_total{{model_name=\"m\",position=\"{i}\"}} {v}\n"
            ));
        }
        Timed {
            at: t,
            snap: fold(&parse(&text).expect("valid")),
            boundary,
        }
    }

    /// The counters' increase over the steady window's first and last scrapes, the ramp and
    /// the drain left out; the whole benchmark when fewer than two scrapes lie inside.
    #[test]
    fn vllm_counters_count_over_the_steady_window() {
        let scrapes = [
            vllm(0, 0, 0, [0, 0, 0], true),
            vllm(S, 50, 10, [10, 0, 0], false), // ramp
            vllm(2 * S, 100, 60, [40, 15, 5], false),
            vllm(4 * S, 300, 260, [140, 80, 40], false),
            vllm(5 * S, 400, 300, [170, 90, 40], true), // drain and end scrape
        ];
        let span = Span {
            start: S / 2,
            end: 5 * S,
            open: 3 * S / 2,
            close: 9 * S / 2,
        };
        let m = summarize(&scrapes, span, "u", 1.0).expect("summary");
        let s = m.summary.spec_decode.expect("spec");
        assert_eq!(s.counted_over, "window");
        assert_eq!(
            (s.drafts, s.draft_tokens, s.accepted_tokens),
            (Some(200.0), Some(600.0), Some(200.0))
        );
        assert_eq!(s.acceptance_rate, Some(200.0 / 600.0));
        assert_eq!(s.acceptance_length, Some(2.0));
        assert_eq!(s.per_position, vec![0.5, 65.0 / 200.0, 35.0 / 200.0]);
        assert_eq!(s.span_s, Some(2.0));
        assert!(m.summary.sources["spec_decode"].contains("per_pos"));
        // One scrape inside: the benchmark's deltas.
        let narrow = Span {
            open: 3 * S / 2,
            close: 5 * S / 2,
            ..span
        };
        let s = summarize(&scrapes, narrow, "u", 1.0)
            .and_then(|m| m.summary.spec_decode)
            .expect("spec");
        assert_eq!(s.counted_over, "benchmark");
        assert_eq!((s.drafts, s.acceptance_length), (Some(400.0), Some(1.75)));
        // No draft in the window, or a restart: nothing to say.
        let idle = [
            vllm(0, 9, 1, [1, 0, 0], true),
            vllm(S, 9, 1, [1, 0, 0], true),
        ];
        let none = summarize(&idle, Span::whole(0, S), "u", 1.0).expect("summary");
        assert_eq!(none.summary.spec_decode, None);
        let reset = [
            vllm(0, 9, 1, [1, 0, 0], true),
            vllm(S, 2, 1, [1, 0, 0], true),
        ];
        let none = summarize(&reset, Span::whole(0, S), "u", 1.0).expect("summary");
        assert_eq!(none.summary.spec_decode, None);
    }

    #[test]
    fn sglang_gauges_are_their_window_means() {
        let g = |t, rate: f64, len: f64| {
            Timed {
            at: t,
            snap: fold(
                &parse(&format!(
                    "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 4\n\
                     # TYPE sglang:spec_accept_rate gauge\nsglang:spec_accept_rate{{tp_rank=\"0\"}} {rate}\n\
                     # TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length{{tp_rank=\"0\"}} {len}\nsglang:spec_accept_length{{tp_rank=\"1\"}} {len}\n"
                ))
                .expect("valid"),
            ),
            boundary: false,
        }
        };
        let scrapes = [g(0, 0.5, 2.0), g(S, 0.7, 3.0), g(2 * S, 0.9, 4.0)];
        let span = Span {
            start: 0,
            end: 2 * S,
            open: S / 2,
            close: 2 * S,
        };
        let m = summarize(&scrapes, span, "u", 1.0).expect("summary");
        assert_eq!(m.server.as_deref(), Some("sglang"));
        let s = m.summary.spec_decode.expect("spec");
        assert_eq!(s.counted_over, "gauges");
        // The scrapes at 1 s and 2 s stand for [0.5, 1.5] and [1.5, 2] of the window.
        assert!((s.acceptance_rate.expect("rate") - (0.7 + 0.9 * 0.5) / 1.5).abs() < 1e-12);
        assert!((s.acceptance_length.expect("len") - (3.0 + 4.0 * 0.5) / 1.5).abs() < 1e-12);
        assert_eq!((s.drafts, s.per_position.len()), (None, 0));
    }
}
