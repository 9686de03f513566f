//! The deployment plan rendered: the console table ranked by cost with the recommendation
//! line, the CSV, and the HTML page with the Pareto chart (docs/planning.md).

use std::fmt::Write as _;

use crate::figures::plan::{ConfigStatus, Fleet, PlanBasis, PlanConfig, PlanReport};
use crate::views::common::{esc, render, trimmed, Spec};
use crate::views::html::CSS;
use crate::views::svg::{line_chart, Axes, Series, PALETTE};

/// What a configuration's row says in place of a fleet.
fn status_words(s: ConfigStatus) -> &'static str {
    match s {
        ConfigStatus::Planned => "planned",
        ConfigStatus::CannotMeetSlo => "no rate swept met the limit",
        ConfigStatus::FailedToStart => "failed to start",
        ConfigStatus::Died => "server died during the sweep",
        ConfigStatus::SweepFailed => "sweep failed",
        ConfigStatus::Interrupted => "interrupted",
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.digits$}"))
}

/// `20.1 (19.5-20.9)`, `20.1 (0-...)` or `20.1 (no interval)`.
fn rate_words(f: &Fleet) -> String {
    match f.rate_interval {
        Some(iv) => format!(
            "{:.2} ({}-{})",
            f.rate_per_replica,
            trimmed(iv.low, 2),
            iv.high.map_or_else(|| "...".into(), |h| trimmed(h, 2))
        ),
        None => format!("{:.2} (no interval)", f.rate_per_replica),
    }
}

/// `5` when sure, `5 (4-5)` when the interval allows fewer, `? (point 4)` when unsure.
fn replica_words(f: &Fleet) -> String {
    match (f.replicas, f.replicas_low) {
        (Some(r), Some(l)) if l < r => format!("{r} ({l}-{r})"),
        (Some(r), _) => r.to_string(),
        (None, _) => format!("? (point {})", f.replicas_at_point),
    }
}

/// Whether any configuration's sweep measured its GPUs' energy (the table then has a column
/// for it).
fn has_energy(p: &PlanReport) -> bool {
    p.configs.iter().any(|c| {
        c.fleet
            .as_ref()
            .is_some_and(|f| f.energy_per_output_token_j.is_some())
    })
}

fn row(c: &PlanConfig, energy: bool) -> Vec<String> {
    let mut r = cells(c);
    if energy {
        let e = c.fleet.as_ref().and_then(|f| f.energy_per_output_token_j);
        r.push(if c.status == ConfigStatus::Planned {
            opt(e.map(|j| j * 1e3), 2)
        } else {
            String::new()
        });
    }
    r
}

fn cells(c: &PlanConfig) -> Vec<String> {
    let rank = c.rank.map_or_else(|| "-".into(), |r| r.to_string());
    let Some(f) = c
        .fleet
        .as_ref()
        .filter(|_| c.status == ConfigStatus::Planned)
    else {
        let mut r = vec![rank, c.name.clone(), status_words(c.status).into()];
        r.resize(10, String::new());
        return r;
    };
    vec![
        rank,
        c.name.clone(),
        rate_words(f),
        replica_words(f),
        opt(f.headroom.map(|h| h * 100.0), 0),
        opt(f.gpus, 0),
        opt(f.cost_per_hour, 2),
        opt(f.cost_per_million_output_tokens, 3),
        opt(f.output_tokens_per_s_per_gpu, 1),
        opt(f.output_tokens_per_s_per_user, 1),
    ]
}

/// The order of the table: ranked first, then the rest as they ran.
fn table_order(p: &PlanReport) -> Vec<&PlanConfig> {
    let mut v = p.ranked();
    v.extend(p.configs.iter().filter(|c| c.rank.is_none()));
    v
}

fn limit_name(b: PlanBasis) -> &'static str {
    match b {
        PlanBasis::Slo => "SLO rate",
        PlanBasis::Capacity => "maximum sustained throughput",
    }
}

/// `cfg x 3 replicas (6 GPUs, 12.00/h, headroom 14%)`.
fn fleet_words(c: &PlanConfig) -> String {
    let Some(f) = &c.fleet else {
        return c.name.clone();
    };
    let n = f.replicas.unwrap_or(f.replicas_at_point);
    let mut s = format!("{} x {n} replica{}", c.name, if n == 1 { "" } else { "s" });
    let mut extra = Vec::new();
    if let Some(g) = f.gpus {
        extra.push(format!(
            "{} GPU{}",
            trimmed(g, 2),
            if g == 1.0 { "" } else { "s" }
        ));
    }
    if let Some(cost) = f.cost_per_hour {
        extra.push(format!("{cost:.2}/h"));
    }
    if let Some(h) = f.headroom {
        extra.push(format!("headroom {:.0}%", h * 100.0));
    }
    if f.replicas.is_none() {
        extra.push("point estimate: the limit has no sure lower end".into());
    }
    if !extra.is_empty() {
        let _ = write!(s, " ({})", extra.join(", "));
    }
    s
}

/// The recommendation line (and the runner-up), or why there is none.
pub fn recommendation(p: &PlanReport) -> String {
    let ranked = p.ranked();
    let Some(best) = ranked.first() else {
        return "No configuration can serve the demand: none met the limit at any rate swept."
            .into();
    };
    let mut s = format!("Recommended: {}", fleet_words(best));
    if let Some(second) = ranked.get(1) {
        let _ = write!(s, "; runner-up: {}", fleet_words(second));
    }
    s.push('.');
    if let Some(f) = best.fleet.as_ref().filter(|f| {
        f.replicas
            .is_some_and(|r| f.replicas_low.is_some_and(|l| l < r))
    }) {
        let _ = write!(
            s,
            " The interval straddles a replica boundary: {} may suffice (at the {} point value).",
            f.replicas_low.unwrap_or(0),
            limit_name(f.basis)
        );
    }
    s
}

const GROUPS: [(&str, &[&str]); 4] = [
    ("Configuration", &["Rank", "Name"]),
    ("Per replica", &["Limit req/s (95%)"]),
    (
        "Fleet",
        &["Replicas", "Headroom %", "GPUs", "Cost/h", "Cost/M out tok"],
    ),
    ("Output tok/s", &["per GPU", "per user"]),
];

/// The plan on the console: a header, the table ranked by cost, the recommendation.
pub fn render_plan(p: &PlanReport, width: Option<u16>) -> String {
    let mut s = String::from("Deployment plan:\n");
    let d = &p.demand;
    let _ =
        writeln!(
        s,
        "  Demand: {} req/s{} ({}); planned on the lower end of each configuration's {} interval",
        trimmed(d.planned_requests_per_s, 2),
        if d.growth == 1.0 {
            String::new()
        } else {
            format!(" = {} x growth {}", trimmed(d.requests_per_s, 2), trimmed(d.growth, 3))
        },
        d.source,
        limit_name(p.basis),
    );
    if let Some(slo) = &p.slo {
        let _ = writeln!(s, "  SLO: {slo}");
    }
    let energy = has_energy(p);
    let rows = table_order(p).into_iter().map(|c| row(c, energy)).collect();
    let mut groups = GROUPS.to_vec();
    if energy {
        groups.push(("Energy", &["mJ/out tok"]));
    }
    let spec = Spec { groups, rows };
    s.push_str(&render(&spec, width));
    s.push('\n');
    for c in p.configs.iter().filter(|c| c.reason.is_some()) {
        let _ = writeln!(
            s,
            "  {}: {}: {}",
            c.name,
            status_words(c.status),
            bench_core::escape_controls(c.reason.as_deref().unwrap_or(""))
        );
    }
    let _ = writeln!(s, "{}", recommendation(p));
    s
}

const CSV_HEADER: &str = "rank,name,status,limit_req_s,limit_low,limit_high,replicas,replicas_at_point,replicas_low,headroom,gpus,cost_per_hour,cost_per_million_output_tokens,output_tokens_per_s,output_tokens_per_s_per_gpu,output_tokens_per_s_per_user,reason,energy_per_output_token_j";

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| x.to_string())
}

fn count(v: Option<u32>) -> String {
    v.map_or_else(String::new, |x| x.to_string())
}

/// The plan as CSV: one row per configuration, ranked first.
pub fn render_plan_csv(p: &PlanReport) -> String {
    let mut s = format!("{CSV_HEADER}\n");
    for c in table_order(p) {
        let f = c.fleet.as_ref();
        let iv = f.and_then(|f| f.rate_interval);
        let cells = [
            count(c.rank),
            csv_cell(&c.name),
            serde_json::to_value(c.status)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            num(f.map(|f| f.rate_per_replica)),
            num(iv.map(|i| i.low)),
            num(iv.and_then(|i| i.high)),
            count(f.and_then(|f| f.replicas)),
            count(f.map(|f| f.replicas_at_point)),
            count(f.and_then(|f| f.replicas_low)),
            num(f.and_then(|f| f.headroom)),
            num(f.and_then(|f| f.gpus)),
            num(f.and_then(|f| f.cost_per_hour)),
            num(f.and_then(|f| f.cost_per_million_output_tokens)),
            num(f.map(|f| f.output_tokens_per_s)),
            num(f.and_then(|f| f.output_tokens_per_s_per_gpu)),
            num(f.and_then(|f| f.output_tokens_per_s_per_user)),
            csv_cell(c.reason.as_deref().unwrap_or("")),
            num(f.and_then(|f| f.energy_per_output_token_j)),
        ];
        let _ = writeln!(s, "{}", cells.join(","));
    }
    s
}

/// The Pareto chart: each configuration's sweep as tokens/s per GPU against tokens/s per user,
/// and the recommended configuration's planned point marked.
fn pareto_chart(p: &PlanReport) -> String {
    let best = p.ranked().first().map(|c| c.name.clone());
    let mut series = Vec::new();
    for (i, c) in p.configs.iter().enumerate() {
        let mut pts: Vec<(f64, f64, String)> = c
            .points
            .iter()
            .map(|q| {
                (
                    q.tokens_per_s_per_user,
                    q.tokens_per_s_per_gpu,
                    q.label.clone(),
                )
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let chosen = best.as_deref() == Some(c.name.as_str());
        let mut se = Series::line(
            c.name.clone(),
            PALETTE[i % PALETTE.len()],
            pts.iter().map(|q| (q.0, q.1)).collect(),
        );
        se.notes = pts.into_iter().map(|q| q.2).collect();
        se.dashed = !chosen;
        series.push(se);
    }
    if let Some(c) = p.ranked().first() {
        if let Some(f) = &c.fleet {
            if let (Some(u), Some(g)) = (
                f.output_tokens_per_s_per_user,
                f.output_tokens_per_s_per_gpu,
            ) {
                let mut se = Series::line("planned fleet", PALETTE[0], vec![(u, g)]);
                se.markers_only = true;
                se.notes = vec![format!("{} at the demand", c.name)];
                series.push(se);
            }
        }
    }
    let axes = Axes {
        title: "Pareto: throughput per GPU against speed per user".into(),
        x_label: "output tokens/s per user (1000 / median TPOT)".into(),
        y_label: "output tokens/s per GPU".into(),
        x_ticks: None,
        marks: Vec::new(),
    };
    line_chart(&axes, &series)
}

/// The plan as one self-contained HTML page: the recommendation, the table, the Pareto chart
/// and each failed configuration's log tail.
pub fn render_plan_html(p: &PlanReport) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>bench plan {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>Deployment plan</h1>\n<p class=\"meta\">{} · demand {} req/s ({}){}</p>\n",
        esc(&p.created),
        esc(&p.created),
        trimmed(p.demand.planned_requests_per_s, 2),
        esc(&p.demand.source),
        p.slo.as_ref().map_or_else(String::new, |s| format!(" · SLO {}", esc(&s.to_string())))
    );
    let _ = write!(
        h,
        "<div class=\"answer\"><p>{}</p></div>\n<div class=\"scroll\"><table><tr>",
        esc(&recommendation(p))
    );
    let energy = has_energy(p);
    for (_, names) in GROUPS {
        for n in names {
            let _ = write!(h, "<th>{}</th>", esc(n));
        }
    }
    if energy {
        h.push_str("<th>Energy mJ/out tok</th>");
    }
    h.push_str("</tr>\n");
    for c in table_order(p) {
        h.push_str("<tr>");
        for cell in row(c, energy) {
            let _ = write!(h, "<td>{}</td>", esc(&cell));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></div>\n<h2>Pareto front</h2>\n<div class=\"charts\">");
    h.push_str(&pareto_chart(p));
    h.push_str("</div>\n<p class=\"meta\">Each line is one configuration's sweep, one point per rate offered (tooltips name it): solid for the recommended configuration, dashed for the others. The ringed point is the recommended fleet at the demand: each replica runs at or below its planned rate, so its users see at least that speed.</p>\n");
    for c in p.configs.iter().filter(|c| !c.log_tail.is_empty()) {
        let _ = writeln!(
            h,
            "<details><summary>{}: {}</summary><pre>{}</pre></details>",
            esc(&c.name),
            esc(status_words(c.status)),
            esc(&c.log_tail.join("\n"))
        );
    }
    h.push_str("</body>\n</html>\n");
    h
}
