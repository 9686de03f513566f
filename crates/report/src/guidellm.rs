//! The guidellm console: Benchmarks Metadata, Benchmarks Info and Benchmarks Stats, as
//! guidellm v0.2/0.3 prints them after a sweep (seed `guidellm-sweep-console.txt`), built
//! with comfy-table.

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};

use crate::model::{BenchmarkReport, RunReport};
use crate::options::Metric;
use crate::time_fmt::hms;

/// comfy-table preset: `=` rules above and below, `|` between columns, `-` under the header.
const PRESET: &str = "  == -| |    ==    ";

/// Renders `run` in guidellm's console layout. `width` fits the tables (and wraps the
/// metadata) to a terminal of that many columns; `None` (output piped) never wraps.
pub fn render_guidellm(run: &RunReport, width: Option<u16>) -> String {
    let mut out = String::new();
    out.push_str(&metadata(run, width));
    out.push('\n');
    out.push_str("Benchmarks Info:\n");
    out.push_str(&info_table(run, width));
    out.push('\n');
    out.push('\n');
    out.push_str("Benchmarks Stats:\n");
    out.push_str(&stats_table(run, width));
    out.push('\n');
    if let Some(note) = crate::steady_view::guidellm_note(run, width) {
        out.push_str(&note);
    }
    if let Some(note) = crate::steady_view::guidellm_sustained_note(run, width) {
        out.push_str(&note);
    }
    if let Some(t) = crate::reasoning_view::guidellm_table(run, width) {
        out.push_str(&t);
    }
    if let Some(t) = crate::server::server_table(run, width) {
        out.push('\n');
        out.push_str("Server Metrics:\n");
        out.push_str(&t);
        out.push('\n');
    }
    if let Some(t) = crate::turns_view::sessions_tables(run, width) {
        out.push_str(&t);
    }
    if run.capacity.is_some() {
        out.push('\n');
        out.push_str(&crate::capacity::render_capacity(run));
    }
    out
}

/// Python-like rendering of a config value, as guidellm prints its pydantic models.
fn py(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "None".into(),
        serde_json::Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => format!("'{s}'"),
        serde_json::Value::Array(a) => {
            format!("[{}]", a.iter().map(py).collect::<Vec<_>>().join(", "))
        }
        serde_json::Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("'{k}': {}", py(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `k=v, k=v` of an object's entries; a scalar as itself.
fn flat(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(o) => o
            .iter()
            .map(|(k, v)| format!("{k}={}", py(v)))
            .collect::<Vec<_>>()
            .join(", "),
        serde_json::Value::String(s) => s.clone(),
        other => py(other),
    }
}

/// guidellm's order of the keys of its Args, Worker and Request Loader models (serde_json
/// sorts keys; the seed does not).
const KEY_ORDER: [&str; 20] = [
    "max_number",
    "max_duration",
    "warmup_number",
    "warmup_duration",
    "cooldown_number",
    "cooldown_duration",
    "type_",
    "backend_type",
    "backend_target",
    "backend_model",
    "backend_info",
    "max_output_tokens",
    "timeout",
    "http2",
    "authorization",
    "text_completions_path",
    "chat_completions_path",
    "data",
    "data_args",
    "processor",
];

/// The entries of `o` in guidellm's order (known keys first, then the rest sorted).
fn ordered(o: &serde_json::Map<String, serde_json::Value>) -> Vec<(&String, &serde_json::Value)> {
    let mut v: Vec<_> = o.iter().collect();
    v.sort_by_key(|(k, _)| {
        KEY_ORDER
            .iter()
            .position(|x| x == k)
            .unwrap_or(KEY_ORDER.len())
    });
    v
}

/// A pydantic model's repr: `k=v` joined by `sep`, in guidellm's key order; nested objects
/// as Python dicts in the same order.
fn model(v: &serde_json::Value, sep: &str) -> String {
    let dict = |o: &serde_json::Map<String, serde_json::Value>| {
        format!(
            "{{{}}}",
            ordered(o)
                .into_iter()
                .map(|(k, v)| format!("'{k}': {}", py(v)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    match v {
        serde_json::Value::Object(o) => ordered(o)
            .into_iter()
            .map(|(k, v)| match v {
                serde_json::Value::Object(inner) => format!("{k}={}", dict(inner)),
                _ => format!("{k}={}", py(v)),
            })
            .collect::<Vec<_>>()
            .join(sep),
        other => flat(other),
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

fn metadata(run: &RunReport, width: Option<u16>) -> String {
    let cfg = &run.config;
    let first = run.benchmarks.iter().map(|b| b.timeline.start_ns).min();
    let last = run.benchmarks.iter().map(|b| b.timeline.end_ns).max();
    let duration = match (first, last) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e9,
        _ => 0.0,
    };
    let strategies: Vec<String> = run
        .benchmarks
        .iter()
        .map(|b| format!("'{}'", b.strategy.kind()))
        .collect();
    let mut profile = match cfg.get("profile") {
        Some(serde_json::Value::String(s)) => format!("type={s}"),
        Some(v @ serde_json::Value::Object(_)) => flat(v),
        _ => "type=run".into(),
    };
    if !profile.contains("strategies=") {
        profile = format!("{profile}, strategies=[{}]", strategies.join(", "));
    }
    let args = cfg
        .get("args")
        .map(|a| model(a, ", "))
        .unwrap_or_else(|| "None".into());
    let env = &run.environment;
    let worker = cfg.get("worker").map(|w| model(w, " ")).unwrap_or_else(|| {
        format!(
            "backend_type='{}' backend_target='{}' backend_model='{}'",
            env.backend, env.target, env.model
        )
    });
    let loader = cfg
        .get("request_loader")
        .map(|l| model(l, " "))
        .unwrap_or_else(|| {
            let data = cfg.get("data").map(py).unwrap_or_else(|| "None".into());
            let processor = env
                .processor
                .as_deref()
                .map(|p| format!("'{p}'"))
                .unwrap_or_else(|| "None".into());
            format!("data={data} processor={processor}")
        });
    let mut out = String::from("Benchmarks Metadata:\n");
    for (k, v) in [
        ("Run id", run.run_id.clone()),
        ("Duration", format!("{duration:.1} seconds")),
        ("Profile", profile),
        ("Args", args),
        ("Worker", worker),
        ("Request Loader", loader),
    ] {
        out.push_str(&wrap(&format!("{k}:{v}"), width, 4));
    }
    out
}

/// A table as column groups (the first group holds the row label) and rows of cells.
pub(crate) struct Spec<'a> {
    pub(crate) groups: Vec<(&'a str, &'a [&'a str])>,
    pub(crate) rows: Vec<Vec<String>>,
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
pub(crate) fn render(spec: &Spec<'_>, width: Option<u16>) -> String {
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

const CIE: &[&str] = &["Comp", "Inc", "Err"];

fn info_table(run: &RunReport, width: Option<u16>) -> String {
    let mut spec = Spec {
        groups: vec![
            (
                "Metadata",
                &["Benchmark", "Start Time", "End Time", "Duration (s)"],
            ),
            ("Requests Made", CIE),
            ("Prompt Tok/Req", CIE),
            ("Output Tok/Req", CIE),
            ("Prompt Tok Total", CIE),
            ("Output Tok Total", CIE),
        ],
        rows: Vec::new(),
    };
    for b in &run.benchmarks {
        let r = &b.requests;
        let (p, o) = (&b.tokens.prompt, &b.tokens.output);
        let row: Vec<String> = vec![
            b.label.clone(),
            hms(&b.start),
            hms(&b.end),
            format!("{:.1}", b.duration_s),
            r.completed.to_string(),
            r.incomplete.to_string(),
            r.errored.to_string(),
            format!("{:.1}", p.completed.per_request),
            format!("{:.1}", p.incomplete.per_request),
            format!("{:.1}", p.errored.per_request),
            format!("{:.1}", o.completed.per_request),
            format!("{:.1}", o.incomplete.per_request),
            format!("{:.1}", o.errored.per_request),
            p.completed.total.to_string(),
            p.incomplete.total.to_string(),
            p.errored.total.to_string(),
            o.completed.total.to_string(),
            o.incomplete.total.to_string(),
            o.errored.total.to_string(),
        ];
        spec.rows.push(row);
    }
    render(&spec, width)
}

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

fn stats_table(run: &RunReport, width: Option<u16>) -> String {
    const MMP: &[&str] = &["mean", "median", "p99"];
    let mut spec = Spec {
        groups: vec![
            ("Metadata", &["Benchmark"]),
            ("Request Stats", &["Per Second", "Concurrency"]),
            ("Out Tok/sec", &["mean"]),
            ("Tot Tok/sec", &["mean"]),
            ("Req Latency (sec)", MMP),
            ("TTFT (ms)", MMP),
            ("ITL (ms)", MMP),
            ("TPOT (ms)", MMP),
        ],
        rows: Vec::new(),
    };
    for b in &run.benchmarks {
        let mut row = vec![
            b.label.clone(),
            format!("{:.2}", b.rates.requests_per_s),
            format!("{:.2}", b.rates.concurrency),
            format!("{:.1}", b.rates.output_tokens_per_s),
            format!("{:.1}", b.rates.total_tokens_per_s),
        ];
        row.extend(mmp(b, Metric::E2el, 1e-3, 2));
        row.extend(mmp(b, Metric::Ttft, 1.0, 1));
        row.extend(mmp(b, Metric::Itl, 1.0, 1));
        row.extend(mmp(b, Metric::Tpot, 1.0, 1));
        spec.rows.push(row);
    }
    render(&spec, width)
}
