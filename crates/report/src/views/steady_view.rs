//! Which requests the latency figures take ([`LatencyScope`], docs/metrics.md "Steady state"),
//! and whether an open loop was sustained ([`bench_core::Sustained`], "Sustained"), said in
//! every output: CSV column groups, notes under the guidellm tables, lines under each vLLM
//! block and rows of the HTML counts table.

use std::fmt::Write as _;

use bench_core::Verdict;

use crate::figures::model::{BenchmarkReport, LatencyScope, RunReport};

/// The CSV columns.
pub(crate) const CSV_COLUMNS: &[&str] = &[
    "latency_scope",
    "latency_requests",
    "excluded_unsteady",
    "steady_start_s",
    "steady_end_s",
    "sustained",
    "departures_per_s",
    "departures_low",
    "departures_high",
];

/// The scope's name in files (`window`, `steady`, `too_short`).
pub(crate) fn scope_name(s: LatencyScope) -> &'static str {
    match s {
        LatencyScope::Window => "window",
        LatencyScope::Steady => "steady",
        LatencyScope::Settling => "settling",
        LatencyScope::TooShort => "too_short",
    }
}

impl BenchmarkReport {
    /// Completed requests in the latency distributions.
    pub fn latency_requests(&self) -> u64 {
        self.requests.completed - self.requests.excluded_unsteady
    }

    /// Seconds from the benchmark's start to the opening and closing of its steady state.
    fn steady_secs(&self) -> (Option<f64>, Option<f64>) {
        let at = |ns: u64| ns.saturating_sub(self.timeline.start_ns) as f64 / 1e9;
        (
            self.timeline.steady_start_ns.map(at),
            self.timeline.steady_end_ns.map(at),
        )
    }
}

/// The [`CSV_COLUMNS`] cells of `b`.
pub(crate) fn csv_cells(b: &BenchmarkReport, num: fn(f64) -> String) -> Vec<String> {
    let (from, to) = b.steady_secs();
    vec![
        scope_name(b.latency_scope).into(),
        b.latency_requests().to_string(),
        b.requests.excluded_unsteady.to_string(),
        from.map(num).unwrap_or_default(),
        to.map(num).unwrap_or_default(),
        match (b.rates.sustained, b.rates.unjudged) {
            (Some(s), _) => s.verdict.name().to_string(),
            (None, Some(_)) => "unjudged".to_string(),
            (None, None) => String::new(),
        },
        sustained_cell(b, |s| s.departures_per_s, num),
        sustained_cell(b, |s| s.departures_interval.low, num),
        sustained_cell(b, |s| s.departures_interval.high, num),
    ]
}

fn sustained_cell(
    b: &BenchmarkReport,
    f: fn(&bench_core::Sustained) -> f64,
    num: fn(f64) -> String,
) -> String {
    b.rates
        .sustained
        .as_ref()
        .map(f)
        .map(num)
        .unwrap_or_default()
}

/// Whether an open loop was sustained, in a few words (`None` for a closed loop); an open loop
/// its loaded span could not judge says why, and that it does not count as kept up.
pub(crate) fn sustained_words(b: &BenchmarkReport) -> Option<String> {
    if let (None, Some(u)) = (b.rates.sustained, b.rates.unjudged) {
        return Some(format!(
            "not judged: {} arrivals in its loaded span of {:.1} s ({} needed), {} completed; not counted as kept up",
            u.arrivals, u.span_s, u.needed, u.completed
        ));
    }
    let s = b.rates.sustained.as_ref()?;
    let verdict = match s.verdict {
        Verdict::KeptUp => "kept up",
        Verdict::NotKeptUp => "NOT kept up",
        Verdict::Unsure => "unsure whether it kept up",
    };
    Some(format!(
        "{verdict}: {:.2} req/s departed while loaded (95%: {:.2}-{:.2}) of {:.2} sent, in flight {:+.2}/s{}",
        s.departures_per_s,
        s.departures_interval.low,
        s.departures_interval.high,
        s.arrivals_per_s,
        s.growth_per_s,
        if s.settled { "" } else { ", not settled" }
    ))
}

/// The sustained note under the guidellm tables, or `None` without an open loop judged.
pub(crate) fn guidellm_sustained_note(run: &RunReport, width: Option<u16>) -> Option<String> {
    let unsure = run.benchmarks.iter().any(|b| {
        b.rates
            .sustained
            .is_some_and(|s| s.verdict == Verdict::Unsure)
    });
    note(
        run,
        width,
        "Sustained (docs/metrics.md, \"Sustained\"):\n",
        sustained_words,
        unsure.then_some(UNSURE),
    )
}

/// A note under the guidellm tables: `heading`, a line per benchmark that `says` something
/// of, and `tail` when given; `None` when no benchmark has a line.
fn note(
    run: &RunReport,
    width: Option<u16>,
    heading: &str,
    says: fn(&BenchmarkReport) -> Option<String>,
    tail: Option<&str>,
) -> Option<String> {
    let lines: Vec<String> = run
        .benchmarks
        .iter()
        .filter_map(|b| says(b).map(|d| format!("{}: {d}", b.label)))
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut out = String::from(heading);
    for l in lines.iter().map(String::as_str).chain(tail) {
        out.push_str(&crate::views::common::wrap(l, width, 2));
    }
    Some(out)
}

/// What an unsure judgement means, and what decides it.
const UNSURE: &str = "Unsure: the window was too short for the in-flight count's noise, or the \
    count had not settled; such a rate does not count as kept up. Longer benchmarks \
    (--max-seconds) decide it; a sweep runs such rates again up to 4 times as long.";

/// What one benchmark's latency figures take, in a few words (`None` for the whole window).
pub(crate) fn describe(b: &BenchmarkReport) -> Option<String> {
    let completed = b.requests.completed;
    match b.latency_scope {
        LatencyScope::Window => None,
        LatencyScope::Steady | LatencyScope::Settling => {
            let (from, to) = b.steady_secs();
            Some(format!(
                "steady state, {} of {completed} requests (fill {:.2} s{}){}",
                b.latency_requests(),
                from.unwrap_or(0.0) - b.warmup_s,
                if to.is_some() { ", drain cut" } else { "" },
                if b.latency_scope == LatencyScope::Settling {
                    "; in flight still climbing after the fill (flatters latency under load)"
                } else {
                    ""
                }
            ))
        }
        LatencyScope::TooShort => Some(format!(
            "all {completed} requests, too short for a steady state (flatters latency under load)"
        )),
    }
}

/// The note under the guidellm tables, or `None` when every benchmark's latency figures take
/// its whole window.
pub(crate) fn guidellm_note(run: &RunReport, width: Option<u16>) -> Option<String> {
    note(
        run,
        width,
        "Latency figures (docs/metrics.md, \"Steady state\"):\n",
        describe,
        run.benchmarks.iter().any(flattered).then_some(REMEDY),
    )
}

/// What a user can do about figures that flatter latency under load.
const REMEDY: &str = "Longer benchmarks (--max-seconds, or max_seconds in a profile) \
    leave more steady requests after the fill and let the in-flight count settle; a load near or \
    over capacity may never settle.";

/// Whether a benchmark's latency figures flatter latency under load (said on the output, with
/// [`REMEDY`]).
fn flattered(b: &BenchmarkReport) -> bool {
    matches!(
        b.latency_scope,
        LatencyScope::Settling | LatencyScope::TooShort
    )
}

/// The lines under a vLLM block, or `None` for the whole window of a load not judged.
pub(crate) fn vllm_line(b: &BenchmarkReport) -> Option<String> {
    let mut line = String::new();
    if let Some(d) = describe(b) {
        let _ = writeln!(line, "Latency figures: {d}");
        if flattered(b) {
            line.push_str(REMEDY);
            line.push('\n');
        }
    }
    if let Some(w) = sustained_words(b) {
        let _ = writeln!(line, "Sustained: {w}");
    }
    (!line.is_empty()).then_some(line)
}

/// The HTML counts-table row.
pub(crate) fn html_row(h: &mut String, b: &BenchmarkReport) {
    if let Some(d) = describe(b) {
        let _ = writeln!(
            h,
            "<tr><td>latency figures</td><td colspan=\"4\">{}</td></tr>",
            crate::views::common::esc(&d)
        );
        if flattered(b) {
            let _ = writeln!(
                h,
                "<tr><td></td><td colspan=\"4\">{}</td></tr>",
                crate::views::common::esc(REMEDY)
            );
        }
    }
    if let Some(w) = sustained_words(b) {
        let _ = writeln!(
            h,
            "<tr><td>sustained</td><td colspan=\"4\">{}</td></tr>",
            crate::views::common::esc(&w)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::open_loop;

    #[test]
    fn the_vllm_line_names_the_remedy_only_while_latency_still_climbs() {
        let said = |b: &BenchmarkReport| vllm_line(b).expect("a line");
        let settled = open_loop(|i| if i < 10 { 100 } else { 300 });
        let over = open_loop(|i| 100 + 20 * i);
        assert!(said(&over).contains("still climbing") && said(&over).contains("--max-seconds"));
        assert!(!said(&settled).contains("still climbing"));
        assert!(!said(&settled).contains("--max-seconds"));
    }
}
