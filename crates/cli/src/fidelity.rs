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
    let rows = num(trace, &["rows"]);
    let (input, output) = (
        num(trace, &["input_tokens"]),
        num(trace, &["output_tokens"]),
    );
    run.benchmarks
        .iter()
        .filter(|b| b.strategy.speedup().is_some())
        .filter_map(|b| serde_json::to_value(b).ok())
        .map(|b| {
            let pct = |m: &str, p: &str| num(&b, &["metrics", m, "percentiles", p]);
            format!(
                "trace fidelity {}: {} of {} rows sent; prompt tokens {} of {} recorded; output tokens {} of {} recorded; queue p99 {:.2} ms; dispatch delay p50 {:.2} ms, p99 {:.2} ms",
                b.get("label").and_then(Value::as_str).unwrap_or("?"),
                num(&b, &["requests", "total"]),
                rows,
                tokens(&b, "prompt"),
                input,
                tokens(&b, "output"),
                output,
                pct("queue_ms", "p99"),
                pct("dispatch_delay_ms", "p50"),
                pct("dispatch_delay_ms", "p99"),
            ) + &prefix_cache(trace, &b)
        })
        .collect()
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
