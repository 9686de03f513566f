//! The deployment plan rendered: the console table ranked by cost with the recommendation
//! line, the CSV, and the HTML page with the Pareto chart (docs/planning.md).

use std::fmt::Write as _;

use bench_report::draw::{
    chart, esc, table as render, trimmed, Axes, Canvas, Series, Table as Spec, CSS, PALETTE,
};

use crate::fleet::{pareto_front, ConfigStatus, Fleet, PlanBasis, PlanConfig, PlanReport};

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

/// The recommended fleet's colour: the answer box's green, no configuration's.
const RECOMMENDED: &str = "#1e8449";
/// The Pareto front's line.
const FRONT: &str = "#1d232a";

/// The Pareto chart's size: shown at this width its text is the page's size, and it has room
/// for a plan's sweeps.
const PARETO: Canvas = Canvas {
    w: 760.0,
    h: 440.0,
    legend: false,
};

/// One entry of the chart's legend: its colour, whether a line or a ring, and its words.
struct Key {
    color: &'static str,
    ring: bool,
    faded: bool,
    name: String,
}

/// A configuration's sweep as (tokens/s per user, tokens/s per GPU) points and their labels,
/// slowest per user first.
fn sweep_points(c: &PlanConfig, only: Option<&[usize]>) -> (Vec<(f64, f64)>, Vec<String>) {
    let mut pts: Vec<(f64, f64, String)> = c
        .points
        .iter()
        .enumerate()
        .filter(|(j, _)| only.is_none_or(|o| o.contains(j)))
        .map(|(_, q)| {
            (
                q.tokens_per_s_per_user,
                q.tokens_per_s_per_gpu,
                q.label.clone(),
            )
        })
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts.into_iter().map(|q| ((q.0, q.1), q.2)).unzip()
}

/// The Pareto chart: every configuration's sweep faded (tokens/s per GPU against tokens/s per
/// user, one point per rate), the front of non-dominated points drawn over them (each in its
/// configuration's colour), and the recommended fleet at the demand in its own colour; the
/// legend in HTML beneath, where entries wrap and never overlap.
fn pareto_chart(p: &PlanReport) -> String {
    let front = pareto_front(&p.configs);
    let (mut series, mut keys, mut on_front) = (Vec::new(), Vec::new(), Vec::new());
    for (i, c) in p.configs.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let (points, notes) = sweep_points(c, None);
        if points.is_empty() {
            continue;
        }
        series.push(Series {
            notes,
            faded: true,
            ..Series::line(c.name.clone(), color, points)
        });
        let mine: Vec<usize> = front.iter().filter(|f| f.0 == i).map(|f| f.1).collect();
        let (points, notes) = sweep_points(c, Some(&mine));
        on_front.push(Series {
            notes,
            markers_only: true,
            ..Series::line(format!("{} on the front", c.name), color, points)
        });
        keys.push(Key {
            color,
            ring: false,
            faded: true,
            name: c.name.clone(),
        });
    }
    let (points, notes): (Vec<_>, Vec<_>) = front
        .iter()
        .map(|&(i, j)| {
            let q = &p.configs[i].points[j];
            let note = format!("{} {}", p.configs[i].name, q.label);
            ((q.tokens_per_s_per_user, q.tokens_per_s_per_gpu), note)
        })
        .unzip();
    if !points.is_empty() {
        series.push(Series {
            notes,
            radius: Some(2.0),
            ..Series::line("Pareto front", FRONT, points)
        });
        keys.push(Key {
            color: FRONT,
            ring: false,
            faded: false,
            name: "Pareto front (no other point is faster per user and higher per GPU)".into(),
        });
    }
    series.extend(on_front);
    if let Some((c, u, g)) = p.ranked().first().and_then(|c| {
        let f = c.fleet.as_ref()?;
        Some((
            c,
            f.output_tokens_per_s_per_user?,
            f.output_tokens_per_s_per_gpu?,
        ))
    }) {
        series.push(Series {
            notes: vec![format!("{} at the demand", c.name)],
            markers_only: true,
            radius: Some(8.0),
            ..Series::line("recommended fleet", RECOMMENDED, vec![(u, g)])
        });
        keys.push(Key {
            color: RECOMMENDED,
            ring: true,
            faded: false,
            name: format!("recommended: {} at the demand", c.name),
        });
    }
    let axes = Axes {
        title: "Pareto: throughput per GPU against speed per user".into(),
        x_label: "output tokens/s per user (1000 / median TPOT)".into(),
        y_label: "output tokens/s per GPU".into(),
        x_ticks: None,
        marks: Vec::new(),
    };
    let mut h = format!("<div class=\"pareto\">{}", chart(&axes, &series, &PARETO));
    legend(&mut h, &keys);
    h.push_str("</div>");
    h
}

/// The legend as HTML: one entry per key, a line or a ring in its colour, then its words.
fn legend(h: &mut String, keys: &[Key]) {
    h.push_str("<div class=\"legend\">");
    for k in keys {
        let mark = if k.ring {
            format!("<circle cx=\"11\" cy=\"7\" r=\"5\" fill=\"{0}\" fill-opacity=\"0.35\" stroke=\"{0}\" stroke-width=\"2\"/>", k.color)
        } else {
            format!(
                "<line x1=\"1\" x2=\"21\" y1=\"7\" y2=\"7\" stroke=\"{0}\" stroke-width=\"2\"/><circle cx=\"11\" cy=\"7\" r=\"3\" fill=\"{0}\"/>",
                k.color
            )
        };
        let _ = write!(
            h,
            "<span class=\"key\"><svg width=\"22\" height=\"14\" aria-hidden=\"true\"{}>{mark}</svg>{}</span>",
            if k.faded { " opacity=\"0.45\"" } else { "" },
            esc(&k.name)
        );
    }
    h.push_str("</div>");
}

/// The plan page's own style: the chart at its size (text at the page's size, as the sweep
/// page's charts), the legend beneath it.
const PLAN_CSS: &str = ".pareto{width:760px;max-width:100%}.legend{display:flex;flex-wrap:wrap;gap:4px 18px;font-size:13px;margin:6px 0 0 66px;color:#333}.legend .key{display:inline-flex;align-items:center;gap:6px}";

/// The plan as one self-contained HTML page: the recommendation, the table, the Pareto chart
/// and each failed configuration's log tail.
pub fn render_plan_html(p: &PlanReport) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>bench plan {}</title>\n<style>{CSS}{PLAN_CSS}</style>\n</head>\n<body>\n<h1>Deployment plan</h1>\n<p class=\"meta\">{} · demand {} req/s ({}){}</p>\n",
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
    h.push_str("</table></div>\n<h2>Pareto front</h2>\n");
    h.push_str(&pareto_chart(p));
    h.push_str("\n<p class=\"meta\">Each configuration's sweep is drawn faded, one point per rate offered (tooltips name it). The Pareto front joins the points no other point beats on both axes, each ringed in its configuration's colour. The green ring is the recommended fleet at the demand: each replica runs at or below its planned rate, so its users see at least that speed.</p>\n");
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
