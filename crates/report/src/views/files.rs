//! Report files: JSON (the source of truth), YAML, CSV, HTML; atomic writes; reading back.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::figures::model::{BenchmarkReport, RunReport, SCHEMA_VERSION};
use crate::figures::options::Metric;
use crate::Error;

/// A file format, chosen by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// `.json`: the full report, the source of truth.
    Json,
    /// `.yaml` / `.yml`: the same content as JSON.
    Yaml,
    /// `.csv`: one row per benchmark.
    Csv,
    /// `.html`: one self-contained page with charts.
    Html,
}

impl OutputFormat {
    /// The format of `path` by its extension (case-insensitive).
    pub fn from_path(path: &Path) -> Result<Self, Error> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("json") => Ok(Self::Json),
            Some("yaml" | "yml") => Ok(Self::Yaml),
            Some("csv") => Ok(Self::Csv),
            Some("html" | "htm") => Ok(Self::Html),
            _ => Err(Error::UnknownFormat {
                path: path.to_path_buf(),
            }),
        }
    }
}

/// The report as pretty JSON.
pub fn render_json(run: &RunReport) -> Result<String, Error> {
    let mut s = serde_json::to_string_pretty(run).map_err(|e| Error::Serialize(e.to_string()))?;
    s.push('\n');
    Ok(s)
}

/// The report as YAML (same content as JSON).
pub fn render_yaml(run: &RunReport) -> Result<String, Error> {
    serde_yaml::to_string(run).map_err(|e| Error::Serialize(e.to_string()))
}

/// Quotes a CSV field when it needs it (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: f64) -> String {
    if v.is_finite() {
        let s = format!("{v:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s.is_empty() || s == "-" {
            "0".into()
        } else {
            s.to_string()
        }
    } else {
        String::new()
    }
}

/// The run's capacity answer, repeated on every CSV row (empty cells when there is none).
const CAPACITY_COLUMNS: [&str; 17] = [
    "capacity_max_requests_per_s",
    "capacity_max_is_lower_bound",
    "capacity_max_output_tokens_per_s",
    "capacity_knee_requests_per_s",
    "capacity_slo_max_requests_per_s",
    "capacity_slo_bracket_low",
    "capacity_slo_bracket_high",
    "capacity_trace_recorded_requests_per_s",
    "capacity_trace_max_multiple",
    "capacity_trace_knee_multiple",
    "capacity_trace_slo_max_multiple",
    "capacity_max_requests_per_s_low",
    "capacity_max_requests_per_s_high",
    "capacity_knee_requests_per_s_low",
    "capacity_knee_requests_per_s_high",
    "capacity_slo_max_requests_per_s_low",
    "capacity_slo_max_requests_per_s_high",
];

fn capacity_cells(run: &RunReport) -> Vec<String> {
    let Some(c) = &run.capacity else {
        return vec![String::new(); CAPACITY_COLUMNS.len()];
    };
    let opt = |v: Option<f64>| v.map(num).unwrap_or_default();
    let b = c.slo_bracket.as_ref();
    let t = c.trace.as_ref();
    let iv = crate::figures::capacity_interval::capacity_intervals(run, c).unwrap_or_default();
    vec![
        num(c.max_requests_per_s),
        c.max_is_lower_bound.to_string(),
        num(c.max_output_tokens_per_s),
        opt(c.knee_requests_per_s),
        opt(c.slo_max_requests_per_s),
        opt(b.and_then(|b| b.low)),
        opt(b.and_then(|b| b.high)),
        opt(t.map(|t| t.recorded_requests_per_s)),
        opt(t.map(|t| t.max_multiple)),
        opt(t.and_then(|t| t.knee_multiple)),
        opt(t.and_then(|t| t.slo_max_multiple)),
        opt(iv.max_requests_per_s.map(|i| i.low)),
        opt(iv.max_requests_per_s.map(|i| i.high)),
        opt(iv.knee_requests_per_s.map(|i| i.low)),
        opt(iv.knee_requests_per_s.and_then(|i| i.high)),
        opt(iv.slo_max_requests_per_s.map(|i| i.low)),
        opt(iv.slo_max_requests_per_s.and_then(|i| i.high)),
    ]
}

/// The CSV's first columns: the row's provenance (run, target, model, backend, data, load
/// kind, benchmark), its timing, counts and rates.
const BASE_COLUMNS: [&str; 36] = [
    "run_id",
    "created",
    "target",
    "model",
    "backend",
    "data",
    "rate_type",
    "label",
    "strategy",
    "target_rate",
    "start",
    "end",
    "duration_s",
    "warmup_s",
    "cooldown_s",
    "stop_reason",
    "requests_completed",
    "requests_incomplete",
    "requests_errored",
    "errors",
    "prompt_tokens_completed",
    "prompt_tokens_incomplete",
    "prompt_tokens_errored",
    "output_tokens_completed",
    "output_tokens_incomplete",
    "output_tokens_errored",
    "requests_per_s",
    "output_tokens_per_s",
    "input_tokens_per_s",
    "total_tokens_per_s",
    "concurrency",
    "peak_concurrency",
    "peak_output_tokens_per_s",
    "achieved_rate",
    "goodput_per_s",
    "goodput_fraction",
];

/// The statistics of each metric, a column each.
const STATS: [&str; 8] = ["mean", "median", "p90", "p95", "p99", "min", "max", "stdev"];

fn csv_header() -> Vec<String> {
    let mut header: Vec<String> = BASE_COLUMNS.iter().map(|s| s.to_string()).collect();
    for m in Metric::ALL {
        for s in STATS {
            header.push(format!("{}_{s}", m.json_key()));
        }
    }
    header.extend(CAPACITY_COLUMNS.iter().map(|s| s.to_string()));
    header.extend(
        crate::views::turns_view::CSV_COLUMNS
            .iter()
            .map(|s| s.to_string()),
    );
    header.extend(
        crate::views::reasoning_view::CSV_COLUMNS
            .iter()
            .map(|s| s.to_string()),
    );
    header.extend(
        crate::views::steady_view::CSV_COLUMNS
            .iter()
            .map(|s| s.to_string()),
    );
    header.extend(crate::views::interval_view::csv_header());
    header.extend(
        crate::views::images_view::CSV_COLUMNS
            .iter()
            .map(|s| s.to_string()),
    );
    header.extend(
        crate::views::cancel_view::CSV_COLUMNS
            .iter()
            .map(|s| s.to_string()),
    );
    header.extend(
        crate::views::gpu_view::CSV_COLUMNS
            .iter()
            .map(|s| s.to_string()),
    );
    header.extend(
        crate::views::spec_view::CSV_COLUMNS
            .iter()
            .map(|s| s.to_string()),
    );
    header.extend(
        crate::views::models_view::CSV_COLUMNS
            .iter()
            .map(|s| s.to_string()),
    );
    header
}

/// The CSV: a header line and one row per benchmark (spreadsheet-friendly, flat columns).
pub fn render_csv(run: &RunReport) -> String {
    let capacity = capacity_cells(run);
    let mut out = csv_header().join(",");
    out.push('\n');
    for b in &run.benchmarks {
        let mut row = base_cells(run, b);
        row.extend(metric_cells(b));
        row.extend(capacity.iter().cloned());
        row.extend(crate::views::turns_view::csv_cells(b, num));
        row.extend(
            crate::views::reasoning_view::csv_cells(b)
                .iter()
                .map(|c| csv_field(c)),
        );
        row.extend(crate::views::steady_view::csv_cells(b, num));
        row.extend(crate::views::interval_view::csv_cells(
            b.intervals.as_ref(),
            num,
        ));
        row.extend(crate::views::images_view::csv_cells(b));
        row.extend(crate::views::cancel_view::csv_cells(b, num));
        row.extend(crate::views::gpu_view::csv_cells(b, num));
        row.extend(crate::views::spec_view::csv_cells(b, num));
        row.extend(
            crate::views::models_view::csv_cells(b)
                .iter()
                .map(|c| csv_field(c)),
        );
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

/// A string setting of the run's configuration (other values as JSON), empty when unset.
fn config_text(run: &RunReport, key: &str) -> String {
    match run.config.get(key) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) if !v.is_null() => v.to_string(),
        _ => String::new(),
    }
}

/// The cells of [`BASE_COLUMNS`] for benchmark `b`. Provenance: which run, target, model,
/// backend, data and load kind each row came from, so rows of several runs can be told apart
/// once concatenated.
fn base_cells(run: &RunReport, b: &BenchmarkReport) -> Vec<String> {
    let env = &run.environment;
    let errors = b
        .errors
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";");
    vec![
        csv_field(&run.run_id),
        csv_field(&run.created),
        csv_field(&env.target),
        csv_field(&env.model),
        csv_field(&env.backend),
        csv_field(&config_text(run, "data")),
        csv_field(&config_text(run, "rate_type")),
        csv_field(&b.label),
        csv_field(b.strategy.kind()),
        b.rates.target_rate.map(num).unwrap_or_default(),
        csv_field(&b.start),
        csv_field(&b.end),
        num(b.duration_s),
        num(b.warmup_s),
        num(b.cooldown_s),
        csv_field(&b.stop_reason),
        b.requests.completed.to_string(),
        b.requests.incomplete.to_string(),
        b.requests.errored.to_string(),
        csv_field(&errors),
        b.tokens.prompt.completed.total.to_string(),
        b.tokens.prompt.incomplete.total.to_string(),
        b.tokens.prompt.errored.total.to_string(),
        b.tokens.output.completed.total.to_string(),
        b.tokens.output.incomplete.total.to_string(),
        b.tokens.output.errored.total.to_string(),
        num(b.rates.requests_per_s),
        num(b.rates.output_tokens_per_s),
        num(b.rates.input_tokens_per_s),
        num(b.rates.total_tokens_per_s),
        num(b.rates.concurrency),
        b.rates.peak_concurrency.to_string(),
        num(b.rates.peak_output_tokens_per_s),
        num(b.rates.achieved_rate),
        b.goodput.as_ref().map(|g| num(g.per_s)).unwrap_or_default(),
        b.goodput
            .as_ref()
            .map(|g| num(g.fraction))
            .unwrap_or_default(),
    ]
}

/// The [`STATS`] cells of every metric of `b`, empty for a metric with no sample.
fn metric_cells(b: &BenchmarkReport) -> Vec<String> {
    let mut row = Vec::with_capacity(Metric::ALL.len() * STATS.len());
    for m in Metric::ALL {
        let s = b.metric(m);
        let empty = s.count == 0;
        let cell = |v: Option<f64>| {
            if empty {
                String::new()
            } else {
                v.map(num).unwrap_or_default()
            }
        };
        row.push(cell(Some(s.mean)));
        row.push(cell(Some(s.median)));
        row.push(cell(b.percentile_ms(m, 90.0)));
        row.push(cell(b.percentile_ms(m, 95.0)));
        row.push(cell(b.percentile_ms(m, 99.0)));
        row.push(cell(Some(s.min)));
        row.push(cell(Some(s.max)));
        row.push(cell(Some(s.stdev)));
    }
    row
}

/// Writes `contents` to `path` atomically: a temporary file in the same directory, flushed to
/// disk, then renamed over `path`. Readers see the old file or the new one, never a part.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(io)
}

/// Writes `run` to every path, the format chosen by extension (`.json`, `.yaml`/`.yml`,
/// `.csv`, `.html`). Each file is replaced atomically, so calling this after every finished
/// benchmark leaves valid files holding every finished benchmark, whatever happens next.
/// All extensions are checked before anything is written.
pub fn write_outputs(run: &RunReport, paths: &[PathBuf]) -> Result<(), Error> {
    let formats = paths
        .iter()
        .map(|p| OutputFormat::from_path(p))
        .collect::<Result<Vec<_>, _>>()?;
    for (path, format) in paths.iter().zip(formats) {
        let text = match format {
            OutputFormat::Json => render_json(run)?,
            OutputFormat::Yaml => render_yaml(run)?,
            OutputFormat::Csv => render_csv(run),
            OutputFormat::Html => crate::views::html::render_html(run),
        };
        write_atomic(path, text.as_bytes())?;
    }
    Ok(())
}

/// Reads a run saved as JSON (or YAML, by extension). Refuses files of a newer schema.
pub fn read_run(path: &Path) -> Result<RunReport, Error> {
    let text = fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let invalid = |message: String| Error::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let value: serde_json::Value = match OutputFormat::from_path(path) {
        Ok(OutputFormat::Yaml) => {
            serde_yaml::from_str(&text).map_err(|e| invalid(e.to_string()))?
        }
        _ => serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?,
    };
    let version = value
        .get("schema_version")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| invalid("no `schema_version`".into()))?;
    if version > SCHEMA_VERSION as u64 {
        return Err(invalid(format!(
            "schema_version {version} is newer than this bench understands ({SCHEMA_VERSION})"
        )));
    }
    serde_json::from_value(value).map_err(|e| invalid(e.to_string()))
}
