//! The HTML comparison's table of changes: every figure of every later run's benchmark against
//! the benchmark of the same label in the first run, marked beyond the 95% intervals, within
//! noise, or without an interval (the console's marks, in words).

use std::fmt::Write as _;

use crate::figures::model::RunReport;
use crate::views::common::esc;
use crate::views::compare::{counterpart, figure_change, legend, FIGURES};

/// The "Changes" section (nothing with fewer than two runs). `names` label the runs.
pub(crate) fn changes(h: &mut String, runs: &[RunReport], names: &[String]) {
    let Some((first, later)) = runs.split_first() else {
        return;
    };
    if later.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<h2 id=\"changes\">Changes against {}</h2>\n<p class=\"meta\">{}</p>\n<div class=\"scroll\"><table class=\"changes\">\n<tr><th>Run</th><th>Benchmark</th>",
        esc(&names[0]),
        esc(&legend(&names[0]))
    );
    for f in FIGURES {
        let _ = write!(h, "<th>{}</th>", esc(f.title));
    }
    h.push_str("</tr>\n");
    for (i, run) in later.iter().enumerate() {
        for b in &run.benchmarks {
            let Some(a) = counterpart(first, b) else {
                continue;
            };
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td>",
                esc(&names[i + 1]),
                esc(&b.label)
            );
            for f in FIGURES {
                let c = figure_change(f, a, b);
                let v = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.*}", f.digits));
                let _ = write!(
                    h,
                    "<td class=\"{}\" title=\"{}\">{} &rarr; {} {}</td>",
                    class(c),
                    c.words(),
                    v(f.value(a)),
                    v(f.value(b)),
                    c.mark()
                );
            }
            h.push_str("</tr>\n");
        }
    }
    h.push_str("</table></div>\n");
}

fn class(c: crate::views::compare::Change) -> &'static str {
    match c {
        crate::views::compare::Change::Beyond => "beyond",
        crate::views::compare::Change::Noise => "noise",
        crate::views::compare::Change::Unjudged => "unjudged",
    }
}
