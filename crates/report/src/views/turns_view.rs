//! Sessions in the consoles, the HTML and the CSV (docs/reports.md): how sessions ended and
//! how long they lasted, and a per-turn table (TTFT of turn 1 against later turns is where a
//! server's prefix cache shows). Nothing is printed for benchmarks without sessions.

use std::fmt::Write as _;

use crate::figures::hist::MetricSummary;
use crate::figures::model::{BenchmarkReport, RunReport, SessionReport, TurnReport};
use crate::figures::options::percentile_key;
use crate::views::common::esc;
use crate::views::common::{render_labelled, Spec};
use crate::views::svg::{line_chart, Axes, Series, PALETTE};

/// Percentile `p` of a summary (the median, or a saved percentile), `None` when empty.
fn pct(s: &MetricSummary, p: f64) -> Option<f64> {
    if s.count == 0 {
        return None;
    }
    if p == 50.0 {
        return Some(s.median);
    }
    s.percentiles.get(&percentile_key(p)).copied()
}

/// A figure with `digits` decimals, or `-` when there is none.
fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// Mean, median and p99 of a summary scaled by `scale`, dashes when empty.
fn mmp(s: &MetricSummary, scale: f64, digits: usize) -> [String; 3] {
    let mean = (s.count > 0).then_some(s.mean);
    [mean, pct(s, 50.0), pct(s, 99.0)].map(|v| cell(v.map(|v| v * scale), digits))
}

/// The turn's row label: `3`, or `10+` for the row pooling later turns; a tool-result row
/// adds ` tool` (`3 tool`).
pub(crate) fn turn_label(t: &TurnReport) -> String {
    let plus = if t.and_later { "+" } else { "" };
    let tool = if t.kind.is_user() { "" } else { " tool" };
    format!("{}{plus}{tool}", t.turn)
}

/// The note under a per-turn table that has tool-result rows (nothing otherwise).
fn tool_note(s: &SessionReport) -> Option<&'static str> {
    s.turns.iter().any(|t| !t.kind.is_user()).then_some(
        "N tool: the requests sending the result of a tool call made in turn N (docs/metrics.md, Tool calls)",
    )
}

fn sessions_of(run: &RunReport) -> impl Iterator<Item = (&BenchmarkReport, &SessionReport)> {
    run.benchmarks
        .iter()
        .filter_map(|b| b.sessions.as_ref().map(|s| (b, s)))
}

/// The guidellm-style "Sessions" and "Per-Turn Stats" tables (headings included), or `None`
/// when no benchmark ran sessions.
pub(crate) fn sessions_tables(run: &RunReport, width: Option<u16>) -> Option<String> {
    sessions_of(run).next()?;
    const MMP: &[&str] = &["mean", "median", "p99"];
    const CIE: &[&str] = &["Comp", "Inc", "Err"];
    let mut sessions = Spec {
        groups: vec![
            ("Metadata", &["Benchmark"]),
            ("Sessions", &["Started", "Completed", "Cut", "Errored"]),
            ("Session Duration (sec)", MMP),
        ],
        rows: Vec::new(),
    };
    let mut turns = Spec {
        groups: vec![
            ("Metadata", &["Benchmark", "Turn"]),
            ("Requests Made", CIE),
            ("Prompt Tok/Req", &["mean"]),
            ("Output Tok/Req", &["mean"]),
            ("Req Latency (sec)", MMP),
            ("TTFT (ms)", MMP),
            ("ITL (ms)", MMP),
            ("TPOT (ms)", MMP),
        ],
        rows: Vec::new(),
    };
    for (b, s) in sessions_of(run) {
        let c = &s.counts;
        let mut row = vec![b.label.clone()];
        row.extend([c.started, c.completed, c.cut, c.errored].map(|n| n.to_string()));
        row.extend(mmp(&s.duration_ms, 1e-3, 2));
        sessions.rows.push(row);
        for t in &s.turns {
            let r = &t.requests;
            let mut row = vec![b.label.clone(), turn_label(t)];
            row.extend([r.completed, r.incomplete, r.errored].map(|n| n.to_string()));
            let mean = |x: &crate::figures::model::TokenSummary| (x.count > 0).then_some(x.mean);
            row.push(cell(mean(&t.prompt_tokens), 1));
            row.push(cell(mean(&t.output_tokens), 1));
            row.extend(mmp(&t.e2el_ms, 1e-3, 2));
            row.extend(mmp(&t.ttft_ms, 1.0, 1));
            row.extend(mmp(&t.itl_ms, 1.0, 1));
            row.extend(mmp(&t.tpot_ms, 1.0, 1));
            turns.rows.push(row);
        }
    }
    let mut out = String::from("\nSessions:\n");
    out.push_str(&render_labelled(&sessions, width, 1));
    out.push_str("\n\nPer-Turn Stats:\n");
    out.push_str(&render_labelled(&turns, width, 2));
    out.push('\n');
    if let Some(note) = sessions_of(run).find_map(|(_, s)| tool_note(s)) {
        out.push_str(note);
        out.push('\n');
    }
    Some(out)
}

/// The vLLM-style "Sessions" and "Per turn" sections of one benchmark's block (`{:<40}
/// {:<10}` lines, then a small table of means), empty without sessions.
pub(crate) fn vllm_section(b: &BenchmarkReport, centered: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    let Some(s) = &b.sessions else {
        return out;
    };
    let _ = writeln!(out, "{}", centered(" Sessions "));
    let c = &s.counts;
    for (label, n) in [
        ("Sessions started:", c.started),
        ("Sessions completed:", c.completed),
        ("Sessions cut (by the benchmark's end):", c.cut),
        ("Sessions errored:", c.errored),
    ] {
        let _ = writeln!(out, "{label:<40} {n:<10}");
    }
    let d = &s.duration_ms;
    for (label, v) in [
        (
            "Mean session duration (s):",
            (d.count > 0).then_some(d.mean),
        ),
        ("Median session duration (s):", pct(d, 50.0)),
        ("P99 session duration (s):", pct(d, 99.0)),
    ] {
        let _ = writeln!(out, "{label:<40} {:<10}", cell(v.map(|v| v / 1e3), 2));
    }
    if let Some(c) = &s.cache {
        let pct = |v: f64| format!("{:.2}", v * 100.0);
        let _ = writeln!(
            out,
            "{:<40} {:<10}",
            "Mean per-session cached share (%):",
            pct(c.cached_share_mean)
        );
        if let Some(one) = c.one_replica {
            let _ = writeln!(
                out,
                "{:<40} {:<10}",
                "Sessions on one replica:",
                format!("{one} of {}", c.sessions)
            );
        }
    }
    if s.turns.is_empty() {
        return out;
    }
    let _ = writeln!(out, "{}", centered(" Per turn (completed, means) "));
    // Wider turn labels (`10+ tool`) when tool-result rows are shown.
    let w = if tool_note(s).is_some() { 9 } else { 5 };
    let _ = writeln!(
        out,
        "{:<w$}{:>6}{:>8}{:>8}{:>9}{:>8}{:>8}{:>10}",
        "Turn", "Done", "In tok", "Out tok", "TTFT ms", "ITL ms", "TPOT ms", "E2EL ms"
    );
    for t in &s.turns {
        let mean = |m: &MetricSummary| cell((m.count > 0).then_some(m.mean), 2);
        let tok =
            |x: &crate::figures::model::TokenSummary| cell((x.count > 0).then_some(x.mean), 1);
        let _ = writeln!(
            out,
            "{:<w$}{:>6}{:>8}{:>8}{:>9}{:>8}{:>8}{:>10}",
            turn_label(t),
            t.requests.completed,
            tok(&t.prompt_tokens),
            tok(&t.output_tokens),
            mean(&t.ttft_ms),
            mean(&t.itl_ms),
            mean(&t.tpot_ms),
            mean(&t.e2el_ms)
        );
    }
    if let Some(note) = tool_note(s) {
        let _ = writeln!(out, "{note}");
    }
    out
}

/// The HTML "Sessions" tables of one benchmark (nothing without sessions).
pub(crate) fn html_section(h: &mut String, b: &BenchmarkReport) {
    let Some(s) = &b.sessions else {
        return;
    };
    let c = &s.counts;
    let [mean, p50, p99] = mmp(&s.duration_ms, 1e-3, 2);
    let _ = writeln!(
        h,
        "<h3>Sessions</h3>\n<table class=\"sessions\">\n<tr><th>Sessions</th><th>Started</th><th>Completed</th><th>Cut</th><th>Errored</th><th>Duration mean (s)</th><th>Duration p50 (s)</th><th>Duration p99 (s)</th></tr>\n<tr><td>count</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{mean}</td><td>{p50}</td><td>{p99}</td></tr>\n</table>",
        c.started, c.completed, c.cut, c.errored
    );
    if s.turns.is_empty() {
        return;
    }
    h.push_str("<table class=\"turns\">\n<tr><th>Turn</th><th>Completed</th><th>Incomplete</th><th>Errored</th><th>Prompt tok mean (min&ndash;max)</th><th>Output tok mean</th><th>TTFT mean / p50 / p99 (ms)</th><th>ITL mean / p99 (ms)</th><th>TPOT mean / p99 (ms)</th><th>E2EL mean / p50 / p99 (ms)</th></tr>\n");
    for t in &s.turns {
        let r = &t.requests;
        let (p, o) = (&t.prompt_tokens, &t.output_tokens);
        let three = |m: &MetricSummary| mmp(m, 1.0, 1).join(" / ");
        let two = |m: &MetricSummary| {
            let [mean, _, p99] = mmp(m, 1.0, 2);
            format!("{mean} / {p99}")
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} ({}&ndash;{})</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&turn_label(t)),
            r.completed,
            r.incomplete,
            r.errored,
            cell((p.count > 0).then_some(p.mean), 1),
            p.min,
            p.max,
            cell((o.count > 0).then_some(o.mean), 1),
            three(&t.ttft_ms),
            two(&t.itl_ms),
            two(&t.tpot_ms),
            three(&t.e2el_ms),
        );
    }
    h.push_str("</table>\n");
    if let Some(note) = tool_note(s) {
        let _ = writeln!(h, "<p class=\"meta\">{}</p>", esc(note));
    }
    h.push_str("<p class=\"meta\">Per turn: the included requests of each turn (turn 10 pools every later turn, 10+); latencies and tokens of the completed ones. docs/metrics.md, Sessions.</p>\n<div class=\"charts\" style=\"grid-template-columns:repeat(auto-fill,minmax(520px,1fr))\">\n");
    h.push_str(&turn_chart(b, s));
    h.push_str("\n</div>\n");
}

/// TTFT (mean, p50, p99) against the turn: where a prefix cache shows.
fn turn_chart(b: &BenchmarkReport, s: &SessionReport) -> String {
    let series: Vec<Series> = [("mean", None), ("p50", Some(50.0)), ("p99", Some(99.0))]
        .into_iter()
        .enumerate()
        .map(|(i, (name, p))| {
            let (points, notes): (Vec<(f64, f64)>, Vec<String>) = s
                .turns
                .iter()
                .filter(|t| t.kind.is_user())
                .filter_map(|t| {
                    let m = &t.ttft_ms;
                    let v = match p {
                        None => (m.count > 0).then_some(m.mean),
                        Some(p) => pct(m, p),
                    }?;
                    Some(((t.turn as f64, v), format!("turn {}", turn_label(t))))
                })
                .unzip();
            Series {
                notes,
                ..Series::line(format!("TTFT {name}"), PALETTE[i % PALETTE.len()], points)
            }
        })
        .collect();
    let axes = Axes {
        title: format!("{}: TTFT by turn", b.label),
        x_label: "turn".into(),
        y_label: "ms".into(),
        x_ticks: Some(
            s.turns
                .iter()
                .filter(|t| t.kind.is_user())
                .map(|t| (t.turn as f64, turn_label(t)))
                .collect(),
        ),
        marks: Vec::new(),
    };
    line_chart(&axes, &series)
}

/// CSV columns of the sessions (empty cells for benchmarks without sessions). Per-turn
/// figures have no flat form and are only in JSON, YAML, HTML and the consoles.
pub(crate) const CSV_COLUMNS: [&str; 7] = [
    "sessions_started",
    "sessions_completed",
    "sessions_cut",
    "sessions_errored",
    "session_duration_ms_mean",
    "session_duration_ms_median",
    "session_duration_ms_p99",
];

/// The cells of [`CSV_COLUMNS`] for `b`; `num` formats a figure as the CSV does.
pub(crate) fn csv_cells(b: &BenchmarkReport, num: impl Fn(f64) -> String) -> Vec<String> {
    let Some(s) = &b.sessions else {
        return vec![String::new(); CSV_COLUMNS.len()];
    };
    let c = &s.counts;
    let d = &s.duration_ms;
    let mut out: Vec<String> = [c.started, c.completed, c.cut, c.errored]
        .map(|n| n.to_string())
        .to_vec();
    for v in [(d.count > 0).then_some(d.mean), pct(d, 50.0), pct(d, 99.0)] {
        out.push(v.map(&num).unwrap_or_default());
    }
    out
}
