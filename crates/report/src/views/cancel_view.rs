//! The console lines of the client's own cancellations (docs/metrics.md, "Cancellation"): one
//! per benchmark that cancelled requests on purpose, with the share asked and the share done.

use crate::figures::model::{BenchmarkReport, RunReport};
use crate::views::common::trimmed;

/// The CSV's columns of the client's cancellations (after every other column).
pub(crate) const CSV_COLUMNS: [&str; 5] = [
    "requests_cancelled",
    "prompt_tokens_cancelled",
    "output_tokens_cancelled",
    "cancel_share",
    "cancel_after_s",
];

/// The cells of [`CSV_COLUMNS`]: the counts (0 without cancellations), the settings (empty
/// without them).
pub(crate) fn csv_cells(b: &BenchmarkReport, num: fn(f64) -> String) -> [String; 5] {
    let c = b.cancellation;
    [
        b.requests.cancelled.to_string(),
        b.tokens.prompt.cancelled.total.to_string(),
        b.tokens.output.cancelled.total.to_string(),
        c.map(|c| num(c.share)).unwrap_or_default(),
        c.map(|c| num(c.after_s)).unwrap_or_default(),
    ]
}

/// One console line per benchmark run with `--cancel-rate`.
pub fn cancel_notes(run: &RunReport) -> Vec<String> {
    run.benchmarks
        .iter()
        .filter_map(|b| {
            let c = b.cancellation?;
            let r = &b.requests;
            let share = if r.total > 0 {
                format!(
                    " ({}%)",
                    trimmed(100.0 * r.cancelled as f64 / r.total as f64, 1)
                )
            } else {
                String::new()
            };
            Some(format!(
                "cancelled by the client {}: {} of {} requests{share}, asked {}% each {} s after \
                 it was sent unless it ended first; not errors, not incomplete, left out of the \
                 latencies and of goodput's share (docs/metrics.md, \"Cancellation\")",
                b.label,
                r.cancelled,
                r.total,
                trimmed(100.0 * c.share, 2),
                trimmed(c.after_s, 3),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use bench_core::Cancellation;

    use super::*;
    use crate::test_support::open_loop;

    #[test]
    fn the_console_line_gives_the_share_asked_and_done() {
        let mut b = open_loop(|_| 100);
        let mut run = RunReport::new("id", "2026-01-01T00:00:00Z");
        run.benchmarks.push(b.clone());
        assert!(cancel_notes(&run).is_empty());
        b.cancellation = Some(Cancellation::new(0.25, 0.5).expect("valid"));
        b.requests.cancelled = 10;
        b.requests.total = 40;
        run.benchmarks[0] = b;
        let lines = cancel_notes(&run);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("cancelled by the client constant@10.00: 10 of 40 requests (25%), asked 25% each 0.5 s after"),
            "{}",
            lines[0]
        );
    }
}
