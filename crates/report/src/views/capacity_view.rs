//! The capacity block of both consoles (`Capacity:` under the guidellm tables, the
//! `Capacity` section of the vLLM console) and the words the HTML and the comparison share with
//! it; the figures are [`crate::figures::capacity`]'s and [`crate::figures::capacity_interval`]'s.

use std::fmt::Write as _;

use bench_core::{Capacity, CrossingInterval};

use crate::figures::capacity::{KNEE_FACTOR, KNEE_SLACK_MS};
use crate::figures::capacity_interval::{capacity_interval, knee_interval, slo_interval};
use crate::figures::model::RunReport;

/// Said after the maximum when the sweep's highest rate kept up (no rate crossed it).
pub const LOWER_BOUND_NOTE: &str =
    "; the highest rate offered kept up: the server may sustain more";

/// The words around the maximum: "at least " before it and the note after it when it is a
/// lower bound, else nothing.
pub fn lower_bound_words(c: &Capacity) -> (&'static str, &'static str) {
    if c.max_is_lower_bound {
        ("at least ", LOWER_BOUND_NOTE)
    } else {
        ("", "")
    }
}

/// `, N <unit>` for the capacity's output tokens/s; nothing when the sweep measured none
/// (embeddings and rerank runs generate no token, so their capacity is in requests/s only).
pub(crate) fn output_tokens_words(c: &Capacity, unit: &str) -> String {
    if c.max_output_tokens_per_s.is_finite() {
        format!(", {:.1} {unit}", c.max_output_tokens_per_s)
    } else {
        String::new()
    }
}

fn rate(v: Option<f64>) -> String {
    v.map_or("-".into(), |r| format!("{r:.2} req/s"))
}

/// The answer of a sweep over a trace in words: "carries at least 2.70x the trace (recorded
/// 3.00 req/s); knee at 2.10x; its SLO holds up to 2.10x" (`None` for other sweeps).
pub fn trace_multiples_text(c: &Capacity) -> Option<String> {
    let t = c.trace.as_ref()?;
    let (before, _) = lower_bound_words(c);
    let mut s = format!(
        "this deployment carries {before}{:.2}x the trace (recorded mean rate {:.3} req/s)",
        t.max_multiple, t.recorded_requests_per_s
    );
    if let Some(k) = t.knee_multiple {
        let _ = write!(s, "; latency leaves its plateau above {k:.2}x");
    }
    if let Some(slo) = &c.slo {
        match (t.slo_max_multiple, c.slo_bracket.and_then(|b| b.high)) {
            (Some(m), Some(_)) => {
                let _ = write!(s, "; its {slo} SLO holds up to {m:.2}x");
            }
            (Some(m), None) => {
                let _ = write!(
                    s,
                    "; its {slo} SLO holds at every speed-up swept (up to {m:.2}x and more)"
                );
            }
            (None, _) => {
                let _ = write!(s, "; its {slo} SLO holds at no speed-up swept");
            }
        }
    }
    Some(s)
}

/// The lines of the answer, as (label, text).
fn lines(run: &RunReport, c: &Capacity) -> Vec<(String, String)> {
    let (before, after) = lower_bound_words(c);
    let sure = capacity_interval(run).map_or(String::new(), |iv| {
        format!(" (95% interval {:.2} to {:.2})", iv.low, iv.high)
    });
    let mut out = vec![
        (
            "Maximum sustained throughput".to_string(),
            format!(
                "{before}{:.2} req/s{sure}{} (measured by {}){after}",
                c.max_requests_per_s,
                output_tokens_words(c, "output tok/s"),
                c.max_measured_by
            ),
        ),
        (
            "Knee (latency leaves its plateau)".to_string(),
            match c.knee_requests_per_s {
                Some(k) => format!(
                    "{k:.2} req/s{} (median TTFT within {KNEE_FACTOR}x its low-load value + {KNEE_SLACK_MS} ms)",
                    crossing_words(knee_interval(run, c))
                ),
                None => "not found within the swept rates".into(),
            },
        ),
    ];
    if let (Some(slo), Some(b)) = (&c.slo, &c.slo_bracket) {
        let sure = crossing_words(slo_interval(run, c));
        let text = match (b.low, b.high) {
            (Some(l), Some(h)) => format!(
                "{l:.2} req/s{sure} (bracket {l:.2} to {h:.2} req/s, {} refinement step(s))",
                b.steps
            ),
            (Some(_), None) => format!("{} or more{sure} (every rate met it)", rate(b.low)),
            (None, _) => "no rate met it".into(),
        };
        out.push((format!("Max rate meeting {slo}"), text));
    }
    if let Some(t) = trace_multiples_text(c) {
        out.push(("Trace multiple".to_string(), t));
    }
    out
}

/// The "Capacity" block after guidellm's tables.
pub fn render_capacity(run: &RunReport) -> String {
    let Some(c) = &run.capacity else {
        return String::new();
    };
    let mut s = String::from("Capacity:\n");
    for (k, v) in lines(run, c) {
        let _ = writeln!(s, "  {k}: {v}");
    }
    s
}

/// The "Capacity" block after vLLM's blocks, in their `{:<40} {:<10}` layout.
pub fn render_capacity_vllm(run: &RunReport) -> String {
    let Some(c) = &run.capacity else {
        return String::new();
    };
    let mut s = format!("{:=^50}\n", " Capacity ");
    let _ = writeln!(
        s,
        "{:<40} {:<10}",
        "Max request throughput (req/s):",
        format!("{:.2}", c.max_requests_per_s)
    );
    let _ = writeln!(
        s,
        "{:<40} {:<10}",
        "Max output token throughput (tok/s):",
        format!("{:.2}", c.max_output_tokens_per_s)
    );
    if let Some(iv) = capacity_interval(run) {
        let _ = writeln!(
            s,
            "{:<40} {:<10}",
            "Max throughput 95% interval (req/s):",
            format!("{:.2} to {:.2}", iv.low, iv.high)
        );
    }
    let _ = writeln!(s, "{:<40} {:<10}", "Measured by:", c.max_measured_by);
    if c.max_is_lower_bound {
        let _ = writeln!(
            s,
            "{:<40} {:<10}",
            "Max is a lower bound:", "yes (the highest rate offered kept up)"
        );
    }
    let _ = writeln!(
        s,
        "{:<40} {:<10}",
        "Knee request rate (req/s):",
        c.knee_requests_per_s
            .map_or("-".into(), |k| format!("{k:.2}"))
    );
    interval_line(&mut s, "Knee 95% interval (req/s):", knee_interval(run, c));
    if let (Some(slo), Some(b)) = (&c.slo, &c.slo_bracket) {
        let _ = writeln!(s, "{:<40} {:<10}", "SLO:", slo.to_string());
        let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        let _ = writeln!(
            s,
            "{:<40} {:<10}",
            "Max rate meeting the SLO (req/s):",
            f(b.low)
        );
        interval_line(
            &mut s,
            "SLO rate 95% interval (req/s):",
            slo_interval(run, c),
        );
        let _ = writeln!(
            s,
            "{:<40} {:<10}",
            "Lowest rate failing the SLO (req/s):",
            f(b.high)
        );
    }
    if let Some(t) = &c.trace {
        let x = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}x"));
        for (k, v) in [
            (
                "Trace recorded rate (req/s):",
                format!("{:.3}", t.recorded_requests_per_s),
            ),
            ("Max trace multiple:", x(Some(t.max_multiple))),
            ("Knee trace multiple:", x(t.knee_multiple)),
            ("Max trace multiple meeting the SLO:", x(t.slo_max_multiple)),
        ]
        .into_iter()
        .filter(|(k, _)| c.slo.is_some() || !k.contains("SLO"))
        {
            let _ = writeln!(s, "{k:<40} {v:<10}");
        }
    }
    s.push_str(&"=".repeat(50));
    s.push('\n');
    s
}

/// A vLLM-style line of a crossing's interval (`L to H`, `L or more`); none without one.
fn interval_line(s: &mut String, key: &str, iv: Option<bench_core::CrossingInterval>) {
    let Some(iv) = iv else { return };
    let v = iv.high.map_or(format!("{:.2} or more", iv.low), |h| {
        format!("{:.2} to {h:.2}", iv.low)
    });
    let _ = writeln!(s, "{key:<40} {v:<10}");
}

/// ` (95%: L-H)` for a crossing's interval, ` (95%: L or more)` when it is open above;
/// nothing without one.
pub fn crossing_words(iv: Option<CrossingInterval>) -> String {
    match iv {
        Some(CrossingInterval {
            low,
            high: Some(high),
        }) => format!(" (95%: {low:.2}-{high:.2})"),
        Some(CrossingInterval { low, high: None }) => format!(" (95%: {low:.2} or more)"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossing_words_are_compact() {
        let c = |low, high| crossing_words(Some(CrossingInterval { low, high }));
        assert_eq!(c(20.1, Some(21.2)), " (95%: 20.10-21.20)");
        assert_eq!(c(20.1, None), " (95%: 20.10 or more)");
        assert_eq!(crossing_words(None), "");
    }
}
