//! The comparison of saved runs as Markdown (`bench report A.json B.json --output cmp.md`), fit
//! for a pull-request comment or a CI step summary: the regression gate's verdict and the
//! checks that did not pass, every figure of each later run's benchmarks against the first
//! run's with the comparison's marks, and the capacity answers side by side.

use std::fmt::Write as _;

use crate::figures::model::RunReport;
use crate::views::compare::{
    change, counterpart, figure_change, legend, CAPACITY_FIGURES, FIGURES,
};
use crate::views::gate::{interval_words, Gate, Verdict};

/// A table cell: `|` escaped, line breaks as spaces.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn row(cells: &[String]) -> String {
    format!("| {} |\n", cells.join(" | "))
}

fn header(cells: &[&str]) -> String {
    let own: Vec<String> = cells.iter().map(|c| cell(c)).collect();
    format!("{}|{}\n", row(&own), "---|".repeat(cells.len()))
}

/// The comparison as Markdown. `names` label the runs (file stems); `gate` is the gate of the
/// second run against the first, with whether unjudged checks fail (`--fail-on-unjudged`).
pub fn render_comparison_markdown(
    runs: &[RunReport],
    names: &[String],
    gate: Option<(&Gate, bool)>,
) -> String {
    let mut s = String::new();
    let base = names.first().map_or("run 1", String::as_str);
    let _ = writeln!(
        s,
        "## bench: {} against {}\n",
        cell(&names.get(1..).unwrap_or_default().join(", ")),
        cell(base)
    );
    for (r, n) in runs.iter().zip(names) {
        let _ = writeln!(
            s,
            "- `{}`: run `{}` created {} ({} against {})",
            cell(n),
            cell(&r.run_id),
            cell(&r.created),
            cell(&r.environment.model),
            cell(&r.environment.target)
        );
    }
    s.push('\n');
    if let Some((g, unjudged)) = gate {
        gate_section(&mut s, g, unjudged, names);
    }
    changes(&mut s, runs, names);
    capacities(&mut s, runs, names);
    s
}

/// The gate's verdict, its rules, and one row per check that did not pass.
fn gate_section(s: &mut String, g: &Gate, unjudged: bool, names: &[String]) {
    let failed = g.failed(unjudged);
    let rules: Vec<String> = g.rules.0.iter().map(|r| format!("`{r}`")).collect();
    let fails = g.checks.iter().filter(|c| g.fails(c, unjudged)).count();
    let _ = writeln!(
        s,
        "### Regression gate: {}\n\nRules {}{}: {} check(s), {fails} failed. A rule fails when the change is past its threshold and the two 95% intervals do not overlap.\n",
        if failed { "**failed**" } else { "passed" },
        rules.join(", "),
        if unjudged { " (with `--fail-on-unjudged`)" } else { "" },
        g.checks.len()
    );
    let shown: Vec<_> = g
        .checks
        .iter()
        .filter(|c| c.verdict != Verdict::Pass)
        .collect();
    if !shown.is_empty() {
        let (a, b) = (
            names.first().map_or("base", String::as_str),
            names.get(1).map_or("new", String::as_str),
        );
        s.push_str(&header(&["Benchmark", "Rule", a, b, "Change", "Verdict"]));
        for c in shown {
            let value = |v: Option<f64>, iv| match (v, iv) {
                (None, _) => "-".to_string(),
                (Some(v), Some(iv)) => format!("{v:.2} (95% {})", interval_words(iv, 2)),
                (Some(v), None) => format!("{v:.2} (no interval)"),
            };
            let verdict = match c.verdict {
                Verdict::Fail => "**fail**: beyond the intervals",
                _ if unjudged => "**fail**: no interval to judge by",
                _ => "unjudged: no interval to judge by",
            };
            s.push_str(&row(&[
                cell(c.benchmark.as_deref().unwrap_or("capacity answer")),
                format!("`{}`", g.rules.0[c.rule]),
                value(c.base, c.base_interval),
                value(c.new, c.new_interval),
                c.change_pct()
                    .map_or("missing".into(), |p| format!("{p:+.1}%")),
                verdict.into(),
            ]));
        }
        s.push('\n');
    }
    for &i in &g.idle {
        let _ = writeln!(
            s,
            "Rule `{}` checked nothing: no benchmark label in common, or no such figure in either run.\n",
            g.rules.0[i]
        );
    }
    if !g.unmatched.is_empty() {
        let _ = writeln!(
            s,
            "Not checked (no benchmark of the same label in {}): {}.\n",
            cell(names.first().map_or("base", String::as_str)),
            cell(&g.unmatched.join(", "))
        );
    }
}

/// Every later run's benchmark with a counterpart, each figure `a → b` with its mark.
fn changes(s: &mut String, runs: &[RunReport], names: &[String]) {
    let Some((first, later)) = runs.split_first() else {
        return;
    };
    let _ = writeln!(
        s,
        "### Changes against {}\n\n{}\n",
        cell(&names[0]),
        cell(&legend(&names[0]))
    );
    let mut head = vec!["Run", "Benchmark"];
    head.extend(FIGURES.iter().map(|f| f.title));
    s.push_str(&header(&head));
    for (i, run) in later.iter().enumerate() {
        for b in &run.benchmarks {
            let Some(a) = counterpart(first, b) else {
                continue;
            };
            let mut cells = vec![cell(&names[i + 1]), cell(&b.label)];
            for f in FIGURES {
                let v = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.*}", f.digits));
                let c = figure_change(f, a, b);
                let text = format!("{} → {} {}", v(f.value(a)), v(f.value(b)), c.mark());
                cells.push(if c == crate::views::compare::Change::Beyond {
                    format!("**{}**", text.replace('*', "\\*"))
                } else {
                    text
                });
            }
            s.push_str(&row(&cells));
        }
    }
    s.push('\n');
}

/// Each run's capacity answer with its interval; with two runs, the change and its mark.
fn capacities(s: &mut String, runs: &[RunReport], names: &[String]) {
    if runs.iter().all(|r| r.capacity.is_none()) {
        return;
    }
    s.push_str("### Capacity\n\n");
    let mut head: Vec<&str> = vec!["Figure"];
    head.extend(names.iter().map(String::as_str));
    if runs.len() == 2 {
        head.push("Change");
    }
    s.push_str(&header(&head));
    for f in &CAPACITY_FIGURES {
        let mut cells = vec![f.title.to_string()];
        for r in runs {
            cells.push(match (f.value(r), f.interval(r)) {
                (None, _) => "-".into(),
                (Some(v), Some(iv)) => format!("{v:.2} (95% {})", interval_words(iv, 2)),
                (Some(v), None) => format!("{v:.2}"),
            });
        }
        if let [a, b] = runs {
            cells.push(match (f.value(a), f.value(b)) {
                (Some(x), Some(y)) if x != 0.0 => format!(
                    "{:+.1}%, {}",
                    (y - x) / x * 100.0,
                    change(f.interval(a), f.interval(b)).words()
                ),
                _ => String::new(),
            });
        }
        s.push_str(&row(&cells));
    }
}
