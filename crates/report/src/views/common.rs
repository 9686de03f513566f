//! The helpers every view shares, and the only module views take helpers from: HTML escaping,
//! word wrapping, wall-clock and number formatting, and the console table builder (column
//! groups, split to fit a terminal width) that the guidellm console, the server, reasoning and
//! session tables and the comparison are drawn with. It imports figures only.

use std::fmt::Write as _;

use bench_core::{Capacity, CrossingInterval};
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};

use crate::figures::model::BenchmarkReport;
use crate::figures::options::Metric;

/// Escapes text for HTML element content and attribute values; control characters other than
/// line breaks (a server's text may hold them) are written as escapes first, line by line
/// ([`bench_core::escape_controls`]).
pub fn esc(s: &str) -> String {
    let s: String = s
        .split('\n')
        .map(bench_core::escape_controls)
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `x` with at most `digits` decimals and no trailing zeros (`2.5`, `10`).
pub fn trimmed(x: f64, digits: usize) -> String {
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Word-wraps `text` at `width` columns, continuation lines indented by `indent` spaces.
pub(crate) fn wrap(text: &str, width: Option<u16>, indent: usize) -> String {
    let Some(w) = width.map(|w| (w as usize).max(indent + 20)) else {
        return format!("{}{text}\n", " ".repeat(indent));
    };
    let mut out = String::new();
    let mut line = " ".repeat(indent);
    let mut empty = true;
    for word in text.split(' ') {
        let wl = word.chars().count();
        if !empty && line.chars().count() + 1 + wl > w {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(indent);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// `HH:MM:SS` of an RFC 3339 UTC string written by [`crate::figures::time_fmt::rfc3339`] (the text after `T`).
pub(crate) fn hms(rfc: &str) -> String {
    rfc.split_once('T')
        .and_then(|(_, rest)| rest.get(..8))
        .unwrap_or("-")
        .to_string()
}

/// Mean, median and p99 of metric `m`, times `scale`, to `digits` decimals (dashes without
/// a sample).
pub(crate) fn mmp(b: &BenchmarkReport, m: Metric, scale: f64, digits: usize) -> [String; 3] {
    let s = b.metric(m);
    if s.count == 0 {
        // No sample: a dash, never a made-up 0.
        return ["-".into(), "-".into(), "-".into()];
    }
    let p99 = b.percentile_ms(m, 99.0).unwrap_or(0.0);
    [
        format!("{:.*}", digits, s.mean * scale),
        format!("{:.*}", digits, s.median * scale),
        format!("{:.*}", digits, p99 * scale),
    ]
}

/// comfy-table preset: `=` rules above and below, `|` between columns, `-` under the header.
const PRESET: &str = "  == -| |    ==    ";

/// A table as column groups (the first group holds the row label) and rows of cells.
#[derive(Debug)]
pub struct Spec<'a> {
    /// The column groups: a title and its columns' names.
    pub groups: Vec<(&'a str, &'a [&'a str])>,
    /// The rows, a cell per column.
    pub rows: Vec<Vec<String>>,
}

/// Group of each column: (group index, title).
fn column_groups<'a>(groups: &[(&'a str, &[&str])]) -> Vec<(usize, &'a str)> {
    let mut out = Vec::new();
    for (g, (title, names)) in groups.iter().enumerate() {
        for _ in names.iter() {
            out.push((g, *title));
        }
    }
    out
}

/// Builds the table of columns `cols`. A group's title goes into the header cell of its
/// first column when `inline` says so (single columns, or titles wider than their span);
/// the others are drawn spanning their columns by [`span_titles`].
fn build(
    groups: &[(&str, &[&str])],
    rows: &[Vec<String>],
    cols: &[usize],
    inline: &[usize],
) -> Table {
    let mut t = Table::new();
    t.load_preset(PRESET);
    t.force_no_tty();
    t.set_content_arrangement(ContentArrangement::Disabled);
    let cg = column_groups(groups);
    let mut header = Vec::new();
    let mut prev_group = None;
    for &c in cols {
        let (g, title) = cg.get(c).copied().unwrap_or((usize::MAX, ""));
        let name = groups
            .get(g)
            .and_then(|(_, names)| {
                let first = cg.iter().position(|x| x.0 == g)?;
                names.get(c - first)
            })
            .copied()
            .unwrap_or("");
        let top = if prev_group != Some(g) && inline.contains(&g) {
            title
        } else {
            ""
        };
        prev_group = Some(g);
        header.push(Cell::new(format!("{top}\n{name}")));
    }
    t.set_header(header);
    for r in rows {
        t.add_row(
            cols.iter()
                .map(|&c| r.get(c).cloned().unwrap_or_default())
                .collect::<Vec<_>>(),
        );
    }
    for c in 0..cols.len() {
        if let Some(col) = t.column_mut(c) {
            col.set_padding((1, 0));
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// Column widths read from the header rule (`----|---|--`).
fn rule_widths(lines: &[String]) -> Option<Vec<usize>> {
    let rule = lines.get(3)?;
    if !rule.starts_with('-') {
        return None;
    }
    Some(rule.split('|').map(|s| s.chars().count()).collect())
}

/// Renders the table of `cols` with group titles spanning their columns (like guidellm's
/// `Metadata |||| Requests Made |||` line), widening a group's first column only when its
/// title is wider than the whole group.
fn build_spanned(groups: &[(&str, &[&str])], rows: &[Vec<String>], cols: &[usize]) -> Vec<String> {
    let cg = column_groups(groups);
    let col_group: Vec<usize> = cols.iter().map(|&c| cg.get(c).map_or(0, |x| x.0)).collect();
    let mut inline: Vec<usize> = Vec::new();
    for (g, (_, names)) in groups.iter().enumerate() {
        if names.len() == 1 {
            inline.push(g);
        }
    }
    let mut out = lines(&build(groups, rows, cols, &inline));
    let Some(widths) = rule_widths(&out) else {
        return out;
    };
    // Titles wider than their span go inline instead.
    let mut changed = false;
    for (g, (title, _)) in groups.iter().enumerate() {
        if inline.contains(&g) {
            continue;
        }
        let idx: Vec<usize> = (0..cols.len()).filter(|&i| col_group[i] == g).collect();
        if idx.is_empty() {
            continue;
        }
        let span: usize = idx
            .iter()
            .map(|&i| widths.get(i).copied().unwrap_or(0))
            .sum::<usize>()
            + idx.len()
            - 1;
        if title.chars().count() > span {
            inline.push(g);
            changed = true;
        }
    }
    if changed {
        out = lines(&build(groups, rows, cols, &inline));
    }
    let Some(widths) = rule_widths(&out) else {
        return out;
    };
    // Redraw the title line: one segment per run of columns of the same group.
    let mut line = String::new();
    let mut i = 0;
    while i < cols.len() {
        let g = col_group[i];
        let mut j = i;
        let mut span = 0;
        while j < cols.len() && col_group[j] == g {
            span += widths.get(j).copied().unwrap_or(0) + 1;
            j += 1;
        }
        span -= 1;
        let title = groups.get(g).map_or("", |x| x.0);
        let tl = title.chars().count();
        let seg = if tl <= span {
            let left = (span - tl) / 2;
            format!(
                "{}{title}{}",
                " ".repeat(left),
                " ".repeat(span - tl - left)
            )
        } else {
            " ".repeat(span)
        };
        line.push_str(&seg);
        if j < cols.len() {
            line.push('|');
        }
        i = j;
    }
    if let Some(l) = out.get_mut(1) {
        *l = line.trim_end().to_string();
    }
    out
}

fn lines(t: &Table) -> Vec<String> {
    t.lines().map(|l| l.trim_end().to_string()).collect()
}

fn widest(lines: &[String]) -> usize {
    lines.iter().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Renders the table; when it is wider than `width`, splits it into several tables of whole
/// column groups, each repeating the row label, and only wraps cells (comfy-table's dynamic
/// arrangement) when one group alone cannot fit.
pub fn render(spec: &Spec<'_>, width: Option<u16>) -> String {
    render_labelled(spec, width, 1)
}

/// [`render`], repeating the first `label_columns` columns in every part of a split table.
pub(crate) fn render_labelled(spec: &Spec<'_>, width: Option<u16>, label_columns: usize) -> String {
    let total: usize = spec.groups.iter().map(|g| g.1.len()).sum();
    let all: Vec<usize> = (0..total).collect();
    let full = build_spanned(&spec.groups, &spec.rows, &all);
    let Some(w) = width.map(usize::from) else {
        return full.join("\n");
    };
    if widest(&full) <= w {
        return full.join("\n");
    }
    // Column indices of each group.
    let mut spans = Vec::new();
    let mut i = 0;
    for g in &spec.groups {
        spans.push((i..i + g.1.len()).collect::<Vec<_>>());
        i += g.1.len();
    }
    let label: Vec<usize> = (0..label_columns.max(1)).collect();
    let mut parts: Vec<Vec<usize>> = Vec::new();
    let mut cur: Vec<usize> = spans.first().cloned().unwrap_or_default();
    for span in spans.iter().skip(1) {
        let mut trial = cur.clone();
        trial.extend(span);
        if widest(&build_spanned(&spec.groups, &spec.rows, &trial)) <= w {
            cur = trial;
        } else {
            parts.push(cur);
            cur = label.clone();
            cur.extend(span);
        }
    }
    parts.push(cur);
    let rendered: Vec<String> = parts
        .iter()
        .map(|cols| {
            let spanned = build_spanned(&spec.groups, &spec.rows, cols);
            if widest(&spanned) <= w {
                return spanned.join("\n");
            }
            // One group alone is too wide: let comfy-table wrap its cells.
            let inline: Vec<usize> = (0..spec.groups.len()).collect();
            let mut t = build(&spec.groups, &spec.rows, cols, &inline);
            t.set_content_arrangement(ContentArrangement::Dynamic);
            t.set_width(w.min(u16::MAX as usize) as u16);
            lines(&t).join("\n")
        })
        .collect();
    rendered.join("\n")
}

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

/// The in-flight cap a benchmark ran with, as vLLM's `--max-concurrency` (also printed on
/// the vLLM console).
pub fn max_concurrency(strategy: &bench_core::Strategy) -> Option<u32> {
    match strategy {
        bench_core::Strategy::Constant {
            max_concurrency, ..
        }
        | bench_core::Strategy::Poisson {
            max_concurrency, ..
        }
        | bench_core::Strategy::Trace {
            max_concurrency, ..
        } => *max_concurrency,
        bench_core::Strategy::Throughput { max_concurrency } => Some(*max_concurrency),
        bench_core::Strategy::Concurrent { streams } => Some(*streams),
        bench_core::Strategy::Synchronous => Some(1),
        bench_core::Strategy::Burst { .. } => None,
    }
}

/// `asked +-5%: met after 4 benchmarks (38.2 benchmark-seconds)`.
pub(crate) fn refinement_words(r: &bench_core::Refinement) -> String {
    format!(
        "asked +-{}%: {} after {} more benchmark{} ({:.1} benchmark-seconds)",
        trimmed(r.precision * 100.0, 2),
        if r.met { "met" } else { "NOT met" },
        r.benchmarks,
        if r.benchmarks == 1 { "" } else { "s" },
        r.seconds
    ) + &r.why_not.map_or(String::new(), |w| format!(": {w}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_text_keeps_its_lines_and_escapes_a_servers_control_characters() {
        assert_eq!(
            esc("a<b>\n\u{1b}[31mRED\u{7}"),
            "a&lt;b&gt;\n\\x1b[31mRED\\x07"
        );
    }

    #[test]
    fn crossing_words_are_compact() {
        let c = |low, high| crossing_words(Some(CrossingInterval { low, high }));
        assert_eq!(c(20.1, Some(21.2)), " (95%: 20.10-21.20)");
        assert_eq!(c(20.1, None), " (95%: 20.10 or more)");
        assert_eq!(crossing_words(None), "");
    }
}
