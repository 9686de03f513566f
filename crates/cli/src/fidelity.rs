//! The fidelity of a trace replay, one line per benchmark under the console report: requests
//! sent against the trace's rows, tokens against the recorded ones, and how late requests went
//! out against the recorded schedule (client queue time plus dispatch delay) (definitions in docs/metrics.md, "Traces").

use bench_report::RunReport;
use serde_json::Value;

/// A number at `path` of `v` (0 when absent).
fn num(v: &Value, path: &[&str]) -> f64 {
    path.iter()
        .try_fold(v, |x, k| x.get(*k))
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}

/// Sum over the statuses (`completed`, `incomplete`, `errored`) of `tokens.<kind>.<s>.total`.
fn tokens(b: &Value, kind: &str) -> f64 {
    ["completed", "incomplete", "errored"]
        .iter()
        .map(|s| num(b, &["tokens", kind, s, "total"]))
        .sum()
}

/// The fidelity lines of a run that replayed a trace (none for other runs).
pub(crate) fn lines(run: &RunReport) -> Vec<String> {
    let Some(trace) = run.environment.extra.get("trace") else {
        return Vec::new();
    };
    run.benchmarks
        .iter()
        .filter(|b| b.strategy.speedup().is_some())
        .filter_map(|b| Some((replays(run, &b.label), serde_json::to_value(b).ok()?)))
        .map(|(n, b)| {
            let pct = |m: &str, p: &str| num(&b, &["metrics", m, "percentiles", p]);
            let of = |k: &str| num(trace, &[k]) * n as f64;
            format!(
                "trace fidelity {}{}: {} of {} rows sent; prompt tokens {} of {} recorded; output tokens {} of {} recorded; queue p99 {:.2} ms; dispatch delay p50 {:.2} ms, p99 {:.2} ms",
                b.get("label").and_then(Value::as_str).unwrap_or("?"),
                if n > 1 { format!(" ({n} trials pooled)") } else { String::new() },
                num(&b, &["requests", "total"]),
                of("rows"),
                tokens(&b, "prompt"),
                of("input_tokens"),
                tokens(&b, "output"),
                of("output_tokens"),
                pct("queue_ms", "p99"),
                pct("dispatch_delay_ms", "p50"),
                pct("dispatch_delay_ms", "p99"),
            ) + &prefix_cache(trace, &b)
        })
        .collect()
}

/// How many replays of the trace the benchmark `label` holds: the trials pooled into it
/// (`--repeat`), each a whole replay; 1 for a single run.
fn replays(run: &RunReport, label: &str) -> usize {
    run.trials.as_ref().map_or(1, |t| {
        t.runs
            .iter()
            .filter(|r| r.benchmarks.iter().any(|b| b.label == label))
            .count()
            .max(1)
    })
}

/// The prefix-cache hit rates side by side (docs/metrics.md, "Server-reported cached
/// tokens"): the trace's theoretical one, the server's per-request `cached_tokens` and its
/// scraped counters, each when known.
fn prefix_cache(trace: &Value, b: &Value) -> String {
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |h| format!("{:.1}%", 100.0 * h));
    let theoretical = trace.get("theoretical_hit_rate").and_then(Value::as_f64);
    let reported = b.get("cached_tokens").map(|c| {
        format!(
            "{} of prompt tokens over {} requests",
            pct(c.get("hit_rate").and_then(Value::as_f64)),
            num(c, &["requests"])
        )
    });
    let counters = b
        .pointer("/server_metrics/summary/prefix_cache_hit_rate")
        .and_then(Value::as_f64);
    format!(
        "; prefix cache hit rate: theoretical {}, server-reported cached tokens {}, server counters {}",
        pct(theoretical),
        reported.unwrap_or_else(|| "-".into()),
        pct(counters),
    )
}
