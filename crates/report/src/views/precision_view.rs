//! The console lines of the precision check (`--precision`, [`crate::figures::precision`]):
//! one per judged benchmark, whether its target was met and the key figures' half-widths.

use crate::figures::model::RunReport;
use crate::views::common::trimmed;

/// One console line per benchmark run with `--precision`: the target, met or not (the budget
/// ended), and the achieved half-widths.
pub fn precision_notes(run: &RunReport) -> Vec<String> {
    run.benchmarks
        .iter()
        .filter_map(|b| {
            let p = b.precision.as_ref()?;
            let pct = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{:.1}%", x * 100.0));
            let h = &p.half_widths;
            let verdict = if p.met {
                format!("met after {:.1} s", b.duration_s)
            } else if b.stop_reason == "max_seconds" {
                format!("NOT met: the {} s budget ended", trimmed(p.budget_s, 3))
            } else {
                format!("NOT met (stopped: {})", b.stop_reason)
            };
            Some(format!(
                "precision {}: ±{}% {verdict}; 95% half-widths: req/s {}, output tok/s {}, TTFT p50 {}, ITL p50 {}",
                b.label,
                trimmed(p.target * 100.0, 3),
                pct(h.requests_per_s),
                pct(h.output_tokens_per_s),
                pct(h.ttft_median),
                pct(h.itl_median),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::model::{HalfWidths, PrecisionReport};
    use crate::test_support::open_loop;

    #[test]
    fn the_console_line_says_met_or_which_budget_ended() {
        let mut b = open_loop(|_| 100);
        let mut run = RunReport::new("id", "2026-01-01T00:00:00Z");
        assert!(precision_notes(&run).is_empty());
        let half_widths = HalfWidths {
            requests_per_s: Some(0.012),
            ..HalfWidths::default()
        };
        b.precision = Some(PrecisionReport {
            target: 0.9,
            budget_s: 30.0,
            met: true,
            half_widths,
        });
        b.stop_reason = "precise".into();
        run.benchmarks.push(b.clone());
        b.precision = Some(PrecisionReport {
            target: 0.001,
            budget_s: 20.0,
            met: false,
            half_widths,
        });
        b.stop_reason = "max_seconds".into();
        run.benchmarks.push(b.clone());
        let lines = precision_notes(&run);
        assert_eq!(lines.len(), 2, "{lines:?}");
        let met = format!("precision {}: ±90% met after {:.1} s; 95% half-widths: req/s 1.2%, output tok/s -, TTFT p50 -, ITL p50 -", b.label, b.duration_s);
        assert_eq!(lines[0], met);
        assert!(
            lines[1].contains("±0.1% NOT met: the 20 s budget ended"),
            "{}",
            lines[1]
        );
    }
}
