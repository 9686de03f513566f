//! The guidellm console: Benchmarks Metadata, Benchmarks Info and Benchmarks Stats, as
//! guidellm v0.2/0.3 prints them after a sweep (seed `guidellm-sweep-console.txt`), built
//! with comfy-table.

use crate::figures::model::RunReport;
use crate::figures::options::Metric;
use crate::views::common::{hms, mmp, render, wrap, Spec};

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
    if let Some(note) = crate::views::steady_view::guidellm_note(run, width) {
        out.push_str(&note);
    }
    if let Some(note) = crate::views::steady_view::guidellm_sustained_note(run, width) {
        out.push_str(&note);
    }
    if let Some(t) = crate::views::reasoning_view::guidellm_table(run, width) {
        out.push_str(&t);
    }
    if let Some(t) = crate::views::server::server_table(run, width) {
        out.push('\n');
        out.push_str("Server Metrics:\n");
        out.push_str(&t);
        out.push('\n');
    }
    if let Some(t) = crate::views::spec_view::guidellm_table(run, width) {
        out.push('\n');
        out.push_str("Speculative Decoding:\n");
        out.push_str(&t);
        out.push('\n');
    }
    if let Some(t) = crate::views::models_view::guidellm_table(run, width) {
        out.push('\n');
        out.push_str("Model Stats:\n");
        out.push_str(&t);
        out.push('\n');
    }
    if let Some(t) = crate::views::gpu_view::gpu_table(run, width) {
        out.push('\n');
        out.push_str("GPU Metrics:\n");
        out.push_str(&t);
        out.push('\n');
    }
    if let Some(t) = crate::views::turns_view::sessions_tables(run, width) {
        out.push_str(&t);
    }
    if run.capacity.is_some() {
        out.push('\n');
        out.push_str(&crate::views::capacity_view::render_capacity(run));
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
            env.backend,
            env.target,
            bench_core::escape_controls(&env.model)
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
    let batch = env
        .server_batch
        .as_ref()
        .map(|b| ("Server batch", format!("{} ({})", b.size, b.source_words())));
    for (k, v) in [
        ("Run id", run.run_id.clone()),
        ("Duration", format!("{duration:.1} seconds")),
        ("Profile", profile),
        ("Args", args),
        ("Worker", worker),
        ("Request Loader", loader),
    ]
    .into_iter()
    .chain(batch)
    {
        out.push_str(&wrap(&format!("{k}:{v}"), width, 4));
    }
    out
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
