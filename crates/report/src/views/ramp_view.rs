//! The console line of a ramp-up (docs/metrics.md, "Ramp-up"): one per benchmark that ramped,
//! saying how it climbed, whether the window holds the ramp, and when the rate last changed.

use bench_core::{RampOver, RampShape};

use crate::figures::model::RunReport;
use crate::views::common::trimmed;

/// One console line per benchmark with a ramp-up.
pub fn ramp_notes(run: &RunReport) -> Vec<String> {
    run.benchmarks
        .iter()
        .filter_map(|b| {
            let r = b.ramp.as_ref()?;
            let closed = b.strategy.closed_loop_streams().is_some();
            let unit = if closed { "streams" } else { "req/s" };
            let shape = match r.ramp.shape {
                RampShape::Linear => "linear",
                RampShape::Exponential => "exponential",
            };
            let from = if closed { 1.0 } else { r.ramp.from_rps };
            let over = match r.ramp.over {
                RampOver::Seconds(d) => format!("over {} s", trimmed(d, 2)),
                RampOver::Requests => "over the benchmark's requests (vLLM's rule)".into(),
            };
            let window = if r.ramp.in_window {
                "inside the measurement window".to_string()
            } else {
                format!(
                    "outside the window (it opened {} s in)",
                    trimmed(b.warmup_s, 2)
                )
            };
            let last = r.changes.last().map_or("no change sent".to_string(), |c| {
                format!(
                    "{} changes, the last to {} {unit} at {} s",
                    r.changes.len(),
                    trimmed(c.rate, 2),
                    trimmed(c.at_s, 2)
                )
            });
            Some(format!(
                "ramp-up {}: {shape} {} to {} {unit} {over}, {window}; {last}",
                b.label,
                trimmed(from, 2),
                trimmed(r.to, 2),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use bench_core::{Ramp, RampRecord, RateChange};

    use super::*;
    use crate::test_support::open_loop;

    #[test]
    fn the_console_line_says_how_the_rate_climbed_and_where_the_window_opened() {
        let mut b = open_loop(|_| 100);
        let mut run = RunReport::new("id", "2026-01-01T00:00:00Z");
        run.benchmarks.push(b.clone());
        assert!(ramp_notes(&run).is_empty());
        b.warmup_s = 10.0;
        b.ramp = Some(RampRecord {
            ramp: Ramp {
                shape: RampShape::Linear,
                over: RampOver::Seconds(10.0),
                from_rps: 0.0,
                in_window: false,
            },
            to: 20.0,
            changes: vec![
                RateChange {
                    at_s: 0.5,
                    rate: 1.0,
                },
                RateChange {
                    at_s: 10.0,
                    rate: 20.0,
                },
            ],
        });
        run.benchmarks = vec![b];
        let lines = ramp_notes(&run);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].ends_with(": linear 0 to 20 req/s over 10 s, outside the window (it opened 10 s in); 2 changes, the last to 20 req/s at 10 s"),
            "{}",
            lines[0]
        );
    }
}
