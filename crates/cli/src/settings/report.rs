//! The report group: console, files, percentiles, goodput, records, vLLM's result file.

use std::collections::BTreeMap;

use bench_profile::RateType;
use bench_report::{Goodput, VllmConsoleOptions, VllmLayout};

use super::file::TargetList;
use super::{usage, Console, ReportSettings, Sources, VllmResult};

/// `--gpu-metrics` (or the profile's `gpu_metrics`): comma-separated URLs, each `http://` or
/// `https://` with a host, or a `/path` on the target's host.
fn gpu_metrics(flag: Option<&str>, file: Option<&TargetList>) -> anyhow::Result<Vec<String>> {
    let (name, given) = match (flag, file) {
        (Some(f), _) => ("--gpu-metrics", vec![f.to_string()]),
        (None, Some(l)) => ("gpu_metrics", l.given()),
        (None, None) => return Ok(Vec::new()),
    };
    let mut urls = Vec::new();
    for part in given.iter().flat_map(|g| g.split(',')).map(str::trim) {
        let shown = bench_servermetrics::redact(part);
        let ok = part.starts_with('/')
            || ["http://", "https://"].iter().any(|s| {
                part.strip_prefix(s)
                    .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
            });
        if !ok {
            return Err(usage(format!(
                "{name} `{shown}`: expected an http:// or https:// URL of a DCGM exporter, or a /path on the target"
            )));
        }
        urls.push(part.to_string());
    }
    Ok(urls)
}

/// `--server-metrics-interval`: 0.01 to 3600 seconds; default 1.
fn server_metrics_interval(v: Option<f64>) -> anyhow::Result<f64> {
    match v {
        None => Ok(1.0),
        Some(s) if (0.01..=3600.0).contains(&s) => Ok(s),
        Some(s) => Err(usage(format!(
            "--server-metrics-interval {s}: must be between 0.01 and 3600 seconds"
        ))),
    }
}

fn vllm_console(
    metrics: Option<&str>,
    percentiles: Option<&str>,
    layout: Option<&str>,
) -> anyhow::Result<VllmConsoleOptions> {
    let mut o = VllmConsoleOptions::default();
    if let Some(m) = metrics {
        o.percentile_metrics = bench_report::parse_percentile_metrics(m)
            .map_err(|e| usage(format!("--percentile-metrics: {e}")))?;
    }
    if let Some(m) = percentiles {
        o.metric_percentiles = bench_report::parse_metric_percentiles(m)
            .map_err(|e| usage(format!("--metric-percentiles: {e}")))?;
    }
    o.layout = match layout {
        None | Some("current") => VllmLayout::Current,
        Some("classic") => VllmLayout::Classic,
        Some(other) => {
            return Err(usage(format!(
                "--vllm-layout: expected current or classic, got `{other}`"
            )))
        }
    };
    Ok(o)
}

fn metadata(
    cli: &[String],
    file: Option<&BTreeMap<String, String>>,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = file.cloned().unwrap_or_default();
    for item in cli {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| usage(format!("--metadata: `{item}` is not KEY=VALUE")))?;
        if k.trim().is_empty() {
            return Err(usage(format!("--metadata: `{item}` has no key")));
        }
        out.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(out)
}

/// `pooling`: the backend generates nothing (embeddings, rerank), so the vLLM console's
/// default sections are E2EL only (TTFT, TPOT and ITL do not exist there).
pub(crate) fn resolve(
    src: &Sources<'_>,
    rate_type: RateType,
    pooling: bool,
) -> anyhow::Result<ReportSettings> {
    let (c, f) = (&src.cli.report, src.file);
    // Named files (the flag's, else the profile's) are exactly the outputs; `--no-output` or
    // the profile's `output: []` means none; otherwise the default file.
    let (output, default_output) = if c.no_output {
        (Vec::new(), false)
    } else if !c.output.is_empty() {
        (c.output.clone(), false)
    } else {
        match &f.output {
            Some(named) => (named.clone(), false),
            None => (Vec::new(), true),
        }
    };
    for p in &output {
        bench_report::OutputFormat::from_path(p).map_err(|e| usage(format!("--output: {e}")))?;
    }
    let percentile_metrics = c
        .percentile_metrics
        .clone()
        .or(f.percentile_metrics.clone());
    let default_metrics = pooling.then_some("e2el");
    let metric_percentiles = c
        .metric_percentiles
        .clone()
        .or(f.metric_percentiles.clone());
    let vllm_layout = c.vllm_layout.clone().or(f.vllm_layout.clone());
    let console_opts = vllm_console(
        percentile_metrics.as_deref().or(default_metrics),
        metric_percentiles.as_deref(),
        vllm_layout.as_deref(),
    )?;
    let goodput = match c.goodput.as_ref().or(f.goodput.as_ref()) {
        Some(g) => Some(Goodput::parse(g).map_err(|e| usage(format!("--goodput: {e}")))?),
        None => None,
    };
    let console =
        c.console
            .map(Console::from)
            .or(f.console)
            .unwrap_or(if rate_type == RateType::Sweep {
                Console::Guidellm
            } else {
                Console::Vllm
            });
    let result_dir = c.result_dir.clone().or(f.result_dir.clone());
    let result_filename = c.result_filename.clone().or(f.result_filename.clone());
    let save = c.save_result || f.save_result.unwrap_or(false);
    if !save && (result_dir.is_some() || result_filename.is_some()) {
        return Err(usage("--result-dir / --result-filename need --save-result"));
    }
    if let Some(name) = &result_filename {
        if name.trim().is_empty() || name.ends_with('/') {
            return Err(usage(format!(
                "--result-filename: `{name}` is not a file name"
            )));
        }
    }
    Ok(ReportSettings {
        output,
        default_output,
        console,
        quiet: c.quiet || f.quiet.unwrap_or(false),
        percentile_metrics,
        metric_percentiles,
        vllm_layout,
        vllm_console: console_opts,
        goodput,
        save_records: c.save_records || f.save_records.unwrap_or(false),
        allow_empty: c.allow_empty || f.allow_empty.unwrap_or(false),
        save_result: save.then_some(VllmResult {
            dir: result_dir,
            filename: result_filename,
        }),
        metadata: metadata(&c.metadata, f.metadata.as_ref())?,
        label: c.label.clone().or(f.label.clone()),
        server_metrics: !c.no_server_metrics && f.server_metrics.unwrap_or(true),
        server_metrics_url: c
            .server_metrics_url
            .clone()
            .or(f.server_metrics_url.clone()),
        server_metrics_interval: server_metrics_interval(
            c.server_metrics_interval.or(f.server_metrics_interval),
        )?,
        gpu_metrics: gpu_metrics(c.gpu_metrics.as_deref(), f.gpu_metrics.as_ref())?,
    })
}
