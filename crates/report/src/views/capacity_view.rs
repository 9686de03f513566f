//! The capacity block of both consoles (`Capacity:` under the guidellm tables, the
//! `Capacity` section of the vLLM console) and the words the HTML and the comparison share with
//! it; the figures are [`crate::figures::capacity`]'s and [`crate::figures::capacity_interval`]'s.

use std::fmt::Write as _;

use bench_core::{Capacity, SloLimit};

use crate::figures::capacity::{KNEE_FACTOR, KNEE_SLACK_MS};
use crate::figures::capacity_interval::{capacity_interval, knee_interval, slo_interval};
use crate::figures::model::RunReport;
use crate::views::common::{
    crossing_words, lower_bound_words, output_tokens_words, refinement_words, trace_multiples_text,
};

/// What the consoles and the HTML say when the capacity limits the SLO answer first.
pub(crate) const CAPACITY_FIRST: &str =
    "the capacity limits first: every rate the server kept up with met the SLO";

fn rate(v: Option<f64>) -> String {
    v.map_or("-".into(), |r| format!("{r:.2} req/s"))
}

/// The lines of the answer, as (label, text).
fn lines(run: &RunReport, c: &Capacity) -> Vec<(String, String)> {
    let (before, after) = lower_bound_words(c);
    let sure = capacity_interval(run).map_or(String::new(), |iv| {
        format!(" (95% interval {:.2} to {:.2})", iv.low, iv.high)
    });
    let mut out = vec![(
        "Maximum sustained throughput".to_string(),
        format!(
            "{before}{:.2} req/s{sure}{} (measured by {}){after}",
            c.max_requests_per_s,
            output_tokens_words(c, "output tok/s"),
            c.max_measured_by
        ),
    )];
    if let Some(r) = &c.max_refinement {
        out.push(("Maximum's precision".to_string(), refinement_words(r)));
    }
    out.push((
            "Knee (latency leaves its plateau)".to_string(),
            match c.knee_requests_per_s {
                Some(k) => format!(
                    "{k:.2} req/s{} (median TTFT within {KNEE_FACTOR}x its low-load value + {KNEE_SLACK_MS} ms)",
                    crossing_words(knee_interval(run, c))
                ),
                None => "not found within the swept rates".into(),
            },
        ));
    if let (Some(slo), Some(b)) = (&c.slo, &c.slo_bracket) {
        let sure = crossing_words(slo_interval(run, c));
        let text = match (c.slo_limit, b.low, b.high) {
            (Some(SloLimit::Capacity), _, _) => format!(
                "{}{sure} ({CAPACITY_FIRST})",
                rate(c.slo_max_requests_per_s)
            ),
            (_, Some(l), Some(h)) => format!(
                "{l:.2} req/s{sure} (bracket {l:.2} to {h:.2} req/s, {} refinement step(s))",
                b.steps
            ),
            (_, Some(_), None) => format!("{} or more{sure} (every rate met it)", rate(b.low)),
            (_, None, _) => "no rate met it".into(),
        };
        out.push((format!("Max rate meeting {slo}"), text));
        if let Some(r) = &b.refinement {
            out.push(("SLO answer's precision".to_string(), refinement_words(r)));
        }
    }
    if let Some(t) = trace_multiples_text(c) {
        out.push(("Trace multiple".to_string(), t));
    }
    if let Some(sp) = &c.spent {
        out.push(("Benchmark-seconds".to_string(), spent_words(sp)));
    }
    out
}

/// The benchmark-seconds each answer cost, in words: `maximum 20.4, knee 70.1, SLO answer
/// 30.2 (of 120.7)` (docs/metrics.md, "Benchmark-seconds per answer").
pub(crate) fn spent_words(sp: &bench_core::Spent) -> String {
    let slo = sp
        .slo_s
        .map_or(String::new(), |s| format!(", SLO answer {s:.1}"));
    format!(
        "maximum {:.1}, knee {:.1}{slo} (of {:.1})",
        sp.capacity_s,
        sp.knee_s,
        sp.total()
    )
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
    if let Some(r) = &c.max_refinement {
        let _ = writeln!(
            s,
            "{:<40} {:<10}",
            "Max throughput precision:",
            refinement_words(r)
        );
    }
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
    if let Some(sp) = &c.spent {
        let _ = writeln!(s, "{:<40} {:<10}", "Benchmark-seconds:", spent_words(sp));
    }
    if let (Some(slo), Some(b)) = (&c.slo, &c.slo_bracket) {
        let _ = writeln!(s, "{:<40} {:<10}", "SLO:", slo.to_string());
        let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        let _ = writeln!(
            s,
            "{:<40} {:<10}",
            "Max rate meeting the SLO (req/s):",
            f(c.slo_max_requests_per_s.or(b.low))
        );
        if c.slo_limit == Some(SloLimit::Capacity) {
            let _ = writeln!(s, "{:<40} {:<10}", "SLO answer limited by:", "the capacity");
        }
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
        if let Some(r) = &b.refinement {
            let _ = writeln!(
                s,
                "{:<40} {:<10}",
                "SLO answer's precision:",
                refinement_words(r)
            );
        }
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
