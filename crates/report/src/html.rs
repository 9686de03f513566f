//! The HTML report: one self-contained page (inline CSS and SVG, no script, no external
//! resource), so it renders offline and forever.

use std::fmt::Write as _;

use crate::model::RunReport;
use crate::options::Metric;

/// Escapes text for HTML element content and attribute values.
pub(crate) fn esc(s: &str) -> String {
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

/// Renders `run` as one self-contained HTML page.
pub fn render_html(run: &RunReport) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>bench report {}</title>\n<style>{}</style>\n</head>\n<body>\n",
        esc(&run.run_id),
        CSS
    );
    let _ = write!(h, "<h1>bench report</h1>\n<p class=\"meta\">run <code>{}</code>, created {}, {} against <code>{}</code> ({})</p>\n",
        esc(&run.run_id), esc(&run.created), esc(&run.environment.model), esc(&run.environment.target), esc(&run.environment.backend));
    h.push_str("<h2>Summary</h2>\n<table>\n<tr><th>Benchmark</th><th>Completed</th><th>Incomplete</th><th>Errored</th><th>Req/s</th><th>Concurrency</th><th>Out tok/s</th><th>TTFT p50 / p99 (ms)</th><th>ITL p50 / p99 (ms)</th><th>TPOT p50 / p99 (ms)</th><th>E2EL p50 / p99 (ms)</th></tr>\n");
    for b in &run.benchmarks {
        let pp = |m: Metric| {
            format!(
                "{:.1} / {:.1}",
                b.metric(m).median,
                b.percentile_ms(m, 99.0).unwrap_or(0.0)
            )
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&b.label),
            b.requests.completed,
            b.requests.incomplete,
            b.requests.errored,
            b.rates.requests_per_s,
            b.rates.concurrency,
            b.rates.output_tokens_per_s,
            pp(Metric::Ttft),
            pp(Metric::Itl),
            pp(Metric::Tpot),
            pp(Metric::E2el)
        );
    }
    h.push_str("</table>\n</body>\n</html>\n");
    h
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;font-variant-numeric:tabular-nums}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}th:first-child,td:first-child{text-align:left}.meta{color:#555}";
